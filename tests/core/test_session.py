"""Session semantics: pruning, feeds, nested fetches, plan caching, feed validation
before any state change, uninitialized reads, failed steps, initializers, control
dependencies, callables, default sessions, and independence of sessions."""

import collections
import inspect

import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml
from mylib import errors


def _line():
    return inspect.currentframe().f_back.f_lineno


@pytest.fixture
def g():
    graph = ml.Graph()
    with graph.as_default():
        yield graph


# ---------------------------------------------------------------- pruning and feeds
def test_unfed_placeholder_not_needed_is_fine(g):
    x = ml.placeholder(ml.float32, [3], name="x")
    unused = ml.placeholder(ml.float32, [3], name="unused")  # noqa: F841
    y = x * 2.0 + 1.0
    with ml.Session() as sess:
        out = sess.run(y, {x: [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(out, np.array([1, 2, 3], np.float32) * 2 + 1)


def test_feeding_an_intermediate_tensor_replaces_its_computation(g):
    x = ml.placeholder(ml.float32, [2], name="x")
    h = ml.exp(x)
    y = h * 3.0
    with ml.Session() as sess:
        # x is not fed and not needed: h's value comes from the feed.
        np.testing.assert_allclose(sess.run(y, {h: [1.0, 2.0]}), [3.0, 6.0])
        xv = np.array([0.5, -1.0], np.float32)
        np.testing.assert_allclose(sess.run(y, {x: xv}), np.exp(xv) * 3, rtol=1e-6)
        # Feeding a variable read replaces the read: no initialization needed.
        v = ml.Variable(np.ones(2, np.float32), name="v")
        r = v.value()
        np.testing.assert_allclose(sess.run(r * 2.0, {r: [4.0, 5.0]}), [8.0, 10.0])
        # A fed tensor can be fetched as-is.
        np.testing.assert_allclose(sess.run(h, {h: [7.0, 8.0]}), [7.0, 8.0])


def test_fed_placeholder_as_target_or_control_input(g):
    x = ml.placeholder(ml.float32, [2], name="x")
    with ml.control_dependencies([x]):
        c = ml.identity(ml.constant(3.0))
    with ml.Session() as sess:
        assert sess.run(x.op, {x: [1.0, 2.0]}) is None
        assert sess.run(c, {x: [1.0, 2.0]}) == 3.0
        with pytest.raises(errors.InvalidArgumentError, match="must feed"):
            sess.run(c)


def test_nested_fetches(g):
    x = ml.placeholder(ml.float32, [2], name="x")
    a, b = x + 1.0, x * 10.0
    noop = ml.no_op()
    NT = collections.namedtuple("NT", ["first", "second", "op"])
    xv = np.array([1.0, 2.0], np.float32)
    with ml.Session() as sess:
        out = sess.run({"a": a, "pair": (a, [b, noop]), "nt": NT(a, b, noop)}, {x: xv})
    assert isinstance(out, dict) and set(out) == {"a", "pair", "nt"}
    np.testing.assert_allclose(out["a"], xv + 1)
    assert isinstance(out["pair"], tuple) and isinstance(out["pair"][1], list)
    np.testing.assert_allclose(out["pair"][1][0], xv * 10)
    assert out["pair"][1][1] is None
    assert isinstance(out["nt"], NT) and out["nt"].op is None
    np.testing.assert_allclose(out["nt"].second, xv * 10)


def test_fetch_and_feed_by_name(g):
    x = ml.placeholder(ml.float32, [2], name="x")
    y = ml.multiply(x, 2.0, name="y")
    v = ml.Variable(np.zeros(2, np.float32), name="v")
    with ml.Session() as sess:
        np.testing.assert_allclose(sess.run("y:0", {"x:0": [1.0, 2.0]}), [2.0, 4.0])
        assert sess.run("v/Assign") is None  # an op name runs the op
        np.testing.assert_allclose(sess.run(v), [0.0, 0.0])
        with pytest.raises(ValueError, match="nope"):
            sess.run("nope:0")
        with pytest.raises(TypeError):
            sess.run(None)
        with pytest.raises(TypeError):
            sess.run(3.0)
    assert y.name == "y:0"


def test_zero_d_fetches_are_numpy_scalars(g):
    x = ml.placeholder(ml.float32, [3], name="x")
    s = ml.reduce_sum(x)
    with ml.Session() as sess:
        out = sess.run(s, {x: [1.0, 2.0, 3.5]})
        vec = sess.run(x, {x: [1.0, 2.0, 3.5]})
    assert isinstance(out, np.float32) and out == 6.5
    assert isinstance(vec, np.ndarray) and vec.dtype == np.float32


def test_indexed_slices_fetch(g):
    params = ml.constant(np.arange(12, dtype=np.float32).reshape(4, 3))
    values = ml.constant(np.ones((2, 3), np.float32))
    idx = ml.constant(np.array([0, 2], np.int64))
    shape = ml.constant(np.array([4, 3], np.int64))
    sl = ml.IndexedSlices(values, idx, shape)
    with ml.Session() as sess:
        out = sess.run(sl)
        dense = sess.run(ml.convert_to_tensor(sl) + params)
    np.testing.assert_array_equal(out.indices, [0, 2])
    np.testing.assert_array_equal(out.values, np.ones((2, 3)))
    np.testing.assert_array_equal(out.dense_shape, [4, 3])
    ref = np.arange(12, dtype=np.float32).reshape(4, 3)
    ref[[0, 2]] += 1
    np.testing.assert_array_equal(dense, ref)


# ---------------------------------------------------------------- plan caching
_TRACES = []


def _counting_kernel(x):
    _TRACES.append(1)  # runs only when jax traces the step
    return x * 2


CountingOp = ml.OpDef("TestSessionCountingOp", kernel=_counting_kernel)


def test_plan_is_cached_no_recompilation(g):
    x = ml.placeholder(ml.float32, [None], name="x")
    y = CountingOp(x) + 1.0
    with ml.Session() as sess:
        sess.run(y, {x: [1.0, 2.0]})
        n_traces, n_plans = len(_TRACES), len(sess._plans)
        for _ in range(5):
            np.testing.assert_allclose(sess.run(y, {x: [3.0, 4.0]}), [7.0, 9.0])
        assert len(_TRACES) == n_traces and len(sess._plans) == n_plans
        plan = next(iter(sess._plans.values()))
        assert plan.fn._cache_size() == 1
        # A new feed shape retraces (XLA needs static shapes): one plan per feed
        # shapes, each holding one program, so the plan LRU bounds the programs.
        sess.run(y, {x: [1.0, 2.0, 3.0]})
        assert len(sess._plans) == n_plans + 1 and plan.fn._cache_size() == 1
        # A callable shares the plan machinery and does not retrace either.
        f = sess.make_callable(y, [x])
        before = len(_TRACES)
        for _ in range(3):
            np.testing.assert_allclose(f(np.array([1.0, 1.0], np.float32)), [3.0, 3.0])
        assert len(_TRACES) - before <= 1


# ---------------------------------------------------------------- feed validation
def test_wrong_shape_feed_names_tensor_and_shapes(g):
    x = ml.placeholder(ml.float32, [None, 784], name="images")
    y = ml.reduce_sum(x)
    with ml.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as ei:
            sess.run(y, {x: np.zeros((2, 783), np.float32)})
        msg = str(ei.value)
        assert "images:0" in msg and "(?, 784)" in msg and "(2, 783)" in msg
        with pytest.raises(errors.InvalidArgumentError, match=r"\(784,\)"):
            sess.run(y, {x: np.zeros(784, np.float32)})


def test_feed_dtype_rules(g):
    i32 = ml.placeholder(ml.int32, [3], name="i32")
    f32 = ml.placeholder(ml.float32, [3], name="f32")
    with ml.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="i32:0.*lose information"):
            sess.run(i32, {i32: np.array([1.5, 2.0, 3.0])})
        with pytest.raises(errors.InvalidArgumentError, match="overflows int32"):
            sess.run(i32, {i32: np.array([2**40, 1, 2], np.int64)})
        with pytest.raises(errors.InvalidArgumentError, match="overflows int32"):
            sess.run(i32, {i32: np.array([-2**31 - 1, 1, 2], np.int64)})
        with pytest.raises(errors.InvalidArgumentError, match="string|str|dtype"):
            sess.run(f32, {f32: np.array(["a", "b", "c"])})
        out = sess.run(i32, {i32: np.array([1, 2, 2**31 - 1], np.int64)})
        assert out.dtype == np.int32 and out[2] == 2**31 - 1
        out = sess.run(f32, {f32: np.array([1, 2, 3], np.int64)})
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
        out = sess.run(f32, {f32: [1, 2, 3]})
        assert out.dtype == np.float32
        out = sess.run(f32, {f32: np.array([0.1, 0.2, 0.3])})  # float64 -> float32, as TF
        np.testing.assert_allclose(out, [0.1, 0.2, 0.3], rtol=1e-6)


def test_unfed_placeholder_message(g):
    line = _line() + 1
    x = ml.placeholder(ml.float32, [None, 784], name="pixels")
    y = ml.reduce_sum(x, name="total")
    with ml.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as ei:
            sess.run(y)
    msg = str(ei.value)
    assert "pixels" in msg and "(?, 784)" in msg and "float32" in msg
    assert f"{__file__}:{line}" in msg  # the placeholder's own line
    assert ei.value.op is x.op


def test_bad_feed_changes_no_variable(g):
    x = ml.placeholder(ml.float32, [2], name="x")
    a = ml.Variable(np.array([1.0, 2.0], np.float32), name="a")
    step = ml.group(a.assign_add([10.0, 10.0], read_value=False), ml.reduce_sum(x).op)
    with ml.Session() as sess:
        sess.run(a.initializer)
        with pytest.raises(errors.InvalidArgumentError):
            sess.run(step, {x: np.zeros(3, np.float32)})
        with pytest.raises(errors.InvalidArgumentError):
            sess.run(step)  # unfed placeholder
        with pytest.raises(errors.InvalidArgumentError):
            sess.run(step, {x: np.array([1.5, 2.5])[None]})
        np.testing.assert_array_equal(sess.run(a), [1.0, 2.0])
        sess.run(step, {x: [0.0, 0.0]})
        np.testing.assert_array_equal(sess.run(a), [11.0, 12.0])


# ---------------------------------------------------------------- uninitialized reads
def test_uninitialized_read_names_the_variable(g):
    v = ml.Variable(np.zeros(3, np.float32), name="weights")
    with ml.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError, match="weights"):
            sess.run(v)
        with pytest.raises(errors.FailedPreconditionError, match="weights"):
            sess.run(v * 2.0)


def test_failed_step_assigns_nothing(g):
    a = ml.Variable(np.float32(1.0), name="A")
    b = ml.Variable(np.float32(5.0), name="B")
    with ml.control_dependencies([a.assign(100.0, read_value=False)]):
        bad = ml.identity(b.value() + 1.0)
    with ml.Session() as sess:
        sess.run(a.initializer)
        with pytest.raises(errors.FailedPreconditionError, match="B"):
            sess.run(bad)
        assert sess.run(a) == 1.0
        sess.run(b.initializer)
        assert sess.run(bad) == 6.0
        assert sess.run(a) == 100.0


def test_report_uninitialized_variables(g):
    v1 = ml.Variable(1.0, name="v1")
    v2 = ml.Variable(2.0, name="v2")
    rep = ml.report_uninitialized_variables()
    with ml.Session() as sess:
        assert sorted(x.decode() for x in sess.run(rep)) == ["v1", "v2"]
        sess.run(v1.initializer)
        assert [x.decode() for x in sess.run(rep)] == ["v2"]
        assert sess.run(v1.is_initialized()) and not sess.run(v2.is_initialized())
        sess.run(ml.global_variables_initializer())
        assert len(sess.run(rep)) == 0


# ---------------------------------------------------------------- initializers
@pytest.mark.parametrize("reverse", [False, True])
def test_dependent_initializers(g, reverse):
    v1 = ml.Variable(np.array([1.0, 2.0], np.float32), name="v1")
    v2 = ml.Variable(v1 * 2.0, name="v2")
    v3 = ml.Variable(v1.initialized_value() + 10.0, name="v3")
    v4 = ml.Variable(lambda: v2.initialized_value() * v3.initialized_value(), name="v4")
    vs = [v1, v2, v3, v4]
    init = ml.variables_initializer(vs[::-1] if reverse else vs)
    for _ in range(3):  # every time, in fresh sessions and repeated runs
        with ml.Session() as sess:
            for _ in range(2):
                sess.run(init)
                o1, o2, o3, o4 = sess.run(vs)
                np.testing.assert_array_equal(o1, [1.0, 2.0])
                np.testing.assert_array_equal(o2, [2.0, 4.0])
                np.testing.assert_array_equal(o3, [11.0, 12.0])
                np.testing.assert_array_equal(o4, [22.0, 48.0])


def test_initialized_value_uses_current_value_when_initialized(g):
    v1 = ml.Variable(np.float32(1.0), name="v1")
    v2 = ml.Variable(v1.initialized_value() * 3.0, name="v2")
    with ml.Session() as sess:
        sess.run(v1.initializer)
        sess.run(v1.assign(5.0))
        sess.run(v2.initializer)
        assert sess.run(v2) == 15.0


# ---------------------------------------------------------------- control dependencies
def test_control_dependencies_order_reads_after_writes(g):
    v = ml.Variable(np.float32(0.0), name="v")
    assign = v.assign(7.0, read_value=False)
    with ml.control_dependencies([assign]):
        after = v.value() * 1.0
    inc = v.assign_add(1.0)  # returns the read after the add
    with ml.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(after) == 7.0
        assert [float(sess.run(inc)) for _ in range(3)] == [8.0, 9.0, 10.0]
        assert sess.run(v) == 10.0
        sess.run(v.assign_sub(4.0))
        assert sess.run(v.read_value()) == 6.0


def test_assign_add_steps_accumulate_vs_numpy(g):
    rng = np.random.default_rng(0)
    deltas = rng.standard_normal((20, 3)).astype(np.float32)
    d = ml.placeholder(ml.float32, [3], name="d")
    v = ml.Variable(np.zeros(3, np.float32), name="acc")
    step = v.assign_add(d, read_value=False)
    with ml.Session() as sess:
        sess.run(v.initializer)
        for row in deltas:
            sess.run(step, {d: row})
        np.testing.assert_allclose(sess.run(v), deltas.sum(0), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- callables, sessions
def test_make_callable_with_feed_list(g):
    x = ml.placeholder(ml.float32, [None], name="x")
    k = ml.placeholder(ml.float32, [], name="k")
    y = x * k + 1.0
    v = ml.Variable(np.float32(0.0), name="count")
    inc = v.assign_add(1.0, read_value=False)
    with ml.Session() as sess:
        sess.run(v.initializer)
        f = sess.make_callable([y, inc], feed_list=[x, k])
        for n in range(1, 4):
            out, none = f(np.arange(n, dtype=np.float32), 2.0)
            np.testing.assert_allclose(out, np.arange(n) * 2.0 + 1.0)
            assert none is None
        assert sess.run(v) == 3.0
        single = sess.make_callable(y, [x, k])
        np.testing.assert_allclose(single([1.0], 3.0), [4.0])
        with pytest.raises(TypeError, match="2 feed values"):
            single([1.0])
        with pytest.raises(errors.InvalidArgumentError):
            single(np.zeros((2, 2), np.float32), 1.0)
        by_name = sess.make_callable("x:0", ["x:0"])
        np.testing.assert_allclose(by_name([5.0]), [5.0])


def test_session_context_manager_default_session_and_close(g):
    x = ml.placeholder(ml.float32, [2], name="x")
    y = x + 1.0
    v = ml.Variable(np.float32(3.0), name="v")
    assert ml.get_default_session() is None
    with ml.Session() as sess:
        assert ml.get_default_session() is sess
        v.initializer.run()
        np.testing.assert_allclose(y.eval({x: [1.0, 2.0]}), [2.0, 3.0])
        assert v.eval() == 3.0
        v.load(4.0)
        assert v.eval() == 4.0
    assert ml.get_default_session() is None
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(y, {x: [1.0, 2.0]})
    with pytest.raises(ValueError, match="default session"):
        y.eval({x: [1.0, 2.0]})
    s2 = ml.Session()
    f = s2.make_callable(y, [x])
    s2.close()
    with pytest.raises(RuntimeError, match="closed"):
        f([1.0, 2.0])
    s3 = ml.Session()
    with s3.as_default():
        assert ml.get_default_session() is s3
    s3.close()


def test_two_sessions_hold_independent_values(g):
    v = ml.Variable(np.float32(1.0), name="v")
    inc = v.assign_add(1.0, read_value=False)
    s1, s2 = ml.Session(), ml.Session()
    s1.run(v.initializer)
    s2.run(v.initializer)
    for _ in range(3):
        s1.run(inc)
    assert s1.run(v) == 4.0 and s2.run(v) == 1.0
    s1.close()
    assert s2.run(v) == 1.0
    with pytest.raises(errors.FailedPreconditionError):
        ml.Session().run(v)
    s2.close()


def test_determinism_without_randomness(g):
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((8, 5)).astype(np.float32)
    w = ml.Variable(rng.standard_normal((5, 3)).astype(np.float32), name="w")
    x = ml.placeholder(ml.float32, [None, 5], name="x")
    y = ml.reduce_sum(ml.tanh(ml.matmul(x, w)), axis=1)
    outs = []
    for _ in range(2):
        with ml.Session() as sess:
            sess.run(w.initializer)
            outs.append([sess.run(y, {x: xv}) for _ in range(2)])
    ref = np.tanh(xv @ w.initial_value.op.attrs["value"]).sum(1)
    for o in (o for pair in outs for o in pair):
        np.testing.assert_array_equal(o, outs[0][0])
        np.testing.assert_allclose(o, ref, rtol=1e-5)


def test_fetched_value_survives_later_donating_steps(g):
    v = ml.Variable(np.zeros(1000, np.float32), name="big")
    inc = v.assign_add(np.ones(1000, np.float32))
    with ml.Session() as sess:
        sess.run(v.initializer)
        before = sess.run(v)
        after_inc = sess.run(inc)
        for _ in range(20):
            sess.run(inc)  # donates (frees) the variable's previous buffer
        np.testing.assert_array_equal(before, np.zeros(1000))
        np.testing.assert_array_equal(after_inc, np.ones(1000))
        np.testing.assert_array_equal(sess.run(v), np.full(1000, 21.0))


# ---------------------------------------------------------------- run-time errors
Boom = ml.OpDef("TestSessionBoom", kernel=lambda x: jnp.reshape(x, (7, 7)),
                shape_fn=lambda x: ml.TensorSpec(x.shape, x.dtype))


def test_runtime_error_names_op_and_user_line(g):
    x = ml.placeholder(ml.float32, [None], name="x")
    line = _line() + 1
    y = Boom(x, name="boom")
    with ml.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as ei:
            sess.run(y, {x: [1.0, 2.0]})
    msg = str(ei.value)
    assert "TestSessionBoom 'boom'" in msg
    assert f"{__file__}:{line}" in msg
    assert "(?,)" in msg  # the input's static shape, unknown dim as ?


def test_concurrent_steps_lose_no_update(g):
    import threading

    v = ml.Variable(np.float32(0.0), name="counter")
    inc = v.assign_add(1.0, read_value=False)
    x = ml.placeholder(ml.float32, [2], name="x")
    y = x * 2.0
    with ml.Session() as sess:
        sess.run(v.initializer)
        errs = []

        def work():
            try:
                for _ in range(50):
                    sess.run(inc)
                    np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2.0]}), [2.0, 4.0])
            except Exception as e:  # noqa: BLE001
                errs.append(e)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errs
        assert sess.run(v) == 200.0


