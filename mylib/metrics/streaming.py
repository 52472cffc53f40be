"""TensorFlow 1's streaming metrics (``tf.metrics.*``, `metrics_impl.py`).

Each function returns ``(value, update_op)``: `update_op` accumulates the batch it is
given into local variables (``LOCAL_VARIABLES`` and ``METRIC_VARIABLES``, not trainable,
not saved) and returns the value after the update; `value` reads the value so far.
Initialise (or reset) them with ``tf.local_variables_initializer()``::

    acc, acc_update = tf.metrics.accuracy(labels, predictions)
    sess.run(tf.local_variables_initializer())
    for batch in batches:
        sess.run(acc_update, feed_dict=batch)
    print(sess.run(acc))

`weights` (optional) weigh each element (a scalar, or a tensor broadcastable to the
values). The variables live in a name scope of the metric's `name` (default
``accuracy``, ``accuracy_1``, ...), e.g. ``accuracy/total:0`` and ``accuracy/count:0``.

``mylib.metrics.accuracy`` is this streaming function (TF1's); Keras's per-sample
function is `mylib.metrics.accuracy_metrics.accuracy`, and `mylib.metrics.get` turns
this one into the Keras `Accuracy` metric, so ``compile(metrics=[ml.metrics.accuracy])``
keeps its Keras meaning.
"""

from __future__ import annotations

from mylib.core import dtypes as _dtypes
from mylib.core.graph import GraphKeys, get_default_graph
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops
from mylib.core.variable_scope import variable_scope
from mylib.core.variables import Variable

__all__ = ["accuracy", "mean", "auc", "precision", "recall", "mean_squared_error",
           "mean_absolute_error", "root_mean_squared_error", "true_positives",
           "false_positives", "false_negatives", "true_negatives"]

_COLLECTIONS = [GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES]


def _metric_variable(shape, dtype, name):
    g = get_default_graph()
    with g.control_dependencies(None):
        return Variable(lambda: constant_ops.zeros(shape, dtype=dtype), trainable=False,
                        name=name, dtype=dtype, collections=list(_COLLECTIONS))


def _safe_div(num, den):
    zero = math_ops.less_equal(den, 0.0)
    return array_ops.where(zero, constant_ops.zeros_like(num),
                           num / array_ops.where(zero, constant_ops.ones_like(den), den))


def _add_to(collections, value):
    for c in collections or ():
        get_default_graph().add_to_collection(c, value)


def _squeeze_pair(labels, predictions):
    """TF1's `remove_squeezable_dimensions`: a trailing 1 on the rank-larger side goes."""
    lr, pr = labels.shape.rank, predictions.shape.rank
    if lr is not None and pr is not None:
        if pr == lr + 1 and predictions.shape.as_list()[-1] == 1:
            predictions = array_ops.squeeze(predictions, [-1])
        elif lr == pr + 1 and labels.shape.as_list()[-1] == 1:
            labels = array_ops.squeeze(labels, [-1])
    return labels, predictions


