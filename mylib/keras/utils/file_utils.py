"""`get_file` without a network: the cache is read, nothing is downloaded."""

from __future__ import annotations

import hashlib
import os
import tarfile
import zipfile

__all__ = ["get_file", "keras_home"]


def keras_home():
    """The Keras cache root: ``$KERAS_HOME``, else ``~/.keras`` (as Keras)."""
    return os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")


def _hash(path, algorithm):
    h = hashlib.sha256() if algorithm in ("sha256", "auto") else hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False,
             archive_format="auto", cache_dir=None, force_download=False):
    """The local path of a file Keras would download from `origin` into its cache
    (``<cache_dir or KERAS_HOME or ~/.keras>/<cache_subdir>/<fname>``).

    mylib never downloads: when the file is in the cache, its path is returned (checked
    against `file_hash` / `md5_hash` when given, and extracted with `extract` /
    `untar`, as Keras); when it is not, the error names the URL and the path to place
    it at.

    Raises:
      FileNotFoundError: the file is not in the cache (the message says where to put
        it).
      ValueError: the cached file's hash differs from `file_hash`, or neither `fname`
        nor `origin` is given.
    """
    if not fname and not origin:
        raise ValueError("get_file needs `fname` or `origin`.")
    if not fname:
        fname = os.path.basename(origin.split("?")[0])
    if untar:
        extract = True
    root = cache_dir or keras_home()
    datadir = fname if os.path.isabs(fname) else os.path.join(root, cache_subdir)
    path = fname if os.path.isabs(fname) else os.path.join(datadir, fname)
    if untar and not os.path.splitext(path)[1]:
        archive = path + ".tar.gz"
    else:
        archive = path
    if not os.path.exists(archive):
        if extract and os.path.exists(path) and os.path.isdir(path):
            return path
        raise FileNotFoundError(
            f"get_file: '{fname}' is not in the Keras cache and mylib does not download "
            f"files. Download it from {origin} and place it at {archive} (the cache root "
            "is $KERAS_HOME, else ~/.keras).")
    want = file_hash or md5_hash
    if want:
        algo = "md5" if md5_hash and not file_hash else (
            hash_algorithm if hash_algorithm != "auto" else
            ("sha256" if len(want) == 64 else "md5"))
        got = _hash(archive, algo)
        if got != want:
            raise ValueError(f"get_file: the cached file {archive} has {algo} hash {got}, "
                             f"expected {want}; replace it with the file from {origin}.")
    if not extract:
        return archive
    target = path[:-7] if archive.endswith(".tar.gz") and archive == path else path
    if archive == target:
        target = os.path.splitext(archive)[0] + "_extracted"
    if not os.path.exists(target):
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                z.extractall(target)
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive) as t:
                t.extractall(target, filter="data")
        else:
            raise ValueError(f"get_file: cannot extract {archive} (not a zip or tar file).")
    return target
