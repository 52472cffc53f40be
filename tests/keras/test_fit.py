"""compile / fit / evaluate semantics, checked against numpy re-implementations."""

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L


def linear_model(w, b, n_in=3):
    m = ml.Sequential([L.Input(shape=(n_in,)), L.Dense(1)])
    m.set_weights([np.asarray(w, np.float32).reshape(n_in, 1), np.asarray([b], np.float32)])
    return m


def numpy_sgd_mse(X, y, sw, w, b, lr, batch_size, epochs=1):
    """Keras semantics: batch loss = sum(l * sw) / batch_size; epoch loss = the
    batch-size-weighted mean of the batch losses (before each update)."""
    w, b = w.astype(np.float64).copy(), float(b)
    hist = []
    for _ in range(epochs):
        total = 0.0
        for lo in range(0, len(X), batch_size):
            xb, yb, sb = X[lo:lo + batch_size], y[lo:lo + batch_size], sw[lo:lo + batch_size]
            n = len(xb)
            err = xb @ w + b - yb
            total += np.sum(err ** 2 * sb)
            g = 2.0 * err * sb / n
            w -= lr * (xb.T @ g)
            b -= lr * g.sum()
        hist.append(total / len(X))
    return hist, w, b


@pytest.mark.parametrize("batch_size", [4, 10, 3])
def test_sgd_fit_exact_numbers_with_short_last_batch(batch_size):
    rs = np.random.RandomState(0)
    X = rs.randn(10, 3).astype(np.float32)
    y = (X @ [1.0, -2.0, 0.5] + 0.3 + 0.1 * rs.randn(10)).astype(np.float32)
    sw = rs.uniform(0.5, 2.0, 10).astype(np.float32)
    w0, b0 = np.array([0.1, 0.2, -0.1]), 0.05
    m = linear_model(w0, b0)
    m.compile(ml.optimizers.SGD(learning_rate=0.05), "mse")
    h = m.fit(X, y, batch_size=batch_size, epochs=2, shuffle=False, sample_weight=sw, verbose=0)
    ref_hist, w, b = numpy_sgd_mse(X, y, sw, w0, b0, 0.05, batch_size, epochs=2)
    np.testing.assert_allclose(h.history["loss"], ref_hist, rtol=1e-5)
    kw, kb = m.get_weights()
    np.testing.assert_allclose(kw[:, 0], w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kb[0], b, rtol=1e-5, atol=1e-6)
    assert list(h.history) == ["loss"] and h.epoch == [0, 1]


def test_validation_split_takes_last_rows_before_shuffling():
    rs = np.random.RandomState(1)
    X = rs.randn(20, 3).astype(np.float32)
    y = rs.randn(20).astype(np.float32)
    w0 = np.array([0.3, -0.1, 0.2])
    m = linear_model(w0, 0.0)
    m.compile(ml.optimizers.SGD(learning_rate=0.1), "mse")
    h = m.fit(X, y, batch_size=4, epochs=1, validation_split=0.25, shuffle=False, verbose=0)
    # Training saw only the first 15 rows (exactly numpy SGD on them) ...
    ref_hist, w, b = numpy_sgd_mse(X[:15], y[:15], np.ones(15), w0, 0.0, 0.1, 4)
    np.testing.assert_allclose(h.history["loss"], ref_hist, rtol=1e-5)
    kw, kb = m.get_weights()
    np.testing.assert_allclose(kw[:, 0], w, rtol=1e-5, atol=1e-6)
    # ... and val_loss is the loss on the last 5 rows with the final weights.
    val = np.mean((X[15:] @ kw[:, 0] + kb[0] - y[15:]) ** 2)
    np.testing.assert_allclose(h.history["val_loss"], [val], rtol=1e-5)
    # Shuffling only permutes the training part: val_loss is still on the last rows.
    m2 = linear_model(w0, 0.0)
    m2.compile(ml.optimizers.SGD(learning_rate=0.1), "mse")
    h2 = m2.fit(X, y, batch_size=4, epochs=1, validation_split=0.25, shuffle=True, verbose=0)
    kw2, kb2 = m2.get_weights()
    val2 = np.mean((X[15:] @ kw2[:, 0] + kb2[0] - y[15:]) ** 2)
    np.testing.assert_allclose(h2.history["val_loss"], [val2], rtol=1e-5)


