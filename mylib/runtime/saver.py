"""Checkpoints: `Saver`, the `checkpoint` index file, `latest_checkpoint`, global step.

TensorFlow 1's `tf.train.Saver`, for variables whose values live in the `Session`.

File format. A checkpoint with prefix ``P`` (``save_path`` or ``save_path-<step>``) is
one file, ``P.mylib``::

    offset  size  field
    0       8     magic b"MYLIBCKP"
    8       4     format version (uint32, little-endian), currently 1
    12      4     flags (uint32), 0
    16      8     index length in bytes (uint64)
    24      4     CRC-32 of the index (uint32, zlib.crc32)
    28      4     reserved, 0
    32      ...   index: msgpack map {"format": "mylib.checkpoint", "version": 1,
                  "tensors": [{"name", "dtype" (numpy name, e.g. "bfloat16"), "shape",
                  "offset" (from the data start), "nbytes", "crc32"}, ...]}
    D       ...   data: each array's raw C-order little-endian bytes, at offsets
                  aligned to 64 bytes (D = end of the index, rounded up to 64)

(TensorFlow's layout, an index and a data section, in one file.) The index is plain
msgpack (no extension types); dtypes come from a fixed list of numeric dtypes (bool,
ints, uints, float16/32/64, bfloat16 and the float8s, complex), so a load decodes
names, shapes and bytes only: it never unpickles or runs code. Arrays are written from
and read into their own buffers (no intermediate copy of the whole checkpoint). A file
that is truncated, has another magic, an unknown version, a bad checksum (index or any
array) or a malformed index raises `DataLossError` naming the file and what is wrong,
before any variable changes.

Each save writes a temporary file in the same directory, fsyncs it, and renames it
over ``P.mylib`` (`os.replace`, atomic on POSIX); then the index file ``checkpoint``
in the directory (TensorFlow's text format: ``model_checkpoint_path: "..."``,
``all_model_checkpoint_paths: "..."``) is replaced the same way; only then are
checkpoints beyond `max_to_keep` deleted. A crash at any point leaves the previous
checkpoint loadable and the index pointing at a complete file; the temporary file of a
save killed with ``kill -9`` is removed by the next save of the same prefix (see
`mylib._fileio`).

The index file is untrusted input: every path it lists must resolve (links followed)
to a file inside the index's own directory. `get_checkpoint_state`, `latest_checkpoint`
and everything built on them (`load_checkpoint`, `list_variables`, a Saver recovering
its checkpoints) raise `PermissionDeniedError` for an index naming anything else
(``../victim/precious``, an absolute path elsewhere), so a crafted index cannot make a
restore read, or ``max_to_keep`` delete, files outside the directory. This differs from
TensorFlow, which follows such paths. `update_checkpoint_state` writes only paths
inside the directory (relative ones by default).
"""

from __future__ import annotations

import logging
import math
import os
import re
import struct
import threading
import time
import warnings
import zlib

import numpy as np

from mylib import errors
from mylib.core.compat_args import unrecognized_kwargs, warn_ignored
from mylib._fileio import atomic_write
from mylib.core.graph import GraphKeys, Tensor, get_default_graph
from mylib.core.tensor_shape import TensorShape
from mylib.core.x64 import with_x64
from mylib.runtime import meta_graph
from mylib.core import dtypes
from mylib.core.variables import Variable
from mylib import errors as _errors
from mylib.devices import get_device

__all__ = ["Saver", "CheckpointState", "latest_checkpoint", "get_checkpoint_state",
           "update_checkpoint_state", "checkpoint_exists", "get_checkpoint_mtimes",
           "remove_checkpoint", "list_variables", "load_variable", "load_checkpoint",
           "read_checkpoint_file", "read_checkpoint_index", "write_checkpoint_file",
           "get_or_create_global_step", "get_global_step", "create_global_step",
           "assert_global_step", "global_step", "DATA_SUFFIX"]

_log = logging.getLogger("mylib.saver")

DATA_SUFFIX = ".mylib"
_MAGIC = b"MYLIBCKP"
_VERSION = 1
_FORMAT = "mylib.checkpoint"
_HEADER = struct.Struct("<8sIIQI4x")  # magic, version, flags, index length, index crc32
_ALIGN = 64  # array data offsets are multiples of this


def _now():
    return time.time()


# ---------------------------------------------------------------- the data file
def _allowed_dtypes():
    import ml_dtypes

    names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
             "uint64", "float16", "float32", "float64", "complex64", "complex128"]
    out = {n: np.dtype(n) for n in names}
    for n in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz",
              "float8_e4m3fnuz", "float8_e5m2fnuz", "int4", "uint4"):
        if hasattr(ml_dtypes, n):
            out[n] = np.dtype(getattr(ml_dtypes, n))
    return out


_DTYPES = None


