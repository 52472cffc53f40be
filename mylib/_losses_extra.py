"""Keras 3's further losses: categorical focal cross-entropy, the overlap losses of
segmentation (`dice`, `tversky`), the metric-learning `circle` loss, the generalized
cross-entropy for noisy labels and `ctc` for unaligned sequences.

Each is a per-sample function and a `LossFunctionWrapper` class, as in
`mylib.losses` (whose namespace re-exports them). The classes align `y_true` and
`y_pred` first (Keras's `squeeze_or_expand_to_same_rank`), as Keras 3's
`LossFunctionWrapper.call` does; the functions take their inputs as given.
"""

from __future__ import annotations

import warnings

from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import (array_ops, clip_ops, constant_ops, ctc_ops, indexing_ops,
                            math_ops, nn_ops, reduction_ops)
from mylib.losses import (EPSILON, Loss, LossFunctionWrapper, _float_pred, _like,
                          squeeze_or_expand_to_same_rank)

__all__ = ["CategoricalFocalCrossentropy", "Dice", "Tversky", "Circle",
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


FUNCTIONS = (categorical_focal_crossentropy, dice, tversky, circle,
             categorical_generalized_cross_entropy, ctc)
CLASSES = (CategoricalFocalCrossentropy, Dice, Tversky, Circle,
           CategoricalGeneralizedCrossEntropy, CTC)
