"""Reading model and weights files (zip archives, see `mylib.models.saving`) as
untrusted input, with memory bounded by the model the file is loaded into.

- Only the members a load needs are read (``metadata.json``, ``config.json``,
  ``model.weights.npz``, ``optimizer.npz``); any other member is never decompressed.
- A JSON member may declare (zip header) and hold at most `JSON_MEMBER_LIMIT` bytes and
  nest at most `JSON_MAX_DEPTH` arrays/objects deep; both are checked before decoding.
- Array members are checked before their data is read: the metadata's shape of each
  array must equal the shape of the variable it is loaded into (the caller's
  `expected` shapes), the ``.npy`` header's shape and dtype must equal the metadata's,
  and every declared (zip header) size must fit those shapes. So a load allocates at
  most the size of the target model's own variables (plus the JSON members), whatever
  the file declares.
"""

from __future__ import annotations

import json
import os
import io
import re
import struct
import zipfile
import zlib

import numpy as np

from mylib import errors

JSON_MEMBER_LIMIT = 64 << 20  # bytes, per JSON member
JSON_MAX_DEPTH = 100  # nesting of arrays and objects
_NPY_HEADER_LIMIT = 1 << 16  # bytes of an .npy header (numpy writes ~128)
_ZIP_ENTRY_SLACK = 1024  # zip local + central headers of one member, with its name
_CHUNK = 16 << 20