def _dtype_table():
    global _DTYPES
    if _DTYPES is None:
        _DTYPES = _allowed_dtypes()
    return _DTYPES


def _as_bytes(a):
    """A uint8 view of `a`'s buffer (C order, little-endian), without copying."""
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.reshape(-1).view(np.uint8)


def _pad(n):
    return (-n) % _ALIGN


def write_checkpoint_file(path, arrays, stale_prefix=None):
    """Writes `{name: numpy array}` to `path` atomically in the format above.
    `stale_prefix`: as `atomic_write`'s (leftover temporaries of killed saves)."""
    import msgpack

    table = _dtype_table()
    entries, blobs, offset = [], [], 0
    for name, a in arrays.items():
        a = np.asarray(a)
        if a.dtype.name not in table:
            raise errors.InvalidArgumentError(
                f"Cannot save '{name}': dtype {a.dtype} is not a numeric array dtype")
        b = _as_bytes(a)
        entries.append({"name": name, "dtype": a.dtype.name, "shape": list(a.shape),
                        "offset": offset, "nbytes": int(b.nbytes),
                        "crc32": zlib.crc32(b)})
        blobs.append(b)
        offset += b.nbytes + _pad(b.nbytes)
    index = msgpack.packb({"format": _FORMAT, "version": _VERSION, "tensors": entries},
                          use_bin_type=True)
    header = _HEADER.pack(_MAGIC, _VERSION, 0, len(index), zlib.crc32(index))
    head = header + index
    chunks = [head, b"\0" * _pad(len(head))]
    for b in blobs:
        chunks.append(b)
        if _pad(b.nbytes):
            chunks.append(b"\0" * _pad(b.nbytes))
    atomic_write(path, chunks, stale_prefix=stale_prefix)
    return path


def _bad(path, what):
    return errors.DataLossError(f"Checkpoint file {path} is {what}")


def _read_index(f, path, size):
    """Validates the header and index of the open file `f`; returns (entries by name,
    start of the data section)."""
    import msgpack

    head = f.read(_HEADER.size)
    if len(head) < _HEADER.size:
        if head and _MAGIC.startswith(head[:len(_MAGIC)]):
            raise _bad(path, f"truncated: {len(head)} bytes, shorter than its "
                             f"{_HEADER.size}-byte header")
        raise errors.DataLossError(
            f"{path} is not a mylib checkpoint: {len(head)} bytes, no {_MAGIC!r} header")
    magic, version, _flags, length, crc = _HEADER.unpack(head)
    if magic != _MAGIC:
        raise errors.DataLossError(
            f"{path} is not a mylib checkpoint: it starts with {head[:8]!r}, expected "
            f"{_MAGIC!r}")
    if version != _VERSION:
        raise _bad(path, f"of format version {version}; this mylib reads version "
                         f"{_VERSION}")
    if _HEADER.size + length > size:
        raise _bad(path, f"truncated: its header promises a {length}-byte index, the file "
                         f"has {size} bytes")
    index = f.read(length)
    if zlib.crc32(index) != crc:
        raise _bad(path, "corrupted: the index checksum does not match")
    try:
        tree = msgpack.unpackb(index, raw=False, strict_map_key=True)
    except Exception as e:  # noqa: BLE001 - any decoder failure is data loss
        raise _bad(path, f"malformed: cannot decode its index ({type(e).__name__})") from None
    if (not isinstance(tree, dict) or tree.get("format") != _FORMAT
            or not isinstance(tree.get("tensors"), list)):
        raise _bad(path, "malformed: the index is not a mylib checkpoint index")
    table = _dtype_table()
    data_start = _HEADER.size + length + _pad(_HEADER.size + length)
    entries, end = {}, data_start
    for e in tree["tensors"]:
        try:
            name, dt, shape = e["name"], table[e["dtype"]], tuple(e["shape"])
            off, nbytes, tcrc = e["offset"], e["nbytes"], e["crc32"]
            # Exact Python ints (bools are not sizes): an int64 product would wrap, and
            # a shape of 2**32 x 2**32 would pass as 0 bytes; with the exact size, the
            # file-size check below bounds every array a read allocates.
            ok = (isinstance(name, str) and all(type(d) is int and d >= 0 for d in shape)
                  and type(off) is int and off >= 0 and type(tcrc) is int
                  and type(nbytes) is int and nbytes == math.prod(shape) * dt.itemsize)
        except (KeyError, TypeError):
            ok = False
        if not ok or name in entries:
            raise _bad(path, f"malformed: bad index entry {e!r:.200}")
        entries[name] = (dt, shape, data_start + off, nbytes, tcrc)
        end = max(end, data_start + off + nbytes + _pad(nbytes))
    if size < end:
        raise _bad(path, f"truncated: the index needs {end} bytes, the file has {size}")
    if size > end:
        raise _bad(path, f"corrupted: {size - end} unexpected bytes after the data")
    return entries


