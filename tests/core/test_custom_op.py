"""A user-registered op: forward, generic-VJP gradient, registered gradient, second order."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml

# References are computed with jax in float64 (see conftest.jax_x64).
pytestmark = pytest.mark.usefixtures("jax_x64")


def _swish_ref(x, beta):
    return x * jax.nn.sigmoid(beta * x)


# Registered once per test session: op types are global, as in TensorFlow.
SwishNoGrad = ml.OpDef("TestSwishNoGrad", kernel=lambda x, *, beta: _swish_ref(x, beta))
SwishWithGrad = ml.OpDef("TestSwishWithGrad", kernel=lambda x, *, beta: _swish_ref(x, beta))
TwoOut = ml.OpDef("TestSinCos", kernel=lambda x: (jnp.sin(x), jnp.cos(x)))


@ml.RegisterGradient("TestSwishWithGrad")
def _swish_grad(op, grad):
    x, beta = op.inputs[0], op.attrs["beta"]
    s = ml.sigmoid(beta * x)
    return [grad * (s + beta * x * s * (1 - s))]


@pytest.mark.parametrize("opdef", [SwishNoGrad, SwishWithGrad], ids=["vjp", "registered"])
@pytest.mark.parametrize("shape", [(5,), (3, 4)])
def test_custom_op_value_and_gradients(opdef, shape):
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(shape).astype(np.float64)
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float64, shape)
        y = opdef(x, beta=1.5)
        assert y.shape.as_tuple() == shape and y.dtype == ml.float64
        gx, = ml.gradients(ml.reduce_sum(y), [x])
        ggx, = ml.gradients(ml.reduce_sum(gx), [x])
        with ml.Session(graph=g) as s:
            yv, gv, ggv = s.run([y, gx, ggx], {x: xv})
    f = lambda v: jnp.sum(_swish_ref(v, 1.5))  # noqa: E731
    np.testing.assert_allclose(yv, _swish_ref(xv, 1.5), rtol=1e-12)
    np.testing.assert_allclose(gv, jax.grad(f)(xv), rtol=1e-10)
    second = jax.grad(lambda v: jnp.sum(jax.grad(f)(v)))(xv)
    np.testing.assert_allclose(ggv, second, rtol=1e-8)


def test_custom_op_finite_differences():
    xv = np.linspace(-2, 2, 7)
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float64, [7])
        y = ml.reduce_sum(SwishNoGrad(x, beta=0.7) ** 2 if hasattr(ml.Tensor, "__pow__")
                          else ml.square(SwishNoGrad(x, beta=0.7)))
        gx, = ml.gradients(y, [x])
        with ml.Session(graph=g) as s:
            gv = s.run(gx, {x: xv})
            eps = 1e-6
            fd = np.array([(s.run(y, {x: xv + eps * e}) - s.run(y, {x: xv - eps * e})) / (2 * eps)
                           for e in np.eye(7)])
    np.testing.assert_allclose(gv, fd, rtol=1e-6, atol=1e-8)


def test_multi_output_custom_op_gradient_with_one_output_unused():
    xv = np.array([0.1, 0.5, 2.0])
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float64, [3])
        s_, c_ = TwoOut(x)
        gx, = ml.gradients(ml.reduce_sum(s_), [x])  # cos output gets no gradient
        gboth, = ml.gradients(ml.reduce_sum(s_ * c_), [x])
        with ml.Session(graph=g) as s:
            gv, gb = s.run([gx, gboth], {x: xv})
    np.testing.assert_allclose(gv, np.cos(xv), rtol=1e-12)
    np.testing.assert_allclose(gb, np.cos(2 * xv), rtol=1e-12)


def test_custom_op_shape_inference_with_unknown_batch():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, 4])
        y = SwishNoGrad(x, beta=1.0)
        assert y.shape.as_list() == [None, 4]
        assert y.dtype == ml.float32


def test_shape_error_names_op_shapes_and_user_line():
    g = ml.Graph()
    with g.as_default():
        a = ml.placeholder(ml.float32, [None, 784])
        b = ml.placeholder(ml.float32, [100, 10])
        with pytest.raises(ml.errors.InvalidArgumentError) as ei:
            ml.matmul(a, b)  # the line the error must quote
    msg = str(ei.value)
    assert "MatMul" in msg and "784" in msg and "100" in msg
    assert "(?, 784)" in msg
    assert "test_custom_op.py" in msg and "ml.matmul(a, b)" in msg
