"""Small Keras 3 layers: `Identity`, `UnitNormalization`, `SeparableConv1D`,
`SeparableConv2D`, `DepthwiseConv1D`, `ZeroPadding3D` and `Cropping3D`."""

from __future__ import annotations

from mylib.core.ops import math_ops, nn_ops, reduction_ops
from mylib.layers import activations, constraints, initializers, regularizers
from mylib.layers.base import InputSpec, Layer
from mylib.layers.reshaping import Cropping2D, ZeroPadding2D
from mylib.layers.convolutional import (BaseConv, conv_output_length, normalize_data_format,
                                        normalize_padding, normalize_tuple,
                                        to_channels_first, to_channels_last)


class Identity(Layer):
    """Returns its inputs unchanged (Keras 3's `Identity`); the mask passes through."""

    supports_masking = True

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape


class UnitNormalization(Layer):
    """Scales each sample to unit L2 norm along `axis` (Keras 3's `UnitNormalization`):
    ``x * min(rsqrt(sum(x ** 2, axis)), 1e12)``.

    Args:
      axis: int or list of ints (default -1).

    Raises:
      TypeError: `axis` neither an int nor a list / tuple of ints.
    """

    supports_masking = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, int):
            self.axis = axis
        else:
            raise TypeError("Invalid value for `axis` argument: expected an int or a "
                            f"list/tuple of ints. Received: axis={axis}")

    def call(self, inputs):
        x = inputs if inputs.dtype.is_floating else math_ops.cast(inputs, self.dtype)
        sq = reduction_ops.reduce_sum(x * x, axis=self.axis, keepdims=True)
        return x * math_ops.minimum(math_ops.rsqrt(sq), 1e12)

    def compute_output_shape(self, input_shape):
        for a in (self.axis if isinstance(self.axis, list) else [self.axis]):
            if a >= len(input_shape) or a < -len(input_shape):
                raise ValueError(f"Axis {self.axis} is out of bounds for input shape "
                                 f"{input_shape}.")
        return input_shape

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


def _depthwise(x, kernel, strides, padding, dilations):
    """Depthwise convolution of channels-last `x` of rank 3 or 4 (1-D as 2-D over a
    height of 1)."""
    if x.shape.rank == 4:
        return nn_ops.depthwise_conv2d(x, kernel, strides=strides, padding=padding,
                                       dilations=dilations)
    from mylib.core.ops import array_ops

    y = nn_ops.depthwise_conv2d(array_ops.expand_dims(x, 1), array_ops.expand_dims(kernel, 0),
                                strides=(1,) + tuple(strides), padding=padding,
                                dilations=(1,) + tuple(dilations))
    return array_ops.squeeze(y, [1])


class _SeparableConv(Layer):
    """Depthwise-separable convolution of `rank` spatial axes (Chollet, 2017,
    "Xception"), as Keras 3's `SeparableConv1D` / `SeparableConv2D`: a depthwise
    convolution (kernel ``kernel_size + [in_channels, depth_multiplier]``, with
    `strides`, `padding`, `dilation_rate`), then a pointwise convolution (kernel
    ``[1] * rank + [in_channels * depth_multiplier, filters]``), a bias ``[filters]``
    and the activation. Output sizes as `Conv1D` / `Conv2D`.

    Raises:
      ValueError: `filters` or `depth_multiplier` not a positive int, bad kernel sizes,
        strides, padding or data format, an input of the wrong rank or with an unknown
        channel dimension.
    """

    rank = 2

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        for name, v in (("filters", filters), ("depth_multiplier", depth_multiplier)):
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"Invalid value for argument `{name}`. Expected a strictly "
                                 f"positive value. Received {name}={v}.")
        self.filters, self.depth_multiplier = filters, depth_multiplier
        n = self.rank
        self.kernel_size = normalize_tuple(kernel_size, n, "kernel_size")
        self.strides = normalize_tuple(strides, n, "strides")
        self.dilation_rate = normalize_tuple(dilation_rate, n, "dilation_rate")
        self.padding = normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.depthwise_constraint = constraints.get(depthwise_constraint)
        self.pointwise_constraint = constraints.get(pointwise_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _channel_axis(self):
        return -1 if self.data_format == "channels_last" else 1

    def build(self, input_shape):
        c = input_shape[self._channel_axis()]
        if c is None:
            raise ValueError(f'Layer "{self.name}": the channel dimension of the inputs must '
                             f"be known. Received: input_shape={tuple(input_shape)}")
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", self.kernel_size + (c, self.depth_multiplier),
            self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", (1,) * self.rank + (c * self.depth_multiplier, self.filters),
            self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self.bias = self.add_weight("bias", [self.filters], self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis(): c})

    def call(self, inputs):
        x = inputs if inputs.dtype == self.dtype else math_ops.cast(inputs, self.dtype)
        x = to_channels_last(x, self.data_format)
        y = _depthwise(x, self.depthwise_kernel, self.strides, self.padding.upper(),
                       self.dilation_rate)
        y = nn_ops.conv2d(y, self.pointwise_kernel, strides=1, padding="VALID") \
            if self.rank == 2 else nn_ops.conv1d(y, self.pointwise_kernel, padding="VALID")
        if self.bias is not None:
            y = nn_ops.bias_add(y, self.bias)
        return to_channels_first(self.activation(y), self.data_format)

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        first = self.data_format == "channels_first"
        spatial = input_shape[2:] if first else input_shape[1:-1]
        out = tuple(conv_output_length(d, k, self.padding, s, r) for d, k, s, r in
                    zip(spatial, self.kernel_size, self.strides, self.dilation_rate))
        return (input_shape[0], self.filters) + out if first else \
            (input_shape[0],) + out + (self.filters,)

    def get_config(self):
        ser_i, ser_r, ser_c = initializers.serialize, regularizers.serialize, \
            constraints.serialize
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "depth_multiplier": self.depth_multiplier,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "depthwise_initializer": ser_i(self.depthwise_initializer),
                "pointwise_initializer": ser_i(self.pointwise_initializer),
                "bias_initializer": ser_i(self.bias_initializer),
                "depthwise_regularizer": ser_r(self.depthwise_regularizer),
                "pointwise_regularizer": ser_r(self.pointwise_regularizer),
                "bias_regularizer": ser_r(self.bias_regularizer),
                "depthwise_constraint": ser_c(self.depthwise_constraint),
                "pointwise_constraint": ser_c(self.pointwise_constraint),
                "bias_constraint": ser_c(self.bias_constraint)}


