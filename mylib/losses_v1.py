"""TensorFlow 1's ``tf.losses`` functions (`losses_impl.py`): each computes per-element
losses, weights them, reduces them by `Reduction` and adds the result to the
``GraphKeys.LOSSES`` collection (`get_total_loss` sums that collection and the
regularization losses).

Reductions (``weighted = losses * weights``, weights broadcast to the losses' shape):

- ``NONE``: ``weighted`` itself;
- ``SUM``: ``sum(weighted)``;
- ``MEAN``: ``sum(weighted) / sum(weights)``;
- ``SUM_OVER_BATCH_SIZE``: ``sum(weighted) / number of loss elements``;
- ``SUM_BY_NONZERO_WEIGHTS`` (the default): ``sum(weighted) / number of non-zero
  weights``.

A zero denominator gives 0 (TF1's safe division). `weights` is a scalar or a tensor of
the losses' rank whose dimensions are 1 or equal to the losses' (a [batch] weight for
[batch] losses); [batch, 1] weights against [batch] losses are squeezed, as TF1 does.

In `mylib.losses` these functions sit beside the Keras-style ones. One name is shared:
``mylib.losses.mean_squared_error`` is TF1's (scalar, reduced, collected); Keras's
per-sample function is ``mylib.losses.mse``, and ``losses.get`` (what ``compile`` uses)
turns TF1's function into Keras's, so ``compile(loss=ml.losses.mean_squared_error)``
keeps its Keras meaning.
"""

from __future__ import annotations

from mylib.core import dtypes as _dtypes
from mylib.core.graph import GraphKeys, get_default_graph, name_scope
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, math_ops, nn_ops, reduction_ops

__all__ = ["Reduction", "compute_weighted_loss", "absolute_difference", "cosine_distance",
           "hinge_loss", "huber_loss", "log_loss", "mean_squared_error",
           "sigmoid_cross_entropy", "softmax_cross_entropy", "sparse_softmax_cross_entropy",
           "add_loss", "get_losses", "get_regularization_loss", "get_regularization_losses",
           "get_total_loss", "mean_pairwise_squared_error"]


class Reduction:
    """How a TF1 loss reduces its weighted per-element losses (see the module doc)."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key!r}. Expected one of {cls.all()}")


def _safe_div(num, den):
    zero = math_ops.equal(den, 0.0)
    return array_ops.where(zero, constant_ops.zeros_like(num),
                           num / array_ops.where(zero, constant_ops.ones_like(den), den))


def _align_weights(weights, losses, who):
    w = convert_to_tensor(weights, dtype_hint=losses.dtype)
    if w.dtype != losses.dtype:
        w = math_ops.cast(w, losses.dtype)
    wr, lr = w.shape.rank, losses.shape.rank
    if wr is None or lr is None or wr == 0:
        return w
    if wr == lr + 1 and w.shape.as_list()[-1] == 1:
        w = array_ops.squeeze(w, [-1])
        wr -= 1
    if wr != lr:
        raise ValueError(f"{who}: weights can not be broadcast to values. weights.shape="
                         f"{w.shape}, values.shape={losses.shape}: weights must be a scalar "
                         "or have the rank of the losses")
    for a, b in zip(w.shape.as_list(), losses.shape.as_list()):
        if a not in (None, 1) and b is not None and a != b:
            raise ValueError(f"{who}: weights can not be broadcast to values. weights.shape="
                             f"{w.shape}, values.shape={losses.shape}")
    return w


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weights `losses` and reduces them by `reduction`, and adds the result to
    `loss_collection` (None: to no collection), for every reduction as TF1 does.

    Args:
      losses: float `Tensor` of per-element losses.
      weights: scalar or `Tensor` broadcastable as the module doc says.
      reduction: a `Reduction` key.
    Returns:
      the weighted loss: a scalar, or the losses' shape for ``NONE``; the losses' dtype.
    Raises:
      ValueError: an unknown reduction or weights that cannot be broadcast.
    """
    Reduction.validate(reduction)
    with name_scope(scope, "weighted_loss"):
        losses = convert_to_tensor(losses)
        in_dtype = losses.dtype
        if in_dtype != _dtypes.float32 and in_dtype != _dtypes.float64:
            losses = math_ops.cast(losses, _dtypes.float32)
        w = _align_weights(weights, losses, "compute_weighted_loss")
        weighted = math_ops.multiply(losses, w)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            total = reduction_ops.reduce_sum(weighted)
            if reduction == Reduction.SUM:
                loss = total
            else:
                ones = constant_ops.ones_like(losses)
                if reduction == Reduction.MEAN:
                    den = reduction_ops.reduce_sum(w * ones)
                elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                    den = math_ops.cast(array_ops.size(losses), losses.dtype)
                else:
                    present = math_ops.cast(math_ops.not_equal(w, 0.0), losses.dtype)
                    den = reduction_ops.reduce_sum(present * ones)
                loss = _safe_div(total, den)
        if loss.dtype != in_dtype and in_dtype.is_floating:
            loss = math_ops.cast(loss, in_dtype)
        if loss_collection is not None:
            add_loss(loss, loss_collection)
        return loss


