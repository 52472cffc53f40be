"""Random ops: TF1 seed semantics, determinism across fresh sessions, new values per
run, distribution statistics."""

import numpy as np
import pytest

import mylib as ml


def _build(graph_seed=None, op_seed=None):
    g = ml.Graph()
    with g.as_default():
        if graph_seed is not None:
            ml.set_random_seed(graph_seed)
        ops = {"normal": ml.random.normal([4000], mean=1.0, stddev=2.0, seed=op_seed),
               "uniform": ml.random.uniform([4000], -1.0, 3.0, seed=op_seed),
               "trunc": ml.random.truncated_normal([4000], stddev=0.5, seed=op_seed),
               "int": ml.random_uniform([4000], 0, 10, dtype=ml.int32, seed=op_seed)}
    return g, ops


def _two_runs(g, ops):
    with ml.Session(graph=g) as s:
        return s.run(ops), s.run(ops)


def test_same_seed_fresh_sessions_identical_and_runs_differ():
    for gs, os_ in ((1, None), (None, 7), (5, 9)):
        g, ops = _build(gs, os_)
        a1, a2 = _two_runs(g, ops)
        b1, b2 = _two_runs(g, ops)
        g2, ops2 = _build(gs, os_)  # a fresh graph with the same seeds replays too
        c1, _ = _two_runs(g2, ops2)
        for k in ops:
            np.testing.assert_array_equal(a1[k], b1[k])
            np.testing.assert_array_equal(a2[k], b2[k])
            np.testing.assert_array_equal(a1[k], c1[k])
            assert not np.array_equal(a1[k], a2[k]), k
        # distinct ops in one graph draw different streams
        assert not np.allclose(a1["normal"][:100], a1["trunc"][:100])


def test_unseeded_sessions_differ():
    g, ops = _build()
    a, _ = _two_runs(g, ops)
    b, _ = _two_runs(g, ops)
    assert not np.array_equal(a["normal"], b["normal"])


def test_seed_attrs_follow_tf_get_seed():
    g = ml.Graph()
    with g.as_default():
        assert ml.random.get_seed(None) == (None, None)
        assert ml.random.get_seed(3) == (87654321, 3)
        ml.set_random_seed(11)
        s1, s2 = ml.random.get_seed(None), ml.random.get_seed(None)
        assert s1[0] == 11 and s1[1] != s2[1]
        assert ml.random.get_seed(4) == (11, 4)
        ml.set_random_seed(0)
        assert ml.random.get_seed(0) == (0, 2 ** 31 - 1)


def test_distribution_statistics_and_shapes():
    g, ops = _build(graph_seed=3)
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, 3])
        dyn = ml.random_normal(ml.shape(x), dtype=ml.float64)
        assert dyn.shape.as_list() == [None, 3] and dyn.dtype == ml.float64
        shuf = ml.random.shuffle(ml.range(10))
        cat = ml.random.categorical(ml.log(ml.constant([[0.1, 0.9], [1.0, 0.0]])), 500)
    with ml.Session(graph=g) as s:
        v, d, sh, c = s.run([ops, dyn, shuf, cat], {x: np.zeros((5, 3))})
    assert abs(v["normal"].mean() - 1) < 0.1 and abs(v["normal"].std() - 2) < 0.1
    assert v["uniform"].min() >= -1 and v["uniform"].max() < 3
    assert abs(v["uniform"].mean() - 1) < 0.1
    assert np.all(np.abs(v["trunc"]) <= 1.0) and 0.3 < v["trunc"].std() < 0.5
    assert v["int"].dtype == np.int32 and set(np.unique(v["int"])) == set(range(10))
    assert d.shape == (5, 3) and sorted(sh) == list(range(10))
    assert c.shape == (2, 500) and abs(c[0].mean() - 0.9) < 0.06 and np.all(c[1] == 0)


def test_bad_arguments():
    g = ml.Graph()
    with g.as_default():
        with pytest.raises(ValueError, match="maxval"):
            ml.random_uniform([2], dtype=ml.int32)
        with pytest.raises(ValueError, match="floating"):
            ml.random_normal([2], dtype=ml.int32)
