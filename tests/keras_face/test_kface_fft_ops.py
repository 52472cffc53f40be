"""keras.ops Fourier transforms, stft and adaptive pooling against Keras 3 (JAX
backend), on arrays and as graph ops (values and gradients against jax.grad)."""

import jax
import jax.numpy as jnp
import keras
import numpy as np
import pytest

import mylib as ml
from mylib import keras as mk

RNG = np.random.default_rng(0)
RE = RNG.standard_normal((2, 3, 8)).astype("float32")
IM = RNG.standard_normal((2, 3, 8)).astype("float32")
SIG = RNG.standard_normal((2, 100)).astype("float32")


def _close(a, b, tol=1e-5):
    a = a if isinstance(a, (tuple, list)) else [a]
    b = b if isinstance(b, (tuple, list)) else [b]
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


@pytest.mark.parametrize("name,args", [
    ("fft", ((RE, IM),)), ("fft2", ((RE, IM),)), ("ifft2", ((RE, IM),)),
    ("rfft", (RE, 10)), ("rfft", (RE,)), ("irfft", ((RE, IM), 14)), ("irfft", ((RE, IM),)),
])
def test_fourier_transforms_match_keras(name, args):
    _close(getattr(mk.ops, name)(*args), getattr(keras.ops, name)(*args))


@pytest.mark.parametrize("kw", [
    {"sequence_length": 16, "sequence_stride": 8, "fft_length": 32},
    {"sequence_length": 20, "sequence_stride": 5, "fft_length": 20, "window": "hamming",
     "center": False},
    {"sequence_length": 10, "sequence_stride": 3, "fft_length": 16, "window": None},
    {"sequence_length": 8, "sequence_stride": 4, "fft_length": 8,
     "window": np.linspace(0.1, 1.0, 8).astype("float32")},
])
def test_stft_matches_keras(kw):
    _close(mk.ops.stft(SIG, **kw), keras.ops.stft(SIG, **kw), tol=2e-5)


def test_stft_as_graph_op_and_its_gradient():
    x = ml.placeholder("float32", [2, 100])
    re, im = mk.ops.stft(x, 16, 8, 32)
    loss = ml.reduce_sum(re * re + im * im)
    (g,) = ml.gradients(loss, [x])

    def ref(s):
        r, i = keras.ops.stft(s, 16, 8, 32)
        return jnp.sum(r * r + i * i)

    with ml.Session() as s:
        lv, gv = s.run([loss, g], {x: SIG})
    np.testing.assert_allclose(lv, ref(SIG), rtol=1e-5)
    np.testing.assert_allclose(gv, jax.grad(ref)(SIG), rtol=1e-4, atol=1e-4)


def test_bad_arguments():
    with pytest.raises(ValueError, match="real and imaginary"):
        mk.ops.fft(RE)
    with pytest.raises(ValueError, match="fft_length"):
        mk.ops.stft(SIG, 16, 8, 8)
    with pytest.raises(TypeError, match="float32"):
        mk.ops.stft(SIG.astype("int32"), 8, 4, 8)


@pytest.mark.parametrize("df", ["channels_last", "channels_first"])
@pytest.mark.parametrize("op", ["adaptive_average_pool", "adaptive_max_pool"])
def test_adaptive_pool_ops_match_keras(df, op):
    x = RNG.standard_normal((2, 7, 9, 3)).astype("float32")
    _close(getattr(mk.ops, op)(x, (3, 4), data_format=df),
           getattr(keras.ops, op)(x, (3, 4), data_format=df))


@pytest.mark.parametrize("kw", [{}, {"strides": 2, "padding": "same"}, {"dilation_rate": 2}])
def test_separable_conv_matches_keras(kw):
    x = RNG.standard_normal((2, 8, 8, 3)).astype("float32")
    dk = RNG.standard_normal((3, 3, 3, 2)).astype("float32")
    pk = RNG.standard_normal((1, 1, 6, 4)).astype("float32")
    want = keras.ops.separable_conv(x, dk, pk, **kw)
    _close(mk.ops.separable_conv(x, dk, pk, **kw), want, tol=1e-4)
    t = ml.placeholder("float32", [2, 8, 8, 3])
    with ml.Session() as s:
        _close(s.run(mk.ops.separable_conv(t, dk, pk, **kw), {t: x}), want, tol=1e-4)
