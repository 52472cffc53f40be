"""`MonitoredTrainingSession`, `MonitoredSession`, `SingularMonitoredSession` and the
common hooks: stopping, checkpoint restore, summaries, logging, NaN detection and the
hook API's ordering."""

import glob
import logging
import os

import numpy as np
import pytest

import mylib as tf
from mylib import errors


def _model():
    gs = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.placeholder(tf.float32, [None], name="y")
    w = tf.Variable(np.zeros(2, np.float32), name="w")
    loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, 1) - y))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
    return gs, x, y, w, loss, train


def _batch(rng):
    xv = rng.normal(size=(8, 2)).astype(np.float32)
    return xv, xv @ np.array([1.0, -2.0], np.float32)


def _events(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir))
    acc.Reload()
    return acc


def test_training_session_stops_saves_restores_and_writes_summaries(tmp_path):
    rng = np.random.default_rng(0)
    ckpt = tmp_path / "ckpt"
    for run, last in enumerate((12, 20)):
        with tf.Graph().as_default():
            gs, x, y, w, loss, train = _model()
            tf.summary.scalar("loss", loss)
            steps = 0
            with tf.train.MonitoredTrainingSession(
                    checkpoint_dir=str(ckpt), save_checkpoint_steps=5,
                    save_summaries_steps=4,
                    hooks=[tf.train.StopAtStepHook(last_step=last)]) as sess:
                if run == 1:  # restored from the first run's final checkpoint
                    assert sess._tf_sess().run(gs) == 12
                while not sess.should_stop():
                    xv, yv = _batch(rng)
                    sess.run(train, {x: xv, y: yv})
                    steps += 1
            assert steps == (12 if run == 0 else 8)
    assert tf.train.latest_checkpoint(str(ckpt)).endswith("model.ckpt-20")
    assert os.path.exists(ckpt / "graph.pbtxt")
    tf.summary.FileWriterCache.clear()
    acc = _events(ckpt)
    steps = [e.step for e in acc.Scalars("loss")]
    assert steps[:3] == [1, 5, 9]  # TF1 reads the step after the run
    assert "global_step/sec" in acc.Tags()["scalars"] or steps  # rate needs 2 triggers
    with tf.Graph().as_default():
        _, _, _, w, _, _ = _model()
        with tf.Session() as s:
            tf.train.Saver().restore(s, tf.train.latest_checkpoint(str(ckpt)))
            wv = s.run(w)
    assert np.linalg.norm(wv - [1.0, -2.0]) < 1.0  # it learned


def test_num_steps_and_out_of_range_ends_loop_and_hook_order():
    calls = []

    class Rec(tf.train.SessionRunHook):
        def begin(self):
            calls.append("begin")

        def after_create_session(self, session, coord):
            calls.append("create")

        def before_run(self, ctx):
            calls.append("before")
            assert ctx.original_args.fetches is not None
            return tf.train.SessionRunArgs({"w": w})

        def after_run(self, ctx, values):
            calls.append(("after", tuple(np.round(values.results["w"], 4))))

        def end(self, session):
            calls.append("end")

    with tf.Graph().as_default():
        gs, x, y, w, loss, train = _model()
        q = tf.FIFOQueue(10, [tf.float32], shapes=[[]])
        enq = q.enqueue_many([np.arange(3, dtype=np.float32)])
        deq = q.dequeue()
        close = q.close()
        with tf.train.MonitoredSession(hooks=[Rec()]) as sess:
            sess.run([enq, close])
            while not sess.should_stop():
                sess.run(deq)  # the 4th run raises OutOfRangeError: a normal end
        assert calls[:2] == ["begin", "create"] and calls[-1] == "end"
        assert calls.count("before") == 5
        with tf.train.SingularMonitoredSession(
                hooks=[tf.train.StopAtStepHook(num_steps=3)]) as sess:
            assert isinstance(sess.raw_session(), tf.Session)
            n = 0
            while not sess.should_stop():
                sess.run(train, dict(zip((x, y), _batch(np.random.default_rng(1)))))
                n += 1
            assert n == 3
        with pytest.raises(RuntimeError, match="should_stop"):
            sess.run(train)


