"""Regularization layers: `SpatialDropout1D/2D/3D`, `GaussianNoise`, `GaussianDropout`,
`AlphaDropout`, `ActivityRegularization` (`Dropout` itself lives in `core.py`).

Like `Dropout`, the noise layers act only when called with ``training=True`` (as `fit`
builds its step); inference graphs hold no random ops.
"""

from __future__ import annotations

from mylib.core.ops import array_ops, math_ops, random_ops
from mylib.layers import regularizers
from mylib.layers.base import InputSpec, Layer
from mylib.layers.convolutional import normalize_data_format
from mylib.layers.core import Dropout, _dynamic_shape


class SpatialDropout1D(Dropout):
    """Drops whole feature maps: one keep/drop draw per (sample, channel) of a
    ``[batch, steps, channels]`` input, shared over the steps (Tompson et al., 2015)."""

    _rank = 1

    def __init__(self, rate, data_format=None, seed=None, **kwargs):
        super().__init__(rate, seed=seed, **kwargs)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self._rank + 2)
        ones = (1,) * self._rank
        self.noise_shape = ((None, *ones, None) if self.data_format == "channels_last"
                            else (None, None, *ones))

    def get_config(self):
        cfg = super().get_config()
        cfg.pop("noise_shape", None)
        return {**cfg, "data_format": self.data_format}


class SpatialDropout2D(SpatialDropout1D):
    """Drops whole 2-D feature maps of a ``[batch, h, w, channels]`` input (one draw per
    sample and channel)."""

    _rank = 2


class SpatialDropout3D(SpatialDropout1D):
    """Drops whole 3-D feature maps of a ``[batch, d, h, w, channels]`` input (one draw
    per sample and channel)."""

    _rank = 3


class GaussianNoise(Layer):
    """Adds zero-mean Gaussian noise of standard deviation `stddev` in training (a
    regularizer, and a form of data augmentation); the identity at inference."""

    supports_masking = True  # masks pass through, as in Keras

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= stddev:
            raise ValueError("Invalid value received for argument `stddev`. Expected a float "
                             f"value >= 0. Received: stddev={stddev}")
        self.stddev, self.seed = float(stddev), seed

    def call(self, inputs, training=None):
        if not training or self.stddev == 0:
            return inputs
        noise = random_ops.random_normal(array_ops.shape(inputs), stddev=self.stddev,
                                         dtype=inputs.dtype, seed=self.seed)
        return inputs + noise

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class GaussianDropout(Layer):
    """Multiplies by Gaussian noise of mean 1 and standard deviation
    ``sqrt(rate / (1 - rate))`` in training; the identity at inference."""

    supports_masking = True  # masks pass through, as in Keras

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise ValueError("Invalid value received for argument `rate`. Expected a float "
                             f"value between 0 and 1. Received: rate={rate}")
        self.rate, self.seed = float(rate), seed

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        std = (self.rate / (1.0 - self.rate)) ** 0.5
        noise = random_ops.random_normal(array_ops.shape(inputs), mean=1.0, stddev=std,
                                         dtype=inputs.dtype, seed=self.seed)
        return inputs * noise

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class AlphaDropout(Layer):
    """Dropout that keeps a SELU network self-normalizing (Klambauer et al., 2017), as
    Keras 3: in training each unit is kept with probability ``1 - rate`` or set to
    ``alpha' = -1.6733 * 1.0507``, then ``a * x + b`` restores the input's mean and
    variance (for zero-mean, unit-variance inputs); the identity at inference.

    Args:
      rate: drop probability, in [0, 1).
      noise_shape: shape of the keep mask, broadcast against the input (`None` entries
        take the input's size).
      seed: op-level seed.

    Output: the input's shape and dtype.
    """

    supports_masking = True  # masks pass through, as in Keras

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise ValueError("Invalid value received for argument `rate`. Expected a float "
                             f"value between 0 and 1. Received: rate={rate}")
        self.rate, self.noise_shape, self.seed = float(rate), noise_shape, seed

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        shape = inputs.shape.as_list()
        dims = shape if self.noise_shape is None else [
            s if n is None else n for n, s in zip(self.noise_shape, shape)]
        u = random_ops.random_uniform(_dynamic_shape(inputs, dims), dtype=inputs.dtype,
                                      seed=self.seed)
        kept = math_ops.cast(u >= self.rate, inputs.dtype)
        alpha_p = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
        a = ((1 - self.rate) * (1 + self.rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * self.rate
        x = inputs * kept + alpha_p * (1 - kept)
        return a * x + b

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


class ActivityRegularization(Layer):
    """The identity, adding ``(l1 * sum|x| + l2 * sum x**2) / batch_size`` of its input
    to the model's loss (Keras 3's activity-regularizer normalization)."""

    supports_masking = True  # masks pass through, as in Keras

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(**kwargs)
        self.l1, self.l2 = float(l1), float(l2)
        self.activity_regularizer = regularizers.L1L2(l1=self.l1, l2=self.l2)

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        cfg = super().get_config()
        cfg.pop("activity_regularizer", None)  # made from l1 and l2
        return {**cfg, "l1": self.l1, "l2": self.l2}

