"""TF1 static shapes: `Dimension` and `x.get_shape()[i].value`, shapes built from tensors
(TF1's constant_value_as_shape), sizes known only at run time, and unshaped placeholders
as `training` / `rate` / `keep_prob`. Values are checked against numpy."""

import json

import numpy as np
import pytest

import mylib as tf


def test_known_dimension_is_an_int_with_value():
    x = tf.placeholder(tf.float32, [None, 5, 7])
    d = x.get_shape()[-1]
    assert d.value == 7 and d == 7 and isinstance(d, int)
    assert x.shape[1] * x.shape[2] == 35 and type(x.shape[1] * x.shape[2]) is int
    assert x.shape.dims[1].value == 5
    assert [d.value for d in x.shape[1:]] == [5, 7]
    assert x.shape[0] is None and x.shape.dims[0] is None
    assert json.dumps(list(x.shape)) == "[null, 5, 7]"
    assert np.zeros((x.shape[1], x.shape[2])).shape == (5, 7)
    assert list(range(x.shape[1])) == list(range(5))
    assert repr(x.shape[1]) == "5"
    # as_list() stays plain data
    assert [type(d) for d in x.shape.as_list()] == [type(None), int, int]
    assert tf.reshape(x, [-1, x.shape[1].value * x.shape[2].value]).shape.as_list() == [None, 35]


