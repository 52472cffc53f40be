"""`split_dataset`: Keras 3's train / test split of in-memory data, as `ml.data`
datasets."""

from __future__ import annotations

import random

import numpy as np

__all__ = ["split_dataset"]


def _split_sizes(left_size, right_size, total):
    """``(left, right)`` sample counts, by Keras 3's rules and messages
    (``_rescale_dataset_split_sizes``): a float is a fraction of `total` (rounded), an
    int a count; a missing side is the complement of the other."""
    for nm, v in (("left_size", left_size), ("right_size", right_size)):
        if v is not None and type(v) not in (int, float):
            raise TypeError(f"Invalid `{nm}` Type. Expected: int or float or None, "
                            f"Received: type({nm})={type(v)}.")
    if left_size is None and right_size is None:
        raise ValueError("At least one of the `left_size` or `right_size` must be "
                         "specified. Received: left_size=None and right_size=None")
    if left_size == 0 and right_size == 0:
        raise ValueError("Both `left_size` and `right_size` are zero. At least one of the "
                         "split sizes must be non-zero.")
    for nm, v in (("left_size", left_size), ("right_size", right_size)):
        if (type(v) is int and not 0 < v < total) or (type(v) is float and not 0 < v < 1):
            raise ValueError(f"`{nm}` should be either a positive integer smaller than "
                             f"{total}, or a float within the range `[0, 1]`. Received: "
                             f"{nm}={v}")
    if type(left_size) is float and type(right_size) is float and left_size + right_size > 1:
        raise ValueError("The sum of `left_size` and `right_size` is greater than 1. It "
                         "must be less than or equal to 1.")
    left = round(left_size * total) if type(left_size) is float else left_size
    right = round(right_size * total) if type(right_size) is float else right_size
    if left is None:
        left = total - right
    elif right is None:
        right = total - left
    if left + right > total:
        raise ValueError("The sum of `left_size` and `right_size` should be smaller than "
                         f"the {total}. Received: left_size + right_size = {left + right} "
                         f"and total_length = {total}")
    for n, side in ((left, "left"), (right, "right")):
        if n == 0:
            raise ValueError(f"With `dataset` of length={total}, `left_size`={left} and "
                             f"`right_size`={right}. Resulting {side} side dataset split "
                             "will be empty. Adjust any of the aforementioned parameters")
    return int(left), int(right)


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None):
    """Splits in-memory data into a left and a right dataset (train / test), as Keras 3.

    The left split holds the first `left_size` samples, the right one the last
    `right_size` (after shuffling, if asked); samples in neither are dropped.

    Args:
      dataset: a numpy array (samples along axis 0), or a tuple / list of arrays of the
        same length (each sample is then a tuple, as ``(x, y)``).
      left_size: a float in (0, 1), the fraction of samples (rounded) in the left
        split; or an int, their number; None: the complement of `right_size`.
      right_size: likewise for the right split.
      shuffle: shuffle the samples before splitting.
      seed: the shuffle's seed (an int). The order is Keras's for the same seed
        (Python's ``random.Random(seed).shuffle``), without touching the global
        `random` state; None draws a seed.
    Returns:
      ``(left, right)``: two `ml.data.Dataset` of single samples (``.batch(n)`` them,
      or pass them to `fit`; Keras returns ``tf.data.Dataset``).
    Raises:
      TypeError: `dataset` of another type, or sizes that are not int / float.
      ValueError: arrays of different lengths, or sizes that leave a split empty or
        exceed the data (Keras's messages).
    """
    from mylib.data import Dataset

    if isinstance(dataset, np.ndarray):
        arrays, as_tuple = [dataset], False
    elif isinstance(dataset, (tuple, list)) and dataset:
        arrays, as_tuple = [np.asarray(a) for a in dataset], True
    else:
        raise TypeError("The `dataset` argument must be a numpy array or a tuple / list of "
                        f"arrays. Received: dataset of type {type(dataset)}")
    total = len(arrays[0])
    if any(len(a) != total for a in arrays):
        raise ValueError("The arrays of `dataset` must have the same length. Received "
                         f"lengths {[len(a) for a in arrays]}")
    left, right = _split_sizes(left_size, right_size, total)
    order = list(range(total))
    if shuffle:
        random.Random(random.randint(0, int(1e6)) if seed is None else seed).shuffle(order)
    order = np.asarray(order, dtype=np.int64)

    def part(idx):
        taken = [a[idx] for a in arrays]
        return Dataset.from_tensor_slices(tuple(taken) if as_tuple else taken[0])

    return part(order[:left]), part(order[total - right:])
