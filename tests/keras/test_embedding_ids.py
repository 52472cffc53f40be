"""Ids outside [0, vocab) in gather, gather_nd, embedding_lookup and Embedding never
yield a real row: constant ids raise InvalidArgumentError naming the op, the id and the
range; run-time (fed) ids give NaN rows inside the compiled step."""

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L

T = np.arange(15, dtype=np.float32).reshape(5, 3)


def _run(fetch, feed=None, var=None):
    with ml.Session() as s:
        if var is not None:
            s.run(var.initializer)
        return s.run(fetch, feed)


@pytest.mark.parametrize("ids", [[0, 4, 2, 2], [[1, 3], [4, 0]]])
def test_in_range_ids_match_numpy(ids):
    v = ml.Variable(T)
    p = ml.placeholder(ml.int32, np.shape(ids))
    want = np.take(T, ids, axis=0)
    np.testing.assert_array_equal(_run(ml.gather(T, ids)), want)
    np.testing.assert_array_equal(_run(ml.gather(T, p), {p: ids}), want)
    np.testing.assert_array_equal(_run(ml.nn.embedding_lookup(v, ids), var=v), want)
    np.testing.assert_array_equal(_run(ml.nn.embedding_lookup(v, p), {p: ids}, var=v), want)
    np.testing.assert_array_equal(_run(ml.gather(T.T, p, axis=1), {p: ids}),
                                  np.take(T.T, ids, axis=1))


@pytest.mark.parametrize("bad", [-1, 5, 1000, -6])
def test_constant_out_of_range_ids_raise_naming_op_id_and_range(bad):
    v = ml.Variable(T)
    with pytest.raises(ml.errors.InvalidArgumentError,
                       match=rf"GatherV2.*indices\[1\] = {bad} is not in \[0, 5\)"):
        _run(ml.gather(T, [0, bad]))
    with pytest.raises(ml.errors.InvalidArgumentError,
                       match=rf"ResourceGather.*indices\[1\] = {bad} is not in \[0, 5\)"):
        _run(ml.nn.embedding_lookup(v, [2, bad]), var=v)
    with pytest.raises(ml.errors.InvalidArgumentError, match="GatherNd.*does not index"):
        _run(ml.gather_nd(T, [[0, 1], [bad, 0]]))


@pytest.mark.parametrize("bad", [-1, 5, -6, 2 ** 31 - 1])
def test_fed_out_of_range_ids_give_nan_rows(bad):
    v = ml.Variable(T)
    p = ml.placeholder(ml.int32, [3])
    ids = np.array([1, bad, 3], np.int32)
    for out in (_run(ml.gather(T, p), {p: ids}),
                _run(ml.nn.embedding_lookup(v, p), {p: ids}, var=v),
                _run(ml.gather(ml.constant(T), p), {p: ids})):
        np.testing.assert_array_equal(out[[0, 2]], T[[1, 3]])
        assert np.isnan(out[1]).all()
    q = ml.placeholder(ml.int32, [2, 2])
    out = _run(ml.gather_nd(T, q), {q: np.array([[1, 2], [bad, 0]], np.int32)})
    assert out[0] == T[1, 2] and np.isnan(out[1])
    out = _run(ml.gather_nd(T, q), {q: np.array([[1, 2], [0, 3]], np.int32)})
    assert out[0] == T[1, 2] and np.isnan(out[1])  # a column past the end too


def test_sharded_lookup_out_of_range_ids_give_nan_rows():
    a, b = ml.Variable(T[:3]), ml.Variable(T[3:])
    p = ml.placeholder(ml.int32, [4])
    for strategy in ("mod", "div"):
        fetch = ml.nn.embedding_lookup([a, b], p, partition_strategy=strategy)
        with ml.Session() as s:
            s.run([a.initializer, b.initializer])
            out = s.run(fetch, {p: np.array([0, -1, 5, 4], np.int32)})
        assert np.isnan(out[1]).all() and np.isnan(out[2]).all()
        assert not np.isnan(out[[0, 3]]).any()


def test_embedding_layer_in_range_matches_table_and_out_of_range_is_nan():
    m = ml.Sequential([L.Input(shape=(3,), dtype="int32"), L.Embedding(6, 2)])
    table = m.layers[0].get_weights()[0]
    ids = np.array([[0, 5, 2], [3, 3, 1]], np.int32)
    np.testing.assert_array_equal(m.predict(ids, verbose=0), table[ids])
    out = m.predict(np.array([[0, -1, 6]], np.int32), verbose=0)
    np.testing.assert_array_equal(out[0, 0], table[0])
    assert np.isnan(out[0, 1:]).all()
