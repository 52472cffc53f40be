"""compile(steps_per_execution=k): k training steps per call as one compiled loop."""

import re

import jax
import jax.extend.core as jex
import numpy as np
import pytest

import mylib as ml

rng = np.random.RandomState(0)
# 300 samples in batches of 32: 10 steps an epoch, the last one short (12 samples).
X = rng.rand(300, 6).astype(np.float32)
Y = (X[:, 0] + X[:, 1] > 1).astype(np.int32)


def _model(k, dropout=False, weights=None):
    """A small MLP (Adam) in a graph of its own; `weights` makes every variant start
    from the same values."""
    with ml.Graph().as_default():
        inp = ml.layers.Input(shape=(6,))
        h = ml.layers.Dense(16, "relu")(inp)
        if dropout:
            h = ml.layers.Dropout(0.3, seed=5)(h)
        m = ml.Model(inp, ml.layers.Dense(2, activation="softmax")(h))
        m.compile(ml.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                  metrics=["accuracy"], steps_per_execution=k)
        if weights is not None:
            m.set_weights(weights)
    return m


def _fit(m, **kw):
    np.random.seed(3)  # the same shuffles for every variant
    kw = dict(dict(epochs=2, batch_size=32, verbose=0), **kw)
    return m.fit(X, Y, **kw)


def _loops(m):
    """The compiled k-step loops of the model's session plans."""
    return [p.loop for p in m.session._plans.values() if callable(p.loop)]


@pytest.mark.parametrize("dropout", [False, True], ids=["mlp", "dropout"])
def test_same_weights_as_one_step_per_call(dropout):
    w0 = _model(1, dropout).get_weights()
    ref = _model(1, dropout, w0)
    _fit(ref)
    want = ref.get_weights()
    for k in (4, 7):
        m = _model(k, dropout, w0)
        _fit(m)
        assert len(_loops(m)) == 1  # the steps ran in the loop, not one by one
        # With Dropout, a mask drawn once and reused by the k steps would not match.
        for a, b in zip(m.get_weights(), want):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


_DET_SCRIPT = """
import sys, numpy as np
import mylib as ml
ml.config.enable_op_determinism()
x = np.random.RandomState(0).rand(300, 6).astype(np.float32)
y = (x[:, 0] > 0.5).astype(np.int32)
out = {}
for k in (1, 4, 7):
    ml.utils.set_random_seed(1234)  # the same initial weights, shuffles, session seed
    with ml.Graph().as_default():
        inp = ml.layers.Input(shape=(6,))
        h = ml.layers.Dropout(0.3)(ml.layers.Dense(16, "relu")(inp))  # no op seed
        m = ml.Model(inp, ml.layers.Dense(2, activation="softmax")(h))
        m.compile("adam", "sparse_categorical_crossentropy", steps_per_execution=k)
        m.fit(x, y, epochs=2, batch_size=32, verbose=0)
        out.update({f"k{k}_{i}": w for i, w in enumerate(m.get_weights())})
np.savez(sys.argv[1], **out)
"""


def test_bit_identical_under_op_determinism(tmp_path):
    """Unseeded Dropout (the session's seed base) under `enable_op_determinism`: the
    fused steps give the weights of single steps bit for bit (a subprocess keeps the
    global switch out of the other tests)."""
    import subprocess
    import sys

    script, f = tmp_path / "det.py", tmp_path / "w.npz"
    script.write_text(_DET_SCRIPT)
    subprocess.run([sys.executable, str(script), str(f)], check=True, timeout=300)
    w = np.load(f)
    for k in (4, 7):
        for i in range(4):
            assert w[f"k{k}_{i}"].tobytes() == w[f"k1_{i}"].tobytes(), (k, i)


def test_history_and_validation_equal_to_one_step_per_call():
    w0 = _model(1).get_weights()
    hs = []
    for k in (1, 4):
        m = _model(k, weights=w0)
        h = _fit(m, epochs=3, validation_data=(X[:100], Y[:100]))
        ev = m.evaluate(X, Y, batch_size=16, verbose=0, return_dict=True)
        hs.append((h.history, ev))
    (h1, e1), (h4, e4) = hs
    assert h1.keys() == h4.keys() == {"loss", "accuracy", "val_loss", "val_accuracy"}
    for key in h1:
        np.testing.assert_allclose(h4[key], h1[key], rtol=1e-6)
    for key in e1:
        np.testing.assert_allclose(e4[key], e1[key], rtol=1e-6)


