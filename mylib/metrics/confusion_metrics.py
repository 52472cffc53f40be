"""Confusion-matrix metrics: `Precision`, `Recall`, `AUC`, the counts, and the rates
at a constraint (`PrecisionAtRecall`, `RecallAtPrecision`, `SensitivityAtSpecificity`,
`SpecificityAtSensitivity`), from weighted true/false positive/negative counts at
thresholds (Keras's `update_confusion_matrix_variables`), with `top_k`, `class_id` and
multi-label AUC."""

from __future__ import annotations

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.graph import Tensor
from mylib.core.op_registry import NotDifferentiable, OpDef, TensorSpec
from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops
from mylib.core.tensor_shape import TensorShape
from mylib.losses import squeeze_or_expand_to_same_rank
from mylib.metrics.base import Metric, _div_no_nan, _float, _graph_of, _weights_like

# Keras's stand-in score for predictions outside the top k: below every threshold.
_NEG_INF = -1e10


def _keep_top_k_kernel(x, *, k):
    import jax
    import jax.numpy as jnp

    # lax.top_k breaks ties by the lower index, as Keras's ops.top_k does.
    _, idx = jax.lax.top_k(x, k)
    keep = jnp.any(idx[..., :, None] == jnp.arange(x.shape[-1]), axis=-2)
    return jnp.where(keep, x, jnp.asarray(_NEG_INF, x.dtype))


# Scores outside the `k` highest of each row (last axis) replaced by -1e10, as Keras's
# `_filter_top_k`; a metric op only (no gradient).
KeepTopK = OpDef("KeepTopK", kernel=_keep_top_k_kernel,
                 shape_fn=lambda x, **_: TensorSpec(x.shape, x.dtype))
NotDifferentiable("KeepTopK")


def _keep_top_k(y_pred, k):
    last = y_pred.shape.as_list()[-1] if y_pred.shape.rank else None
    if y_pred.shape.rank == 0:
        raise ValueError("`top_k` needs predictions of rank >= 1. Received a scalar.")
    if last is not None and k > last:
        raise ValueError(f"`top_k` must be at most the size of the last axis of y_pred "
                         f"({last}). Received: top_k={k}")
    return KeepTopK(y_pred, k=int(k))


def _parse_thresholds(thresholds, default):
    """Keras's `parse_init_thresholds`: a list of floats, each in [0, 1] when given."""
    if thresholds is None:
        return [float(default)]
    ts = [thresholds] if np.isscalar(thresholds) else list(np.asarray(thresholds).ravel())
    bad = [t for t in ts if t is None or not 0.0 <= float(t) <= 1.0]
    if bad or not ts:
        raise ValueError("Threshold values must be in [0, 1]. "
                         f"Received: thresholds={thresholds!r}")
    return [float(t) for t in ts]


def _check_top_k_class_id(top_k, class_id):
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer))
                              or top_k < 1):
        raise ValueError(f"`top_k` must be a positive int. Received: top_k={top_k!r}")
    if class_id is not None and (isinstance(class_id, bool) or
                                 not isinstance(class_id, (int, np.integer)) or class_id < 0):
        raise ValueError("`class_id` must be a non-negative int. "
                         f"Received: class_id={class_id!r}")