def _weights_like(weights, values):
    if weights is None:
        return constant_ops.ones_like(values)
    w = convert_to_tensor(weights, dtype_hint=values.dtype)
    if w.dtype != values.dtype:
        w = math_ops.cast(w, values.dtype)
    wr, vr = w.shape.rank, values.shape.rank
    if wr is not None and vr is not None and wr == vr + 1 and w.shape.as_list()[-1] == 1:
        w = array_ops.squeeze(w, [-1])
    return w * constant_ops.ones_like(values)


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of all `values` seen: ``sum(w * v) / sum(w)``.

    Args:
      values: numeric `Tensor` of any shape (cast to float32 unless float64).
      weights: optional scalar or `Tensor` broadcastable to `values`.
    Returns:
      ``(mean, update_op)``; 0 before any (non-zero-weight) value.
    """
    with variable_scope(name, "mean", (values, weights)):
        values = convert_to_tensor(values)
        if values.dtype != _dtypes.float64:
            values = math_ops.cast(values, _dtypes.float32)
        return _mean_here(values, weights, metrics_collections, updates_collections)


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The (weighted) fraction of elements where ``predictions == labels`` (class ids,
    e.g. ``tf.argmax(logits, 1)``, not logits).

    Returns:
      ``(accuracy, update_op)``.
    Raises:
      ValueError: incompatible shapes of `labels` and `predictions`.
    """
    with variable_scope(name, "accuracy", (labels, predictions, weights)):
        predictions = convert_to_tensor(predictions)
        labels = convert_to_tensor(labels, dtype_hint=predictions.dtype)
        labels, predictions = _squeeze_pair(labels, predictions)
        if not labels.shape.is_compatible_with(predictions.shape):
            raise ValueError(f"accuracy: shapes {labels.shape} (labels) and "
                             f"{predictions.shape} (predictions) are incompatible")
        if labels.dtype != predictions.dtype:
            predictions = math_ops.cast(predictions, labels.dtype)
        correct = math_ops.cast(math_ops.equal(predictions, labels), _dtypes.float32)
        return _mean_here(correct, weights, metrics_collections, updates_collections)


def _mean_here(values, weights, metrics_collections, updates_collections):
    # `mean` without a scope of its own: the variables are `<metric>/total`, `/count`.
    total = _metric_variable([], values.dtype, "total")
    count = _metric_variable([], values.dtype, "count")
    w = _weights_like(weights, values)
    upd_total = total.assign_add(reduction_ops.reduce_sum(values * w))
    upd_count = count.assign_add(reduction_ops.reduce_sum(w))
    value = _safe_div(total.value(), count.value())
    update_op = _safe_div(upd_total, upd_count)
    _add_to(metrics_collections, value)
    _add_to(updates_collections, update_op)
    return value, update_op


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    """The (weighted) mean of ``(predictions - labels) ** 2`` over every element seen."""
    with variable_scope(name, "mean_squared_error", (labels, predictions, weights)):
        labels, predictions = _float_pair(labels, predictions)
        return _mean_here(math_ops.squared_difference(predictions, labels), weights,
                          metrics_collections, updates_collections)


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    """The (weighted) mean of ``|predictions - labels|`` over every element seen."""
    with variable_scope(name, "mean_absolute_error", (labels, predictions, weights)):
        labels, predictions = _float_pair(labels, predictions)
        return _mean_here(math_ops.abs(predictions - labels), weights, metrics_collections,
                          updates_collections)


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    """The square root of the streaming `mean_squared_error`."""
    with variable_scope(name, "root_mean_squared_error", (labels, predictions, weights)):
        labels, predictions = _float_pair(labels, predictions)
        value, update = _mean_here(math_ops.squared_difference(predictions, labels), weights,
                                   None, None)
        value, update = math_ops.sqrt(value), math_ops.sqrt(update)
        _add_to(metrics_collections, value)
        _add_to(updates_collections, update)
        return value, update


def _float_pair(labels, predictions):
    predictions = math_ops.cast(convert_to_tensor(predictions), _dtypes.float32) \
        if not convert_to_tensor(predictions).dtype.is_floating else convert_to_tensor(predictions)
    labels = convert_to_tensor(labels, dtype_hint=predictions.dtype)
    if labels.dtype != predictions.dtype:
        labels = math_ops.cast(labels, predictions.dtype)
    return _squeeze_pair(labels, predictions)


def _bool_pair(labels, predictions):
    labels, predictions = _squeeze_pair(convert_to_tensor(labels),
                                        convert_to_tensor(predictions))
    lb = labels if labels.dtype == _dtypes.bool_ else math_ops.not_equal(
        labels, constant_ops.zeros_like(labels))
    pb = predictions if predictions.dtype == _dtypes.bool_ else math_ops.not_equal(
        predictions, constant_ops.zeros_like(predictions))
    return lb, pb


