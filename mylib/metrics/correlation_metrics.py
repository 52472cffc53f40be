"""Correlation metrics, as Keras 3's: the per-sample Pearson and concordance
correlation coefficients along an axis, and their weighted means over the samples
seen (`PearsonCorrelation`, `ConcordanceCorrelation`)."""

from __future__ import annotations

from mylib.core.ops import reduction_ops, special_ops
from mylib.losses import _prepare
from mylib.metrics.base import MeanMetricWrapper

_EPSILON = 1e-7


def pearson_correlation(y_true, y_pred, axis=-1):
    """Pearson correlation coefficient of `y_true` and `y_pred` along `axis`, as Keras 3:
    ``mean(z(y_true) * z(y_pred), axis)`` with ``z(x) = (x - mean(x)) / std(x)``
    (population standard deviation; a constant row gives NaN, as in Keras).

    Args:
      y_true, y_pred: float `Tensor` ``[batch, .., n]`` (``[N]`` vs ``[N, 1]`` align).
      axis: the axis (or axes) the coefficient is taken along.
    Returns:
      `Tensor`: the inputs' shape without `axis`, in [-1, 1].
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    t = y_true - reduction_ops.reduce_mean(y_true, axis=axis, keepdims=True)
    p = y_pred - reduction_ops.reduce_mean(y_pred, axis=axis, keepdims=True)
    t = t / special_ops.reduce_std(t, axis=axis, keepdims=True)
    p = p / special_ops.reduce_std(p, axis=axis, keepdims=True)
    return reduction_ops.reduce_mean(t * p, axis=axis)


def concordance_correlation(y_true, y_pred, axis=-1):
    """Concordance correlation coefficient (Lin, 1989) along `axis`, as Keras 3 computes
    it: ``mean(2 * (y_true - mean(y_pred)) * (y_pred - mean(y_pred)) / (var(y_true) +
    var(y_pred) + (mean(y_true) - mean(y_pred))**2 + 1e-7), axis)``.

    Keras 3 centres `y_true` on the mean of `y_pred` in the covariance term; since the
    deviations of `y_pred` from its mean sum to zero along `axis`, this equals Lin's
    covariance (`y_true` centred on its own mean).

    Args:
      y_true, y_pred: float `Tensor` ``[batch, .., n]`` (``[N]`` vs ``[N, 1]`` align).
      axis: the axis (or axes) the coefficient is taken along.
    Returns:
      `Tensor`: the inputs' shape without `axis`.
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    t_mean = reduction_ops.reduce_mean(y_true, axis=axis, keepdims=True)
    p_mean = reduction_ops.reduce_mean(y_pred, axis=axis, keepdims=True)
    t_var = special_ops.reduce_variance(y_true, axis=axis, keepdims=True)
    p_var = special_ops.reduce_variance(y_pred, axis=axis, keepdims=True)
    covar = (y_true - p_mean) * (y_pred - p_mean)
    norm = t_var + p_var + (t_mean - p_mean) ** 2
    return reduction_ops.reduce_mean(2.0 * covar / (norm + _EPSILON), axis=axis)


class PearsonCorrelation(MeanMetricWrapper):
    """Weighted mean over the samples of `pearson_correlation` (Keras 3's
    `PearsonCorrelation`).

    Args:
      name: metric name (default ``"pearson_correlation"``).
      dtype: state dtype (float32).
      axis: the axis the per-sample coefficient is taken along (default -1).

    `update_state(y_true, y_pred, sample_weight)`: ``[batch, n]`` each,
    `sample_weight` ``[batch]``; `result` is a float32 scalar.
    """

    def __init__(self, name="pearson_correlation", dtype=None, axis=-1):
        super().__init__(pearson_correlation, name=name, dtype=dtype, axis=axis)
        self.axis = axis


class ConcordanceCorrelation(MeanMetricWrapper):
    """Weighted mean over the samples of `concordance_correlation` (Keras 3's
    `ConcordanceCorrelation`, with its covariance term); arguments as
    `PearsonCorrelation`, default name ``"concordance_correlation"``."""

    def __init__(self, name="concordance_correlation", dtype=None, axis=-1):
        super().__init__(concordance_correlation, name=name, dtype=dtype, axis=axis)
        self.axis = axis
