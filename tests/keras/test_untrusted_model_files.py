"""Crafted model and weights files: bounded memory (measured RSS of a real load),
clear errors for deep configs, and all-or-nothing restores (nothing changes on error)."""

import json
import os
import struct
import subprocess
import sys
import textwrap
import zipfile
import zlib

import numpy as np
import pytest

import mylib as ml
from mylib import errors
from mylib import layers as L

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RS = np.random.RandomState(0)
X = RS.randn(16, 4).astype(np.float32)
Y = RS.randn(16, 3).astype(np.float32)


def small_model(opt="adam"):
    m = ml.Sequential([L.Input(shape=(4,)), L.Dense(3)])
    m.compile(opt, "mse")
    return m


# ---------------------------------------------------------------- crafted zips
def _zeros_deflate(prefix, n_zeros, block=64000):
    """(raw deflate stream, crc32, size) of `prefix` followed by `n_zeros` zero bytes,
    built from one compressed block repeated (a full flush makes blocks independent),
    so a GiB of zeros costs a second, not a minute."""
    assert n_zeros % block == 0
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH)
    z = bytes(block)
    blk = c.compress(z) + c.flush(zlib.Z_FULL_FLUSH)
    assert c.compress(z) + c.flush(zlib.Z_FULL_FLUSH) == blk
    tail = c.flush()
    crc = zlib.crc32(prefix)
    for _ in range(n_zeros // block):
        crc = zlib.crc32(z, crc)
    return head + blk * (n_zeros // block) + tail, crc, len(prefix) + n_zeros


def _zip(members):
    """A zip archive (bytes) of `members`: ``(name, data)`` stored, or ``(name,
    (deflated, crc, size))`` written as given (no zip64: sizes < 4 GiB)."""
    out, central = bytearray(), bytearray()
    for name, data in members:
        if isinstance(data, tuple):
            comp, crc, size = data
            method = 8
        else:
            comp, crc, size, method = data, zlib.crc32(data), len(data), 0
        nm = name.encode()
        off = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0, crc, len(comp),
                           size, len(nm), 0) + nm + comp
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0,
                               crc, len(comp), size, len(nm), 0, 0, 0, 0, 0, off) + nm
    cd_off = len(out)
    out += central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members),
                                 len(central), cd_off, 0)
    return bytes(out)


def _members(path):
    with zipfile.ZipFile(path) as z:
        return [(n, z.read(n)) for n in z.namelist()]


def _npy_header(shape, dtype="<f4"):
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": dtype, "fortran_order": False, "shape": tuple(shape)})
    return buf.getvalue()


def _huge_weights_npz(metadata_shape, n=20000):
    """A weights file (members) whose kernel is an n x n float32 array of zeros
    (1.6 GB unpacked, ~1.6 MB packed); the metadata claims `metadata_shape`."""
    kernel = _zeros_deflate(_npy_header((n, n)), n * n * 4)
    bias = np.zeros(3, np.float32)
    import io

    b = io.BytesIO()
    np.lib.format.write_array(b, bias)
    npz = _zip([("w0000.npy", kernel), ("w0001.npy", b.getvalue())])
    meta = {"format": "mylib.weights", "format_version": 1,
            "weights": [{"key": "w0000", "name": "dense/kernel:0",
                         "shape": list(metadata_shape), "dtype": "float32"},
                        {"key": "w0001", "name": "dense/bias:0", "shape": [3],
                         "dtype": "float32"}]}
    return [("metadata.json", json.dumps(meta).encode()), ("model.weights.npz", npz)]


def _unused_member_model(tmp_path):
    m = small_model()
    m.fit(X, Y, epochs=1, verbose=0)
    good = tmp_path / "good.mylib"
    m.save(good)
    junk = _zeros_deflate(b"", 1536 * (1 << 20), block=1 << 20)  # 1.5 GiB of zeros
    evil = tmp_path / "unused_member.mylib"
    evil.write_bytes(_zip(_members(good) + [("assets/junk.bin", junk)]))
    return good, evil, m.predict(X, verbose=0)