def read_checkpoint_index(path):
    """``{name: (numpy dtype, shape)}`` of checkpoint file `path` (reads the index only)."""
    with _open(path) as f:
        entries = _read_index(f, path, os.fstat(f.fileno()).st_size)
    return {n: (e[0], e[1]) for n, e in entries.items()}


def _open(path):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise errors.NotFoundError(f"Checkpoint file not found: {path}") from None
    except IsADirectoryError:
        raise errors.DataLossError(f"Checkpoint path {path} is a directory, not a file") \
            from None


def read_checkpoint_file(path, names=None):
    """The `{name: numpy array}` stored in `path` (only `names` if given).

    Raises:
      NotFoundError: no such file, or a name not in it.
      DataLossError: the file is truncated, foreign, of an unknown version, corrupted
        (checksums) or malformed.
    """
    with _open(path) as f:
        entries = _read_index(f, path, os.fstat(f.fileno()).st_size)
        if names is None:
            names = list(entries)
        out = {}
        for name in names:
            if name not in entries:
                raise errors.NotFoundError(f"Key '{name}' not found in checkpoint {path}")
            dt, shape, off, nbytes, crc = entries[name]
            a = np.empty(shape, dt)
            buf = a.reshape(-1).view(np.uint8)
            f.seek(off)
            if f.readinto(buf) != nbytes:
                raise _bad(path, f"truncated in the data of '{name}'")
            if zlib.crc32(buf) != crc:
                raise _bad(path, f"corrupted: the checksum of '{name}' does not match")
            out[name] = a
    return out


def _data_path(prefix):
    """The data file of checkpoint `prefix` (also accepts the data file itself)."""
    if prefix.endswith(DATA_SUFFIX) and not os.path.exists(prefix + DATA_SUFFIX) \
            and os.path.isfile(prefix):
        return prefix
    return prefix + DATA_SUFFIX


def _is_checkpoint_file(path):
    try:
        with open(path, "rb") as f:
            return f.read(len(_MAGIC)) == _MAGIC
    except OSError:
        return False


def checkpoint_exists(checkpoint_prefix):
    """True if the checkpoint `checkpoint_prefix` (as `save` returns) exists."""
    return os.path.isfile(_data_path(os.fspath(checkpoint_prefix)))


def get_checkpoint_mtimes(checkpoint_prefixes):
    """The modification times of the checkpoints that exist among the prefixes."""
    out = []
    for p in checkpoint_prefixes:
        try:
            out.append(os.path.getmtime(_data_path(os.fspath(p))))
        except OSError:
            pass
    return out


def remove_checkpoint(checkpoint_prefix, meta_graph_suffix="meta"):
    """Deletes the files of checkpoint `checkpoint_prefix` (missing files are fine)."""
    for f in (checkpoint_prefix + DATA_SUFFIX, checkpoint_prefix + "." + meta_graph_suffix):
        try:
            os.remove(f)
        except FileNotFoundError:
            pass
        except OSError as e:
            _log.warning("Ignoring: failed to delete %s: %s", f, e)


# ---------------------------------------------------------------- the index file
class CheckpointState:
    """The contents of a `checkpoint` index file (TensorFlow's `CheckpointState`)."""

    def __init__(self, model_checkpoint_path="", all_model_checkpoint_paths=(),
                 all_model_checkpoint_timestamps=(), last_preserved_timestamp=None):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp

    def __repr__(self):
        return (f"CheckpointState(model_checkpoint_path={self.model_checkpoint_path!r}, "
                f"all_model_checkpoint_paths={self.all_model_checkpoint_paths!r})")


_ESC = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNESC = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "r": "\r", "t": "\t", "a": "\a",
          "b": "\b", "f": "\f", "v": "\v"}
_LINE = re.compile(r'^\s*([A-Za-z_]+)\s*:\s*(.*?)\s*$')


def _quote(s):
    return '"' + "".join(_ESC.get(c, c) for c in s) + '"'


