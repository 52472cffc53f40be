"""Callbacks read back from what they write: checkpoints named by their template, CSV
rows, TensorBoard histograms; learning-rate callbacks through the optimizer's variable;
BackupAndRestore resuming an interrupted fit to the uninterrupted result."""

import csv
import os

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib.callbacks.misc import get_learning_rate

RS = np.random.RandomState(1)
X = RS.randn(40, 4).astype(np.float32)
Y = (X @ RS.randn(4, 1)).astype(np.float32)


def model(lr=0.05, opt="sgd"):
    m = ml.Sequential([L.Input(shape=(4,)), L.Dense(6, activation="tanh"), L.Dense(1)])
    m.compile(ml.optimizers.get({"class_name": opt, "config": {"learning_rate": lr}}), "mse")
    return m


def test_model_checkpoint_templates_best_only_and_batch_freq(tmp_path):
    m = model()
    tpl = str(tmp_path / "ck-{epoch:02d}-{val_loss:.2f}.mylib")
    cb = ml.callbacks.ModelCheckpoint(tpl, monitor="val_loss")
    best = ml.callbacks.ModelCheckpoint(str(tmp_path / "best.weights"), monitor="loss",
                                        mode="max", save_best_only=True, save_weights_only=True)
    byb = ml.callbacks.ModelCheckpoint(str(tmp_path / "b-{epoch}-{batch}.weights"),
                                       save_freq=3, save_weights_only=True)
    h = m.fit(X, Y, epochs=3, batch_size=10, validation_split=0.25, verbose=0,
              callbacks=[cb, best, byb])
    names = sorted(os.listdir(tmp_path))
    want = [f"ck-{e + 1:02d}-{v:.2f}.mylib" for e, v in enumerate(h.history["val_loss"])]
    assert set(want) <= set(names)
    assert {"b-1-3.weights", "b-2-3.weights", "b-3-3.weights"} <= set(names)  # 3 steps/epoch
    # mode="max" on a falling loss: only the first epoch is an "improvement".
    assert h.history["loss"][0] == max(h.history["loss"])
    last = ml.models.load_model(tmp_path / want[-1])
    np.testing.assert_array_equal(last.predict(X, verbose=0), m.predict(X, verbose=0))
    first = model()
    first.load_weights(tmp_path / "best.weights")
    saved = ml.models.load_model(tmp_path / want[0])
    for a, b in zip(first.get_weights(), saved.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_early_stopping_restores_best_weights_when_epochs_run_out():
    m = model(lr=0.05)
    seen = []
    rec = ml.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append(m.get_weights()))
    # mode="max" on the falling loss: the best epoch is the first one.
    es = ml.callbacks.EarlyStopping(monitor="loss", mode="max", patience=10,
                                    restore_best_weights=True)
    m.fit(X, Y, epochs=3, batch_size=10, verbose=0, callbacks=[rec, es])
    assert es.stopped_epoch == 0 and es.best_epoch == 0
    for a, b in zip(m.get_weights(), seen[0]):
        np.testing.assert_array_equal(a, b)
    es2 = ml.callbacks.EarlyStopping(monitor="loss", mode="max", patience=1,
                                     start_from_epoch=1)
    h = model().fit(X, Y, epochs=6, batch_size=10, verbose=0, callbacks=[es2])
    assert len(h.history["loss"]) == 3 and es2.stopped_epoch == 2
    es3 = ml.callbacks.EarlyStopping(monitor="loss", mode="max", baseline=10.0, patience=2)
    h = model().fit(X, Y, epochs=6, batch_size=10, verbose=0, callbacks=[es3])
    assert len(h.history["loss"]) == 2  # never beats the baseline


def test_reduce_lr_on_plateau_and_scheduler_change_the_optimizer_variable():
    m = model(lr=0.1)
    # mode="max" on a falling loss never improves after epoch 0.
    r = ml.callbacks.ReduceLROnPlateau(monitor="loss", mode="max", factor=0.5, patience=1,
                                       cooldown=1, min_lr=0.02)
    h = m.fit(X, Y, epochs=7, batch_size=20, verbose=0, callbacks=[r])
    # Each epoch logs the rate it trained with; reductions after epochs 1, 2 and 3:
    # the epoch that ends a cooldown also counts towards the patience (Keras 3 logs
    # these rates on this model).
    np.testing.assert_allclose(h.history["learning_rate"],
                               [0.1, 0.1, 0.05, 0.025, 0.02, 0.02, 0.02], rtol=1e-6)
    assert get_learning_rate(m) == pytest.approx(0.02)

    m2 = model(lr=0.1, opt="adam")
    s = ml.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5 if epoch else lr)
    h = m2.fit(X, Y, epochs=3, batch_size=20, verbose=0, callbacks=[s])
    np.testing.assert_allclose(h.history["learning_rate"], [0.1, 0.05, 0.025], rtol=1e-6)
    with pytest.raises(ValueError, match="factor"):
        ml.callbacks.ReduceLROnPlateau(factor=1.5)


