"""TensorFlow 1 initializers by their ``tf`` names (``tf.zeros_initializer()``, ...).

An initializer is called as ``init(shape, dtype=None, partition_info=None)`` and returns
a `Tensor` of the graph ops that draw the value, so random values are drawn when the
variable's initializer runs in a Session (seeded by `seed` and the graph seed, see
`mylib.core.ops.random_ops.get_seed`). They are also valid Keras initializers
(``init(shape, dtype)``).

Defaults are TF1's (`tensorflow/python/ops/init_ops.py`), which differ from Keras's:
``random_normal_initializer`` and ``truncated_normal_initializer`` have ``stddev=1.0``,
``random_uniform_initializer`` draws from ``[0, 1)``, and ``variance_scaling_initializer``
uses ``scale=1.0, mode="fan_in", distribution="truncated_normal"``.
"""

from __future__ import annotations

import math

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.ops import constant_ops, random_ops

__all__ = ["Initializer", "zeros_initializer", "ones_initializer", "constant_initializer",
           "random_normal_initializer", "truncated_normal_initializer",
           "random_uniform_initializer", "variance_scaling_initializer",
           "glorot_uniform_initializer", "glorot_normal_initializer", "orthogonal_initializer",
           "xavier_initializer", "he_normal", "he_uniform", "lecun_normal", "lecun_uniform",
           "glorot_uniform", "glorot_normal"]


def _fans(shape):
    """(fan_in, fan_out) as TF1's `_compute_fans` (receptive field for conv kernels)."""
    shape = tuple(int(d) for d in shape)
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    rf = int(np.prod(shape[:-2]))
    return shape[-2] * rf, shape[-1] * rf


def _static_shape(shape, who):
    try:
        return [int(d) for d in (shape.as_list() if hasattr(shape, "as_list") else shape)]
    except (TypeError, ValueError):
        raise ValueError(f"{who}: the shape must be fully known. Received: shape={shape!r}") \
            from None


class Initializer:
    """Base class: ``init(shape, dtype=None, partition_info=None) -> Tensor``."""

    dtype = _dtypes.float32

    def _dt(self, dtype):
        return _dtypes.as_dtype(dtype if dtype is not None else self.dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `__call__` (abstract in the base class)")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class zeros_initializer(Initializer):  # noqa: N801 - TF's name
    """Zeros (any dtype)."""

    def __init__(self, dtype=_dtypes.float32):
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return constant_ops.zeros(_static_shape(shape, "zeros_initializer"), dtype=self._dt(dtype))


class ones_initializer(Initializer):  # noqa: N801
    """Ones (any dtype)."""

    def __init__(self, dtype=_dtypes.float32):
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return constant_ops.ones(_static_shape(shape, "ones_initializer"), dtype=self._dt(dtype))


class constant_initializer(Initializer):  # noqa: N801
    """`value` everywhere. A list or array `value` is laid out in row-major order; when it
    has fewer elements than the shape, its last element fills the rest (TF1's rule).

    Raises:
      TypeError: `value` is not a scalar, list, tuple or numpy array.
      ValueError: `value` has more elements than the shape (or any other count with
        ``verify_shape=True``).
    """

    def __init__(self, value=0, dtype=_dtypes.float32, verify_shape=False):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError("constant_initializer: value must be a scalar, list, tuple or "
                            f"numpy array. Received: {type(value).__name__}")
        self.value, self.dtype, self.verify_shape = value, _dtypes.as_dtype(dtype), verify_shape

    def __call__(self, shape, dtype=None, partition_info=None):
        dt = self._dt(dtype)
        shape = _static_shape(shape, "constant_initializer")
        v = np.asarray(self.value, dtype=dt.np)
        n = int(np.prod(shape))
        if v.ndim == 0:
            out = np.full(shape, v, dtype=dt.np)
        else:
            flat = v.reshape(-1)
            if flat.size > n or (self.verify_shape and flat.size != n):
                raise ValueError(f"constant_initializer: too many elements provided. Needed at "
                                 f"most {n}, but received {flat.size}")
            if flat.size < n:
                flat = np.concatenate([flat, np.full(n - flat.size, flat[-1], dt.np)])
            out = flat.reshape(shape)
        return constant_ops.constant(out, dtype=dt)

    def get_config(self):
        return {"value": self.value, "dtype": self.dtype.name, "verify_shape": self.verify_shape}


class random_normal_initializer(Initializer):  # noqa: N801
    """Normal(`mean`, `stddev`); TF1's default stddev is 1.0."""

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=_dtypes.float32):
        self.mean, self.stddev, self.seed, self.dtype = mean, stddev, seed, _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_normal(_static_shape(shape, "random_normal_initializer"),
                                        self.mean, self.stddev, self._dt(dtype), seed=self.seed)


