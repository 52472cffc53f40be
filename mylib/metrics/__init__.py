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

from mylib._naming import to_snake_case
from mylib import losses as _losses
from mylib.metrics.accuracy_metrics import (
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    TopKCategoricalAccuracy,
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)
from mylib.metrics.base import Mean, MeanMetricWrapper, Metric, Reduce, Sum
from mylib.metrics.confusion_metrics import (AUC, FalseNegatives, FalsePositives, Precision,
                                             PrecisionAtRecall, Recall, RecallAtPrecision,
                                             SensitivityAtSpecificity,
                                             SpecificityAtSensitivity, TrueNegatives,
                                             TruePositives)
from mylib.metrics.correlation_metrics import (ConcordanceCorrelation, PearsonCorrelation,
                                               concordance_correlation, pearson_correlation)
from mylib.metrics.f_score_metrics import F1Score, FBetaScore
from mylib.metrics.hinge_metrics import CategoricalHinge, Hinge, SquaredHinge
from mylib.metrics.iou_metrics import BinaryIoU, IoU, MeanIoU, OneHotIoU, OneHotMeanIoU
from mylib.metrics.probabilistic_metrics import (BinaryCrossentropy, CategoricalCrossentropy,
                                                 KLDivergence, Poisson,
                                                 SparseCategoricalCrossentropy)
from mylib.metrics.regression_metrics import (
    CosineSimilarity,
    LogCoshError,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    R2Score,
    RootMeanSquaredError,
)

# Keras 3's metric functions that are its loss functions (`keras.metrics.hinge`, ...).
from mylib.losses import (binary_crossentropy, binary_focal_crossentropy,  # noqa: E402
                          categorical_crossentropy, categorical_focal_crossentropy,
                          categorical_hinge, hinge, huber, kl_divergence, log_cosh,
                          mean_absolute_percentage_error, mean_squared_logarithmic_error,
                          poisson, sparse_categorical_crossentropy, squared_hinge)
from mylib.metrics import streaming
from mylib.metrics.accuracy_metrics import accuracy as _keras_accuracy

__all__ = ["Metric", "Reduce", "Sum", "Mean", "MeanMetricWrapper", "Accuracy",
           "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
           "MeanSquaredError", "MeanAbsoluteError", "accuracy", "binary_accuracy",
           "categorical_accuracy", "sparse_categorical_accuracy", "get", "resolve_accuracy",
           "RootMeanSquaredError", "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy",
           "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy", "Precision",
           "Recall", "AUC", "MeanIoU", "FBetaScore", "F1Score", "TruePositives",
           "FalsePositives", "TrueNegatives", "FalseNegatives", "MeanAbsolutePercentageError",
           "MeanSquaredLogarithmicError", "BinaryCrossentropy", "CategoricalCrossentropy",
           "SparseCategoricalCrossentropy", "KLDivergence", "Poisson", "LogCoshError",
           "Hinge", "SquaredHinge", "CategoricalHinge", "CosineSimilarity", "R2Score", "IoU",
           "BinaryIoU", "OneHotIoU", "OneHotMeanIoU", "PearsonCorrelation",
           "ConcordanceCorrelation", "PrecisionAtRecall", "RecallAtPrecision",
           "SensitivityAtSpecificity", "SpecificityAtSensitivity", "binary_crossentropy",
           "categorical_crossentropy", "sparse_categorical_crossentropy",
           "binary_focal_crossentropy", "categorical_focal_crossentropy", "kl_divergence",
           "poisson", "hinge", "squared_hinge", "categorical_hinge", "huber", "log_cosh",
           "mean_absolute_percentage_error", "mean_squared_logarithmic_error",
           "pearson_correlation", "concordance_correlation"]

# TensorFlow 1's streaming metrics (`tf.metrics.*`): `accuracy` becomes TF1's here;
# Keras's per-sample function stays in `accuracy_metrics` and `get` maps one to the other.
from mylib.metrics.streaming import (accuracy, auc, false_negatives,  # noqa: E402,F811
                                     false_positives, mean, mean_absolute_error,
                                     mean_squared_error, precision, recall,
                                     root_mean_squared_error, true_negatives, true_positives)

from mylib.metrics import streaming_classes  # noqa: E402
from mylib.metrics.streaming_classes import (mean_iou, mean_per_class_accuracy,  # noqa: E402
                                             precision_at_k, recall_at_k)

__all__ += [n for n in streaming.__all__ + streaming_classes.__all__ if n not in __all__]


_CLASSES = {c.__name__: c for c in (Mean, Sum, Accuracy, BinaryAccuracy, CategoricalAccuracy,
                                    SparseCategoricalAccuracy, MeanSquaredError,
                                    MeanAbsoluteError, RootMeanSquaredError,
                                    MeanAbsolutePercentageError, MeanSquaredLogarithmicError,
                                    TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy,
                                    Precision, Recall, AUC, FBetaScore, F1Score, TruePositives,
                                    FalsePositives, TrueNegatives, FalseNegatives,
                                    BinaryCrossentropy, CategoricalCrossentropy,
                                    SparseCategoricalCrossentropy, KLDivergence, Poisson,
                                    LogCoshError, Hinge, SquaredHinge, CategoricalHinge,
                                    CosineSimilarity, R2Score, IoU, BinaryIoU, MeanIoU,
                                    OneHotIoU, OneHotMeanIoU, PearsonCorrelation,
                                    ConcordanceCorrelation, PrecisionAtRecall,
                                    RecallAtPrecision, SensitivityAtSpecificity,
                                    SpecificityAtSensitivity)}
_BY_NAME = {"accuracy": Accuracy, "acc": Accuracy, "binary_accuracy": BinaryAccuracy,
            "categorical_accuracy": CategoricalAccuracy,
            "sparse_categorical_accuracy": SparseCategoricalAccuracy,
            "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError,
            "mean_absolute_error": MeanAbsoluteError, "mae": MeanAbsoluteError,
            "mean_absolute_percentage_error": MeanAbsolutePercentageError,
            "mape": MeanAbsolutePercentageError,
            "mean_squared_logarithmic_error": MeanSquaredLogarithmicError,
            "msle": MeanSquaredLogarithmicError,
            "root_mean_squared_error": RootMeanSquaredError, "rmse": RootMeanSquaredError,
            "top_k_categorical_accuracy": TopKCategoricalAccuracy,
            "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy,
            "precision": Precision, "recall": Recall, "auc": AUC,
            "bce": BinaryCrossentropy}
# As Keras 3's `ALL_OBJECTS_DICT`: every class also under its snake_case name
# ("binary_crossentropy", "r2_score", "log_cosh_error", ...).
_BY_NAME.update({to_snake_case(n): c for n, c in _CLASSES.items()
                 if to_snake_case(n) not in _BY_NAME})


def get(identifier):
    """A new `Metric` from a name, a ``{"class_name", "config"}`` dict, a `Metric`
    (returned as is) or a per-sample function (wrapped in `MeanMetricWrapper`).

    ``"accuracy"``/``"acc"`` give the plain `Accuracy`; a trainer that knows the targets
    and predictions should call `resolve_accuracy` instead, as Keras's compile does.
    Loss names (``"binary_crossentropy"``, ...) give the mean of that loss.
    """
    if isinstance(identifier, Metric):
        return identifier
    if identifier is accuracy or identifier is _keras_accuracy:  # TF1's / Keras's function
        return Accuracy()
    if isinstance(identifier, str):
        key = identifier if identifier in _CLASSES else identifier.lower()
        if key in _CLASSES:
            return _CLASSES[key](name=identifier)
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