def test_targets_of_shape_n_align_with_outputs_n_by_1():
    X = np.arange(12, dtype=np.float32).reshape(6, 2) / 10
    y = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    m = linear_model([1.0, 0.5], 0.5, n_in=2)
    m.compile("sgd", "mse")
    p = X @ [1.0, 0.5] + 0.5
    aligned = np.mean((p - y) ** 2)
    broadcast = np.mean((p[:, None] - y[None, :]) ** 2)
    assert not np.isclose(aligned, broadcast)
    np.testing.assert_allclose(m.evaluate(X, y, batch_size=4, verbose=0), aligned, rtol=1e-6)
    np.testing.assert_allclose(m.evaluate(X, y[:, None], verbose=0), aligned, rtol=1e-6)


def test_evaluate_short_last_batch_and_sample_weights():
    rs = np.random.RandomState(2)
    X = rs.randn(7, 2).astype(np.float32)
    y = rs.randn(7).astype(np.float32)
    sw = np.array([1, 2, 0, 1, 3, 1, 0.5], np.float32)
    m = linear_model([0.5, 0.25], -0.1, n_in=2)
    m.compile("sgd", "mse", metrics=["mae"], weighted_metrics=["mae"])
    err = X @ [0.5, 0.25] - 0.1 - y
    logs = m.evaluate(X, y, batch_size=3, sample_weight=sw, verbose=0, return_dict=True)
    assert list(logs) == ["loss", "mae", "weighted_mae"]
    np.testing.assert_allclose(logs["loss"], np.sum(err ** 2 * sw) / 7, rtol=1e-6)
    np.testing.assert_allclose(logs["mae"], np.mean(np.abs(err)), rtol=1e-6)
    np.testing.assert_allclose(logs["weighted_mae"], np.sum(np.abs(err) * sw) / sw.sum(),
                               rtol=1e-6)
    loss, mae, _ = m.evaluate(X, y, batch_size=2, verbose=0)
    np.testing.assert_allclose([loss, mae], [np.mean(err ** 2), np.mean(np.abs(err))], rtol=1e-6)


def _acc_model(units, activation):
    m = ml.Sequential([L.Input(shape=(4,)), L.Dense(units, activation=activation)])
    return m


@pytest.mark.parametrize("kind", ["sparse", "categorical", "binary"])
def test_accuracy_resolves_from_shapes(kind):
    rs = np.random.RandomState(3)
    X = rs.randn(9, 4).astype(np.float32)
    if kind == "binary":
        m = _acc_model(1, "sigmoid")
        y = (rs.rand(9) > 0.5).astype(np.float32)
        loss = "binary_crossentropy"
    else:
        m = _acc_model(3, "softmax")
        y = rs.randint(0, 3, 9)
        loss = "sparse_categorical_crossentropy"
        if kind == "categorical":
            y = np.eye(3, dtype=np.float32)[y]
            loss = "categorical_crossentropy"
    m.compile("sgd", loss, metrics=["accuracy"])
    logs = m.evaluate(X, y, batch_size=4, verbose=0, return_dict=True)
    p = m.predict(X)
    if kind == "binary":
        ref = np.mean((p[:, 0] > 0.5) == (y > 0.5))
        want = "BinaryAccuracy"
    elif kind == "sparse":
        ref = np.mean(p.argmax(1) == y)
        want = "SparseCategoricalAccuracy"
    else:
        ref = np.mean(p.argmax(1) == y.argmax(1))
        want = "CategoricalAccuracy"
    assert type(m._tracking["entries"][0][1]).__name__ == want
    np.testing.assert_allclose(logs["accuracy"], ref, rtol=1e-6)
    # loss check (the categorical family): -log p[true]
    if kind != "binary":
        yi = y if kind == "sparse" else y.argmax(1)
        np.testing.assert_allclose(logs["loss"], -np.mean(np.log(p[np.arange(9), yi])),
                                   rtol=1e-5)


