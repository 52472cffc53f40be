"""`SyncReplicasOptimizer` (as the wrapped optimizer without a strategy, as the
parameter-server strategy's aggregation with one) and `replica_device_setter`."""

import time
import warnings

import numpy as np
import pytest

import mylib as tf


def test_without_strategy_behaves_as_wrapped_optimizer():
    results = []
    for sync in (False, True):
        with tf.Graph().as_default():
            gs = tf.train.get_or_create_global_step()
            w = tf.Variable(np.array([1.0, -1.0], np.float32), name="w")
            loss = tf.reduce_sum(tf.square(w - 3.0))
            opt = tf.train.MomentumOptimizer(0.1, 0.9)
            if sync:
                opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=2,
                                                     total_num_replicas=3)
                with pytest.raises(ValueError, match="Global step is required"):
                    opt.apply_gradients(opt.compute_gradients(loss))
                with pytest.raises(ValueError, match="apply_gradient should be called"):
                    opt.make_session_run_hook(True).begin()
                with warnings.catch_warnings(record=True) as rec:
                    warnings.simplefilter("always")
                    train = opt.minimize(loss, global_step=gs)
                assert any("nothing to aggregate" in str(r.message) for r in rec)
                hooks = [opt.make_session_run_hook(is_chief=True),
                         tf.train.StopAtStepHook(last_step=5)]
                assert opt.get_slot(w, "momentum") is not None
                with pytest.raises(NotImplementedError, match="make_session_run_hook"):
                    opt.get_chief_queue_runner()
            else:
                train = opt.minimize(loss, global_step=gs)
                hooks = [tf.train.StopAtStepHook(last_step=5)]
            with tf.train.MonitoredTrainingSession(hooks=hooks) as sess:
                while not sess.should_stop():
                    sess.run(train)
                results.append(sess._tf_sess().run(w))
    np.testing.assert_array_equal(results[0], results[1])
    with pytest.raises(ValueError, match="total_num_replicas"):
        tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 3, 2)


def test_replica_device_setter_round_robin_and_cluster():
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
            a = tf.Variable(1.0, name="a")
            b = tf.Variable(2.0, name="b")
            c = tf.Variable(3.0, name="c")
            y = a * b + c
        assert [v.op.device for v in (a, b, c)] == ["/job:ps/task:0", "/job:ps/task:1",
                                                   "/job:ps/task:0"]
        assert y.op.device == "/job:worker"
        setter = tf.train.replica_device_setter(
            cluster={"ps": ["h:1", "h:2", "h:3"], "worker": ["h:4"]},
            worker_device="/job:worker/task:0")
        with tf.device(setter):
            vs = [tf.Variable(float(i), name=f"v{i}") for i in range(4)]
            z = vs[0] * 2.0
            with tf.device("/cpu:0"):
                cpu = vs[1] + 1.0
        assert [v.op.device for v in vs] == [f"/job:ps/task:{i}" for i in (0, 1, 2, 0)]
        assert z.op.device == "/job:worker/task:0"
        assert cpu.op.device.endswith("device:CPU:0") and "worker" in cpu.op.device
        assert tf.train.replica_device_setter(cluster={"worker": ["h:1"]}) is None
        assert tf.train.replica_device_setter() is None
        with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as s:
            s.run(tf.global_variables_initializer())
            assert s.run(y) == 5.0


@pytest.mark.slow
def test_sync_replicas_on_parameter_server_strategy_applies_mean_of_m():
    from mylib.distribute.coordinator import ClusterCoordinator

    s = tf.distribute.ParameterServerStrategy(num_ps=1, num_workers=2, replicas_to_aggregate=2)
    try:
        g = tf.Graph()
        with g.as_default(), s.scope():
            w = tf.Variable(np.zeros((2,), np.float32), name="w")
            gs = tf.train.get_or_create_global_step()
            opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(1.0),
                                                 replicas_to_aggregate=2, total_num_replicas=2)
            bad = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(1.0), 1, 2)
            with pytest.raises(ValueError, match="does not match"):
                bad.minimize(tf.reduce_sum(w), global_step=gs)
            init = tf.global_variables_initializer()
        sess = tf.Session(graph=g)
        sess.run(init)
        coord = ClusterCoordinator(s)

        def step():
            return opt.minimize(tf.reduce_sum(w * -1.0), var_list=[w], global_step=gs)

        t0 = time.time()
        for _ in range(4):
            coord.schedule(step)
        coord.join()
        applied = s.stats["applied_steps"]
        assert applied >= 1
        np.testing.assert_allclose(sess.run(w), [applied, applied])  # mean gradient -1
        assert time.time() - t0 < 120
    finally:
        s.close()
