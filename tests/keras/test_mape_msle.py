"""Mean absolute percentage error and mean squared logarithmic error (losses, metrics,
names in compile), against Keras 3."""

import keras
import numpy as np
import pytest

import mylib as ml

rng = np.random.default_rng(5)
X = rng.uniform(0.1, 2.0, size=(30, 3)).astype("float32")
Y = np.concatenate([rng.uniform(0.5, 3.0, size=(28, 2)), [[0.0, 1.0], [-0.5, 2.0]]]
                   ).astype("float32")  # a zero and a negative target: the guards matter


@pytest.mark.parametrize("name,cls", [("mape", "MeanAbsolutePercentageError"),
                                      ("msle", "MeanSquaredLogarithmicError")])
def test_losses_and_metrics_match_keras(name, cls):
    yp = rng.uniform(-0.5, 3.0, size=Y.shape).astype("float32")
    want = np.asarray(getattr(keras.losses, cls)()(Y, yp))
    with ml.Graph().as_default(), ml.Session() as s:
        got = s.run(getattr(ml.losses, cls)()(ml.constant(Y), ml.constant(yp)))
        per = s.run(ml.losses.get(name)(ml.constant(Y), ml.constant(yp)))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(per, np.asarray(keras.losses.get(name)(Y, yp)), rtol=1e-5)

    def build(K, Input):
        i = Input((3,))
        return (keras.Model if K is keras else ml.Model)(i, K.layers.Dense(2, activation="relu")(i))

    km, mm = build(keras, keras.Input), build(ml, ml.layers.Input)
    mm.set_weights(km.get_weights())
    km.compile(keras.optimizers.SGD(0.01), name, metrics=[name, getattr(keras.metrics, cls)()])
    mm.compile(ml.optimizers.SGD(0.01), name, metrics=[name, getattr(ml.metrics, cls)()])
    kw = dict(epochs=2, batch_size=8, shuffle=False, verbose=0)
    hk, hm = km.fit(X, Y, **kw).history, mm.fit(X, Y, **kw).history
    assert sorted(hk) == sorted(hm)
    for k in hk:
        np.testing.assert_allclose(hm[k], hk[k], rtol=1e-4, err_msg=k)
