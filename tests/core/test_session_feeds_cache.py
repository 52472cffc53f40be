"""Session: the bounded plan cache (`ConfigProto(plan_cache_size)`), feeding a variable
(TensorFlow 1's substitution for one step), and feeds refused with clear errors
(overflowing floats, a feed_dict that is not a dict, a tensor fed twice)."""

import numpy as np
import pytest

import mylib as ml
from mylib import errors


@pytest.fixture
def g():
    graph = ml.Graph()
    with graph.as_default():
        yield graph


# ---------------------------------------------------------------- plan cache (LRU)
def test_plan_cache_is_bounded_lru_and_results_stay_right(g):
    x = ml.placeholder(ml.float32, [None], name="x")
    ys = [x * float(k) + 1.0 for k in range(12)]
    with ml.Session(config=ml.ConfigProto(plan_cache_size=5)) as sess:
        assert sess.plan_cache_size == 5
        for rnd in range(2):  # the second round runs evicted signatures again
            for k, y in enumerate(ys):
                v = np.arange(3, dtype=np.float32) + rnd
                np.testing.assert_allclose(sess.run(y, {x: v}), v * k + 1.0)
                assert len(sess._plans) <= 5
        # New feed shapes are new plans (one compiled program each), bounded too.
        for n in range(1, 20):
            v = np.ones(n, np.float32)
            np.testing.assert_allclose(sess.run(ys[3], {x: v}), v * 3 + 1.0)
            assert len(sess._plans) <= 5
        assert all(p.fn._cache_size() == 1 for p in sess._plans.values())
        # Least recently used goes first: the plan just used survives the next ones.
        keep = ys[0]
        for k in range(1, 12):
            sess.run(keep, {x: np.ones(2, np.float32)})
            sess.run(ys[k], {x: np.ones(7, np.float32)})
            assert any(key[0] == (keep,) and key[2] == ((2,),) for key in sess._plans)


def test_plan_cache_default_and_bad_size(g):
    from mylib.runtime.session import DEFAULT_PLAN_CACHE_SIZE

    assert ml.Session().plan_cache_size == DEFAULT_PLAN_CACHE_SIZE == 64
    for bad in (0, -1, 2.5, "8", True):
        with pytest.raises(ValueError, match="plan_cache_size"):
            ml.ConfigProto(plan_cache_size=bad)


def test_callable_plans_leave_the_cache_with_the_callable(g):
    import gc

    x = ml.placeholder(ml.float32, [None])
    y = x * 2.0
    with ml.Session() as sess:
        f = sess.make_callable(y, [x])
        np.testing.assert_allclose(f(np.ones(3, np.float32)), [2.0, 2.0, 2.0])
        assert len(sess._plans) == 1
        del f
        gc.collect()
        assert len(sess._plans) == 0


# ---------------------------------------------------------------- feeding a variable
def _var_graph():
    x = ml.placeholder(ml.float32, [2], name="x")
    w = ml.Variable(np.array([1.0, 2.0], np.float32), name="w")
    y = x * w + ml.reduce_sum(w.value())  # two separate reads of w
    return x, w, y


def test_feeding_a_variable_substitutes_it_for_the_step(g):
    x, w, y = _var_graph()
    with ml.Session() as sess:
        sess.run(ml.global_variables_initializer())
        ones = np.ones(2, np.float32)
        np.testing.assert_allclose(sess.run(y, {x: ones}), [1 + 3, 2 + 3])
        # Both reads see the fed value; the stored value is untouched.
        np.testing.assert_allclose(sess.run(y, {w: np.zeros(2), x: ones}), [0.0, 0.0])
        w5 = np.array([5.0, 6.0], np.float32)
        np.testing.assert_allclose(sess.run(y, {w: w5, x: ones}), [5 + 11, 6 + 11])
        np.testing.assert_allclose(sess.run(w), [1.0, 2.0])
        np.testing.assert_allclose(sess.run(w, {w: w5}), w5)
        # The variable's read tensor (what `w` stands for as a key) and its name too.
        np.testing.assert_allclose(sess.run(y, {"w/Read/ReadVariableOp:0": w5, x: ones}),
                                   [16.0, 17.0])
        f = sess.make_callable(y, [x, w])
        np.testing.assert_allclose(f(ones, np.array([3.0, 3.0])), [9.0, 9.0])
        np.testing.assert_allclose(sess.run(w), [1.0, 2.0])
        # A wrongly shaped value is refused like any feed.
        with pytest.raises(errors.InvalidArgumentError, match="shape"):
            sess.run(y, {w: np.zeros(3), x: ones})


def test_feeding_a_variable_the_step_writes_is_refused_nothing_changes(g):
    x, w, y = _var_graph()
    with ml.Session() as sess:
        sess.run(ml.global_variables_initializer())
        with pytest.raises(errors.InvalidArgumentError, match="'w' is fed .* also written"):
            sess.run(w.assign_add([1.0, 1.0]), {w: np.zeros(2)})
        np.testing.assert_allclose(sess.run(w), [1.0, 2.0])


# ---------------------------------------------------------------- bad feeds
def test_float_feed_overflowing_the_dtype_is_refused(g):
    p = ml.placeholder(ml.float32, [None], name="p")
    h = ml.placeholder(ml.float16, [None], name="h")
    with ml.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="'p:0'.*1e\\+39 overflows float32"):
            sess.run(p * 2.0, {p: np.array([1.0, 1e39])})
        with pytest.raises(errors.InvalidArgumentError, match="overflows float16"):
            sess.run(h + 1.0, {h: np.array([70000], np.int64)})
        # inf and nan are values of both dtypes, and in-range values convert.
        out = sess.run(p * 1.0, {p: np.array([np.inf, np.nan, 3.0e38])})
        assert np.isinf(out[0]) and np.isnan(out[1]) and np.isclose(out[2], 3.0e38)


def test_feed_dict_must_be_a_dict(g):
    p = ml.placeholder(ml.float32, [None])
    with ml.Session() as sess:
        with pytest.raises(TypeError, match="`feed_dict` must be a dict.*Received: a list"):
            sess.run(p * 2.0, [(p, [1.0])])


def test_a_tensor_fed_twice_is_named(g):
    p = ml.placeholder(ml.float32, [None], name="p")
    with ml.Session() as sess:
        with pytest.raises(ValueError, match="'p:0' is fed more than once.*'p:0'"):
            sess.run(p * 2.0, {p: [1.0], "p:0": [2.0]})
        with pytest.raises(ValueError, match="'p:0' is fed more than once"):
            sess.make_callable(p * 2.0, [p, "p:0"])([1.0], [2.0])
