"""Activation layers of Keras 3: `ReLU`, `LeakyReLU`, `PReLU` (a trainable slope),
`ELU` and `Softmax` (mask-aware). Each passes its input mask through, as in Keras 3."""

from __future__ import annotations

import numpy as np

from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops
from mylib.layers import constraints, initializers, regularizers
from mylib.layers.base import InputSpec, Layer
from mylib import nn


def _number(name, value, layer, allow_none=False, minimum=0.0):
    if value is None and allow_none:
        return None
    if value is None or isinstance(value, bool) or not np.isscalar(value) or \
            float(value) < minimum:
        raise ValueError(f"{name} of a {layer} layer cannot be None or a negative value. "
                         f"Received: {name}={value!r}")
    return float(value)


class ReLU(Layer):
    """Rectified linear unit with Keras 3's options.

    ``f(x) = max_value`` for ``x >= max_value``; ``x`` for ``threshold < x <
    max_value``; ``negative_slope * (x - threshold)`` otherwise.

    Args:
      max_value: float >= 0 or None (no upper bound).
      negative_slope: float >= 0, the slope below the threshold (default 0).
      threshold: float >= 0, below which values are damped (default 0).

    Input and output shapes are the same; any float dtype.

    Raises:
      ValueError: a negative `max_value`, `negative_slope` or `threshold`.
    """

    supports_masking = True

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and float(max_value) < 0.0:
            raise ValueError("max_value of a ReLU layer cannot be a negative value. "
                             f"Received: max_value={max_value}")
        self.max_value = None if max_value is None else float(max_value)
        self.negative_slope = _number("negative_slope", negative_slope, "ReLU")
        self.threshold = _number("threshold", threshold, "ReLU")

    def call(self, inputs):
        x = inputs
        slope, thr, top = self.negative_slope, self.threshold, self.max_value
        if slope and top is None and thr == 0.0:
            return nn.leaky_relu(x, alpha=slope)
        zero = constant_ops.constant(0.0, dtype=x.dtype)
        if thr != 0.0:
            t = constant_ops.constant(thr, dtype=x.dtype)
            y = array_ops.where(math_ops.greater(x, t), x, 0.0)
        elif top == 6.0 and not slope:
            return nn.relu6(x)
        else:
            y = nn.relu(x)
        if top is not None:
            y = math_ops.minimum(math_ops.maximum(y, zero),
                                 constant_ops.constant(top, dtype=x.dtype))
        if slope:
            neg = nn.relu(constant_ops.constant(thr, dtype=x.dtype) - x) if thr else nn.relu(-x)
            y = y - constant_ops.constant(slope, dtype=x.dtype) * neg
        return y

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


class LeakyReLU(Layer):
    """``f(x) = x`` for ``x >= 0``, ``negative_slope * x`` otherwise.

    Args:
      negative_slope: float >= 0 (default 0.3, Keras 3's). The deprecated ``alpha``
        keyword is accepted for it, as Keras 3 does.

    Raises:
      ValueError: a negative or None `negative_slope`.
    """

    supports_masking = True

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
        super().__init__(**kwargs)
        self.negative_slope = _number("negative_slope", negative_slope, "Leaky ReLU")

    def call(self, inputs):
        return nn.leaky_relu(inputs, alpha=self.negative_slope)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}


