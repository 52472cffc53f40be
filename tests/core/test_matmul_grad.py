"""Gradients of `matmul` with broadcast batch axes against jax.grad: every transpose
combination, a rank-2 weight on either side of a rank > 2 operand (`Dense` over
[batch, time, units]), size-1 batch axes, unknown batch sizes; and the shape of the
compiled weight gradient (one 2-D dot, no batched dot summed over the batch)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml

pytestmark = pytest.mark.usefixtures("jax_x64")

# (a's logical shape [.., m, k], b's logical shape [.., k, n])
CASES = [
    ((2, 3, 4), (4, 5)),            # Dense over [batch, time, units]
    ((2, 3, 6, 4), (4, 5)),         # two batch axes
    ((3, 4), (2, 4, 5)),            # rank-2 left operand
    ((2, 1, 3, 4), (6, 4, 5)),      # attention-style [B, 1, L, D] x [H, D, K]
    ((2, 6, 3, 4), (1, 6, 4, 5)),   # size-1 axis on the weight side
    ((2, 3, 4), (2, 4, 5)),         # same batch axes (no broadcast)
    ((1, 3, 4), (7, 4, 5)),         # size-1 on the left
]


def _phys(shape, t):
    return shape[:-2] + (shape[-1], shape[-2]) if t else shape


@pytest.mark.parametrize("sa,sb", CASES)
@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_matmul_gradients_match_jax(sa, sb, ta, tb):
    rng = np.random.default_rng(0)
    av = rng.normal(size=_phys(sa, ta))
    bv = rng.normal(size=_phys(sb, tb))
    out_shape = np.broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1])
    wv = rng.normal(size=out_shape)

    def ref(a, b):
        a2 = jnp.swapaxes(a, -1, -2) if ta else a
        b2 = jnp.swapaxes(b, -1, -2) if tb else b
        return jnp.sum(jnp.sin(a2 @ b2) * wv)

    g = ml.Graph()
    with g.as_default():
        a, b = ml.constant(av), ml.constant(bv)
        loss = ml.reduce_sum(ml.sin(ml.matmul(a, b, transpose_a=ta, transpose_b=tb)) * wv)
        ga, gb = ml.gradients(loss, [a, b])
        assert ga.shape.as_list() == list(av.shape)
        assert gb.shape.as_list() == list(bv.shape)
        with ml.Session(graph=g) as s:
            got = s.run([ga, gb])
    want = jax.grad(ref, argnums=(0, 1))(av, bv)
    for x, y in zip(got, want):
        assert x.shape == y.shape
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("tb", [False, True])
def test_dense_weight_gradient_with_unknown_batch(tb):
    rng = np.random.default_rng(1)
    xv = rng.normal(size=(3, 5, 4)).astype(np.float32)
    wv = rng.normal(size=(6, 4) if tb else (4, 6)).astype(np.float32)
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder("float32", [None, None, 4])
        w = ml.Variable(wv)
        loss = ml.reduce_sum(ml.tanh(ml.matmul(x, w, transpose_b=tb)))
        gx, gw = ml.gradients(loss, [x, w])
        with ml.Session(graph=g) as s:
            s.run(ml.global_variables_initializer())
            got = s.run([gx, gw], {x: xv})

    def ref(x, w):
        return jnp.sum(jnp.tanh(x @ (w.T if tb else w)))

    want = jax.grad(ref, argnums=(0, 1))(xv.astype(np.float64), wv.astype(np.float64))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def test_dense_over_time_weight_gradient_is_one_2d_product():
    """The kernel gradient of a Dense over [batch, time, units] is one MatMul of rank-2
    operands ([units, batch * time] x [batch * time, n]), not a batched product summed
    over the batch."""
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder("float32", [None, 5, 4])
        w = ml.Variable(np.ones((4, 6), np.float32))
        gw, = ml.gradients(ml.reduce_sum(ml.matmul(x, w) ** 2), [w])
    assert gw.op.type == "MatMul"
    assert [t.shape.rank for t in gw.op.inputs] == [2, 2]
