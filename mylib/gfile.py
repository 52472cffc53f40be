"""`ml.gfile` / `ml.io.gfile`: TensorFlow's file API on the local file system.

Both spellings: TensorFlow 2's (`exists`, `makedirs`, `rmtree`, `GFile`, `glob`,
`listdir`, `isdir`, `remove`, `rename`, `copy`, `stat`, `walk`) and TensorFlow 1's
(`Exists`, `MakeDirs`, `DeleteRecursively`, `Open`, `Glob`, `ListDirectory`,
`IsDirectory`, `Remove`, `Rename`, `Copy`, `Stat`, `Walk`, `FastGFile`).

Differs from TensorFlow: only local paths (and ``file://`` URLs); other schemes
(``gs://``, ``hdfs://``, ``s3://``) raise `UnimplementedError`. Missing files raise
`mylib.errors.NotFoundError`, existing targets `AlreadyExistsError` (TensorFlow's
classes); other OS errors pass through.
"""

from __future__ import annotations

import glob as _glob
import os
import shutil

from mylib import errors

__all__ = ["GFile", "FastGFile", "Open", "exists", "Exists", "makedirs", "MakeDirs", "mkdir",
           "MkDir", "rmtree", "DeleteRecursively", "remove", "Remove", "rename", "Rename",
           "copy", "Copy", "glob", "Glob", "listdir", "ListDirectory", "isdir", "IsDirectory",
           "stat", "Stat", "walk", "Walk", "join", "GFileStat"]


def _path(p):
    p = os.fspath(p)
    if isinstance(p, bytes):
        p = p.decode()
    if p.startswith("file://"):
        return p[len("file://"):]
    if "://" in p:
        raise errors.UnimplementedError(
            f"File system scheme '{p.split('://')[0]}' not implemented (file: '{p}'): "
            "mylib's gfile reads and writes local paths only")
    return p


def _not_found(p, what="file"):
    return errors.NotFoundError(f"{p}; No such {what} or directory")


class GFile:
    """A file object (TensorFlow's ``tf.io.gfile.GFile``): ``mode`` as `open`'s
    (``"r"``, ``"w"``, ``"a"``, ``"rb"``, ``"wb"``, ...); text modes read and write
    `str`, binary modes `bytes`. A context manager and an iterator over lines.

    Raises:
      NotFoundError: opening a missing file for reading.
    """

    def __init__(self, name, mode="r"):
        self._name = _path(name)
        self._mode = mode
        try:
            self._f = open(self._name, mode)  # noqa: SIM115 - closed by close()
        except FileNotFoundError:
            raise _not_found(self._name) from None

    @property
    def name(self):
        return self._name

    @property
    def mode(self):
        return self._mode

    def read(self, n=-1):
        return self._f.read(n)

    def readline(self):
        return self._f.readline()

    def readlines(self):
        return self._f.readlines()

    def write(self, file_content):
        if "b" in self._mode and isinstance(file_content, str):
            file_content = file_content.encode()
        elif "b" not in self._mode and isinstance(file_content, (bytes, bytearray)):
            file_content = bytes(file_content).decode()
        self._f.write(file_content)

    def seek(self, offset=None, whence=0, position=None):
        if position is not None:
            offset = position
        return self._f.seek(offset or 0, whence)

    def tell(self):
        return self._f.tell()

    def size(self):
        return os.path.getsize(self._name)

    def flush(self):
        self._f.flush()

    def close(self):
        self._f.close()

    def seekable(self):
        return True

    def __iter__(self):
        return iter(self._f)

    def __next__(self):
        return next(self._f)

    def next(self):
        return next(self._f)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


FastGFile = GFile
Open = GFile


def exists(path):
    """Whether `path` exists."""
    return os.path.exists(_path(path))


def isdir(path):
    return os.path.isdir(_path(path))


def makedirs(path):
    """Creates `path` and its parents; no error if it exists."""
    os.makedirs(_path(path), exist_ok=True)


def mkdir(path):
    """Creates one directory. Raises AlreadyExistsError if it exists,
    NotFoundError if its parent does not."""
    p = _path(path)
    try:
        os.mkdir(p)
    except FileExistsError:
        raise errors.AlreadyExistsError(f"{p}; File exists") from None
    except FileNotFoundError:
        raise _not_found(p) from None


def rmtree(path):
    """Deletes a directory and everything below it. Raises NotFoundError if missing."""
    p = _path(path)
    if not os.path.exists(p):
        raise _not_found(p)
    shutil.rmtree(p)


def remove(path):
    """Deletes a file. Raises NotFoundError if missing."""
    p = _path(path)
    try:
        os.remove(p)
    except FileNotFoundError:
        raise _not_found(p) from None


def rename(oldname, newname, overwrite=False):
    """Renames a file or directory. Raises AlreadyExistsError if `newname` exists
    and not `overwrite`; NotFoundError if `oldname` is missing."""
    src, dst = _path(oldname), _path(newname)
    if not os.path.exists(src):
        raise _not_found(src)
    if os.path.exists(dst) and not overwrite:
        raise errors.AlreadyExistsError(f"{dst}; File already exists")
    os.replace(src, dst)


def copy(oldpath, newpath, overwrite=False):
    """Copies a file. Raises AlreadyExistsError if `newpath` exists and not
    `overwrite`; NotFoundError if `oldpath` is missing."""
    src, dst = _path(oldpath), _path(newpath)
    if not os.path.exists(src):
        raise _not_found(src)
    if os.path.exists(dst) and not overwrite:
        raise errors.AlreadyExistsError(f"{dst}; File already exists")
    shutil.copyfile(src, dst)


def glob(pattern):
    """The paths matching `pattern` (a string or a list of patterns), sorted."""
    pats = [pattern] if isinstance(pattern, (str, bytes, os.PathLike)) else list(pattern)
    out = []
    for p in pats:
        out.extend(_glob.glob(_path(p)))
    return sorted(out)


def listdir(path):
    """The entry names of a directory (not paths), without ``.``/``..``. Raises
    NotFoundError if it is missing."""
    p = _path(path)
    if not os.path.isdir(p):
        raise _not_found(p, "directory")
    return os.listdir(p)


class GFileStat:
    """`stat` results: `length` (bytes), `mtime_nsec`, `is_directory`."""

    def __init__(self, length, mtime_nsec, is_directory):
        self.length, self.mtime_nsec, self.is_directory = length, mtime_nsec, is_directory


def stat(path):
    p = _path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise _not_found(p) from None
    return GFileStat(st.st_size, st.st_mtime_ns, os.path.isdir(p))


def walk(top, topdown=True, onerror=None):
    """``(dirname, subdirs, files)`` for each directory under `top` (as `os.walk`)."""
    yield from os.walk(_path(top), topdown=topdown, onerror=onerror)


def join(path, *paths):
    return os.path.join(path, *paths)


# TensorFlow 1's names.
Exists = exists
IsDirectory = isdir
MakeDirs = makedirs
MkDir = mkdir
DeleteRecursively = rmtree
Remove = remove
Rename = rename
Copy = copy
Glob = glob
ListDirectory = listdir
Stat = stat
Walk = walk