@pytest.mark.slow
def test_crafted_files_load_with_bounded_memory(tmp_path):
    good, evil, want = _unused_member_model(tmp_path)
    assert 1 << 20 < evil.stat().st_size < 2 << 20  # a 1.5 MiB file
    with zipfile.ZipFile(evil) as z:
        assert z.getinfo("assets/junk.bin").file_size == 1536 << 20
    (tmp_path / "huge_meta.mylib").write_bytes(_zip(_huge_weights_npz((20000, 20000))))
    (tmp_path / "huge_lie.mylib").write_bytes(_zip(_huge_weights_npz((4, 3))))
    np.save(tmp_path / "want.npy", want)
    # A config declaring a 4 x 20,000,000 kernel (320 MB) for the file's (4, 3) weights.
    (tmp_path / "huge_config.mylib").write_bytes(_zip([
        (n, d.replace(b'"units": 3', b'"units": 20000000') if n == "config.json" else d)
        for n, d in _members(good)]))

    script = textwrap.dedent(f"""
        import resource, sys
        sys.path.insert(0, {ROOT!r})
        import numpy as np, mylib as ml
        from mylib import layers as L
        d = {str(tmp_path)!r}
        X = np.random.RandomState(0).randn(16, 4).astype(np.float32)
        def peak():
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        ml.models.load_model(d + "/good.mylib").predict(X, verbose=0)  # warm up
        m = ml.Sequential([L.Input(shape=(4,)), L.Dense(3)]); m.predict(X, verbose=0)
        base = peak()
        loaded = ml.models.load_model(d + "/unused_member.mylib")
        np.testing.assert_allclose(loaded.predict(X, verbose=0), np.load(d + "/want.npy"),
                                   rtol=1e-6)
        print("unused", peak() - base)
        try:
            ml.models.load_model(d + "/huge_config.mylib")
        except ValueError as e:
            print("huge_config", peak() - base, type(e).__name__, str(e).replace(chr(10), " "))
        for name in ("huge_meta", "huge_lie"):
            before = m.get_weights()
            try:
                m.load_weights(d + "/" + name + ".mylib")
            except (ValueError, ml.errors.DataLossError) as e:
                print(name, peak() - base, type(e).__name__, str(e).replace(chr(10), " "))
            for a, b in zip(before, m.get_weights()):
                np.testing.assert_array_equal(a, b)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = {ln.split(" ", 1)[0]: ln.split(" ", 3)[1:] for ln in r.stdout.splitlines()}
    limit = 200 << 20
    assert int(lines["unused"][0]) < limit, lines
    grow, kind, msg = lines["huge_config"]  # refused before the variables take memory
    assert int(grow) < limit and kind == "ValueError"
    assert "the model expects (4, 20000000), the file holds (4, 3)" in msg, msg
    grow, kind, msg = lines["huge_meta"]
    assert int(grow) < limit and kind == "ValueError"
    assert "(saved as 'dense/kernel:0'): the model expects (4, 3), the file holds (20000, 20000)" in msg
    grow, kind, msg = lines["huge_lie"]
    assert int(grow) < limit and kind == "DataLossError"
    # Refused from the zip headers: the packed npz alone is larger than two arrays of
    # the model's shapes can be.
    assert "model.weights.npz declares" in msg and "more than its 2 weight arrays can " \
        "take" in msg, msg
    print(lines)


def test_member_sizes_and_npy_headers_are_checked_before_reading(tmp_path):
    m = small_model()
    good = tmp_path / "w.mylib"
    m.save_weights(good)
    before = m.get_weights()
    members = dict(_members(good))
    # The npy header lies about the shape (the zip sizes are consistent).
    import io

    buf = io.BytesIO()
    np.savez(buf, w0000=np.zeros((5, 3), np.float32), w0001=np.zeros(3, np.float32))
    (tmp_path / "lie.mylib").write_bytes(_zip([("metadata.json", members["metadata.json"]),
                                               ("model.weights.npz", buf.getvalue())]))
    with pytest.raises(errors.DataLossError,
                       match=r"array 'w0000' \(dense/kernel:0\) in model.weights.npz holds "
                             r"float32 \(5, 3\), but the metadata says float32 \(4, 3\)"):
        m.load_weights(tmp_path / "lie.mylib")
    # An array member (inside the npz) that declares more than its shape needs.
    (tmp_path / "big.mylib").write_bytes(_zip(_huge_weights_npz((4, 3), n=2000)))
    with pytest.raises(errors.DataLossError,
                       match=r"array 'w0000' \(dense/kernel:0\) in model.weights.npz "
                             r"declares 16000128 bytes; shape \(4, 3\) float32 needs 48"):
        m.load_weights(tmp_path / "big.mylib")
    # A JSON member that declares more than the cap is not read.
    big = _zeros_deflate(b"{}", 80 << 20, block=1 << 20)
    (tmp_path / "bigjson.mylib").write_bytes(_zip([("metadata.json", big)]))
    with pytest.raises(errors.DataLossError, match=r"metadata.json declares \d+ bytes"):
        m.load_weights(tmp_path / "bigjson.mylib")
    for a, b in zip(before, m.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_deeply_nested_config_is_a_clear_error(tmp_path):
    m = small_model()
    good = tmp_path / "m.mylib"
    m.save(good)
    members = _members(good)
    deep = b'{"class_name": "Sequential", "config": ' + b"[" * 50000 + b"]" * 50000 + b"}"
    crafted = [(n, deep if n == "config.json" else d) for n, d in members]
    path = tmp_path / "deep.mylib"
    path.write_bytes(_zip(crafted))
    with pytest.raises(errors.DataLossError,
                       match=r"deep.mylib: config.json nests arrays/objects 50001 levels "
                             r"deep; at most 100"):
        ml.models.load_model(path)
    with pytest.raises(ValueError, match="model_from_json: the text nests"):
        ml.models.model_from_json("[" * 5000 + "]" * 5000)
    # Brackets inside strings do not count.
    from mylib.models._archive import json_depth

    assert json_depth(b'{"a": "[[[[{{{{\\"[[", "b": [[1], {"c": []}]}') == 4


# ---------------------------------------------------------------- half-restores
def _state(m):
    opt = m.optimizer
    vars_ = [opt._iterations] + [s for w in m.weights for s in opt._slots.get(w._key, [])]
    from mylib.runtime import keras_session as backend

    return [np.array(w) for w in m.get_weights()] + backend.get_values(vars_)


def _backup_file(tmp_path, extra_patch):
    src = small_model()
    src.fit(X, Y, epochs=2, batch_size=4, verbose=0)
    backup = tmp_path / "backup"
    cb = ml.callbacks.BackupAndRestore(str(backup), delete_checkpoint=False)
    src.fit(X, Y, epochs=1, batch_size=4, verbose=0, callbacks=[cb])
    path = backup / "training_state.mylib"
    members = _members(path)
    meta = json.loads(dict(members)["metadata.json"])
    extra_patch(meta["extra"])
    path.write_bytes(_zip([(n, json.dumps(meta).encode() if n == "metadata.json" else d)
                           for n, d in members]))
    return str(backup)


@pytest.mark.parametrize("patch", [
    lambda e: e.update(epoch="not-a-number"),
    lambda e: e.update(step=-1),
    lambda e: e.update(epoch=True),
    lambda e: e.pop("numpy_rng"),
    lambda e: e.update(numpy_rng=["MT19937", [1, 2, 3], 0, 0, 0.0]),
    lambda e: e.update(rng_counts={"dropout": "many"}),
    lambda e: e.update(seed_base="x"),
], ids=["epoch_str", "negative_step", "bool_epoch", "no_rng", "short_rng_keys",
        "bad_counts", "bad_seed"])
def test_backup_and_restore_with_a_malformed_state_changes_nothing(tmp_path, patch):
    backup = _backup_file(tmp_path, patch)
    m = small_model()
    m.fit(X, Y, epochs=1, batch_size=8, verbose=0)  # weights, slots and step of its own
    before = _state(m)
    np.random.seed(7)
    rng_before = np.random.get_state()[1].copy()
    with pytest.raises(errors.DataLossError, match="invalid backup state.*nothing was "
                                                   "restored"):
        m.fit(X, Y, epochs=2, verbose=0,
              callbacks=[ml.callbacks.BackupAndRestore(backup)])
    for a, b in zip(before, _state(m)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.random.get_state()[1], rng_before)


def test_load_training_state_with_mismatched_slots_changes_nothing(tmp_path):
    src = small_model("adam")
    src.fit(X, Y, epochs=1, batch_size=4, verbose=0)
    path = str(tmp_path / "state.mylib")
    src.save_training_state(path, {"epoch": 1})
    m = small_model(ml.optimizers.SGD(0.1))  # no slots
    m.fit(X, Y, epochs=1, batch_size=8, verbose=0)
    before = _state(m)
    with pytest.raises(ValueError, match="optimizer slot .* does not exist.*Nothing was "
                                         "loaded"):
        m.load_training_state(path)
    for a, b in zip(before, _state(m)):
        np.testing.assert_array_equal(a, b)
    # And a validator that refuses the extra dict stops the load before any change.
    m2 = small_model("adam")
    m2.fit(X, Y, epochs=1, batch_size=8, verbose=0)
    before = _state(m2)

    def refuse(extra):
        assert extra == {"epoch": 1}
        raise ValueError("not this one")

    with pytest.raises(ValueError, match="not this one"):
        m2.load_training_state(path, validate_extra=refuse)
    for a, b in zip(before, _state(m2)):
        np.testing.assert_array_equal(a, b)
    assert m2.load_training_state(path) == {"epoch": 1}
    for a, b in zip(_state(src), _state(m2)):
        np.testing.assert_array_equal(a, b)


def test_set_weights_and_load_weights_are_all_or_nothing(tmp_path):
    m = small_model()
    before = m.get_weights()
    with pytest.raises(ValueError, match="expected shape \\(3,\\), received an array of "
                                         "shape \\(4,\\)"):
        m.set_weights([np.ones((4, 3), np.float32), np.ones(4, np.float32)])
    with pytest.raises(ValueError, match="list of 1 arrays"):
        m.set_weights([np.ones((4, 3), np.float32)])
    for a, b in zip(before, m.get_weights()):
        np.testing.assert_array_equal(a, b)
    # A weights file whose second array is corrupt (bad checksum) changes nothing.
    other = small_model()
    other.set_weights([np.full((4, 3), 2.0, np.float32), np.full(3, 5.0, np.float32)])
    good = tmp_path / "w.mylib"
    other.save_weights(good)
    members = dict(_members(good))
    npz = bytearray(members["model.weights.npz"])
    pos = bytes(npz).index(np.full(3, 5.0, np.float32).tobytes())
    npz[pos] ^= 0xFF
    members["model.weights.npz"] = bytes(npz)
    (tmp_path / "bad.mylib").write_bytes(_zip(list(members.items())))
    with pytest.raises(errors.DataLossError, match="w0001"):
        m.load_weights(tmp_path / "bad.mylib")
    for a, b in zip(before, m.get_weights()):
        np.testing.assert_array_equal(a, b)
    m.load_weights(good)
    np.testing.assert_array_equal(m.get_weights()[1], np.full(3, 5.0, np.float32))


def test_deflated_archives_from_other_tools_still_load(tmp_path):
    src = ml.Sequential([L.Input(shape=(4,)), L.Dense(5), L.Dense(3)])
    src.set_weights([RS.randn(*w.shape).astype(np.float32) for w in src.get_weights()])
    path = tmp_path / "w.mylib"
    src.save_weights(path)
    deflated = tmp_path / "deflated.mylib"
    with zipfile.ZipFile(deflated, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for n, d in _members(path):
            z.writestr(n, d)
    m = ml.Sequential([L.Input(shape=(4,)), L.Dense(5), L.Dense(3)])
    m.load_weights(deflated)
    for a, b in zip(src.get_weights(), m.get_weights()):
        np.testing.assert_array_equal(a, b)
