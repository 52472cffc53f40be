"""Keras-style losses, built from graph ops, and TensorFlow 1's ``tf.losses`` functions
(`mylib.losses_v1`: `sparse_softmax_cross_entropy`, `softmax_cross_entropy`,
`mean_squared_error`, ... with `Reduction` and the ``LOSSES`` collection).

``mean_squared_error`` is TF1's here (weighted, reduced to a scalar, collected); Keras's
per-sample function of that name is `mse` / `MSE`, and `get` turns TF1's function into
it, so ``compile(loss=ml.losses.mean_squared_error)`` means what it means in Keras.

Keras 3's further losses (`CategoricalFocalCrossentropy`, `Dice`, `Tversky`, `Circle`,
`CategoricalGeneralizedCrossEntropy`, `CTC` and their functions) live in
this module's last section.

Keras functions (`mse`, ...) return per-sample losses ``[batch]`` (the mean
over the last axis where Keras takes it); classes (`MeanSquaredError`, ...) reduce them
to a scalar, weighted by an optional `sample_weight`.

Semantics kept from Keras:
  * ``[N]`` targets against ``[N, 1]`` predictions align (the lower-rank one gains a
    last axis of 1, or a trailing axis of 1 is squeezed) instead of broadcasting to
    ``[N, N]``;
  * sparse labels may be ``[N]`` or ``[N, 1]``, int or float;
  * probabilities are clipped to ``[1e-7, 1 - 1e-7]`` when ``from_logits=False``
    (categorical ones are first normalized to sum to 1, as Keras);
  * ``from_logits=True`` uses the stable fused ops of `ml.nn`.
"""

from __future__ import annotations

import numbers
import warnings

from mylib._naming import to_snake_case
from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, clip_ops, math_ops, nn_ops
from mylib.core.graph import _default_stack, name_scope
from mylib.core.graph import Tensor
from mylib.core.ops import (constant_ops, ctc_ops, indexing_ops, reduction_ops)

EPSILON = 1e-7

__all__ = ["Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError",
           "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "mean_squared_error", "mean_absolute_error", "binary_crossentropy",
           "categorical_crossentropy", "sparse_categorical_crossentropy", "get", "mse", "mae",
           "squeeze_or_expand_to_same_rank", "Huber", "LogCosh", "KLDivergence", "Poisson",
           "CosineSimilarity", "Hinge", "SquaredHinge", "CategoricalHinge",
           "BinaryFocalCrossentropy", "huber", "log_cosh", "logcosh", "kl_divergence", "kld",
           "poisson", "cosine_similarity", "hinge", "squared_hinge", "categorical_hinge",
           "binary_focal_crossentropy", "MeanAbsolutePercentageError",
           "MeanSquaredLogarithmicError", "mean_absolute_percentage_error",
           "mean_squared_logarithmic_error", "mape", "msle", "MAPE", "MSLE"]


# ------------------------------------------------------------ helpers
def _float_pred(y_pred):
    y_pred = convert_to_tensor(y_pred, dtype_hint=_dtypes.float32)
    if not y_pred.dtype.is_floating:
        y_pred = math_ops.cast(y_pred, _dtypes.float32)
    return y_pred


def _like(y, dtype):
    y = convert_to_tensor(y, dtype_hint=dtype)
    return y if y.dtype == dtype else math_ops.cast(y, dtype)