def _pair(labels, predictions, who, cast_labels=True):
    predictions = convert_to_tensor(predictions)
    labels = convert_to_tensor(labels, dtype_hint=predictions.dtype)
    if cast_labels and labels.dtype != predictions.dtype:
        labels = math_ops.cast(labels, predictions.dtype)
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError(f"{who}: shapes {predictions.shape} (predictions) and "
                         f"{labels.shape} (labels) are incompatible")
    return labels, predictions


def _check(x, what, who):
    if x is None:
        raise ValueError(f"{who}: argument `{what}` must not be None.")


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``|predictions - labels|``, weighted and reduced (module doc)."""
    _check(labels, "labels", "absolute_difference")
    _check(predictions, "predictions", "absolute_difference")
    with name_scope(scope, "absolute_difference"):
        labels, predictions = _pair(labels, predictions, "absolute_difference")
        losses = math_ops.abs(predictions - labels)
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """TF1's ``(predictions - labels) ** 2``, weighted and reduced (a scalar by default,
    added to ``LOSSES``). For Keras's per-sample function use `mylib.losses.mse`."""
    _check(labels, "labels", "mean_squared_error")
    _check(predictions, "predictions", "mean_squared_error")
    with name_scope(scope, "mean_squared_error"):
        labels, predictions = _pair(labels, predictions, "mean_squared_error")
        losses = math_ops.squared_difference(predictions, labels)
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Huber (1964): ``0.5 e^2`` for ``|e| <= delta``, ``delta (|e| - 0.5 delta)`` beyond,
    with ``e = predictions - labels``."""
    with name_scope(scope, "huber_loss"):
        labels, predictions = _pair(labels, predictions, "huber_loss")
        err = math_ops.abs(predictions - labels)
        quad = math_ops.minimum(err, delta)
        lin = err - quad
        losses = 0.5 * quad * quad + delta * lin
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``-labels log(p + eps) - (1 - labels) log(1 - p + eps)`` for probabilities `p`."""
    with name_scope(scope, "log_loss"):
        labels, p = _pair(labels, predictions, "log_loss")
        losses = -labels * math_ops.log(p + epsilon) - \
            (1 - labels) * math_ops.log(1 - p + epsilon)
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``max(0, 1 - (2 labels - 1) logits)`` for 0/1 `labels`."""
    with name_scope(scope, "hinge_loss"):
        labels, logits = _pair(labels, logits, "hinge_loss")
        signed = 2.0 * labels - 1.0
        losses = nn_ops.relu(1.0 - signed * logits)
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=GraphKeys.LOSSES,
                    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS, dim=None):
    """``1 - sum(labels * predictions, axis, keepdims=True)`` for unit-normalized inputs
    (TF1 does not normalize them either).

    Raises:
      ValueError: no `axis` (nor its old name `dim`).
    """
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("cosine_distance: you must specify `axis`.")
    with name_scope(scope, "cosine_distance_loss"):
        labels, predictions = _pair(labels, predictions, "cosine_distance")
        losses = 1 - reduction_ops.reduce_sum(labels * predictions, axis, keepdims=True)
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def mean_pairwise_squared_error(labels, predictions, weights=1.0, scope=None,
                                loss_collection=GraphKeys.LOSSES):
    """TF1's pairwise loss: per sample, the mean over pairs (i, j) of
    ``((p_i - p_j) - (l_i - l_j)) ** 2``, i.e. ``2 (n s2 - s1^2) / n^2`` with
    ``d = p - l``, ``s1 = sum d``, ``s2 = sum d^2`` over the sample's n elements (n(n-1)
    ordered pairs), weighted per sample and averaged over samples with non-zero weight."""
    with name_scope(scope, "mean_pairwise_squared_error"):
        labels, predictions = _pair(labels, predictions, "mean_pairwise_squared_error")
        d = predictions - labels
        axes = list(range(1, d.shape.rank))
        n = math_ops.cast(array_ops.size(d[0]), d.dtype)
        s1 = reduction_ops.reduce_sum(d, axes)
        s2 = reduction_ops.reduce_sum(d * d, axes)
        per = _safe_div(2.0 * (n * s2 - s1 * s1), n * (n - 1.0))
        return compute_weighted_loss(per, weights, None, loss_collection,
                                     Reduction.SUM_BY_NONZERO_WEIGHTS)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """`sigmoid_cross_entropy_with_logits` per element; with `label_smoothing` the
    labels become ``labels (1 - s) + 0.5 s``."""
    with name_scope(scope, "sigmoid_cross_entropy_loss"):
        labels, logits = _pair(multi_class_labels, logits, "sigmoid_cross_entropy")
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = nn_ops.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """`softmax_cross_entropy_with_logits` per sample ([batch]); with `label_smoothing`
    the labels become ``labels (1 - s) + s / num_classes``. `weights`: scalar or [batch]."""
    with name_scope(scope, "softmax_cross_entropy_loss"):
        labels, logits = _pair(onehot_labels, logits, "softmax_cross_entropy")
        if label_smoothing > 0:
            k = math_ops.cast(array_ops.shape(labels)[-1], labels.dtype)
            labels = labels * (1 - label_smoothing) + label_smoothing / k
        losses = nn_ops.softmax_cross_entropy_with_logits(labels=array_ops.stop_gradient(labels),
                                                          logits=logits)
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """`sparse_softmax_cross_entropy_with_logits` per sample for int class ids `labels`
    [batch] (or [batch, 1]) and `logits` [batch, classes]."""
    with name_scope(scope, "sparse_softmax_cross_entropy_loss"):
        logits = convert_to_tensor(logits)
        labels = convert_to_tensor(labels)
        if labels.shape.rank is not None and logits.shape.rank is not None and \
                labels.shape.rank == logits.shape.rank and labels.shape.as_list()[-1] == 1:
            labels = array_ops.squeeze(labels, [-1])
        if labels.dtype.is_floating:
            labels = math_ops.cast(labels, _dtypes.int32)
        losses = nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


# ---------------------------------------------------------------- collections
def add_loss(loss, loss_collection=GraphKeys.LOSSES):
    """Adds `loss` to `loss_collection` of its graph (None: does nothing)."""
    if loss_collection is None:
        return
    g = loss.graph if hasattr(loss, "graph") else get_default_graph()
    g.add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES):
    """The losses in `loss_collection` (names matching `scope`, a regex prefix)."""
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    """The tensors in ``REGULARIZATION_LOSSES`` (from `get_variable` regularizers)."""
    return get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """The sum of `get_regularization_losses(scope)`, or a constant 0.0 if there are
    none."""
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return constant_ops.constant(0.0, name=name)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """The sum of `get_losses(scope)` and (by default) the regularization losses.

    Raises:
      ValueError: there are no losses at all.
    """
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("No losses to add: build a loss with tf.losses.* (or tf.losses."
                         "add_loss) before calling get_total_loss().")
    return math_ops.add_n(losses, name=name)
