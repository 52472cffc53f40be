"""Keras 3's newer activations (celu, glu, hard_shrink, hard_tanh, log_sigmoid,
soft_shrink, sparse_plus, sparse_sigmoid, squareplus, tanh_shrink, threshold,
sparsemax): values against Keras 3, gradients against finite differences; sparsemax
against a numpy projection onto the simplex."""

import keras
import numpy as np
import pytest

import mylib as ml
from mylib.layers import activations as A

X = (np.linspace(-3, 3, 48).reshape(4, 12) + 0.013).astype(np.float32)
NAMES = ["celu", "glu", "hard_shrink", "hard_tanh", "log_sigmoid", "soft_shrink",
         "sparse_plus", "sparse_sigmoid", "squareplus", "tanh_shrink"]


def _run(fn, x):
    with ml.Graph().as_default(), ml.Session() as s:
        return s.run(fn(ml.constant(x)))


@pytest.mark.parametrize("name", NAMES)
def test_values_match_keras_and_gradients_finite_differences(name):
    np.testing.assert_allclose(_run(A.get(name), X),
                               np.asarray(getattr(keras.activations, name)(X)),
                               rtol=1e-6, atol=1e-6)
    xv = X.astype(np.float64)
    with ml.Graph().as_default():
        x = ml.placeholder(ml.float64, X.shape)
        out = A.get(name)(x)
        y = ml.reduce_sum(out * np.cos(xv[:, :out.shape.as_list()[1]]))  # glu halves
        (g,) = ml.gradients(y, [x])
        with ml.Session() as s:
            gv = s.run(g, {x: xv})
            h = 1e-6
            for i in [(0, 0), (1, 5), (2, 7), (3, 11)]:
                d = np.zeros_like(xv)
                d[i] = h
                fd = (s.run(y, {x: xv + d}) - s.run(y, {x: xv - d})) / (2 * h)
                assert gv[i] == pytest.approx(fd, rel=1e-5, abs=1e-7), i


def test_threshold_and_a_layer_by_name():
    np.testing.assert_array_equal(_run(lambda t: A.threshold(t, 0.5, -1.0), X),
                                  np.asarray(keras.activations.threshold(X, 0.5, -1.0)))
    km = keras.Sequential([keras.Input((12,)), keras.layers.Dense(5, activation="celu")])
    mm = ml.Sequential([ml.layers.Input((12,)), ml.layers.Dense(5, activation="celu")])
    mm.set_weights(km.get_weights())
    np.testing.assert_allclose(mm.predict(X, verbose=0), km.predict(X, verbose=0),
                               rtol=1e-5, atol=1e-6)


def _sparsemax_np(z):
    """Martins and Astudillo (2016), Algorithm 1, row by row."""
    out = np.zeros_like(z)
    for i, row in enumerate(z):
        s = np.sort(row)[::-1]
        k = np.arange(1, len(row) + 1)
        cum = np.cumsum(s)
        kz = k[1 + k * s > cum].max()
        tau = (cum[kz - 1] - 1) / kz
        out[i] = np.maximum(row - tau, 0)
    return out


@pytest.mark.parametrize("axis", [-1, 0])
def test_sparsemax_is_the_simplex_projection(axis):
    """Against the paper's algorithm (Keras 3.15's JAX sparsemax sums the cumulative
    sums over the support instead of taking the last one, so its rows do not sum to
    1; it is not the reference here)."""
    got = _run(lambda t: A.sparsemax(t, axis=axis), X)
    want = _sparsemax_np(X if axis == -1 else X.T)
    want = want if axis == -1 else want.T
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.sum(axis=axis), 1.0, rtol=1e-5)
    assert (got == 0).any()
