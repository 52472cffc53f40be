"""The Keras `TensorBoard` callback writes through mylib's `FileWriter`: a process
killed with -9 right after an epoch ends keeps every event of that epoch and the ones
before it (each epoch's end flushes and fsyncs), and the logs are what TensorBoard
reads from Keras: runs ``train`` and ``validation``, ``epoch_*`` scalars, the graph."""

import glob
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mylib as ml
from mylib import errors
from tensorboard.backend.event_processing import event_accumulator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Kills itself (SIGKILL: no atexit, no thread finishing its queue) right after the
# TensorBoard callback's on_epoch_end of epoch `kill_at`; batch scalars every batch.
_CHILD = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from mylib import keras

    logdir, kill_at = sys.argv[1], int(sys.argv[2])
    rng = np.random.RandomState(0)
    x = rng.rand(64, 5).astype("float32")
    y = (x.sum(1) > 2.5).astype("int32")
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])

    class Kill(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    tb = keras.callbacks.TensorBoard(logdir, histogram_freq=1, update_freq="batch")
    model.fit(x, y, batch_size=16, epochs=kill_at + 5, validation_split=0.25,
              callbacks=[tb, Kill()], verbose=0)
""")


def _events(path):
    out = []
    try:
        for ev in ml.train.summary_iterator(path):
            out.append(ev)
    except errors.DataLossError:  # a record cut by the kill can only come last
        pass
    return out


@pytest.mark.parametrize("kill_at", [0, 2])
def test_events_of_finished_epochs_survive_kill_9(tmp_path, kill_at):
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path), str(kill_at)],
                          capture_output=True, timeout=180,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-3000:]
    epochs = list(range(kill_at + 1))
    scalars = {}
    graphs = 0
    for run in ("train", "validation"):
        (path,) = glob.glob(str(tmp_path / run / "events.out.tfevents.*"))
        for ev in _events(path):
            graphs += bool(ev.graph_def) and run == "train"
            for v in ev.summary.value:
                scalars.setdefault((run, v.tag), []).append(ev.step)
    assert graphs == 1
    for run, tag in [("train", "epoch_loss"), ("train", "epoch_accuracy"),
                     ("train", "epoch_learning_rate"), ("validation", "epoch_loss"),
                     ("validation", "epoch_accuracy")]:
        assert scalars[(run, tag)] == epochs, (run, tag)
    # Batch scalars (3 training batches an epoch) and weight histograms, all flushed.
    assert scalars[("train", "batch_loss")] == list(range(1, 3 * (kill_at + 1) + 1))
    assert scalars[("train", "dense/kernel")] == epochs

    # TensorBoard's own reader: the same runs, tags and graph.
    for run in ("train", "validation"):
        acc = event_accumulator.EventAccumulator(str(tmp_path / run))
        acc.Reload()
        tags = acc.Tags()
        assert {"epoch_loss", "epoch_accuracy"} <= set(tags["scalars"])
        assert [e.step for e in acc.Scalars("epoch_loss")] == epochs
        if run == "train":
            assert tags["graph"] and "dense/kernel" in tags["histograms"]
            names = {n.name for n in acc.Graph().node}
            assert any(n.startswith("dense") for n in names)


def test_callback_histograms_are_tensorflow_buckets(tmp_path):
    from mylib.summary.summary_ops import histogram_proto

    from tests.core.test_sum_histograms import _tf_histogram

    model = ml.keras.Sequential([ml.keras.Input((3,)), ml.keras.layers.Dense(4)])
    model.compile("sgd", "mse")
    x = np.random.RandomState(0).rand(8, 3).astype("float32")
    model.fit(x, np.tile(x[:, :1], (1, 4)), epochs=1, verbose=0,
              callbacks=[ml.keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=1)])
    acc = event_accumulator.EventAccumulator(str(tmp_path / "train"),
                                             size_guidance={"histograms": 0})
    acc.Reload()
    h = acc.Histograms("dense/kernel")[0].histogram_value
    kernel = model.layers[0].get_weights()[0]
    want = _tf_histogram(kernel.reshape(-1))
    assert list(h.bucket) == want[6] and list(h.bucket_limit) == want[5]
    assert histogram_proto(kernel).num == 12
    with pytest.raises(errors.InvalidArgumentError, match="Nan in histogram"):
        histogram_proto(np.array([1.0, np.nan]))


def test_epoch_end_returns_with_every_event_in_the_file(tmp_path):
    # Many scalars in one epoch's logs: the writer's queue is full when the epoch's
    # flush starts; on return they must all be in the file already (tensorboardX's
    # flush wrote only what its thread had taken from the queue).
    model = ml.keras.Sequential([ml.keras.Input((3,)), ml.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    tb = ml.keras.callbacks.TensorBoard(str(tmp_path), write_graph=False)
    tb.set_model(model)
    tb.on_train_begin()
    logs = {f"metric_{i}": float(i) for i in range(300)}
    for epoch in range(3):
        tb.on_epoch_end(epoch, logs)
        (path,) = glob.glob(str(tmp_path / "train" / "events.out.tfevents.*"))
        tags = [(e.step, v.tag) for e in _events(path) for v in e.summary.value]
        assert tags[-300:] == [(epoch, f"epoch_metric_{i}") for i in range(300)]
        assert len(tags) == 300 * (epoch + 1)
    tb.on_train_end()


def test_nan_weights_skip_their_histogram_and_training_goes_on(tmp_path):
    model = ml.keras.Sequential([ml.keras.Input((3,)), ml.keras.layers.Dense(2)])
    model.compile("sgd", "mse")
    kernel, bias = model.get_weights()
    kernel[0, 0] = np.nan
    model.set_weights([kernel, bias])
    tb = ml.keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=1)
    x = np.ones((4, 3), np.float32)
    with pytest.warns(UserWarning, match="'dense/kernel' holds NaN"):
        model.fit(x, np.zeros((4, 2), np.float32), epochs=2, verbose=0, callbacks=[tb])
    acc = event_accumulator.EventAccumulator(str(tmp_path / "train"))
    acc.Reload()
    assert "dense/kernel" not in acc.Tags()["histograms"]
    assert [e.step for e in acc.Scalars("epoch_loss")] == [0, 1]
