"""Atomic file writes: a temporary file in the target's directory, flushed and fsynced,
then renamed over the target (`os.replace`, atomic on POSIX). Checkpoints, graph and
meta-graph files and saved models all write through `atomic_write`.

This module imports nothing from mylib, so every room (core included) may use it.
"""

from __future__ import annotations

import os
import tempfile

__all__ = ["atomic_write"]


def _write_chunks(f, chunks):
    """Writes `chunks` (bytes-like) to the open file `f` (a seam for crash tests)."""
    for c in chunks:
        f.write(c)


def _fsync_dir(dirname):
    try:
        fd = os.open(dirname or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path, data, makedirs=False):
    """Writes `data` to `path` atomically: on any error `path` is untouched and the
    temporary file is removed; a process killed mid-write leaves `path` as it was.

    Args:
      path: the file to write.
      data: `bytes`, `str` (written as UTF-8), or a list of bytes-like chunks.
      makedirs: create `path`'s directory when missing.
    Returns:
      `path`.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    chunks = [data] if isinstance(data, (bytes, bytearray, memoryview)) else data
    dirname = os.path.dirname(os.path.abspath(path))
    if makedirs:
        os.makedirs(dirname, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=dirname)
    try:
        with os.fdopen(fd, "wb") as f:
            _write_chunks(f, chunks)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(dirname)
    return path