class PReLU(Layer):
    """Parametric ReLU: ``f(x) = x`` for ``x >= 0``, ``alpha * x`` otherwise, with a
    trainable `alpha` (He et al., 2015, "Delving Deep into Rectifiers").

    `alpha` has the shape of one sample (``input_shape[1:]``), with size 1 along each
    of `shared_axes` (e.g. ``shared_axes=[1, 2]`` for one slope per channel of
    ``[batch, height, width, channels]`` images).

    Args:
      alpha_initializer: initializer of `alpha` (default zeros).
      alpha_regularizer: optional regularizer of `alpha`.
      alpha_constraint: optional constraint of `alpha`.
      shared_axes: int or list of ints (axes counted with the batch axis as 0).
    """

    supports_masking = True

    def __init__(self, alpha_initializer="Zeros", alpha_regularizer=None, alpha_constraint=None,
                 shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        elif isinstance(shared_axes, (list, tuple)):
            self.shared_axes = [int(a) for a in shared_axes]
        else:
            self.shared_axes = [int(shared_axes)]

    def build(self, input_shape):
        param_shape = list(input_shape[1:])
        for i in self.shared_axes or ():
            if not 1 <= i < len(input_shape):
                raise ValueError(f'Layer "{self.name}": shared_axes must be in [1, '
                                 f"{len(input_shape)}) for inputs of shape {input_shape}. "
                                 f"Received: shared_axes={self.shared_axes}")
            param_shape[i - 1] = 1
        if any(d is None for d in param_shape):
            raise ValueError(f'Layer "{self.name}": PReLU needs the non-shared axes of the '
                             f"input known. Received: input_shape={input_shape}")
        self.alpha = self.add_weight("alpha", param_shape, self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        axes = {i: input_shape[i] for i in range(1, len(input_shape))
                if i not in (self.shared_axes or ())}
        self.input_spec = InputSpec(ndim=len(input_shape), axes=axes)

    def call(self, inputs):
        return nn.relu(inputs) - self.alpha * nn.relu(-inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(),
                "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": regularizers.serialize(self.alpha_regularizer),
                "alpha_constraint": constraints.serialize(self.alpha_constraint),
                "shared_axes": self.shared_axes}


class ELU(Layer):
    """Exponential linear unit: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)``
    otherwise (Clevert et al., 2016).

    Args:
      alpha: float, the scale of the negative part (default 1.0).
    """

    supports_masking = True

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        if self.alpha == 1.0:
            return nn.elu(inputs)
        x = inputs
        neg = constant_ops.constant(self.alpha, dtype=x.dtype) * math_ops.expm1(
            math_ops.minimum(x, constant_ops.constant(0.0, dtype=x.dtype)))
        return array_ops.where(math_ops.greater(x, constant_ops.constant(0.0, dtype=x.dtype)),
                               x, neg)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


class Softmax(Layer):
    """Softmax along `axis`, honouring a mask as Keras 3 does.

    With a mask (the inputs' Keras mask, or ``mask=`` given to the call; bool, or
    numbers where > 0.5 counts as True), masked positions enter the softmax as -1e9
    (-3e4 for float16) and come out as exactly 0. The mask broadcasts against the
    inputs as numpy does (aligned on the trailing axes). The mask passes through.

    Args:
      axis: int or tuple of ints (several: normalized jointly, via logsumexp).

    Raises:
      ValueError: a mask of higher rank than the inputs, or whose trailing dims are
        neither 1 nor the inputs'.
    """

    supports_masking = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else int(axis)

    def call(self, inputs, mask=None):
        x = inputs
        if mask is not None:
            ms, xs = mask.shape.as_list(), x.shape.as_list()
            if len(ms) > len(xs):
                raise ValueError("The `mask` must be broadcastable to `inputs` and must not "
                                 f"have more dimensions. Received: inputs.shape={tuple(xs)}, "
                                 f"mask.shape={tuple(ms)}")
            for m, i in zip(ms[::-1], xs[::-1]):
                if m is not None and i is not None and m not in (1, i):
                    raise ValueError("The `mask` must be broadcastable to `inputs`. Each "
                                     "mask dimension must be 1 or match the corresponding "
                                     f"input dimension. Received: inputs.shape={tuple(xs)}, "
                                     f"mask.shape={tuple(ms)}")
            if mask.dtype.name != "bool":
                mask = math_ops.greater(mask, constant_ops.constant(0.5, dtype=mask.dtype))
            big = -3e4 if x.dtype.name == "float16" else -1e9
            x = array_ops.where(mask, x, big)
        if isinstance(self.axis, list) and len(self.axis) > 1:
            out = math_ops.exp(x - reduction_ops.reduce_logsumexp(x, axis=self.axis,
                                                                 keepdims=True))
        else:
            axis = self.axis[0] if isinstance(self.axis, list) else self.axis
            out = nn.softmax(x, axis=axis)
        if mask is not None:
            out = array_ops.where(mask, out, 0.0)
        return out

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
