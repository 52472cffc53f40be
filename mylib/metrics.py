"""Keras-style metrics whose state lives in Variables updated by graph ops.

A metric's state variables are non-trainable, in the ``LOCAL_VARIABLES`` and
``METRIC_VARIABLES`` collections (not ``GLOBAL_VARIABLES``: they are not saved with the
model), created in the graph of the first `update_state` inputs (or the default graph
on first `result`/`reset_state`/`variables`). `update_state` returns the assign-add
`Operation`, `result` a `Tensor`, `reset_state` an `Operation` assigning zeros, which
also serves as the initializer (as does ``ml.local_variables_initializer()``).

Example::

    acc = ml.metrics.SparseCategoricalAccuracy()
    update = acc.update_state(labels, logits)
    value = acc.result()
    sess.run(acc.reset_state())
    sess.run(update, feed_dict=...)        # per batch, in the training step
    sess.run(value)                        # when logging
"""

from __future__ import annotations

import numpy as np

from mylib import losses as _losses
from mylib._naming import to_snake_case
from mylib.core import dtypes as _dtypes
from mylib.core.graph import GraphKeys, Tensor, get_default_graph
from mylib.core.op_registry import NotDifferentiable, OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, indexing_ops, math_ops, reduction_ops
from mylib.core.tensor_shape import TensorShape
from mylib.core.variables import Variable
from mylib.losses import squeeze_or_expand_to_same_rank

__all__ = ["Metric", "Reduce", "Sum", "Mean", "MeanMetricWrapper", "Accuracy",
           "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
           "MeanSquaredError", "MeanAbsoluteError", "accuracy", "binary_accuracy",
           "categorical_accuracy", "sparse_categorical_accuracy", "get", "resolve_accuracy",
           "RootMeanSquaredError", "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy",
           "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy", "Precision",
           "Recall", "AUC", "MeanIoU", "FBetaScore", "F1Score"]


def _graph_of(*xs):
    for x in xs:
        if isinstance(x, Tensor):
            return x.graph
        g = getattr(x, "graph", None)
        if g is not None:
            return g
    return get_default_graph()


def _float(x):
    x = convert_to_tensor(x, dtype_hint=_dtypes.float32)
    return x if x.dtype == _dtypes.float32 else math_ops.cast(x, _dtypes.float32)


class Metric:
    """Base of the metrics: state Variables, `update_state`, `result`, `reset_state`.

    Subclasses declare state in `build_state` with `add_variable` and implement
    `update_state` (returning an `Operation`) and `result` (returning a `Tensor`).

    Args:
      name: the metric's name (its variables live under this name scope).
      dtype: dtype of the state and result (default float32).
    """

    def __init__(self, name=None, dtype=None):
        self.name = name or to_snake_case(type(self).__name__)
        self.dtype = _dtypes.as_dtype(dtype or _dtypes.float32)
        self._variables = []
        self._graph = None
        self._scope = None

    # ------------------------------------------------------------ state
    def build_state(self):
        """Creates the state variables (called once, in the metric's graph)."""

    def add_variable(self, name, shape=(), dtype=None):
        """A zero-initialized, non-trainable state variable."""
        g = self._graph
        dt = _dtypes.as_dtype(dtype or self.dtype)
        with g.as_default(), g.name_scope(""), g.name_scope(self._scope), \
                g.control_dependencies(None):
            v = Variable(lambda: constant_ops.zeros(list(shape), dtype=dt), trainable=False,
                         name=name, dtype=dt,
                         collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES])
        self._variables.append(v)
        return v

    def _ensure_state(self, graph=None):
        if self._graph is None:
            g = graph or get_default_graph()
            self._graph = g
            with g.name_scope(""), g.name_scope(self.name) as scope:
                self._scope = scope
            self.build_state()
        elif graph is not None and graph is not self._graph:
            raise ValueError(f"Metric '{self.name}' is already used in another graph; create "
                             "one metric per graph.")
        return self._graph

    @property
    def variables(self):
        """The state variables (created now if they do not exist yet)."""
        self._ensure_state()
        return list(self._variables)

    # ------------------------------------------------------------ API
    def update_state(self, y_true, y_pred, sample_weight=None):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `update_state` (abstract in the base class)")

    def result(self):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `result` (abstract in the base class)")

    def reset_state(self):
        """An op assigning zeros to every state variable (also initializes them)."""
        g = self._ensure_state()
        with g.as_default():
            return array_ops.group(
                *[v.assign(constant_ops.zeros(v.shape.as_list(), dtype=v.dtype),
                           read_value=False) for v in self._variables],
                name=f"{self.name}_reset")

    def __call__(self, *args, **kwargs):
        """`update_state`, then the result read after the update."""
        op = self.update_state(*args, **kwargs)
        with self._graph.as_default(), self._graph.control_dependencies([op]):
            return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<ml.metrics.{type(self).__name__} name={self.name!r}>"


