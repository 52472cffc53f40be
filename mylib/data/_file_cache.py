"""The on-disk store behind `Dataset.cache(filename)`.

A cache at prefix ``P`` is two files:

- ``P.cache-data-<token>``: the elements, each as its flattened components written one
  after another in numpy's ``.npy`` format (no pickle; object arrays are refused);
- ``P.cache-index.json``: the element structure, the component kinds, the element count
  and the data file's name and size.

A pass writes the data to a temporary name and, only when the upstream pipeline is
exhausted, renames it and then writes the index by an atomic rename: the index is the
commit, so an interrupted pass leaves no index and is never read (TensorFlow refuses
partial caches the same way). A reader checks the data file's size against the index and
raises `DataLossError` on a truncated or foreign file instead of yielding part of it.
The index is untrusted input: its ``data_file`` must be a plain file name of this cache
(``<name of P>.cache-data-...`` in P's directory); any other name (another directory,
``..``, an absolute path, a link leading elsewhere) raises `PermissionDeniedError`, and
each record's ``.npy`` header must fit in the bytes left before its array is allocated.
Temporaries of a pass whose process was killed (``.tmp``, named with the writer's host
and pid) are removed by the next pass over the same prefix.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import uuid

import numpy as np

from mylib import errors
from mylib._fileio import atomic_write, owner_is_dead, owner_tag

_FORMAT = "mylib.data.cache"
_VERSION = 1
_log = logging.getLogger("mylib.data")


def index_path(prefix):
    return prefix + ".cache-index.json"


def _data_prefix(prefix):
    return os.path.basename(prefix) + ".cache-data-"


def _confined_data_path(path, prefix, name):
    """The data file `name` of the index at `path`, if it is a plain file name of this
    cache in the index's own directory; else PermissionDeniedError."""
    d = os.path.dirname(path)
    ok = (isinstance(name, str) and name == os.path.basename(name)
          and name.startswith(_data_prefix(prefix)) and "\0" not in name)
    if ok:
        data = os.path.join(d, name)
        real_dir = os.path.realpath(d or ".")
        ok = os.path.dirname(os.path.realpath(data)) == real_dir
    if not ok:
        raise errors.PermissionDeniedError(
            f"The Dataset cache index {path} names the data file {str(name)[:200]!r}, "
            f"which is not a file of this cache (expected a name "
            f"'{_data_prefix(prefix)}...' in the index's own directory): refusing to read "
            "it. Delete the index to rebuild the cache.")
    return data


# ------------------------------------------------------------ structure <-> JSON
def encode_structure(s, kinds):
    """A JSON-able description of an element's nesting, leaves as None; appends each
    leaf's kind to `kinds` (in `_flatten` order): "a" for an array, "s" for a numpy
    scalar or Python number, which comes back as a numpy scalar."""
    if isinstance(s, dict):
        keys = sorted(s)
        for k in keys:
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError("Dataset.cache(filename) needs dict keys that are str or "
                                f"int. Received the key {k!r}.")
        return {"dict": [[k, encode_structure(s[k], kinds)] for k in keys],
                "order": list(s)}
    if isinstance(s, tuple) and hasattr(s, "_fields"):
        return {"namedtuple": type(s).__name__, "fields": list(s._fields),
                "items": [encode_structure(v, kinds) for v in s]}
    if isinstance(s, tuple):
        return {"tuple": [encode_structure(v, kinds) for v in s]}
    if isinstance(s, list):
        return {"list": [encode_structure(v, kinds) for v in s]}
    kinds.append("a" if isinstance(s, np.ndarray) else "s")
    return None


def decode_structure(d):
    """A template with the encoded nesting (leaves None), for `_pack`."""
    if d is None:
        return None
    if "dict" in d:
        vals = {k: decode_structure(v) for k, v in d["dict"]}
        return {k: vals[k] for k in d["order"]}
    if "namedtuple" in d:
        cls = collections.namedtuple(d["namedtuple"], d["fields"])
        return cls(*[decode_structure(v) for v in d["items"]])
    if "tuple" in d:
        return tuple(decode_structure(v) for v in d["tuple"])
    return [decode_structure(v) for v in d["list"]]


# ------------------------------------------------------------ reading
def read_index(prefix):
    """The index of the complete cache at `prefix`, or None when there is none.

    Raises:
      DataLossError: the index exists but is not a readable mylib cache index, or its
        data file is missing or has another size than recorded.
      PermissionDeniedError: the index names a data file outside this cache.
    """
    path = index_path(prefix)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    try:
        index = json.loads(raw.decode("utf-8"))
        ok = isinstance(index, dict) and index.get("format") == _FORMAT
    except (UnicodeDecodeError, ValueError):
        ok = False
    if not ok:
        raise errors.DataLossError(f"{path} is not a mylib Dataset cache index; delete it or "
                                   "pass another `filename` to cache().")
    if index.get("version") != _VERSION:
        raise errors.DataLossError(f"{path} has cache format version "
                                   f"{index.get('version')!r}; this mylib reads version "
                                   f"{_VERSION}. Delete the cache files to rebuild them.")
    data = _confined_data_path(path, prefix, index.get("data_file"))
    try:
        size = os.path.getsize(data)
    except OSError:
        raise errors.DataLossError(f"The Dataset cache {path} names the data file {data}, "
                                   "which is missing; delete the index to rebuild the "
                                   "cache.") from None
    if size != index["data_bytes"]:
        raise errors.DataLossError(f"The Dataset cache data file {data} has {size} bytes but "
                                   f"its index records {index['data_bytes']}: it is truncated "
                                   "or was changed. Delete the cache files to rebuild them.")
    index["_data_path"] = data
    return index


