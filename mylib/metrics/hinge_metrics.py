"""Hinge metrics, as Keras 3's: the weighted means of `losses.hinge`,
`losses.squared_hinge` and `losses.categorical_hinge` over the samples seen."""

from __future__ import annotations

from mylib import losses as _losses
from mylib.metrics.base import MeanMetricWrapper


class Hinge(MeanMetricWrapper):
    """Mean of `losses.hinge`: ``mean(max(1 - y_true * y_pred, 0), -1)`` per sample,
    targets in {-1, 1} (0/1 targets are mapped to -1/1); default name ``"hinge"``.

    `update_state(y_true, y_pred, sample_weight)`: ``[batch, .., d]`` each; `result` is
    a float32 scalar.
    """

    def __init__(self, name="hinge", dtype=None):
        super().__init__(_losses.hinge, name=name, dtype=dtype)


class SquaredHinge(MeanMetricWrapper):
    """Mean of `losses.squared_hinge`; shapes as `Hinge`; default name
    ``"squared_hinge"``."""

    def __init__(self, name="squared_hinge", dtype=None):
        super().__init__(_losses.squared_hinge, name=name, dtype=dtype)


class CategoricalHinge(MeanMetricWrapper):
    """Mean of `losses.categorical_hinge` (one-hot targets ``[batch, num_classes]``);
    default name ``"categorical_hinge"``."""

    def __init__(self, name="categorical_hinge", dtype=None):
        super().__init__(_losses.categorical_hinge, name=name, dtype=dtype)
