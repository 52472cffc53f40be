"""Intersection-over-union metrics, as Keras 3's: `IoU` (of chosen classes), `MeanIoU`
(of all classes), `BinaryIoU` (thresholded scores), `OneHotIoU` and `OneHotMeanIoU`
(one-hot targets), all from one weighted ``[num_classes, num_classes]`` confusion
matrix (rows: targets, columns: predictions).

Keras 3 keeps the matrix in int32 unless given a `dtype` (float sample weights are
truncated there, with a warning); mylib keeps it in float32 (``dtype``), so fractional
weights count in full. With integer weights, or none, the results agree.
"""

from __future__ import annotations

from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import (array_ops, constant_ops, indexing_ops, linalg_ops, math_ops,
                            reduction_ops)
from mylib.metrics.base import Metric, _float, _graph_of, _weights_like

_EPSILON = 1e-7


class _IoUBase(Metric):
    """The confusion-matrix state and update shared by the IoU metrics."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(name=name, dtype=dtype)
        self.num_classes = int(num_classes)
        self.ignore_class = ignore_class
        self.sparse_y_true, self.sparse_y_pred, self.axis = sparse_y_true, sparse_y_pred, axis

    def build_state(self):
        c = self.num_classes
        self.total_cm = self._add_state("total_confusion_matrix", [c, c])

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds one batch to the confusion matrix; returns the update `Operation`.

        Args:
          y_true: class ids ``[...]`` (or scores / one-hot ``[..., num_classes]`` when
            not `sparse_y_true`: argmax over `axis`).
          y_pred: class ids, or scores ``[..., num_classes]`` when not `sparse_y_pred`.
          sample_weight: optional weights, broadcastable to the class ids.
        Entries whose target or prediction is outside ``[0, num_classes)``, or whose
        target is `ignore_class`, are not counted.
        """
        g = self._ensure_state(_graph_of(y_pred, y_true))
        c = self.num_classes
        with g.as_default(), g.name_scope(self._scope), g.name_scope("update"):
            y_true = convert_to_tensor(y_true)
            y_pred = convert_to_tensor(y_pred)
            if not self.sparse_y_true:
                y_true = reduction_ops.argmax(y_true, axis=self.axis)
            if not self.sparse_y_pred:
                y_pred = reduction_ops.argmax(y_pred, axis=self.axis)
            w = _weights_like(sample_weight, _float(y_true))
            y_true = math_ops.cast(array_ops.reshape(y_true, [-1]), _dtypes.int32)
            y_pred = math_ops.cast(array_ops.reshape(y_pred, [-1]), _dtypes.int32)
            w = array_ops.reshape(w, [-1])
            if self.ignore_class is not None:
                w = w * math_ops.cast(math_ops.not_equal(y_true, int(self.ignore_class)),
                                      _dtypes.float32)
            # Out-of-range ids one-hot to zero rows: those entries add nothing.
            t1 = indexing_ops.one_hot(y_true, c, dtype=_dtypes.float32)
            p1 = indexing_ops.one_hot(y_pred, c, dtype=_dtypes.float32)
            cm = math_ops.matmul(array_ops.transpose(t1 * array_ops.expand_dims(w, -1)), p1)
            return self.total_cm.assign_add(math_ops.cast(cm, self.dtype), read_value=False)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class IoU(_IoUBase):
    """Mean intersection-over-union ``tp / (tp + fp + fn)`` of the classes
    `target_class_ids`, over those that occur (in targets or predictions), as Keras 3's
    `IoU`: ``sum(iou) / (n_occurring + 1e-7)``, each ``iou = tp / (den + 1e-7)``.

    Args:
      num_classes: number of classes (the confusion matrix is
        ``[num_classes, num_classes]``).
      target_class_ids: the class ids (ints in ``[0, num_classes)``) averaged.
      name: metric name (default ``"io_u"``, Keras's).
      dtype: state dtype (float32; see the module note on Keras's int32).
      ignore_class: a target class id whose entries are not counted.
      sparse_y_true: targets are class ids (else scores / one-hot: argmax over `axis`).
      sparse_y_pred: predictions are class ids (else scores: argmax over `axis`).
      axis: the class axis of non-sparse inputs (default -1).

    `result`: float32 scalar.

    Raises:
      ValueError: a target class id out of range.
    """

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None,
                 ignore_class=None, sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=sparse_y_true, sparse_y_pred=sparse_y_pred, axis=axis)
        if max(target_class_ids) >= num_classes:
            raise ValueError(f"Target class id {max(target_class_ids)} is out of range, "
                             f"which is [0, {num_classes}).")
        self.target_class_ids = list(target_class_ids)

    def result(self):
        g = self._ensure_state()
        with g.as_default(), g.name_scope(self._scope):
            cm = math_ops.cast(self.total_cm.value(), _dtypes.float32)
            tp = linalg_ops.diag_part(cm)
            den = (reduction_ops.reduce_sum(cm, axis=0) + reduction_ops.reduce_sum(cm, axis=1)
                   - tp)
            ids = constant_ops.constant(self.target_class_ids, dtype=_dtypes.int32)
            tp = indexing_ops.gather(tp, ids)
            den = indexing_ops.gather(den, ids)
            valid = math_ops.greater(den, 1e-9)
            n_valid = reduction_ops.reduce_sum(math_ops.cast(valid, _dtypes.float32))
            iou = array_ops.where(valid, tp / (den + _EPSILON), constant_ops.zeros_like(tp))
            return math_ops.divide(reduction_ops.reduce_sum(iou), n_valid + _EPSILON,
                                   name="result")

    def get_config(self):
        return {**super().get_config(), "target_class_ids": self.target_class_ids}


