"""Keras 3 behaviours compared with Keras 3 itself (JAX backend) on the same weights:
the current rate of a scheduled optimizer, ReduceLROnPlateau's cooldown, class weights
and the validation_split hold-out, SparseCategoricalCrossentropy(ignore_class=...), an
overridden `compute_loss`."""

import keras
import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib import optimizers as mopt

RS = np.random.RandomState(11)


def test_learning_rate_of_a_scheduled_optimizer_is_its_current_rate():
    x = RS.randn(12, 3).astype(np.float32)
    y = RS.randn(12, 1).astype(np.float32)
    got = {}
    for lib in ("keras", "mylib"):
        k = lib == "keras"
        sched = (keras.optimizers.schedules if k else ml.keras.optimizers.schedules) \
            .ExponentialDecay(0.1, 2, 0.5)
        opt = (keras.optimizers if k else mopt).SGD(sched)
        before = float(np.asarray(opt.learning_rate))
        m = (keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)]) if k else
             ml.Sequential([L.Input(shape=(3,)), L.Dense(1)]))
        m.compile(opt, "mse")
        m.fit(x, y, batch_size=4, epochs=1, verbose=0)  # 3 steps
        got[lib] = (before, float(opt.learning_rate), float(np.asarray(opt.learning_rate)))
    np.testing.assert_allclose(got["mylib"], got["keras"], rtol=1e-6)


def test_learning_rate_callbacks_refuse_a_schedule():
    m = ml.Sequential([L.Input(shape=(3,)), L.Dense(1)])
    m.compile(mopt.SGD(ml.keras.optimizers.schedules.ExponentialDecay(0.1, 2, 0.5)), "mse")
    cb = ml.callbacks.LearningRateScheduler(lambda e, lr: lr)
    with pytest.raises(TypeError, match="schedule"):
        m.fit(RS.randn(4, 3).astype(np.float32), np.zeros((4, 1), np.float32), verbose=0,
              callbacks=[cb])


@pytest.mark.parametrize("patience,cooldown", [(1, 1), (2, 1), (1, 2), (0, 3)])
def test_reduce_lr_on_plateau_cooldown_matches_keras(patience, cooldown):
    losses = [3.0, 2.0, 1.0, 0.9, 0.85, 0.84, 0.83, 0.2, 0.19, 0.18, 0.17]
    got = {}
    for lib in ("keras", "mylib"):
        k = lib == "keras"
        m = (keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)]) if k else
             ml.Sequential([L.Input(shape=(1,)), L.Dense(1)]))
        m.compile((keras.optimizers if k else mopt).SGD(0.1), "mse")
        cb = (keras if k else ml).callbacks.ReduceLROnPlateau(
            monitor="loss", factor=0.5, patience=patience, cooldown=cooldown, min_delta=0.5)
        cb.set_model(m)
        cb.on_train_begin()
        lrs = []
        for e, loss in enumerate(losses):
            cb.on_epoch_end(e, {"loss": loss})
            lrs.append(float(np.asarray(m.optimizer.learning_rate)))
        got[lib] = lrs
    np.testing.assert_allclose(got["mylib"], got["keras"], rtol=1e-6)


def test_class_weight_does_not_weigh_the_validation_split_rows():
    rs = np.random.RandomState(0)
    x = rs.randn(12, 4).astype(np.float32)
    y = rs.randint(0, 2, (12, 1)).astype(np.float32)
    km = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, activation="sigmoid")])
    mm = ml.Sequential([L.Input(shape=(4,)), L.Dense(1, activation="sigmoid")])
    mm.set_weights(km.get_weights())
    hs = {}
    for lib, m in (("keras", km), ("mylib", mm)):
        m.compile((keras.optimizers if lib == "keras" else mopt).SGD(0.1),
                  "binary_crossentropy")
        hs[lib] = m.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0,
                        class_weight={0: 0.2, 1: 5.0}, validation_split=0.5).history
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(hs["mylib"][key], hs["keras"][key], rtol=1e-5)
    np.testing.assert_allclose(hs["mylib"]["val_loss"][-1],
                               km.evaluate(x[6:], y[6:], verbose=0), rtol=1e-5)


def test_class_and_sample_weights_with_validation_split():
    # Keras 3 refuses both weights at once; mylib takes them: the training rows get
    # their product, the held-out rows their sample weights alone.
    rs = np.random.RandomState(1)
    x = rs.randn(12, 4).astype(np.float32)
    y = rs.randint(0, 2, (12, 1)).astype(np.float32)
    sw = rs.uniform(0.5, 2.0, 12).astype(np.float32)
    mm = ml.Sequential([L.Input(shape=(4,)), L.Dense(1, activation="sigmoid")])
    mm.compile(mopt.SGD(0.0), "binary_crossentropy")
    cw = {0: 0.2, 1: 5.0}
    h = mm.fit(x, y, sample_weight=sw, epochs=1, batch_size=6, shuffle=False, verbose=0,
               class_weight=cw, validation_split=0.5).history
    p = mm.predict(x, verbose=0)[:, 0].astype(np.float64)
    t = y[:, 0]
    bce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    w = sw * np.where(t == 1, cw[1], cw[0])
    np.testing.assert_allclose(h["loss"][0], np.mean(bce[:6] * w[:6]), rtol=1e-5)
    np.testing.assert_allclose(h["val_loss"][0], np.mean(bce[6:] * sw[6:]), rtol=1e-5)



@pytest.mark.parametrize("from_logits", [True, False])
@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "none"])
def test_sparse_categorical_crossentropy_ignore_class(from_logits, reduction):
    rs = np.random.RandomState(3)
    y = np.array([[0, 1, -1], [2, -1, 1]], np.int32)  # [batch, T] labels, -1 ignored
    p = rs.randn(2, 3, 4).astype(np.float32)
    if not from_logits:
        p = np.exp(p) / np.exp(p).sum(-1, keepdims=True)
    sw = rs.uniform(0.5, 2.0, (2, 3)).astype(np.float32)  # per entry
    for weights in (None, sw):
        want = keras.losses.SparseCategoricalCrossentropy(
            from_logits=from_logits, ignore_class=-1, reduction=reduction)(y, p, weights)
        loss = ml.losses.SparseCategoricalCrossentropy(
            from_logits=from_logits, ignore_class=-1, reduction=reduction)
        with ml.Session() as sess:
            got = sess.run(loss(ml.constant(y), ml.constant(p),
                                None if weights is None else ml.constant(weights)))
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-6)
    # Every entry ignored: 0, as Keras (no division by zero).
    allout = np.full((2, 3), -1, np.int32)
    with ml.Session() as sess:
        got = sess.run(ml.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1)(
            ml.constant(allout), ml.constant(p)))
    np.testing.assert_allclose(got, 0.0)


def test_ignore_class_in_fit_and_evaluate():
    rs = np.random.RandomState(0)
    x = rs.randn(8, 4).astype(np.float32)
    y = np.array([0, 1, -1, 2, 1, -1, 0, 2], np.int32)
    km = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    mm = ml.Sequential([L.Input(shape=(4,)), L.Dense(3)])
    mm.set_weights(km.get_weights())
    got = {}
    for lib, m in (("keras", km), ("mylib", mm)):
        mod = keras if lib == "keras" else ml
        m.compile((keras.optimizers if lib == "keras" else mopt).SGD(0.1),
                  mod.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1))
        h = m.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history
        got[lib] = h["loss"] + [m.evaluate(x, y, verbose=0)]
    np.testing.assert_allclose(got["mylib"], got["keras"], rtol=1e-5)