class _Hooks(ml.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.begin, self.end, self.test_end = [], [], []

    def on_train_batch_begin(self, batch, logs=None):
        self.begin.append(batch)

    def on_train_batch_end(self, batch, logs=None):
        self.end.append((batch, float(np.asarray(logs["loss"]))))

    def on_test_batch_end(self, batch, logs=None):
        self.test_end.append(batch)


@pytest.mark.parametrize("k", [1, 4, 16])
def test_batch_hooks_once_per_execution(k):
    cb = _Hooks()
    m = _model(k)
    _fit(m, epochs=2, callbacks=[cb], validation_data=(X[:100], Y[:100]))
    steps = 10
    execs = -(-steps // k)
    firsts = list(range(0, steps, k))
    lasts = [min(f + k, steps) - 1 for f in firsts]
    assert cb.begin == firsts * 2
    assert [b for b, _ in cb.end] == lasts * 2
    assert len(cb.end) == 2 * execs
    # Validation: 100 samples in batches of 32 -> 4 steps.
    assert cb.test_end == [min(f + k, 4) - 1 for f in range(0, 4, k)] * 2
    # The logs of an execution are those after its last batch: they end the epoch.
    assert cb.end[execs - 1][1] == pytest.approx(m.history.history["loss"][0], rel=1e-6)


def test_stop_training_after_an_execution():
    class _Stop(ml.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            self.model.stop_training = True

    w0 = _model(1).get_weights()
    m = _model(4, weights=w0)
    _fit(m, epochs=3, callbacks=[_Stop()], shuffle=False)
    ref = _model(1, weights=w0)
    _fit(ref, epochs=1, steps_per_epoch=4, shuffle=False)
    assert len(m.history.history["loss"]) == 1  # stopped after the first execution
    for a, b in zip(m.get_weights(), ref.get_weights()):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)  # ... of 4 steps


def _n_eqns(jaxpr):
    """Equations of a jaxpr, those of its sub-jaxprs (the scan body) included."""
    n = 0
    for eqn in jaxpr.eqns:
        n += 1
        for p in eqn.params.values():
            for sub in (p if isinstance(p, (tuple, list)) else (p,)):
                if isinstance(sub, jex.ClosedJaxpr):
                    n += _n_eqns(sub.jaxpr)
                elif isinstance(sub, jex.Jaxpr):
                    n += _n_eqns(sub)
    return n


def test_program_size_does_not_grow_with_k(jax_x64):
    m = _model(8, dropout=True)
    _fit(m, epochs=1)
    (plan,) = [p for p in m.session._plans.values() if callable(p.loop)]
    store = m.session._store
    rw = tuple(store[key] for key in plan.rw_keys)
    ro = tuple(store[key] for key in plan.ro_keys)
    sizes = []
    for k in (8, 64):
        feeds = (np.zeros((k, 32, 6), np.float32), np.zeros((k, 32), np.int32))
        counts = np.zeros((k, len(plan.rng_ops)), np.uint32)
        jaxpr = jax.make_jaxpr(lambda *a, k=k: plan.loop(*a, k=k))(rw, ro, feeds, counts)
        hlo = plan.loop.lower(rw, ro, feeds, counts, k=k).as_text()
        assert "while" in hlo  # one loop, not k unrolled steps
        sizes.append((_n_eqns(jaxpr.jaxpr), len(re.sub(r"\d+", "", hlo))))
    assert sizes[0] == sizes[1], sizes
    assert sizes[0][0] > 20  # the step's equations are in there


def test_run_eagerly_ignores_steps_per_execution():
    w0 = _model(1).get_weights()
    m = _model(4, weights=w0)
    m.compile(ml.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
              run_eagerly=True, steps_per_execution=4)
    cb = _Hooks()
    _fit(m, epochs=1, callbacks=[cb])
    assert cb.begin == list(range(10)) and not _loops(m)


def test_random_draws_match_separate_runs():
    """Session level: a k-step loop of a random op draws what k runs draw, and the
    session's run counts advance by k."""
    with ml.Graph().as_default() as g:
        x = ml.placeholder("float32", [3])
        acc = ml.Variable(np.zeros(3, np.float32), name="acc")
        noise = ml.random_uniform([3])
        step = acc.assign_add(x + noise)
        with ml.Session(graph=g) as a, ml.Session(graph=g) as b:
            b.variable_store.set_rng_state(a.variable_store.rng_state())
            for s in (a, b):
                s.run(ml.global_variables_initializer())
            feeds = np.arange(15, dtype=np.float32).reshape(5, 3)
            one = a.make_device_callable([step, noise], [x])
            singles = [np.asarray(one(f)[1]) for f in feeds]
            loop = b.make_device_loop_callable([step, noise], [x])
            last = loop(feeds)
            assert np.asarray(last[1]).tobytes() == singles[-1].tobytes()
            assert np.asarray(b.run(acc)).tobytes() == np.asarray(a.run(acc)).tobytes()
            assert a.variable_store.rng_state() == b.variable_store.rng_state()
            assert any(callable(p.loop) for p in b._plans.values())


def test_fallback_when_the_step_cannot_loop():
    """A step with a host op (py_func) runs k single steps: same values."""
    with ml.Graph().as_default() as g:
        x = ml.placeholder("float32", [2])
        v = ml.Variable(np.zeros(2, np.float32), name="v")
        y = ml.py_func(lambda a: a * 2, [x], "float32")
        y.set_shape([2])
        step = v.assign_add(y)
        with ml.Session(graph=g) as sess:
            sess.run(ml.global_variables_initializer())
            loop = sess.make_device_loop_callable([step], [x])
            out = loop(np.ones((3, 2), np.float32))
            np.testing.assert_array_equal(np.asarray(out[0]), [6, 6])
            assert not any(callable(p.loop) for p in sess._plans.values())


def test_progress_bar_counts_every_batch(capsys):
    m = _model(4)
    _fit(m, epochs=1, verbose=1)
    out = capsys.readouterr().out
    assert "10/10" in out


def test_grouping_of_batches_into_executions():
    from mylib.models.data_adapter import executions as _executions

    def batches(sizes):
        return enumerate([np.zeros((n, 2)), np.zeros(n)] for n in sizes)

    def plan(sizes, k):
        return [(f, l, [(s, b[0].shape) for s, b in calls])
                for f, l, calls in _executions(batches(sizes), k)]

    # 7 full batches and a short one, k = 3: two loops of 3, then the tail's full
    # batch alone (a run of one is no loop) and the short batch alone.
    assert plan([4] * 7 + [2], 3) == [
        (0, 2, [(True, (3, 4, 2))]), (3, 5, [(True, (3, 4, 2))]),
        (6, 7, [(False, (4, 2)), (False, (2, 2))])]
    # The tail's same-shape run is one loop of its own length.
    assert plan([4] * 6 + [2], 4) == [
        (0, 3, [(True, (4, 4, 2))]), (4, 6, [(True, (2, 4, 2)), (False, (2, 2))])]
    # A shape change inside a group (not at the end): batch by batch.
    assert plan([4, 5, 5, 5, 5], 2) == [
        (0, 1, [(False, (4, 2)), (False, (5, 2))]), (2, 3, [(True, (2, 5, 2))]),
        (4, 4, [(False, (5, 2))])]
    assert plan([4, 4], 1) == [(0, 0, [(False, (4, 2))]), (1, 1, [(False, (4, 2))])]


@pytest.mark.filterwarnings("ignore:Some donated buffers")
def test_fallback_when_a_variable_changes_shape():
    """A variable that grows each step cannot be a loop carry: k single steps."""
    with ml.Graph().as_default() as g:
        x = ml.placeholder("float32", [1])
        v = ml.Variable(np.zeros(1, np.float32), validate_shape=False, name="grow")
        step = v.assign(ml.concat([v.read_value(), x], 0))
        with ml.Session(graph=g) as sess:
            sess.run(ml.global_variables_initializer())
            loop = sess.make_device_loop_callable([step], [x])
            loop(np.arange(1, 4, dtype=np.float32).reshape(3, 1))
            np.testing.assert_array_equal(sess.run(v), [0, 1, 2, 3])
            assert not any(callable(p.loop) for p in sess._plans.values())


def test_stacked_batches_of_one_array_are_a_view():
    """The k batches of one execution, consecutive slices of the epoch's (shuffled)
    array, are passed as a view of it (no copy); other parts are stacked."""
    from mylib.models.data_adapter import _stack

    base = np.arange(4 * 5 * 3, dtype=np.float32).reshape(20, 3)
    parts = [base[i:i + 5] for i in range(0, 20, 5)]
    got = _stack(parts)
    np.testing.assert_array_equal(got, np.stack(parts))
    assert np.shares_memory(got, base) and got.shape == (4, 5, 3)
    gaps = [base[i:i + 4] for i in range(0, 20, 5)]  # not consecutive
    got = _stack(gaps)
    np.testing.assert_array_equal(got, np.stack(gaps))
    assert not np.shares_memory(got, base)
    other = [np.ones((5, 3), np.float32), np.zeros((5, 3), np.float32)]  # no common base
    np.testing.assert_array_equal(_stack(other), np.stack(other))
    strided = [base[i:i + 5, :2] for i in range(0, 20, 5)]  # not C-contiguous
    np.testing.assert_array_equal(_stack(strided), np.stack(strided))


def test_stack_batches_equals_np_stack_and_views_consecutive_slices():
    """Consecutive batches cut by `array_feeds` stack as one reshaped slice of each
    array (no copy); any other group is stacked by copying, with the same values."""
    from mylib.models import data_adapter as da

    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 3, 2)).astype(np.float32)
    y = rng.integers(0, 4, 50).astype(np.int32)
    sw = rng.random(50).astype(np.float32)
    batches = list(da.array_feeds([x], [y], sw, 50, 8))
    assert [len(b[0]) for b in batches] == [8] * 6 + [2]
    for group in (batches[0:3], batches[2:6], batches[1:2]):
        got = da.stack_batches(group)
        want = [np.stack(parts) for parts in zip(*group)]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        assert all(np.shares_memory(g, a) for g, a in zip(got, (x, y, sw)))
    shuffled = [batches[3], batches[1]]  # not consecutive: copied, same values
    got = da.stack_batches(shuffled)
    for g, parts in zip(got, zip(*shuffled)):
        np.testing.assert_array_equal(g, np.stack(parts))
    other = [[a.copy() for a in b] for b in batches[:2]]  # plain lists
    for g, parts in zip(da.stack_batches(other), zip(*other)):
        np.testing.assert_array_equal(g, np.stack(parts))


