"""TensorBoard logs read back with TensorBoard's own event reader."""

import numpy as np

import mylib as ml
from mylib import layers as L


def test_tensorboard_scalars_in_train_and_validation_runs_and_graph(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    m = ml.Sequential([L.Input(shape=(4,)), L.Dense(8, activation="relu"),
                       L.Dense(3, activation="softmax")])
    m.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    rs = np.random.RandomState(0)
    X, y = rs.randn(40, 4).astype(np.float32), rs.randint(0, 3, 40)
    tb = ml.callbacks.TensorBoard(log_dir=str(tmp_path / "logs"))
    h = m.fit(X, y, epochs=3, batch_size=16, validation_split=0.25, callbacks=[tb], verbose=0)

    train = EventAccumulator(str(tmp_path / "logs" / "train"))
    train.Reload()
    val = EventAccumulator(str(tmp_path / "logs" / "validation"))
    val.Reload()
    assert set(train.Tags()["scalars"]) == {"epoch_loss", "epoch_accuracy",
                                            "epoch_learning_rate"}
    assert set(val.Tags()["scalars"]) == {"epoch_loss", "epoch_accuracy"}
    for acc, prefix in ((train, ""), (val, "val_")):
        for tag in ("loss", "accuracy"):
            ev = acc.Scalars("epoch_" + tag)
            assert [e.step for e in ev] == [0, 1, 2]
            np.testing.assert_allclose([e.value for e in ev], h.history[prefix + tag], rtol=1e-6)

    assert train.Tags()["graph"] and not val.Tags()["graph"]
    gd = train.Graph()
    nodes = {n.name: n for n in gd.node}
    assert "dense/kernel" in nodes and nodes["dense/kernel"].op == "VarHandleOp"
    matmuls = [n for n in gd.node if n.op == "MatMul"]
    assert matmuls and all(i.split(":")[0].lstrip("^") in nodes for i in matmuls[0].input)
    assert any(n.op == "ResourceApplyOptax" or "Apply" in n.op for n in gd.node)  # train step
    ph = nodes["input"]
    assert ph.op == "Placeholder" and ph.attr["dtype"].type == 1  # DT_FLOAT
    assert [d.size for d in ph.attr["shape"].shape.dim] == [-1, 4]
    # every input names an existing node
    for n in gd.node:
        for i in n.input:
            assert i.lstrip("^").split(":")[0] in nodes, (n.name, i)


def test_tensorboard_graph_written_once_across_fits(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    m = ml.Sequential([L.Input(shape=(2,)), L.Dense(1)])
    m.compile("sgd", "mse")
    tb = ml.callbacks.TensorBoard(log_dir=str(tmp_path), update_freq=1)
    X, y = np.ones((4, 2)), np.ones(4)
    m.fit(X, y, epochs=2, batch_size=2, callbacks=[tb], verbose=0)
    m.fit(X, y, epochs=1, batch_size=2, callbacks=[tb], verbose=0)
    acc = EventAccumulator(str(tmp_path / "train"))
    acc.Reload()
    assert "batch_loss" in acc.Tags()["scalars"]
    import glob
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto import event_pb2
    graphs = sum(1 for f in glob.glob(str(tmp_path / "train" / "*"))
                 for raw in RawEventFileLoader(f).Load()
                 if event_pb2.Event.FromString(raw).HasField("graph_def"))
    assert graphs == 1


def _fit_with_profile(log_dir, profile_batch, epochs=2):
    m = ml.Sequential([L.Input(shape=(3,)), L.Dense(4, activation="relu"), L.Dense(1)])
    m.compile("sgd", "mse")
    X = np.random.RandomState(0).randn(24, 3).astype(np.float32)
    y = X.sum(1)
    tb = ml.callbacks.TensorBoard(log_dir=str(log_dir), profile_batch=profile_batch)
    m.fit(X, y, epochs=epochs, batch_size=8, callbacks=[tb], verbose=0)  # 3 batches/epoch
    return tb


def _profile_runs(log_dir):
    return sorted(p for p in log_dir.glob("train/plugins/profile/*") if p.is_dir())


def test_tensorboard_profile_batch_range_writes_a_trace(tmp_path):
    import jax

    _fit_with_profile(tmp_path, (2, 4))  # crosses the epoch boundary (batches 1-3, 4-6)
    runs = _profile_runs(tmp_path)
    assert len(runs) == 1
    xplanes = list(runs[0].glob("*.xplane.pb"))
    assert xplanes and xplanes[0].stat().st_size > 0
    traces = list(runs[0].glob("*.trace.json.gz"))
    if traces:  # one step marker per profiled batch
        import gzip
        import json

        events = json.load(gzip.open(traces[0]))["traceEvents"]
        assert sum(1 for e in events if e.get("name") == "train" and e.get("ph") == "X") == 3
    # The profiler was stopped: a new trace can start.
    jax.profiler.start_trace(str(tmp_path / "other"))
    jax.profiler.stop_trace()


def test_tensorboard_profile_single_batch_and_range_past_the_end(tmp_path):
    _fit_with_profile(tmp_path / "one", 3, epochs=1)
    assert len(_profile_runs(tmp_path / "one")) == 1
    _fit_with_profile(tmp_path / "late", "5,100", epochs=2)  # stopped at train end
    assert len(_profile_runs(tmp_path / "late")) == 1
    _fit_with_profile(tmp_path / "never", 50, epochs=1)  # only 3 batches
    assert _profile_runs(tmp_path / "never") == []


def test_tensorboard_profile_batch_zero_writes_no_trace(tmp_path):
    tb = _fit_with_profile(tmp_path, 0)
    assert (tmp_path / "train").is_dir()
    assert not list(tmp_path.rglob("plugins/profile"))
    assert not tb._profiling
    _fit_with_profile(tmp_path / "b", (0, 0))
    assert not list((tmp_path / "b").rglob("plugins/profile"))


def test_tensorboard_profile_batch_bad_values():
    import pytest

    for bad in (-1, (5, 2), (-2, 3), (0, 4), (1, 2, 3), "a,b", 1.5, (1.0, 2.0), True):
        with pytest.raises(ValueError, match="profile_batch"):
            ml.callbacks.TensorBoard(log_dir="unused", profile_batch=bad)
