"""Static shapes survive the cut of a step into segments: ops after a host op
(`dynamic_stitch`, `dynamic_partition`, `py_func`) whose sizes come from `shape` of a
tensor computed in an earlier segment (reshape and its gradient, tile, zeros_like,
ones(shape(x)), one_hot depth, slices with shape-derived sizes). Values are checked
against numpy, gradients against `jax.grad` of the same computation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as tf

XV = np.arange(12, dtype=np.float32).reshape(4, 3) / 5.0


def _run(fetches, feed):
    with tf.Session() as s:
        return s.run(fetches, feed)


def _stitch(x):
    # rows 0 and 2 from x[0:2], rows 1 and 3 from x[2:4]: a host op
    return tf.dynamic_stitch([tf.constant([0, 2]), tf.constant([1, 3])], [x[0:2], x[2:4]])


def _stitch_np(x):
    out = jnp.zeros_like(x)
    return out.at[jnp.array([0, 2])].set(x[0:2]).at[jnp.array([1, 3])].set(x[2:4])


def test_reshape_to_an_earlier_segments_shape_and_its_gradient():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.reshape(_stitch(x) * 2.0, tf.stack([tf.shape(x)[0] // 2, -1]))  # [2, 6]
    z = tf.reshape(tf.py_func(lambda a: a + 1.0, [x], tf.float32), tf.shape(x))
    loss = tf.reduce_sum(tf.sin(y))
    yv, zv, gv = _run([y, z, tf.gradients(loss, x)[0]], {x: XV})
    np.testing.assert_allclose(yv, np.asarray(_stitch_np(XV) * 2).reshape(2, 6), rtol=1e-6)
    np.testing.assert_allclose(zv, XV + 1, rtol=1e-6)
    want = jax.grad(lambda a: jnp.sum(jnp.sin(jnp.reshape(_stitch_np(a) * 2, (2, 6)))))(XV)
    np.testing.assert_allclose(gv, want, rtol=1e-5)


def test_tile_slice_and_fills_after_a_partition():
    x = tf.placeholder(tf.float32, [4, 3])
    parts = tf.dynamic_partition(x, tf.constant([0, 1, 0, 1]), 2)
    p = parts[0] * 3.0                                   # [?, 3] after the host op
    n = tf.shape(x)[0] - 1
    t = tf.tile(p, tf.stack([tf.shape(x)[0] // 2, 1]))   # [4, 3]
    sl = tf.slice(p, [0, 1], tf.stack([tf.shape(p)[0], tf.shape(x)[1] - 1]))
    zl = tf.zeros_like(p) + 1.0
    on = tf.ones(tf.shape(p)) * p
    oh = tf.one_hot(tf.constant([0, 2, 1]), tf.shape(p)[1])
    st = tf.strided_slice(tf.concat([p, p], 0), [0, 0], tf.stack([n, 3]))
    loss = tf.reduce_sum(t ** 2) + tf.reduce_sum(sl * 5.0) + tf.reduce_sum(on ** 3) \
        + tf.reduce_sum(st)
    g = tf.gradients(loss, x)[0]
    tv, slv, zlv, onv, ohv, stv, gv = _run([t, sl, zl, on, oh, st, g], {x: XV})
    p_np = XV[[0, 2]] * 3
    np.testing.assert_allclose(tv, np.tile(p_np, (2, 1)), rtol=1e-6)
    np.testing.assert_allclose(slv, p_np[:, 1:], rtol=1e-6)
    np.testing.assert_allclose(zlv, np.ones_like(p_np))
    np.testing.assert_allclose(onv, p_np, rtol=1e-6)
    np.testing.assert_allclose(ohv, np.eye(3)[[0, 2, 1]])
    np.testing.assert_allclose(stv, np.concatenate([p_np, p_np])[:3], rtol=1e-6)

    def f(a):
        pp = a[jnp.array([0, 2])] * 3
        return (jnp.sum(jnp.tile(pp, (2, 1)) ** 2) + jnp.sum(pp[:, 1:] * 5) + jnp.sum(pp ** 3)
                + jnp.sum(jnp.concatenate([pp, pp])[:3]))

    np.testing.assert_allclose(gv, jax.grad(f)(XV), rtol=1e-5)


def test_sizes_follow_a_host_output_whose_shape_changes_between_runs():
    # One plan, two runs: the partition's size (and so the shapes computed from it in
    # the next segment) differs; each run gets its own values, not the first run's.
    x = tf.placeholder(tf.float32, [4, 3])
    ids = tf.placeholder(tf.int32, [4])
    p = tf.dynamic_partition(x, ids, 2)[0]
    flat = tf.reshape(p, tf.stack([tf.shape(p)[0] * 3]))
    rows = tf.range(tf.shape(p)[0])
    mask = tf.ones(tf.stack([tf.shape(p)[0], 2]))
    g = tf.gradients(tf.reduce_sum(flat ** 2), x)[0]
    with tf.Session() as s:
        for idv in ([0, 1, 0, 1], [0, 0, 0, 1], [1, 1, 1, 0]):
            idv = np.array(idv, np.int32)
            fv, rv, mv, gv = s.run([flat, rows, mask, g], {x: XV, ids: idv})
            sel = XV[idv == 0]
            np.testing.assert_allclose(fv, sel.reshape(-1), rtol=1e-6)
            np.testing.assert_array_equal(rv, np.arange(len(sel)))
            assert mv.shape == (len(sel), 2)
            np.testing.assert_allclose(gv, 2 * XV * (idv == 0)[:, None], rtol=1e-6)


def test_a_size_computed_by_a_host_op_is_a_constant_of_the_next_segment():
    # py_func returns an int: the next segment compiles for its value (one program
    # per value), as TensorFlow computes it at run time.
    x = tf.placeholder(tf.float32, [None, 3])
    k = tf.placeholder(tf.int32, [])
    n = tf.py_func(lambda a, b: np.int32(a.shape[0] + b), [x, k], tf.int32)
    z = tf.zeros(tf.stack([n, 2])) + tf.reduce_sum(x)
    with tf.Session() as s:
        for kv in (1, 3, 1):
            zv = s.run(z, {x: XV, k: kv})
            np.testing.assert_allclose(zv, np.full((4 + kv, 2), XV.sum()), rtol=1e-6)


def test_a_bad_size_after_a_host_op_fails_and_keeps_variables():
    v = tf.Variable(1.0)
    x = tf.placeholder(tf.float32, [None, 3])
    k = tf.placeholder(tf.int32, [])
    st = _stitch(x)
    bump = tf.assign_add(v, 1.0)
    with tf.control_dependencies([bump]):
        y = tf.reshape(st, tf.stack([k, -1]))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_allclose(s.run(y, {x: XV, k: 3}), np.asarray(_stitch_np(XV)).reshape(3, 4))
        assert s.run(v) == 2.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="Reshape"):
            s.run(y, {x: XV, k: 5})  # 12 elements do not split into 5 rows
        assert s.run(v) == 2.0
