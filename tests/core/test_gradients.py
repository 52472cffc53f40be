"""gradients() across ops: multi-path aggregation (AddN), broadcasting, IndexedSlices,
stop_gradient, unconnected inputs, higher order, a small MLP against jax.grad."""

import pytest
import jax
import jax.numpy as jnp
import numpy as np

import mylib as ml

# References are computed with jax in float64 (see conftest.jax_x64).
pytestmark = pytest.mark.usefixtures("jax_x64")


def test_mlp_loss_gradients_match_jax_and_second_order():
    rng = np.random.default_rng(0)
    xv, w1v, b1v, w2v = (rng.normal(size=s) for s in [(5, 4), (4, 6), (6,), (6, 3)])
    yv = rng.integers(0, 3, 5)

    def ref(w1, b1, w2):
        h = jnp.tanh(xv @ w1 + b1)
        lg = h @ w2
        return jnp.mean(jax.nn.logsumexp(lg, -1) - lg[jnp.arange(5), yv]) + \
            0.1 * jnp.sum(w1 ** 2) / 2

    g = ml.Graph()
    with g.as_default():
        w1, b1, w2 = (ml.Variable(v) for v in (w1v, b1v, w2v))
        h = ml.tanh(ml.nn.bias_add(ml.matmul(ml.constant(xv), w1), b1))
        lg = ml.matmul(h, w2)
        loss = ml.reduce_mean(ml.nn.sparse_softmax_cross_entropy_with_logits(
            labels=yv.astype(np.int32), logits=lg)) + 0.1 * ml.nn.l2_loss(w1)
        gs = ml.gradients(loss, [w1, b1, w2])
        gb2, = ml.gradients(ml.reduce_sum(gs[1] * gs[1]), [b1])  # second order
        with ml.Session(graph=g) as s:
            s.run(ml.global_variables_initializer())
            got = s.run(gs + [gb2])
    ref_g = jax.grad(ref, argnums=(0, 1, 2))(w1v, b1v, w2v)
    for a, b in zip(got, ref_g):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    ref2 = jax.grad(lambda b1: jnp.sum(jax.grad(ref, 1)(w1v, b1, w2v) ** 2))(b1v)
    np.testing.assert_allclose(got[3], ref2, rtol=1e-8, atol=1e-12)


def test_multi_path_broadcast_stop_and_unconnected():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [2, 3])
        b = ml.placeholder(ml.float32, [3])
        u = ml.placeholder(ml.float32, [3])
        y = ml.reduce_sum(x * b + ml.exp(x) + ml.stop_gradient(x) * x + b)
        gx, gb, gu = ml.gradients(y, [x, b, u])
        assert gu is None
        gz, = ml.gradients(y, [u], unconnected_gradients="zero")
        xv = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
        bv = np.array([1.0, 2.0, 3.0], np.float32)
        a, c, z = ml.Session(graph=g).run([gx, gb, gz], {x: xv, b: bv, u: bv})
    np.testing.assert_allclose(a, bv + np.exp(xv) + xv, rtol=1e-6)
    np.testing.assert_allclose(c, xv.sum(0) + 2, rtol=1e-6)
    np.testing.assert_array_equal(z, 0)


def test_third_order_tanh_and_exp():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float64, [4])
        y = ml.reduce_sum(ml.tanh(x) * ml.exp(x))
        g1, = ml.gradients(y, [x])
        g2, = ml.gradients(ml.reduce_sum(g1), [x])
        g3, = ml.gradients(ml.reduce_sum(g2), [x])
        xv = np.linspace(-1, 1, 4)
        got = ml.Session(graph=g).run([g1, g2, g3], {x: xv})
    f = lambda x: jnp.tanh(x) * jnp.exp(x)  # noqa: E731
    d1 = jax.vmap(jax.grad(f))
    d2 = jax.vmap(jax.grad(jax.grad(f)))
    d3 = jax.vmap(jax.grad(jax.grad(jax.grad(f))))
    for a, d in zip(got, (d1, d2, d3)):
        np.testing.assert_allclose(a, d(xv), rtol=1e-10)


def test_indexed_slices_aggregate_and_clip():
    g = ml.Graph()
    with g.as_default():
        emb = ml.Variable(np.ones((5, 2), np.float32))
        y = ml.reduce_sum(ml.gather(emb, [0, 1])) + 3 * ml.reduce_sum(ml.gather(emb, [1, 4]))
        ge, = ml.gradients(y, [emb])
        assert isinstance(ge, ml.IndexedSlices)
        (gc,), norm = ml.clip_by_global_norm([ge], 1.0)
        assert isinstance(gc, ml.IndexedSlices)
        with ml.Session(graph=g) as s:
            s.run(ml.global_variables_initializer())
            d, n = s.run([ml.convert_to_tensor(ge), norm])
    np.testing.assert_allclose(d, [[1, 1], [4, 4], [0, 0], [0, 0], [3, 3]])
    # As TensorFlow, the norm of IndexedSlices is taken over its values (duplicates apart).
    np.testing.assert_allclose(n, np.sqrt(4 * 1 + 4 * 9), rtol=1e-6)


def test_sign_has_a_zero_gradient_floor_none():
    """As TensorFlow: d sign(x)/dx is zeros (not None), so x * sign(x) = |x| has the
    gradient sign(x) (jax.grad of abs, away from 0); floor is not differentiable."""
    xv = np.array([[1.5, -2.0, 0.25]], np.float32)
    with ml.Graph().as_default():
        x = ml.constant(xv)
        gs, = ml.gradients(ml.sign(x), [x])
        ga, = ml.gradients(ml.reduce_sum(x * ml.sign(x)), [x])
        assert ml.gradients(ml.floor(x), [x]) == [None]
        with ml.Session() as s:
            gsv, gav = s.run([gs, ga])
    np.testing.assert_array_equal(gsv, np.zeros_like(xv))
    np.testing.assert_allclose(gav, jax.vmap(jax.grad(lambda v: jnp.sum(jnp.abs(v))))(xv))
