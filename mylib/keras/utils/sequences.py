"""Sequence padding and the `PyDataset` input class."""

from __future__ import annotations

import numpy as np

__all__ = ["pad_sequences", "PyDataset", "Sequence"]


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """A ``[len(sequences), maxlen]`` array of the sequences, padded with `value` and
    truncated to `maxlen` (default: the longest), as Keras's `pad_sequences`.

    Args:
      sequences: a list of lists (or 1-D arrays) of ints / floats; entries may themselves
        be arrays of one shape (then the output has that shape as trailing axes).
      padding, truncating: ``"pre"`` or ``"post"``: where values are added / removed.
    Raises:
      ValueError: for a bad `padding` / `truncating`, or entries of different shapes.
    """
    if padding not in ("pre", "post"):
        raise ValueError(f'`padding` must be "pre" or "post". Received: padding={padding!r}')
    if truncating not in ("pre", "post"):
        raise ValueError('`truncating` must be "pre" or "post". Received: '
                         f"truncating={truncating!r}")
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable (a list of sequences).")
    seqs = [np.asarray(s) for s in sequences]
    lengths = [len(s) for s in seqs]
    if maxlen is None:
        maxlen = max(lengths) if lengths else 0
    sample_shape = ()
    for s in seqs:
        if len(s):
            sample_shape = s.shape[1:]
            break
    is_str = np.issubdtype(np.dtype(dtype), np.str_) or np.issubdtype(np.dtype(dtype),
                                                                       np.object_)
    if isinstance(value, str) and not is_str:
        raise ValueError(f"`dtype` {dtype} is not compatible with the padding value "
                         f"{value!r}; use dtype=object for strings.")
    out = np.full((len(seqs), maxlen) + sample_shape, value, dtype=dtype)
    for i, s in enumerate(seqs):
        if not len(s) or not maxlen:
            continue
        trunc = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        if trunc.shape[1:] != sample_shape:
            raise ValueError(f"Shape of sample {i} ({trunc.shape[1:]}) differs from the "
                             f"expected shape {sample_shape}.")
        if padding == "post":
            out[i, :len(trunc)] = trunc
        else:
            out[i, -len(trunc):] = trunc
    return out


class PyDataset:
    """Keras 3's indexable batch source: subclass it with ``__len__`` (batches per
    epoch) and ``__getitem__(index)`` returning ``x``, ``(x, y)`` or
    ``(x, y, sample_weight)`` numpy batches; `on_epoch_end` runs after each pass.

    `fit` / `evaluate` / `predict` take it as `x` like a dataset: each epoch reads
    batches ``0 .. len - 1`` in order (shuffle inside `__getitem__` / `on_epoch_end` if
    wanted). `workers`, `use_multiprocessing` and `max_queue_size` are accepted and
    ignored: batches are read in the training thread.
    """

    _is_batch_sequence = True  # fit / evaluate / predict take it like a dataset

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self.workers, self.use_multiprocessing = workers, use_multiprocessing
        self.max_queue_size = max_queue_size

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement `__len__`")

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement `__getitem__`")

    @property
    def num_batches(self):
        return len(self)

    def on_epoch_end(self):
        """Called after each pass over the batches."""

    def cardinality(self):
        """The number of batches (what `fit` reads as the epoch length)."""
        return len(self)

    def __iter__(self):
        """One pass over the batches, then `on_epoch_end`."""
        for i in range(len(self)):
            yield self[i]
        self.on_epoch_end()


Sequence = PyDataset
