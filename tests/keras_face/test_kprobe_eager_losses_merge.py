"""Keras 3 idioms found missing by running keras-io-style programs: a loss object
called on arrays computes at once (a JAX array, as Keras 3 on JAX), and the functional
merge forms `keras.layers.concatenate` / `add` / ... exist. Compared against Keras 3
(JAX backend) and numpy."""

import numpy as np
import pytest

import mylib as ml
from mylib import keras


def _data():
    rng = np.random.default_rng(0)
    return (rng.integers(0, 4, size=(6,)), rng.normal(size=(6, 4)).astype("float32"),
            rng.uniform(0, 2, size=(6,)).astype("float32"))


@pytest.mark.parametrize("name,kwargs,sparse", [
    ("SparseCategoricalCrossentropy", {"from_logits": True}, True),
    ("CategoricalCrossentropy", {"from_logits": True}, False),
    ("MeanSquaredError", {}, False),
    ("MeanSquaredError", {"reduction": "none"}, False),
    ("BinaryCrossentropy", {"reduction": "sum"}, False),
])
def test_loss_object_on_arrays_matches_keras(name, kwargs, sparse):
    k3 = pytest.importorskip("keras")
    y, logits, w = _data()
    y_true = y if sparse else np.eye(4, dtype="float32")[y]
    y_pred = logits if kwargs.get("from_logits") or name == "MeanSquaredError" else \
        1 / (1 + np.exp(-logits))
    ours = getattr(keras.losses, name)(**kwargs)
    ref = getattr(k3.losses, name)(**kwargs)
    for sw in (None, w):
        got = ours(y_true, y_pred, sample_weight=sw)
        assert not isinstance(got, ml.Tensor)
        want = ref(y_true, y_pred, sample_weight=sw)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    if kwargs.get("reduction") != "none":
        assert float(ours(y_true, y_pred)) == pytest.approx(float(ref(y_true, y_pred)), rel=1e-5)


def test_loss_object_in_graph_still_builds_ops():
    y, logits, _ = _data()
    g = ml.Graph()
    with g.as_default():
        out = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, logits)
        assert isinstance(out, ml.Tensor)
    with ml.Session(graph=g) as s:
        value = s.run(out)
    z = logits - logits.max(1, keepdims=True)
    ref = np.mean(np.log(np.exp(z).sum(1)) - z[np.arange(6), y])
    assert value == pytest.approx(ref, rel=1e-5)


def test_functional_merge_forms_match_numpy():
    a_in, b_in = keras.Input(shape=(3,)), keras.Input(shape=(3,))
    outs = [keras.layers.concatenate([a_in, b_in]), keras.layers.concatenate([a_in, b_in], axis=0),
            keras.layers.add([a_in, b_in]), keras.layers.subtract([a_in, b_in]),
            keras.layers.multiply([a_in, b_in]), keras.layers.average([a_in, b_in]),
            keras.layers.maximum([a_in, b_in]), keras.layers.minimum([a_in, b_in]),
            keras.layers.dot([a_in, b_in], axes=1)]
    model = keras.Model([a_in, b_in], outs)
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 5, 3)).astype("float32")
    got = model.predict([a, b], verbose=0)
    want = [np.concatenate([a, b], -1), np.concatenate([a, b], 0), a + b, a - b, a * b,
            (a + b) / 2, np.maximum(a, b), np.minimum(a, b), (a * b).sum(1, keepdims=True)]
    for g_, w_ in zip(got, want):
        np.testing.assert_allclose(g_, w_, rtol=1e-5, atol=1e-6)
    assert "concatenate" in keras.layers.__all__ and "concatenate" in dir(keras.layers)
