"""RunMetadata step stats, the Chrome-trace Timeline, and in-step checks
(`check_numerics`, `debugging.assert_*`) whose errors name the op and the user's line."""

import json
import os

import numpy as np
import pytest

import mylib as ml
from mylib import errors
from mylib.runtime.timeline import Timeline

FULL = ml.RunOptions(trace_level=ml.RunOptions.FULL_TRACE)
HERE = os.path.basename(__file__)


def _line_of(text):
    with open(__file__) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise AssertionError(text)


def test_step_stats_and_chrome_trace_with_host_op():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [2, 2])
        a = ml.matmul(x, x)
        b = ml.py_func(lambda v: v + 1.0, [a], ml.float32)
        b.set_shape([2, 2])
        c = ml.reduce_sum(b * 2.0)
    md = ml.RunMetadata()
    with ml.Session(graph=g) as s:
        out = s.run(c, {x: np.eye(2, dtype=np.float32)}, options=FULL, run_metadata=md)
    assert out == pytest.approx(2 * (2 + 4))
    kinds = [ev["kind"] for ev in md.step_stats]
    assert kinds == ["xla", "host", "xla"]
    starts = [ev["start_us"] for ev in md.step_stats]
    assert starts == sorted(starts)
    for ev in md.step_stats:
        assert ev["end_us"] >= ev["start_us"] >= 0
    assert md.step_stats[1]["ops"] == [b.op.name]
    assert a.op.name in md.step_stats[0]["ops"]

    trace = json.loads(Timeline(md.step_stats).generate_chrome_trace_format())
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == 3
    assert [e["args"]["kind"] for e in xs] == ["xla", "host", "xla"]
    assert [e["ts"] for e in xs] == sorted(e["ts"] for e in xs)
    assert all(e["dur"] >= 0 for e in xs)
    # Host and XLA segments are on different rows (pids), each named.
    assert xs[0]["pid"] != xs[1]["pid"] and xs[0]["pid"] == xs[2]["pid"]
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert "host" in names[xs[1]["pid"]]
    assert xs[1]["args"]["ops"] == [b.op.name]
    assert Timeline(md).generate_chrome_trace_format()  # RunMetadata accepted too


def test_single_cluster_step_is_traced():
    g = ml.Graph()
    with g.as_default():
        v = ml.Variable(1.0)
        inc = v.assign_add(1.0)
    md = ml.RunMetadata()
    with ml.Session(graph=g) as s:
        s.run(v.initializer)
        s.run(inc, options=FULL, run_metadata=md)
    assert len(md.step_stats) == 1 and md.step_stats[0]["kind"] == "xla"
    trace = json.loads(Timeline(md.step_stats).generate_chrome_trace_format())
    assert sum(e["ph"] == "X" for e in trace["traceEvents"]) == 1


def test_check_numerics_passes_and_fails_with_op_and_line():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None])
        y = ml.debugging.check_numerics(ml.log(x), "log of x")  # CHECK-LINE
        z = y * 2.0
    with ml.Session(graph=g) as s:
        np.testing.assert_allclose(s.run(z, {x: np.array([1.0, np.e], np.float32)}),
                                   [0.0, 2.0], rtol=1e-6)
        with pytest.raises(errors.InvalidArgumentError) as ei:
            s.run(z, {x: np.array([1.0, -1.0], np.float32)})
    msg = str(ei.value)
    assert "log of x" in msg and "NaN" in msg
    assert ei.value.op is y.op and y.op.name in msg
    assert f"{HERE}:{_line_of('# CHECK-LINE')}" in msg
    with ml.Graph().as_default():
        with pytest.raises(TypeError):
            ml.debugging.check_numerics(ml.constant(1), "int")


def test_check_numerics_gradient_passes_through():
    g = ml.Graph()
    with g.as_default():
        w = ml.Variable(np.array([1.0, 2.0], np.float32))
        loss = ml.reduce_sum(ml.check_numerics(w * w, "sq"))
        (gw,) = ml.gradients(loss, [w])
    with ml.Session(graph=g) as s:
        s.run(w.initializer)
        np.testing.assert_allclose(s.run(gw), [2.0, 4.0])


@pytest.mark.parametrize("make,good,bad,frag", [
    (lambda x: ml.debugging.assert_equal(x, 3.0, message="must be three"),
     [3.0, 3.0], [3.0, 4.0], "must be three"),
    (lambda x: ml.debugging.assert_less(x, 5.0), [1.0, 4.0], [1.0, 6.0], "x < y"),
    (lambda x: ml.debugging.assert_positive(x), [1.0, 2.0], [1.0, 0.0], "x > 0"),
    (lambda x: ml.debugging.assert_non_negative(x), [0.0, 2.0], [-1.0, 2.0], "x >= 0"),
])
def test_asserts(make, good, bad, frag):
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None])
        check = make(x)
        with ml.control_dependencies([check]):
            out = ml.identity(x)
    with ml.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(out, {x: np.array(good, np.float32)}), good)
        with pytest.raises(errors.InvalidArgumentError) as ei:
            s.run(out, {x: np.array(bad, np.float32)})
    msg = str(ei.value)
    assert "assertion failed" in msg and frag in msg and check.name in msg
    # The user's line: where the assert was made (inside the lambda above).
    assert f"{HERE}:{make.__code__.co_firstlineno}" in msg
    # The data shows the offending values.
    assert str(bad[1]) in msg


def test_assert_rank_static_and_dynamic():
    g = ml.Graph()
    with g.as_default():
        with pytest.raises(ValueError, match="must have rank 2"):
            ml.debugging.assert_rank(ml.constant([1.0, 2.0]), 2)
        ok = ml.debugging.assert_rank(ml.constant([[1.0]]), 2)
        x = ml.placeholder(ml.float32, None)
        dyn = ml.debugging.assert_rank(x, 1)
    with ml.Session(graph=g) as s:
        s.run(ok)
        s.run(dyn, {x: np.ones(3, np.float32)})
        with pytest.raises(errors.InvalidArgumentError, match="must have rank 1"):
            s.run(dyn, {x: np.ones((2, 2), np.float32)})
