"""Regression metrics: mean squared / absolute (percentage) / logarithmic error, root
mean squared error, cosine similarity, log-cosh error and the R² score, as Keras 3's."""

from __future__ import annotations

import numpy as np

from mylib import losses as _losses
from mylib.core import dtypes as _dtypes
from mylib.core.graph import Tensor
from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops
from mylib.core.ops.sequence_ops import is_inf
from mylib.core.tensor_shape import TensorShape
from mylib.losses import squeeze_or_expand_to_same_rank
from mylib.metrics.base import (Mean, MeanMetricWrapper, Metric, _float, _graph_of,
                                _weights_like)


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


def _cosine_similarity(y_true, y_pred, axis=-1):
    # The metric's sign: +1 for parallel vectors (the loss `cosine_similarity` is -1).
    return -_losses.cosine_similarity(y_true, y_pred, axis=axis)


class CosineSimilarity(MeanMetricWrapper):
    """Weighted mean of the cosine similarity ``sum(l2_normalize(y_true) *
    l2_normalize(y_pred), axis)`` of each sample: 1 for parallel vectors, -1 for
    opposite ones (the opposite sign of `losses.cosine_similarity`), as Keras 3.

    Args:
      name: metric name (default ``"cosine_similarity"``).
      dtype: state dtype (float32).
      axis: the axis the similarity is taken along (default -1).

    `update_state(y_true, y_pred, sample_weight)`: ``[batch, .., d]`` each; `result`
    is a float32 scalar. `get_config` holds name and dtype only, as Keras 3's.
    """

    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(_cosine_similarity, name=name, dtype=dtype, axis=axis)

    def get_config(self):
        return Metric.get_config(self)


class LogCoshError(MeanMetricWrapper):
    """Weighted mean of `losses.log_cosh` (``mean(log(cosh(y_pred - y_true)), -1)`` per
    sample), as Keras 3; default name ``"logcosh"`` (Keras's)."""

    def __init__(self, name="logcosh", dtype=None):
        super().__init__(_losses.log_cosh, name=name, dtype=dtype)