class Reduce(Metric):
    """Sample-weighted reduction of values: ``total += sum(values * w)`` and
    ``count += sum(w)`` (``w`` broadcast to the values; 1 when absent)."""

    _mean = True

    def build_state(self):
        self.total = self.add_variable("total")
        if self._mean:
            self.count = self.add_variable("count")

    def update_state(self, values, sample_weight=None):
        """Adds `values` (any shape), weighted by `sample_weight`. Returns the op."""
        g = self._ensure_state(_graph_of(values, sample_weight))
        with g.as_default(), g.name_scope(self._scope), g.name_scope("update"):
            values = _float(values)
            if sample_weight is not None:
                sw = _float(sample_weight)
                sw, values = squeeze_or_expand_to_same_rank(sw, values, expand_rank_1=False)
                # Weights of lower rank (per sample) cover the trailing axes of values.
                while sw.shape.rank is not None and values.shape.rank is not None \
                        and sw.shape.rank < values.shape.rank:
                    sw = array_ops.expand_dims(sw, -1)
                weighted = values * sw
                weights = sw * constant_ops.ones_like(values)
            else:
                weighted = values
                weights = None
            ops = [self.total.assign_add(reduction_ops.reduce_sum(weighted), read_value=False)]
            if self._mean:
                n = (math_ops.cast(array_ops.size(values), _dtypes.float32) if weights is None
                     else reduction_ops.reduce_sum(weights))
                ops.append(self.count.assign_add(n, read_value=False))
            return array_ops.group(*ops)

    def result(self):
        g = self._ensure_state()
        with g.as_default(), g.name_scope(self._scope):
            total = self.total.value()
            if not self._mean:
                return array_ops.identity(total, name="result")
            count = self.count.value()
            # divide_no_nan: 0 before any update.
            return array_ops.where(math_ops.greater(count, 0.0),
                                   total / math_ops.maximum(count, 1e-30),
                                   constant_ops.zeros_like(total), name="result")


class Sum(Reduce):
    """The (weighted) sum of the values seen."""

    _mean = False


class Mean(Reduce):
    """The (weighted) mean of the values seen: ``sum(values * w) / sum(w)``."""


class MeanMetricWrapper(Mean):
    """Weighted mean of a per-sample function ``fn(y_true, y_pred, **kwargs)``.

    Args:
      fn: per-sample function, e.g. `binary_accuracy` or a loss function.
      name: metric name (default ``fn.__name__``).
    """

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None), dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        g = self._ensure_state(_graph_of(y_pred, y_true))
        with g.as_default(), g.name_scope(self._scope):
            values = self._fn(y_true, y_pred, **self._fn_kwargs)
        return super().update_state(values, sample_weight)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


# ------------------------------------------------------------ per-sample functions
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
    pred = reduction_ops.argmax(y_pred, axis=-1)
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


