"""ParameterServerStrategy under kill -9 of its real processes: a parameter server
killed at an epoch boundary, mid-epoch, during `evaluate` and during a checkpoint
save; a synchronous worker killed and restarted by Ray; a driver killed, whose
leftovers the next driver removes; and the privacy of Ray's temporary directory."""

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import mylib as ml
from mylib.distribute import ps_checkpoint, ps_runtime
from mylib.distribute.coordinator import ClusterCoordinator

pytest.importorskip("ray")

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    """Ray must leave nothing in HOME; point it at a test directory."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    yield home


@pytest.fixture
def time_limit():
    """``time_limit(seconds)``: the test fails with TimeoutError (in its main thread,
    so its `finally` still closes the cluster) once `seconds` have passed."""

    def on_alarm(signum, frame):
        raise TimeoutError("the test ran past its time limit")

    old = signal.signal(signal.SIGALRM, on_alarm)
    yield lambda seconds: signal.alarm(int(seconds))
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _writable_by_others(root):
    """Directories under `root` (itself included) that group or others may write."""
    bad = []
    for dirpath, dirnames, _ in os.walk(root):
        for p in [dirpath] + [os.path.join(dirpath, d) for d in dirnames]:
            st = os.lstat(p)
            if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o022:
                bad.append((oct(stat.S_IMODE(st.st_mode)), p))
    return bad


def _ps_pid(s, k):
    import ray

    return ray.get(s.extended.ps_handles[k].ping.remote(), timeout=60)[2]


def _kill_ps(s, k):
    os.kill(_ps_pid(s, k), signal.SIGKILL)


def _KillPS(strategy, k, hook, at):
    """A callback killing parameter server `k` (kill -9 of its process) once, in
    `hook` when its first argument (epoch or batch) equals `at`."""

    def maybe(self, i, logs=None):
        if not self.done and i == at:
            self.done = True
            _kill_ps(strategy, k)

    cb = type("KillPS", (ml.callbacks.Callback,), {hook: maybe})()
    cb.done = False
    return cb


def test_parameter_server_killed_anywhere_keras_fit_finishes(tmp_path, time_limit):
    time_limit(420)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 4)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], "float32") > 0).astype("int64")
    every, spe, workers = 4, 6, 2
    s = ml.distribute.ParameterServerStrategy(num_ps=2, num_workers=workers, rpc_timeout=60,
                                              checkpoint_dir=str(tmp_path / "ckpt"),
                                              checkpoint_every=every)
    try:
        with ml.Graph().as_default(), s.scope():
            m = ml.Sequential([ml.layers.Input((4,)), ml.layers.Dense(8, activation="relu"),
                               ml.layers.Dense(2)])
            m.compile(optimizer=ml.optimizers.SGD(0.05),
                      loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        sess = m.session

        def iterations():
            return int(sess.run(m.optimizer.iterations))

        m.fit(x, y, epochs=1, steps_per_epoch=spe, batch_size=16, verbose=0)
        temp = s._ray_local.temp_dir
        assert not _writable_by_others(temp)  # private after start
        assert iterations() == spe

        def fit_with(cb, k):
            """Runs 2 epochs with callback `cb` killing ps `k`; checks the steps."""
            before, lost0, restarts = iterations(), s.stats["steps_lost"], \
                s.stats["ps_restarts"]
            h = m.fit(x, y, epochs=2, steps_per_epoch=spe, batch_size=16, verbose=0,
                      callbacks=[cb])
            assert cb.done
            assert len(h.history["loss"]) == 2  # every requested epoch ran
            assert s.stats["ps_restarts"] == restarts + 1
            lost = s.stats["steps_lost"] - lost0
            # All 2 * spe steps ran; those applied since the restored checkpoint are
            # lost (at most checkpoint_every, plus one in flight per other worker).
            assert 0 <= lost <= every + workers - 1
            assert iterations() == before + 2 * spe - lost

        # At an epoch boundary: the next epoch's metric reset (run from this process)
        # meets the dead server.
        fit_with(_KillPS(s, 0, "on_epoch_end", 0), 0)
        # Mid-epoch: steps running on the workers meet it.
        fit_with(_KillPS(s, 1, "on_train_batch_end", 2), 1)

        # During evaluate (test steps run from this process).
        restarts = s.stats["ps_restarts"]
        cb = _KillPS(s, 0, "on_test_batch_begin", 2)
        loss, acc = m.evaluate(x, y, batch_size=16, verbose=0, callbacks=[cb])
        assert cb.done and s.stats["ps_restarts"] == restarts + 1
        assert np.isfinite(loss) and 0 <= acc <= 1
        # The recovered model is one state: evaluate and predict agree with the
        # weights read back.
        ws = m.get_weights()
        logits = np.maximum(x @ ws[0] + ws[1], 0) @ ws[2] + ws[3]
        np.testing.assert_allclose(m.predict(x, batch_size=32, verbose=0), logits,
                                   rtol=1e-4, atol=1e-4)
        z = logits - logits.max(1, keepdims=True)
        ref_loss = float(np.mean(np.log(np.exp(z).sum(1)) - z[np.arange(len(y)), y]))
        loss, acc = m.evaluate(x, y, batch_size=16, verbose=0)
        np.testing.assert_allclose(loss, ref_loss, rtol=1e-4)
        np.testing.assert_allclose(acc, np.mean(logits.argmax(1) == y), rtol=1e-6)

        # During a checkpoint save: the server dies while its values are being read.
        real = ps_checkpoint._task_vars
        state = {"killed": False}

        def killing_task_vars(strategy):
            if not state["killed"]:
                state["killed"] = True
                _kill_ps(strategy, 1)
            return real(strategy)

        ps_checkpoint._task_vars = killing_task_vars
        try:
            before, lost0 = iterations(), s.stats["steps_lost"]
            restarts = s.stats["ps_restarts"]
            h = m.fit(x, y, epochs=1, steps_per_epoch=2 * every, batch_size=16, verbose=0)
        finally:
            ps_checkpoint._task_vars = real
        assert state["killed"] and len(h.history["loss"]) == 1
        assert s.stats["ps_restarts"] == restarts + 1
        lost = s.stats["steps_lost"] - lost0
        assert 0 <= lost <= every + workers - 1
        assert iterations() == before + 2 * every - lost
        ptr = ps_checkpoint.latest(str(tmp_path / "ckpt"))
        assert ptr["step"] <= iterations()
        assert not _writable_by_others(temp)  # still private after training
        m.save(str(tmp_path / "m.keras"))  # reads every weight back
    finally:
        s.close()
    assert not os.path.exists(temp)


def test_sync_worker_killed_rejoins_the_step(time_limit):
    import ray

    time_limit(240)
    s = ml.distribute.ParameterServerStrategy(num_ps=1, num_workers=2, replicas_to_aggregate=2,
                                              rpc_timeout=60)
    try:
        g = ml.Graph()
        with g.as_default(), s.scope():
            w = ml.Variable(np.zeros((2,), np.float32), name="w")
            opt = ml.optimizers.SGD(1.0)
            opt.build([w])
            init = ml.global_variables_initializer()
        ml.layers.backend.get_session(g).run(init)
        coord = ClusterCoordinator(s)

        def step():
            return opt.minimize(ml.reduce_sum(w * -1.0), var_list=[w])  # gradient -1

        s.simulate_slow_worker(0, 0.5)
        s.simulate_slow_worker(1, 0.5)
        rvs = [coord.schedule(step) for _ in range(8)]
        time.sleep(1.5)
        pid = ray.get(s.extended.worker_handles[1].ping.remote(), timeout=60)[2]
        os.kill(pid, signal.SIGKILL)
        coord.join()
        assert all(rv.done() for rv in rvs)
        # 4 synchronous steps of 2 gradients each, none lost, none doubled: the
        # restarted worker rejoined its step.
        sess = ml.layers.backend.get_session(g)
        it, wv = sess.run([opt.iterations, w])
        assert it == 4 and s.stats["applied_steps"] == 4
        np.testing.assert_allclose(wv, [4.0, 4.0])
        assert ray.get(s.extended.worker_handles[1].ping.remote(), timeout=60)[2] != pid
        assert s.stats["worker_restarts"] >= 1
        assert s.stats["closures_retried"] == 0  # resubmitted within its step
        assert s.stats["dropped_gradients"] == 0
        # Without checkpoint_dir a lost parameter server cannot be restored: reads
        # and steps from this process raise mylib's UnavailableError, never Ray's.
        os.kill(_ps_pid(s, 0), signal.SIGKILL)
        for _ in range(2):  # while Ray restarts it, and once it has
            with pytest.raises(ml.errors.UnavailableError, match="parameter server"):
                sess.run(w)
            with pytest.raises(ml.errors.UnavailableError, match="parameter server"):
                ml.layers.backend.get_values([w])
            time.sleep(2)
    finally:
        s.close()


_DRIVER = textwrap.dedent("""
    import sys, time
    import numpy as np
    import mylib as ml
    if sys.argv[1] == "hang":  # a strategy with its tasks, killed with -9 below
        s = ml.distribute.ParameterServerStrategy(num_ps=1, num_workers=1)
        g = ml.Graph()
        with g.as_default(), s.scope():
            v = ml.Variable(np.float32(1.0), name="v")
        sess = ml.Session(graph=g)
        sess.run(v.initializer)
        assert sess.run(v) == 1.0
        print(s._ray_local.temp_dir, flush=True)
        time.sleep(600)
    else:  # the next start of an embedded cluster (what a strategy starts)
        import json
        from mylib.distribute.ps_runtime import LocalRay
        r = LocalRay(num_cpus=1)
        print(json.dumps(r._pids), flush=True)
        print(r.temp_dir, flush=True)
        r.stop()
