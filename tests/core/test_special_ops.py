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
