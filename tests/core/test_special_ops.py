"""lgamma, digamma, sort, argsort, log_sigmoid, reduce_variance / reduce_std, hessians
and self_adjoint_eig: values against numpy / scipy, gradients against jax and finite
differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special

import mylib as tf

rng = np.random.default_rng(0)


def _run(fetches, feeds=None):
    with tf.Session() as s:
        return s.run(fetches, feeds)


def _fd(f, xv, eps=1e-6):
    """Central finite differences of scalar f at xv (float64)."""
    g = np.zeros_like(xv)
    for i in np.ndindex(*xv.shape):
        d = np.zeros_like(xv)
        d[i] = eps
        g[i] = (f(xv + d) - f(xv - d)) / (2 * eps)
    return g


def test_lgamma_digamma_values_and_gradients():
    xv = rng.uniform(0.2, 6.0, size=(3, 4))
    w = rng.standard_normal((3, 4))
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [3, 4])
        lg, dg = tf.lgamma(x), tf.digamma(x)
        g_lg, = tf.gradients(tf.reduce_sum(lg * w), [x])
        g_dg, = tf.gradients(tf.reduce_sum(dg * w), [x])
        lgv, dgv, glv, gdv = _run([lg, dg, g_lg, g_dg], {x: xv})
    np.testing.assert_allclose(lgv, special.gammaln(xv), rtol=1e-12)
    np.testing.assert_allclose(dgv, special.digamma(xv), rtol=1e-12)
    np.testing.assert_allclose(glv, w * special.digamma(xv), rtol=1e-10)
    np.testing.assert_allclose(gdv, w * special.polygamma(1, xv), rtol=1e-8)
    with tf.Graph().as_default(), pytest.raises(TypeError, match="lgamma"):
        tf.lgamma(tf.constant([1, 2]))


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("direction", ["ASCENDING", "DESCENDING"])
def test_sort_and_argsort_against_numpy_and_gradient(axis, direction):
    xv = rng.standard_normal((4, 5, 3))
    xv[0, 0, :] = 0.5  # ties: argsort is stable
    w = rng.standard_normal(xv.shape)
    w[0, 0, :] = 1.0  # which tied entry gets which weight is arbitrary: give them one
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, xv.shape)
        s = tf.sort(x, axis=axis, direction=direction)
        a = tf.argsort(x, axis=axis, direction=direction)
        g, = tf.gradients(tf.reduce_sum(s * w), [x])
        sv, av, gv = _run([s, a, g], {x: xv})
    want_a = np.argsort(-xv if direction == "DESCENDING" else xv, axis=axis, kind="stable")
    np.testing.assert_array_equal(av, want_a)
    assert av.dtype == np.int32
    np.testing.assert_array_equal(sv, np.take_along_axis(xv, want_a, axis=axis))
    jsort = (lambda v: -jnp.sort(-v, axis=axis)) if direction == "DESCENDING" else \
        (lambda v: jnp.sort(v, axis=axis))
    np.testing.assert_allclose(gv, jax.grad(lambda v: jnp.sum(jsort(v) * w))(xv))


def test_log_sigmoid_and_moments():
    xv = np.array([[-800.0, -3.0, 0.0, 2.5, 800.0], [1.0, 2.0, 3.0, 4.0, 5.0]])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, xv.shape)
        ls = tf.math.log_sigmoid(x)
        var0, std1 = tf.math.reduce_variance(x[1:], axis=1), tf.math.reduce_std(x, 0, True)
        g, = tf.gradients(tf.reduce_sum(ls), [x])
        lsv, vv, sv, gv = _run([ls, var0, std1, g], {x: xv})
    np.testing.assert_allclose(lsv, -np.logaddexp(0, -xv), rtol=1e-12)
    np.testing.assert_allclose(gv, special.expit(-xv), rtol=1e-12)  # d log sig = sig(-x)
    np.testing.assert_allclose(vv, np.var(xv[1:], axis=1), rtol=1e-12)
    np.testing.assert_allclose(sv, np.std(xv, 0, keepdims=True), rtol=1e-12)


def test_hessians_match_jax_hessian():
    av = rng.standard_normal((3, 2))
    bv = rng.standard_normal((2,))

    def f(a, b):
        return jnp.sum(jnp.tanh(a @ b) ** 2) + jnp.sum(a ** 3) * jnp.sum(b)

    with tf.Graph().as_default():
        a = tf.placeholder(tf.float64, [3, 2])
        b = tf.placeholder(tf.float64, [2])
        c = tf.placeholder(tf.float64, [2])  # unused: None
        ab = tf.reshape(tf.matmul(a, tf.reshape(b, [2, 1])), [3])
        y = tf.reduce_sum(tf.tanh(ab) ** 2) + tf.reduce_sum(a ** 3) * tf.reduce_sum(b)
        ha, hb, hc = tf.hessians(y, [a, b, c])
        assert hc is None and ha.shape.as_list() == [3, 2, 3, 2]
        hav, hbv = _run([ha, hb], {a: av, b: bv})
    # jax computes in float32 here (64-bit mode is off in the test process)
    np.testing.assert_allclose(hav, jax.hessian(f, 0)(av, bv), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hbv, jax.hessian(f, 1)(av, bv), rtol=1e-5, atol=1e-6)
    # symmetric, as a Hessian of a smooth function
    np.testing.assert_allclose(hav, hav.transpose(2, 3, 0, 1), rtol=1e-10)


def test_self_adjoint_eig_values_and_eigenvalue_gradient():
    bv = rng.standard_normal((2, 4, 4))
    sym = bv + np.swapaxes(bv, -1, -2)
    with tf.Graph().as_default():
        b = tf.placeholder(tf.float64, bv.shape)
        a = b + tf.linalg.matrix_transpose(b)
        e, v = tf.self_adjoint_eig(a)
        eu = tf.linalg.eigvalsh(tf.linalg.band_part(a, -1, 0))  # lower triangle only
        w = tf.constant(np.arange(1.0, 5.0))
        g, = tf.gradients(tf.reduce_sum(e * w), [b])
        with tf.Session() as s:
            ev, vv, euv, gv = s.run([e, v, eu, g], {b: bv})
            fd = _fd(lambda z: s.run(tf.reduce_sum(e * w), {b: z}), bv)
    np.testing.assert_allclose(ev, np.linalg.eigvalsh(sym), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(euv, ev, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sym @ vv, vv * ev[:, None, :], atol=1e-10)
    np.testing.assert_allclose(gv, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_and_histogram_against_numpy(side):
    seq = np.sort(rng.integers(0, 10, size=(3, 8)).astype(np.float32), axis=-1)
    vals = rng.integers(-1, 12, size=(3, 5)).astype(np.float32)
    data = rng.normal(size=200).astype(np.float32) * 3
    with tf.Graph().as_default():
        idx = tf.searchsorted(seq, vals, side=side)
        h = tf.histogram_fixed_width(data, [-4.0, 4.0], nbins=7)
        iv, hv = _run([idx, h])
    want = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq, vals)])
    np.testing.assert_array_equal(iv, want)
    # TensorFlow's rule: outside the range counts in the end bins
    edges = np.linspace(-4, 4, 8)
    want_h = np.histogram(np.clip(data, -4, 4 - 1e-6), bins=edges)[0]
    np.testing.assert_array_equal(hv, want_h)
    assert hv.dtype == np.int32 and hv.sum() == data.size


def test_small_tf1_utilities():
    with tf.Graph().as_default():
        a, b = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
        s = tf.accumulate_n([a, b, a])
        i1, i2 = tf.identity_n([a, b])
        p = tf.placeholder(tf.float32, [None, 3])
        e = tf.ensure_shape(p, [5, None])
        assert e.shape.as_list() == [5, 3]
        with pytest.raises(ValueError, match="compatible"):
            tf.ensure_shape(p, [None, 4])
        bad = tf.verify_tensor_all_finite(a / tf.constant([1.0, 0.0]), "inf here")
        with tf.op_scope([a], None, "scoped") as sc, tf.container("c"):
            t = tf.identity(a, name="t")
        assert t.op.name.startswith("scoped") and sc.startswith("scoped")
        with tf.Session() as sess:
            sv, i1v, i2v = sess.run([s, i1, i2])
            with pytest.raises(tf.errors.InvalidArgumentError, match="inf here"):
                sess.run(bad)
    np.testing.assert_array_equal(sv, [5.0, 8.0])
    np.testing.assert_array_equal(i2v, [3.0, 4.0])
    assert tf.NoGradient is tf.no_gradient


def test_cross_cholesky_solve_and_lstsq():
    av, bv = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    m = rng.standard_normal((5, 3))
    spd = m.T @ m + np.eye(3)
    rhs = rng.standard_normal((3, 2))
    tall, wide = rng.standard_normal((6, 3)), rng.standard_normal((2, 4))
    y6, y2 = rng.standard_normal((6, 2)), rng.standard_normal((2, 2))
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float64, [4, 3])
        c = tf.cross(a, bv)
        g, = tf.gradients(tf.reduce_sum(c * bv), [a])
        cs = tf.linalg.cholesky_solve(tf.cholesky(spd), rhs)
        ls = tf.linalg.lstsq(tall, y6)
        lsr = tf.matrix_solve_ls(tall, y6, l2_regularizer=0.5)
        mn = tf.linalg.lstsq(wide, y2)
        cv, gv, csv, lsv, lsrv, mnv = _run([c, g, cs, ls, lsr, mn], {a: av})
    np.testing.assert_allclose(cv, np.cross(av, bv), rtol=1e-12)
    # d/da sum(cross(a, b) * b) = cross(b, b) = 0
    np.testing.assert_allclose(gv, np.cross(bv, bv), atol=1e-12)
    np.testing.assert_allclose(csv, np.linalg.solve(spd, rhs), rtol=1e-10)
    np.testing.assert_allclose(lsv, np.linalg.lstsq(tall, y6, rcond=None)[0], rtol=1e-8)
    np.testing.assert_allclose(lsrv, np.linalg.solve(tall.T @ tall + 0.5 * np.eye(3),
                                                     tall.T @ y6), rtol=1e-8)
    np.testing.assert_allclose(mnv, np.linalg.pinv(wide) @ y2, rtol=1e-8)  # minimum norm


def _patches_np(x, k, s, r, padding):
    n, h, w, c = x.shape
    ekh, ekw = (k[0] - 1) * r[0] + 1, (k[1] - 1) * r[1] + 1
    if padding == "SAME":
        oh, ow = -(-h // s[0]), -(-w // s[1])
        ph = max((oh - 1) * s[0] + ekh - h, 0)
        pw = max((ow - 1) * s[1] + ekw - w, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        oh, ow = (h - ekh) // s[0] + 1, (w - ekw) // s[1] + 1
    out = np.zeros((n, oh, ow, k[0] * k[1] * c))
    for i in range(oh):
        for j in range(ow):
            win = x[:, i * s[0]:i * s[0] + ekh:r[0], j * s[1]:j * s[1] + ekw:r[1], :]
            out[:, i, j] = win.reshape(n, -1)
    return out


@pytest.mark.parametrize("k,s,r,padding", [((2, 3), (2, 1), (1, 1), "VALID"),
                                           ((3, 3), (1, 1), (2, 2), "SAME"),
                                           ((2, 2), (3, 2), (1, 2), "SAME")])
def test_extract_patches_against_numpy_and_gradient(k, s, r, padding):
    xv = rng.standard_normal((2, 6, 7, 3))
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, xv.shape)
        p = tf.extract_image_patches(x, [1, *k, 1], [1, *s, 1], [1, *r, 1], padding)
        p2 = tf.image.extract_patches(x, [1, *k, 1], [1, *s, 1], [1, *r, 1], padding)
        w = tf.constant(rng.standard_normal(p.shape.as_list()))
        g, = tf.gradients(tf.reduce_sum(p * w), [x])
        pv, p2v, gv, wv = _run([p, p2, g, w], {x: xv})
    want = _patches_np(xv, k, s, r, padding)
    np.testing.assert_allclose(pv, want, rtol=1e-12)
    np.testing.assert_array_equal(p2v, pv)
    # the loss is linear in x: its gradient is the numpy patches' adjoint applied to w
    fd = _fd(lambda z: float((_patches_np(z, k, s, r, padding) * wv).sum()), xv)
    np.testing.assert_allclose(gv, fd, rtol=1e-6, atol=1e-8)
