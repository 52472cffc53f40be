"""Keras programs that must run unchanged and compute the right numbers (checked
against numpy)."""

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L


def _linear(w, b):
    m = ml.Sequential([L.Input(shape=(w.shape[0],)), L.Dense(1)])
    m.set_weights([w.reshape(-1, 1).astype(np.float32), np.asarray([b], np.float32)])
    return m


def _np_mse(X, y, w, b):
    return float(np.mean((X @ w + b - y) ** 2))


# ------------------------------------------------------------ evaluate inside fit
@pytest.mark.parametrize("hook", ["on_epoch_end", "on_train_batch_end"])
def test_evaluate_in_callback_leaves_fit_logs_alone(hook):
    rs = np.random.RandomState(0)
    X = rs.randn(8, 2).astype(np.float32)
    y = (X @ [1.0, -1.0] + 0.5).astype(np.float32)
    Xv = rs.randn(5, 2).astype(np.float32) * 3
    yv = (rs.randn(5) * 4).astype(np.float32)
    w0, b0 = np.array([0.3, 0.2]), 0.1
    m = _linear(w0, b0)
    m.compile(optimizer=ml.optimizers.SGD(0.0), loss="mse", metrics=["mae"])
    seen = []

    class Eval(ml.callbacks.Callback):
        pass

    def run(self, *a, **k):
        seen.append(self.model.evaluate(Xv, yv, batch_size=2, verbose=0))
    setattr(Eval, hook, run)
    h = m.fit(X, y, batch_size=2, epochs=2, verbose=0, shuffle=False, callbacks=[Eval()])
    want = _np_mse(X, y, w0, b0)  # lr 0: the weights stay
    want_mae = float(np.mean(np.abs(X @ w0 + b0 - y)))
    np.testing.assert_allclose(h.history["loss"], [want, want], rtol=1e-5)
    np.testing.assert_allclose(h.history["mae"], [want_mae, want_mae], rtol=1e-5)
    want_v = _np_mse(Xv, yv, w0, b0)
    want_vmae = float(np.mean(np.abs(Xv @ w0 + b0 - yv)))
    assert seen
    for loss, mae in seen:
        np.testing.assert_allclose([loss, mae], [want_v, want_vmae], rtol=1e-5)
    # and evaluate afterwards, with fit's validation in between
    h = m.fit(X, y, batch_size=3, epochs=1, verbose=0, validation_data=(Xv, yv))
    np.testing.assert_allclose(h.history["loss"], [want], rtol=1e-5)
    np.testing.assert_allclose(h.history["val_loss"], [want_v], rtol=1e-5)
    np.testing.assert_allclose(m.evaluate(Xv, yv, verbose=0), [want_v, want_vmae], rtol=1e-5)


# ------------------------------------------------------------ a loss returning a scalar
class HalfMSE(ml.losses.Loss):
    def call(self, y_true, y_pred):
        return ml.reduce_mean(ml.square(y_true - y_pred)) * 0.5


def half_mse(y_true, y_pred):
    return ml.reduce_mean(ml.square(y_true - y_pred)) * 0.5


