"""fit's automatic grouping of steps (``compile(steps_per_execution=None)``): the k-step
loop compiles on a background thread during the first epoch and runs the later ones,
with the results of one step per call."""

import threading

import jax
import jax.monitoring
import numpy as np
import pytest

import mylib as ml
from mylib.models import training

rng = np.random.RandomState(0)
# 600 samples in batches of 32: 18 full batches an epoch (two groups of 9) and a short
# one of 24.
X = rng.rand(600, 6).astype(np.float32)
Y = (X[:, 0] + X[:, 1] > 1).astype(np.int32)


@pytest.fixture
def any_length(monkeypatch):
    """Grouping for fits of any length (the default wants 8192 grouped steps)."""
    monkeypatch.setattr(training, "_AUTO_LOOP_MIN_STEPS", 0)


def _model(spe, dropout=False, weights=None):
    with ml.Graph().as_default():
        inp = ml.layers.Input(shape=(6,))
        h = ml.layers.Dense(16, "relu")(inp)
        if dropout:
            h = ml.layers.Dropout(0.3, seed=5)(h)
        m = ml.Model(inp, ml.layers.Dense(2, activation="softmax")(h))
        kw = {} if spe is None else {"steps_per_execution": spe}
        m.compile(ml.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                  metrics=["accuracy"], **kw)
        if weights is not None:
            m.set_weights(weights)
    return m


def _fit(m, **kw):
    np.random.seed(3)  # the same shuffles for every variant
    return m.fit(X, Y, **dict(dict(epochs=3, batch_size=32, verbose=0), **kw))


def _loops(m):
    return [p.loop for p in m.session._plans.values() if callable(p.loop)]


@pytest.mark.parametrize("dropout", [False, True], ids=["mlp", "dropout"])
def test_grouped_epochs_train_as_single_steps(any_length, dropout):
    w0 = _model(1, dropout).get_weights()
    ref = _model(1, dropout, w0)  # explicitly one step per call: never grouped
    h_ref = _fit(ref)
    assert _loops(ref) == []
    m = _model(None, dropout, w0)
    h = _fit(m)
    assert len(_loops(m)) == 1  # epochs 2 and 3 ran through the loop
    for a, b in zip(m.get_weights(), ref.get_weights()):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    for key in ("loss", "accuracy"):
        np.testing.assert_allclose(h.history[key], h_ref.history[key], rtol=1e-6)
    assert int(m.optimizer.iterations.numpy()) == 3 * 19


def _spy_loop(m):
    """Fits one epoch (which builds the step's callables but never groups), then
    records the number of steps of each later call of the k-step loop."""
    _fit(m, epochs=1)
    key = next(k for k in m._fns if isinstance(k, tuple) and k[-1] == "loop")
    loop, calls = m._fns[key], []

    def spy(*stacked):
        calls.append(int(np.shape(stacked[0])[0]))
        return loop(*stacked)

    for attr in ("precompile", "step_effects", "steps_are_pure"):
        setattr(spy, attr, getattr(loop, attr))
    m._fns[key] = spy
    return calls


def test_the_loop_runs_groups_of_equal_size(any_length):
    m = _model(None)
    calls = _spy_loop(m)
    _fit(m, epochs=3)
    # 18 full batches: two groups of 9 in each epoch after the first; the short
    # batch, one call of the single step.
    assert calls == [9, 9, 9, 9]


