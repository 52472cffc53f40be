"""Regression metrics: mean squared / absolute error and root mean squared error."""

from __future__ import annotations

from mylib import losses as _losses
from mylib.core.ops import math_ops
from mylib.losses import squeeze_or_expand_to_same_rank
from mylib.metrics.base import Mean, MeanMetricWrapper, _float, _graph_of


class MeanSquaredError(MeanMetricWrapper):
    """Mean of Keras's per-sample `losses.mse` over the samples seen."""

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(_losses.mse, name=name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """Mean of `losses.mean_absolute_error` over the samples seen."""

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(_losses.mean_absolute_error, name=name, dtype=dtype)


class MeanAbsolutePercentageError(MeanMetricWrapper):
    """Mean of `losses.mean_absolute_percentage_error` over the samples seen."""

    def __init__(self, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(_losses.mean_absolute_percentage_error, name=name, dtype=dtype)


class MeanSquaredLogarithmicError(MeanMetricWrapper):
    """Mean of `losses.mean_squared_logarithmic_error` over the samples seen."""

    def __init__(self, name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(_losses.mean_squared_logarithmic_error, name=name, dtype=dtype)


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
