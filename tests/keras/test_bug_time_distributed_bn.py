"""`TimeDistributed(BatchNormalization())` in training, against Keras 3 on the same
weights: Keras 3 calls the inner layer once per time step, so each step is normalized
by its own batch statistics and the moving statistics take one update per step in
time order. mylib pooled the statistics of all steps (TF-Keras 2's merged batch), and
its outputs, fit losses and moving statistics differed."""

import keras
import numpy as np
import pytest

from mylib import keras as mk
from tests.keras.keras_compare import _close, _same_weights

_rng = np.random.RandomState(0)
# Each time step has its own scale and offset, so pooled statistics differ.
XS = (_rng.randn(16, 3, 4) * np.arange(1, 4)[None, :, None] + 1).astype("float32")
Y = _rng.randn(16, 1).astype("float32")
XI = (_rng.randn(8, 3, 4, 4, 2) * 2 + 0.5).astype("float32")
IDS = np.array([[1, 2, 0], [3, 4, 5], [4, 0, 0], [2, 6, 0]] * 4, "int32")


def _fit_model(K):
    i = K.Input((3, 4))
    x = K.layers.TimeDistributed(K.layers.Dense(3))(i)
    x = K.layers.TimeDistributed(K.layers.BatchNormalization(momentum=0.8))(x)
    return K.Model(i, K.layers.Dense(1)(K.layers.Flatten()(x)))


def test_fit_losses_weights_and_moving_statistics_match_keras():
    km, mm = _fit_model(keras), _fit_model(mk)
    _same_weights(mm, km)
    out = []
    for K, m in ((keras, km), (mk, mm)):
        m.compile(K.optimizers.SGD(0.05), "mse")
        h = m.fit(XS, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        out.append((h.history["loss"], m.get_weights(), m.predict(XS, verbose=0)))
    (lk, wk, pk), (lm, wm, pm) = out
    _close(lm, lk, rtol=1e-4)
    for a, b in zip(wm, wk):  # moving_mean / moving_variance included
        _close(a, b, rtol=1e-4)
    _close(pm, pk, rtol=1e-4)


@pytest.mark.parametrize("axis", [-1, 1])
def test_images_per_step_statistics_match_keras(axis):
    def build(K):
        i = K.Input((3, 4, 4, 2))
        return K.Model(i, K.layers.TimeDistributed(
            K.layers.BatchNormalization(axis=axis, momentum=0.7))(i))

    km, mm = build(keras), build(mk)
    _same_weights(mm, km)
    want = np.asarray(km(XI, training=True))
    got = mm(XI, training=True)
    _close(got, want, rtol=1e-4, atol=1e-4)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        _close(a, b, rtol=1e-5)


def test_masked_steps_are_left_out_of_each_steps_statistics():
    def build(K):
        i = K.Input((3,), dtype="int32")
        x = K.layers.Embedding(10, 4, mask_zero=True)(i)
        return K.Model(i, K.layers.TimeDistributed(K.layers.BatchNormalization(
            momentum=0.6))(x))

    km, mm = build(keras), build(mk)
    _same_weights(mm, km)
    want = np.asarray(km(IDS, training=True))
    got = mm(IDS, training=True)
    _close(got[IDS != 0], want[IDS != 0], rtol=1e-4, atol=1e-5)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        _close(a, b, rtol=1e-5)
