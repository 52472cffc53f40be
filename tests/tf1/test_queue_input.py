"""TensorFlow 1's queue-based input: `slice_input_producer`, `range_input_producer`,
`string_input_producer`, `batch`, `shuffle_batch`, `batch_join` with queue runners,
epochs that end in `OutOfRangeError`, and a training loop fed by them."""

import numpy as np
import pytest

import mylib as tf


def _drain(fetches, max_steps=1000):
    """Runs `fetches` until the input runs out; the list of results."""
    out = []
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            for _ in range(max_steps):
                out.append(sess.run(fetches))
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(threads)
    return out


@pytest.mark.parametrize("shuffle", [False, True])
def test_slice_input_producer_and_batch_cover_each_epoch(shuffle):
    X = np.arange(10, dtype=np.float32).reshape(10, 1) * 10
    Y = np.arange(10, dtype=np.int32)
    with tf.Graph().as_default():
        x1, y1 = tf.train.slice_input_producer([X, Y], num_epochs=3, shuffle=shuffle, seed=4)
        assert x1.shape.as_list() == [1] and y1.shape.as_list() == []
        xb, yb = tf.train.batch([x1, y1], batch_size=4, allow_smaller_final_batch=True)
        got = _drain([xb, yb])
    ys = np.concatenate([b for _, b in got])
    xs = np.concatenate([a for a, _ in got])
    assert [len(b) for _, b in got] == [4] * 7 + [2]  # 30 rows: the last batch smaller
    np.testing.assert_array_equal(xs[:, 0], ys * 10)  # rows stay together
    for e in range(3):  # each epoch is one permutation of the rows
        np.testing.assert_array_equal(np.sort(ys[10 * e:10 * e + 10]), np.arange(10))
    assert (list(ys[:10]) == list(range(10))) != shuffle


def test_batch_drops_the_final_partial_batch_and_keeps_static_shapes():
    with tf.Graph().as_default():
        (i,) = [tf.train.range_input_producer(7, num_epochs=1, shuffle=False).dequeue()]
        b = tf.train.batch({"i": i, "sq": i * i}, batch_size=3)
        assert b["i"].shape.as_list() == [3] and b["sq"].shape.as_list() == [3]
        got = _drain(b)
    np.testing.assert_array_equal(np.concatenate([g["i"] for g in got]), np.arange(6))
    np.testing.assert_array_equal(np.concatenate([g["sq"] for g in got]), np.arange(6) ** 2)


def test_shuffle_batch_enqueue_many_threads_and_join():
    data = np.arange(40, dtype=np.int32).reshape(20, 2)
    with tf.Graph().as_default():
        chunk = tf.train.input_producer(data, num_epochs=1, shuffle=False).dequeue_many(5)
        sb = tf.train.shuffle_batch([chunk], batch_size=4, capacity=30, min_after_dequeue=5,
                                    enqueue_many=True, num_threads=2, seed=3,
                                    allow_smaller_final_batch=True)[0]
        got = np.concatenate(_drain(sb))
    np.testing.assert_array_equal(np.sort(got[:, 0]), np.arange(0, 40, 2))
    np.testing.assert_array_equal(got[:, 1], got[:, 0] + 1)
    with tf.Graph().as_default():
        a = tf.train.range_input_producer(4, num_epochs=1, shuffle=False).dequeue()
        b = tf.train.range_input_producer(4, num_epochs=1, shuffle=False).dequeue() + 100
        j = tf.train.batch_join([[a], [b]], batch_size=2, allow_smaller_final_batch=True)[0]
        got = np.concatenate(_drain(j))
    np.testing.assert_array_equal(np.sort(got), [0, 1, 2, 3, 100, 101, 102, 103])


def test_string_input_producer_and_errors():
    with tf.Graph().as_default():
        q = tf.train.string_input_producer(["a.txt", "b.txt"], num_epochs=2, shuffle=False)
        got = _drain(q.dequeue())
        got = [g.decode() if isinstance(g, bytes) else str(g) for g in got]
        assert got == ["a.txt", "b.txt", "a.txt", "b.txt"]
        with pytest.raises(ValueError, match="non-empty"):
            tf.train.string_input_producer([])
        with pytest.raises(ValueError, match="fully defined"):
            tf.train.batch([tf.placeholder(tf.float32, [None])], batch_size=2)
        with pytest.raises(ValueError, match="num_epochs"):
            tf.train.limit_epochs(tf.constant(1), 0)


def test_softmax_regression_trained_from_shuffle_batch():
    """A TF1 training loop on queue input: the loss falls and the weights approach the
    closed-form least-squares fit's predictions (separable synthetic classes)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 4)).astype(np.float32)
    W_true = rng.standard_normal((4, 3)).astype(np.float32) * 3
    Y = (X @ W_true).argmax(1).astype(np.int32)
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        x1, y1 = tf.train.slice_input_producer([X, Y], seed=1)
        xb, yb = tf.train.shuffle_batch([x1, y1], batch_size=32, capacity=200,
                                        min_after_dequeue=50, seed=2)
        w = tf.Variable(tf.zeros([4, 3]))
        logits = tf.matmul(xb, w)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=yb, logits=logits))
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(tf.matmul(X, w), 1, output_type=tf.int32),
                                              Y), tf.float32))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            first = sess.run(loss)
            for _ in range(150):
                sess.run(train)
            last, a = sess.run([loss, acc])
            coord.request_stop()
            coord.join(threads)
    assert first == pytest.approx(np.log(3), rel=1e-5)  # zero weights: uniform softmax
    assert last < 0.5 * first and a > 0.9


def test_monitored_training_session_starts_queue_runners_and_ends_with_the_input():
    """As TensorFlow 1: MonitoredTrainingSession starts the queue runners; the input's
    last epoch ends the `with` block through OutOfRangeError."""
    with tf.Graph().as_default():
        (i,) = tf.train.slice_input_producer([np.arange(6, dtype=np.int32)], num_epochs=2,
                                             shuffle=False)
        b = tf.train.batch([i], batch_size=3)[0]
        step = tf.train.get_or_create_global_step()
        inc = tf.assign_add(step, 1)
        seen = []
        with tf.train.MonitoredTrainingSession(save_summaries_steps=None,
                                               save_checkpoint_secs=None) as sess:
            while not sess.should_stop():
                seen.append(sess.run([b, inc])[0])
    np.testing.assert_array_equal(np.concatenate(seen), [0, 1, 2, 3, 4, 5] * 2)
