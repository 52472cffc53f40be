"""TensorFlow 1 array and math names added for real programs (`roll`, `depth_to_space`,
`space_to_batch_nd`, `bincount`, `dynamic_partition`, `erfc`, `expm`, `switch_case`, ...):
forward values against numpy/scipy references computed independently, gradients of the
differentiable ones against `jax.grad` of a jnp reference (one table, one Session.run)."""

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
import scipy.special

import mylib as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core"))
from op_testing import Row, check_case, run_table  # noqa: E402

F32, F64 = np.float32, np.float64


def _d2s_ref(x, b=2):
    n, h, w, c = x.shape
    out = jnp.zeros((n, h * b, w * b, c // (b * b)), x.dtype)
    for i in range(b):
        for j in range(b):
            cc = c // (b * b)
            out = out.at[:, i::b, j::b, :].set(x[..., (i * b + j) * cc:(i * b + j + 1) * cc])
    return out


def _s2d_ref(x, b=2):
    blocks = [x[:, i::b, j::b, :] for i in range(b) for j in range(b)]
    return jnp.concatenate(blocks, axis=-1)


def _s2b_ref(x):
    # block [2, 2], paddings [[0, 0], [1, 1]] on [n, 4, 4, c]: batch index = offset * n + b
    xp = jnp.pad(x, [(0, 0), (0, 0), (1, 1), (0, 0)])
    return jnp.concatenate([xp[:, i::2, j::2, :] for i in range(2) for j in range(2)], 0)


def _mul_no_nan_ref(x, y):
    # TensorFlow's gradient: d/dx = y (0 where y == 0), d/dy = x even where y == 0.
    sg = jax.lax.stop_gradient
    return jnp.where(y == 0, 0.0, x * sg(y)) + sg(x) * (y - sg(y))


def _polyval_ref(x):
    return 3.0 * x ** 2 - 2.0 * x + 0.5


def _cumlse_ref(x, exclusive=False, reverse=False):
    if reverse:
        x = x[:, ::-1]
    cols = []
    for j in range(x.shape[1]):
        lo = x[:, :j] if exclusive else x[:, :j + 1]
        cols.append(jax.scipy.special.logsumexp(lo, axis=1) if lo.shape[1] else
                    jnp.full(x.shape[:1], -jnp.inf, x.dtype))
    y = jnp.stack(cols, 1)
    return y[:, ::-1] if reverse else y


def _pos(lo, hi):
    return lambda rng, shapes, dt: [rng.uniform(lo, hi, s).astype(dt) for s in shapes]


def _with_zeros(rng, shapes, dt):
    x = rng.uniform(-2, 2, shapes[0]).astype(dt)
    y = rng.uniform(-2, 2, shapes[1]).astype(dt)
    y.reshape(-1)[::3] = 0
    return [x, y]


ROWS = [
    Row("roll", lambda x: tf.roll(x, [1, -2], [1, 2]), lambda x: jnp.roll(x, (1, -2), (1, 2)),
        [((2, 3, 4),)], (F32, F64)),
    Row("roll_same_axis_twice", lambda x: tf.roll(x, [2, 3], [0, 0]),
        lambda x: jnp.roll(x, 5, 0), [((7,),)]),
    Row("depth_to_space", lambda x: tf.depth_to_space(x, 2), _d2s_ref, [((2, 3, 2, 8),)]),
    Row("space_to_depth", lambda x: tf.space_to_depth(x, 2), _s2d_ref, [((2, 4, 6, 3),)]),
    Row("space_to_depth_nchw",
        lambda x: tf.space_to_depth(x, 2, data_format="NCHW"),
        lambda x: jnp.transpose(_s2d_ref(jnp.transpose(x, (0, 2, 3, 1))), (0, 3, 1, 2)),
        [((1, 3, 4, 2),)]),
    Row("space_to_batch_nd", lambda x: tf.space_to_batch_nd(x, [2, 2], [[0, 0], [1, 1]]),
        _s2b_ref, [((2, 4, 4, 3),)]),
    Row("batch_to_space_nd_roundtrip",
        lambda x: tf.batch_to_space_nd(x * 2.0, [2, 1], [[1, 0], [0, 0]]),
        lambda x: 2.0 * jnp.stack([x[:3], x[3:]], 2).reshape(3, 6, 2)[:, 1:],
        [((6, 3, 2),)]),
    Row("space_to_batch_v1", lambda x: tf.space_to_batch(x, [[0, 0], [1, 1]], 2), _s2b_ref,
        [((1, 4, 4, 2),)]),
    Row("multiply_no_nan", tf.math.multiply_no_nan, _mul_no_nan_ref,
        [((3, 4), (3, 4)), ((3, 4), (4,))], (F32, F64), inputs=_with_zeros),
    Row("divide_no_nan", tf.math.divide_no_nan, lambda x, y: jnp.where(
        y == 0, 0.0, x / jnp.where(y == 0, 1.0, y)), [((3, 4), (3, 4))], inputs=_with_zeros),
    Row("realdiv", tf.realdiv, lambda x, y: x / y, [((3, 4), (1, 4))], (F32, F64),
        domain=(0.5, 2.0)),
    Row("erfc", tf.math.erfc, jax.scipy.special.erfc, [((3, 5),)], (F32, F64),
        second_order=True),
    Row("lbeta", tf.lbeta, lambda x: jnp.sum(jax.scipy.special.gammaln(x), -1)
        - jax.scipy.special.gammaln(jnp.sum(x, -1)), [((3, 4),)], (F32, F64),
        inputs=_pos(0.5, 3.0), tol=3e-4),
    Row("polyval", lambda x: tf.math.polyval([3.0, -2.0, 0.5], x), _polyval_ref,
        [((3, 4),)]),
    Row("reduce_euclidean_norm", lambda x: tf.math.reduce_euclidean_norm(x, 1, keepdims=True),
        lambda x: jnp.sqrt(jnp.sum(x * x, 1, keepdims=True)), [((3, 4),)], (F32, F64)),
    Row("cumulative_logsumexp", lambda x: tf.math.cumulative_logsumexp(x, axis=1),
        _cumlse_ref, [((2, 5),)], (F32, F64)),
    Row("cumulative_logsumexp_excl_rev",
        lambda x: tf.math.cumulative_logsumexp(x, 1, exclusive=True, reverse=True)[:, :-1],
        lambda x: _cumlse_ref(x, True, True)[:, :-1], [((2, 5),)]),
    Row("expm", tf.linalg.expm, jax.scipy.linalg.expm, [((3, 3),), ((2, 4, 4),)], (F32, F64),
        domain=(-1.0, 1.0), tol=2e-4),
    Row("pinv", tf.linalg.pinv, jnp.linalg.pinv, [((4, 3),), ((2, 3, 5),)], (F64,),
        tol=1e-7),
    Row("tensor_diag", tf.linalg.tensor_diag,
        lambda x: (x.reshape(-1)[:, None] * jnp.eye(6)).reshape(2, 3, 2, 3), [((2, 3),)]),
    Row("batch_gather", lambda p: tf.batch_gather(p, tf.constant([[2, 0], [1, 1]])),
        lambda p: jnp.stack([p[0, jnp.array([2, 0])], p[1, jnp.array([1, 1])]]),
        [((2, 3, 4),)]),
]

_RESULTS = {}


def _results():
    if not _RESULTS:
        _RESULTS.update(run_table(ROWS, seed=3))
    return _RESULTS


@pytest.mark.parametrize("cid", [c for r in ROWS for c, _, _ in r.cases()])
def test_row(cid, jax_x64):
    check_case(_results()[cid])


def _run(fetches, feeds=None):
    with tf.Session() as s:
        return s.run(fetches, feeds)


def test_numpy_references_and_integer_ops():
    x = np.array([0.5, 1.5, 2.5, -1.5, -0.5, 3.7], np.float32)
    got = _run({"rint": tf.rint(x), "tdiv": tf.truncatediv([-7, 7, -9], [2, -2, 4]),
                "erfc": tf.erfc(tf.constant([0.0, 3.0, 5.0], tf.float64)),
                "norm": tf.math.reduce_euclidean_norm([[3, 4], [5, 12]], 1),
                "perm": tf.invert_permutation([3, 0, 2, 1]),
                "expm": tf.linalg.expm(tf.constant([[1.0, 2.0], [0.5, -1.0]], tf.float64))})
    np.testing.assert_array_equal(got["rint"], np.rint(x))
    np.testing.assert_array_equal(got["tdiv"], [-3, -3, -2])
    np.testing.assert_allclose(got["erfc"], scipy.special.erfc([0.0, 3.0, 5.0]), rtol=1e-12)
    np.testing.assert_array_equal(got["norm"], [5, 13])
    assert got["norm"].dtype == np.int32
    np.testing.assert_array_equal(got["perm"], [1, 3, 2, 0])
    np.testing.assert_allclose(got["expm"], scipy.linalg.expm([[1.0, 2.0], [0.5, -1.0]]),
                               rtol=1e-12)
    assert tf.rint(x).op.type == "Rint" and tf.gradients(tf.rint(tf.constant(x)),
                                                         []) == []


def test_newaxis_and_shapes_with_unknown_batch():
    x = tf.placeholder(tf.float32, [None, 4, 6, 8])
    assert tf.newaxis is None
    assert x[:, tf.newaxis].shape.as_list() == [None, 1, 4, 6, 8]
    assert tf.depth_to_space(x, 2).shape.as_list() == [None, 8, 12, 2]
    assert tf.space_to_depth(x, 2).shape.as_list() == [None, 2, 3, 32]
    s2b = tf.space_to_batch_nd(x, [2, 3], [[0, 0], [0, 0]])
    assert s2b.shape.as_list() == [None, 2, 2, 8]
    back = tf.batch_to_space_nd(s2b, [2, 3], [[0, 0], [0, 0]])
    xv = np.random.default_rng(0).normal(size=(3, 4, 6, 8)).astype(np.float32)
    np.testing.assert_array_equal(_run(back, {x: xv}), xv)


def test_shape_errors_name_the_op():
    x = tf.placeholder(tf.float32, [None, 3, 4, 6])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"DepthToSpace.*6.*block_size"):
        tf.depth_to_space(x, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"SpaceToDepth.*height 3"):
        tf.space_to_depth(x, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="block_size must be an int >= 2"):
        tf.depth_to_space(x, 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"SpaceToBatchND.*divisible"):
        tf.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"shape \[2, 2\]"):
        tf.space_to_batch_nd(x, [2, 2], [[0, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="same size"):
        tf.roll(x, [1, 2], [1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        tf.roll(x, 1, 4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="integer"):
        tf.truncatediv(1.5, 2.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="floating"):
        tf.realdiv(3, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="square"):
        tf.linalg.expm(tf.zeros([2, 3]))


def test_bincount_host_and_static():
    arr = tf.placeholder(tf.int32, [None])
    w = tf.placeholder(tf.float32, [None])
    a = np.array([1, 1, 3, 7, 0, 3, 3], np.int32)
    wv = np.linspace(0.5, 2.0, 7).astype(np.float32)
    fixed = tf.math.bincount(arr, w, minlength=5, maxlength=5)
    assert fixed.shape.as_list() == [5]
    got = _run([tf.bincount(arr), tf.bincount(arr, minlength=10),
                tf.bincount(arr, maxlength=4, dtype=tf.int64), tf.bincount(arr, w), fixed,
                tf.gradients(tf.reduce_sum(fixed * np.arange(5.0, dtype=np.float32)), w)[0]],
               {arr: a, w: wv})
    np.testing.assert_array_equal(got[0], np.bincount(a))
    np.testing.assert_array_equal(got[1], np.bincount(a, minlength=10))
    np.testing.assert_array_equal(got[2], np.bincount(a)[:4])
    assert got[0].dtype == np.int32 and got[2].dtype == np.int64
    np.testing.assert_allclose(got[3], np.bincount(a, wv), rtol=1e-6)
    np.testing.assert_allclose(got[4], np.bincount(a, wv)[:5], rtol=1e-6)
    np.testing.assert_allclose(got[5], np.where(a < 5, a, 0).astype(np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative"):
        _run(tf.bincount(arr), {arr: [1, -2]})


def test_setdiff_unique_with_counts():
    x = tf.placeholder(tf.int32, [None])
    out, idx = tf.setdiff1d(x, [4, 1, 9])
    out2, idx2 = tf.listdiff(x, tf.constant([2]), out_idx=tf.int64)
    y, i, c = tf.unique_with_counts(x)
    xv = np.array([4, 2, 1, 2, 7, 4, 4, 3], np.int32)
    got = _run([out, idx, out2, idx2, y, i, c], {x: xv})
    keep = ~np.isin(xv, [4, 1, 9])
    np.testing.assert_array_equal(got[0], xv[keep])
    np.testing.assert_array_equal(got[1], np.nonzero(keep)[0])
    np.testing.assert_array_equal(got[2], xv[xv != 2])
    assert got[3].dtype == np.int64
    np.testing.assert_array_equal(got[4], [4, 2, 1, 7, 3])      # first-occurrence order
    np.testing.assert_array_equal(got[4][got[5]], xv)
    np.testing.assert_array_equal(got[6], [3, 2, 1, 1, 1])


def test_dynamic_partition_and_stitch_with_gradients():
    data = tf.placeholder(tf.float32, [None, 2])
    parts = tf.placeholder(tf.int32, [None])
    dv = np.arange(12, dtype=np.float32).reshape(6, 2)
    pv = np.array([1, 0, 2, 1, 1, 0], np.int32)
    outs = tf.dynamic_partition(data, parts, 3)
    assert len(outs) == 3 and outs[0].shape.as_list() == [None, 2]
    scale = [tf.constant(float(k + 1)) for k in range(3)]
    loss = tf.add_n([tf.reduce_sum(o * o * s) for o, s in zip(outs, scale)])
    g = tf.gradients(loss, data)[0]
    a = tf.placeholder(tf.float32, [2, 2])
    b = tf.placeholder(tf.float32, [2, 2, 2])
    stitched = tf.dynamic_stitch([tf.constant([0, 4]), tf.constant([[1, 2], [3, 4]])], [a, b])
    gs = tf.gradients(tf.reduce_sum(stitched * np.arange(10.0, dtype=np.float32)
                                    .reshape(5, 2)), [a, b])
    got = _run([outs, g, stitched, gs], {data: dv, parts: pv, a: dv[:2],
                                         b: dv[2:].reshape(2, 2, 2)})
    for k in range(3):
        np.testing.assert_array_equal(got[0][k], dv[pv == k])
    np.testing.assert_allclose(got[1], 2 * dv * (pv + 1)[:, None])
    ref = np.zeros((5, 2), np.float32)
    ref[[0, 4]] = dv[:2]
    ref[[1, 2, 3, 4]] = dv[2:]   # the later index 4 overwrites
    np.testing.assert_array_equal(got[2], ref)
    w = np.arange(10.0, dtype=np.float32).reshape(5, 2)
    np.testing.assert_array_equal(got[3][0], w[[0, 4]])  # a gather, as TF
    np.testing.assert_array_equal(got[3][1], w[[1, 2, 3, 4]].reshape(2, 2, 2))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in"):
        _run(outs, {data: dv, parts: pv + 1})


def test_switch_case():
    i = tf.placeholder(tf.int32, [])
    x = tf.placeholder(tf.float32, [None])
    y = tf.switch_case(i, [lambda: x * 2.0, lambda: x * x, lambda: x + 1.0])
    y2 = tf.switch_case(i, {0: lambda: x, 1: lambda: -x}, default=lambda: x * 0.0)
    g = tf.gradients(tf.reduce_sum(y), x)[0]
    xv = np.array([1.0, 3.0], np.float32)
    with tf.Session() as s:
        for k, want, want2, dg in [(0, 2 * xv, xv, [2, 2]), (1, xv * xv, -xv, 2 * xv),
                                   (2, xv + 1, 0 * xv, [1, 1]), (7, xv + 1, 0 * xv, [1, 1]),
                                   (-1, xv + 1, 0 * xv, [1, 1])]:
            a, b, c = s.run([y, y2, g], {i: k, x: xv})
            np.testing.assert_allclose(a, want)
            np.testing.assert_allclose(b, want2)
            np.testing.assert_allclose(c, dg)
    with pytest.raises(ValueError, match="keys"):
        tf.switch_case(i, {0: lambda: x, 2: lambda: x})
    with pytest.raises(tf.errors.InvalidArgumentError, match="scalar"):
        tf.switch_case(x, [lambda: x])
