"""Which way a monitored metric improves, for the callbacks' ``mode="auto"``.

Keras 3 asks the model's compiled metric of that name for its direction (``"up"`` for
accuracies, AUC, precision, recall, F-scores, IoUs, R2, correlations and cosine
similarity; ``"down"`` for losses and errors). A name-only rule ("acc" or "auc" in the
name) misreads ``val_precision``, ``val_recall``, ``val_f1_score``, ``val_r2_score``,
``val_mean_io_u`` and any renamed metric as "lower is better".
"""

from __future__ import annotations

# Keras 3's metric classes whose `_direction` is "up" (mylib's classes share the names).
_MAXIMIZED = frozenset({
    "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
    "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy", "Precision", "Recall",
    "AUC", "PrecisionAtRecall", "RecallAtPrecision", "SensitivityAtSpecificity",
    "SpecificityAtSensitivity", "F1Score", "FBetaScore", "IoU", "MeanIoU", "BinaryIoU",
    "OneHotIoU", "OneHotMeanIoU", "R2Score", "CosineSimilarity", "PearsonCorrelation",
    "ConcordanceCorrelation",
})


def name_is_max(monitor):
    """The name rule, for a monitor no compiled metric answers to."""
    return "acc" in monitor or monitor.endswith("auc") or monitor.startswith("fmeasure")


def compiled_metric_is_max(model, monitor):
    """True / False when `monitor` (``val_`` prefix allowed) names a loss or one of
    `model`'s compiled metrics of known direction; None otherwise."""
    name = monitor[4:] if monitor.startswith("val_") else monitor
    if name == "loss" or name.endswith("_loss"):
        return False
    tracking = getattr(model, "_tracking", None) if model is not None else None
    if not tracking:
        return None
    names, entries = tracking["names"], tracking["entries"]
    labels = names[len(names) - len(entries):]  # one label per compiled metric, in order
    for label, (_, obj, _) in zip(labels, entries):
        if label == name and {c.__name__ for c in type(obj).__mro__} & _MAXIMIZED:
            return True
    return None


def resolve_auto_mode(cb):
    """For a callback made with ``mode="auto"``: once `cb.model` has compiled its
    metrics (after the first training step), `cb._max` from the monitored metric's
    direction, and the still untouched initial `best` flipped to match."""
    if not getattr(cb, "_auto_mode", False) or getattr(cb, "model", None) is None:
        return
    found = compiled_metric_is_max(cb.model, cb.monitor)
    if found is None:
        if getattr(cb.model, "_tracking", None) is None:
            return  # not compiled into a step yet: ask again later
        found = name_is_max(cb.monitor)
    cb._auto_mode = False
    if found != cb._max:
        cb._max = found
        if cb.best in (float("inf"), float("-inf")):
            cb.best = -cb.best
