"""Intersection-over-union metrics: `MeanIoU`."""

from __future__ import annotations

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, indexing_ops, math_ops, reduction_ops
from mylib.metrics.base import Metric, _div_no_nan, _float, _graph_of, _weights_like


class MeanIoU(Metric):
    """Mean intersection-over-union over the classes that occur (in targets or
    predictions), from a weighted ``[num_classes, num_classes]`` confusion matrix.

    Args:
      num_classes: number of classes.
      ignore_class: a target class id whose samples are not counted.
      sparse_y_true: targets are class ids (else one-hot / scores: argmax over `axis`).
      sparse_y_pred: predictions are class ids (else scores: argmax over `axis`).
    """

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(name=name or "mean_io_u", dtype=dtype)
        self.num_classes = int(num_classes)
        self.ignore_class = ignore_class
        self.sparse_y_true, self.sparse_y_pred, self.axis = sparse_y_true, sparse_y_pred, axis

    def build_state(self):
        c = self.num_classes
        self.total_cm = self.add_variable("total_confusion_matrix", [c, c])

    def update_state(self, y_true, y_pred, sample_weight=None):
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
            t1 = indexing_ops.one_hot(y_true, c, dtype=_dtypes.float32)
            p1 = indexing_ops.one_hot(y_pred, c, dtype=_dtypes.float32)
            cm = math_ops.matmul(array_ops.transpose(t1 * array_ops.expand_dims(w, -1)), p1)
            return self.total_cm.assign_add(cm, read_value=False)

    def result(self):
        g = self._ensure_state()
        with g.as_default(), g.name_scope(self._scope):
            cm = self.total_cm.value()
            pred_sum = reduction_ops.reduce_sum(cm, axis=0)
            true_sum = reduction_ops.reduce_sum(cm, axis=1)
            tp = reduction_ops.reduce_sum(cm * constant_ops.constant(np.eye(self.num_classes,
                                                                     dtype=np.float32)), axis=1)
            den = pred_sum + true_sum - tp
            valid = reduction_ops.reduce_sum(math_ops.cast(math_ops.not_equal(den, 0.0),
                                                      _dtypes.float32))
            return _div_no_nan(reduction_ops.reduce_sum(_div_no_nan(tp, den)), valid)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}
