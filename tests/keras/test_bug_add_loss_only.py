"""Models trained by their layers' `add_loss` terms alone, compiled with no `loss` (Keras
3's "endpoint layer" pattern: the targets are a model input, `fit(x)` takes no `y`),
compared with Keras 3 on the same weights: fit losses, final weights, evaluate and
predict. Before, mylib refused `compile()` without a loss at the first step and `fit`
without `y`."""

import keras
import numpy as np
import pytest

import mylib as ml
from mylib import keras as mk
from tests.keras.keras_compare import _close, _same_weights

_rng = np.random.RandomState(0)
X = _rng.randn(32, 4).astype("float32")
T = (_rng.rand(32, 1) > 0.5).astype("float32")


def _endpoint_model(K):
    class LogisticEndpoint(K.layers.Layer):
        def __init__(self, name=None):
            super().__init__(name=name)
            self.loss_fn = K.losses.BinaryCrossentropy(from_logits=True)

        def call(self, targets, logits):
            self.add_loss(self.loss_fn(targets, logits))
            return K.ops.sigmoid(logits)

    i = K.Input((4,), name="inputs")
    t = K.Input((1,), name="targets")
    logits = K.layers.Dense(1)(K.layers.Dense(6, activation="tanh")(i))
    return K.Model({"inputs": i, "targets": t}, LogisticEndpoint(name="predictions")(t, logits))


def _autoencoder(K):
    class Penalty(K.layers.Layer):  # a KL-like term on the code
        def call(self, z):
            mean, logvar = z
            self.add_loss(-0.5 * K.ops.mean(K.ops.sum(
                1 + logvar - K.ops.square(mean) - K.ops.exp(logvar), axis=-1)))
            return mean

    class Reconstruction(K.layers.Layer):
        def call(self, x, x_hat):
            self.add_loss(K.ops.mean(K.ops.square(x - x_hat)))
            return x_hat

    i = K.Input((4,))
    h = K.layers.Dense(5, activation="relu")(i)
    z = Penalty()([K.layers.Dense(2)(h), K.layers.Dense(2)(h)])
    out = K.layers.Dense(4, kernel_regularizer=K.regularizers.l2(0.01))(z)
    return K.Model(i, Reconstruction()(i, out))


def _run(K, model, opt, data, **fit_kw):
    model.compile(optimizer=opt)
    h = model.fit(data, epochs=3, batch_size=8, shuffle=False, verbose=0, **fit_kw)
    return (h.history, model.get_weights(),
            model.evaluate(data, batch_size=8, verbose=0, return_dict=True),
            model.predict(data, verbose=0))


@pytest.mark.parametrize("case", ["endpoint", "autoencoder"])
def test_fit_x_alone_on_add_loss_terms_matches_keras(case):
    if case == "endpoint":
        build, data, kw = _endpoint_model, {"inputs": X, "targets": T}, {}
        opts = keras.optimizers.SGD(0.1), mk.optimizers.SGD(0.1)
    else:  # with (x_val,) validation data and a weight regularizer in the objective
        build, data, kw = _autoencoder, X, {"validation_data": (X[:8],)}
        opts = keras.optimizers.Adam(0.01), mk.optimizers.Adam(0.01)
    km, mm = build(keras), build(mk)
    _same_weights(mm, km)
    hk, wk, ek, pk = _run(keras, km, opts[0], data, **kw)
    hm, wm, em, pm = _run(mk, mm, opts[1], data, **kw)
    assert sorted(hm) == sorted(hk)
    for k in hk:
        _close(hm[k], hk[k], rtol=1e-4)
    for a, b in zip(wm, wk):
        _close(a, b, rtol=1e-4)
    _close(em["loss"], ek["loss"], rtol=1e-4)
    _close(pm, pk, rtol=1e-4)
    # The loss really trained the model (the test cannot pass on an idle step).
    assert hm["loss"][-1] < hm["loss"][0]


def test_no_loss_anywhere_is_a_clear_error():
    m = ml.Sequential([ml.layers.Input((4,)), ml.layers.Dense(1)])
    m.compile(optimizer="sgd")
    w = m.get_weights()
    with pytest.raises(ValueError, match="No loss to compute"):
        m.fit(X, verbose=0)
    for a, b in zip(m.get_weights(), w):
        np.testing.assert_array_equal(a, b)


def test_metrics_still_need_targets():
    m = ml.Sequential([ml.layers.Input((4,)), ml.layers.Dense(1)])
    m.compile(optimizer="sgd", metrics=["mae"])
    with pytest.raises(ValueError, match="`y` is required"):
        m.fit(X, verbose=0)
