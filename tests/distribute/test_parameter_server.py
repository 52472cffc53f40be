"""ParameterServerStrategy on a local (loopback) Ray instance: placement, the graph and
Keras APIs, async and sync (backup workers) training against numpy references,
sharded variables, and failures of real processes."""

import os
import subprocess
import time

import numpy as np
import pytest

import mylib as ml
from mylib.runtime.policy import get_policy
from mylib import errors
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
    assert not any(home.iterdir()), f"files left in HOME: {list(home.iterdir())}"


def _ray_processes(temp_dir):
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if temp_dir in ln]


def _sess(g):
    return ml.layers.backend.get_session(g)


def test_graph_api_trains_on_parameter_servers_loopback_only():
    s = ml.distribute.ParameterServerStrategy(num_ps=2, num_workers=1)
    try:
        g = ml.Graph()
        with g.as_default(), s.scope():
            w = ml.Variable(np.ones((3, 2), np.float32), name="w")
            b = ml.Variable(np.zeros((2,), np.float32), name="b")
            x = ml.placeholder("float32", [None, 3])
            loss = ml.reduce_sum(ml.square(x @ w + b))
            train = ml.optimizers.SGD(0.01).minimize(loss)
            init = ml.global_variables_initializer()
        assert w.device == "/job:ps/replica:0/task:0/device:CPU:0"
        assert b.device == "/job:ps/replica:0/task:1/device:CPU:0"
        assert not s._started  # nothing starts before a step needs the cluster
        sess = ml.Session(graph=g)
        sess.run(init)
        xv = np.arange(6, dtype=np.float32).reshape(2, 3)
        for _ in range(3):
            sess.run(train, {x: xv})
        W, B = np.ones((3, 2)), np.zeros(2)
        for _ in range(3):
            gy = 2 * (xv @ W + B)
            W, B = W - 0.01 * xv.T @ gy, B - 0.01 * gy.sum(0)
        got_w, got_b = sess.run([w, b])
        np.testing.assert_allclose(got_w, W, rtol=1e-5)
        np.testing.assert_allclose(got_b, B, rtol=1e-5)
        # Every listening socket of the local Ray instance is on loopback.
        temp = s._ray_local.temp_dir
        pids = {ln.split()[0] for ln in _ray_processes(temp)} | {str(os.getpid())}
        ss = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
        ours = [ln for ln in ss.splitlines() if any(f"pid={p}," in ln for p in pids)]
        assert ours, ss
        for ln in ours:
            local = ln.split()[3]
            assert local.startswith(("127.0.0.1:", "[::ffff:127.0.0.1]:", "[::1]:")), ln
        assert os.environ.get("RAY_AUTH_MODE") == "token"
        spec = s.cluster_resolver.cluster_spec()
        assert spec.num_tasks("ps") == 2 and spec.num_tasks("worker") == 1
    finally:
        s.close()
    assert not os.path.exists(temp)
    deadline = time.time() + 20
    while _ray_processes(temp) and time.time() < deadline:
        time.sleep(0.2)
    assert not _ray_processes(temp)
    assert os.environ.get("RAY_AUTH_MODE") is None


def test_async_steps_all_applied_and_sync_mean_of_first_m():
    rng = np.random.default_rng(0)
    batches = [rng.normal(size=(4, 3)).astype(np.float32) for _ in range(4)]
    for m in (None, 2):
        s = ml.distribute.ParameterServerStrategy(num_ps=2, num_workers=2,
                                                  replicas_to_aggregate=m)
        try:
            g = ml.Graph()
            with g.as_default(), s.scope():
                w = ml.Variable(np.ones((3,), np.float32), name="w")
                count = ml.Variable(np.int64(0), name="count")
                opt = ml.optimizers.SGD(0.1)
                opt.build([w])
                init = ml.global_variables_initializer()
            _sess(g).run(init)
            coord = ClusterCoordinator(s)

            def step(xb):
                loss = ml.reduce_mean(ml.square(ml.reduce_sum(xb * w, axis=1) - 1.0))
                with ml.control_dependencies([count.assign_add(1)]):
                    return loss, opt.minimize(loss, var_list=[w])

            rvs = [coord.schedule(step, args=(xb,)) for xb in batches]
            coord.join()
            losses = [rv.fetch()[0] for rv in rvs]
            assert all(np.isfinite(losses))
            wv, n, it = _sess(g).run([w, count, opt.iterations])
            assert n == 4  # every step's ungated effects ran once

            def grad(W, xb):
                r = xb @ W - 1.0
                return 2 * xb.T @ r / len(xb)

            if m is None:
                assert it == 4
            else:
                # Steps of the closures in queue order: mean of each pair's gradients.
                W = np.ones(3)
                for a, b_ in ((0, 1), (2, 3)):
                    W = W - 0.1 * (grad(W, batches[a]) + grad(W, batches[b_])) / 2
                np.testing.assert_allclose(wv, W, rtol=1e-5)
                assert it == 2 and s.stats["applied_steps"] == 2
        finally:
            s.close()


