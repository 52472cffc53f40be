"""Atomic file writes: a temporary file in the target's directory, flushed and fsynced,
then renamed over the target (`os.replace`, atomic on POSIX). Checkpoints, graph and
meta-graph files and saved models all write through `atomic_write`.

Temporary files are named ``.<target name>.<host id>-<pid>-<random>.tmp``: the writer's
host (8 hex digits of a hash of its host name) and process id. A writer killed with
``kill -9`` cannot remove its temporary; the next `atomic_write` in that directory to a
target with the same name prefix removes such leftovers, but only those written on this
host by a process that no longer runs (a temporary of a live writer, or one written on
another host sharing the directory, is never touched), plus temporaries in the older
naming (``.<target name>.<8 random characters>.tmp``) that are over a day old.

This module imports nothing from mylib, so every room (core included) may use it.
"""

from __future__ import annotations

import os
import re
import socket
import tempfile
import time
import zlib

__all__ = ["atomic_write", "remove_stale_temps", "owner_tag", "owner_is_dead"]

# Temporaries in the naming used before the writer's pid was part of it are removed
# only when older than this (seconds): no save takes a day.
_LEGACY_TEMP_AGE = 86400.0
_HOST_ID = None


def _host_id():
    global _HOST_ID
    if _HOST_ID is None:
        _HOST_ID = f"{zlib.crc32(socket.gethostname().encode()) & 0xFFFFFFFF:08x}"
    return _HOST_ID


def owner_tag():
    """``<host id>-<pid>``: names this process in temporary file names."""
    return f"{_host_id()}-{os.getpid()}"


def _pid_alive(pid):
    if pid <= 0:
        return True  # not a real writer's pid: never treat it as dead
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: another user's live process
        return True
    try:  # a killed child not yet reaped is a zombie: it writes nothing any more
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def owner_is_dead(host, pid):
    """Whether the writer `host`-`pid` (from `owner_tag`) is known to be gone: it ran
    on this host and no process (or only a zombie) has that pid now."""
    return host == _host_id() and int(pid) != os.getpid() and not _pid_alive(int(pid))


_TEMP_TAIL = re.compile(r"\.(?:(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-)?[A-Za-z0-9_]{8}\.tmp$")


def remove_stale_temps(dirname, name_prefix):
    """Removes the temporaries `atomic_write` left in `dirname` (killed writers) for
    targets whose names start with `name_prefix`: those of a dead writer of this host,
    and those in the older naming over a day old. Returns the paths removed.
    Never raises for a file it cannot inspect or remove."""
    removed = []
    head = "." + name_prefix
    try:
        entries = os.scandir(dirname or ".")
    except OSError:
        return removed
    with entries:
        for e in entries:
            if not (e.name.startswith(head) and e.name.endswith(".tmp")):
                continue
            m = _TEMP_TAIL.search(e.name)
            if m is None or m.start() < len(head):
                continue
            try:
                if not e.is_file(follow_symlinks=False):
                    continue
                if m.group("pid") is not None:
                    stale = owner_is_dead(m.group("host"), m.group("pid"))
                else:
                    stale = time.time() - e.stat(follow_symlinks=False).st_mtime \
                        > _LEGACY_TEMP_AGE
                if stale:
                    os.remove(e.path)
                    removed.append(e.path)
            except OSError:
                pass
    return removed


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


def atomic_write(path, data, makedirs=False, stale_prefix=None):
    """Writes `data` to `path` atomically: on any error `path` is untouched and the
    temporary file is removed; a process killed mid-write leaves `path` as it was (and
    a temporary that the next write to the directory removes, see the module).

    Args:
      path: the file to write.
      data: `bytes`, `str` (written as UTF-8), or a list of bytes-like chunks.
      makedirs: create `path`'s directory when missing.
      stale_prefix: remove leftover temporaries of targets whose names start with this
        (default: `path`'s own name), e.g. every step of a checkpoint prefix.
    Returns:
      `path`.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    chunks = [data] if isinstance(data, (bytes, bytearray, memoryview)) else data
    dirname = os.path.dirname(os.path.abspath(path))
    if makedirs:
        os.makedirs(dirname, exist_ok=True)
    name = os.path.basename(path)
    remove_stale_temps(dirname, name if stale_prefix is None else stale_prefix)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.{owner_tag()}-", suffix=".tmp", dir=dirname)
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
