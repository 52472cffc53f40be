"""TensorFlow 1 graph-mode `tf.data` iterators (`import mylib as tf`): real values
against numpy slicing."""

import numpy as np
import pytest

import mylib as tf

X = np.arange(30, dtype=np.float32).reshape(10, 3)
Y = np.arange(10, dtype=np.int64)


def _drain(sess, fetches, feed=None):
    out = []
    while True:
        try:
            out.append(sess.run(fetches, feed))
        except tf.errors.OutOfRangeError:
            return out


def test_one_shot_batches_equal_numpy_slicing_then_out_of_range():
    with tf.Graph().as_default():
        it = tf.data.Dataset.from_tensor_slices((X, Y)).batch(4).make_one_shot_iterator()
        x, y = it.get_next()
        assert x.shape.as_list() == [None, 3] and x.dtype == tf.float32
        assert y.dtype == tf.int64 and it.output_shapes[1].as_list() == [None]
        assert it.output_classes == (tf.Tensor, tf.Tensor)
        with tf.Session() as sess:
            got = _drain(sess, [x, y])
            assert len(got) == 3
            for i, (gx, gy) in enumerate(got):
                np.testing.assert_array_equal(gx, X[4 * i:4 * i + 4])
                np.testing.assert_array_equal(gy, Y[4 * i:4 * i + 4])
            with pytest.raises(tf.errors.OutOfRangeError):  # stays at the end
                sess.run(x)


def test_get_next_advances_once_per_run_and_sessions_are_independent():
    with tf.Graph().as_default():
        it = tf.compat.v1.data.make_one_shot_iterator(tf.data.Dataset.range(5))
        v = it.get_next()
        doubled = v * 2
        with tf.Session() as s1, tf.Session() as s2:
            assert s1.run([v, doubled, v + 1]) == [0, 0, 1]
            assert s1.run([v, doubled]) == [1, 2]
            assert s2.run(v) == 0  # its own iterator state
            assert s1.run(v) == 2


def test_shuffle_with_seed_is_a_permutation_and_reinitialize_restarts():
    with tf.Graph().as_default():
        ds = tf.data.Dataset.range(20).shuffle(20, seed=1)
        it = ds.make_initializable_iterator()
        v = it.get_next()
        with tf.Session() as sess:
            with pytest.raises(tf.errors.FailedPreconditionError, match="initialized"):
                sess.run(v)
            sess.run(it.initializer)
            e1 = [int(a) for a in _drain(sess, v)]
            sess.run(it.initializer)
            e2 = [int(a) for a in _drain(sess, v)]
        assert sorted(e1) == list(range(20)) and sorted(e2) == list(range(20))
        assert e1 != list(range(20)) and e1 != e2  # reshuffled each pass


def test_placeholder_fed_initializer_with_two_arrays_and_batch_size_placeholder():
    with tf.Graph().as_default():
        xp = tf.placeholder(tf.float32, [None, 3])
        yp = tf.placeholder(tf.int64, [None])
        bs = tf.placeholder(tf.int64, [])
        it = tf.data.Dataset.from_tensor_slices((xp, yp)).batch(bs) \
            .make_initializable_iterator()
        x, y = it.get_next()
        assert x.shape.as_list() == [None, 3]
        with tf.Session() as sess:
            sess.run(it.initializer, {xp: X, yp: Y, bs: 4})
            got = _drain(sess, [x, y])
            np.testing.assert_array_equal(np.concatenate([g[0] for g in got]), X)
            assert [len(g[1]) for g in got] == [4, 4, 2]
            X2, Y2 = -X[:5], Y[:5] + 100
            sess.run(it.initializer, {xp: X2, yp: Y2, bs: 2})
            got = _drain(sess, [x, y])
            assert [len(g[1]) for g in got] == [2, 2, 1]
            np.testing.assert_array_equal(np.concatenate([g[1] for g in got]), Y2)
            with pytest.raises(tf.errors.InvalidArgumentError, match="placeholder"):
                sess.run(it.initializer, {xp: X})
        one = tf.data.Dataset.from_tensors((xp, yp)).make_initializable_iterator()
        ox, oy = one.get_next()
        assert ox.shape.as_list() == [None, 3]
        with tf.Session() as sess:
            sess.run(one.initializer, {xp: X, yp: Y})
            np.testing.assert_array_equal(sess.run(ox), X)
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(oy)
        with pytest.raises(ValueError, match="one-shot"):
            tf.data.Dataset.from_tensor_slices(xp).make_one_shot_iterator()
        with pytest.raises(TypeError, match="initializable"):
            list(tf.data.Dataset.from_tensor_slices(xp))


def test_from_structure_switches_between_train_and_validation():
    with tf.Graph().as_default():
        train = tf.data.Dataset.from_tensor_slices((X, Y)).batch(5)
        val = tf.data.Dataset.from_tensor_slices((X[:3] + 1000, Y[:3])).batch(5)
        it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
        x, y = it.get_next()
        tr_init, va_init = it.make_initializer(train), it.make_initializer(val)
        with tf.Session() as sess:
            sess.run(tr_init)
            np.testing.assert_array_equal(sess.run(x), X[:5])
            sess.run(va_init)
            np.testing.assert_array_equal(sess.run(x), X[:3] + 1000)
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(y)
            sess.run(tr_init)
            np.testing.assert_array_equal(sess.run(y), Y[:5])
        with pytest.raises(TypeError, match="output types"):
            it.make_initializer(tf.data.Dataset.from_tensor_slices((Y, Y)))
        with pytest.raises(ValueError, match="shapes"):
            it.make_initializer(tf.data.Dataset.from_tensor_slices(
                (np.zeros((4, 7), np.float32), Y[:4])))
        with pytest.raises(ValueError, match="initializer"):
            it.initializer  # noqa: B018