def test_per_batch_callbacks_see_every_step(any_length):
    seen = []

    class Batches(ml.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(batch)

    m = _model(None)
    _fit(m, callbacks=[Batches()])
    assert _loops(m) == []
    assert seen == list(range(19)) * 3


def test_progress_bar_keeps_grouping(any_length, capsys):
    m = _model(None)
    h = _fit(m, verbose=1)
    assert len(_loops(m)) == 1
    assert len(h.history["loss"]) == 3
    assert "loss" in capsys.readouterr().out


def test_short_fits_and_explicit_steps_are_not_grouped():
    m = _model(None)
    _fit(m)  # 2 x 18 grouped steps: far below what pays back a compile
    assert _loops(m) == []


def test_large_steps_are_not_grouped(any_length, monkeypatch):
    monkeypatch.setattr(training, "_AUTO_LOOP_FLOPS", {"cpu": 10.0})
    monkeypatch.setattr(training, "_AUTO_LOOP_FLOPS_OTHER", 10.0)
    m = _model(None)
    calls = _spy_loop(m)
    _fit(m)
    assert calls == []


def test_precompiled_loop_runs_without_compiling():
    """`precompile` fills the cache the loop's call then hits: the call after `wait`
    compiles nothing on the calling thread."""
    with ml.Graph().as_default():
        x = ml.placeholder(ml.float32, [4, 3])
        v = ml.Variable(np.ones((3, 2), np.float32))
        y = ml.reduce_sum(ml.matmul(x, v))
        train = v.assign_sub(0.01 * ml.gradients(y, [v])[0])
        sess = ml.Session()
        sess.run(v.initializer)
        loop = sess.make_device_loop_callable([train, y], [x])
        xs = np.random.RandomState(1).rand(5, 4, 3).astype(np.float32)
        handle = loop.precompile(5, [xs[0]])
        assert handle is not None and handle.wait(60)
        compiles = []
        main = threading.get_ident()

        def listener(event, duration, **kw):
            if event == "/jax/core/compile/backend_compile_duration" and \
                    threading.get_ident() == main:
                compiles.append(duration)

        jax.monitoring.register_event_duration_secs_listener(listener)
        try:
            _, last = loop(xs)
        finally:
            jax.monitoring.unregister_event_duration_listener(listener)
        assert compiles == []
        # The five steps against numpy.
        w = np.ones((3, 2), np.float32)
        for xb in xs:
            want_y = (xb @ w).sum()
            w = w - 0.01 * np.repeat(xb.sum(0)[:, None], 2, axis=1)
        np.testing.assert_allclose(sess.run(v), w, rtol=1e-5)
        np.testing.assert_allclose(last, want_y, rtol=1e-5)


def test_lambda_callback_batch_hooks_run_and_see_every_step(any_length):
    seen = []
    m = _model(None)
    _fit(m, callbacks=[ml.callbacks.LambdaCallback(
        on_train_batch_end=lambda b, logs: seen.append(b),
        on_epoch_end=lambda e, logs: seen.append(("epoch", e)))])
    assert _loops(m) == []
    assert seen == (list(range(19)) + [("epoch", 0)]) + (list(range(19)) + [("epoch", 1)]) + \
        (list(range(19)) + [("epoch", 2)])


def test_stop_training_in_on_epoch_begin_runs_one_step(any_length):
    """As without grouping (and in Keras): the epoch's first step runs, then fit
    stops."""
    class StopAt(ml.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 2:
                self.model.stop_training = True

    w0 = _model(1).get_weights()
    got = []
    for spe in (1, None):
        m = _model(spe, weights=w0)
        h = _fit(m, epochs=4, callbacks=[StopAt()])
        got.append((int(m.optimizer.iterations.numpy()), h.history["loss"]))
    assert got[0][0] == got[1][0] == 2 * 19 + 1
    np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-6)


_EXIT_SCRIPT = """
import numpy as np
import mylib as ml
with ml.Graph().as_default():
    x = ml.placeholder(ml.float32, [64, 256])
    v = ml.Variable(np.ones((256, 256), np.float32))
    h = x
    for _ in range(20):
        h = ml.tanh(ml.matmul(h, v))
    train = v.assign_sub(0.01 * ml.gradients(ml.reduce_sum(h), [v])[0])
    sess = ml.Session()
    sess.run(v.initializer)
    loop = sess.make_device_loop_callable([train], [x])
    handle = loop.precompile(8, [np.zeros((64, 256), np.float32)])
    print("compiling", handle is not None and not handle.ready(), flush=True)
raise SystemExit(3)  # leaves while the loop may still compile
"""


def test_exiting_while_a_loop_compiles_exits_cleanly(tmp_path):
    """The interpreter waits for the compile thread (no abort in XLA's teardown)."""
    import subprocess
    import sys

    script = tmp_path / "exit_during_compile.py"
    script.write_text(_EXIT_SCRIPT)
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 3, res.stderr[-2000:]
    assert "compiling" in res.stdout