TestRandom = ml.OpDef(
    "TestSessionRandom", stateful=True,
    lower=lambda ctx, op: __import__("jax").random.uniform(ctx.rng_key(op), (3,)),
    shape_fn=lambda **attrs: ml.TensorSpec([3], ml.float64))


def test_random_stream_advances_per_run_and_replays_per_session(g):
    r = TestRandom(seed=7, seed2=1)
    x = ml.placeholder(ml.float64, [3], name="x")
    y = r + x
    seqs = []
    for _ in range(2):
        with ml.Session() as sess:
            seqs.append([sess.run(y, {x: np.zeros(3)}) for _ in range(3)])
    for a, b in zip(*seqs):
        np.testing.assert_array_equal(a, b)  # a fresh session replays the sequence
    assert not np.array_equal(seqs[0][0], seqs[0][1])  # each run draws new values
    assert all(((0 <= v) & (v < 1)).all() for v in seqs[0])


def test_interactive_session_close_leaves_the_default_graph_and_session():
    # TensorFlow 1: an InteractiveSession installs its graph and itself as the defaults
    # and removes both on close, so tf.reset_default_graph() works afterwards.
    g = ml.Graph()
    with g.as_default():
        c = ml.constant(2.0)
    sess = ml.InteractiveSession(graph=g)
    assert ml.get_default_graph() is g and ml.get_default_session() is sess
    assert c.eval() == 2.0
    sess.close()
    sess.close()
    assert ml.get_default_graph() is not g and ml.get_default_session() is None
    ml.reset_default_graph()


