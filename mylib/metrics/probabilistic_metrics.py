"""Probabilistic metrics, as Keras 3's: the weighted means of the cross-entropies, the
KL divergence and the Poisson loss of `mylib.losses` over the samples seen."""

from __future__ import annotations

from mylib import losses as _losses
from mylib.metrics.base import MeanMetricWrapper


class BinaryCrossentropy(MeanMetricWrapper):
    """Mean of `losses.binary_crossentropy` (per sample: the mean over the last axis).

    Args:
      name: metric name (default ``"binary_crossentropy"``).
      dtype: state dtype (float32).
      from_logits: `y_pred` are logits rather than probabilities.
      label_smoothing: float in [0, 1]; targets move towards 0.5.

    `update_state(y_true, y_pred, sample_weight)`: ``[batch, .., d]`` float targets in
    [0, 1] and predictions of the same shape; `result` is a float32 scalar.
    """

    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0):
        super().__init__(_losses.binary_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing)
        self.from_logits, self.label_smoothing = from_logits, label_smoothing


class CategoricalCrossentropy(MeanMetricWrapper):
    """Mean of `losses.categorical_crossentropy` over the samples seen.

    Args:
      name: metric name (default ``"categorical_crossentropy"``).
      dtype: state dtype (float32).
      from_logits: `y_pred` are logits rather than probabilities.
      label_smoothing: float in [0, 1].
      axis: the class axis (default -1).

    `update_state(y_true, y_pred, sample_weight)`: one-hot (or soft) targets and
    predictions ``[batch, .., num_classes]``; `result` is a float32 scalar.
    """

    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0, axis=-1):
        super().__init__(_losses.categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits, self.label_smoothing, self.axis = from_logits, label_smoothing, axis


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """Mean of `losses.sparse_categorical_crossentropy` over the samples seen.

    Args:
      name: metric name (default ``"sparse_categorical_crossentropy"``).
      dtype: state dtype (float32).
      from_logits: `y_pred` are logits rather than probabilities.
      ignore_class: optional int label whose entries get a loss of 0. As Keras 3, they
        are left out of the mean only when a `sample_weight` is passed; unweighted
        they still count (as zeros).
      axis: the class axis (default -1).

    `update_state(y_true, y_pred, sample_weight)`: int (or float) class ids
    ``[batch, ..]`` or ``[batch, .., 1]`` and predictions ``[batch, .., num_classes]``;
    `result` is a float32 scalar.
    """

    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False,
                 ignore_class=None, axis=-1):
        super().__init__(_losses.sparse_categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, ignore_class=ignore_class, axis=axis)
        self.from_logits, self.ignore_class, self.axis = from_logits, ignore_class, axis


class KLDivergence(MeanMetricWrapper):
    """Mean of `losses.kl_divergence` (``sum(y_true * log(y_true / y_pred), -1)``,
    both clipped to ``[1e-7, 1]``) over the samples seen; default name
    ``"kl_divergence"``."""

    def __init__(self, name="kl_divergence", dtype=None):
        super().__init__(_losses.kl_divergence, name=name, dtype=dtype)


class Poisson(MeanMetricWrapper):
    """Mean of `losses.poisson` (``mean(y_pred - y_true * log(y_pred + 1e-7), -1)``)
    over the samples seen; default name ``"poisson"``."""

    def __init__(self, name="poisson", dtype=None):
        super().__init__(_losses.poisson, name=name, dtype=dtype)
