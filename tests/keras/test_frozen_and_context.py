"""`trainable = False` on a model or layer freezes its sublayers too: fit losses,
weights and BatchNormalization's moving statistics compared with Keras 3 on the same
weights."""

import keras
import numpy as np

import mylib as ml
from tests.keras.keras_compare import _close, _same_weights

_rng = np.random.RandomState(0)
X = (_rng.randn(8, 4) * 2 + 1).astype("float32")
Y = _rng.randn(8, 1).astype("float32")


def _frozen_transfer(L, Model, Input, Seq):
    base = Seq([Input((4,)), L.Dense(5, name="d0"), L.BatchNormalization(name="bn"),
                L.Dense(5, activation="relu", name="d1")], name="base")
    base.trainable = False
    i = Input((4,))
    return Model(i, L.Dense(1, name="head")(base(i))), base


def _both(build):
    km, kb = build(keras.layers, keras.Model, keras.Input, keras.Sequential)
    mm, mb = build(ml.layers, ml.Model, ml.layers.Input, ml.Sequential)
    _same_weights(mm, km)
    return km, kb, mm, mb


def _fit_both(km, mm, lr=0.01, epochs=2):
    km.compile(keras.optimizers.SGD(lr), "mse")
    mm.compile(ml.optimizers.SGD(lr), "mse")
    hk = km.fit(X, Y, epochs=epochs, batch_size=4, shuffle=False, verbose=0)
    hm = mm.fit(X, Y, epochs=epochs, batch_size=4, shuffle=False, verbose=0)
    _close(hm.history["loss"], hk.history["loss"], rtol=1e-4)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        _close(a, b, rtol=1e-4)


def _flags(model):
    return [l.trainable for l in model.layers]


def test_freezing_a_model_freezes_its_layers_and_batchnorm_infers_in_fit():
    km, kb, mm, mb = _both(_frozen_transfer)
    assert _flags(mb) == _flags(kb) == [False, False, False]
    assert mb.trainable_weights == [] and mb.layers[1].trainable_weights == []
    assert [tuple(w.shape) for w in mm.trainable_weights] == \
        [tuple(w.shape) for w in km.trainable_weights] == [(5, 1), (1,)]
    moving = mb.layers[1].get_weights()[2:]
    _fit_both(km, mm)
    # The moving statistics are those set before fit (Keras's, redrawn), unchanged.
    for a, b in zip(mb.layers[1].get_weights()[2:], moving):
        _close(a, b, rtol=0, atol=0)


def test_unfreezing_trains_every_layer_again():
    km, kb, mm, mb = _both(_frozen_transfer)
    kb.trainable = True
    mb.trainable = True
    assert _flags(mb) == _flags(kb) == [True, True, True]
    assert [tuple(w.shape) for w in mm.trainable_weights] == \
        [tuple(w.shape) for w in km.trainable_weights]
    moving = mb.layers[1].get_weights()[2]
    _fit_both(km, mm)
    assert not np.allclose(mb.layers[1].get_weights()[2], moving)


def test_parent_setting_overrides_a_sublayer_frozen_before():
    def build(L, Model, Input, Seq):
        base = Seq([Input((4,)), L.Dense(3), L.Dense(2)])
        base.layers[0].trainable = False
        base.trainable = True
        return base, base

    km, kb, mm, mb = _both(build)
    assert _flags(mb) == _flags(kb) == [True, True]
    assert len(mm.trainable_weights) == len(km.trainable_weights) == 4


def test_freezing_then_compiling_gives_the_head_only():
    km, kb, mm, mb = _both(_frozen_transfer)
    mm.compile(ml.optimizers.SGD(0.01), "mse")
    km.compile(keras.optimizers.SGD(0.01), "mse")
    assert [tuple(w.shape) for w in mm.trainable_weights] == \
        [tuple(w.shape) for w in km.trainable_weights] == [(5, 1), (1,)]
    assert len(mm.non_trainable_weights) == len(km.non_trainable_weights) == 8