def read_elements(index, pack, template=None):
    """Yields the cached elements; `pack(template, leaves)` rebuilds each."""
    if index["num_elements"] and template is None:
        template = decode_structure(index["structure"])
    kinds = index["kinds"]
    path = index["_data_path"]
    size = index["data_bytes"]
    with open(path, "rb") as f:
        for i in range(index["num_elements"]):
            try:
                leaves = [_read_leaf(f, size) for _ in kinds]
            except (ValueError, EOFError, OSError) as e:
                raise errors.DataLossError(
                    f"The Dataset cache data file {path} is corrupt at element {i}: {e}. "
                    "Delete the cache files to rebuild them.") from None
            yield pack(template, [a[()] if k == "s" else a for a, k in zip(leaves, kinds)])


def _read_leaf(f, size):
    """One ``.npy`` record of the open data file `f` (of `size` bytes); its header's
    shape and dtype are checked against the bytes left before anything is allocated."""
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dt = np.lib.format.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran, dt = np.lib.format.read_array_header_2_0(f)
    else:
        raise ValueError(f"unsupported .npy format version {version}")
    if dt.hasobject:
        raise ValueError("an object array (refused: it would need pickle)")
    nbytes = dt.itemsize
    for d in shape:
        nbytes *= d
    left = size - f.tell()
    if nbytes > left:
        raise ValueError(f"a record claims {dt} {tuple(shape)} ({nbytes} bytes), but only "
                         f"{left} bytes are left")
    a = np.empty(shape[::-1] if fortran else shape, dt)
    if nbytes and f.readinto(a.reshape(-1).view(np.uint8)) != nbytes:
        raise EOFError("the data file ends inside a record")
    return a.T if fortran else a


# ------------------------------------------------------------ writing
def _remove_stale_temps(prefix):
    """Removes the ``.tmp`` data files of passes over `prefix` whose process was killed
    (written on this host by a pid that no longer runs)."""
    import re

    pat = re.compile(re.escape(_data_prefix(prefix))
                     + r"(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-[0-9a-f]{12}\.tmp$")
    d = os.path.dirname(prefix) or "."
    try:
        names = os.listdir(d)
    except OSError:
        return
    for n in names:
        m = pat.match(n)
        if m and owner_is_dead(m.group("host"), m.group("pid")):
            try:
                os.remove(os.path.join(d, n))
            except OSError:
                pass


class Writer:
    """Writes one pass to temporary files; `commit` publishes it, `abort` drops it."""

    def __init__(self, prefix):
        self.prefix = prefix
        d = os.path.dirname(prefix)
        if d:
            os.makedirs(d, exist_ok=True)
        _remove_stale_temps(prefix)
        self.token = f"{owner_tag()}-{uuid.uuid4().hex[:12]}"
        self.data_path = f"{prefix}.cache-data-{self.token}"
        self.tmp_path = self.data_path + ".tmp"
        self._f = open(self.tmp_path, "wb")
        self.structure = None
        self.kinds = None
        self.count = 0

    def write(self, element, flatten):
        kinds = []
        structure = encode_structure(element, kinds)
        if self.count == 0:
            self.structure, self.kinds = structure, kinds
        elif structure != self.structure:
            raise ValueError("Dataset.cache(filename): every element must have the same "
                             f"structure; element {self.count} differs from the first.")
        leaves = flatten(element)
        for leaf in leaves:
            a = np.asarray(leaf)
            if a.dtype.hasobject:
                raise TypeError("Dataset.cache(filename) stores numeric, bool and string "
                                f"arrays only; element {self.count} has a component of "
                                f"type {type(leaf).__name__} (dtype object).")
            np.lib.format.write_array(self._f, a, allow_pickle=False)
        self.count += 1

    def commit(self):
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()
        if os.path.exists(index_path(self.prefix)):
            # Another pass finished first; its files are as good as ours.
            self.abort()
            return
        os.replace(self.tmp_path, self.data_path)
        index = {"format": _FORMAT, "version": _VERSION,
                 "structure": self.structure, "kinds": self.kinds or [],
                 "num_elements": self.count, "data_file": os.path.basename(self.data_path),
                 "data_bytes": os.path.getsize(self.data_path)}
        atomic_write(index_path(self.prefix), json.dumps(index))

    def abort(self, partial=False):
        if not self._f.closed:
            self._f.close()
        try:
            os.remove(self.tmp_path)
        except FileNotFoundError:
            pass
        if partial:
            _log.warning(
                "A pass over the dataset being cached to %s stopped before the end of "
                "the data (read partly, or failed), so the partly written cache was "
                "discarded. For `ds.cache(filename).take(k)` write "
                "`ds.take(k).cache(filename)` instead.", self.prefix)

