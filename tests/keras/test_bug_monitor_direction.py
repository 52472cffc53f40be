"""`mode="auto"` of EarlyStopping / ModelCheckpoint / ReduceLROnPlateau takes the
direction of the monitored compiled metric, as Keras 3: precision, recall, F1, R2, IoU
(and a renamed accuracy) improve upwards. mylib read only the name ("acc" / "auc"), so
`EarlyStopping(monitor="val_precision")` stopped as precision rose and
`ModelCheckpoint(monitor="val_prec", save_best_only=True)` kept the worst epoch.
Compared with Keras 3 on the same weights: epochs run, files written, final weights."""

import glob
import os

import keras
import numpy as np
import pytest

from mylib import keras as mk
from tests.keras.keras_compare import _close, _same_weights

_rng = np.random.RandomState(1)
X = _rng.randn(64, 4).astype("float32")
Y = (X[:, :1] + 0.5 * _rng.randn(64, 1) > 0).astype("float32")
XV = _rng.randn(32, 4).astype("float32")
YV = (XV[:, :1] + 0.5 * _rng.randn(32, 1) > 0).astype("float32")


def _fit(K, metric, callbacks, weights=None):
    m = K.Sequential([K.Input((4,)), K.layers.Dense(4, activation="relu"),
                      K.layers.Dense(1, activation="sigmoid")])
    if weights is not None:
        m.set_weights(weights)
    m.compile(K.optimizers.SGD(0.3), "binary_crossentropy", metrics=[metric(K)])
    h = m.fit(X, Y, validation_data=(XV, YV), epochs=8, batch_size=16, shuffle=False,
              verbose=0, callbacks=callbacks(K))
    return m, h


def _both(metric, callbacks):
    km = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4, activation="relu"),
                           keras.layers.Dense(1, activation="sigmoid")])
    mm = mk.Sequential([mk.Input((4,)), mk.layers.Dense(4, activation="relu"),
                        mk.layers.Dense(1, activation="sigmoid")])
    _same_weights(mm, km, seed=0)
    w = km.get_weights()
    return _fit(keras, metric, callbacks, w), _fit(mk, metric, callbacks, w)


@pytest.mark.parametrize("monitor,metric", [
    ("val_precision", lambda K: K.metrics.Precision(name="precision")),
    ("val_f1_score", lambda K: K.metrics.F1Score(threshold=0.5, name="f1_score")),
    ("val_hits", lambda K: K.metrics.BinaryAccuracy(name="hits")),
])
def test_early_stopping_follows_the_metric_direction(monitor, metric):
    cbs = lambda K: [K.callbacks.EarlyStopping(monitor=monitor, patience=2,
                                               restore_best_weights=True)]
    (km, kh), (mm, mh) = _both(metric, cbs)
    assert mh.epoch == kh.epoch
    _close(mh.history[monitor], kh.history[monitor], rtol=1e-4)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        _close(a, b, rtol=1e-4)


def test_checkpoint_best_only_keeps_the_highest_precision(tmp_path):
    def cbs(K):
        d = tmp_path / K.__name__
        d.mkdir()
        return [K.callbacks.ModelCheckpoint(str(d / "m{epoch}.weights.h5"),
                                            monitor="val_prec", save_best_only=True,
                                            save_weights_only=True)]

    (_, kh), (_, mh) = _both(lambda K: K.metrics.Precision(name="prec"), cbs)
    files = {K: sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / K / "*")))
             for K in ("keras", "mylib.keras")}
    assert files["mylib.keras"] == files["keras"]
    # The run is one where precision rises: more than the first epoch is saved.
    assert len(files["keras"]) > 1
    _close(mh.history["val_prec"], kh.history["val_prec"], rtol=1e-4)


def test_early_stopping_counts_a_nan_first_monitored_epoch_as_the_best():
    # A diverging run (losses overflow to NaN): Keras 3 takes the first monitored
    # epoch as the best even when its value is NaN, then waits `patience` epochs;
    # mylib compared NaN with +inf, never improved, and stopped one epoch early.
    xs = (X * 4 + 2).astype("float32")
    ys = np.abs(xs[:, :1]) * 10

    def run(K, weights=None):
        m = K.Sequential([K.Input((4,)), K.layers.Dense(8, activation="relu"),
                          K.layers.Dense(1)])
        if weights is not None:
            m.set_weights(weights)
        m.compile(K.optimizers.SGD(0.3), "mse")
        es = K.callbacks.EarlyStopping(monitor="loss", patience=0, start_from_epoch=2,
                                       restore_best_weights=True)
        h = m.fit(xs, ys, epochs=6, batch_size=8, shuffle=False, verbose=0,
                  callbacks=[es])
        return m, h, es

    rs = np.random.RandomState(2)
    w = [(rs.randn(*s) * 0.5).astype("float32") for s in [(4, 8), (8,), (8, 1), (1,)]]
    km, kh, kes = run(keras, w)
    mm, mh, mes = run(mk, w)
    assert np.isnan(kh.history["loss"][-1])  # the run did diverge
    assert mh.epoch == kh.epoch
    assert mes.best_epoch == kes.best_epoch and mes.stopped_epoch == kes.stopped_epoch
    for a, b in zip(mm.get_weights(), km.get_weights()):  # restored: epoch 2's weights
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        _close(np.nan_to_num(a), np.nan_to_num(b), rtol=1e-4)
