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


def _cache_files(tmp_path):
    return sorted(p.name for p in tmp_path.rglob("*") if p.is_file())


def _nested_pipeline(calls):
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    y = np.arange(6)
    return (Dataset.from_tensor_slices({"x": x, "y": y})
            .map(lambda d: calls.append(1) or {"feat": (d["x"] * 2, d["x"][:2]),
                                               "label": d["y"]})
            .batch(4))


def _same(a, b):
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v)
    else:
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(a, b)


def test_cache_to_file_replays_from_files_here_and_in_a_new_process(tmp_path):
    import subprocess
    import sys

    prefix = str(tmp_path / "sub" / "train")
    calls = []
    want = list(_nested_pipeline([]))
    ds = _nested_pipeline(calls).cache(prefix)
    assert ds.cardinality() == 2
    first = list(ds)
    assert len(calls) == 6
    files = _cache_files(tmp_path)
    assert "train.cache-index.json" in files and len(files) == 2
    for _ in range(2):
        again = list(ds)
        assert len(calls) == 6  # read from the files, not the pipeline
        for a, b in zip(again, want):
            _same(a, b)
    for a, b in zip(first, want):
        _same(a, b)
    # A new Dataset object with the same filename reads the files.
    calls2 = []
    for a, b in zip(_nested_pipeline(calls2).cache(prefix), want):
        _same(a, b)
    assert calls2 == []
    # So does a new process whose upstream pipeline would fail if it ran.
    code = (
        "import sys, numpy as np\n"
        "from mylib.data import Dataset\n"
        "def boom(d): raise RuntimeError('upstream ran')\n"
        "ds = Dataset.from_tensor_slices({'x': np.zeros((6, 4), np.float32), "
        "'y': np.arange(6)}).map(boom).batch(4).cache(sys.argv[1])\n"
        "els = list(ds)\n"
        "print(len(els), float(els[1]['feat'][0].sum()), els[0]['label'].tolist(), "
        "sorted(els[0]), type(els[0]['feat']).__name__)\n")
    out = subprocess.run([sys.executable, "-c", code, prefix], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == (
        f"2 {float(want[1]['feat'][0].sum())} [0, 1, 2, 3] ['feat', 'label'] tuple")


def test_cache_to_file_partial_pass_is_discarded(tmp_path):
    prefix = str(tmp_path / "c")
    calls = []
    ds = Dataset.range(6).map(lambda v: calls.append(int(v)) or v).cache(prefix)
    assert _l(ds.take(3)) == [0, 1, 2]
    assert _cache_files(tmp_path) == []  # the temporary file is removed
    for i, v in enumerate(ds):
        if i == 4:
            break
    it = iter(ds)
    next(it)
    del it
    assert _cache_files(tmp_path) == []

    def gen():
        yield from range(3)
        raise RuntimeError("upstream failed")
    with pytest.raises(RuntimeError, match="upstream failed"):
        list(Dataset.from_generator(gen).cache(str(tmp_path / "bad")))
    assert _cache_files(tmp_path) == []
    # A complete pass writes the cache; later passes (even partial ones) read it.
    calls.clear()
    assert _l(ds) == list(range(6)) and calls == list(range(6))
    assert _l(ds.take(2)) == [0, 1] and _l(ds) == list(range(6)) and len(calls) == 6
    assert len(_cache_files(tmp_path)) == 2
    r = Dataset.range(3).cache(str(tmp_path / "r"))
    assert list(r) == list(r) == [0, 1, 2]
    assert type(list(r)[0]) is np.int64  # numpy scalars come back as numpy scalars


def test_cache_to_file_rejects_damaged_files_and_unstorable_elements(tmp_path):
    prefix = str(tmp_path / "c")
    ds = Dataset.from_tensor_slices(np.arange(40, dtype=np.float32).reshape(10, 4))
    assert len(list(ds.cache(prefix))) == 10
    data = next(p for p in tmp_path.iterdir() if ".cache-data-" in p.name)
    raw = data.read_bytes()
    data.write_bytes(raw[:-20])
    with pytest.raises(ml.errors.DataLossError, match="truncated"):
        list(ds.cache(prefix))
    data.unlink()
    with pytest.raises(ml.errors.DataLossError, match="missing"):
        list(ds.cache(prefix))
    (tmp_path / "c.cache-index.json").write_bytes(b"\x00\x01 not json")
    with pytest.raises(ml.errors.DataLossError, match="not a mylib"):
        list(ds.cache(prefix))
    objs = Dataset.from_generator(lambda: iter([np.array([{}], dtype=object)]))
    with pytest.raises(TypeError, match="object"):
        list(objs.cache(str(tmp_path / "o")))
    assert not list(tmp_path.glob("o.*"))
    # An empty dataset caches as empty.
    empty = Dataset.range(0).cache(str(tmp_path / "e"))
    assert list(empty) == [] and list(empty) == []


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