class _ThresholdCounts(Metric):
    """Weighted true/false positive/negative counts at each threshold, as Keras's
    `update_confusion_matrix_variables`: a prediction is positive where
    ``y_pred > threshold``, a label where it is nonzero. With `top_k`, only the `k`
    highest scores of each row can be positive (the others become -1e10 first); with
    `class_id`, only that class (last axis) counts, after the top-k filter. Counts are
    ``[num_thresholds]`` (all values pooled) or, with `multi_label`,
    ``[num_thresholds, num_labels]`` (one column per label of ``[N, num_labels]``
    predictions)."""

    _kinds = ("tp", "fp", "tn", "fn")

    def __init__(self, thresholds, top_k=None, class_id=None, multi_label=False,
                 name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        _check_top_k_class_id(top_k, class_id)
        self.thresholds = [float(t) for t in thresholds]
        self.top_k = None if top_k is None else int(top_k)
        self.class_id = None if class_id is None else int(class_id)
        self.multi_label = bool(multi_label)
        self._num_labels = None
        self._label_weights = None  # pooled counts only; multi-label AUC averages instead
        self._clip = False

    def build_state(self):
        n = len(self.thresholds)
        shape = [n, self._num_labels] if self.multi_label else [n]
        names = {"tp": "true_positives", "fp": "false_positives", "tn": "true_negatives",
                 "fn": "false_negatives"}
        for k in self._kinds:
            setattr(self, k, self._add_state(names[k], shape))

    def _preprocess(self, y_pred):
        return _float(y_pred)

    def _state_from_arguments(self, y_true=None, y_pred=None, sample_weight=None):
        if self.multi_label and y_pred is not None:
            self._set_num_labels(y_pred)

    def _set_num_labels(self, y_pred):
        shape = y_pred.shape if isinstance(y_pred, Tensor) else TensorShape(np.shape(y_pred))
        if shape.rank is not None and shape.rank != 2:
            raise ValueError("`y_pred` must have rank 2 when `multi_label=True`. Found rank "
                             f"{shape.rank}. Full shape received for `y_pred`: {shape}")
        n = None if shape.rank is None else shape.as_list()[1]
        if self._num_labels is None:
            if n is None:
                raise ValueError(f"{type(self).__name__}(multi_label=True) cannot tell the "
                                 "number of labels from y_pred of shape "
                                 f"{shape}; pass `num_labels`.")
            self._num_labels = int(n)
        elif n is not None and n != self._num_labels:
            raise ValueError(f"y_pred has {n} labels (shape {shape}) but the metric counts "
                             f"{self._num_labels} (num_labels).")

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds the counts of one batch; returns the update `Operation`.

        Args:
          y_true: labels, same shape as `y_pred` (nonzero is positive).
          y_pred: scores ``[...]``, ``[N, C]`` with `top_k` / `class_id`, ``[N, L]`` with
            `multi_label`.
          sample_weight: optional weights, scalar, ``[N]`` or the shape of `y_pred`.
        Raises:
          ValueError: on a scalar / rank-1 `y_pred` or a `class_id` out of range, a
            `top_k` above the class count, or a `y_pred` not of rank 2 with
            `multi_label`.
        """
        g = _graph_of(y_pred, y_true)
        if self.multi_label:
            self._set_num_labels(y_pred)
        g = self._ensure_state(g)
        with g.as_default(), g.name_scope(self._scope), g.name_scope("update"):
            y_pred = self._preprocess(y_pred)
            y_true = _float(y_true)
            y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
            w = _weights_like(sample_weight, y_pred)
            if self._label_weights is not None:
                w = w * constant_ops.constant(self._label_weights)
            if self.top_k is not None:
                y_pred = _keep_top_k(y_pred, self.top_k)
            if self.class_id is not None:
                if y_pred.shape.rank is not None and y_pred.shape.rank < 2:
                    raise ValueError("When class_id is provided, y_pred must be a 2D array "
                                     "with shape (num_samples, num_classes), found shape: "
                                     f"{y_pred.shape}")
                c = y_pred.shape.as_list()[-1] if y_pred.shape.rank else None
                if c is not None and self.class_id >= c:
                    raise ValueError(f"`class_id` must be in [0, {c}) for y_pred of shape "
                                     f"{y_pred.shape}. Received: class_id={self.class_id}")
                y_true, y_pred, w = (t[..., self.class_id] for t in (y_true, y_pred, w))
            if self._clip:
                y_pred = math_ops.minimum(math_ops.maximum(y_pred, 0.0), 1.0)
            thr = np.asarray(self.thresholds, np.float32)
            if self.multi_label:
                # [N, 1, L] against [1, T, 1]: counts [T, L].
                y_true, y_pred, w = (array_ops.expand_dims(t, 1) for t in (y_true, y_pred, w))
                thr = thr[None, :, None]
            else:
                # Every value is one sample: [M, 1] against [1, T], counts [T].
                y_true, y_pred, w = (array_ops.reshape(t, [-1, 1]) for t in (y_true, y_pred, w))
                thr = thr[None, :]
            pred_pos = math_ops.cast(math_ops.greater(y_pred, constant_ops.constant(thr)),
                                     _dtypes.float32)
            true_pos = math_ops.cast(math_ops.not_equal(y_true, 0.0), _dtypes.float32)
            parts = {"tp": true_pos * pred_pos, "fp": (1.0 - true_pos) * pred_pos,
                     "tn": (1.0 - true_pos) * (1.0 - pred_pos),
                     "fn": true_pos * (1.0 - pred_pos)}
            ops = [getattr(self, k).assign_add(reduction_ops.reduce_sum(parts[k] * w, axis=0),
                                               read_value=False) for k in self._kinds]
            return array_ops.group(*ops)

    def _maybe_scalar(self, t):
        return t[0] if len(self.thresholds) == 1 else t


def _evenly_spaced(values):
    """Keras's test for thresholds ``0, 1/(n-1), ..., 1`` (n >= 3), where it clips the
    predictions to [0, 1] before counting."""
    n = len(values)
    return n >= 3 and bool(np.allclose(values, np.arange(n, dtype=np.float32) / (n - 1),
                                       atol=1e-7))


class _PrecisionRecall(_ThresholdCounts):
    _default_name = None

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        self._thr_arg = thresholds
        default = 0.5 if top_k is None else _NEG_INF
        super().__init__(_parse_thresholds(thresholds, default), top_k=top_k,
                         class_id=class_id, name=name or self._default_name, dtype=dtype)
        self._clip = _evenly_spaced(self.thresholds)

    def _ratio(self, other):
        g = self._ensure_state()
        with g.as_default(), g.name_scope(self._scope):
            tp = self.tp.value()
            return self._maybe_scalar(_div_no_nan(tp, tp + getattr(self, other).value()))

    def get_config(self):
        return {**super().get_config(), "thresholds": self._thr_arg, "top_k": self.top_k,
                "class_id": self.class_id}


class Precision(_PrecisionRecall):
    """Precision ``tp / (tp + fp)`` of the predictions, as Keras's `Precision` (0 when
    nothing is predicted positive).

    A prediction is positive where ``y_pred > threshold``; a label where it is nonzero.
    Every value of `y_pred` counts as one sample (multi-label data is pooled).

    Args:
      thresholds: float or list of floats in [0, 1]. One result per threshold; a
        scalar when there is one. Default 0.5, or, with `top_k`, no threshold (-1e10:
        every top-k prediction is positive).
      top_k: int; only the `k` highest scores of each row (last axis of ``[N, C]``
        predictions) can be positive, the others count as negative (Keras semantics).
      class_id: int in ``[0, C)``; only this class (last axis) counts, after `top_k`.
      name: metric name (default ``"precision"``).
      dtype: state dtype (float32).

    Returns (from `result`):
      float32 scalar, or ``[len(thresholds)]``.

    Raises:
      ValueError: thresholds outside [0, 1], `top_k` < 1 or above the class count,
        `class_id` with rank-1 predictions.

    Example::

        p = ml.metrics.Precision(top_k=2)   # "precision at 2" of multi-label scores
    """

    _kinds = ("tp", "fp")
    _default_name = "precision"

    def result(self):
        return self._ratio("fp")


class Recall(_PrecisionRecall):
    """Recall ``tp / (tp + fn)`` of the predictions, as Keras's `Recall` (0 when there
    are no positive labels); arguments as `Precision`, default name ``"recall"``.

    With `top_k`, the fraction of the positive labels whose class is among the `k`
    highest scores of its row; with `class_id`, of the samples labelled `class_id`.
    """

    _kinds = ("tp", "fn")
    _default_name = "recall"

    def result(self):
        return self._ratio("fn")


class AUC(_ThresholdCounts):
    """Area under the ROC or precision-recall curve, approximated from confusion counts
    at `num_thresholds` thresholds, as Keras's `AUC`.

    The thresholds are ``-1e-7``, ``(i + 1) / (num_thresholds - 1)`` for
    ``i < num_thresholds - 2``, and ``1 + 1e-7`` (or the given `thresholds` between the
    two end points). With evenly spaced thresholds (the default), predictions are first
    clipped to [0, 1], as Keras does there.

    Summation (`summation_method`):
      ``"interpolation"``: trapezoids for ROC; for PR, the interpolation of Davis &
        Goadrich (2006, section 4), precision varying with the count of predicted
        positives between thresholds, integrated in closed form as Keras does.
      ``"minoring"`` / ``"majoring"``: rectangles of the lower / higher end's height.

    Args:
      num_thresholds: int > 1 (ignored when `thresholds` is given).
      curve: ``"ROC"`` (x false-positive rate, y recall) or ``"PR"`` (x recall,
        y precision).
      summation_method: ``"interpolation"``, ``"minoring"`` or ``"majoring"``.
      name: metric name (default ``"auc"``).
      dtype: state dtype (float32).
      thresholds: optional list of floats in (0, 1) used instead of the even grid.
      multi_label: with ``[N, L]`` labels and predictions, one AUC per label (column),
        then their mean (weighted by `label_weights`); when False every value is pooled
        into one curve.
      num_labels: number of labels L with `multi_label`; read from the static shape of
        the first `y_pred` when None.
      label_weights: optional ``[L]`` non-negative weights: with `multi_label`, of the
        per-label AUCs in the average (``sum(w * auc) / sum(w)``); otherwise they
        multiply each value's weight when the counts are pooled.
      from_logits: apply a sigmoid to the predictions first.

    Returns (from `result`): float32 scalar.

    Raises:
      ValueError: an unknown `curve` or `summation_method`, ``num_thresholds <= 1``,
        `num_labels` without `multi_label`, negative `label_weights` or a length that
        disagrees with `num_labels`, and (at `update_state`) a `y_pred` not of rank 2 or
        with another label count when `multi_label`.

    Example::

        auc = ml.metrics.AUC(multi_label=True, label_weights=[1.0, 3.0])
        auc.update_state(labels, scores)      # [N, 2] each
    """

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        curve_u = str(curve).upper()
        if curve_u not in ("ROC", "PR"):
            raise ValueError(f'Invalid `curve` argument value "{curve}". Expected one of: '
                             '"ROC", "PR"')
        method = str(summation_method).lower()
        if method not in ("interpolation", "minoring", "majoring"):
            raise ValueError("Invalid `summation_method` argument value "
                             f'"{summation_method}". Expected one of: "interpolation", '
                             '"minoring", "majoring"')
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            inner = sorted(float(t) for t in thresholds)
            num_thresholds = len(inner) + 2
            evenly = _evenly_spaced([0.0] + inner + [1.0])
        else:
            if isinstance(num_thresholds, bool) or not isinstance(
                    num_thresholds, (int, np.integer)) or num_thresholds <= 1:
                raise ValueError("Argument `num_thresholds` must be an integer > 1. "
                                 f"Received: num_thresholds={num_thresholds}")
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            evenly = True
        if not multi_label and num_labels:
            raise ValueError("`num_labels` is needed only when `multi_label` is True. "
                             f"Received: num_labels={num_labels!r}")
        super().__init__([0.0 - 1e-7] + inner + [1.0 + 1e-7], multi_label=multi_label,
                         name=name or "auc", dtype=dtype)
        self.num_thresholds = int(num_thresholds)
        self.curve = curve_u
        self.summation_method = method
        self.from_logits = bool(from_logits)
        self._clip = evenly
        self.num_labels = None if num_labels is None else int(num_labels)
        if self.num_labels is not None:
            if self.num_labels < 1:
                raise ValueError(f"`num_labels` must be a positive int. Received: "
                                 f"num_labels={num_labels!r}")
            self._num_labels = self.num_labels
        if label_weights is not None:
            lw = np.asarray(label_weights, np.float32).reshape(-1)
            if (lw < 0).any():
                raise ValueError("`label_weights` must be non-negative. Received: "
                                 f"label_weights={label_weights!r}")
            if self.num_labels is not None and lw.size != self.num_labels:
                raise ValueError(f"`label_weights` has {lw.size} entries but num_labels="
                                 f"{self.num_labels}.")
            if self.multi_label and self._num_labels is None:
                self._num_labels = int(lw.size)
            self.label_weights = lw
        else:
            self.label_weights = None
        if not self.multi_label:
            self._label_weights = self.label_weights

    def _ensure_state(self, graph=None):
        if self._graph is None and self.multi_label and self._num_labels is None:
            raise ValueError(f"AUC '{self.name}' (multi_label=True) has no state yet: call "
                             "update_state first, or pass `num_labels`.")
        return super()._ensure_state(graph)

    def _preprocess(self, y_pred):
        y_pred = _float(y_pred)
        return math_ops.sigmoid(y_pred) if self.from_logits else y_pred

    def _pr_interpolated(self, tp, fp, fn):
        # Davis & Goadrich: between two thresholds tp and p = tp + fp move linearly, so
        # precision = tp / p integrates over recall in closed form (Keras's formula).
        n = self.num_thresholds
        dtp = tp[:n - 1] - tp[1:]
        p = tp + fp
        dp = p[:n - 1] - p[1:]
        slope = _div_no_nan(dtp, math_ops.maximum(dp, 0.0))
        intercept = tp[1:] - slope * p[1:]
        both = math_ops.logical_and(math_ops.greater(p[:n - 1], 0.0),
                                    math_ops.greater(p[1:], 0.0))
        ratio = array_ops.where(both, _div_no_nan(p[:n - 1], math_ops.maximum(p[1:], 0.0)),
                                constant_ops.ones_like(p[1:]))
        return _div_no_nan(slope * (dtp + intercept * math_ops.log(ratio)),
                           math_ops.maximum(tp[1:] + fn[1:], 0.0))

    def _riemann(self, tp, fp, tn, fn):
        n = self.num_thresholds
        recall = _div_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _div_no_nan(fp, fp + tn), recall
        else:
            x, y = recall, _div_no_nan(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:n - 1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = math_ops.minimum(y[:n - 1], y[1:])
        else:
            heights = math_ops.maximum(y[:n - 1], y[1:])
        return (x[:n - 1] - x[1:]) * heights

    def result(self):
        g = self._ensure_state()
        with g.as_default(), g.name_scope(self._scope):
            tp, fp, tn, fn = (getattr(self, k).value() for k in ("tp", "fp", "tn", "fn"))
            if self.curve == "PR" and self.summation_method == "interpolation":
                terms = self._pr_interpolated(tp, fp, fn)
            else:
                terms = self._riemann(tp, fp, tn, fn)
            if not self.multi_label:
                return reduction_ops.reduce_sum(terms, name="result")
            per_label = reduction_ops.reduce_sum(terms, axis=0)
            if self.label_weights is None:
                return reduction_ops.reduce_mean(per_label, name="result")
            lw = constant_ops.constant(self.label_weights)
            return array_ops.identity(
                _div_no_nan(reduction_ops.reduce_sum(per_label * lw), reduction_ops.reduce_sum(lw)),
                name="result")

    def get_config(self):
        config = {**Metric.get_config(self), "num_thresholds": self.num_thresholds,
                  "curve": self.curve, "summation_method": self.summation_method,
                  "multi_label": self.multi_label, "num_labels": self.num_labels,
                  "label_weights": None if self.label_weights is None
                  else [float(v) for v in self.label_weights],
                  "from_logits": self.from_logits}
        if self._init_from_thresholds:
            config["thresholds"] = self.thresholds[1:-1]
        return config


class _ConditionCount(_ThresholdCounts):
    """One weighted confusion count at each threshold (Keras's
    `_ConfusionMatrixConditionCount`)."""

    _kind = None

    def __init__(self, thresholds=None, name=None, dtype=None):
        self._thr_arg = thresholds
        self._kinds = (self._kind,)
        super().__init__(_parse_thresholds(thresholds, 0.5), name=name, dtype=dtype)
        # Keras clips predictions to [0, 1] when the thresholds are an even grid.
        self._clip = _evenly_spaced(self.thresholds)

    def result(self):
        g = self._ensure_state()
        with g.as_default(), g.name_scope(self._scope):
            return self._maybe_scalar(getattr(self, self._kind).value())

    def get_config(self):
        return {**super().get_config(), "thresholds": self._thr_arg}


_COUNT_DOC = """The weighted number of {what}, as Keras's `{cls}`.

    A prediction is positive where ``y_pred > threshold``, a label where it is nonzero;
    every value of `y_pred` counts as one sample. With `sample_weight`, the sum of the
    weights of the {what} (weight 0 masks a value).

    Args:
      thresholds: float or list of floats in [0, 1] (default 0.5). One count per
        threshold; a scalar when there is one. With 3 or more evenly spaced thresholds
        ``0, 1/(n-1), ..., 1`` predictions are clipped to [0, 1] first (as Keras).
      name: metric name (default ``"{name}"``).
      dtype: state dtype (float32).

    Returns (from `result`):
      float32 scalar, or ``[len(thresholds)]``.

    Raises:
      ValueError: a threshold outside [0, 1].
    """


class TruePositives(_ConditionCount):
    __doc__ = _COUNT_DOC.format(what="true positives", cls="TruePositives",
                                name="true_positives")
    _kind = "tp"


class FalsePositives(_ConditionCount):
    __doc__ = _COUNT_DOC.format(what="false positives", cls="FalsePositives",
                                name="false_positives")
    _kind = "fp"


class TrueNegatives(_ConditionCount):
    __doc__ = _COUNT_DOC.format(what="true negatives", cls="TrueNegatives",
                                name="true_negatives")
    _kind = "tn"


class FalseNegatives(_ConditionCount):
    __doc__ = _COUNT_DOC.format(what="false negatives", cls="FalseNegatives",
                                name="false_negatives")
    _kind = "fn"


class _SensitivitySpecificityBase(_ThresholdCounts):
    """Confusion counts at `num_thresholds` evenly spaced thresholds ``0, 1/(n-1), ...,
    1`` (predictions clipped to [0, 1] first), or at 0.5 alone when
    ``num_thresholds == 1``, and the best value of one rate among the thresholds where
    another meets `value` (Keras 3's `SensitivitySpecificityBase`)."""

    _arg = None  # the constructor's name of `value`

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        if not 0 <= value <= 1:
            raise ValueError(f"Argument `{self._arg}` must be in the range [0, 1]. "
                             f"Received: {self._arg}={value}")
        if isinstance(num_thresholds, bool) or not isinstance(
                num_thresholds, (int, np.integer)) or num_thresholds <= 0:
            raise ValueError("Argument `num_thresholds` must be an integer > 0. "
                             f"Received: num_thresholds={num_thresholds}")
        if num_thresholds == 1:
            thresholds = [0.5]
        else:
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            thresholds = [0.0] + inner + [1.0]
        super().__init__(thresholds, class_id=class_id, name=name, dtype=dtype)
        self._clip = num_thresholds > 1
        self.value = value
        self.num_thresholds = int(num_thresholds)
        setattr(self, self._arg, value)

    def _rates(self):
        tp, fp, tn, fn = (getattr(self, k).value() for k in ("tp", "fp", "tn", "fn"))
        return {"sensitivity": _div_no_nan(tp, tp + fn),
                "specificity": _div_no_nan(tn, tn + fp),
                "precision": _div_no_nan(tp, tp + fp)}

    def _best(self, constrained, dependent):
        # max of `dependent` where `constrained >= value`, 0 when nowhere (Keras).
        g = self._ensure_state()
        with g.as_default(), g.name_scope(self._scope):
            rates = self._rates()
            feasible = math_ops.greater_equal(rates[constrained], self.value)
            dep = rates[dependent]
            return math_ops.maximum(
                reduction_ops.reduce_max(array_ops.where(feasible, dep,
                                                         constant_ops.zeros_like(dep))),
                0.0, name="result")

    def get_config(self):
        return {**Metric.get_config(self), "class_id": self.class_id,
                "num_thresholds": self.num_thresholds, self._arg: self.value}


_AT_DOC = """{what}, as Keras 3's `{cls}`.

    Counts are weighted true/false positives/negatives at `num_thresholds` thresholds
    (a prediction is positive where ``y_pred > threshold``, a label where it is
    nonzero; every value of `y_pred` is one sample); the result is the largest {dep}
    among the thresholds whose {con} is at least `{arg}` (0 when there is none).

    Args:
      {arg}: float in [0, 1].
      num_thresholds: int > 0 (default 200): thresholds ``0, 1/(n-1), ..., 1`` with
        predictions clipped to [0, 1] first, or 0.5 alone when 1.
      class_id: optional int; only this class (last axis of ``[N, C]`` predictions)
        counts.
      name: metric name (default ``"{name}"``).
      dtype: state dtype (float32).

    `update_state(y_true, y_pred, sample_weight)`: labels and scores of one shape,
    optional weights (scalar, ``[N]`` or that shape). `result`: float32 scalar.

    Raises:
      ValueError: `{arg}` outside [0, 1], ``num_thresholds <= 0``.
    """


class SensitivityAtSpecificity(_SensitivitySpecificityBase):
    __doc__ = _AT_DOC.format(what="Best sensitivity (recall) at a specificity of at least "
                             "`specificity`", cls="SensitivityAtSpecificity",
                             dep="sensitivity ``tp / (tp + fn)``",
                             con="specificity ``tn / (tn + fp)``", arg="specificity",
                             name="sensitivity_at_specificity")
    _arg = "specificity"

    def __init__(self, specificity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(specificity, num_thresholds, class_id=class_id, name=name,
                         dtype=dtype)

    def result(self):
        return self._best("specificity", "sensitivity")


class SpecificityAtSensitivity(_SensitivitySpecificityBase):
    __doc__ = _AT_DOC.format(what="Best specificity at a sensitivity (recall) of at least "
                             "`sensitivity`", cls="SpecificityAtSensitivity",
                             dep="specificity ``tn / (tn + fp)``",
                             con="sensitivity ``tp / (tp + fn)``", arg="sensitivity",
                             name="specificity_at_sensitivity")
    _arg = "sensitivity"

    def __init__(self, sensitivity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(sensitivity, num_thresholds, class_id=class_id, name=name,
                         dtype=dtype)

    def result(self):
        return self._best("sensitivity", "specificity")


class PrecisionAtRecall(_SensitivitySpecificityBase):
    __doc__ = _AT_DOC.format(what="Best precision at a recall of at least `recall`",
                             cls="PrecisionAtRecall", dep="precision ``tp / (tp + fp)``",
                             con="recall ``tp / (tp + fn)``", arg="recall",
                             name="precision_at_recall")
    _arg = "recall"

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(recall, num_thresholds, class_id=class_id, name=name, dtype=dtype)

    def result(self):
        return self._best("sensitivity", "precision")


class RecallAtPrecision(_SensitivitySpecificityBase):
    __doc__ = _AT_DOC.format(what="Best recall at a precision of at least `precision`",
                             cls="RecallAtPrecision", dep="recall ``tp / (tp + fn)``",
                             con="precision ``tp / (tp + fp)``", arg="precision",
                             name="recall_at_precision")
    _arg = "precision"

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(precision, num_thresholds, class_id=class_id, name=name,
                         dtype=dtype)

    def result(self):
        return self._best("precision", "sensitivity")