def test_small_and_large_steps_agree_with_numpy_and_tasks_keep_freed_memory():
    """A small step travels as one packed blob each way, one with large feeds and
    results through Ray's own serializer: both give numpy's values."""
    from mylib.distribute.ps_runtime import PACK_LIMIT
    import ray

    n = PACK_LIMIT // 4 * 3  # float32 elements: 3x the packing limit
    s = ml.distribute.ParameterServerStrategy(num_ps=2, num_workers=1)
    try:
        g = ml.Graph()
        with g.as_default(), s.scope():
            v = ml.Variable(np.zeros((4,), np.float32), name="v")
            w = ml.Variable(np.zeros((n,), np.float32), name="w")
            init = ml.global_variables_initializer()
        _sess(g).run(init)
        coord = ClusterCoordinator(s)

        def small(xb):
            with ml.control_dependencies([v.assign_add(xb * 2.0)]):
                return ml.reduce_sum(xb), v.read_value()

        def large(xb):
            with ml.control_dependencies([w.assign_add(xb)]):
                return ml.reduce_sum(xb), w.read_value() * 3.0

        rng = np.random.default_rng(1)
        xs = [rng.normal(size=4).astype(np.float32) for _ in range(3)]
        xl = [rng.normal(size=n).astype(np.float32) for _ in range(3)]
        out_s = [coord.schedule(small, args=(x,)) for x in xs]
        coord.join()
        out_l = [coord.schedule(large, args=(x,)) for x in xl]
        coord.join()
        for x, rv in zip(xs, out_s):
            np.testing.assert_allclose(rv.fetch()[0], x.sum(), rtol=1e-5)
        np.testing.assert_allclose(out_s[-1].fetch()[1], 2 * sum(xs), rtol=1e-5)
        np.testing.assert_allclose(out_l[-1].fetch()[1], 3 * sum(xl), rtol=1e-5)
        np.testing.assert_allclose(_sess(g).run(w), sum(xl), rtol=1e-5)
        import platform

        if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
            assert all(ray.get([h.memory_reuse.remote() for h in
                                s.extended.ps_handles + s.extended.worker_handles]))
    finally:
        s.close()


def test_backup_worker_gradients_are_dropped_not_applied():
    s = ml.distribute.ParameterServerStrategy(num_ps=1, num_workers=3, replicas_to_aggregate=2)
    try:
        g = ml.Graph()
        with g.as_default(), s.scope():
            w = ml.Variable(np.zeros((2,), np.float32), name="w")
            opt = ml.optimizers.SGD(1.0)
            opt.build([w])
            init = ml.global_variables_initializer()
        _sess(g).run(init)
        coord = ClusterCoordinator(s)
        delay = 1.5  # seconds per straggler step; 9 steps at its pace would take 13.5 s
        s.simulate_slow_worker(2, delay)

        def step():
            return opt.minimize(ml.reduce_sum(w * -1.0), var_list=[w])  # gradient -1

        t0 = time.time()
        for _ in range(9):
            coord.schedule(step)
        coord.join()
        it = _sess(g).run(opt.iterations)
        wv = _sess(g).run(w)
        st = s.stats
        assert it == st["applied_steps"]
        # Each applied step adds exactly the mean gradient (1.0), never a stale one.
        np.testing.assert_allclose(wv, [it, it])
        assert st["dropped_gradients"] >= 1
        assert time.time() - t0 < 9 * delay  # the straggler did not set the pace
    finally:
        s.close()


