"""Accuracy metrics: exact, binary, categorical, sparse categorical and top-k, each a
per-sample function and a `MeanMetricWrapper` of it."""

from __future__ import annotations

from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, indexing_ops, math_ops, reduction_ops
from mylib.losses import squeeze_or_expand_to_same_rank
from mylib.metrics.base import MeanMetricWrapper, _float


def accuracy(y_true, y_pred):
    """1.0 where ``y_true == y_pred`` (aligned as losses do), else 0.0."""
    y_pred = convert_to_tensor(y_pred)
    y_true = convert_to_tensor(y_true, dtype_hint=y_pred.dtype)
    if y_true.dtype != y_pred.dtype:
        y_true = math_ops.cast(y_true, y_pred.dtype)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return math_ops.cast(math_ops.equal(y_true, y_pred), _dtypes.float32)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """Per-sample fraction of ``(y_pred > threshold) == y_true`` (mean over the last axis
    for rank >= 2, as Keras 2; ``[N]`` and ``[N, 1]`` align)."""
    y_pred = _float(y_pred)
    y_true = _float(y_true)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    hits = math_ops.cast(math_ops.equal(
        y_true, math_ops.cast(math_ops.greater(y_pred, threshold), _dtypes.float32)),
        _dtypes.float32)
    if hits.shape.rank is not None and hits.shape.rank >= 2:
        hits = reduction_ops.reduce_mean(hits, axis=-1)
    return hits


def categorical_accuracy(y_true, y_pred):
    """1.0 where ``argmax(y_true) == argmax(y_pred)`` over the last axis."""
    return math_ops.cast(math_ops.equal(reduction_ops.argmax(y_true, axis=-1),
                                        reduction_ops.argmax(y_pred, axis=-1)), _dtypes.float32)


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where the label ``y_true`` (``[N]`` or ``[N, 1]``, int or float) equals
    ``argmax(y_pred, -1)``; returns ``[N]``."""
    y_pred = convert_to_tensor(y_pred)
    y_true = convert_to_tensor(y_true, dtype_hint=_dtypes.int64)
    if (y_true.shape.rank is not None and y_pred.shape.rank is not None
            and y_true.shape.rank == y_pred.shape.rank and y_true.shape.as_list()[-1] == 1):
        y_true = array_ops.squeeze(y_true, axis=[-1])
    # int32 labels compare with int32 indices (the same values): no 64-bit op in a
    # 32-bit step.
    pred = reduction_ops.argmax(y_pred, axis=-1, output_type=_dtypes.int32
                                if y_true.dtype == _dtypes.int32 else _dtypes.int64)
    if pred.dtype != y_true.dtype:
        pred = math_ops.cast(pred, y_true.dtype)
    return math_ops.cast(math_ops.equal(y_true, pred), _dtypes.float32)


# ------------------------------------------------------------ classes
class Accuracy(MeanMetricWrapper):
    """How often ``y_pred == y_true`` exactly."""

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often ``(y_pred > threshold) == y_true``."""

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold


class CategoricalAccuracy(MeanMetricWrapper):
    """How often ``argmax(y_pred) == argmax(y_true)`` (one-hot targets)."""

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often ``argmax(y_pred) == y_true`` (integer labels ``[N]`` or ``[N, 1]``)."""

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


# ------------------------------------------------------------ top-k
def _in_top_k(y_pred, labels, k):
    """1.0 where fewer than `k` scores are strictly greater than the label's score (TF's
    `in_top_k`: ties count as in)."""
    y_pred = _float(y_pred)
    depth = y_pred.shape.as_list()[-1]
    onehot = indexing_ops.one_hot(labels, depth, dtype=_dtypes.float32)
    target = reduction_ops.reduce_sum(onehot * y_pred, axis=-1, keepdims=True)
    above = reduction_ops.reduce_sum(math_ops.cast(math_ops.greater(y_pred, target),
                                              _dtypes.float32), axis=-1)
    return math_ops.cast(math_ops.less(above, float(k)), _dtypes.float32)


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where ``argmax(y_true)`` is among the `k` highest scores of `y_pred`."""
    return _in_top_k(y_pred, reduction_ops.argmax(y_true, axis=-1), k)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the label `y_true` (``[N]`` or ``[N, 1]``) is among the `k` highest
    scores of `y_pred`."""
    y_pred = _float(y_pred)
    y_true = convert_to_tensor(y_true, dtype_hint=_dtypes.int64)
    if (y_true.shape.rank is not None and y_pred.shape.rank is not None
            and y_true.shape.rank == y_pred.shape.rank and y_true.shape.as_list()[-1] == 1):
        y_true = array_ops.squeeze(y_true, axis=[-1])
    if not y_true.dtype.is_integer:
        y_true = math_ops.cast(y_true, _dtypes.int64)
    return _in_top_k(y_pred, y_true, k)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot target is in the top `k` predictions."""

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype, k=k)
        self.k = k


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer label is in the top `k` predictions."""

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None):
        super().__init__(sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k)
        self.k = k