_PLAIN_DTYPES = frozenset({
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128"})
# Stored as unsigned integers of their width (numpy cannot name them in .npy headers).
_ML_DTYPES = frozenset({
    "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "int4", "uint4"})

_READ_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError,
                NotImplementedError, RuntimeError)
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def json_depth(data):
    """The deepest nesting of arrays and objects in JSON text `data` (bytes)."""
    s = _JSON_STRING.sub(b"", bytes(data))
    depth = deepest = 0
    for i in range(0, len(s), 1 << 20):
        a = np.frombuffer(s, np.uint8, count=min(1 << 20, len(s) - i), offset=i)
        step = ((a == 0x7B) | (a == 0x5B)).astype(np.int32) - \
            ((a == 0x7D) | (a == 0x5D)).astype(np.int32)
        if step.size:
            run = np.cumsum(step, dtype=np.int64) + depth
            deepest = max(deepest, int(run.max()))
            depth = int(run[-1])
    return deepest


def loads_json(data, where):
    """`json.loads(data)` after checking its nesting depth.

    Raises:
      ValueError: deeper than `JSON_MAX_DEPTH`, or not valid JSON; the message names
        `where`.
    """
    d = json_depth(data)
    if d > JSON_MAX_DEPTH:
        raise ValueError(f"{where} nests arrays/objects {d} levels deep; at most "
                         f"{JSON_MAX_DEPTH} are read (a crafted or corrupted file).")
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{where} is not valid JSON ({str(e)[:200]}).") from None


def storage_dtype(name):
    """The numpy dtype an array of dtype `name` is stored with, or None if `name` is
    not a numeric dtype a model file may hold."""
    if name in _PLAIN_DTYPES:
        return np.dtype(name)
    if name in _ML_DTYPES:
        import ml_dtypes

        if hasattr(ml_dtypes, name):
            return np.dtype(f"u{np.dtype(getattr(ml_dtypes, name)).itemsize}")
    return None


def _nbytes(shape, dtype):
    n = dtype.itemsize
    for d in shape:
        n *= d
    return n


class Archive:
    """An open model or weights file. Use as a context manager."""

    def __init__(self, path, formats, max_version):
        self.path = os.fspath(path)
        if not os.path.exists(self.path):
            raise FileNotFoundError(f"No such file: '{self.path}'")
        try:
            self._zip = zipfile.ZipFile(self.path)
        except _READ_ERRORS as e:
            if _starts_with(self.path, b"\x89HDF\r\n\x1a\n"):
                raise self._bad(f"an HDF5 file (Keras's own .h5 / .weights.h5 format), "
                                f"not a mylib model/weights file: mylib reads only files "
                                f"it wrote (rebuild the model in Keras and copy its "
                                f"weights with get_weights / set_weights).") from e
            raise self._bad(f"not a mylib model/weights file, or the file is truncated or "
                            f"corrupted ({e}).") from e
        try:
            if not self.has("metadata.json"):
                raise self._bad("no readable metadata.json; not a mylib model file.")
            meta = self.read_json("metadata.json")
            if not isinstance(meta, dict) or not isinstance(meta.get("format"), str) \
                    or meta["format"] not in formats:
                got = meta.get("format") if isinstance(meta, dict) else None
                if isinstance(meta, dict) and "keras_version" in meta and got is None:
                    raise self._bad(
                        f"a Keras {str(meta['keras_version'])[:20]} .keras file, not a "
                        "mylib model file: mylib reads only files it wrote (rebuild the "
                        "model and copy its weights with get_weights / set_weights).")
                raise self._bad(f"unknown format {str(got)[:100]!r}.")
            v = meta.get("format_version")
            if not isinstance(v, int) or v > max_version:
                raise self._bad(f"format version {v!r} is newer than this mylib reads "
                                f"({max_version}).")
        except BaseException:
            self._zip.close()
            raise
        self.meta = meta

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        self._zip.close()

    def _bad(self, what):
        return errors.DataLossError(f"{self.path}: {what}")

    def has(self, name):
        try:
            self._zip.getinfo(name)
        except KeyError:
            return False
        return True

    def read_json(self, name):
        """The decoded JSON member `name` (size and depth checked first).

        Raises:
          DataLossError: too large, too deeply nested, unreadable or not JSON.
        """
        info = self._zip.getinfo(name)
        if info.file_size > JSON_MEMBER_LIMIT:
            raise self._bad(f"{name} declares {info.file_size} bytes; a model file's JSON "
                            f"members may hold at most {JSON_MEMBER_LIMIT}.")
        try:
            with self._zip.open(info) as f:
                data = f.read(JSON_MEMBER_LIMIT + 1)
        except _READ_ERRORS as e:
            raise self._bad(f"{name} is unreadable ({e}).") from e
        if len(data) > JSON_MEMBER_LIMIT:
            raise self._bad(f"{name} holds more than {JSON_MEMBER_LIMIT} bytes.")
        try:
            return loads_json(data, f"{self.path}: {name}")
        except ValueError as e:
            raise errors.DataLossError(str(e)) from None

    def check_entries(self, entries, what):
        """Validates the metadata list of `what` arrays: each a dict with a ``key``, a
        ``name``, a ``shape`` (non-negative ints) and a numeric ``dtype``."""
        if not isinstance(entries, list):
            raise self._bad(f"the metadata of the {what} arrays is not a list.")
        keys = set()
        for m in entries:
            ok = (isinstance(m, dict) and isinstance(m.get("key"), str)
                  and re.fullmatch(r"[A-Za-z0-9_]{1,64}", m["key"]) is not None
                  and m["key"] not in keys and isinstance(m.get("name", ""), str)
                  and isinstance(m.get("shape"), list)
                  and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                          for d in m["shape"])
                  and isinstance(m.get("dtype"), str)
                  and storage_dtype(m["dtype"]) is not None)
            if not ok:
                raise self._bad(f"malformed metadata of a {what} array: {str(m)[:200]}")
            keys.add(m["key"])

    def read_arrays(self, member, entries, what):
        """The arrays of `entries` (validated by `check_entries`, their shapes already
        compared with their targets) from the npz member `member`, each checked
        against its metadata before its data is read.

        Raises:
          DataLossError: the member is missing, larger than its arrays need, or an
            array's header, size or checksum does not match.
        """
        if not self.has(member):
            raise self._bad(f"the {what} arrays ({member}) are missing.")
        specs = []
        for m in entries:
            dt = storage_dtype(m["dtype"])
            specs.append((m, tuple(m["shape"]), dt, _nbytes(m["shape"], dt)))
        budget = sum(n + _NPY_HEADER_LIMIT + _ZIP_ENTRY_SLACK for *_, n in specs) + 4096
        info = self._zip.getinfo(member)
        if info.file_size > budget:
            raise self._bad(f"{member} declares {info.file_size} bytes, more than its "
                            f"{len(specs)} {what} arrays can take ({budget}).")
        out = [None] * len(specs)
        try:
            with self._open_member(info) as outer, zipfile.ZipFile(outer) as inner:
                # In file order: the member is read front to back once (a deflated
                # member cannot seek backwards without decompressing again).
                order = sorted(range(len(specs)), key=lambda i: self._offset_in(
                    inner, specs[i][0]["key"] + ".npy"))
                for i in order:
                    m, shape, dt, nbytes = specs[i]
                    out[i] = self._read_npy(inner, m, shape, dt, nbytes, member)
        except errors.DataLossError:
            raise
        except _READ_ERRORS + (ValueError,) as e:
            raise self._bad(f"the {what} arrays ({member}) are corrupt or not numpy data "
                            f"({type(e).__name__}: {e}).") from e
        return out

    @staticmethod
    def _offset_in(inner, name):
        try:
            return inner.getinfo(name).header_offset
        except KeyError:
            return float("inf")  # reported as missing when its turn comes

    def _open_member(self, info):
        """A seekable file object of member `info`: a window onto the file itself for
        a stored member (as mylib writes them), else zipfile's decompressing reader."""
        if info.compress_type == zipfile.ZIP_STORED and info.compress_size == info.file_size:
            f = open(self.path, "rb")
            try:
                f.seek(info.header_offset)
                head = f.read(30)
                if len(head) == 30 and head[:4] == b"PK\x03\x04":
                    n, e = struct.unpack("<HH", head[26:30])
                    return _Window(f, info.header_offset + 30 + n + e, info.file_size)
            except BaseException:
                f.close()
                raise
            f.close()
        return self._zip.open(info)

    def _read_npy(self, inner, m, shape, dt, nbytes, member):
        name = m["key"] + ".npy"
        where = f"array '{m['key']}' ({m.get('name', '?')}) in {member}"
        try:
            info = inner.getinfo(name)
        except KeyError:
            raise self._bad(f"{where} is missing.") from None
        if info.file_size > nbytes + _NPY_HEADER_LIMIT:
            raise self._bad(f"{where} declares {info.file_size} bytes; shape {shape} "
                            f"{m['dtype']} needs {nbytes}.")
        with inner.open(info) as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                hshape, fortran, hdt = np.lib.format.read_array_header_1_0(
                    f, max_header_size=_NPY_HEADER_LIMIT)
            elif version == (2, 0):
                hshape, fortran, hdt = np.lib.format.read_array_header_2_0(
                    f, max_header_size=_NPY_HEADER_LIMIT)
            else:
                raise self._bad(f"{where} has .npy format version {version}.")
            if tuple(hshape) != shape or hdt != dt:
                raise self._bad(f"{where} holds {hdt} {tuple(hshape)}, but the metadata "
                                f"says {m['dtype']} {shape}.")
            a = np.empty(shape[::-1] if fortran else shape, dt)
            view = memoryview(a.reshape(-1).view(np.uint8))
            got = 0
            while got < nbytes:
                chunk = f.read(min(_CHUNK, nbytes - got))
                if not chunk:
                    break
                view[got:got + len(chunk)] = chunk
                got += len(chunk)
            if got != nbytes:
                raise self._bad(f"{where} is truncated ({got} of {nbytes} bytes).")
            if f.read(1):  # reading to the end also checks the member's CRC
                raise self._bad(f"{where} has bytes after its data.")
        return a.T if fortran else a


class _Window(io.RawIOBase):
    """The bytes ``[start, start + size)`` of the open file `f`, as a seekable file
    (closes `f` when closed)."""

    def __init__(self, f, start, size):
        super().__init__()
        self._f, self._start, self._size, self._pos = f, start, size, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=0):
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, b):
        n = max(0, min(len(b), self._size - self._pos))
        if n == 0:
            return 0
        self._f.seek(self._start + self._pos)
        got = self._f.readinto(memoryview(b)[:n])
        self._pos += got
        return got

    def close(self):
        if not self.closed:
            self._f.close()
        super().close()


def _starts_with(path, magic):
    try:
        with open(path, "rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False
