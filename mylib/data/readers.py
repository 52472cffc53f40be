"""File readers of `tf.data`: `TextLineDataset`."""

from __future__ import annotations

import gzip
import zlib

import numpy as np

from mylib.data.dataset import UNKNOWN_CARDINALITY, Dataset, TensorSpec

__all__ = ["TextLineDataset"]


def _filenames(filenames):
    if isinstance(filenames, (str, bytes)):
        names = [filenames]
    else:
        if hasattr(filenames, "op"):
            raise TypeError("TextLineDataset: `filenames` must be Python strings (mylib's "
                            "datasets run on the host); got the graph tensor "
                            f"'{filenames.name}'")
        names = list(np.asarray(filenames, dtype=object).reshape(-1))
    out = []
    for n in names:
        if not isinstance(n, (str, bytes)):
            raise TypeError(f"TextLineDataset: filenames must be strings. Received: {n!r}")
        out.append(n.decode() if isinstance(n, bytes) else n)
    return out


def _lines(path, compression):
    if compression == "GZIP":
        f = gzip.open(path, "rb")
    elif compression == "ZLIB":
        with open(path, "rb") as raw:
            data = zlib.decompress(raw.read())
        f = None
    else:
        f = open(path, "rb")
    if f is not None:
        with f:
            data = f.read()
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()                      # a final newline ends the last line
    for line in parts:
        yield np.array(line[:-1] if line.endswith(b"\r") else line, dtype=object)


def TextLineDataset(filenames, compression_type=None, buffer_size=None,  # noqa: N802
                    num_parallel_reads=None):
    """A dataset of the lines of text files: one scalar string element (`bytes`) per
    line, without its ``\\n`` (or ``\\r\\n``), file after file.

    Args:
      filenames: a path or a list of paths (Python strings; read each time the dataset
        is iterated).
      compression_type: None or "" (plain), "GZIP" or "ZLIB".
      buffer_size: accepted; files are read whole.
      num_parallel_reads: with N > 1, lines of N files are interleaved one at a time
        (TensorFlow's deterministic order for parallel reads); the reading itself is
        sequential.
    Returns:
      `Dataset` of string scalars (numpy object arrays holding `bytes`); through an
      iterator's `get_next()` a `tf.string` tensor.
    Raises:
      TypeError: filenames that are not strings (a graph tensor of filenames is not
        supported: mylib's datasets run on the host).
      ValueError: an unknown `compression_type`.
      FileNotFoundError: (when iterated) a missing file.
    """
    names = _filenames(filenames)
    comp = (compression_type or "").upper()
    if comp not in ("", "GZIP", "ZLIB"):
        raise ValueError("TextLineDataset: compression_type must be None, '', 'GZIP' or "
                         f"'ZLIB'. Received: {compression_type!r}")
    cycle = int(num_parallel_reads or 1)

    def gen(env):
        if cycle <= 1:
            for n in names:
                yield from _lines(n, comp)
            return
        pending = [iter(_lines(n, comp)) for n in names]
        active, nxt = pending[:cycle], cycle
        while active:
            for i, it in enumerate(list(active)):
                try:
                    yield next(it)
                except StopIteration:
                    j = active.index(it)
                    if nxt < len(pending):
                        active[j] = pending[nxt]
                        nxt += 1
                        try:
                            yield next(active[j])
                        except StopIteration:
                            active.pop(j)
                    else:
                        active.pop(j)

    return Dataset(gen, TensorSpec((), object), UNKNOWN_CARDINALITY)
