"""Ids outside [0, vocab) in gather, gather_nd, embedding_lookup and Embedding never
yield a real row: constant ids raise InvalidArgumentError naming the op, the id and the
range when the step is built, fed ones when the run ends (as TensorFlow on CPU); a
Keras model's predict (which never waits on the step) gives NaN rows, as Keras 3 on
JAX."""

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
def test_fed_out_of_range_ids_raise_naming_op_id_and_range(bad):
    # As TensorFlow on CPU: the run fails (after the step, which changes nothing).
    v = ml.Variable(T)
    p = ml.placeholder(ml.int32, [3])
    ids = np.array([1, bad, 3], np.int32)
    for fetch, op in ((ml.gather(T, p), "GatherV2"),
                      (ml.nn.embedding_lookup(v, p), "ResourceGather"),
                      (ml.gather(ml.constant(T), p), "GatherV2")):
        with pytest.raises(ml.errors.InvalidArgumentError,
                           match=rf"{op}.*indices\[1\] = {bad} is not in \[0, 5\)"):
            _run(fetch, {p: ids}, var=v)
    q = ml.placeholder(ml.int32, [2, 2])
    with pytest.raises(ml.errors.InvalidArgumentError,
                       match=rf"GatherNd.*indices\[1\] = \[{bad}, 0\] does not index"):
        _run(ml.gather_nd(T, q), {q: np.array([[1, 2], [bad, 0]], np.int32)})
    with pytest.raises(ml.errors.InvalidArgumentError,
                       match=r"indices\[1\] = \[0, 3\] does not index into shape \[5,3\]"):
        _run(ml.gather_nd(T, q), {q: np.array([[1, 2], [0, 3]], np.int32)})  # a column


def test_sharded_lookup_out_of_range_ids_raise():
    a, b = ml.Variable(T[:3]), ml.Variable(T[3:])
    p = ml.placeholder(ml.int32, [4])
    for strategy in ("mod", "div"):
        fetch = ml.nn.embedding_lookup([a, b], p, partition_strategy=strategy)
        with ml.Session() as s:
            s.run([a.initializer, b.initializer])
            with pytest.raises(ml.errors.InvalidArgumentError, match="is not in"):
                s.run(fetch, {p: np.array([0, -1, 5, 4], np.int32)})
            out = s.run(fetch, {p: np.array([0, 1, 4, 3], np.int32)})
        shards = (T[:3], T[3:])
        rows = [shards[k % 2][k // 2] if strategy == "mod" else T[k] for k in (0, 1, 4, 3)]
        np.testing.assert_array_equal(out, np.stack(rows))


def test_embedding_layer_in_range_matches_table_and_out_of_range_is_nan():
    m = ml.Sequential([L.Input(shape=(3,), dtype="int32"), L.Embedding(6, 2)])
    table = m.layers[0].get_weights()[0]
    ids = np.array([[0, 5, 2], [3, 3, 1]], np.int32)
    np.testing.assert_array_equal(m.predict(ids, verbose=0), table[ids])
    out = m.predict(np.array([[0, -1, 6]], np.int32), verbose=0)
    np.testing.assert_array_equal(out[0, 0], table[0])
    assert np.isnan(out[0, 1:]).all()