@pytest.mark.parametrize("strategy", [False, True], ids=["one_device", "mirrored"])
@pytest.mark.parametrize("loss", [HalfMSE, lambda: half_mse], ids=["Loss", "function"])
def test_scalar_custom_loss_one_sgd_step(loss, strategy):
    from mylib.distribute import MirroredStrategy

    rs = np.random.RandomState(1)
    X = rs.randn(8, 3).astype(np.float32)
    y = rs.randn(8, 1).astype(np.float32)
    w0, b0, lr = np.array([0.5, -0.2, 0.1]), 0.3, 0.1
    g = ml.Graph()
    with g.as_default():
        if strategy:
            s = MirroredStrategy()
            assert s.num_replicas_in_sync == 4
            with s.scope():
                m = _linear(w0, b0)
                m.compile(optimizer=ml.optimizers.SGD(lr), loss=loss())
        else:
            m = _linear(w0, b0)
            m.compile(optimizer=ml.optimizers.SGD(lr), loss=loss())
    h = m.fit(X, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    err = X @ w0 + b0 - y[:, 0]
    np.testing.assert_allclose(h.history["loss"], [0.5 * np.mean(err ** 2)], rtol=1e-5)
    gw, gb = X.T @ err / len(X), err.mean()  # d/dp of 0.5 * mean(err^2)
    w, b = m.get_weights()
    np.testing.assert_allclose(w[:, 0], w0 - lr * gw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, [b0 - lr * gb], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.evaluate(X, y, verbose=0),
                               0.5 * np.mean((X @ w[:, 0] + b - y[:, 0]) ** 2), rtol=1e-5)


# ------------------------------------------------------------ integer labels, custom loss
def class_id_loss(y_true, y_pred):
    return ml.losses.sparse_categorical_crossentropy(y_true, y_pred)


class ClassIdLoss(ml.losses.Loss):
    def call(self, y_true, y_pred):
        return ml.losses.sparse_categorical_crossentropy(y_true, y_pred)


@pytest.mark.parametrize("loss", [lambda: class_id_loss, ClassIdLoss], ids=["function", "Loss"])
def test_int_labels_n1_with_custom_loss_and_accuracy(loss):
    rs = np.random.RandomState(2)
    X = rs.randn(6, 4).astype(np.float32)
    y = rs.randint(0, 3, size=(6, 1)).astype(np.int64)
    m = ml.Sequential([L.Input(shape=(4,)), L.Dense(3, activation="softmax")])
    m.compile(optimizer="sgd", loss=loss(), metrics=["accuracy"])
    w, b = m.get_weights()
    z = X @ w + b
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    want_loss = float(np.mean(-np.log(p[np.arange(6), y[:, 0]])))
    want_acc = float(np.mean(p.argmax(1) == y[:, 0]))
    loss_v, acc = m.evaluate(X, y, batch_size=2, verbose=0)
    np.testing.assert_allclose([loss_v, acc], [want_loss, want_acc], rtol=1e-5)
    assert type(m._tracking["entries"][0][1]).__name__ == "SparseCategoricalAccuracy"
    h = m.fit(X, y, batch_size=3, epochs=2, verbose=0)
    assert np.isfinite(h.history["loss"]).all()


# ------------------------------------------------------------ a notebook cell run twice
def _cls_model():
    m = ml.Sequential([L.Input(shape=(5,)), L.Dense(8, activation="relu"),
                       L.Dense(3, activation="softmax")])
    m.compile(optimizer=ml.optimizers.SGD(0.2), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
    return m


def test_new_strategy_each_cell_then_plain_model():
    from mylib.distribute import MirroredStrategy

    rs = np.random.RandomState(3)
    X = rs.randn(64, 5).astype(np.float32)
    y = np.argmax(X[:, :3], 1).astype(np.int64)
    models = []
    for _ in range(2):  # the same cell, run twice: a new strategy each time
        s = MirroredStrategy()
        with s.scope():
            m = _cls_model()
        h = m.fit(X, y, batch_size=16, epochs=5, verbose=0, shuffle=False)
        assert h.history["loss"][-1] < h.history["loss"][0]
        models.append(m)
        with s.scope():  # the strategy's scope again: the same graph
            m.compile(optimizer=ml.optimizers.SGD(0.2),
                      loss="sparse_categorical_crossentropy")
        m.fit(X, y, batch_size=16, epochs=1, verbose=0)
    m = _cls_model()  # and a model with no strategy
    h = m.fit(X, y, batch_size=16, epochs=5, verbose=0, shuffle=False)
    assert h.history["loss"][-1] < h.history["loss"][0]
    # the earlier models still run
    for mm in models:
        assert np.isfinite(mm.evaluate(X, y, verbose=0))


def test_strategy_scope_on_an_empty_graph_uses_it():
    from mylib.distribute import MirroredStrategy

    g = ml.Graph()
    s = MirroredStrategy()
    with g.as_default(), s.scope():
        v = ml.Variable(np.ones(4, np.float32))
    assert v.graph is g
    with g.as_default(), s.scope():
        w = ml.Variable(np.zeros(4, np.float32))
    assert w.graph is g
