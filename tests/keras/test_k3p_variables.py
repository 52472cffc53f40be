"""`Variable.path`, which Keras 3 programs read to pick weights by name (``"variance"
in v.path``): a functional model's weights have Keras 3's paths."""

import keras

from mylib import keras as mk


def test_functional_weight_paths_are_keras_paths():
    paths = {}
    for name, K in (("keras", keras), ("mylib", mk)):
        inp = K.Input((4,))
        x = K.layers.Dense(3, name="hidden")(inp)
        x = K.layers.BatchNormalization(name="batch_normalization")(x)
        m = K.Model(inp, K.layers.Dense(2, name="head")(x))
        paths[name] = [v.path for v in m.weights]
    assert paths["mylib"] == paths["keras"]
    assert "batch_normalization/moving_variance" in paths["mylib"]
