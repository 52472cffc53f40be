"""MultiWorkerMirroredStrategy: cluster resolution, 2 processes on loopback equal one
process, and a killed worker reported by the launcher (bounded in time)."""

import io
import json
import pathlib
import sys

import numpy as np
import pytest

import mylib as ml
from mylib.distribute import ClusterSpec, SimpleClusterResolver, TFConfigClusterResolver
from mylib.distribute.launch import launch

HERE = pathlib.Path(__file__).resolve().parent


def test_tf_config_resolver(monkeypatch):
    cfg = {"cluster": {"chief": ["127.0.0.1:2000"], "worker": ["127.0.0.1:2001",
                                                                "127.0.0.1:2002"]},
           "task": {"type": "worker", "index": 1}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(cfg))
    r = TFConfigClusterResolver()
    assert r.task_type == "worker" and r.task_id == 1
    assert r.cluster_spec().num_tasks("worker") == 2
    assert r.cluster_spec().task_address("chief", 0) == "127.0.0.1:2000"
    assert r.process_index() == 2 and not r.is_chief()
    assert SimpleClusterResolver(cfg["cluster"], "chief", 0).is_chief()
    assert SimpleClusterResolver({"worker": ["a:1", "b:2"]}, "worker", 0).is_chief()


def test_resolver_errors(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ml.errors.InvalidArgumentError, match="JSON"):
        TFConfigClusterResolver()
    with pytest.raises(ml.errors.InvalidArgumentError, match="host:port"):
        ClusterSpec({"worker": ["nohostport"]})
    r = SimpleClusterResolver({"worker": ["a:1"]}, "worker", 5)
    with pytest.raises(ml.errors.InvalidArgumentError, match="not a chief or worker"):
        r.process_index()
    monkeypatch.delenv("TF_CONFIG")
    with pytest.raises(ml.errors.InvalidArgumentError, match="TF_CONFIG"):
        ml.distribute.MultiWorkerMirroredStrategy()


@pytest.mark.slow
def test_two_processes_equal_one_process(tmp_path):
    sys.path.insert(0, str(HERE))
    import mw_train

    out = io.StringIO()
    weights = tmp_path / "w.npz"
    rc = launch([str(HERE / "mw_train.py"), str(weights), "ok"], num_workers=2,
                timeout=240, out=out)
    log = out.getvalue()
    assert rc == 0, log
    # 2 processes x the devices each has (4 forced CPU devices under the test suite)
    assert "[worker 0] replicas " in log and "[worker 1] replicas " in log
    x, y = mw_train.data()
    g = ml.Graph()
    with g.as_default():
        m = mw_train.model()
    h = m.fit(x, y, batch_size=16, epochs=3, verbose=0, shuffle=False)
    got = np.load(weights)
    for i, w in enumerate(m.get_weights()):
        np.testing.assert_allclose(got[f"arr_{i}"], w, rtol=1e-5, atol=1e-6)
    losses = json.loads(log.split("[worker 1] replicas ")[1].split(" loss ")[1].splitlines()[0])
    np.testing.assert_allclose(losses, h.history["loss"], rtol=1e-5)


@pytest.mark.slow
def test_killed_worker_is_reported_and_job_stops(tmp_path):
    out = io.StringIO()
    rc = launch([str(HERE / "mw_train.py"), str(tmp_path / "w.npz"), "die"],
                num_workers=2, timeout=180, grace=60, out=out)
    log = out.getvalue()
    assert rc == 1
    assert "worker 1 failed first: exit status 3" in log, log[-2000:]
    assert "timed out" not in log  # the survivor stopped by itself, within the grace


@pytest.mark.slow
def test_only_the_chief_writes_tensorboard_logs(tmp_path):
    out = io.StringIO()
    logdir = tmp_path / "logs"
    root = HERE.parents[1]
    rc = launch([str(root / "examples" / "train_digits.py"), "--strategy", "multi_worker",
                 "--epochs", "2", "--verbose", "0", "--logdir", str(logdir)],
                num_workers=2, timeout=240, out=out)
    assert rc == 0, out.getvalue()[-2000:]
    assert len(list((logdir / "train").iterdir())) == 1  # one writer: the chief's
    assert len(list((logdir / "validation").iterdir())) == 1
    assert "[worker 0] TensorBoard logs in" in out.getvalue()
    assert "[worker 1] TensorBoard logs in" not in out.getvalue()


@pytest.mark.slow
def test_restarted_job_resumes_from_backup_with_same_weights(tmp_path):
    sys.path.insert(0, str(HERE))
    import mw_train

    backup = tmp_path / "backup"
    weights = tmp_path / "w.npz"
    out = io.StringIO()
    rc = launch([str(HERE / "mw_train.py"), str(weights), "backup_die", str(backup)],
                num_workers=2, timeout=180, grace=60, out=out)
    assert rc == 1, out.getvalue()[-2000:]
    assert (backup / "training_state.mylib").exists()  # epoch 1's backup, by the chief
    out = io.StringIO()
    rc = launch([str(HERE / "mw_train.py"), str(weights), "backup_resume", str(backup)],
                num_workers=2, timeout=240, out=out)
    log = out.getvalue()
    assert rc == 0, log[-2000:]
    assert "[worker 0] epoch 2" in log and "[worker 0] epoch 0" not in log
    assert not backup.exists() or not any(backup.iterdir())  # removed at the end
    # The same weights (and Adam state) as one uninterrupted 3-epoch run.
    x, y = mw_train.data()
    g = ml.Graph()
    with g.as_default():
        m = mw_train.model()
    m.fit(x, y, batch_size=16, epochs=3, verbose=0, shuffle=False)
    got = np.load(weights)
    for i, w in enumerate(m.get_weights()):
        np.testing.assert_allclose(got[f"arr_{i}"], w, rtol=1e-5, atol=1e-6)