class BinaryIoU(IoU):
    """IoU of binary targets against scores thresholded at `threshold` (a prediction is
    class 1 where ``y_pred >= threshold``), as Keras 3's `BinaryIoU`.

    Args:
      target_class_ids: which of the classes 0 and 1 are averaged (default both).
      threshold: float score threshold (default 0.5).
      name: metric name (default ``"binary_io_u"``).
      dtype: state dtype (float32).

    `update_state(y_true, y_pred, sample_weight)`: 0/1 targets (floats are truncated to
    ints, as Keras) and scores of the same shape. `result`: float32 scalar.
    """

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        super().__init__(2, target_class_ids, name=name, dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true, y_pred, sample_weight=None):
        g = self._ensure_state(_graph_of(y_pred, y_true))
        with g.as_default(), g.name_scope(self._scope):
            y_pred = math_ops.cast(math_ops.greater_equal(_float(y_pred), self.threshold),
                                   _dtypes.int32)
        return super().update_state(y_true, y_pred, sample_weight)

    def get_config(self):
        return {"target_class_ids": self.target_class_ids, "threshold": self.threshold,
                "name": self.name, "dtype": self.dtype.name}


class MeanIoU(IoU):
    """IoU averaged over all `num_classes` classes that occur (Keras 3's `MeanIoU`);
    arguments as `IoU` without `target_class_ids`; default name ``"mean_io_u"``."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, list(range(int(num_classes))), name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=sparse_y_true,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        config = IoU.get_config(self)
        del config["target_class_ids"]
        return config


class OneHotIoU(IoU):
    """`IoU` of one-hot targets (argmax over `axis`) and scores (or class ids with
    ``sparse_y_pred=True``), as Keras 3's `OneHotIoU`; default name
    ``"one_hot_io_u"``."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None,
                 ignore_class=None, sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        config = IoU.get_config(self)
        del config["sparse_y_true"]
        return config


class OneHotMeanIoU(MeanIoU):
    """`MeanIoU` of one-hot targets and scores, as Keras 3's `OneHotMeanIoU`; default
    name ``"one_hot_mean_io_u"``."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        config = MeanIoU.get_config(self)
        del config["sparse_y_true"]
        return config