def _count(cond, weights, name):
    """A streaming weighted count of the True elements of `cond`."""
    c = math_ops.cast(cond, _dtypes.float32)
    w = _weights_like(weights, c)
    var = _metric_variable([], _dtypes.float32, name)
    return var, var.assign_add(reduction_ops.reduce_sum(c * w))


def _confusion_count(kind, labels, predictions, weights, metrics_collections,
                     updates_collections, name):
    with variable_scope(name, kind, (labels, predictions, weights)):
        lb, pb = _bool_pair(labels, predictions)
        cond = {"true_positives": math_ops.logical_and(lb, pb),
                "false_positives": math_ops.logical_and(math_ops.logical_not(lb), pb),
                "false_negatives": math_ops.logical_and(lb, math_ops.logical_not(pb)),
                "true_negatives": math_ops.logical_and(math_ops.logical_not(lb),
                                                       math_ops.logical_not(pb))}[kind]
        var, update = _count(cond, weights, "count")
        value = var.value()
        _add_to(metrics_collections, value)
        _add_to(updates_collections, update)
        return value, update


def true_positives(labels, predictions, weights=None, metrics_collections=None,
                   updates_collections=None, name=None):
    """Streaming (weighted) count of ``labels and predictions`` (both cast to bool:
    non-zero is True, as TF1; threshold probabilities first)."""
    return _confusion_count("true_positives", labels, predictions, weights,
                            metrics_collections, updates_collections, name)


def false_positives(labels, predictions, weights=None, metrics_collections=None,
                    updates_collections=None, name=None):
    """Streaming (weighted) count of ``not labels and predictions``."""
    return _confusion_count("false_positives", labels, predictions, weights,
                            metrics_collections, updates_collections, name)


def false_negatives(labels, predictions, weights=None, metrics_collections=None,
                    updates_collections=None, name=None):
    """Streaming (weighted) count of ``labels and not predictions``."""
    return _confusion_count("false_negatives", labels, predictions, weights,
                            metrics_collections, updates_collections, name)


def true_negatives(labels, predictions, weights=None, metrics_collections=None,
                   updates_collections=None, name=None):
    """Streaming (weighted) count of ``not labels and not predictions``."""
    return _confusion_count("true_negatives", labels, predictions, weights,
                            metrics_collections, updates_collections, name)


def _ratio_metric(kind, labels, predictions, weights, metrics_collections,
                  updates_collections, name):
    with variable_scope(name, kind, (labels, predictions, weights)):
        lb, pb = _bool_pair(labels, predictions)
        tp, tp_up = _count(math_ops.logical_and(lb, pb), weights, "true_positives")
        other = math_ops.logical_and(math_ops.logical_not(lb), pb) if kind == "precision" \
            else math_ops.logical_and(lb, math_ops.logical_not(pb))
        ot, ot_up = _count(other, weights, "false_positives" if kind == "precision"
                           else "false_negatives")
        value = _safe_div(tp.value(), tp.value() + ot.value())
        update = _safe_div(tp_up, tp_up + ot_up)
        _add_to(metrics_collections, value)
        _add_to(updates_collections, update)
        return value, update


def precision(labels, predictions, weights=None, metrics_collections=None,
              updates_collections=None, name=None):
    """``tp / (tp + fp)`` over everything seen (0 when nothing was predicted positive).
    `labels` and `predictions` are cast to bool (non-zero is True, as TF1)."""
    return _ratio_metric("precision", labels, predictions, weights, metrics_collections,
                         updates_collections, name)


def recall(labels, predictions, weights=None, metrics_collections=None,
           updates_collections=None, name=None):
    """``tp / (tp + fn)`` over everything seen (0 when there was no positive label)."""
    return _ratio_metric("recall", labels, predictions, weights, metrics_collections,
                         updates_collections, name)


