"""TensorFlow 1's streaming metrics over classes (``tf.metrics.*``, `metrics_impl.py`):
`mean_iou`, `mean_per_class_accuracy`, `precision_at_k`, `recall_at_k`.

As in `streaming`: each returns ``(value, update_op)`` over local metric variables
(initialise them with ``tf.local_variables_initializer()``). Labels are class ids.
"""

from __future__ import annotations

from mylib import errors
from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops
from mylib.core.ops.linalg_ops import matrix_diag_part
from mylib.core.ops.segment_ops import confusion_matrix, unsorted_segment_sum
from mylib.core.ops.sequence_ops import div_no_nan, top_k
from mylib.core.variable_scope import variable_scope
from mylib.metrics.streaming import _add_to, _metric_variable

__all__ = ["mean_iou", "mean_per_class_accuracy", "precision_at_k", "recall_at_k"]


def _flat_ids(labels, predictions, weights, owner):
    predictions = convert_to_tensor(predictions)
    labels = convert_to_tensor(labels, dtype_hint=predictions.dtype)
    if not labels.shape.is_compatible_with(predictions.shape):
        raise ValueError(f"{owner}: shapes {labels.shape} (labels) and {predictions.shape} "
                         "(predictions) are incompatible")
    lab = array_ops.reshape(math_ops.cast(labels, _dtypes.int64), [-1])
    pred = array_ops.reshape(math_ops.cast(predictions, _dtypes.int64), [-1])
    w = None
    if weights is not None:
        w = convert_to_tensor(weights)
        w = array_ops.reshape(math_ops.cast(w, _dtypes.float64)
                              * constant_ops.ones_like(labels, dtype=_dtypes.float64), [-1])
    return lab, pred, w


def _num_classes(num_classes, owner):
    if not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"{owner}: num_classes must be a positive Python int. Received: "
                         f"num_classes={num_classes!r}")
    return num_classes


