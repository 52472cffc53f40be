"""The serialization guide's registered custom function used as a layer's activation
(``@register_keras_serializable(package=..., name=...)``): the saved model refers to it
by its registered name and loads back predicting as the original, and as Keras 3."""

import os

import keras
import numpy as np

from mylib import keras as mk

from keras_compare import _same_weights


def _model(K, tag):
    @K.saving.register_keras_serializable(package=f"k3p_{tag}", name="custom_fn")
    def custom_fn(x):
        return x ** 2

    inputs = K.Input((4,))
    outputs = K.layers.Dense(2, activation=custom_fn)(K.layers.Dense(3)(inputs))
    return K.Model(inputs, outputs), custom_fn


def test_registered_activation_saves_by_its_registered_name_and_loads(tmp_path):
    km, _ = _model(keras, "keras")
    mm, fn = _model(mk, "mylib")
    _same_weights(mm, km)
    cfg = mm.layers[-1].get_config()
    assert cfg["activation"] == "k3p_mylib>custom_fn"
    assert mk.layers.Dense.from_config(cfg).activation is fn
    path = os.path.join(str(tmp_path), "custom_model.keras")
    mm.save(path)
    loaded = mk.models.load_model(path)
    x = np.random.RandomState(1).rand(3, 4).astype(np.float32)
    want = km.predict(x, verbose=0)
    np.testing.assert_allclose(mm.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)