class truncated_normal_initializer(random_normal_initializer):  # noqa: N801
    """Normal(`mean`, `stddev`) with values beyond two stddevs redrawn."""

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.truncated_normal(
            _static_shape(shape, "truncated_normal_initializer"), self.mean, self.stddev,
            self._dt(dtype), seed=self.seed)


class random_uniform_initializer(Initializer):  # noqa: N801
    """Uniform in ``[minval, maxval)``; ``maxval=None`` means 1 (floats)."""

    def __init__(self, minval=0, maxval=None, seed=None, dtype=_dtypes.float32):
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_uniform(_static_shape(shape, "random_uniform_initializer"),
                                         self.minval, self.maxval, self._dt(dtype),
                                         seed=self.seed)


class variance_scaling_initializer(Initializer):  # noqa: N801
    """Variance ``scale / n`` with ``n`` = fan_in, fan_out or their mean (TF1's
    `VarianceScaling`): ``"truncated_normal"`` (TF1's ``"normal"`` means the same, with the
    0.8796 stddev correction of a normal truncated at two stddevs),
    ``"untruncated_normal"`` or ``"uniform"`` on ``[-sqrt(3 scale / n), sqrt(3 scale / n)]``.

    Raises:
      ValueError: non-positive `scale`, unknown `mode` or `distribution`.
    """

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=_dtypes.float32):
        if scale <= 0.0:
            raise ValueError(f"`scale` must be a positive float. Received: scale={scale}")
        mode = mode.lower()
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument: {mode!r}; expected 'fan_in', "
                             "'fan_out' or 'fan_avg'")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(f"Invalid `distribution` argument: {distribution!r}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        shape = _static_shape(shape, type(self).__name__)
        if partition_info is not None and getattr(partition_info, "full_shape", None):
            fan_in, fan_out = _fans(partition_info.full_shape)  # fans of the whole variable
        else:
            fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        dt = self._dt(dtype)
        if self.distribution == "truncated_normal":
            return random_ops.truncated_normal(shape, 0.0, math.sqrt(scale) / .87962566103423978,
                                               dt, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shape, 0.0, math.sqrt(scale), dt, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dt, seed=self.seed)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


class glorot_uniform_initializer(variance_scaling_initializer):  # noqa: N801
    """Glorot & Bengio (2010) uniform: ``U(-sqrt(6 / (fan_in + fan_out)), +...)``; the
    default initializer of `get_variable` for floating variables, as in TF1."""

    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)


class glorot_normal_initializer(variance_scaling_initializer):  # noqa: N801
    """Glorot & Bengio (2010), truncated normal with stddev ``sqrt(2 / (fan_in + fan_out))``."""

    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)


class orthogonal_initializer(Initializer):  # noqa: N801
    """A (semi-)orthogonal matrix times `gain` (Saxe et al. 2014), from the QR
    decomposition of a normal matrix."""

    def __init__(self, gain=1.0, seed=None, dtype=_dtypes.float32):
        self.gain, self.seed, self.dtype = gain, seed, _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        shape = _static_shape(shape, "orthogonal_initializer")
        if len(shape) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional. "
                             f"Received: shape={shape}")
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        a = random_ops.random_normal([max(rows, cols), min(rows, cols)], dtype=self._dt(dtype),
                                     seed=self.seed)
        return random_ops.orthogonalize(a, shape=tuple(shape), gain=float(self.gain))


def xavier_initializer(uniform=True, seed=None, dtype=_dtypes.float32):
    """`tf.contrib.layers.xavier_initializer`: Glorot uniform (or truncated normal)."""
    return variance_scaling_initializer(1.0, "fan_avg", "uniform" if uniform else
                                        "truncated_normal", seed, dtype)


def contrib_variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None,
                                         dtype=_dtypes.float32):
    """`tf.contrib.layers.variance_scaling_initializer` (He et al. 2015 by default):
    variance ``factor / n``; uniform or truncated normal."""
    return variance_scaling_initializer(factor, mode.lower(), "uniform" if uniform else
                                        "truncated_normal", seed, dtype)


def he_normal(seed=None):
    return variance_scaling_initializer(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed=None):
    return variance_scaling_initializer(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed=None):
    return variance_scaling_initializer(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed=None):
    return variance_scaling_initializer(1.0, "fan_in", "uniform", seed)


glorot_uniform = glorot_uniform_initializer
glorot_normal = glorot_normal_initializer