class R2Score(Metric):
    """Coefficient of determination ``1 - SS_res / SS_tot`` per output column, from
    weighted running sums, as Keras 3's `R2Score`.

    Args:
      class_aggregation: ``"uniform_average"`` (the mean of the per-column scores),
        ``"variance_weighted_average"`` (weighted by each column's ``SS_tot``) or None
        (the ``[num_outputs]`` scores).
      num_regressors: p > 0 gives the adjusted score ``1 - (1 - R²) (n - 1) / (n - p -
        1)``, ``n`` the number of values (elements of `y_true`) seen; where ``p >= n -
        1`` it falls back to the plain score (Keras also warns there; a graph result
        cannot).
      name: metric name (default ``"r2_score"``).
      dtype: state dtype (float32).

    `update_state(y_true, y_pred, sample_weight)`: ``[batch, num_outputs]`` each
    (``num_outputs`` static; ``[N]`` vs ``[N, 1]`` align), `sample_weight` ``[batch]``
    or ``[batch, num_outputs]``. `result`: float32 scalar, or ``[num_outputs]`` with
    ``class_aggregation=None``; a column of constant targets scores 0 where Keras's
    division gives inf, NaN where it gives NaN (no targets yet).

    Raises:
      ValueError: for another `class_aggregation`, ``num_regressors < 0``, inputs not
        of rank 2, or `result` before any `update_state`.
    """

    def __init__(self, class_aggregation="uniform_average", num_regressors=0, name="r2_score",
                 dtype=None):
        super().__init__(name=name, dtype=dtype)
        valid = (None, "uniform_average", "variance_weighted_average")
        if class_aggregation not in valid:
            raise ValueError("Invalid value for argument `class_aggregation`. Expected one of "
                             f"{valid}. Received: class_aggregation={class_aggregation}")
        if num_regressors < 0:
            raise ValueError("Invalid value for argument `num_regressors`. Expected a value "
                             f">= 0. Received: num_regressors={num_regressors}")
        self.class_aggregation = class_aggregation
        self.num_regressors = num_regressors
        self._num_outputs = None

    def _set_num_outputs(self, y_true, y_pred):
        shapes = [y.shape if isinstance(y, Tensor) else TensorShape(np.shape(y))
                  for y in (y_true, y_pred)]
        ranks = [s.rank for s in shapes]
        # [N] against [N, 1] align, as in update_state.
        if ranks == [1, 2] and shapes[1].as_list()[-1] == 1:
            shapes[0] = shapes[1]
        if ranks == [2, 1] and shapes[0].as_list()[-1] == 1:
            shapes[1] = shapes[0]
        if any(s.rank != 2 for s in shapes) or None in (s.as_list()[-1] for s in shapes):
            raise ValueError("R2Score expects 2D inputs with shape (batch_size, output_dim), "
                             "with output_dim fully defined (not None). Received input "
                             f"shapes: y_pred.shape={shapes[1]} and y_true.shape={shapes[0]}.")
        n = shapes[1].as_list()[-1]
        if self._num_outputs is None:
            self._num_outputs = int(n)
        elif n != self._num_outputs:
            raise ValueError(f"R2Score '{self.name}' counts {self._num_outputs} outputs; "
                             f"received y_pred.shape={shapes[1]}.")

    def _state_from_arguments(self, y_true=None, y_pred=None, sample_weight=None):
        self._set_num_outputs(y_true, y_pred)

    def _ensure_state(self, graph=None):
        if self._graph is None and self._num_outputs is None:
            raise ValueError(f"R2Score '{self.name}' has no state yet: call update_state "
                             "first (the state's shape is the number of outputs).")
        return super()._ensure_state(graph)

    def build_state(self):
        n = [self._num_outputs]
        self.num_samples = self._add_state("num_samples")
        self.squared_sum = self._add_state("squared_sum", n)
        self.sum = self._add_state("sum", n)
        self.total_mse = self._add_state("residual", n)
        self.count = self._add_state("count", n)

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds one batch's weighted sums; returns the update `Operation`."""
        self._set_num_outputs(y_true, y_pred)
        g = self._ensure_state(_graph_of(y_pred, y_true))
        with g.as_default(), g.name_scope(self._scope), g.name_scope("update"):
            y_true, y_pred = _losses.squeeze_or_expand_to_same_rank(_float(y_true),
                                                                    _float(y_pred))
            w = _weights_like(sample_weight, y_true)
            wt = y_true * w
            adds = {self.sum: reduction_ops.reduce_sum(wt, axis=0),
                    self.squared_sum: reduction_ops.reduce_sum(y_true * wt, axis=0),
                    self.total_mse: reduction_ops.reduce_sum(
                        math_ops.square(y_true - y_pred) * w, axis=0),
                    self.count: reduction_ops.reduce_sum(w, axis=0),
                    self.num_samples: math_ops.cast(array_ops.size(y_true), _dtypes.float32)}
            return array_ops.group(*[v.assign_add(d, read_value=False)
                                     for v, d in adds.items()])

    def result(self):
        g = self._ensure_state()
        with g.as_default(), g.name_scope(self._scope):
            total_sum = self.sum.value()
            mean = total_sum / self.count.value()
            total = self.squared_sum.value() - total_sum * mean
            raw = 1.0 - self.total_mse.value() / total
            raw = array_ops.where(is_inf(raw), constant_ops.zeros_like(raw), raw)
            if self.class_aggregation == "uniform_average":
                score = reduction_ops.reduce_mean(raw)
            elif self.class_aggregation == "variance_weighted_average":
                score = reduction_ops.reduce_sum(total * raw) / reduction_ops.reduce_sum(total)
            else:
                score = raw
            if self.num_regressors:
                n = self.num_samples.value()
                p = float(self.num_regressors)
                adjusted = 1.0 - (1.0 - score) * (n - 1.0) / (n - p - 1.0)
                score = array_ops.where(math_ops.less(p, n - 1.0), adjusted, score)
            return array_ops.identity(score, name="result")

    def get_config(self):
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}
