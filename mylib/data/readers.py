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


_CHUNK = 1 << 20  # bytes read (and, compressed, decompressed) at a time


def _raw_chunks(path):
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            yield chunk


def _gzip_chunks(path):
    with gzip.open(path, "rb") as f:
        while chunk := f.read(_CHUNK):  # at most _CHUNK decompressed bytes at a time
            yield chunk


def _zlib_chunks(path):
    d = zlib.decompressobj()
    for raw in _raw_chunks(path):
        while raw and not d.eof:
            out = d.decompress(raw, _CHUNK)  # bounded output, even for a zip bomb
            if out:
                yield out
            raw = d.unconsumed_tail
    if not d.eof:
        raise EOFError("the ZLIB stream ends before its end-of-stream marker")


def _lines(path, compression):
    """The lines of one file, streamed: memory is bounded by the longest line, not by
    the file (or what it decompresses to). A corrupt or truncated compressed file is a
    `DataLossError` naming it, raised when the reader reaches the damage (the lines
    before it are yielded, as TensorFlow's reader does)."""
    from mylib import errors

    chunks = {"GZIP": _gzip_chunks, "ZLIB": _zlib_chunks}.get(compression, _raw_chunks)
    pending = []
    try:
        for chunk in chunks(path):
            start = 0
            while (i := chunk.find(b"\n", start)) >= 0:
                pending.append(chunk[start:i])
                yield _line(b"".join(pending))
                pending, start = [], i + 1
            if start < len(chunk):
                pending.append(chunk[start:])
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise errors.DataLossError(
            f"TextLineDataset: {path} is not a valid {compression} file, or it is "
            f"truncated or corrupted ({type(e).__name__}: {e})") from None
    if pending:  # a last line without a final newline
        yield _line(b"".join(pending))


def _line(b):
    return np.array(b[:-1] if b.endswith(b"\r") else b, dtype=object)


def TextLineDataset(filenames, compression_type=None, buffer_size=None,  # noqa: N802
                    num_parallel_reads=None):
    """A dataset of the lines of text files: one scalar string element (`bytes`) per
    line, without its ``\\n`` (or ``\\r\\n``), file after file.

    Args:
      filenames: a path or a list of paths (Python strings; read each time the dataset
        is iterated).
      compression_type: None or "" (plain), "GZIP" or "ZLIB".
      buffer_size: accepted; files are streamed in 1 MiB chunks (memory is bounded by
        the longest line, whatever a compressed file expands to).
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
      DataLossError: (when iterated, after the lines before the damage) a GZIP or ZLIB
        file that is corrupted, truncated or not compressed in that format.
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