def _unquote(s, where):
    if len(s) < 2 or s[0] not in "\"'" or s[-1] != s[0]:
        raise ValueError(f"{where}: expected a quoted string, got {s!r}")
    body, out, i = s[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n in _UNESC:
                out += _UNESC[n].encode()
                i += 2
                continue
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            if m:
                out.append(int(m.group(0), 8) & 0xFF)
                i += 1 + len(m.group(0))
                continue
        out += c.encode("utf-8")
        i += 1
    return out.decode("utf-8", errors="surrogateescape")


def _index_text(state):
    lines = [f"model_checkpoint_path: {_quote(state.model_checkpoint_path)}"]
    lines += [f"all_model_checkpoint_paths: {_quote(p)}"
              for p in state.all_model_checkpoint_paths]
    lines += [f"all_model_checkpoint_timestamps: {t!r}"
              for t in state.all_model_checkpoint_timestamps]
    if state.last_preserved_timestamp is not None:
        lines.append(f"last_preserved_timestamp: {float(state.last_preserved_timestamp)!r}")
    return "\n".join(lines) + "\n"


def _parse_index(text, where):
    st = CheckpointState()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise ValueError(f"{where}:{n}: cannot parse {line!r}")
        key, val = m.groups()
        if key == "model_checkpoint_path":
            st.model_checkpoint_path = _unquote(val, f"{where}:{n}")
        elif key == "all_model_checkpoint_paths":
            st.all_model_checkpoint_paths.append(_unquote(val, f"{where}:{n}"))
        elif key == "all_model_checkpoint_timestamps":
            st.all_model_checkpoint_timestamps.append(float(val))
        elif key == "last_preserved_timestamp":
            st.last_preserved_timestamp = float(val)
        else:
            raise ValueError(f"{where}:{n}: unknown field {key!r}")
    return st


def _index_path(checkpoint_dir, latest_filename):
    return os.path.join(checkpoint_dir, latest_filename or "checkpoint")


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                            latest_filename=None, all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None, save_relative_paths=True):
    """Writes the index file of `save_dir` atomically. `model_checkpoint_path` is added
    to the end of `all_model_checkpoint_paths` if missing. With `save_relative_paths`
    the paths of checkpoints inside `save_dir` are written relative to it, so the
    directory can be moved."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths = [p for p in paths if p != model_checkpoint_path] + [model_checkpoint_path]

    base = os.path.abspath(save_dir)

    def rel(p):
        a = os.path.abspath(p)
        return os.path.relpath(a, base) if save_relative_paths else a

    if not _inside(save_dir, model_checkpoint_path):
        raise ValueError(f"update_checkpoint_state: model_checkpoint_path "
                         f"'{model_checkpoint_path}' is not inside save_dir '{save_dir}'")
    # A checkpoint index lists only its own directory's files (readers refuse others).
    stamps = list(all_model_checkpoint_timestamps or [])
    if len(stamps) == len(paths):
        kept = [(p, t) for p, t in zip(paths, stamps) if _inside(save_dir, p)]
        paths, stamps = [p for p, _ in kept], [t for _, t in kept]
    else:
        paths = [p for p in paths if _inside(save_dir, p)]
    state = CheckpointState(rel(model_checkpoint_path), [rel(p) for p in paths], stamps,
                            last_preserved_timestamp)
    path = _index_path(save_dir, latest_filename)
    atomic_write(path, _index_text(state))


def _inside(directory, path):
    """Whether `path` (relative paths to the working directory) resolves, links
    followed, to an entry inside `directory` (not `directory` itself)."""
    d = os.path.realpath(directory or ".")
    p = os.path.realpath(path)
    return p != d and os.path.commonpath([d, p]) == d


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The `CheckpointState` of `checkpoint_dir`'s index file, with relative paths made
    relative to `checkpoint_dir`, or None if there is no (readable) index file.

    Raises:
      PermissionDeniedError: the index names a path outside `checkpoint_dir` (after
        resolving ``..`` and links); see the module docstring.
      ValueError: the index has no ``model_checkpoint_path``.
    """
    checkpoint_dir = os.fspath(checkpoint_dir)
    path = _index_path(checkpoint_dir, latest_filename)
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", errors="surrogateescape")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    try:
        st = _parse_index(text, path)
    except ValueError as e:
        _log.warning("%s; checkpoint index ignored", e)
        return None
    if not st.model_checkpoint_path:
        raise ValueError(f"Invalid checkpoint state loaded from {path}: no "
                         "model_checkpoint_path")

    def absolute(p):
        full = p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)
        if not _inside(checkpoint_dir, full):
            raise errors.PermissionDeniedError(
                f"The checkpoint index {path} names {p!r}, which is outside its directory "
                f"{checkpoint_dir!r}: refusing to use it. An index may name only "
                "checkpoints in its own directory (mylib writes them relative to it); "
                "delete or rewrite the index.")
        return full

    st.model_checkpoint_path = absolute(st.model_checkpoint_path)
    st.all_model_checkpoint_paths = [absolute(p) for p in st.all_model_checkpoint_paths]
    return st


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint recorded in `checkpoint_dir`'s index file,
    or None if there is no index file or the checkpoint it names does not exist.

    Raises:
      PermissionDeniedError: the index names a path outside `checkpoint_dir`.
    """
    st = get_checkpoint_state(checkpoint_dir, latest_filename)
    if st is None or not st.model_checkpoint_path:
        return None
    if checkpoint_exists(st.model_checkpoint_path):
        return st.model_checkpoint_path
    _log.error("Couldn't find the checkpoint %s named by the index of %s",
               st.model_checkpoint_path, checkpoint_dir)
    return None


def load_checkpoint(ckpt_dir_or_file):
    """`{name: numpy array}` of a checkpoint (a prefix, or a directory: its latest)."""
    return read_checkpoint_file(_data_path(_resolve(ckpt_dir_or_file)))


def _resolve(ckpt_dir_or_file):
    p = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(p):
        latest = latest_checkpoint(p)
        if latest is None:
            raise errors.NotFoundError(f"No checkpoint found in directory {p}")
        return latest
    return p


def list_variables(ckpt_dir_or_file):
    """``[(name, shape), ...]`` sorted by name, of a checkpoint (prefix or directory);
    reads only the index."""
    idx = read_checkpoint_index(_data_path(_resolve(ckpt_dir_or_file)))
    return sorted((k, list(shape)) for k, (_dt, shape) in idx.items())


def load_variable(ckpt_dir_or_file, name):
    """The numpy value of `name` in a checkpoint (prefix or directory)."""
    if name.endswith(":0"):
        name = name[:-2]
    return read_checkpoint_file(_data_path(_resolve(ckpt_dir_or_file)), [name])[name]


# ---------------------------------------------------------------- Saver
def _is_var(v):
    return hasattr(v, "_key") and hasattr(v, "dtype") and hasattr(v, "shape")


def _var_dict(var_list):
    if isinstance(var_list, dict):
        out = {}
        for name, v in var_list.items():
            if not isinstance(name, str):
                raise TypeError(f"Saver: names in a var_list dict must be strings, got {name!r}")
            if not _is_var(v):
                raise TypeError(f"Saver: the value of '{name}' in var_list is not a "
                                f"Variable: {v!r}")
            out[name] = v
        return out
    if _is_var(var_list):
        var_list = [var_list]
    if not isinstance(var_list, (list, tuple, set, frozenset)):
        raise TypeError(f"Saver: var_list must be a list or dict of Variables, got "
                        f"{type(var_list).__name__}")
    out = {}
    for v in var_list:
        if not _is_var(v):
            raise TypeError(f"Saver: var_list holds {v!r}, which is not a Variable")
        name = v._key
        if name in out:
            if out[name] is v:
                raise ValueError(f"Saver: variable '{name}' appears twice in var_list")
            raise ValueError(f"At least two variables have the same name: {name}")
        out[name] = v
    return out


def _step_value(sess, step):
    if isinstance(step, (bool, np.bool_)):
        raise TypeError(f"global_step must be an int, a Variable or a Tensor, got {step!r}")
    if isinstance(step, (int, np.integer)):
        return int(step)
    if _is_var(step) or isinstance(step, (Tensor, str)):
        v = np.asarray(sess.run(step))
        if v.ndim != 0 or not (np.issubdtype(v.dtype, np.integer)):
            raise TypeError(f"global_step must evaluate to an integer scalar, got {v.dtype} "
                            f"of shape {v.shape}")
        return int(v)
    raise TypeError(f"global_step must be an int, a Variable or a Tensor, got {step!r}")


class Saver:
    """Saves and restores variables (TensorFlow 1's `tf.train.Saver`).

    Args:
      var_list: the variables to save: None (all `GLOBAL_VARIABLES` and
        ``"saveable_objects"`` of the default graph), a list of `Variable`s (saved under
        their op names, ``v.op.name``), or a dict ``{name_in_checkpoint: Variable}``.
      max_to_keep: how many recent checkpoints to keep; older ones are deleted after
        each save. None or 0 keeps all files (the index then lists only the newest).
      keep_checkpoint_every_n_hours: additionally keep one checkpoint per this many
        hours of training, exempt from `max_to_keep` (None: never).
      name: optional name (kept for TensorFlow compatibility).
      sharded: accepted for TensorFlow compatibility; the checkpoint is always one
        file (True warns once).
      save_relative_paths: write paths relative to the directory in the index file.
      allow_empty: allow no variables (`save` then writes nothing and returns None).
      defer_build: resolve `var_list` at the first `save`/`restore`/`build`.
      pad_step_number: write the step as ``%08d``.
      restore_sequentially: accepted for TensorFlow compatibility and ignored (True
        warns once): a restore reads and checks every value before assigning any, so
        a failed restore changes nothing.

    Example::

        saver = ml.train.Saver(max_to_keep=3)
        saver.save(sess, "/tmp/run/model.ckpt", global_step=step)   # model.ckpt-<step>
        saver.restore(sess, ml.train.latest_checkpoint("/tmp/run"))

    See this module's docstring for the file format and atomicity.
    """

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=None, name=None, restore_sequentially=False,
                 allow_empty=False, defer_build=False, pad_step_number=False,
                 save_relative_paths=True):
        if reshape:
            raise errors.UnimplementedError("Saver(reshape=True) is not supported")
        if sharded:
            warn_ignored("Saver", "sharded", "the checkpoint is always one file.")
        if restore_sequentially:
            warn_ignored("Saver", "restore_sequentially",
                         "a restore reads and checks every value before assigning any.")
        if max_to_keep is not None and max_to_keep < 0:
            raise ValueError(f"max_to_keep must be >= 0 or None, got {max_to_keep}")
        if keep_checkpoint_every_n_hours is not None and keep_checkpoint_every_n_hours <= 0:
            raise ValueError("keep_checkpoint_every_n_hours must be positive or None, got "
                             f"{keep_checkpoint_every_n_hours}")
        self._var_list_arg = var_list
        self._graph = get_default_graph()
        self.name = name or "save"
        self._sharded = bool(sharded)
        self._max_to_keep = max_to_keep
        self._keep_hours = keep_checkpoint_every_n_hours
        self._allow_empty = allow_empty
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._vars = None
        self._lock = threading.Lock()
        self._last_checkpoints = []  # [(prefix, timestamp)], oldest first
        self._to_delete = []
        self._last_preserved_timestamp = _now()
        self._next_checkpoint_time = (
            None if keep_checkpoint_every_n_hours is None
            else _now() + keep_checkpoint_every_n_hours * 3600.0)
        if not defer_build:
            self.build()

    def build(self):
        """Resolves `var_list` (done by the constructor unless `defer_build`)."""
        if self._vars is not None:
            return
        var_list = self._var_list_arg
        if var_list is None:
            g = self._graph
            var_list = list(g.get_collection(GraphKeys.GLOBAL_VARIABLES))
            var_list += [s for s in g.get_collection(
                getattr(GraphKeys, "SAVEABLE_OBJECTS", "saveable_objects")) if s not in var_list]
        vars_ = _var_dict(var_list)
        if not vars_ and not self._allow_empty:
            raise ValueError("No variables to save")
        self._vars = vars_

    # --- bookkeeping of recent checkpoints ---
    @property
    def last_checkpoints(self):
        """The prefixes of the checkpoints not yet deleted, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints):
        self.set_last_checkpoints_with_time([(p, _now()) for p in last_checkpoints])

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time):
        """Sets the list of recent checkpoints: ``[(prefix, timestamp), ...]``."""
        if not isinstance(last_checkpoints_with_time, list):
            raise TypeError("last_checkpoints_with_time must be a list")
        self._last_checkpoints = [(os.fspath(p), float(t)) for p, t in last_checkpoints_with_time]

    def recover_last_checkpoints(self, checkpoint_paths):
        """Adopts the existing checkpoints among `checkpoint_paths` (e.g. a previous
        run's ``get_checkpoint_state(dir).all_model_checkpoint_paths``), with their file
        times, so `max_to_keep` goes on counting them."""
        got = []
        for p in checkpoint_paths:
            t = get_checkpoint_mtimes([p])
            # Only real checkpoints are adopted (and so may be deleted by max_to_keep).
            if t and _is_checkpoint_file(_data_path(os.fspath(p))):
                got.append((p, t[0]))
        self.set_last_checkpoints_with_time(got)

    def _record(self, prefix):
        if not self._max_to_keep:
            return
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != prefix]
        self._last_checkpoints.append((prefix, _now()))
        while len(self._last_checkpoints) > self._max_to_keep:
            self._to_delete.append(self._last_checkpoints.pop(0))

    def _maybe_delete_old(self, meta_graph_suffix):
        while self._to_delete:
            p, t = self._to_delete.pop(0)
            if self._next_checkpoint_time is not None and t > self._next_checkpoint_time:
                self._next_checkpoint_time += self._keep_hours * 3600.0
                self._last_preserved_timestamp = t
                continue
            remove_checkpoint(p, meta_graph_suffix)

    # --- save / restore ---
    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True):
        """Saves the variables' values in `sess` to a checkpoint.

        Args:
          sess: the `Session` holding the values.
          save_path: the checkpoint prefix, e.g. ``"/tmp/run/model.ckpt"``; its
            directory must exist.
          global_step: optional int, integer `Variable` or `Tensor` (evaluated in
            `sess`); the prefix becomes ``save_path-<step>``.
          latest_filename: the index file's name in the directory (``"checkpoint"``).
          write_meta_graph: also write ``<prefix>.meta`` (the graph, its collections and
            the saver), as TF1 does by default; False skips it. A graph that cannot
            be written to a graph file gives a warning and no .meta file.
          write_state: update the index file and the `max_to_keep` bookkeeping.
        Returns:
          The prefix written (pass it to `restore`), or None for an empty saver.
        Raises:
          FailedPreconditionError: a variable is not initialized in `sess`.
          ValueError: the directory does not exist.
        """
        self.build()
        if not self._vars:
            return None
        save_path = os.fspath(save_path)
        latest_filename = latest_filename or "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        if global_step is not None:
            step = _step_value(sess, global_step)
            prefix = f"{save_path}-{step:08d}" if self._pad_step_number else f"{save_path}-{step}"
        else:
            prefix = save_path
        save_dir = os.path.dirname(prefix) or "."
        if not os.path.isdir(save_dir):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        if os.path.abspath(prefix) == os.path.abspath(os.path.join(save_dir, latest_filename)):
            raise ValueError(f"'latest_filename' collides with 'save_path': "
                             f"'{latest_filename}' and '{save_path}'")
        names = list(self._vars)
        keys = [self._vars[n]._key for n in names]
        values = sess.read_variables(keys)
        for n, k, v in zip(names, keys, values):
            if v is None:
                raise errors.FailedPreconditionError(
                    f"Attempting to save uninitialized variable '{k}' (as '{n}') to "
                    f"{prefix}: run its initializer or restore it first",
                    op=getattr(self._vars[n], "op", None))
            if v.dtype.kind in "OUS":
                raise errors.InvalidArgumentError(
                    f"Cannot save variable '{k}': dtype {v.dtype} is not an array dtype")
        arrays = dict(zip(names, values))
        for full, parts in self._sliced().items():
            # The shards of a sharded variable are saved as its whole value.
            arrays[full] = np.concatenate([arrays.pop(n) for _, n in parts], axis=0)
        write_checkpoint_file(prefix + DATA_SUFFIX, arrays,
                              stale_prefix=os.path.basename(save_path))
        if write_meta_graph:
            try:
                self.export_meta_graph(prefix + "." + meta_graph_suffix, sess.graph)
            except errors.InvalidArgumentError as e:
                # The values are saved; a graph holding what a graph file cannot carry
                # (an op attr that is a Python object) only loses its .meta file.
                warnings.warn(f"Saver.save: {prefix}.{meta_graph_suffix} not written: {e}",
                              stacklevel=2)
        if write_state:
            with self._lock:
                self._record(prefix)
                update_checkpoint_state(
                    save_dir, prefix, self.last_checkpoints or [prefix], latest_filename,
                    [t for _, t in self._last_checkpoints] or None,
                    self._last_preserved_timestamp, self._save_relative_paths)
                self._maybe_delete_old(meta_graph_suffix)
        return prefix

    def export_meta_graph(self, filename, graph=None):
        return meta_graph.export_meta_graph(filename=filename, graph=graph or self._graph)

    @with_x64
    def restore(self, sess, save_path):
        """Sets the variables in `sess` to the values in checkpoint `save_path`.

        Everything is checked before any variable changes: on any error every variable
        keeps its value. The variables need not be initialized first.

        Raises:
          ValueError: `save_path` is None.
          NotFoundError: no checkpoint at `save_path`, or a variable is missing from it.
          InvalidArgumentError: a shape or dtype differs (both are named).
          DataLossError: the file is truncated, foreign or corrupted.
        """
        import jax

        self.build()
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        path = _data_path(save_path)
        if not os.path.exists(path):
            raise errors.NotFoundError(
                f"Failed to find a checkpoint at '{save_path}' (no file '{path}'); "
                "ml.train.latest_checkpoint(dir) gives the newest one in a directory")
        index = read_checkpoint_index(path)
        missing, bad = [], []
        sliced = self._sliced()
        part_of = {n: full for full, parts in sliced.items() for _, n in parts}
        for full, parts in sliced.items():
            v0 = self._vars[parts[0][1]]
            want = v0._save_slice_info[1]
            if full not in index:
                missing.append(full)
            elif index[full][0] != v0.dtype.np:
                bad.append(f"'{full}': the variable has dtype {v0.dtype.name}, the "
                           f"checkpoint has {index[full][0].name}")
            elif list(index[full][1]) != list(want):
                bad.append(f"'{full}': the sharded variable has shape {TensorShape(want)}, "
                           f"the checkpoint has shape {TensorShape(index[full][1])}")
        for name, v in self._vars.items():
            if name in part_of:
                continue
            if name not in index:
                missing.append(name)
                continue
            dt, shape = index[name]
            if dt != v.dtype.np:
                bad.append(f"'{name}': the variable has dtype {v.dtype.name}, the checkpoint "
                           f"has {dt.name}")
            elif not TensorShape(v.shape).is_compatible_with(TensorShape(shape)):
                bad.append(f"'{name}': the variable has shape {TensorShape(v.shape)}, the "
                           f"checkpoint has shape {TensorShape(shape)}")
        if missing:
            held = sorted(index)
            shown = ", ".join(held[:20]) + (", ..." if len(held) > 20 else "")
            raise errors.NotFoundError(
                f"Key{'s' if len(missing) > 1 else ''} {', '.join(missing)} not found in "
                f"checkpoint {save_path} (it holds: {shown or 'nothing'})")
        if bad:
            raise errors.InvalidArgumentError(
                f"Restoring from checkpoint {save_path} failed: " + "; ".join(bad))
        # Reads (checksummed) and places every value before assigning any.
        arrays = read_checkpoint_file(
            path, [n for n in self._vars if n not in part_of] + list(sliced))
        for full, parts in sliced.items():  # each shard takes its rows of the whole
            for off, n in parts:
                rows = self._vars[n].shape.as_list()[0]
                arrays[n] = arrays[full][off:off + rows]
        placed = {v._key: jax.device_put(arrays[name], _variable_device(v))
                  for name, v in self._vars.items()}
        sess.assign_variables(placed)

    def _sliced(self):
        """{whole name: [(row offset, name), ...]} for the shards of sharded variables
        among the saved variables (kept under their own names), when all are there."""
        groups = {}
        for n, v in self._vars.items():
            info = getattr(v, "_save_slice_info", None)
            if info is not None and n == v._key:
                groups.setdefault(info[0], []).append((info[2], n))
        out = {}
        for full, parts in groups.items():
            parts.sort()
            rows = sum(self._vars[n].shape.as_list()[0] for _, n in parts)
            info = self._vars[parts[0][1]]._save_slice_info
            if rows == info[1][0] and full not in self._vars:
                out[full] = parts
        return out

    def __repr__(self):
        n = "?" if self._vars is None else len(self._vars)
        return f"<ml.train.Saver {n} variables, max_to_keep={self._max_to_keep}>"