class SeparableConv1D(_SeparableConv):
    """Depthwise-separable 1-D convolution over ``[batch, steps, channels]`` (see
    `_SeparableConv`); output ``[batch, new_steps, filters]``."""

    rank = 1


class SeparableConv2D(_SeparableConv):
    """Depthwise-separable 2-D convolution over ``[batch, h, w, channels]`` images (see
    `_SeparableConv`); output ``[batch, new_h, new_w, filters]``."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         depth_multiplier=depth_multiplier, **kwargs)


class DepthwiseConv1D(BaseConv):
    """Depthwise 1-D convolution (Keras 3's `DepthwiseConv1D`): each input channel
    convolved with its own `depth_multiplier` filters; kernel ``[k, in_channels,
    depth_multiplier]``, output channels ``in_channels * depth_multiplier`` (channel
    ``c * depth_multiplier + m``), bias of that size.

    Raises:
      ValueError: `depth_multiplier` not a positive int; as `Conv1D` for the rest
        (padding "valid" or "same").
    """

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        if not isinstance(depth_multiplier, int) or depth_multiplier <= 0:
            raise ValueError("Invalid value for argument `depth_multiplier`. Expected a "
                             f"strictly positive value. Received depth_multiplier="
                             f"{depth_multiplier}.")
        if str(padding).lower() == "causal":
            raise ValueError("DepthwiseConv1D takes padding 'valid' or 'same'. Received: "
                             "padding='causal'")
        super().__init__(1, None, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=depthwise_initializer,
                         bias_initializer=bias_initializer,
                         kernel_regularizer=depthwise_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=depthwise_constraint,
                         bias_constraint=bias_constraint, **kwargs)
        self.depth_multiplier = depth_multiplier

    def _kernel_shape(self, in_channels):
        self._in_c = in_channels
        return self.kernel_size + (in_channels, self.depth_multiplier)

    def _bias_size(self):
        return self._in_c * self.depth_multiplier

    def _out_channels(self, in_channels):
        return None if in_channels is None else in_channels * self.depth_multiplier

    def _convolve(self, x):
        return _depthwise(x, self.kernel, self.strides, self.padding.upper(),
                          self.dilation_rate)

    def get_config(self):
        cfg = super().get_config()
        for k in ("filters", "groups"):
            cfg.pop(k)
        for a, b in (("kernel_initializer", "depthwise_initializer"),
                     ("kernel_regularizer", "depthwise_regularizer"),
                     ("kernel_constraint", "depthwise_constraint")):
            cfg[b] = cfg.pop(a)
        cfg["depth_multiplier"] = self.depth_multiplier
        return cfg


class ZeroPadding3D(ZeroPadding2D):
    """Pads the three spatial axes of ``[batch, d1, d2, d3, channels]`` with zeros
    (Keras 3's `ZeroPadding3D`).

    Args:
      padding: int (all sides), 3 ints (symmetric per axis) or 3 (before, after) pairs.
      data_format: "channels_last" (default) or "channels_first".
    """

    _rank = 3

    def __init__(self, padding=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


class Cropping3D(Cropping2D):
    """Removes borders of the three spatial axes (Keras 3's `Cropping3D`).

    Args:
      cropping: int, 3 ints (symmetric per axis) or 3 (before, after) pairs.
      data_format: "channels_last" (default) or "channels_first".
    Raises:
      ValueError: a cropping that leaves nothing of an axis.
    """

    _rank = 3

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)