""")


def _same_process(pid, start):
    return ps_runtime._start_time(pid) == start


def test_next_driver_removes_what_a_killed_driver_left(tmp_path, time_limit):
    time_limit(240)
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    env = dict(os.environ, PYTHONPATH=os.getcwd(), JAX_PLATFORMS="cpu")
    first = subprocess.Popen([sys.executable, str(script), "hang"], stdout=subprocess.PIPE,
                             text=True, env=env)
    try:
        temp = first.stdout.readline().strip()
        assert temp.startswith("/tmp/mylib-ray-"), temp
        with open(os.path.join(temp, ps_runtime.OWNER_FILE)) as f:
            owner = json.load(f)
        assert owner["pid"] == first.pid
        procs = {int(p): t for p, t in owner["processes"].items()}
        assert len(procs) >= 4  # head processes, raylet, agents, the tasks
        # A dead driver's directory stays private too.
        assert not _writable_by_others(temp)
    finally:
        first.kill()  # kill -9: the driver cannot clean up
        first.wait(timeout=30)
    second = subprocess.run([sys.executable, str(script), "next"], capture_output=True,
                            text=True, env=env, timeout=180)
    assert second.returncode == 0, second.stderr[-3000:]
    lines = second.stdout.strip().splitlines()
    temp2 = lines[-1]
    procs2 = {int(p): t for p, t in json.loads(lines[-2]).items()}
    assert procs2
    # The second driver removed the first one's directory and its processes, and its
    # own close left nothing.
    assert not os.path.exists(temp)
    deadline = time.monotonic() + 20
    while any(_same_process(p, t) for p, t in procs.items()) and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p, t in procs.items() if _same_process(p, t)]
    assert temp2 != temp and not os.path.exists(temp2)
    assert not [p for p, t in procs2.items() if _same_process(p, t)]
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    assert not [ln for ln in out.splitlines() if temp in ln or temp2 in ln]


def test_clean_stale_spares_live_drivers_and_reused_pids(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    me = os.getpid()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = base / "mylib-ray-live"
        live.mkdir()
        (live / ps_runtime.OWNER_FILE).write_text(json.dumps(
            {"pid": me, "start": ps_runtime._start_time(me), "processes": {}}))
        # A dead owner (this PID's start time differs: the PID was reused) whose
        # recorded process is the sleeper, but with another start time: not killed.
        stale = base / "mylib-ray-stale"
        stale.mkdir()
        st = ps_runtime._start_time(sleeper.pid)
        (stale / ps_runtime.OWNER_FILE).write_text(json.dumps(
            {"pid": me, "start": ps_runtime._start_time(me) - 1,
             "processes": {str(sleeper.pid): st + 1}}))
        other = base / "mylib-ray-noowner"
        other.mkdir()
        removed = ps_runtime.clean_stale(str(base))
        assert removed == [str(stale)]
        assert live.exists() and other.exists() and not stale.exists()
        assert sleeper.poll() is None  # a PID whose start time differs is spared
        # Recorded with its true start time, it is killed.
        stale.mkdir()
        (stale / ps_runtime.OWNER_FILE).write_text(json.dumps(
            {"pid": me, "start": ps_runtime._start_time(me) - 1,
             "processes": {str(sleeper.pid): st}}))
        assert ps_runtime.clean_stale(str(base)) == [str(stale)]
        assert sleeper.wait(timeout=10) is not None
    finally:
        sleeper.kill()
        sleeper.wait()