def test_logging_and_nan_hooks(caplog):
    with tf.Graph().as_default():
        gs = tf.train.get_or_create_global_step()
        v = tf.placeholder(tf.float32, [])
        inc = gs.assign_add(1)
        log = tf.train.LoggingTensorHook({"value": v}, every_n_iter=2)
        nan_stop = tf.train.NanTensorHook(v, fail_on_nan_loss=False)
        with caplog.at_level(logging.INFO, logger="mylib"):
            with tf.train.MonitoredSession(hooks=[log, nan_stop]) as sess:
                for val in (1.0, 2.0, 3.0):
                    sess.run(inc, {v: val})
                assert not sess.should_stop()
                sess.run(inc, {v: float("nan")})
                assert sess.should_stop()
        msgs = [r.getMessage() for r in caplog.records if "value =" in r.getMessage()]
        assert [m.split(" (")[0] for m in msgs] == ["value = 1.0", "value = 3.0"]
        caplog.clear()
        fmt = tf.train.LoggingTensorHook({"value": v}, every_n_iter=3,
                                         formatter=lambda d: f"v is {d['value']:.1f}")
        with caplog.at_level(logging.INFO, logger="mylib"):
            with tf.train.MonitoredSession(hooks=[fmt]) as sess:
                for val in range(7):
                    sess.run(inc, {v: float(val)})
        assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("v is")] \
            == ["v is 0.0", "v is 3.0", "v is 6.0"]
        fail = tf.train.NanTensorHook(v)
        with pytest.raises(tf.train.NanLossDuringTrainingError):
            with tf.train.MonitoredSession(hooks=[fail]) as sess:
                sess.run(inc, {v: float("nan")})


def test_checkpoint_hook_listener_and_errors(tmp_path):
    events = []

    class L(tf.train.CheckpointSaverListener):
        def after_save(self, session, step):
            events.append(step)
            return step >= 4  # asks to stop

    with tf.Graph().as_default():
        gs, x, y, w, loss, train = _model()
        hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=2, listeners=[L()])
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            n = 0
            while not sess.should_stop():
                sess.run(train, dict(zip((x, y), _batch(np.random.default_rng(2)))))
                n += 1
        assert events[0] == 0 and 4 in events and n == 4
        assert len(glob.glob(str(tmp_path / "model.ckpt-4.*"))) == 2  # .mylib and .meta
        with pytest.raises(ValueError, match="exactly one"):
            tf.train.CheckpointSaverHook(str(tmp_path))
        with pytest.raises(ValueError, match="One of num_steps"):
            tf.train.StopAtStepHook()
        with pytest.raises(ValueError, match="scaffold or summary_op"):
            tf.train.SummarySaverHook(save_steps=1)
    with tf.Graph().as_default():
        tf.constant(1.0)
        with pytest.raises(RuntimeError, match="Global step should be created"):
            tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(num_steps=1)])


def test_feed_conflict_and_worker_creator_timeout():
    with tf.Graph().as_default():
        v = tf.placeholder(tf.float32, [])
        out = v * 2.0
        hook = tf.train.FeedFnHook(lambda: {v: 1.0})
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            assert sess.run(out) == 2.0
            with pytest.raises(RuntimeError, match="fed by two"):
                sess.run(out, {v: 3.0})
    with tf.Graph().as_default():
        tf.Variable(1.0, name="never_initialized")
        creator = tf.train.WorkerSessionCreator(max_wait_secs=0)
        with pytest.raises(errors.DeadlineExceededError, match="never_initialized"):
            tf.train.MonitoredSession(session_creator=creator)


def test_scaffold_init_fn_and_recovery(tmp_path):
    with tf.Graph().as_default():
        w = tf.Variable(0.0, name="w")
        seen = []
        scaffold = tf.train.Scaffold(init_fn=lambda sc, s: seen.append(s.run(w)))
        fail = {"left": 1}

        def flaky(a):
            if fail["left"]:
                fail["left"] -= 1
                raise errors.AbortedError("preempted")
            return a

        out = tf.py_func(flaky, [w.value() + 1.0], tf.float32)
        with tf.train.MonitoredSession(
                session_creator=tf.train.ChiefSessionCreator(scaffold=scaffold)) as sess:
            assert sess.run(out) == 1.0  # recovered: a new session was created
        assert seen == [0.0, 0.0]


def test_run_step_fn_and_scaffold_copy():
    with tf.Graph().as_default():
        gs, x, y, w, loss, train = _model()
        base = tf.train.Scaffold(init_fn=lambda sc, s: None)
        scaffold = tf.train.Scaffold(copy_from_scaffold=base)
        with pytest.raises(TypeError, match="Scaffold"):
            tf.train.Scaffold(copy_from_scaffold=object())
        creator = tf.train.ChiefSessionCreator(scaffold=scaffold)
        with tf.train.MonitoredSession(session_creator=creator,
                                       hooks=[tf.train.StopAtStepHook(last_step=2)]) as sess:
            feed = dict(zip((x, y), _batch(np.random.default_rng(3))))

            def step_fn(ctx):
                assert ctx.session.run(gs) in (0, 1)
                return ctx.run_with_hooks(train, feed)

            while not sess.should_stop():
                sess.run_step_fn(step_fn)
            assert sess._tf_sess().run(gs) == 2
            sess.run_step_fn(lambda ctx: ctx.request_stop())
            assert sess.should_stop()
        assert scaffold.init_op is not None and scaffold.saver is not None