def test_device_callable_fast_path_matches_numpy_and_keeps_the_guards(g):
    """The device callable's per-plan runner (fit's hot path): values against numpy
    across a change of batch shape, a 64-bit counter written from numpy (the runner
    widens it, as `_execute` does), a thread in 64-bit mode (general path, same
    values), and the uninitialized and closed-session errors."""
    x = ml.placeholder(ml.float32, [None, 3], name="x")
    w = ml.Variable(np.ones((3, 2), np.float32), name="w")
    steps = ml.Variable(np.int64(0), name="steps")
    loss = ml.reduce_mean(ml.square(ml.matmul(x, w)))
    (grad,) = ml.gradients(loss, [w])
    train = ml.group(w.assign_sub(0.1 * grad), steps.assign_add(np.int64(1)))
    rng = np.random.default_rng(0)
    with ml.Session() as sess:
        sess.run([w.initializer, steps.initializer])
        f = sess.make_device_callable([train, loss], [x])
        ref_w = np.ones((3, 2), np.float32)
        for i, n in enumerate([4, 4, 2, 4, 2]):
            xb = rng.standard_normal((n, 3)).astype(np.float32)
            if i == 3:  # a numpy value in the store: the 64-bit counter is widened
                sess.assign_variables({steps._key: np.int64(2**40)})
            if i == 4:
                import jax
                with jax.enable_x64(True):
                    none, out = f(xb)
            else:
                none, out = f(xb)
            h = xb @ ref_w
            np.testing.assert_allclose(np.asarray(out), np.mean(h ** 2), rtol=1e-5)
            ref_w = ref_w - 0.1 * (xb.T @ (2 * h / h.size))
            assert none is None
            np.testing.assert_allclose(sess.run(w), ref_w, rtol=1e-5, atol=1e-6)
        assert int(sess.run(steps)) == 2**40 + 2
        late = ml.Variable(np.float32(1.0), name="late")
        g2 = sess.make_device_callable([late.assign_add(1.0)], [])
        with pytest.raises(errors.FailedPreconditionError, match="late"):
            g2()
    for n in (2, 4):  # the last plan's runner, and a new plan's lookup
        with pytest.raises(RuntimeError, match="closed Session"):
            f(np.ones((n, 3), np.float32))