def test_dimension_class():
    assert tf.Dimension(3).value == 3 and int(tf.Dimension(3)) == 3
    assert tf.Dimension(None).value is None
    assert (tf.Dimension(3) * 4).value == 12 and (2 + tf.Dimension(3)).value == 5
    assert (tf.Dimension(None) * 4).value is None
    assert (tf.Dimension(7) // 2).value == 3 and (tf.Dimension(7) - 2).value == 5
    assert tf.Dimension(3) == 3 and (tf.Dimension(None) == 3) is None
    assert tf.Dimension(3).merge_with(None).value == 3
    with pytest.raises(ValueError):
        tf.Dimension(3).merge_with(4)
    with pytest.raises(TypeError):
        int(tf.Dimension(None))
    x = tf.placeholder(tf.float32, [None, 5])
    assert isinstance(x.shape[1], tf.Dimension)
    assert tf.TensorShape([tf.Dimension(None), tf.Dimension(4)]).as_list() == [None, 4]
    assert np.zeros([tf.Dimension(2), 3]).shape == (2, 3)


def test_dimension_value():
    x = tf.placeholder(tf.float32, [None, 5])
    for f in (tf.dimension_value, tf.compat.dimension_value, tf.compat.v1.dimension_value):
        assert f(x.shape[1]) == 5 and type(f(x.shape[1])) is int
        assert f(x.shape[0]) is None
        assert f(tf.Dimension(4)) == 4 and f(tf.Dimension(None)) is None
        assert f(6) == 6
    assert tf.compat.v1.Dimension is tf.Dimension


# ---------------------------------------------------------------- shapes from tensors
def _run(fetches, feed):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


def test_shape_lists_with_tensors_keep_known_entries():
    x = tf.placeholder(tf.float32, [None, 4])
    bs = tf.shape(x)[0]
    cases = {
        "zeros": (tf.zeros([bs, 8]), [None, 8]),
        "ones": (tf.ones([bs, 8], tf.int32), [None, 8]),
        "fill": (tf.fill([bs, 3], 2.5), [None, 3]),
        "stack": (tf.zeros(tf.stack([bs, 8])), [None, 8]),
        "concat": (tf.zeros(tf.concat([tf.shape(x)[:1], [5]], 0)), [None, 5]),
        "known_dim": (tf.zeros([tf.shape(x)[-1], 2]), [4, 2]),
        "random_normal": (tf.random_normal([bs, 8]), [None, 8]),
        "random_uniform": (tf.random_uniform([bs, 8]), [None, 8]),
        "truncated_normal": (tf.truncated_normal([bs, 2]), [None, 2]),
        "reshape": (tf.reshape(x, [bs, 2, 2]), [None, 2, 2]),
        "reshape_minus_one": (tf.reshape(x, [bs, 2, -1]), [None, 2, 2]),
    }
    for name, (t, want) in cases.items():
        assert t.shape.as_list() == want, name
    xv = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = _run({k: t for k, (t, _) in cases.items()}, {x: xv})
    np.testing.assert_array_equal(got["zeros"], np.zeros((3, 8)))
    np.testing.assert_array_equal(got["ones"], np.ones((3, 8), np.int32))
    np.testing.assert_array_equal(got["fill"], np.full((3, 3), 2.5))
    np.testing.assert_array_equal(got["concat"], np.zeros((3, 5)))
    np.testing.assert_array_equal(got["reshape"], xv.reshape(3, 2, 2))
    np.testing.assert_array_equal(got["reshape_minus_one"], xv.reshape(3, 2, -1))
    for k in ("random_normal", "random_uniform"):
        assert got[k].shape == (3, 8)


def test_reshape_batch_and_minus_one():
    x = tf.placeholder(tf.float32, [None, 4, 3])
    y = tf.placeholder(tf.float32, [None, None, 3])
    flat = tf.reshape(x, [tf.shape(x)[0], -1])
    assert flat.shape.as_list() == [None, 12]
    assert tf.reshape(x, [-1, tf.shape(x)[0]]).shape.as_list() == [12, None]
    # two unknown dims of y, only one passed through: -1 stays unknown
    assert tf.reshape(y, [tf.shape(y)[0], -1]).shape.as_list() == [None, None]
    xv = np.random.RandomState(0).rand(2, 4, 3).astype(np.float32)
    np.testing.assert_array_equal(_run(flat, {x: xv}), xv.reshape(2, -1))


def test_next_layers_build_on_inferred_shapes():
    x = tf.placeholder(tf.float32, [None, 4])
    eps = tf.random_normal([tf.shape(x)[0], 8])
    h = tf.layers.dense(eps, 3)
    c = tf.layers.conv1d(tf.reshape(x, [tf.shape(x)[0], 2, 2]), 3, 1)
    assert h.shape.as_list() == [None, 3] and c.shape.as_list() == [None, 2, 3]
    hv, cv = _run([h, c], {x: np.ones((5, 4), np.float32)})
    assert hv.shape == (5, 3) and cv.shape == (5, 2, 3)


def test_zero_state_with_a_batch_tensor():
    x = tf.placeholder(tf.float32, [None, 6, 4])
    cell = tf.nn.rnn_cell.LSTMCell(5)
    init = cell.zero_state(tf.shape(x)[0], tf.float32)
    assert init.h.shape.as_list() == [None, 5] and init.c.shape.as_list() == [None, 5]
    out, st = tf.nn.dynamic_rnn(cell, x, initial_state=init)
    logits = tf.layers.dense(st.h, 3)
    iv, lv = _run([init.h, logits], {x: np.ones((2, 6, 4), np.float32)})
    np.testing.assert_array_equal(iv, np.zeros((2, 5)))
    assert lv.shape == (2, 3)


# ---------------------------------------------------------------- unshaped placeholders
def test_batch_normalization_with_unshaped_training():
    x = tf.placeholder(tf.float32, [None, 4])
    is_training = tf.placeholder(tf.bool)  # no shape, the usual TF1 spelling
    bn = tf.layers.batch_normalization(x, training=is_training, epsilon=1e-3)
    assert bn.shape.as_list() == [None, 4]
    out = tf.layers.dense(bn, 2)
    assert out.shape.as_list() == [None, 2]
    xv = np.random.RandomState(1).randn(6, 4).astype(np.float32)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        train = s.run(bn, {x: xv, is_training: True})
        infer = s.run(bn, {x: xv, is_training: False})
    np.testing.assert_allclose(train, (xv - xv.mean(0)) / np.sqrt(xv.var(0) + 1e-3),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(infer, xv / np.sqrt(1 + 1e-3), rtol=1e-5)


def test_dropout_with_unshaped_rate_and_training():
    x = tf.placeholder(tf.float32, [None, 50])
    r = tf.placeholder(tf.float32)
    t = tf.placeholder(tf.bool)
    d = tf.layers.dropout(x, rate=r, training=t)
    d_on = tf.layers.dropout(x, rate=r, training=True)
    assert d.shape.as_list() == [None, 50] and d_on.shape.as_list() == [None, 50]
    assert tf.layers.dense(d, 2).shape.as_list() == [None, 2]
    xv = np.ones((4, 50), np.float32)
    with tf.Session() as s:
        off = s.run(d, {x: xv, r: 0.5, t: False})
        none_dropped = s.run(d_on, {x: xv, r: 0.0})
        half = s.run(d, {x: xv, r: 0.5, t: True})
    np.testing.assert_array_equal(off, xv)
    np.testing.assert_array_equal(none_dropped, xv)
    assert set(np.unique(half)) <= {0.0, 2.0} and 0 < (half == 0).mean() < 1


def test_dropout_wrapper_with_unshaped_keep_prob():
    keep_prob = tf.placeholder(tf.float32)
    x = tf.placeholder(tf.float32, [None, 7, 3])
    cell = tf.nn.rnn_cell.BasicLSTMCell(5)
    wrapped = tf.nn.rnn_cell.DropoutWrapper(cell, output_keep_prob=keep_prob)
    out_d, st = tf.nn.dynamic_rnn(wrapped, x, dtype=tf.float32, scope="rnn")
    out_p, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope="rnn")
    assert out_d.shape.as_list() == [None, 7, 5] and st.h.shape.as_list() == [None, 5]
    assert tf.layers.dense(out_d[:, -1], 2).shape.as_list() == [None, 2]
    xv = np.random.RandomState(2).randn(2, 7, 3).astype(np.float32)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        plain, kept = s.run([out_p, out_d], {x: xv, keep_prob: 1.0})
        half = s.run(out_d, {x: xv, keep_prob: 0.5})
    np.testing.assert_allclose(kept, plain, rtol=1e-6)
    dropped = half == 0
    np.testing.assert_allclose(half[~dropped], 2 * plain[~dropped], rtol=1e-5)
    assert dropped.any() and not dropped.all()


# ---------------------------------------------------------------- sizes known at run time
def test_sizes_from_shapes_of_fed_tensors():
    x = tf.placeholder(tf.float32, [None, None])
    L = tf.placeholder(tf.int32, [None])
    n, m = tf.shape(x)[0], tf.shape(x)[1]
    ts = {
        "range": tf.range(n),
        "range3": tf.range(1, m, 2),
        "range_float": tf.range(0.0, tf.cast(n, tf.float32), 0.5),
        "mask": tf.sequence_mask(L, m),
        "mask_f": tf.sequence_mask(L, m, dtype=tf.float32),
        "tile": tf.tile(x, [1, n]),
        "tile_t": tf.tile(x, tf.shape(x)),
        "head": x[:, :m - 1],
        "tail": x[n - 2:, 1:],
        "slice": tf.slice(x, [0, 1], [n, 2]),
        "slice_run_begin": tf.slice(x, tf.stack([0, tf.reduce_min(L)]), [n, 2]),
        "linspace": tf.linspace(0.0, 1.0, n),
        "gather_nd": tf.gather_nd(x, tf.stack([tf.range(n), L - 1], axis=1)),
        "broadcast_to": tf.broadcast_to(x[:1], [n, m]),
    }
    xv = np.arange(12, dtype=np.float32).reshape(3, 4)
    Lv = np.array([4, 2, 1], np.int32)
    with tf.Session() as s:
        got = s.run(ts, {x: xv, L: Lv})
    np.testing.assert_array_equal(got["range"], np.arange(3))
    np.testing.assert_array_equal(got["range3"], np.arange(1, 4, 2))
    np.testing.assert_array_equal(got["range_float"], np.arange(0, 3, 0.5, np.float32))
    want_mask = np.arange(4)[None, :] < Lv[:, None]
    np.testing.assert_array_equal(got["mask"], want_mask)
    np.testing.assert_array_equal(got["mask_f"], want_mask.astype(np.float32))
    np.testing.assert_array_equal(got["tile"], np.tile(xv, [1, 3]))
    np.testing.assert_array_equal(got["tile_t"], np.tile(xv, [3, 4]))
    np.testing.assert_array_equal(got["head"], xv[:, :3])
    np.testing.assert_array_equal(got["tail"], xv[1:, 1:])
    np.testing.assert_array_equal(got["slice"], xv[:, 1:3])
    np.testing.assert_array_equal(got["slice_run_begin"], xv[:, 1:3])
    np.testing.assert_allclose(got["linspace"], np.linspace(0, 1, 3), rtol=1e-6)
    np.testing.assert_array_equal(got["gather_nd"], xv[np.arange(3), Lv - 1])
    np.testing.assert_array_equal(got["broadcast_to"], np.broadcast_to(xv[:1], (3, 4)))
    # a second feed shape compiles again with its own sizes
    xv2 = np.ones((2, 6), np.float32)
    with tf.Session() as s:
        r, t = s.run([ts["range"], ts["tile"]], {x: xv2})
    np.testing.assert_array_equal(r, np.arange(2))
    assert t.shape == (2, 12)


def test_static_shapes_of_run_time_sizes():
    x = tf.placeholder(tf.float32, [None, 5])
    n, m = tf.shape(x)[0], tf.shape(x)[1]
    assert tf.range(n).shape.as_list() == [None]
    assert tf.range(m).shape.as_list() == [5]
    assert tf.tile(x, [2, n]).shape.as_list() == [None, None]
    assert tf.tile(x, [n, 2]).shape.as_list() == [None, 10]
    assert tf.sequence_mask([1, 2], m).shape.as_list() == [2, 5]
    assert tf.linspace(0.0, 1.0, m).shape.as_list() == [5]
    assert x[:, :m].shape.as_list() == [None, 5]
    assert tf.slice(x, [0, 1], [n, 2]).shape.as_list() == [None, 2]
    assert tf.broadcast_to(x[:1], [n, 5]).shape.as_list() == [None, 5]


def test_gradients_through_run_time_sizes():
    x = tf.placeholder(tf.float32, [None, 3])
    n = tf.shape(x)[0]
    y = tf.reduce_sum(tf.tile(x, [1, n]) ** 2) + tf.reduce_sum(x[:n - 1] * 3.0) + \
        tf.reduce_sum(tf.slice(x, [0, 1], [n, 2])) + \
        tf.reduce_sum(tf.broadcast_to(x[:1], [n * 2, 3]))
    g = tf.gradients(y, x)[0]
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.Session() as s:
        gv = s.run(g, {x: xv})
    want = 2 * 2 * xv + np.array([[3, 3, 3], [0, 0, 0]]) + np.array([[0, 1, 1], [0, 1, 1]]) \
        + np.array([[4, 4, 4], [0, 0, 0]])
    np.testing.assert_allclose(gv, want)


def test_size_from_fed_values_compiles_for_the_value():
    # TensorFlow computes the bound at run time; mylib compiles the step for the fed
    # value (see tests/tf1/test_gap_fed_sizes.py).
    x = tf.placeholder(tf.float32, [None, None])
    L = tf.placeholder(tf.int32, [None])
    y = x[:, :tf.reduce_max(L)]
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(y, {x: xv, L: np.array([1, 2], np.int32)}),
                                      xv[:, :2])
