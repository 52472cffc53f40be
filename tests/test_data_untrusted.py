"""A Dataset cache index is untrusted: its data file must be a file of the cache; and
temporaries of a caching pass whose process was killed are removed by the next pass."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import mylib as ml
from mylib.data import Dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cached(tmp_path):
    prefix = str(tmp_path / "cache" / "c")
    ds = Dataset.from_tensor_slices(np.arange(12, dtype=np.float32).reshape(6, 2))
    assert len(list(ds.cache(prefix))) == 6
    return ds, prefix, tmp_path / "cache" / "c.cache-index.json"


@pytest.mark.parametrize("name", ["../secret.cache-data-x", "ABS", "c.cache-data-../../x",
                                  "other.bin", ".", "LINK"])
def test_index_naming_a_data_file_outside_the_cache_is_refused(tmp_path, name):
    ds, prefix, index_path = _cached(tmp_path)
    secret = tmp_path / "secret.cache-data-x"
    # A file an attacker would like read back as data (a valid .npy stream).
    with open(secret, "wb") as f:
        for _ in range(6):
            np.lib.format.write_array(f, np.array([666.0, 666.0], np.float32))
    if name == "ABS":
        name = str(secret)
    elif name == "LINK":
        name = "c.cache-data-link"
        os.symlink(secret, tmp_path / "cache" / name)
    index = json.loads(index_path.read_text())
    index["data_file"] = name
    index["data_bytes"] = secret.stat().st_size
    index_path.write_text(json.dumps(index))
    with pytest.raises(ml.errors.PermissionDeniedError,
                       match=r"names the data file .* which is not a file of this cache"):
        list(ds.cache(prefix))


def test_a_good_index_still_reads(tmp_path):
    ds, prefix, index_path = _cached(tmp_path)
    got = np.stack(list(ds.cache(prefix)))
    np.testing.assert_array_equal(got, np.arange(12, dtype=np.float32).reshape(6, 2))


@pytest.mark.slow
def test_temporary_of_a_killed_caching_pass_is_removed_by_the_next_pass(tmp_path):
    prefix = str(tmp_path / "c")
    ready = str(tmp_path / "ready")
    script = textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {ROOT!r})
        import numpy as np
        from mylib.data import Dataset
        def slow(i):
            if int(i) == 3:
                open({ready!r}, "w").close()
                time.sleep(120)  # killed with -9 here, mid-pass
            return i
        for _ in Dataset.range(6).map(slow).cache({prefix!r}):
            pass
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 120
        while not os.path.exists(ready):
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.time() < deadline
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    stray = [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    assert len(stray) == 1 and f"-{proc.pid}-" in stray[0], stray
    assert list(Dataset.range(6).cache(prefix)) == list(range(6))
    left = sorted(os.listdir(tmp_path))
    assert not [f for f in left if f.endswith(".tmp")], left
    assert len([f for f in left if ".cache-" in f]) == 2  # the index and its data


def test_a_record_claiming_more_than_the_file_holds_is_refused_before_allocating(tmp_path):
    ds, prefix, index_path = _cached(tmp_path)
    index = json.loads(index_path.read_text())
    data = tmp_path / "cache" / index["data_file"]
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<f8", "fortran_order": False, "shape": (100000, 100000)})
    data.write_bytes(buf.getvalue() + bytes(64))  # 80 GB claimed, 64 bytes held
    index["data_bytes"] = data.stat().st_size
    index_path.write_text(json.dumps(index))
    with pytest.raises(ml.errors.DataLossError,
                       match=r"claims float64 \(100000, 100000\) \(80000000000 bytes\), but "
                             r"only 64 bytes are left"):
        list(ds.cache(prefix))