def mean_iou(labels, predictions, num_classes, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """Mean intersection-over-union over classes, from a streaming confusion matrix:
    ``IoU_c = cm[c, c] / (row_c + col_c - cm[c, c])``, averaged over the classes that
    occurred (in labels or predictions); 0 before any.

    Args:
      labels, predictions: int `Tensor`s of one shape (flattened), values in
        [0, num_classes); pairs out of range are dropped (TensorFlow raises).
      num_classes: Python int.
      weights: optional `Tensor` broadcastable to `labels`.
    Returns:
      ``(mean_iou, update_op)``: a float32 scalar, and (as TensorFlow) the updated
      float64 [num_classes, num_classes] confusion matrix.
    Raises:
      ValueError: incompatible shapes or a bad `num_classes`.
    """
    n = _num_classes(num_classes, "mean_iou")
    with variable_scope(name, "mean_iou", (predictions, labels, weights)):
        lab, pred, w = _flat_ids(labels, predictions, weights, "mean_iou")
        total = _metric_variable([n, n], _dtypes.float64, "total_confusion_matrix")
        cm = confusion_matrix(lab, pred, n, weights=w, dtype=_dtypes.float64)
        update_op = total.assign_add(cm)

        def compute(m):
            m = math_ops.cast(m, _dtypes.float32)
            rows = reduction_ops.reduce_sum(m, 0)
            cols = reduction_ops.reduce_sum(m, 1)
            diag = matrix_diag_part(m)
            den = rows + cols - diag
            valid = reduction_ops.reduce_sum(math_ops.cast(math_ops.not_equal(den, 0.0),
                                                           _dtypes.float32))
            den = array_ops.where(math_ops.greater(den, 0.0), den,
                                  constant_ops.ones_like(den))
            iou = diag / den
            return array_ops.where(math_ops.greater(valid, 0.0),
                                   reduction_ops.reduce_sum(iou) / math_ops.maximum(valid, 1.0),
                                   constant_ops.constant(0.0))

        value = compute(total.value())
        _add_to(metrics_collections, value)
        _add_to(updates_collections, update_op)
        return value, update_op


def mean_per_class_accuracy(labels, predictions, num_classes, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
    """The mean over all `num_classes` classes of the per-class accuracy (the fraction
    of examples of class c predicted as c; 0 for a class not seen).

    Args:
      labels, predictions: int `Tensor`s of one shape (flattened).
      num_classes: Python int.
      weights: optional `Tensor` broadcastable to `labels`.
    Returns:
      ``(mean_accuracy, update_op)``: a float32 scalar, and (as TensorFlow) the updated
      per-class accuracies [num_classes].
    Raises:
      ValueError: incompatible shapes or a bad `num_classes`.
    """
    n = _num_classes(num_classes, "mean_per_class_accuracy")
    with variable_scope(name, "mean_accuracy", (predictions, labels, weights)):
        lab, pred, w = _flat_ids(labels, predictions, weights, "mean_per_class_accuracy")
        total = _metric_variable([n], _dtypes.float32, "total")
        count = _metric_variable([n], _dtypes.float32, "count")
        ones = constant_ops.ones_like(lab, dtype=_dtypes.float32)
        correct = math_ops.cast(math_ops.equal(pred, lab), _dtypes.float32)
        if w is not None:
            w32 = math_ops.cast(w, _dtypes.float32)
            ones, correct = ones * w32, correct * w32
        ids = math_ops.cast(lab, _dtypes.int32)
        upd_total = total.assign_add(unsorted_segment_sum(ones, ids, n))
        upd_count = count.assign_add(unsorted_segment_sum(correct, ids, n))
        value = reduction_ops.reduce_mean(div_no_nan(count.value(), total.value()),
                                          name="mean_accuracy")
        update_op = div_no_nan(upd_count, upd_total, name="update_op")
        _add_to(metrics_collections, value)
        _add_to(updates_collections, update_op)
        return value, update_op


def _at_k_parts(labels, predictions, k, class_id, weights, owner):
    """Per-example true positives, false positives and false negatives (float64) of the
    top `k` classes against the label sets, as TensorFlow's set operations count them."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"{owner}: k must be a positive Python int. Received: k={k!r}")
    pred = convert_to_tensor(predictions)
    lab = math_ops.cast(convert_to_tensor(labels), _dtypes.int64)
    pr, lr = pred.shape.rank, lab.shape.rank
    if pr is None or lr is None:
        raise errors.InvalidArgumentError(f"{owner}: labels and predictions need known ranks")
    if lr == pr - 1:
        lab = array_ops.expand_dims(lab, -1)
    elif lr != pr:
        raise errors.InvalidArgumentError(
            f"{owner}: labels {lab.shape} must have the rank of predictions {pred.shape} or "
            "one less")
    _, idx = top_k(pred, k)
    idx = math_ops.cast(idx, _dtypes.int64)                                     # [..., k]
    # Duplicated labels count once (labels are sets in TensorFlow).
    eq_ll = math_ops.equal(array_ops.expand_dims(lab, -1), array_ops.expand_dims(lab, -2))
    m = lab.shape.as_list()[-1]
    if m is None:
        raise errors.InvalidArgumentError(f"{owner}: the number of labels per example must "
                                          f"be known, got {lab.shape}")
    earlier = constant_ops.constant([[j < i for j in range(m)] for i in range(m)])
    dup = reduction_ops.reduce_any(math_ops.logical_and(eq_ll, earlier), -1)   # [..., m]
    hit = math_ops.equal(array_ops.expand_dims(idx, -1), array_ops.expand_dims(lab, -2))
    if class_id is not None:
        cid = constant_ops.constant(int(class_id), _dtypes.int64)
        in_top = reduction_ops.reduce_any(math_ops.equal(idx, cid), -1)
        in_lab = reduction_ops.reduce_any(math_ops.equal(lab, cid), -1)
        f = lambda b: math_ops.cast(b, _dtypes.float64)  # noqa: E731
        tp = f(math_ops.logical_and(in_top, in_lab))
        fp = f(math_ops.logical_and(in_top, math_ops.logical_not(in_lab)))
        fn = f(math_ops.logical_and(in_lab, math_ops.logical_not(in_top)))
    else:
        pred_hit = reduction_ops.reduce_any(hit, -1)                            # [..., k]
        tp = reduction_ops.reduce_sum(math_ops.cast(pred_hit, _dtypes.float64), -1)
        fp = float(k) - tp
        lab_found = reduction_ops.reduce_any(hit, -2)                           # [..., m]
        missed = math_ops.logical_and(math_ops.logical_not(lab_found),
                                      math_ops.logical_not(dup))
        fn = reduction_ops.reduce_sum(math_ops.cast(missed, _dtypes.float64), -1)
    if weights is not None:
        w = math_ops.cast(convert_to_tensor(weights), _dtypes.float64)
        if w.shape.rank is not None and w.shape.rank == tp.shape.rank + 1:
            w = array_ops.squeeze(w, [-1])
        tp, fp, fn = tp * w, fp * w, fn * w
    return tp, fp, fn


def _ratio_at_k(kind, labels, predictions, k, class_id, weights, metrics_collections,
                updates_collections, name, owner):
    scope = f"{kind}_at_{k}" + ("" if class_id is None else f"_class{class_id}")
    with variable_scope(name, scope, (predictions, labels, weights)):
        tp, fp, fn = _at_k_parts(labels, predictions, k, class_id, weights, owner)
        other = fp if kind == "precision" else fn
        tp_var = _metric_variable([], _dtypes.float64, "true_positive")
        o_var = _metric_variable([], _dtypes.float64,
                                 "false_positive" if kind == "precision" else "false_negative")
        upd_tp = tp_var.assign_add(reduction_ops.reduce_sum(tp))
        upd_o = o_var.assign_add(reduction_ops.reduce_sum(other))
        # 0/0 is NaN, as TensorFlow's `math_ops.div`.
        value = math_ops.divide(tp_var.value(), tp_var.value() + o_var.value(), name="value")
        update_op = math_ops.divide(upd_tp, upd_tp + upd_o, name="update")
        _add_to(metrics_collections, value)
        _add_to(updates_collections, update_op)
        return value, update_op


def precision_at_k(labels, predictions, k, class_id=None, weights=None,
                   metrics_collections=None, updates_collections=None, name=None):
    """Precision of the top `k` predicted classes: of the predicted classes, the fraction
    that are labels, streamed; with `class_id`, only predictions of that class count.

    Args:
      labels: int `Tensor` [D1..DN, num_labels] (or [D1..DN]) of class ids; ids
        outside [0, num_classes) never match (as TensorFlow); repeats count once.
      predictions: float `Tensor` [D1..DN, num_classes] of scores.
      k: Python int; ties in the top `k` go to the lower class id.
      class_id: optional Python int.
      weights: optional `Tensor` [D1..DN] (or broadcastable) weighing each example.
    Returns:
      ``(precision, update_op)``: float64 scalars, NaN before any prediction counted
      (TensorFlow's 0/0).
    Raises:
      ValueError: a bad `k`.
      InvalidArgumentError: ranks that do not fit.

    Differs from TensorFlow: `labels` is a dense tensor (no `SparseTensor`); pad
    ragged label lists with an id outside [0, num_classes), e.g. -1.
    """
    return _ratio_at_k("precision", labels, predictions, k, class_id, weights,
                       metrics_collections, updates_collections, name, "precision_at_k")


def recall_at_k(labels, predictions, k, class_id=None, weights=None,
                metrics_collections=None, updates_collections=None, name=None):
    """Recall of the top `k` predicted classes: of the (distinct) labels, the fraction
    found among the top `k`, streamed; with `class_id`, only labels of that class count.

    Args: as `precision_at_k`; a label outside [0, num_classes) always counts as a
      false negative (as TensorFlow), so ragged padding (-1) lowers recall.
    Returns:
      ``(recall, update_op)``: float64 scalars, NaN before any label counted.
    Raises:
      ValueError, InvalidArgumentError: as `precision_at_k`.

    Differs from TensorFlow: dense `labels` only, as `precision_at_k`.
    """
    return _ratio_at_k("recall", labels, predictions, k, class_id, weights,
                       metrics_collections, updates_collections, name, "recall_at_k")
