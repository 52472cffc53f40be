"""TensorFlow 1 `tf.nn` names added for real programs: `log_poisson_loss`,
`weighted_moments`, `pool`, `convolution`, `conv2d_backprop_input/filter`,
`depthwise_conv2d_native`, `max_pool_with_argmax`, `dilation2d`, `erosion2d`. Forward
values against loops written here from TensorFlow's definitions (or `lax` convolutions),
gradients against `jax.grad` of those references."""

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core"))
from op_testing import Row, check_case, run_table  # noqa: E402

F32, F64 = np.float32, np.float64


def _same_pads(size, k, s, r=1):
    eff = (k - 1) * r + 1
    out = -(-size // s)
    total = max((out - 1) * s + eff - size, 0)
    return out, total // 2


def _dilation_ref(x, f, s, r, padding):
    """TF's Dilation2D: max over the window of x[...] + f, padding never chosen."""
    n, h, w, c = x.shape
    kh, kw, _ = f.shape
    if padding == "SAME":
        oh, ph = _same_pads(h, kh, s, r)
        ow, pw = _same_pads(w, kw, s, r)
    else:
        oh, ow, ph, pw = (h - (kh - 1) * r - 1) // s + 1, (w - (kw - 1) * r - 1) // s + 1, 0, 0
    big = (oh - 1) * s + (kh - 1) * r + 1, (ow - 1) * s + (kw - 1) * r + 1
    xp = jnp.full((n, big[0] + h, big[1] + w, c), -jnp.inf, x.dtype)
    xp = xp.at[:, ph:ph + h, pw:pw + w, :].set(x)    # -inf padding is never chosen
    taps = [xp[:, a * r:a * r + (oh - 1) * s + 1:s, b * r:b * r + (ow - 1) * s + 1:s, :]
            + f[a, b] for a in range(kh) for b in range(kw)]
    return jnp.max(jnp.stack(taps), 0)


def _dilated_pool_ref(x, k, r, kind):
    """TF's `pool` with a dilation and SAME padding: a VALID pool of the zero-padded input."""
    total = (k - 1) * r
    xp = jnp.pad(x, [(0, 0), (total // 2, total - total // 2),
                     (total // 2, total - total // 2), (0, 0)])
    taps = [xp[:, a * r:a * r + x.shape[1], b * r:b * r + x.shape[2], :]
            for a in range(k) for b in range(k)]
    st = jnp.stack(taps)
    return st.max(0) if kind == "MAX" else st.mean(0)


def _conv_ref(x, w, strides, padding, dil=1, dn=("NHWC", "HWIO", "NHWC")):
    n = x.ndim - 2
    return jax.lax.conv_general_dilated(x, w, (strides,) * n, padding,
                                        rhs_dilation=(dil,) * n, dimension_numbers=dn)


def _poisson_ref(t, li, full=False):
    r = jnp.exp(li) - li * t
    if full:
        st = t * jnp.log(t) - t + 0.5 * jnp.log(2 * np.pi * t)
        r = r + jnp.where((t >= 0) & (t <= 1), 0.0, st)
    return r


def _wmoments_ref(x, w):
    m = jnp.sum(w * x, (0, 2)) / jnp.sum(w + jnp.zeros_like(x), (0, 2))
    v = jnp.sum(w * (x - m[None, :, None]) ** 2, (0, 2)) / jnp.sum(w + jnp.zeros_like(x), (0, 2))
    return jnp.concatenate([m, v])


def _targets(rng, shapes, dt):
    return [rng.uniform(0.2, 3.0, shapes[0]).astype(dt), rng.uniform(-1, 1, shapes[1]).astype(dt)]


def _positive_w(rng, shapes, dt):
    return [rng.normal(size=shapes[0]).astype(dt), rng.uniform(0.5, 2, shapes[1]).astype(dt)]


def _distinct(rng, shapes, dt):
    return [(rng.permutation(int(np.prod(s))).reshape(s) / 7.0).astype(dt) for s in shapes]


def _distinct_x_any_f(rng, shapes, dt):
    return [(rng.permutation(int(np.prod(shapes[0]))).reshape(shapes[0]) / 7.0).astype(dt),
            rng.uniform(-0.01, 0.01, shapes[1]).astype(dt)]


ROWS = [
    Row("log_poisson_loss", tf.nn.log_poisson_loss, _poisson_ref, [((3, 4), (3, 4))],
        (F32, F64), inputs=_targets),
    Row("log_poisson_loss_full",
        lambda t, li: tf.nn.log_poisson_loss(t, li, compute_full_loss=True),
        lambda t, li: _poisson_ref(t, li, True), [((3, 4), (3, 4))], inputs=_targets),
    Row("weighted_moments",
        lambda x, w: tf.concat(tf.nn.weighted_moments(x, [0, 2], w), 0), _wmoments_ref,
        [((4, 3, 5), (4, 1, 5))], (F32, F64), inputs=_positive_w),
    Row("pool_dilated_max",
        lambda x: tf.nn.pool(x, [2, 2], "MAX", "SAME", dilation_rate=[2, 2]),
        lambda x: _dilated_pool_ref(x, 2, 2, "MAX"), [((2, 5, 6, 2),)], inputs=_distinct),
    Row("pool_dilated_avg",
        lambda x: tf.nn.pool(x, [3, 3], "AVG", "SAME", dilation_rate=[2, 2]),
        lambda x: _dilated_pool_ref(x, 3, 2, "AVG"), [((1, 6, 5, 2),)]),
    Row("pool_1d_max", lambda x: tf.nn.pool(x, [3], "MAX", "VALID", strides=[2]),
        lambda x: jnp.stack([x[:, i:i + 3].max(1) for i in range(0, 5, 2)], 1),
        [((2, 7, 3),)], inputs=_distinct),
    Row("convolution_2d_dilated",
        lambda x, w: tf.nn.convolution(x, w, "SAME", dilation_rate=[2, 2]),
        lambda x, w: _conv_ref(x, w, 1, "SAME", 2), [((2, 6, 7, 3), (3, 3, 3, 4))],
        tol=3e-4),
    Row("convolution_1d_strided",
        lambda x, w: tf.nn.convolution(x, w, "VALID", strides=[2]),
        lambda x, w: _conv_ref(x, w, 2, "VALID", dn=("NWC", "WIO", "NWC")),
        [((2, 9, 3), (3, 3, 2))], tol=3e-4),
    Row("convolution_3d_ncdhw",
        lambda x, w: tf.nn.convolution(x, w, "SAME", data_format="NCDHW"),
        lambda x, w: _conv_ref(x, w, 1, "SAME", dn=("NCDHW", "DHWIO", "NCDHW")),
        [((1, 2, 4, 4, 3), (2, 2, 2, 2, 3))], tol=3e-4),
    Row("conv2d_backprop_input",
        lambda w, dy: tf.nn.conv2d_backprop_input([2, 5, 6, 3], w, dy, [1, 2, 2, 1], "SAME"),
        lambda w, dy: jax.vjp(lambda x: _conv_ref(x, w, 2, "SAME"),
                              jnp.zeros((2, 5, 6, 3), dy.dtype))[1](dy)[0],
        [((3, 3, 3, 4), (2, 3, 3, 4))], (F32, F64), tol=3e-4),
    Row("conv2d_backprop_filter",
        lambda x, dy: tf.nn.conv2d_backprop_filter(x, [3, 3, 3, 4], dy, [1, 1, 1, 1],
                                                   "VALID"),
        lambda x, dy: jax.vjp(lambda w: _conv_ref(x, w, 1, "VALID"),
                              jnp.zeros((3, 3, 3, 4), dy.dtype))[1](dy)[0],
        [((2, 5, 6, 3), (2, 3, 4, 4))], tol=3e-4),
    Row("depthwise_conv2d_native",
        lambda x, w: tf.nn.depthwise_conv2d_native(x, w, [1, 1, 1, 1], "VALID"),
        lambda x, w: jax.lax.conv_general_dilated(
            x, w.reshape(2, 2, 1, 6), (1, 1), "VALID",
            dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=3),
        [((1, 4, 5, 3), (2, 2, 3, 2))], tol=3e-4),
    Row("max_pool_with_argmax_values",
        lambda x: tf.nn.max_pool_with_argmax(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")[0],
        lambda x: _dilation_ref(x, jnp.zeros((3, 3, x.shape[-1]), x.dtype), 2, 1, "SAME"),
        [((2, 5, 6, 3),)], inputs=_distinct),
    Row("dilation2d", lambda x, f: tf.nn.dilation2d(x, f, [1, 2, 2, 1], [1, 1, 1, 1], "SAME"),
        lambda x, f: _dilation_ref(x, f, 2, 1, "SAME"), [((2, 5, 6, 2), (2, 3, 2))],
        inputs=_distinct_x_any_f),
    Row("dilation2d_rates_valid",
        lambda x, f: tf.nn.dilation2d(x, f, [1, 1, 1, 1], [1, 2, 2, 1], "VALID"),
        lambda x, f: _dilation_ref(x, f, 1, 2, "VALID"), [((1, 6, 6, 2), (2, 2, 2))],
        inputs=_distinct_x_any_f),
    Row("erosion2d", lambda x, k: tf.nn.erosion2d(x, k, [1, 1, 1, 1], [1, 1, 1, 1], "SAME"),
        lambda x, k: -_dilation_ref(-x, k[::-1, ::-1], 1, 1, "SAME"),
        [((1, 4, 5, 2), (3, 2, 2))], inputs=_distinct_x_any_f),
]

_RESULTS = {}


def _results():
    if not _RESULTS:
        _RESULTS.update(run_table(ROWS, seed=5))
    return _RESULTS


@pytest.mark.parametrize("cid", [c for r in ROWS for c, _, _ in r.cases()])
def test_row(cid, jax_x64):
    check_case(_results()[cid])


def _argmax_ref(x, k, s, padding, include_batch):
    n, h, w, c = x.shape
    oh, ph = _same_pads(h, k, s) if padding == "SAME" else ((h - k) // s + 1, 0)
    ow, pw = _same_pads(w, k, s) if padding == "SAME" else ((w - k) // s + 1, 0)
    out = np.zeros((n, oh, ow, c), np.int64)
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for ch in range(c):
                    best, arg = -np.inf, -1
                    for a in range(k):            # row-major scan: the first max wins
                        for d in range(k):
                            y, z = i * s + a - ph, j * s + d - pw
                            if 0 <= y < h and 0 <= z < w and x[b, y, z, ch] > best:
                                best = x[b, y, z, ch]
                                arg = ((b * h + y) * w + z) * c + ch if include_batch \
                                    else (y * w + z) * c + ch
                    out[b, i, j, ch] = arg
    return out


def test_max_pool_with_argmax_index_convention_and_gradient():
    x = tf.placeholder(tf.float32, [None, 5, 6, 3])
    rng = np.random.default_rng(1)
    xv = rng.normal(size=(2, 5, 6, 3)).astype(np.float32)
    xv[0, 0, 0, 0] = xv[0, 0, 1, 0] = 9.0          # a tie: the first (row-major) wins
    v, a = tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    v2, a2 = tf.nn.max_pool_with_argmax(x, [1, 3, 3, 1], [1, 2, 2, 1], "VALID",
                                        Targmax=tf.int32, include_batch_in_index=True)
    assert a.dtype == tf.int64 and a2.dtype == tf.int32 and v.shape.as_list() == [None, 3, 3, 3]
    cot = rng.uniform(0.5, 1.5, size=(2, 3, 3, 3)).astype(np.float32)
    g = tf.gradients(tf.reduce_sum(v * cot), x)[0]
    got = dict(zip("v a v2 a2 g".split(), tf.Session().run([v, a, v2, a2, g], {x: xv})))
    np.testing.assert_array_equal(got["a"], _argmax_ref(xv, 2, 2, "SAME", False))
    np.testing.assert_array_equal(got["a2"], _argmax_ref(xv, 3, 2, "VALID", True))
    assert got["a"][0, 0, 0, 0] == 0
    want = np.zeros_like(xv)
    for b in range(2):
        np.add.at(want[b].reshape(-1), got["a"][b].reshape(-1), cot[b].reshape(-1))
    np.testing.assert_allclose(got["g"], want, rtol=1e-6)


def test_backprop_ops_match_conv2d_gradients():
    x = tf.placeholder(tf.float32, [2, 6, 6, 3])
    w = tf.placeholder(tf.float32, [3, 3, 3, 4])
    y = tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME", data_format="NHWC")
    dy = tf.ones_like(y) * 0.5
    gx, gw = tf.gradients(y, [x, w], grad_ys=dy)
    bi = tf.nn.conv2d_backprop_input(tf.constant([2, 6, 6, 3]), w, dy, [1, 2, 2, 1], "SAME")
    bf = tf.nn.conv2d_backprop_filter(x, [3, 3, 3, 4], dy, [1, 2, 2, 1], "SAME")
    rng = np.random.default_rng(2)
    feeds = {x: rng.normal(size=(2, 6, 6, 3)), w: rng.normal(size=(3, 3, 3, 4))}
    a, b, c, d = tf.Session().run([gx, gw, bi, bf], feeds)
    np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b, d, rtol=1e-5, atol=1e-5)


def test_errors():
    x = tf.placeholder(tf.float32, [None, 4, 4, 3])
    w = tf.zeros([3, 3, 3, 4])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Conv2DBackpropInput.*out_backprop"):
        tf.nn.conv2d_backprop_input([2, 4, 4, 3], w, tf.zeros([2, 3, 3, 4]), [1, 1, 1, 1],
                                    "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="known when the graph is built"):
        tf.nn.conv2d_backprop_input(tf.shape(x), w, tf.zeros([2, 4, 4, 4]), [1, 1, 1, 1],
                                    "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="batch and depth"):
        tf.nn.conv2d_backprop_filter(x, [3, 3, 3, 4], x, [2, 1, 1, 1], "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="strides > 1"):
        tf.nn.pool(x, [2, 2], "MAX", "SAME", dilation_rate=[2, 2], strides=[2, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="pooling_type"):
        tf.nn.pool(x, [2, 2], "MIN", "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Dilation2D.*depth 3.*2"):
        tf.nn.dilation2d(x, tf.zeros([2, 2, 2]), [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="NHWC"):
        tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME", data_format="NCHW")
    with pytest.raises(ValueError, match="same shape"):
        tf.nn.log_poisson_loss(tf.zeros([3]), tf.zeros([4]))
    with pytest.raises(TypeError, match="exactly once"):
        tf.nn.convolution(x, w, "SAME", filters=w)
