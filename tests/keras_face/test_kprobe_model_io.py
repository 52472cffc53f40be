"""`model.input` / `output` / `input_shape` / `output_shape` of functional and
Sequential models are those of the model's own inputs and outputs (as Keras 3), so
feature-extractor idioms (`keras.Model(base.input, base.get_layer(n).output)`) work.
Shapes compared against Keras 3 (JAX backend)."""

import numpy as np
import pytest

from mylib import keras
from mylib.keras import layers


def _functional(k):
    a = k.Input((8,), name="a")
    b = k.Input((2,), name="b")
    h = k.layers.Dense(4, name="h")(a)
    return k.Model([a, b], [k.layers.Dense(3, name="o")(h), b])


def test_functional_io_shapes_match_keras():
    k3 = pytest.importorskip("keras")
    ours, ref = _functional(keras), _functional(k3)
    assert ours.input_shape == ref.input_shape == [(None, 8), (None, 2)]
    assert ours.output_shape == ref.output_shape
    assert ours.input is not None and ours.input[0] is ours.inputs[0]
    assert ours.output[1] is ours.outputs[1]


def test_sequential_io_shapes_match_keras():
    k3 = pytest.importorskip("keras")
    make = lambda k: k.Sequential([k.Input((5,)), k.layers.Dense(7), k.layers.Dense(2)])
    ours, ref = make(keras), make(k3)
    assert ours.input_shape == ref.input_shape == (None, 5)
    assert ours.output_shape == ref.output_shape == (None, 2)
    with pytest.raises(AttributeError, match="never been called"):
        keras.Sequential([layers.Dense(3)]).output_shape


def test_feature_extractor_from_model_io():
    model = _functional(keras)
    extractor = keras.Model(inputs=model.input, outputs=model.get_layer("h").output)
    x = np.random.default_rng(0).normal(size=(3, 8)).astype("float32")
    w, bias = model.get_layer("h").get_weights()
    np.testing.assert_allclose(extractor.predict([x, np.zeros((3, 2), "float32")], verbose=0),
                               x @ w + bias, rtol=1e-5, atol=1e-5)
    # a model used as a layer keeps its own input / output
    inner = keras.Sequential([keras.Input((8,)), layers.Dense(4)])
    outer_in = keras.Input((8,))
    keras.Model(outer_in, inner(outer_in))
    assert inner.input is inner.inputs[0] and inner.output is inner.outputs[0]
    assert inner.output_shape == (None, 4)
