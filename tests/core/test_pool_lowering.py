"""Max pooling whose windows tile the input (stride == window) is a max over reshaped
axes with an elementwise gradient: values and gradients equal XLA's `reduce_window`
and its `select_and_scatter` gradient exactly, ties included (the gradient goes to the
first maximum of a window in row-major order, as TensorFlow's `MaxPoolGrad`), NaN and
infinities included (XLA's scan never keeps a NaN: the gradient goes to a window's last
NaN when nothing follows it, else to the first maximum of what follows)."""

import jax
import numpy as np
import pytest
from jax import lax

import mylib as ml
from mylib.core.ops import nn_ops


def _reference(x, ksize, padding, nhwc):
    win = (1, *ksize, 1) if nhwc else (1, 1, *ksize)
    return lax.reduce_window(x, np.array(-np.inf, x.dtype), lax.max, win, win, padding)


def _first_max_grad(x, g, ksize, padding, nhwc):
    """numpy: each output's gradient added to the first maximum of its window."""
    xn = x if nhwc else x.transpose(0, 2, 3, 1)
    gn = g if nhwc else g.transpose(0, 2, 3, 1)
    n, h, w, c = xn.shape
    kh, kw = ksize
    if padding == "SAME":
        ph, pw = ((-h) % kh) // 2, ((-w) % kw) // 2
    else:
        ph = pw = 0
    out = np.zeros_like(xn)
    for b in range(n):
        for i in range(gn.shape[1]):
            for j in range(gn.shape[2]):
                for ch in range(c):
                    best, at = -np.inf, None
                    for di in range(kh):
                        for dj in range(kw):
                            r, q = i * kh + di - ph, j * kw + dj - pw
                            if 0 <= r < h and 0 <= q < w and (at is None or xn[b, r, q, ch] > best):
                                best, at = xn[b, r, q, ch], (r, q)
                    out[b, at[0], at[1], ch] += gn[b, i, j, ch]
    return out if nhwc else out.transpose(0, 3, 1, 2)


@pytest.mark.parametrize("shape,ksize,padding,nhwc", [
    ((2, 8, 8, 3), (2, 2), "VALID", True),
    ((2, 7, 9, 3), (2, 2), "VALID", True),   # the last row and column are dropped
    ((2, 7, 9, 3), (2, 2), "SAME", True),    # padded: windows over fewer real elements
    ((1, 10, 11, 2), (3, 3), "SAME", True),
    ((2, 9, 8, 4), (3, 2), "VALID", True),
    ((2, 3, 7, 5), (2, 2), "SAME", False),   # NCHW
    ((2, 4, 6, 6), (2, 3), "VALID", False),
    ((1, 9, 8, 2), (4, 4), "SAME", True),    # > 9 positions: the index-based form
])
@pytest.mark.parametrize("ties", [False, True, "special"])
def test_tiled_max_pool_equals_reduce_window(shape, ksize, padding, nhwc, ties):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape).astype(np.float32)
    if ties:  # after a ReLU most windows hold several equal maxima
        x = np.maximum(np.round(x), 0).astype(np.float32)
    if ties == "special":  # NaN (one or several a window, first, last), +-inf, -0.0
        x[rng.random(shape) < 0.2] = np.nan
        x[rng.random(shape) < 0.1] = np.inf
        x[rng.random(shape) < 0.1] = -np.inf
        x[rng.random(shape) < 0.1] = -0.0
    want, vjp = jax.vjp(lambda v: _reference(v, ksize, padding, nhwc), x)
    g = rng.normal(size=want.shape).astype(np.float32)
    (want_dx,) = vjp(g)
    got, vjp2 = jax.vjp(lambda v: nn_ops._max_pool_kernel(
        v, ksize=ksize, strides=ksize, padding=padding,
        data_format="NHWC" if nhwc else "NCHW"), x)
    (got_dx,) = vjp2(g)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_dx, want_dx)
    if ties != "special":
        np.testing.assert_array_equal(got_dx, _first_max_grad(x, g, ksize, padding, nhwc))
    assert "select_and_scatter" not in str(jax.make_jaxpr(vjp2)(g))


def test_max_pool_graph_gradient_and_overlapping_windows():
    """Through the graph: the tiled form and the overlapping-window form (3x3, stride
    2: reduce_window as before) both match numpy-free references (`jax.vjp` of
    reduce_window), with a finite-difference check of the tiled gradient."""
    rng = np.random.default_rng(1)
    xv = rng.normal(size=(2, 6, 6, 3)).astype(np.float32)
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder("float32", xv.shape)
        y1 = ml.nn.max_pool(x, 2, 2, "SAME")
        y2 = ml.nn.max_pool(x, 3, 2, "SAME")
        w1 = rng.normal(size=(2, 3, 3, 3)).astype(np.float32)
        w2 = rng.normal(size=(2, 3, 3, 3)).astype(np.float32)
        d1, d2 = ml.gradients(ml.reduce_sum(y1 * w1), x)[0], ml.gradients(
            ml.reduce_sum(y2 * w2), x)[0]
        with ml.Session(graph=g) as s:
            v1, v2, gd1, gd2 = s.run([y1, y2, d1, d2], {x: xv})
    r1, vjp1 = jax.vjp(lambda v: lax.reduce_window(v, -np.inf, lax.max, (1, 2, 2, 1),
                                                   (1, 2, 2, 1), "SAME"), xv)
    r2, vjp2 = jax.vjp(lambda v: lax.reduce_window(v, -np.inf, lax.max, (1, 3, 3, 1),
                                                   (1, 2, 2, 1), "SAME"), xv)
    np.testing.assert_array_equal(v1, r1)
    np.testing.assert_array_equal(v2, r2)
    np.testing.assert_array_equal(gd1, vjp1(w1)[0])
    np.testing.assert_array_equal(gd2, vjp2(w2)[0])
    # finite differences (distinct values: the max is locally linear)
    eps, f = 1e-2, lambda v: float(np.sum(np.asarray(r1 * 0 + lax.reduce_window(
        v, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")) * w1))
    for idx in [(0, 0, 0, 0), (1, 3, 4, 2), (0, 5, 5, 1)]:
        e = np.zeros_like(xv)
        e[idx] = eps
        fd = (f(xv + e) - f(xv - e)) / (2 * eps)
        assert abs(fd - gd1[idx]) < 1e-3