def _auc_thresholds(num_thresholds, thresholds):
    if thresholds is not None:
        return [0.0 - 1e-7] + sorted(float(t) for t in thresholds) + [1.0 + 1e-7]
    if num_thresholds < 2:
        raise ValueError(f"auc: num_thresholds must be > 1. Received: {num_thresholds}")
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - 1e-7] + inner + [1.0 + 1e-7]


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal",
        thresholds=None):
    """The area under the ROC (or precision-recall) curve, approximated as TF1 does: a
    confusion matrix at `num_thresholds` thresholds evenly spaced in [0, 1] (plus one
    just below 0 and one just above 1), accumulated over the batches seen, and a
    Riemann sum over them (``"trapezoidal"``, ``"minoring"`` or ``"majoring"``).

    ROC: ``tpr = (tp + 1e-7) / (tp + fn + 1e-7)``, ``fpr = fp / (fp + tn + 1e-7)``.
    PR: recall as tpr, ``precision = (tp + 1e-7) / (tp + fp + 1e-7)``.

    Args:
      labels: bool or 0/1 `Tensor`, the shape of `predictions`.
      predictions: float probabilities in [0, 1].
      weights: optional per-element weights.
    Returns:
      ``(auc, update_op)``.
    Raises:
      ValueError: an unknown `curve` or `summation_method` (TF1's
        ``"careful_interpolation"`` is not supported: use ``"trapezoidal"``).
    """
    if curve not in ("ROC", "PR"):
        raise ValueError(f"auc: curve must be 'ROC' or 'PR'. Received: {curve!r}")
    if summation_method not in ("trapezoidal", "minoring", "majoring"):
        raise ValueError(f"auc: summation_method {summation_method!r} is not supported by "
                         "mylib; use 'trapezoidal', 'minoring' or 'majoring'.")
    thr = _auc_thresholds(num_thresholds, thresholds)
    n = len(thr)
    with variable_scope(name, "auc", (labels, predictions, weights)):
        labels, predictions = _squeeze_pair(convert_to_tensor(labels),
                                            convert_to_tensor(predictions))
        p = math_ops.cast(predictions, _dtypes.float32)
        lb = labels if labels.dtype == _dtypes.bool_ else math_ops.not_equal(
            labels, constant_ops.zeros_like(labels))
        p = array_ops.reshape(p, [1, -1])  # [1, N]
        pos = array_ops.reshape(math_ops.cast(lb, _dtypes.float32), [1, -1])
        w = array_ops.reshape(_weights_like(weights, math_ops.cast(lb, _dtypes.float32)),
                              [1, -1])
        t = constant_ops.constant([[x] for x in thr], dtype=_dtypes.float32)  # [n, 1]
        above = math_ops.cast(math_ops.greater(p, t), _dtypes.float32)  # [n, N]
        below = 1.0 - above
        stats = {"true_positives": above * pos, "false_negatives": below * pos,
                 "true_negatives": below * (1.0 - pos), "false_positives": above * (1.0 - pos)}
        vars_, ups = {}, {}
        for k, m in stats.items():
            v = _metric_variable([n], _dtypes.float32, k)
            vars_[k] = v
            ups[k] = v.assign_add(reduction_ops.reduce_sum(m * w, axis=1))

        def area(tp, fn, tn, fp):
            eps = 1e-7
            tpr = (tp + eps) / (tp + fn + eps)
            if curve == "ROC":
                x, y = fp / (fp + tn + eps), tpr
            else:
                x, y = tpr, (tp + eps) / (tp + fp + eps)
            dx = x[:n - 1] - x[1:]
            if summation_method == "trapezoidal":
                h = (y[:n - 1] + y[1:]) / 2.0
            elif summation_method == "minoring":
                h = math_ops.minimum(y[:n - 1], y[1:])
            else:
                h = math_ops.maximum(y[:n - 1], y[1:])
            return reduction_ops.reduce_sum(dx * h)

        keys = ("true_positives", "false_negatives", "true_negatives", "false_positives")
        value = area(*[vars_[k].value() for k in keys])
        update = area(*[ups[k] for k in keys])
        _add_to(metrics_collections, value)
        _add_to(updates_collections, update)
        return value, update