@pytest.mark.parametrize("n,bs,k", [(300, 32, 4), (300, 32, 7), (320, 32, 5), (320, 32, 3),
                                    (20, 32, 4), (64, 32, 2), (96, 32, 2), (97, 32, 16)])
@pytest.mark.parametrize("split_last", [True, False])
def test_array_groups_are_the_executions_of_the_batches(n, bs, k, split_last):
    """`ArrayEpochs.grouped` (groups cut straight from the arrays) yields what
    `executions` makes of the same pass batch by batch."""
    from mylib.models import data_adapter as da

    r = np.random.RandomState(n + k)
    xs, ys = [r.rand(n, 3).astype(np.float32)], [r.randint(0, 5, n)]
    sw = r.rand(n).astype(np.float32)
    epochs = da.ArrayEpochs(xs, ys, sw, n, bs, False, True, None)
    want = list(da.executions(enumerate(epochs()), k, split_last))
    got = list(epochs.grouped(k, split_last))
    assert [(f, l, [s for s, _ in c]) for f, l, c in got] == \
        [(f, l, [s for s, _ in c]) for f, l, c in want]
    for (_, _, cg), (_, _, cw) in zip(got, want):
        for (_, bg), (_, bw) in zip(cg, cw):
            assert len(bg) == len(bw) == 3
            for a, b in zip(bg, bw):
                np.testing.assert_array_equal(a, b)