def test_sharded_embedding_sparse_update_and_restore_into_other_sharding(tmp_path):
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    s = ml.distribute.ParameterServerStrategy(
        num_ps=2, num_workers=1, variable_partitioner=ml.distribute.FixedShardsPartitioner(2))
    try:
        g = ml.Graph()
        with g.as_default(), s.scope():
            emb = ml.Variable(table, name="emb")
            ids = ml.placeholder("int64", [None])
            rows = ml.nn.embedding_lookup(emb, ids)
            ids2 = ml.placeholder("int64", [None, 1])   # reshaped by its runtime shape
            rows2 = ml.nn.embedding_lookup(emb, ids2)
            loss = ml.reduce_sum(rows)
            train = ml.optimizers.SGD(0.5).minimize(loss, var_list=[emb])
            init = ml.global_variables_initializer()
            saver = ml.train.Saver()
        assert isinstance(emb, ml.distribute.ShardedVariable)
        assert [v.device for v in emb.variables] == [
            "/job:ps/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:1/device:CPU:0"]
        assert [v.shape.as_list() for v in emb.variables] == [[5, 4], [5, 4]]
        sess = ml.Session(graph=g)
        sess.run(init)
        idv = np.array([1, 7, 7])
        np.testing.assert_allclose(sess.run(rows, {ids: idv}), table[idv])
        np.testing.assert_allclose(sess.run(rows2, {ids2: idv[:, None]}), table[idv][:, None])
        sess.run(train, {ids: idv})
        want = table.copy()
        want[1] -= 0.5
        want[7] -= 1.0  # looked up twice
        np.testing.assert_allclose(sess.run(emb), want)
        # Assigning the logical value splits it over the shards.
        sess.run(emb.assign(want * 2.0, read_value=False))
        np.testing.assert_allclose(sess.run(emb.variables[1]), want[5:] * 2.0)
        sess.run(emb.assign(want, read_value=False))
        path = saver.save(sess, str(tmp_path / "ckpt"))
    finally:
        s.close()
    s3 = ml.distribute.ParameterServerStrategy(
        num_ps=3, num_workers=1, variable_partitioner=ml.distribute.FixedShardsPartitioner(3))
    try:
        g = ml.Graph()
        with g.as_default(), s3.scope():
            emb3 = ml.Variable(np.zeros((10, 4), np.float32), name="emb")
            saver3 = ml.train.Saver()
        assert [v.shape.as_list()[0] for v in emb3.variables] == [4, 3, 3]
        sess = ml.Session(graph=g)
        saver3.restore(sess, path)
        np.testing.assert_allclose(sess.run(emb3), want)
        np.testing.assert_allclose(sess.run(emb3.variables[2]), want[7:])
    finally:
        s3.close()