def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1=True):
    """Keras's alignment of two tensors whose ranks differ by one.

    When the higher-rank one ends in an axis of size 1: the rank-1 one gains a last
    axis (``expand_rank_1``), otherwise that size-1 axis is squeezed. Other pairs are
    returned unchanged (and broadcast as usual).
    """
    r1, r2 = x1.shape.rank, x2.shape.rank
    if r1 is None or r2 is None or r1 == r2:
        return x1, x2
    if r1 == r2 + 1 and x1.shape.as_list()[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = array_ops.expand_dims(x2, -1)
        else:
            x1 = array_ops.squeeze(x1, axis=[-1])
    elif r2 == r1 + 1 and x2.shape.as_list()[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = array_ops.expand_dims(x1, -1)
        else:
            x2 = array_ops.squeeze(x2, axis=[-1])
    return x1, x2


def _prepare(y_true, y_pred):
    y_pred = _float_pred(y_pred)
    y_true = _like(y_true, y_pred.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


# ------------------------------------------------------------ functions
def mean_squared_error(y_true, y_pred):
    """``mean(square(y_true - y_pred), axis=-1)``.

    Args:
      y_true, y_pred: `Tensor` ``[batch, d0, .., dN]`` (``[N]`` vs ``[N, 1]`` align).
    Returns:
      `Tensor` ``[batch, d0, .., dN-1]``.
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    return reduction_ops.reduce_mean(math_ops.square(y_pred - y_true), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """``mean(abs(y_true - y_pred), axis=-1)``; shapes as `mean_squared_error`."""
    y_true, y_pred = _prepare(y_true, y_pred)
    return reduction_ops.reduce_mean(math_ops.abs(y_pred - y_true), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    """``100 * mean(|(y_true - y_pred) / max(|y_true|, 1e-7)|, axis=-1)`` (Keras's);
    shapes as `mean_squared_error`."""
    y_true, y_pred = _prepare(y_true, y_pred)
    diff = math_ops.abs((y_true - y_pred) / math_ops.maximum(math_ops.abs(y_true), EPSILON))
    return 100.0 * reduction_ops.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    """``mean((log(max(y_pred, 1e-7) + 1) - log(max(y_true, 1e-7) + 1))^2, axis=-1)``
    (Keras's); shapes as `mean_squared_error`."""
    y_true, y_pred = _prepare(y_true, y_pred)
    a = math_ops.log(math_ops.maximum(y_pred, EPSILON) + 1.0)
    b = math_ops.log(math_ops.maximum(y_true, EPSILON) + 1.0)
    return reduction_ops.reduce_mean(math_ops.square(a - b), axis=-1)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0):
    """Binary cross-entropy, the mean over the last axis.

    Args:
      y_true: targets in [0, 1], ``[batch, d0, .., dN]``.
      y_pred: probabilities (or logits with ``from_logits=True``), same shape (``[N]``
        vs ``[N, 1]`` align).
      from_logits: `y_pred` are logits (stable ``sigmoid_cross_entropy_with_logits``);
        otherwise probabilities clipped to ``[1e-7, 1 - 1e-7]``.
      label_smoothing: ``y_true * (1 - s) + 0.5 * s``.
    Returns:
      `Tensor` ``[batch, d0, .., dN-1]``.
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        bce = nn_ops.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = clip_ops.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
        bce = -(y_true * math_ops.log(p) + (1.0 - y_true) * math_ops.log(1.0 - p))
    return reduction_ops.reduce_mean(bce, axis=-1)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0,
                             axis=-1):
    """Cross-entropy against one-hot (or soft) targets.

    Args:
      y_true: ``[batch, .., num_classes]`` distributions.
      y_pred: probabilities (normalized to sum 1, then clipped to ``[1e-7, 1 - 1e-7]``,
        as Keras) or logits with ``from_logits=True`` (a stable log-softmax; targets
        need not sum to 1, the gradient is exact for multi-hot ones as in Keras 3).
      label_smoothing: ``y_true * (1 - s) + s / num_classes``.
    Returns:
      `Tensor` ``[batch, ..]``.
    """
    y_pred = _float_pred(y_pred)
    y_true = _like(y_true, y_pred.dtype)
    if label_smoothing:
        n = y_pred.shape.as_list()[axis] if y_pred.shape.rank is not None else None
        if n is None:
            n = math_ops.cast(array_ops.shape(y_pred)[axis], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / n
    if from_logits:
        # -sum(y * log_softmax(logits)), as Keras 3: its gradient is
        # ``sum(y) * softmax - y``, right for targets that do not sum to 1 (multi-hot,
        # unnormalized). TensorFlow's fused op backpropagates ``softmax - y`` (it assumes
        # distributions), so it serves `tf.nn.softmax_cross_entropy_with_logits` only.
        return -reduction_ops.reduce_sum(y_true * nn_ops.log_softmax(y_pred, axis=axis),
                                         axis=axis)
    p = y_pred / reduction_ops.reduce_sum(y_pred, axis=axis, keepdims=True)
    p = clip_ops.clip_by_value(p, EPSILON, 1.0 - EPSILON)
    return -reduction_ops.reduce_sum(y_true * math_ops.log(p), axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None,
                                    axis=-1):
    """Cross-entropy against integer class labels.

    Args:
      y_true: class indices ``[batch, ..]`` or ``[batch, .., 1]``, int or float.
      y_pred: ``[batch, .., num_classes]`` probabilities (normalized, clipped to
        ``[1e-7, 1 - 1e-7]``) or logits (``from_logits=True``, stable fused op).
      ignore_class: optional int label (e.g. -1 or a "void" class of a segmentation
        map): entries with this label get a loss of 0, and the result carries the mask
        of the others as its Keras mask (``_keras_mask``, `bool` ``[batch, ..]``), so
        the loss classes and `fit` average over those entries only, as Keras 3.
    Returns:
      `Tensor` ``[batch, ..]``.
    """
    y_pred = _float_pred(y_pred)
    y_true = convert_to_tensor(y_true, dtype_hint=_dtypes.int64)
    if (y_true.shape.rank is not None and y_true.shape.rank == y_pred.shape.rank
            and y_true.shape.as_list()[-1] == 1):
        y_true = array_ops.squeeze(y_true, axis=[-1])
    if not y_true.dtype.is_integer:
        y_true = math_ops.cast(y_true, _dtypes.int64)
    if ignore_class is None:
        return _scce(y_true, y_pred, from_logits, axis)
    valid = math_ops.not_equal(y_true, constant_ops.constant(int(ignore_class),
                                                             dtype=y_true.dtype))
    # As Keras: ignored entries get label 0 and zero scores (a finite loss), then 0.
    y_true = array_ops.where(valid, y_true, constant_ops.zeros_like(y_true))
    y_pred = array_ops.where(array_ops.expand_dims(valid, -1), y_pred,
                             constant_ops.zeros_like(y_pred))
    res = _scce(y_true, y_pred, from_logits, axis)
    res = array_ops.where(valid, res, constant_ops.zeros_like(res))
    res._keras_mask = valid
    return res


def _scce(y_true, y_pred, from_logits, axis):
    if from_logits:
        return nn_ops.sparse_softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    p = y_pred / reduction_ops.reduce_sum(y_pred, axis=axis, keepdims=True)
    log_p = math_ops.log(clip_ops.clip_by_value(p, EPSILON, 1.0 - EPSILON))
    depth = y_pred.shape.as_list()[-1] if y_pred.shape.rank is not None else None
    if depth is None:
        # -log_softmax(log p)[label] == -log(p[label] / sum(p)); sum(p) == 1 unless clipped.
        return nn_ops.sparse_softmax_cross_entropy_with_logits(labels=y_true, logits=log_p)
    onehot = indexing_ops.one_hot(y_true, depth, dtype=y_pred.dtype)
    return -reduction_ops.reduce_sum(onehot * log_p, axis=-1)


def _hinge_labels(y_true):
    # Keras: 0/1 labels become -1/1; labels already in {-1, 1} are kept.
    is_binary = reduction_ops.reduce_all(math_ops.logical_or(math_ops.equal(y_true, 0.0),
                                                        math_ops.equal(y_true, 1.0)))
    return array_ops.where(is_binary, 2.0 * y_true - 1.0, y_true)


def huber(y_true, y_pred, delta=1.0):
    """Huber loss: ``0.5 * e**2`` where ``|e| <= delta``, else ``delta * |e| - 0.5 *
    delta**2`` (``e = y_pred - y_true``), the mean over the last axis."""
    y_true, y_pred = _prepare(y_true, y_pred)
    err = math_ops.abs(y_pred - y_true)
    quad = 0.5 * math_ops.square(err)
    lin = delta * err - 0.5 * delta ** 2
    return reduction_ops.reduce_mean(array_ops.where(math_ops.less_equal(err, delta), quad, lin),
                                axis=-1)


def log_cosh(y_true, y_pred):
    """``mean(log(cosh(y_pred - y_true)), -1)``, computed stably as ``x + softplus(-2x)
    - log(2)``."""
    y_true, y_pred = _prepare(y_true, y_pred)
    x = y_pred - y_true
    return reduction_ops.reduce_mean(x + nn_ops.softplus(-2.0 * x) - 0.6931471805599453, axis=-1)


def kl_divergence(y_true, y_pred):
    """``sum(y_true * log(y_true / y_pred), -1)``, both clipped to ``[1e-7, 1]``."""
    y_true, y_pred = _prepare(y_true, y_pred)
    t = clip_ops.clip_by_value(y_true, EPSILON, 1.0)
    p = clip_ops.clip_by_value(y_pred, EPSILON, 1.0)
    return reduction_ops.reduce_sum(t * math_ops.log(t / p), axis=-1)


def poisson(y_true, y_pred):
    """``mean(y_pred - y_true * log(y_pred + 1e-7), -1)``."""
    y_true, y_pred = _prepare(y_true, y_pred)
    return reduction_ops.reduce_mean(y_pred - y_true * math_ops.log(y_pred + EPSILON), axis=-1)


def cosine_similarity(y_true, y_pred, axis=-1):
    """``-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)``: -1 for parallel
    vectors, 0 for orthogonal ones (Keras's loss sign)."""
    y_true, y_pred = _prepare(y_true, y_pred)
    t = nn_ops.l2_normalize(y_true, axis=axis)
    p = nn_ops.l2_normalize(y_pred, axis=axis)
    return -reduction_ops.reduce_sum(t * p, axis=axis)


def hinge(y_true, y_pred):
    """``mean(max(1 - y_true * y_pred, 0), -1)``; 0/1 labels are mapped to -1/1."""
    y_true, y_pred = _prepare(y_true, y_pred)
    y_true = _hinge_labels(y_true)
    return reduction_ops.reduce_mean(math_ops.maximum(1.0 - y_true * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    """``mean(max(1 - y_true * y_pred, 0)**2, -1)``; 0/1 labels are mapped to -1/1."""
    y_true, y_pred = _prepare(y_true, y_pred)
    y_true = _hinge_labels(y_true)
    return reduction_ops.reduce_mean(
        math_ops.square(math_ops.maximum(1.0 - y_true * y_pred, 0.0)), axis=-1)


def categorical_hinge(y_true, y_pred):
    """``max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)`` over the last
    axis (one-hot targets)."""
    y_true, y_pred = _prepare(y_true, y_pred)
    pos = reduction_ops.reduce_sum(y_true * y_pred, axis=-1)
    neg = reduction_ops.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return math_ops.maximum(neg - pos + 1.0, 0.0)


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25,
                              gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary focal cross-entropy (Lin et al., 2017), as Keras 3: the element-wise
    cross-entropy times ``(1 - p_t)**gamma`` (times ``alpha`` / ``1 - alpha`` per class
    with `apply_class_balancing`), the mean over `axis`."""
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        y_pred = math_ops.sigmoid(y_pred)
    p = clip_ops.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
    bce = -(y_true * math_ops.log(p) + (1.0 - y_true) * math_ops.log(1.0 - p))
    p_t = y_true * y_pred + (1.0 - y_true) * (1.0 - y_pred)
    focal = math_ops.pow(1.0 - p_t, gamma) * bce
    if apply_class_balancing:
        focal = (y_true * alpha + (1.0 - y_true) * (1.0 - alpha)) * focal
    return reduction_ops.reduce_mean(focal, axis=axis)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh


# ------------------------------------------------------------ reduction
_REDUCTIONS = ("sum_over_batch_size", "sum", "none", None, "mean", "mean_with_sample_weight")


def reduce_weighted_values(values, sample_weight=None, reduction="sum_over_batch_size"):
    """Keras's reduction: ``values * sample_weight`` (aligned as the targets), then
    ``"sum"``, ``"sum_over_batch_size"`` or ``"mean"`` (sum / number of elements),
    ``"mean_with_sample_weight"`` (sum / sum of the weights) or ``"none"``."""
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        sw = _like(sample_weight, values.dtype)
        sw, v = squeeze_or_expand_to_same_rank(sw, values, expand_rank_1=False)
        sw = sw * constant_ops.ones_like(v)
        total = reduction_ops.reduce_sum(v * sw)
        den = reduction_ops.reduce_sum(sw)
        return array_ops.where(math_ops.equal(den, 0.0), constant_ops.zeros_like(total),
                               total / array_ops.where(math_ops.equal(den, 0.0),
                                                       constant_ops.ones_like(den), den))
    if sample_weight is not None:
        sw = _like(sample_weight, values.dtype)
        sw, values = squeeze_or_expand_to_same_rank(sw, values, expand_rank_1=False)
        values = values * sw
    if reduction in ("none", None):
        return values
    total = reduction_ops.reduce_sum(values)
    if reduction == "sum":
        return total
    n = math_ops.cast(array_ops.size(values), values.dtype)
    # divide_no_nan: an empty batch (total 0) gives 0.
    return total / math_ops.maximum(n, 1.0)


def _mask_weights(mask, sample_weight, dtype, reduction):
    """Keras 3's `apply_mask`: the sample weights times the mask of the per-element
    losses (`ignore_class`), the kept entries scaled by ``size / kept`` for the mean
    reductions, so that the mean is over the kept entries only (0 when none is)."""
    m = math_ops.cast(mask, dtype)
    if reduction in ("sum_over_batch_size", "mean"):
        total = math_ops.cast(array_ops.size(m), dtype)
        kept = reduction_ops.reduce_sum(m)
        m = m * array_ops.where(math_ops.equal(kept, 0.0), constant_ops.zeros_like(kept),
                                total / math_ops.maximum(kept, 1.0))
    if sample_weight is None:
        return m
    sw = _like(sample_weight, dtype)
    m, sw = squeeze_or_expand_to_same_rank(m, sw)
    return sw * m


def _has_symbolic(struct):
    """Whether a `Tensor` or a `Variable` (anything with ``_as_tensor``) is in `struct`."""
    if isinstance(struct, dict):
        return any(_has_symbolic(v) for v in struct.values())
    if isinstance(struct, (list, tuple)):
        return any(_has_symbolic(v) for v in struct)
    return isinstance(struct, Tensor) or hasattr(struct, "_as_tensor")


def _run_on_arrays(fn, *args):
    """``fn(*args)`` on array arguments (each made a constant, `None` kept), built in a
    fresh private graph and run once by its `Session`; the result as a JAX array (Keras
    3 on JAX returns JAX arrays)."""
    import jax.numpy as jnp

    from mylib.core.graph import Graph
    from mylib.runtime.session import Session

    graph = Graph()
    with graph.as_default():
        out = fn(*[None if a is None else convert_to_tensor(a) for a in args])
    with Session(graph=graph) as sess:
        value = sess.run(out)
    return jnp.asarray(value)


# ------------------------------------------------------------ classes
class Loss:
    """Base of the loss classes: ``__call__(y_true, y_pred, sample_weight=None)`` returns
    the `reduction` of ``call(y_true, y_pred)`` (per-sample losses) weighted by
    `sample_weight`.

    Args:
      reduction: ``"sum_over_batch_size"`` (default: the weighted sum divided by the
        number of per-sample losses, as Keras), ``"sum"`` or ``"none"``.
      name: name scope of the loss ops.
      dtype: optional float dtype (Keras 3's loss ``dtype``): when given, `y_true` and
        `y_pred` are cast to it before `call` (default: each function's own handling,
        float32 for non-float predictions).
    """

    def __init__(self, reduction="sum_over_batch_size", name=None, dtype=None):
        if reduction not in _REDUCTIONS:
            raise ValueError(f"Invalid reduction. Expected one of {list(_REDUCTIONS)}. "
                             f"Received: reduction={reduction!r}")
        self.reduction = reduction
        self.name = name or to_snake_case(type(self).__name__)
        self.dtype = None if dtype is None else _dtypes.as_dtype(dtype)

    def call(self, y_true, y_pred):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `call` (abstract in the base class)")

    def __call__(self, y_true, y_pred, sample_weight=None):
        """The reduced, weighted loss. On symbolic tensors it adds the loss ops to their
        graph and returns a scalar `Tensor` (``reduction="none"``: per-sample losses).
        On arrays (numpy / JAX arrays, Python numbers; no `Tensor` or `Variable` among
        the arguments) outside graph building (no ``with graph.as_default():`` open, the
        rule of `keras.random`) it computes at once, as Keras 3 does eagerly, and returns
        a JAX array: the ops are built in a private graph and run by its own `Session`.
        Inside ``with graph.as_default():`` array arguments still build ops (TensorFlow
        1's graph mode)."""
        if not _has_symbolic((y_true, y_pred, sample_weight)) and not _default_stack():
            return _run_on_arrays(self.__call__, y_true, y_pred, sample_weight)
        with name_scope(self.name, values=[y_pred] if isinstance(y_pred, Tensor) else None):
            if self.dtype is not None:
                y_true, y_pred = _like(y_true, self.dtype), _like(y_pred, self.dtype)
            values = self.call(y_true, y_pred)
            mask = getattr(values, "_keras_mask", None)
            if mask is not None:
                sample_weight = _mask_weights(mask, sample_weight, values.dtype,
                                              self.reduction)
            return reduce_weighted_values(values, sample_weight, self.reduction)

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class LossFunctionWrapper(Loss):
    """A `Loss` from a per-sample function ``fn(y_true, y_pred, **kwargs)``."""

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(reduction=reduction, name=name or getattr(fn, "__name__", None),
                         dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


class MeanSquaredError(LossFunctionWrapper):
    """Mean of squared errors; see `mse` (Keras's per-sample mean_squared_error)."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error"):
        super().__init__(mse, reduction=reduction, name=name)

    def get_config(self):
        return Loss.get_config(self)


class MeanAbsoluteError(LossFunctionWrapper):
    """Mean of absolute errors; see `mean_absolute_error`."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error"):
        super().__init__(mean_absolute_error, reduction=reduction, name=name)

    def get_config(self):
        return Loss.get_config(self)


class MeanAbsolutePercentageError(LossFunctionWrapper):
    """See `mean_absolute_percentage_error`."""

    def __init__(self, reduction="sum_over_batch_size",
                 name="mean_absolute_percentage_error"):
        super().__init__(mean_absolute_percentage_error, reduction=reduction, name=name)

    def get_config(self):
        return Loss.get_config(self)


class MeanSquaredLogarithmicError(LossFunctionWrapper):
    """See `mean_squared_logarithmic_error`."""

    def __init__(self, reduction="sum_over_batch_size",
                 name="mean_squared_logarithmic_error"):
        super().__init__(mean_squared_logarithmic_error, reduction=reduction, name=name)

    def get_config(self):
        return Loss.get_config(self)


class BinaryCrossentropy(LossFunctionWrapper):
    """See `binary_crossentropy`."""

    def __init__(self, from_logits=False, label_smoothing=0.0,
                 reduction="sum_over_batch_size", name="binary_crossentropy"):
        super().__init__(binary_crossentropy, reduction=reduction, name=name,
                         from_logits=from_logits, label_smoothing=label_smoothing)
        self.from_logits = from_logits


class CategoricalCrossentropy(LossFunctionWrapper):
    """See `categorical_crossentropy`."""

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_crossentropy"):
        super().__init__(categorical_crossentropy, reduction=reduction, name=name,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """See `sparse_categorical_crossentropy`."""

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 name="sparse_categorical_crossentropy"):
        if ignore_class is not None and (isinstance(ignore_class, bool) or
                                         not isinstance(ignore_class, numbers.Integral)):
            raise TypeError("`ignore_class` must be an int class id or None. Received: "
                            f"ignore_class={ignore_class!r}")
        kw = {} if ignore_class is None else {"ignore_class": int(ignore_class)}
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name,
                         from_logits=from_logits, **kw)
        self.from_logits = from_logits
        self.ignore_class = None if ignore_class is None else int(ignore_class)


class Huber(LossFunctionWrapper):
    """See `huber`."""

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss"):
        super().__init__(huber, reduction=reduction, name=name, delta=delta)


class LogCosh(LossFunctionWrapper):
    """See `log_cosh`."""

    def __init__(self, reduction="sum_over_batch_size", name="log_cosh"):
        super().__init__(log_cosh, reduction=reduction, name=name)


class KLDivergence(LossFunctionWrapper):
    """See `kl_divergence`."""

    def __init__(self, reduction="sum_over_batch_size", name="kl_divergence"):
        super().__init__(kl_divergence, reduction=reduction, name=name)


class Poisson(LossFunctionWrapper):
    """See `poisson`."""

    def __init__(self, reduction="sum_over_batch_size", name="poisson"):
        super().__init__(poisson, reduction=reduction, name=name)


class CosineSimilarity(LossFunctionWrapper):
    """See `cosine_similarity`."""

    def __init__(self, axis=-1, reduction="sum_over_batch_size", name="cosine_similarity"):
        super().__init__(cosine_similarity, reduction=reduction, name=name, axis=axis)


class Hinge(LossFunctionWrapper):
    """See `hinge`."""

    def __init__(self, reduction="sum_over_batch_size", name="hinge"):
        super().__init__(hinge, reduction=reduction, name=name)


class SquaredHinge(LossFunctionWrapper):
    """See `squared_hinge`."""

    def __init__(self, reduction="sum_over_batch_size", name="squared_hinge"):
        super().__init__(squared_hinge, reduction=reduction, name=name)


class CategoricalHinge(LossFunctionWrapper):
    """See `categorical_hinge`."""

    def __init__(self, reduction="sum_over_batch_size", name="categorical_hinge"):
        super().__init__(categorical_hinge, reduction=reduction, name=name)


class BinaryFocalCrossentropy(LossFunctionWrapper):
    """See `binary_focal_crossentropy`."""

    def __init__(self, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
                 label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="binary_focal_crossentropy"):
        super().__init__(binary_focal_crossentropy, reduction=reduction, name=name,
                         apply_class_balancing=apply_class_balancing, alpha=alpha,
                         gamma=gamma, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


_FUNCTIONS = {f.__name__: f for f in (mean_squared_error, mean_absolute_error,
                                      binary_crossentropy, categorical_crossentropy,
                                      sparse_categorical_crossentropy, huber, log_cosh,
                                      kl_divergence, poisson, cosine_similarity, hinge,
                                      squared_hinge, categorical_hinge,
                                      binary_focal_crossentropy,
                                      mean_absolute_percentage_error,
                                      mean_squared_logarithmic_error)}
_FUNCTIONS.update({"mse": mean_squared_error, "mae": mean_absolute_error, "kld": kl_divergence,
                   "mape": mean_absolute_percentage_error,
                   "msle": mean_squared_logarithmic_error,
                   "kullback_leibler_divergence": kl_divergence, "logcosh": log_cosh,
                   "huber_loss": huber})
_CLASSES = {c.__name__: c for c in (MeanSquaredError, MeanAbsoluteError, BinaryCrossentropy,
                                    CategoricalCrossentropy, SparseCategoricalCrossentropy,
                                    Huber, LogCosh, KLDivergence, Poisson, CosineSimilarity,
                                    Hinge, SquaredHinge, CategoricalHinge,
                                    BinaryFocalCrossentropy, MeanAbsolutePercentageError,
                                    MeanSquaredLogarithmicError)}


def serialize(loss):
    """``{"class_name", "config"}`` for a `Loss`, or the function's name."""
    if isinstance(loss, Loss) and type(loss).__name__ in _CLASSES:
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    name = getattr(loss, "__name__", None)
    if name in _FUNCTIONS:
        return name
    raise ValueError(f"Cannot serialize loss {loss!r}")


def get(identifier):
    """A loss from a name, a ``{"class_name", "config"}`` dict, or a callable.

    Names: the functions' (``"mean_squared_error"``, ``"mse"``, ``"mae"``,
    ``"binary_crossentropy"``, ``"categorical_crossentropy"``,
    ``"sparse_categorical_crossentropy"``; returns the function) or the classes'
    (``"MeanSquaredError"``; returns an instance). Callables are returned as is.

    Raises:
      ValueError: for an unknown identifier.
    """
    if identifier is None:
        return None
    if isinstance(identifier, str):
        key = identifier if identifier in _CLASSES else identifier.lower()
        if key in _FUNCTIONS:
            return _FUNCTIONS[key]
        if key in _CLASSES:
            return _CLASSES[key]()
        raise ValueError(f"Unknown loss: {identifier!r}. Known: "
                         f"{sorted(_FUNCTIONS) + sorted(_CLASSES)}")
    if isinstance(identifier, dict):
        cls = _CLASSES.get(identifier.get("class_name"))
        if cls is None:
            raise ValueError(f"Unknown loss class: {identifier.get('class_name')!r}")
        return cls.from_config(dict(identifier.get("config") or {}))
    if identifier is mean_squared_error:  # TF1's function: Keras's per-sample one
        return mse
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss identifier: {identifier!r}")


# ---- Keras 3's further losses: categorical focal cross-entropy, the overlap losses of
# segmentation (`dice`, `tversky`), the metric-learning `circle` loss, the generalized
# cross-entropy for noisy labels and `ctc` for unaligned sequences. The classes align
# `y_true` and `y_pred` first, as Keras 3's `LossFunctionWrapper.call` does; the
# functions take their inputs as given.
__all__ += ["CategoricalFocalCrossentropy", "Dice", "Tversky", "Circle",
           "CategoricalGeneralizedCrossEntropy", "CTC", "categorical_focal_crossentropy",
           "dice", "tversky", "circle", "categorical_generalized_cross_entropy", "ctc"]


def _pred_and_true(y_true, y_pred):
    y_pred = _float_pred(y_pred)
    return _like(y_true, y_pred.dtype), y_pred


# ------------------------------------------------------------ functions
def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False,
                                   label_smoothing=0.0, axis=-1):
    """Categorical focal cross-entropy (Lin et al., 2017, "Focal Loss for Dense Object
    Detection"), as Keras 3: ``sum(alpha * (1 - p)**gamma * -y_true * log(p), axis)``.

    Args:
      y_true: one-hot (or soft) targets ``[batch, .., num_classes]``.
      y_pred: probabilities (normalized to sum 1 over `axis`, then clipped to
        ``[1e-7, 1 - 1e-7]``) or logits with ``from_logits=True`` (softmax first), same
        shape; float.
      alpha: weighting factor of every class (a float, as Keras).
      gamma: focusing exponent of the modulating factor ``(1 - p)**gamma``.
      label_smoothing: ``y_true * (1 - s) + s / num_classes``.
      axis: the class axis (an int).
    Returns:
      `Tensor` ``[batch, ..]``, float.
    Raises:
      ValueError: if `axis` is a bool.
    """
    if isinstance(axis, bool):
        raise ValueError(f"`axis` must be of type `int`. Received: axis={axis} of type "
                         f"{type(axis)}")
    y_true, y_pred = _pred_and_true(y_true, y_pred)
    if y_pred.shape.rank and y_pred.shape.as_list()[-1] == 1:
        warnings.warn("In loss categorical_focal_crossentropy, expected y_pred.shape to be "
                      "(batch_size, num_classes) with num_classes > 1. Received: "
                      f"y_pred.shape={y_pred.shape}. Consider using 'binary_crossentropy' "
                      "if you only have 2 classes.", SyntaxWarning, stacklevel=2)
    if label_smoothing:
        n = y_true.shape.as_list()[-1] if y_true.shape.rank else None
        if n is None:
            n = math_ops.cast(array_ops.shape(y_true)[-1], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / n
    if from_logits:
        y_pred = nn_ops.softmax(y_pred, axis=axis)
    p = y_pred / reduction_ops.reduce_sum(y_pred, axis=axis, keepdims=True)
    p = clip_ops.clip_by_value(p, EPSILON, 1.0 - EPSILON)
    cce = -y_true * math_ops.log(p)
    focal = math_ops.pow(1.0 - p, gamma) * alpha * cce
    return reduction_ops.reduce_sum(focal, axis=axis)


def dice(y_true, y_pred, axis=None):
    """Dice loss ``1 - 2 * sum(y_true * y_pred) / (sum(y_true) + sum(y_pred) + 1e-7)``
    (Milletari et al., 2016, "V-Net"), as Keras 3.

    Args:
      y_true: targets in [0, 1], any shape.
      y_pred: predictions in [0, 1], the same shape; float.
      axis: the axes summed over; None (Keras's default) sums over every axis, batch
        included, giving one scalar loss for the whole batch.
    Returns:
      `Tensor`: a scalar for ``axis=None``, otherwise the input shape without `axis`.
    """
    y_true, y_pred = _pred_and_true(y_true, y_pred)
    inter = reduction_ops.reduce_sum(y_true * y_pred, axis=axis)
    den = (reduction_ops.reduce_sum(y_true, axis=axis) +
           reduction_ops.reduce_sum(y_pred, axis=axis) + EPSILON)
    return 1.0 - 2.0 * inter / den


def tversky(y_true, y_pred, alpha=0.5, beta=0.5, axis=None):
    """Tversky loss ``1 - tp / (tp + alpha * fp + beta * fn + 1e-7)`` (Salehi et al., 2017,
    "Tversky loss function for image segmentation"), as Keras 3, with
    ``tp = sum(y_true * y_pred)``, ``fp = sum((1 - y_pred) * y_true)`` and
    ``fn = sum(y_pred * (1 - y_true))`` over `axis`.

    Keras 3 names the terms this way round (its `fp` weighs the missed targets); with
    ``alpha = beta = 0.5`` this is the Dice loss.

    Args:
      y_true, y_pred, axis: as `dice`.
      alpha: weight of ``sum((1 - y_pred) * y_true)``.
      beta: weight of ``sum(y_pred * (1 - y_true))``.
    Returns:
      `Tensor`: a scalar for ``axis=None``, otherwise the input shape without `axis`.
    """
    y_true, y_pred = _pred_and_true(y_true, y_pred)
    inter = reduction_ops.reduce_sum(y_true * y_pred, axis=axis)
    fp = reduction_ops.reduce_sum((1.0 - y_pred) * y_true, axis=axis)
    fn = reduction_ops.reduce_sum(y_pred * (1.0 - y_true), axis=axis)
    return 1.0 - inter / (inter + fp * alpha + fn * beta + EPSILON)


def _pos_neg_masks(query_labels, key_labels, remove_diagonal):
    # Keras's `build_pos_neg_masks`: same label = positive pair, optionally not with itself.
    q = array_ops.reshape(query_labels, [-1, 1])
    k = array_ops.reshape(key_labels, [1, -1])
    pos = math_ops.equal(q, k)
    neg = math_ops.logical_not(pos)
    if remove_diagonal:
        rows = array_ops.expand_dims(constant_ops.range(array_ops.size(q)), 1)
        cols = array_ops.expand_dims(constant_ops.range(array_ops.size(k)), 0)
        pos = math_ops.logical_and(pos, math_ops.not_equal(rows, cols))
    return pos, neg


def circle(y_true, y_pred, ref_labels=None, ref_embeddings=None, remove_diagonal=True,
           gamma=80, margin=0.4):
    """Circle loss (Sun et al., 2020, "Circle Loss: A Unified Perspective of Pair
    Similarity Optimization") between integer labels and L2-normalized embeddings, as
    Keras 3: pairs are compared by cosine distance ``max(1 - <e_i, e_j>, 0)``.

    Args:
      y_true: int labels ``[batch]`` (cast to int32).
      y_pred: L2-normalized embeddings ``[batch, dim]``; float.
      ref_labels: labels of the reference embeddings ``[refs]`` (default `y_true`).
      ref_embeddings: reference embeddings ``[refs, dim]`` (default `y_pred`).
      remove_diagonal: a sample is not its own positive pair (meant for references equal
        to the batch).
      gamma: scale of the similarity terms.
      margin: relaxation margin ``m``: optima ``-m`` / ``1 + m``, decision margins
        ``m`` / ``1 - m``.
    Returns:
      `Tensor` ``[batch]``, float. It carries the Keras mask ``loss > 0``
      (``_keras_mask``), so the loss class averages over the samples with a positive
      loss, as Keras 3.
    """
    y_pred = _float_pred(y_pred)
    y_true = math_ops.cast(convert_to_tensor(y_true), _dtypes.int32)
    ref_emb = y_pred if ref_embeddings is None else _like(ref_embeddings, y_pred.dtype)
    ref_lab = y_true if ref_labels is None else math_ops.cast(convert_to_tensor(ref_labels),
                                                              _dtypes.int32)
    dist = math_ops.maximum(1.0 - math_ops.matmul(y_pred, array_ops.transpose(ref_emb)), 0.0)
    pos, neg = _pos_neg_masks(y_true, ref_lab, remove_diagonal)
    pos_f, neg_f = math_ops.cast(pos, dist.dtype), math_ops.cast(neg, dist.dtype)
    pos_w = math_ops.maximum((margin + dist) * pos_f, 0.0)
    neg_w = math_ops.maximum((1.0 + margin - dist) * neg_f, 0.0)
    pos_wd = -1.0 * gamma * pos_w * (margin - dist)
    neg_wd = gamma * neg_w * ((1.0 - margin) - dist)
    ninf = constant_ops.fill(array_ops.shape(dist),
                             constant_ops.constant(float("-inf"), dtype=dist.dtype))
    p_loss = reduction_ops.reduce_logsumexp(array_ops.where(pos, pos_wd, ninf), axis=1)
    n_loss = reduction_ops.reduce_logsumexp(array_ops.where(neg, neg_wd, ninf), axis=1)
    loss = nn_ops.softplus(p_loss + n_loss)
    loss._keras_mask = math_ops.greater(loss, 0.0)
    return loss


def categorical_generalized_cross_entropy(y_true, y_pred, q):
    """Generalized cross-entropy ``(1 - p_y**q) / q`` (Zhang & Sabuncu, 2018,
    "Generalized Cross Entropy Loss for Training Deep Neural Networks with Noisy
    Labels"), as Keras 3: between MAE (``q = 1``) and cross-entropy (``q -> 0``).

    Args:
      y_true: int class ids ``[batch, ..]`` (floats are cast to int).
      y_pred: class probabilities ``[batch, .., num_classes]`` (not clipped, as Keras);
        the class count must be static.
      q: float in (0, 1).
    Returns:
      `Tensor` ``[batch, ..]``, float.
    """
    y_pred = _float_pred(y_pred)
    depth = y_pred.shape.as_list()[-1] if y_pred.shape.rank else None
    if depth is None:
        raise ValueError("categorical_generalized_cross_entropy needs the class count (last "
                         f"axis of y_pred) known statically. Received: y_pred.shape="
                         f"{y_pred.shape}")
    labels = math_ops.cast(convert_to_tensor(y_true), _dtypes.int32)
    onehot = indexing_ops.one_hot(labels, depth, dtype=y_pred.dtype)
    p = reduction_ops.reduce_sum(y_pred * onehot, axis=-1)
    return (1.0 - math_ops.pow(p, q)) / q


def ctc(y_true, y_pred):
    """Connectionist temporal classification loss (Graves et al., 2006), as Keras 3's
    `ctc`: class 0 is the blank and also pads the labels, every output step is used.

    Computed by `optax.ctc_loss` (the algorithm Keras 3's JAX backend copies), through
    the `CTCLossDense` op.

    Args:
      y_true: int labels ``[batch, max_label_length]``, 0-padded (a label's length is
        its count of nonzero entries); floats are cast to int32.
      y_pred: logits ``[batch, max_time, num_classes]`` (log-softmax is applied inside).
    Returns:
      `Tensor` ``[batch]``: the negative log-likelihood of each label sequence.
    Raises:
      ValueError: if `y_true` is not of rank 2 or `y_pred` not of rank 3.
    """
    y_pred = _float_pred(y_pred)
    y_true = convert_to_tensor(y_true)
    if y_true.shape.rank is not None and y_true.shape.rank != 2:
        raise ValueError("Targets `y_true` are expected to be a tensor of shape "
                         "`(batch_size, max_length)` in integer format. "
                         f"Received: y_true.shape={y_true.shape}")
    if y_pred.shape.rank is not None and y_pred.shape.rank != 3:
        raise ValueError("Logits `y_pred` are expected to be a tensor of shape "
                         "`(batch_size, max_length, num_classes)`. "
                         f"Received: y_pred.shape={y_pred.shape}")
    labels = math_ops.cast(y_true, _dtypes.int32)
    label_length = reduction_ops.reduce_sum(
        math_ops.cast(math_ops.not_equal(labels, 0), _dtypes.int32), axis=-1)
    shape = array_ops.shape(y_pred)
    logit_length = constant_ops.fill(shape[:1], shape[1])
    return ctc_ops.ctc_loss_dense(labels, y_pred, label_length, logit_length, blank_index=0)


# ------------------------------------------------------------ classes
class _AlignedWrapper(LossFunctionWrapper):
    """Keras 3's `LossFunctionWrapper.call`: aligns the ranks, then the function."""

    def call(self, y_true, y_pred):
        y_true = convert_to_tensor(y_true)
        y_pred = convert_to_tensor(y_pred)
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)


class CategoricalFocalCrossentropy(_AlignedWrapper):
    """See `categorical_focal_crossentropy` (Keras 3's class: same arguments,
    `reduction`, default name ``"categorical_focal_crossentropy"``)."""

    def __init__(self, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_focal_crossentropy",
                 dtype=None):
        super().__init__(categorical_focal_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, alpha=alpha, gamma=gamma, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)
        self.alpha, self.gamma, self.from_logits = alpha, gamma, from_logits
        self.label_smoothing, self.axis = label_smoothing, axis


class Dice(_AlignedWrapper):
    """See `dice`. With the default ``axis=None`` the loss of a batch is one scalar;
    a per-sample `sample_weight` needs an `axis` that keeps the batch axis."""

    def __init__(self, reduction="sum_over_batch_size", name="dice", axis=None, dtype=None):
        super().__init__(dice, reduction=reduction, name=name, dtype=dtype, axis=axis)
        self.axis = axis


class Tversky(_AlignedWrapper):
    """See `tversky`; `axis` as `Dice`."""

    def __init__(self, alpha=0.5, beta=0.5, reduction="sum_over_batch_size", name="tversky",
                 axis=None, dtype=None):
        super().__init__(tversky, reduction=reduction, name=name, dtype=dtype, alpha=alpha,
                         beta=beta, axis=axis)
        self.alpha, self.beta, self.axis = alpha, beta, axis


class Circle(_AlignedWrapper):
    """See `circle`: the batch's own embeddings are the references. The reduction
    averages over the samples whose loss is positive (Keras 3's mask)."""

    def __init__(self, gamma=80.0, margin=0.4, remove_diagonal=True,
                 reduction="sum_over_batch_size", name="circle", dtype=None):
        super().__init__(circle, reduction=reduction, name=name, dtype=dtype, gamma=gamma,
                         margin=margin, remove_diagonal=remove_diagonal)
        self.gamma, self.margin, self.remove_diagonal = gamma, margin, remove_diagonal


class CategoricalGeneralizedCrossEntropy(_AlignedWrapper):
    """See `categorical_generalized_cross_entropy`.

    Raises:
      ValueError: if `q` is not in (0, 1).
    """

    def __init__(self, q=0.5, reduction="sum_over_batch_size",
                 name="categorical_generalized_cross_entropy", dtype=None):
        if not 0 < q < 1:
            raise ValueError(f"q must be in the interval (0, 1). Received: q={q!r}")
        super().__init__(categorical_generalized_cross_entropy, reduction=reduction, name=name,
                         dtype=dtype, q=q)
        self.q = q


class CTC(_AlignedWrapper):
    """See `ctc`."""

    def __init__(self, reduction="sum_over_batch_size", name="ctc", dtype=None):
        super().__init__(ctc, reduction=reduction, name=name, dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


_FUNCTIONS.update({f.__name__: f for f in (
    categorical_focal_crossentropy, dice, tversky, circle,
    categorical_generalized_cross_entropy, ctc)})
_CLASSES.update({c.__name__: c for c in (
    CategoricalFocalCrossentropy, Dice, Tversky, Circle,
    CategoricalGeneralizedCrossEntropy, CTC)})

# TensorFlow 1's functions (`tf.losses.*`); `mean_squared_error` becomes TF1's here.
from mylib import losses_v1 as _v1  # noqa: E402
from mylib.losses_v1 import (Reduction, absolute_difference, add_loss,  # noqa: E402,F401
                             compute_weighted_loss, cosine_distance, get_losses,
                             get_regularization_loss, get_regularization_losses,
                             get_total_loss, hinge_loss, huber_loss, log_loss,
                             mean_pairwise_squared_error, mean_squared_error,
                             sigmoid_cross_entropy, softmax_cross_entropy,
                             sparse_softmax_cross_entropy)

__all__ = __all__ + [n for n in _v1.__all__ if n not in __all__]
