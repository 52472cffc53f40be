"""ml.data.Dataset: sources, transformations, order, threads, cardinality."""

import threading
import time

import numpy as np
import pytest

import mylib as ml
from mylib.data import Dataset


def _l(ds):
    return [tuple(np.asarray(c).tolist() for c in e) if isinstance(e, tuple) else
            np.asarray(e).tolist() for e in ds]


def test_from_tensor_slices_structures_and_spec():
    x = np.arange(10, dtype=np.float64).reshape(5, 2)
    y = np.arange(5)
    ds = Dataset.from_tensor_slices((x, y))
    assert ds.cardinality() == 5 and len(ds) == 5
    els = list(ds)
    assert els[2][0].tolist() == [4.0, 5.0] and els[2][0].dtype == np.float32
    assert ds.element_spec[0].shape == (2,)
    d = Dataset.from_tensor_slices({"a": x, "b": y}).batch(2)
    b = next(iter(d))
    assert b["a"].shape == (2, 2) and b["b"].tolist() == [0, 1]
    with pytest.raises(ValueError, match="axis 0"):
        Dataset.from_tensor_slices((x, np.arange(4)))


def test_batch_drop_remainder_cardinality():
    ds = Dataset.range(10)
    assert [b.tolist() for b in ds.batch(4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert ds.batch(4).cardinality() == 3 and ds.batch(4, drop_remainder=True).cardinality() == 2
    assert [len(b) for b in ds.batch(4, drop_remainder=True)] == [4, 4]
    # stacking path (not slices) gives the same
    assert [b.tolist() for b in ds.map(lambda v: v).batch(4, True)] == [[0, 1, 2, 3],
                                                                         [4, 5, 6, 7]]


def test_take_skip_repeat():
    ds = Dataset.range(5)
    assert _l(ds.skip(2).take(2)) == [2, 3]
    assert _l(ds.repeat(2)) == [0, 1, 2, 3, 4] * 2
    inf = ds.repeat()
    assert inf.cardinality() == ml.data.INFINITE_CARDINALITY
    assert _l(inf.take(12)) == [0, 1, 2, 3, 4] * 2 + [0, 1]
    assert inf.take(12).cardinality() == 12


def test_map_parallel_keeps_order_and_uses_threads():
    seen = set()

    def slow(v):
        seen.add(threading.get_ident())
        time.sleep(0.01 * (5 - int(v) % 5))
        return v * 2

    t0 = time.perf_counter()
    out = _l(Dataset.range(20).map(slow, num_parallel_calls=8))
    dt = time.perf_counter() - t0
    assert out == [2 * i for i in range(20)]
    assert len(seen) > 1 and dt < 0.5  # serial would take 0.6 s
    # tuples unpack into arguments
    ds = Dataset.from_tensor_slices((np.arange(3), np.arange(3) * 10)).map(
        lambda a, b: (a + b, b), num_parallel_calls=ml.data.AUTOTUNE)
    assert _l(ds) == [(0, 0), (11, 10), (22, 20)]


def test_shuffle_seeded_reshuffles_each_epoch():
    ds = Dataset.range(50).shuffle(50, seed=3)
    e1, e2 = _l(ds), _l(ds)
    assert sorted(e1) == list(range(50)) and e1 != list(range(50)) and e1 != e2
    assert _l(Dataset.range(50).shuffle(50, seed=3)) == e1  # same seed, same order
    fixed = Dataset.range(50).shuffle(50, seed=3, reshuffle_each_iteration=False)
    assert _l(fixed) == _l(fixed)
    # a small buffer only moves elements locally
    local = _l(Dataset.range(100).shuffle(4, seed=0))
    assert sorted(local) == list(range(100))
    assert all(abs(v - i) < 40 for i, v in enumerate(local))


def test_from_generator_signature_and_errors():
    def gen():
        for i in range(4):
            yield np.full((2,), i), i

    sig = (ml.data.dataset.TensorSpec((2,), "float32"), ml.data.dataset.TensorSpec((), "int32"))
    ds = Dataset.from_generator(gen, output_signature=sig)
    els = list(ds)
    assert els[3][0].dtype == np.float32 and els[3][1] == 3
    assert len(list(ds)) == 4  # callable: a fresh pass each time
    bad = Dataset.from_generator(lambda: iter([(np.zeros(3), 0)]), output_signature=sig)
    with pytest.raises(ValueError, match="output_signature"):
        list(bad)
    with pytest.raises(TypeError, match="callable"):
        Dataset.from_generator(gen())


def test_cache_runs_upstream_once():
    calls = []
    ds = Dataset.range(5).map(lambda v: calls.append(int(v)) or v).cache()
    assert _l(ds) == list(range(5)) and _l(ds) == list(range(5))
    assert calls == list(range(5))


def test_prefetch_background_thread_and_error_propagation():
    main = threading.get_ident()
    where = []
    ds = Dataset.range(6).map(lambda v: where.append(threading.get_ident()) or v).prefetch(2)
    assert _l(ds) == list(range(6))
    assert all(t != main for t in where)

    def boom(v):
        if v == 3:
            raise RuntimeError("bad element 3")
        return v

    it = iter(Dataset.range(6).map(boom).prefetch(2))
    assert [int(next(it)) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(RuntimeError, match="bad element 3"):
        next(it)
    # abandoning an infinite prefetching iterator stops its thread
    it = iter(Dataset.range(3).repeat().prefetch(1))
    next(it)
    it.close()