class MeanSquaredError(MeanMetricWrapper):
    """Mean of `losses.mean_squared_error` over the samples seen."""

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(_losses.mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """Mean of `losses.mean_absolute_error` over the samples seen."""

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(_losses.mean_absolute_error, name=name, dtype=dtype)


class RootMeanSquaredError(Mean):
    """``sqrt(mean((y_pred - y_true)**2))`` over every element seen (weighted)."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        g = self._ensure_state(_graph_of(y_pred, y_true))
        with g.as_default(), g.name_scope(self._scope):
            y_pred = _float(y_pred)
            y_true = _float(y_true)
            y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
            err = math_ops.square(y_pred - y_true)
        return super().update_state(err, sample_weight)

    def result(self):
        g = self._ensure_state()
        with g.as_default(), g.name_scope(self._scope):
            return math_ops.sqrt(super().result())


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


# ------------------------------------------------------------ confusion-matrix metrics
def _weights_like(sample_weight, values):
    """`sample_weight` broadcast to `values` (per-sample weights cover trailing axes)."""
    if sample_weight is None:
        return constant_ops.ones_like(values)
    sw = _float(sample_weight)
    sw, values = squeeze_or_expand_to_same_rank(sw, values, expand_rank_1=False)
    while sw.shape.rank is not None and values.shape.rank is not None \
            and sw.shape.rank < values.shape.rank:
        sw = array_ops.expand_dims(sw, -1)
    return sw * constant_ops.ones_like(values)


def _div_no_nan(a, b):
    safe = array_ops.where(math_ops.equal(b, 0.0), constant_ops.ones_like(b), b)
    return array_ops.where(math_ops.equal(b, 0.0), constant_ops.zeros_like(a * b), a / safe)


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
            setattr(self, k, self.add_variable(names[k], shape))

    def _preprocess(self, y_pred):
        return _float(y_pred)

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
            self.tp = self.add_variable("true_positives", [c])
            self.fp = self.add_variable("false_positives", [c])
            self.fn = self.add_variable("false_negatives", [c])
            self.iw = self.add_variable("intermediate_weights", [c])
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
            ops = [self.tp.assign_add(reduction_ops.reduce_sum(y_pred * y_true * w, 0),
                                      read_value=False),
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


_CLASSES = {c.__name__: c for c in (Mean, Sum, Accuracy, BinaryAccuracy, CategoricalAccuracy,
                                    SparseCategoricalAccuracy, MeanSquaredError,
                                    MeanAbsoluteError, RootMeanSquaredError,
                                    TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy,
                                    Precision, Recall, AUC, FBetaScore, F1Score)}
_BY_NAME = {"accuracy": Accuracy, "acc": Accuracy, "binary_accuracy": BinaryAccuracy,
            "categorical_accuracy": CategoricalAccuracy,
            "sparse_categorical_accuracy": SparseCategoricalAccuracy,
            "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError,
            "mean_absolute_error": MeanAbsoluteError, "mae": MeanAbsoluteError,
            "root_mean_squared_error": RootMeanSquaredError, "rmse": RootMeanSquaredError,
            "top_k_categorical_accuracy": TopKCategoricalAccuracy,
            "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy,
            "precision": Precision, "recall": Recall, "auc": AUC}


def get(identifier):
    """A new `Metric` from a name, a ``{"class_name", "config"}`` dict, a `Metric`
    (returned as is) or a per-sample function (wrapped in `MeanMetricWrapper`).

    ``"accuracy"``/``"acc"`` give the plain `Accuracy`; a trainer that knows the targets
    and predictions should call `resolve_accuracy` instead, as Keras's compile does.
    Loss names (``"binary_crossentropy"``, ...) give the mean of that loss.
    """
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        key = identifier if identifier in _CLASSES else identifier.lower()
        if key in _CLASSES:
            return _CLASSES[key]()
        if key in _BY_NAME:
            return _BY_NAME[key](name=identifier)
        try:
            fn = _losses.get(key)
        except ValueError:
            raise ValueError(f"Unknown metric: {identifier!r}") from None
        return MeanMetricWrapper(fn, name=identifier)
    if isinstance(identifier, dict):
        cls = _CLASSES.get(identifier.get("class_name"))
        if cls is None:
            raise ValueError(f"Unknown metric class: {identifier.get('class_name')!r}")
        return cls.from_config(dict(identifier.get("config") or {}))
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}")


def _shape_of(x):
    from mylib.core.tensor_shape import as_shape

    s = getattr(x, "shape", x)
    return as_shape(s if not isinstance(s, list) else tuple(s))


def _loss_name(loss):
    if loss is None:
        return ""
    if isinstance(loss, str):
        return loss.lower()
    fn = getattr(loss, "fn", None)  # LossFunctionWrapper
    return (getattr(fn, "__name__", None) or getattr(loss, "__name__", None)
            or to_snake_case(type(loss).__name__)).lower()


def resolve_accuracy(y_true, y_pred, loss=None, name="accuracy"):
    """The accuracy metric Keras's compile picks for ``"accuracy"``/``"acc"``.

    Args:
      y_true, y_pred: the targets and predictions (tensors, or their shapes).
      loss: the loss (name, function or `Loss`), used when shapes do not decide.
      name: the metric's name (default ``"accuracy"``, as the user wrote it).
    Returns:
      `SparseCategoricalAccuracy` when ``y_true`` has one fewer dim than ``y_pred`` or
      ends in 1 while ``y_pred``'s last dim is > 1 (or the loss is sparse categorical);
      `BinaryAccuracy` when ``y_pred``'s last dim is 1 or ``y_pred`` is rank 1 (or the
      loss is binary cross-entropy); `CategoricalAccuracy` otherwise.
    """
    ts, ps = _shape_of(y_true), _shape_of(y_pred)
    lname = _loss_name(loss)
    t_rank, p_rank = ts.rank, ps.rank
    p_last = ps.as_list()[-1] if p_rank else None
    t_last = ts.as_list()[-1] if t_rank else None
    if p_rank is not None and (p_last == 1 or p_rank == 1):
        return BinaryAccuracy(name=name)
    if "sparse_categorical" in lname:
        return SparseCategoricalAccuracy(name=name)
    if "binary" in lname:
        return BinaryAccuracy(name=name)
    if t_rank is not None and p_rank is not None and (
            t_rank < p_rank or (t_last == 1 and (p_last or 0) > 1)):
        return SparseCategoricalAccuracy(name=name)
    return CategoricalAccuracy(name=name)