def test_frozen_layer_is_not_updated_by_fit():
    m = ml.Sequential([L.Input(shape=(3,)), L.Dense(4, name="frozen"), L.Dense(1, name="head")])
    m.get_layer("frozen").trainable = False
    before = m.get_weights()
    m.compile(ml.optimizers.SGD(0.1), "mse")
    m.fit(np.ones((8, 3)), np.ones(8), epochs=2, batch_size=4, verbose=0)
    after = m.get_weights()
    np.testing.assert_array_equal(after[0], before[0])
    np.testing.assert_array_equal(after[1], before[1])
    assert not np.allclose(after[2], before[2])
    assert len(m.trainable_weights) == 2 and len(m.non_trainable_weights) == 2


def test_length_and_shape_mismatches_fail_before_training():
    m = linear_model([1, 1, 1], 0)
    m.compile(ml.optimizers.SGD(0.1), "mse")
    before = m.get_weights()
    with pytest.raises(ValueError, match=r"cardinality.*x\[input\] sizes: 10.*y\[dense\] sizes: 9"):
        m.fit(np.ones((10, 3)), np.ones(9), verbose=0)
    with pytest.raises(ValueError, match=r"expects data of shape \(None, 3\).*\(10, 2\)"):
        m.fit(np.ones((10, 2)), np.ones(10), verbose=0)
    with pytest.raises(ValueError, match=r"Target 0.*\(10, 2\).*incompatible.*\(None, 1\)"):
        m.fit(np.ones((10, 3)), np.ones((10, 2)), verbose=0)
    with pytest.raises(ValueError, match="sample_weight"):
        m.fit(np.ones((10, 3)), np.ones(10), sample_weight=np.ones(9), verbose=0)
    for a, b in zip(m.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(RuntimeError, match="compile"):
        linear_model([1, 1, 1], 0).fit(np.ones((2, 3)), np.ones(2), verbose=0)


def test_multi_output_losses_weights_and_logs():
    x = L.Input(shape=(2,))
    a = L.Dense(1, name="a", kernel_initializer="ones")(x)
    b = L.Dense(2, name="b", kernel_initializer="ones", activation="softmax")(x)
    m = ml.Model(x, [a, b])
    m.compile(ml.optimizers.SGD(0.0), loss={"a": "mse", "b": "sparse_categorical_crossentropy"},
              loss_weights=[0.5, 2.0], metrics={"b": ["accuracy"]})
    X = np.array([[1.0, 2.0], [0.5, -1.0], [0.0, 0.0]], np.float32)
    ya = np.array([1.0, 0.0, 2.0], np.float32)
    yb = np.array([0, 1, 1])
    h = m.fit(X, [ya, yb], batch_size=2, epochs=1, shuffle=False, verbose=0)
    assert list(h.history) == ["loss", "a_loss", "b_loss", "b_accuracy"]
    la = np.mean((X.sum(1) - ya) ** 2)
    lb = np.log(2.0)  # equal logits: uniform softmax
    np.testing.assert_allclose(h.history["a_loss"], [la], rtol=1e-6)
    np.testing.assert_allclose(h.history["b_loss"], [lb], rtol=1e-6)
    np.testing.assert_allclose(h.history["loss"], [0.5 * la + 2.0 * lb], rtol=1e-6)


def test_callbacks_hooks_and_stop_training():
    events = []

    class Rec(ml.callbacks.Callback):
        def on_train_begin(self, logs=None): events.append("train_begin")
        def on_epoch_begin(self, e, logs=None): events.append(f"epoch_begin{e}")
        def on_train_batch_end(self, b, logs=None):
            events.append(f"batch{b}:{float(logs['loss']) > 0}")
        def on_test_begin(self, logs=None): events.append("test_begin")
        def on_epoch_end(self, e, logs=None):
            events.append(f"epoch_end{e}:{sorted(logs)}")
            if e == 1:
                self.model.stop_training = True
        def on_train_end(self, logs=None): events.append("train_end")

    m = linear_model([1, 1, 1], 0)
    m.compile("sgd", "mse")
    X, y = np.random.RandomState(0).randn(6, 3), np.ones(6)
    h = m.fit(X, y, batch_size=4, epochs=5, callbacks=[Rec()], validation_data=(X, y), verbose=0)
    assert events == ["train_begin", "epoch_begin0", "batch0:True", "batch1:True", "test_begin",
                      "epoch_end0:['loss', 'val_loss']", "epoch_begin1", "batch0:True",
                      "batch1:True", "test_begin", "epoch_end1:['loss', 'val_loss']",
                      "train_end"]
    assert h.epoch == [0, 1] and m.history is h


def test_early_stopping_restores_best_weights():
    m = linear_model([1, 1, 1], 0)
    m.compile(ml.optimizers.SGD(0.5), "mse")  # diverges: val_loss grows every epoch
    X = np.random.RandomState(0).randn(16, 3) * 3
    y = np.zeros(16)
    es = ml.callbacks.EarlyStopping(monitor="loss", patience=1, restore_best_weights=True)
    h = m.fit(X, y, epochs=10, batch_size=16, callbacks=[es], shuffle=False, verbose=0)
    losses = h.history["loss"]
    assert len(losses) < 10 and es.stopped_epoch == len(losses) - 1
    best = int(np.argmin(losses))
    # the restored weights are those in effect when the best epoch ended
    w = m.get_weights()
    np.testing.assert_allclose(m.evaluate(X, y, verbose=0, batch_size=16),
                               np.mean((X @ w[0][:, 0] + w[1][0]) ** 2), rtol=1e-5)
    assert best == 0


def test_fit_verbose_modes(capsys):
    m = linear_model([1, 1, 1], 0)
    m.compile("sgd", "mse")
    X, y = np.ones((5, 3)), np.ones(5)
    m.fit(X, y, epochs=2, verbose=2, batch_size=2)
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "Epoch 2/2" in out and "loss:" in out
    m.fit(X, y, epochs=1, verbose=1, batch_size=2)
    out = capsys.readouterr()
    assert "Epoch 1/1" in out.out + out.err and "3/3" in out.out + out.err
    m.fit(X, y, epochs=1, verbose=0)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_adam_fit_learns_digits_fast():
    from sklearn.datasets import load_digits
    d = load_digits()
    X = (d.data / 16).astype(np.float32)
    ml.set_random_seed(0)
    m = ml.Sequential([L.Input(shape=(64,)), L.Dense(32, activation="relu"), L.Dropout(0.1),
                       L.Dense(10)])
    m.compile(ml.optimizers.Adam(0.01),
              ml.losses.SparseCategoricalCrossentropy(from_logits=True), ["accuracy"])
    h = m.fit(X, d.target, epochs=5, batch_size=64, validation_split=0.2, verbose=0)
    assert h.history["accuracy"][-1] > 0.9 and h.history["val_accuracy"][-1] > 0.85


def test_batch_logs_stay_on_device_and_epoch_logs_are_floats():
    import jax

    seen = {}

    class Peek(ml.callbacks.Callback):
        def on_train_batch_end(self, b, logs=None):
            seen["batch"] = logs
        def on_epoch_end(self, e, logs=None):
            seen["epoch"] = logs

    m = linear_model([1, 1, 1], 0)
    m.compile("sgd", "mse", metrics=["mae"])
    m.fit(np.ones((5, 3)), np.ones(5), batch_size=2, callbacks=[Peek()], verbose=0)
    # Batch logs are device arrays (reading one is what would wait for the step).
    assert all(isinstance(v, jax.Array) for v in seen["batch"].values())
    assert all(type(v) is float for v in seen["epoch"].values())


def test_subclassed_and_sequential_train_identically():
    class Net(ml.Model):
        def __init__(self):
            super().__init__()
            self.h = L.Dense(4, activation="tanh")
            self.o = L.Dense(1)

        def call(self, x):
            return self.o(self.h(x))

    rs = np.random.RandomState(5)
    X, y = rs.randn(13, 3).astype(np.float32), rs.randn(13).astype(np.float32)
    seq = ml.Sequential([L.Input(shape=(3,)), L.Dense(4, activation="tanh"), L.Dense(1)])
    sub = Net()
    sub.predict(X[:2])
    sub.set_weights(seq.get_weights())
    hs = []
    for m in (seq, sub):
        m.compile(ml.optimizers.Adam(0.05), "mse")
        hs.append(m.fit(X, y, batch_size=5, epochs=3, shuffle=False, verbose=0).history["loss"])
    np.testing.assert_allclose(hs[0], hs[1], rtol=1e-6)
    np.testing.assert_allclose(seq.predict(X), sub.predict(X), rtol=1e-5, atol=1e-6)
