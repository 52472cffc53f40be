"""EinsumDense against Keras 3 (JAX backend) on the same weights: shapes of kernel,
bias and output for each equation form, one call, two epochs of SGD, configs and
model files; the gradient against jax.grad of the einsum."""

import jax
import jax.numpy as jnp
import keras
import numpy as np
import pytest

import mylib as ml
from mylib import layers as L

from keras_compare import _same_layer
from layer_fit_compare import fit_like_keras

RS = np.random.RandomState(7)

CASES = [
    # equation, output_shape, bias_axes, input per-sample shape
    ("ab,bc->ac", 4, "c", (5,)),
    ("ab,bc->ac", (4,), None, (5,)),
    ("abc,cd->abd", (None, 6), "d", (3, 5)),
    ("abc,cde->abde", (None, 2, 4), "de", (3, 5)),
    ("abc,cde->abde", (3, 2, 4), "e", (3, 5)),
    ("abcd,cde->abe", (None, 4), "e", (3, 2, 5)),      # multi-head output projection
    ("...b,bc->...c", 4, "c", (2, 3, 5)),
    ("...ab,bc->...ac", (3, 4), "c", (2, 3, 5)),
    ("ab...,bc->ac...", 4, "c", (5, 2, 3)),             # bias [4, 1, 1]
    ("abc,cd->abd", (3, 4), "bd", (3, 5)),             # bias on two axes [3, 4]
]


@pytest.mark.parametrize("eq,out,bias,shape", CASES)
def test_matches_keras_one_call(eq, out, bias, shape):
    x = RS.randn(4, *shape).astype(np.float32)
    kw = dict(equation=eq, output_shape=out, bias_axes=bias, activation="tanh")
    ours, theirs = L.EinsumDense(**kw), keras.layers.EinsumDense(**kw)
    _same_layer(ours, theirs, x, 1e-5, 1e-5)
    assert [tuple(w.shape) for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]
    assert tuple(ours.compute_output_shape((None,) + shape)) == \
        tuple(theirs.compute_output_shape((None,) + shape))


@pytest.mark.parametrize("eq,out,bias,shape", [CASES[4], ("abcd,cde->abe", (3, 4), "e", (3, 2, 5)),
                                               CASES[8]])
def test_fit_two_epochs_and_save_like_keras(eq, out, bias, shape, tmp_path):
    x = RS.randn(8, *shape).astype(np.float32)
    y = RS.randn(8, 3).astype(np.float32)
    kw = dict(equation=eq, output_shape=out, bias_axes=bias, activation="relu")
    fit_like_keras(lambda: L.EinsumDense(**kw), lambda: keras.layers.EinsumDense(**kw), x, y,
                   tmp_path=tmp_path)


def test_gradient_matches_jax_grad():
    x = RS.randn(4, 3, 5).astype(np.float32)
    layer = L.EinsumDense("abc,cde->abde", (None, 2, 4), bias_axes="de")
    xt = ml.constant(x)
    y = layer(xt)
    loss = ml.reduce_sum(ml.square(y))
    gk, gb, gx = ml.gradients(loss, [layer.kernel, layer.bias, xt])
    with ml.Session() as s:
        s.run(ml.global_variables_initializer())
        k, b = s.run([layer.kernel, layer.bias])
        got = s.run([gk, gb, gx])

    def f(k, b, x):
        return jnp.sum(jnp.square(jnp.einsum("abc,cde->abde", x, k) + b))
    want = jax.grad(f, argnums=(0, 1, 2))(k, b, x)
    for a, w in zip(got, want):
        np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-5)


def test_config_round_trip_and_regularizers():
    layer = L.EinsumDense("abc,cd->abd", (None, 4), bias_axes="d",
                          kernel_regularizer="l2", bias_initializer="ones",
                          kernel_constraint="non_neg", activity_regularizer="l1")
    cfg = layer.get_config()
    assert cfg["equation"] == "abc,cd->abd" and cfg["output_shape"] == (None, 4)
    clone = L.EinsumDense.from_config(cfg)
    assert clone.get_config() == {**cfg, "name": clone.name}
    assert ml.keras.layers.EinsumDense is L.EinsumDense
    x = ml.keras.Input((3, 5))
    layer(x)
    assert len(layer.losses) == 2  # kernel l2, activity l1


@pytest.mark.parametrize("eq,msg", [("ab,bc", "Invalid einsum equation"),
                                    ("ab,bd->ac", "Dimension 'c'"),
                                    ("ab,bcz->ac", "Weight dimension 'z'")])
def test_bad_equations_say_why(eq, msg):
    with pytest.raises(ValueError, match=msg):
        L.EinsumDense(eq, 4)(ml.keras.Input((5,)))


def test_bad_bias_axis():
    with pytest.raises(ValueError, match="Bias dimension 'z'"):
        L.EinsumDense("ab,bc->ac", 4, bias_axes="z")(ml.keras.Input((5,)))


@pytest.mark.parametrize("eq,out,shape,fans", [("abc,cde->abde", (3, 16, 64), (3, 256),
                                                (256, 1024)),
                                               ("abcd,cde->abe", (3, 32), (3, 16, 64),
                                                (1024, 32))])
def test_default_kernel_init_uses_einsum_fans(eq, out, shape, fans):
    # Keras 3 gives VarianceScaling the kernel's input and output axes; the glorot
    # standard deviation is sqrt(2 / (fan_in + fan_out)) with those fans.
    layer = L.EinsumDense(eq, out)
    layer(np.zeros((1,) + shape, np.float32))
    k = layer.get_weights()[0]
    want = np.sqrt(2.0 / sum(fans))
    assert abs(k.std() - want) < 0.03 * want
