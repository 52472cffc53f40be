"""F-scores of multi-class / multi-label predictions: `FBetaScore`, `F1Score`."""

from __future__ import annotations

from mylib.core import dtypes as _dtypes
from mylib.core.ops import array_ops, math_ops, reduction_ops
from mylib.metrics.base import Metric, _div_no_nan, _float, _graph_of, _weights_like


class FBetaScore(Metric):
    """F-beta score of multi-class / multi-label predictions ``[N, C]`` against one-hot /
    multi-hot targets, as Keras 3.

    Args:
      average: None (one score per class), ``"micro"``, ``"macro"`` or ``"weighted"``.
      beta: weight of recall relative to precision.
      threshold: predictions above it are positive; None: the per-row maximum is the
        positive (single-label).
    """

    def __init__(self, average=None, beta=1.0, threshold=None, name="fbeta_score",
                 dtype=None):
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError("Invalid `average` argument value. Expected one of: None, "
                             f"'micro', 'macro', 'weighted'. Received: average={average}")
        if beta <= 0:
            raise ValueError(f"`beta` must be > 0. Received: beta={beta}")
        super().__init__(name=name, dtype=dtype)
        self.average, self.beta, self.threshold = average, float(beta), threshold
        self._built_classes = None

    def build_state(self):
        pass  # created on the first update, when the number of classes is known

    def _build(self, c):
        if self._built_classes is None:
            self.tp = self._add_state("true_positives", [c])
            self.fp = self._add_state("false_positives", [c])
            self.fn = self._add_state("false_negatives", [c])
            self.iw = self._add_state("intermediate_weights", [c])
            self._built_classes = c
        elif self._built_classes != c:
            raise ValueError(f"{type(self).__name__} was built for {self._built_classes} "
                             f"classes; received predictions with {c}.")

    def update_state(self, y_true, y_pred, sample_weight=None):
        g = self._ensure_state(_graph_of(y_pred, y_true))
        with g.as_default(), g.name_scope(self._scope), g.name_scope("update"):
            y_pred = _float(y_pred)
            y_true = _float(y_true)
            c = y_pred.shape.as_list()[-1]
            if y_pred.shape.rank != 2 or c is None:
                raise ValueError("FBetaScore expects 2D predictions [batch, num_classes] with "
                                 f"a known number of classes; received {y_pred.shape}.")
            self._build(c)
            if self.threshold is None:
                y_pred = math_ops.cast(math_ops.greater_equal(
                    y_pred, reduction_ops.reduce_max(y_pred, axis=-1, keepdims=True)),
                    _dtypes.float32)
            else:
                y_pred = math_ops.cast(math_ops.greater(y_pred, self.threshold),
                                       _dtypes.float32)
            w = _weights_like(sample_weight, y_pred)
            ops = [self.tp.assign_add(reduction_ops.reduce_sum(y_pred * y_true * w, 0), read_value=False),
                   self.fp.assign_add(reduction_ops.reduce_sum(y_pred * (1 - y_true) * w, 0),
                                      read_value=False),
                   self.fn.assign_add(reduction_ops.reduce_sum((1 - y_pred) * y_true * w, 0),
                                      read_value=False),
                   self.iw.assign_add(reduction_ops.reduce_sum(y_true * w, 0), read_value=False)]
            return array_ops.group(*ops)

    def reset_state(self):
        if self._built_classes is None:
            g = self._ensure_state()
            with g.as_default():
                return array_ops.no_op(name=f"{self.name}_reset")
        return super().reset_state()

    def result(self):
        if self._built_classes is None:
            raise ValueError(f"{type(self).__name__}.result() before any update_state.")
        g = self._ensure_state()
        b2 = self.beta ** 2
        with g.as_default(), g.name_scope(self._scope):
            tp, fp, fn = self.tp.value(), self.fp.value(), self.fn.value()
            if self.average == "micro":
                tp, fp, fn = (reduction_ops.reduce_sum(t) for t in (tp, fp, fn))
            precision = _div_no_nan(tp, tp + fp)
            recall = _div_no_nan(tp, tp + fn)
            f = _div_no_nan(precision * recall, b2 * precision + recall) * (1.0 + b2)
            if self.average == "weighted":
                iw = self.iw.value()
                return reduction_ops.reduce_sum(f * _div_no_nan(iw, reduction_ops.reduce_sum(iw)))
            if self.average is not None:
                return reduction_ops.reduce_mean(f)
            return f

    def get_config(self):
        return {**super().get_config(), "average": self.average, "beta": self.beta,
                "threshold": self.threshold}


class F1Score(FBetaScore):
    """`FBetaScore` with ``beta=1``."""

    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self):
        cfg = super().get_config()
        cfg.pop("beta")
        return cfg