# ---------------------------------------------------------------- global step
def get_global_step(graph=None):
    """The global step variable of `graph` (default graph), or None."""
    graph = graph or get_default_graph()
    coll = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(coll) > 1:
        _log.error("Multiple tensors in the global_step collection.")
        return None
    if coll:
        step = coll[0]
    else:
        step = getattr(graph, "_variables", {}).get("global_step")
        if step is None:
            return None
    assert_global_step(step)
    return step


def assert_global_step(global_step_tensor):
    """Raises TypeError unless it is an integer scalar Variable or Tensor."""
    if not (_is_var(global_step_tensor) or isinstance(global_step_tensor, Tensor)):
        raise TypeError(f"Existing 'global_step' must be a Variable or Tensor: "
                        f"{global_step_tensor!r}")
    if not global_step_tensor.dtype.is_integer:
        raise TypeError(f"Existing 'global_step' does not have integer type: "
                        f"{global_step_tensor.dtype.name}")
    shape = TensorShape(global_step_tensor.shape)
    if shape.rank not in (0, None):
        raise TypeError(f"Existing 'global_step' is not scalar: {shape}")


def create_global_step(graph=None):
    """Creates the global step: an int64 scalar, non-trainable variable named
    ``global_step`` in `GLOBAL_VARIABLES` and `GLOBAL_STEP`, initialized to 0.

    Raises:
      ValueError: the graph already has one.
    """

    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None), graph.control_dependencies(None):
        return Variable(np.int64(0), trainable=False, name="global_step", dtype=dtypes.int64,
                        shape=(), collections=[GraphKeys.GLOBAL_VARIABLES,
                                               GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    """The global step variable of `graph`, created if it has none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


def global_step(sess, global_step_tensor):
    """The int value of the global step in `sess`."""
    return _step_value(sess, global_step_tensor)


def _variable_device(v):
    """The local device a variable is placed on (its handle's device), or None for
    JAX's default device."""
    dev = v.handle.op.device
    if not dev:
        return None

    try:
        return get_device(dev)
    except _errors.InvalidArgumentError:
        return None  # not a local device (e.g. a parameter-server task): default


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None,
                      input_map=None, allow_host_effects=False, **kwargs):
    """Imports a meta graph into the default graph, rebuilds its collections and returns
    a `Saver` over its variables (TensorFlow's `tf.train.import_meta_graph`).

    Args:
      meta_graph_or_file: a `MetaGraphDef` or a path written by `export_meta_graph`.
      clear_devices: drop device strings.
      import_scope: name scope prefixed to imported names (default: none, so names and
        checkpoint keys are unchanged).
      input_map: as in `import_graph_def`.
      allow_host_effects: as in `import_graph_def` (default False: a `PrintV2` writing
        to a file, `py_func` tokens and other Python callables of this process are
        refused with `PermissionDeniedError`).
    Returns:
      A `Saver` over the imported variables, or None when the graph has none.
    Raises:
      DataLossError: if the file is malformed. Otherwise as `import_graph_def`.
      TypeError: for an unknown keyword argument.
    """
    if kwargs:
        raise unrecognized_kwargs("import_meta_graph", kwargs, [
            "meta_graph_or_file", "clear_devices", "import_scope", "input_map",
            "allow_host_effects"])
    variables = meta_graph.import_meta_graph_collections(
        meta_graph_or_file, clear_devices=clear_devices, import_scope=import_scope,
        input_map=input_map, allow_host_effects=allow_host_effects)
    return Saver(var_list=variables) if variables else None
