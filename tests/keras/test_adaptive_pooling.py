"""Adaptive pooling layers against Keras 3 (JAX backend): values for sizes that do and
do not divide the axis, both data formats, gradients against finite differences."""

import keras
import numpy as np
import pytest

import mylib as ml
from mylib import keras as mk

CASES = [
    ("1D", (9, 3), 4, "channels_last"),
    ("1D", (3, 8), 8, "channels_first"),
    ("2D", (7, 10, 2), (3, 4), "channels_last"),
    ("2D", (2, 5, 5), 2, "channels_first"),
    ("3D", (5, 4, 6, 2), (2, 3, 4), "channels_last"),
]


@pytest.mark.parametrize("kind", ["Average", "Max"])
@pytest.mark.parametrize("rank,shape,size,df", CASES)
def test_matches_keras(kind, rank, shape, size, df):
    name = f"Adaptive{kind}Pooling{rank}"
    x = np.random.default_rng(0).standard_normal((2,) + shape).astype("float32")
    want = np.asarray(getattr(keras.layers, name)(size, data_format=df)(x))
    layer = getattr(mk.layers, name)(size, data_format=df)
    got = np.asarray(layer(x))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert layer.compute_output_shape((2,) + shape) == want.shape
    cfg = layer.get_config()
    assert getattr(keras.layers, name).from_config(cfg).output_size == layer.output_size


@pytest.mark.parametrize("kind", ["Average", "Max"])
def test_gradient_against_finite_differences(kind):
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((1, 5, 7, 2)).astype("float64")
    wv = rng.standard_normal((1, 3, 2, 2))
    x = ml.placeholder("float64", [1, 5, 7, 2])
    y = getattr(mk.layers, f"Adaptive{kind}Pooling2D")((3, 2), dtype="float64")(x)
    loss = ml.reduce_sum(y * wv)
    (g,) = ml.gradients(loss, [x])
    with ml.Session() as s:
        gv = s.run(g, {x: xv})
        num = np.zeros_like(xv)
        eps = 1e-6
        for idx in np.ndindex(xv.shape):
            d = np.zeros_like(xv)
            d[idx] = eps
            num[idx] = (s.run(loss, {x: xv + d}) - s.run(loss, {x: xv - d})) / (2 * eps)
    np.testing.assert_allclose(gv, num, rtol=1e-5, atol=1e-7)
