"""A Model subclass overriding Keras 3's `compute_loss` hook (an extra penalty on the
outputs) is trained and evaluated with it, as Keras 3 does; against Keras on the same
weights."""

import keras
import numpy as np

import mylib as ml

rng = np.random.default_rng(3)
X = rng.standard_normal((24, 4)).astype("float32")
Y = rng.standard_normal((24, 1)).astype("float32")
SW = rng.uniform(0.5, 1.5, 24).astype("float32")


def _build(K, Model, Input):
    class Penalized(Model):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         training=True):
            loss = super().compute_loss(x, y, y_pred, sample_weight)
            # an activity penalty on the predictions, part of what is minimized
            return loss + 0.3 * K.ops.mean(K.ops.square(y_pred)) if K is keras else \
                loss + 0.3 * ml.reduce_mean(ml.square(y_pred))

    i = Input((4,))
    return Penalized(i, (keras.layers if K is keras else ml.layers).Dense(1)(i))


def test_overridden_compute_loss_is_used_by_fit_and_evaluate():
    km = _build(keras, keras.Model, keras.Input)
    mm = _build(ml, ml.Model, ml.layers.Input)
    mm.set_weights(km.get_weights())
    km.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
    mm.compile(ml.optimizers.SGD(0.1), "mse", metrics=["mae"])
    kw = dict(epochs=2, batch_size=8, shuffle=False, verbose=0, sample_weight=SW,
              validation_data=(X, Y))
    hk, hm = km.fit(X, Y, **kw).history, mm.fit(X, Y, **kw).history
    assert sorted(hm) == sorted(hk)
    for k in hk:
        np.testing.assert_allclose(hm[k], hk[k], rtol=1e-5, err_msg=k)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    ek = km.evaluate(X, Y, verbose=0, return_dict=True)
    em = mm.evaluate(X, Y, verbose=0, return_dict=True)
    np.testing.assert_allclose(em["loss"], ek["loss"], rtol=1e-5)
    p = mm.predict(X, verbose=0)
    # the penalty is there: the loss exceeds the plain mse by 0.3 * mean(p^2)
    np.testing.assert_allclose(em["loss"], np.mean((p - Y) ** 2) + 0.3 * np.mean(p ** 2),
                               rtol=1e-5)