def test_terminate_on_nan_says_where(capsys):
    m = model()
    y = Y.copy()
    y[25] = np.nan  # in batch 2 (batch_size 10, no shuffle)
    t = ml.callbacks.TerminateOnNaN()
    h = m.fit(X, y, epochs=3, batch_size=10, shuffle=False, verbose=0, callbacks=[t])
    assert t.terminated_at == (0, 2) and len(h.history["loss"]) == 1
    assert "Epoch 1, batch 2: invalid loss" in capsys.readouterr().out


def test_csv_logger_writes_and_appends(tmp_path):
    path = tmp_path / "log.csv"
    m = model()
    h = m.fit(X, Y, epochs=2, batch_size=10, validation_split=0.25, verbose=0,
              callbacks=[ml.callbacks.CSVLogger(str(path))])
    rows = list(csv.DictReader(open(path)))
    assert list(rows[0]) == ["epoch", "loss", "val_loss"]
    assert [int(r["epoch"]) for r in rows] == [0, 1]
    np.testing.assert_allclose([float(r["loss"]) for r in rows], h.history["loss"], rtol=1e-6)
    m.fit(X, Y, epochs=1, batch_size=10, validation_split=0.25, verbose=0,
          callbacks=[ml.callbacks.CSVLogger(str(path), separator=";", append=True)])
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and lines[0] == "epoch,loss,val_loss" and ";" in lines[3]


class Crash(ml.callbacks.Callback):
    def __init__(self, epoch, batch):
        super().__init__()
        self.at = (epoch, batch)

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if (self.epoch, batch) == self.at:
            raise KeyboardInterrupt("simulated crash")


@pytest.mark.parametrize("save_freq", ["epoch", 2])
def test_backup_and_restore_resumes_to_the_uninterrupted_result(tmp_path, save_freq):
    w0 = model().get_weights()

    def run(callbacks):
        np.random.seed(123)  # orders the shuffles
        m = model(lr=0.05, opt="adam")
        m.set_weights(w0)
        m.fit(X, Y, epochs=4, batch_size=8, verbose=0, callbacks=callbacks)
        return m

    ref = run([]).get_weights()
    backup = str(tmp_path / "backup")
    with pytest.raises(KeyboardInterrupt):
        run([ml.callbacks.BackupAndRestore(backup, save_freq=save_freq), Crash(2, 3)])
    assert os.path.exists(os.path.join(backup, "training_state.mylib"))
    np.random.seed(999)  # the backup's RNG state wins over whatever the new process has
    resumed = model(lr=0.05, opt="adam")
    seen = []
    resumed.fit(X, Y, epochs=4, batch_size=8, verbose=0,
                callbacks=[ml.callbacks.BackupAndRestore(backup, save_freq=save_freq),
                           ml.callbacks.LambdaCallback(on_epoch_begin=lambda e, l: seen.append(e))])
    assert seen == [2, 3]
    for a, b in zip(ref, resumed.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert not os.path.exists(backup)  # delete_checkpoint


def test_tensorboard_histograms_learning_rate_and_batch_scalars(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    m = model()
    tb = ml.callbacks.TensorBoard(log_dir=str(tmp_path), histogram_freq=1, update_freq=2,
                                  write_graph=False)
    m.fit(X, Y, epochs=2, batch_size=10, verbose=0, callbacks=[tb])
    acc = EventAccumulator(str(tmp_path / "train"), size_guidance={"histograms": 0})
    acc.Reload()
    assert {"dense/kernel", "dense/bias", "dense_1/kernel"} <= set(acc.Tags()["histograms"])
    h = acc.Histograms("dense/kernel")
    assert [e.step for e in h] == [0, 1] and h[-1].histogram_value.num == 24
    lr = acc.Scalars("epoch_learning_rate")
    np.testing.assert_allclose([e.value for e in lr], [0.05, 0.05], rtol=1e-6)
    assert [e.step for e in acc.Scalars("batch_loss")] == [2, 4, 6, 8]
    with pytest.raises(ValueError, match="update_freq"):
        ml.callbacks.TensorBoard(log_dir=str(tmp_path), update_freq="sometimes")