def test_keras_fit_on_workers_learns_digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16).astype("float32")
    y = d.target.astype("int64")
    s = ml.distribute.ParameterServerStrategy(num_ps=2, num_workers=2)
    try:
        with ml.Graph().as_default(), s.scope():
            m = ml.Sequential([ml.layers.Input((64,)),
                               ml.layers.Dense(64, activation="relu"), ml.layers.Dense(10)])
            m.compile(optimizer=ml.optimizers.Adam(0.01),
                      loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        h = m.fit(x[:1500], y[:1500], epochs=3, batch_size=64, verbose=0)
        assert h.history["accuracy"][-1] > 0.85  # asynchronous: stale gradients
        loss, acc = m.evaluate(x[1500:], y[1500:], verbose=0)
        assert acc > 0.8  # held-out, after asynchronous steps: 0.845-0.95 seen (chance 0.1)
        # Weights read back from the parameter servers agree with predict().
        ws = m.get_weights()
        hid = np.maximum(x[:5] @ ws[0] + ws[1], 0)
        np.testing.assert_allclose(m.predict(x[:5], verbose=0), hid @ ws[2] + ws[3],
                                   rtol=1e-4, atol=1e-4)
        assert int(_sess(m.graph).run(m.optimizer.iterations)) == 3 * 24
    finally:
        s.close()
    assert get_policy(m.graph) is None  # detached when closed


def test_worker_killed_mid_step_reruns_closure_and_rejoins():
    import ray

    s = ml.distribute.ParameterServerStrategy(num_ps=1, num_workers=2, rpc_timeout=30)
    try:
        g = ml.Graph()
        with g.as_default(), s.scope():
            count = ml.Variable(np.int64(0), name="count")
            init = ml.global_variables_initializer()
        _sess(g).run(init)
        coord = ClusterCoordinator(s)
        s.simulate_slow_worker(0, 0.3)
        s.simulate_slow_worker(1, 0.3)

        def step():
            return count.assign_add(1)

        rvs = [coord.schedule(step) for _ in range(12)]
        time.sleep(1.0)
        victim = s.extended.worker_handles[0]
        pid = ray.get(victim.ping.remote())[2]
        os.kill(pid, 9)  # a real process dies mid-step
        coord.join()
        assert all(rv.done() for rv in rvs)
        assert _sess(g).run(count) >= 12  # at-least-once
        # The other worker may finish every closure before Ray has restarted the
        # victim: the coordinator notes the restart when it reaches it again.
        deadline = time.monotonic() + 30
        while s.stats["worker_restarts"] < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert s.stats["worker_restarts"] >= 1
        # The restarted worker rejoined: it has the graph and runs steps again.
        assert ray.get(victim.ping.remote())[2] != pid
        s.simulate_slow_worker(1, 2.0)
        before = s.stats["closures_retried"]
        for _ in range(4):
            coord.schedule(step)
        coord.join()
        assert s.stats["closures_retried"] == before
    finally:
        s.close()


def test_parameter_server_killed_is_restored_from_checkpoint(tmp_path):
    import ray

    s = ml.distribute.ParameterServerStrategy(num_ps=2, num_workers=1, rpc_timeout=30,
                                              checkpoint_dir=str(tmp_path / "ckpt"),
                                              checkpoint_every=5)
    try:
        g = ml.Graph()
        with g.as_default(), s.scope():
            c0 = ml.Variable(np.int64(0), name="c0")  # on ps 0
            c1 = ml.Variable(np.int64(0), name="c1")  # on ps 1
            init = ml.global_variables_initializer()
        _sess(g).run(init)
        coord = ClusterCoordinator(s)

        def step():
            return ml.group(c0.assign_add(1), c1.assign_add(1))

        for _ in range(12):
            coord.schedule(step)
        coord.join()
        pid = ray.get(s.extended.ps_handles[1].ping.remote())[2]
        os.kill(pid, 9)
        t0 = time.time()
        for _ in range(8):
            coord.schedule(step)
        coord.join()
        assert time.time() - t0 < 60
        v0, v1 = _sess(g).run([c0, c1])
        assert s.stats["ps_restarts"] == 1
        # Both parameter servers went back to the checkpoint of step 10 (not only the
        # one that died): the counters agree, and exactly the steps applied since that
        # checkpoint are lost.
        lost = s.stats["steps_lost"]
        assert v0 == v1 == 20 - lost
        assert 0 < lost <= 5
    finally:
        s.close()


def test_sync_with_too_few_workers_fails_clearly():
    import ray

    s = ml.distribute.ParameterServerStrategy(num_ps=1, num_workers=2, replicas_to_aggregate=2,
                                              rpc_timeout=8)
    try:
        g = ml.Graph()
        with g.as_default(), s.scope():
            w = ml.Variable(np.zeros((2,), np.float32), name="w")
            opt = ml.optimizers.SGD(1.0)
            opt.build([w])
            init = ml.global_variables_initializer()
        _sess(g).run(init)
        coord = ClusterCoordinator(s)
        ray.kill(s.extended.worker_handles[1], no_restart=True)
        t0 = time.time()
        coord.schedule(lambda: opt.minimize(ml.reduce_sum(w), var_list=[w]))
        coord.schedule(lambda: opt.minimize(ml.reduce_sum(w), var_list=[w]))
        # The gone worker is named, and the step fails once rpc_timeout has passed
        # since it began (not after retries of it).
        with pytest.raises(errors.DeadlineExceededError, match="task:1"):
            coord.join()
        assert time.time() - t0 < 8 + 6
    finally:
        s.close()


def test_bad_configuration_fails_before_any_task_starts():
    with pytest.raises(ValueError, match="at least one parameter server"):
        ml.distribute.ParameterServerStrategy(num_ps=0)
    with pytest.raises(ValueError, match="replicas_to_aggregate"):
        ml.distribute.ParameterServerStrategy(num_workers=2, replicas_to_aggregate=3)
    with pytest.raises(ValueError, match="num_shards"):
        ml.distribute.FixedShardsPartitioner(0)
    s = ml.distribute.ParameterServerStrategy(
        num_ps=2, variable_partitioner=lambda shape, dtype: [2] * len(shape))
    g = ml.Graph()
    with g.as_default(), s.scope():
        with pytest.raises(ValueError, match="only the first axis"):
            ml.Variable(np.zeros((4, 4), np.float32), name="v")
    assert not s._started
    s.close()
    s = ml.distribute.ParameterServerStrategy(num_ps=1, num_workers=1,
                                              ps_resources={"num_cpus": 1000})
    g = ml.Graph()
    with g.as_default(), s.scope():
        v = ml.Variable(1.0)
    with pytest.raises(RuntimeError, match="1000"):
        ml.Session(graph=g).run(v.initializer)
    assert s.extended.ps_handles is None
    s.close()


def test_partitioners_follow_tensorflow_rules():
    P = ml.distribute
    assert P.FixedShardsPartitioner(3)([10, 4], "float32") == [3, 1]
    assert P.FixedShardsPartitioner(3)([2, 4], "float32") == [2, 1]
    # 10 rows of 4 float32 = 160 bytes; at least 64 bytes per shard -> 2 shards.
    assert P.MinSizePartitioner(min_shard_bytes=64, max_shards=4)([10, 4], "float32") == [2, 1]
    assert P.MinSizePartitioner(min_shard_bytes=16, max_shards=4)([10, 4], "float32") == [4, 1]
    # at most 48 bytes (3 rows) per shard -> ceil(10 / 3) = 4 shards.
    assert P.MaxSizePartitioner(max_shard_bytes=48)([10, 4], "float32") == [4, 1]
    assert P.MaxSizePartitioner(max_shard_bytes=48, max_shards=2)([10, 4], "float32") == [2, 1]
    from mylib.distribute.sharded_variable import shard_sizes

    assert shard_sizes(10, 3) == [4, 3, 3]


def test_per_worker_datasets_feed_each_worker_its_own_data():
    s = ml.distribute.ParameterServerStrategy(num_ps=1, num_workers=2)
    try:
        g = ml.Graph()
        with g.as_default(), s.scope():
            total = ml.Variable(np.float32(0), name="total")
            seen = ml.Variable(np.int64(0), name="seen")
            init = ml.global_variables_initializer()
        _sess(g).run(init)
        coord = ClusterCoordinator(s)

        def dataset_fn():
            x = np.arange(12, dtype=np.float32)
            return ml.data.Dataset.from_tensor_slices(x).batch(4).repeat()

        ds = coord.create_per_worker_dataset(dataset_fn)
        it = iter(ds)

        def step(iterator):
            batch = next(iterator)
            return ml.group(total.assign_add(ml.reduce_sum(batch)),
                            seen.assign_add(ml.cast(ml.size(batch), "int64")))

        for _ in range(6):
            coord.schedule(step, args=(it,))
        coord.join()
        assert _sess(g).run(seen) == 24
        # Each worker reads its own copy from the start: k batches on one worker and
        # 6 - k on the other.
        sums = np.arange(12, dtype=np.float32).reshape(3, 4).sum(1)
        first = lambda k: sum(sums[j % 3] for j in range(k))  # noqa: E731
        assert _sess(g).run(total) in {first(k) + first(6 - k) for k in range(7)}

        def one_batch():
            return ml.data.Dataset.from_tensor_slices(np.ones(4, np.float32)).batch(4)

        it1 = iter(coord.create_per_worker_dataset(one_batch))
        for _ in range(3):  # 3 steps, 2 batches in all: some worker runs out
            coord.schedule(step, args=(it1,))
        with pytest.raises(errors.OutOfRangeError, match="exhausted"):
            coord.join()
    finally:
        s.close()