def test_string_handle_feedable_iterator():
    with tf.Graph().as_default():
        a = tf.data.Dataset.range(3).make_one_shot_iterator()
        b = tf.data.Dataset.range(100, 103).make_initializable_iterator()
        h = tf.placeholder(tf.string, [])
        it = tf.data.Iterator.from_string_handle(h, a.output_types, a.output_shapes)
        v = it.get_next()
        with tf.Session() as sess:
            ha, hb = sess.run([a.string_handle(), b.string_handle()])
            sess.run(b.initializer)
            assert sess.run(v, {h: ha}) == 0
            assert sess.run(v, {h: hb}) == 100
            assert sess.run(v, {h: ha}) == 1
            with pytest.raises(tf.errors.NotFoundError):
                sess.run(v, {h: b"nope"})


def test_map_with_graph_ops_matches_numpy_and_dict_elements():
    def fn(x, y):
        return {"img": tf.reshape(tf.cast(x, tf.float32) / 10.0, [3, 1]),
                "label": tf.one_hot(y, 10)}

    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices((X.astype(np.int32), Y)).map(fn).batch(4)
        it = ds.make_initializable_iterator()
        el = it.get_next()
        assert el["img"].shape.as_list() == [None, 3, 1]
        assert el["label"].shape.as_list() == [None, 10]
        with tf.Session() as sess:
            sess.run(it.initializer)
            got = _drain(sess, el)
        img = np.concatenate([g["img"] for g in got])
        lab = np.concatenate([g["label"] for g in got])
        np.testing.assert_allclose(img, (X / 10.0).reshape(10, 3, 1), rtol=1e-6)
        np.testing.assert_array_equal(lab, np.eye(10)[Y])
        # py_func inside a map function (numpy code in a graph function)
        ds2 = tf.data.Dataset.range(4).map(
            lambda v: tf.py_func(lambda a: np.int64(a * a + 1), [v], tf.int64))
        v2 = ds2.make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            assert [int(a) for a in _drain(sess, v2)] == [1, 2, 5, 10]
        # numpy-only map functions still work when iterated in Python
        assert [int(a) for a in tf.data.Dataset.range(3).map(lambda v: v.item() * 3)] == \
            [0, 3, 6]


def test_map_capturing_a_placeholder_filter_take_skip_zip_padded_batch():
    with tf.Graph().as_default():
        scale = tf.placeholder(tf.float32, [])
        ds = tf.data.Dataset.range(10).filter(lambda v: tf.equal(v % 2, 0)) \
            .map(lambda v: tf.cast(v, tf.float32) * scale).skip(1).take(3)
        it = ds.make_initializable_iterator()
        v = it.get_next()
        with tf.Session() as sess:
            sess.run(it.initializer, {scale: 0.5})
            assert [float(a) for a in _drain(sess, v)] == [1.0, 2.0, 3.0]
        z = tf.data.Dataset.zip((tf.data.Dataset.range(3), tf.data.Dataset.range(10, 20)))
        rag = tf.data.Dataset.range(1, 5).map(
            lambda n: tf.py_func(lambda a: np.arange(a), [n], tf.int64)).padded_batch(
            2, padded_shapes=[None])
        zn = z.make_one_shot_iterator().get_next()
        rn = rag.make_one_shot_iterator().get_next()
        assert rn.shape.as_list() == [None, None]
        with tf.Session() as sess:
            assert [tuple(int(c) for c in e) for e in _drain(sess, zn)] == \
                [(0, 10), (1, 11), (2, 12)]
            b1, b2 = _drain(sess, rn)
        np.testing.assert_array_equal(b1, [[0, 0], [0, 1]])
        np.testing.assert_array_equal(b2, [[0, 1, 2, 0], [0, 1, 2, 3]])


def test_map_reading_a_variable_is_refused_clearly():
    with tf.Graph().as_default():
        w = tf.Variable(2.0)
        ds = tf.data.Dataset.from_tensor_slices(X).map(lambda x: x * w)
        with pytest.raises(tf.errors.UnimplementedError, match="variable"):
            ds.make_one_shot_iterator()


def test_monitored_training_session_stops_at_end_of_data():
    with tf.Graph().as_default():
        it = tf.data.Dataset.from_tensor_slices(X).batch(3).make_one_shot_iterator()
        x = it.get_next()
        total = tf.Variable(0.0)
        step = tf.assign_add(total, tf.reduce_sum(x))
        n = 0
        with tf.train.MonitoredTrainingSession() as sess:
            while not sess.should_stop():
                last = sess.run(step)
                n += 1
        assert n == 4 and last == pytest.approx(float(X.sum()))


def test_concurrent_get_next_gives_each_element_once():
    import threading

    with tf.Graph().as_default():
        v = tf.data.Dataset.range(200).make_one_shot_iterator().get_next()
        got, lock = [], threading.Lock()
        with tf.Session() as sess:
            def work():
                while True:
                    try:
                        a = int(sess.run(v))
                    except tf.errors.OutOfRangeError:
                        return
                    with lock:
                        got.append(a)

            threads = [threading.Thread(target=work) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
        assert sorted(got) == list(range(200))
