"""Convolution layers: `Conv1D`, `Conv2D`, `Conv3D`, `DepthwiseConv2D`,
`Conv1DTranspose`, `Conv2DTranspose`, `Conv3DTranspose`.

Keras 3's names, arguments and weight layouts: a `Conv2D` kernel is
``[kh, kw, in_channels / groups, filters]``, a `DepthwiseConv2D` kernel
``[kh, kw, in_channels, depth_multiplier]``, a `Conv2DTranspose` kernel
``[kh, kw, filters, in_channels]`` (and so on for 1 and 3 spatial axes). Inputs are channels-last by default;
``data_format="channels_first"`` inputs are transposed to channels-last around the op.
"""

from __future__ import annotations

from mylib.core.ops import array_ops, math_ops, nn_3d_ops, nn_ops
from mylib.layers import activations, constraints, initializers, regularizers
from mylib.layers.base import InputSpec, Layer


# ---------------------------------------------------------------- argument helpers
def normalize_tuple(value, n, name, allow_zero=False):
    """`value` (an int or n ints) as a tuple of n ints; ValueError otherwise."""
    if isinstance(value, int):
        out = (value,) * n
    else:
        try:
            out = tuple(int(v) for v in value)
        except TypeError:
            out = ()
        if len(out) != n:
            raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. "
                             f"Received: {name}={value!r}")
    if any(v < 0 or (v == 0 and not allow_zero) for v in out):
        raise ValueError(f"The `{name}` argument must be a tuple of {n} "
                         f"{'non-negative' if allow_zero else 'positive'} integers. "
                         f"Received: {name}={value!r}")
    return out


def normalize_data_format(value):
    df = (value or "channels_last").lower()
    if df not in ("channels_last", "channels_first"):
        raise ValueError("The `data_format` argument must be one of 'channels_first', "
                         f"'channels_last'. Received: data_format={value!r}")
    return df


def normalize_padding(value, allowed=("valid", "same")):
    p = str(value).lower()
    if p not in allowed:
        raise ValueError(f"The `padding` argument must be one of {list(allowed)}. "
                         f"Received: padding={value!r}")
    return p


def to_channels_last(x, data_format):
    if data_format == "channels_last":
        return x
    r = x.shape.rank
    return array_ops.transpose(x, [0] + list(range(2, r)) + [1])


def to_channels_first(x, data_format):
    if data_format == "channels_last":
        return x
    r = x.shape.rank
    return array_ops.transpose(x, [0, r - 1] + list(range(1, r - 1)))


def conv_output_length(length, kernel, padding, stride, dilation=1):
    """Keras's `compute_conv_output_shape` for one axis (None stays None)."""
    if length is None:
        return None
    eff = (kernel - 1) * dilation + 1
    if padding in ("same", "causal"):
        return -(-length // stride)
    return max(0, -(-(length - eff + 1) // stride))


def deconv_output_length(length, kernel, padding, output_padding, stride, dilation=1):
    """Keras's `compute_conv_transpose_output_length`."""
    if length is None:
        return None
    eff = (kernel - 1) * dilation + 1
    if output_padding is None:
        return length * stride + (max(eff - stride, 0) if padding == "valid" else 0)
    pad = eff // 2 if padding == "same" else 0
    return (length - 1) * stride + eff - 2 * pad + output_padding


# ---------------------------------------------------------------- base
class BaseConv(Layer):
    """N-D convolution (N = 1, 2 or 3): ``activation(conv(inputs, kernel) + bias)``.

    Args:
      rank: 1, 2 or 3 spatial dimensions.
      filters: number of output channels.
      kernel_size, strides, dilation_rate: int or `rank` ints.
      padding: "valid" or "same" ("causal" too for Conv1D).
      data_format: "channels_last" (default) or "channels_first".
      groups: split the input channels into groups convolved separately (both
        `filters` and the input channels must be divisible by it).
      activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
      bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint: as
        `Dense`.
    """

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.rank = rank
        if filters is not None and (not isinstance(filters, int) or filters <= 0):
            raise ValueError("Invalid value for argument `filters`. Expected a strictly "
                             f"positive value. Received filters={filters}.")
        self.filters = filters
        self.groups = int(groups or 1)
        if self.groups <= 0 or (filters is not None and filters % self.groups):
            raise ValueError("The number of filters must be evenly divisible by the number of "
                             f"groups. Received: groups={groups}, filters={filters}.")
        self.kernel_size = normalize_tuple(kernel_size, rank, "kernel_size")
        self.strides = normalize_tuple(strides, rank, "strides")
        self.dilation_rate = normalize_tuple(dilation_rate, rank, "dilation_rate")
        allowed = ("valid", "same", "causal") if rank == 1 else ("valid", "same")
        self.padding = normalize_padding(padding, allowed)
        self.data_format = normalize_data_format(data_format)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(min_ndim=rank + 2)

    def _channel_axis(self):
        return -1 if self.data_format == "channels_last" else 1

    def _in_channels(self, input_shape):
        c = input_shape[self._channel_axis()]
        if c is None:
            raise ValueError(f'Layer "{self.name}": the channel dimension of the inputs must '
                             f"be known. Received: input_shape={tuple(input_shape)}")
        return c

    def _kernel_shape(self, in_channels):
        if in_channels % self.groups:
            raise ValueError(f'Layer "{self.name}": the number of input channels must be '
                             f"evenly divisible by the number of groups. Received groups="
                             f"{self.groups}, but the input has {in_channels} channels.")
        return self.kernel_size + (in_channels // self.groups, self.filters)

    def _bias_size(self):
        return self.filters

    def build(self, input_shape):
        if len(input_shape) != self.rank + 2:
            raise ValueError(f'Layer "{self.name}" expects inputs of rank {self.rank + 2}. '
                             f"Received: input_shape={tuple(input_shape)}")
        c = self._in_channels(input_shape)
        self.kernel = self.add_weight("kernel", self._kernel_shape(c), self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = (self.add_weight("bias", [self._bias_size()], self.bias_initializer,
                                     regularizer=self.bias_regularizer,
                                     constraint=self.bias_constraint)
                     if self.use_bias else None)
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis(): c})

    def _convolve(self, x):
        if self.rank == 1:
            pad = self.padding.upper()
            if self.padding == "causal":
                pad = [(self.kernel_size[0] - 1) * self.dilation_rate[0], 0]
            return nn_ops.conv1d(x, self.kernel, stride=self.strides[0], padding=pad,
                                 dilations=self.dilation_rate[0], groups=self.groups)
        if self.rank == 3:
            return nn_3d_ops.conv3d(x, self.kernel, strides=self.strides,
                                    padding=self.padding.upper(),
                                    dilations=self.dilation_rate, groups=self.groups)
        return nn_ops.conv2d(x, self.kernel, strides=self.strides, padding=self.padding.upper(),
                             dilations=self.dilation_rate, groups=self.groups)

    def call(self, inputs):
        x = inputs if inputs.dtype == self.dtype else math_ops.cast(inputs, self.dtype)
        x = to_channels_last(x, self.data_format)
        y = self._convolve(x)
        if self.bias is not None:
            y = nn_ops.bias_add(y, self.bias)
        y = self.activation(y)
        return to_channels_first(y, self.data_format)

    def _spatial_out(self, spatial):
        return tuple(conv_output_length(d, k, self.padding, s, r) for d, k, s, r in
                     zip(spatial, self.kernel_size, self.strides, self.dilation_rate))

    def _out_channels(self, in_channels):
        return self.filters

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        if self.data_format == "channels_last":
            spatial, c = input_shape[1:-1], input_shape[-1]
            return (input_shape[0],) + self._spatial_out(spatial) + (self._out_channels(c),)
        spatial, c = input_shape[2:], input_shape[1]
        return (input_shape[0], self._out_channels(c)) + self._spatial_out(spatial)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "groups": self.groups,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class Conv1D(BaseConv):
    """1-D convolution over ``[batch, steps, channels]`` (temporal convolution).

    ``padding="causal"`` pads only on the left, so output t sees inputs <= t (WaveNet).
    Output shape ``[batch, new_steps, filters]``.
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True, **kwargs):
        super().__init__(1, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, groups=groups,
                         activation=activation, use_bias=use_bias, **kwargs)


class Conv2D(BaseConv):
    """2-D convolution over ``[batch, height, width, channels]`` images.

    Output shape ``[batch, new_h, new_w, filters]``; "same": ``ceil(size / stride)``,
    "valid": ``ceil((size - (k - 1) * dilation) / stride)``.
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True, **kwargs):
        super().__init__(2, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, groups=groups,
                         activation=activation, use_bias=use_bias, **kwargs)


class Conv3D(BaseConv):
    """3-D convolution over ``[batch, depth, height, width, channels]`` volumes.

    Output shape ``[batch, new_d, new_h, new_w, filters]`` (sizes as `Conv2D`); the
    kernel is ``[kd, kh, kw, in_channels / groups, filters]``.
    """

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1, 1), groups=1, activation=None,
                 use_bias=True, **kwargs):
        super().__init__(3, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, groups=groups,
                         activation=activation, use_bias=use_bias, **kwargs)


class DepthwiseConv2D(BaseConv):
    """Depthwise 2-D convolution: each input channel is convolved with its own
    `depth_multiplier` filters; output channels ``in_channels * depth_multiplier``
    (channel ``c * depth_multiplier + m``).

    Args:
      kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias: as
        `Conv2D`.
      depth_multiplier: filters per input channel.
      depthwise_initializer, depthwise_regularizer, depthwise_constraint: for the
        kernel ``[kh, kw, in_channels, depth_multiplier]``.
    """

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        if not isinstance(depth_multiplier, int) or depth_multiplier <= 0:
            raise ValueError("Invalid value for argument `depth_multiplier`. Expected a "
                             f"strictly positive value. Received depth_multiplier="
                             f"{depth_multiplier}.")
        super().__init__(2, None, kernel_size, strides=strides, padding=padding,
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
        return nn_ops.depthwise_conv2d(x, self.kernel, strides=self.strides,
                                       padding=self.padding.upper(),
                                       dilations=self.dilation_rate)

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


class BaseConvTranspose(BaseConv):
    """Transposed N-D convolution (N = 1, 2 or 3; "deconvolution"): the gradient of a
    convolution with respect to its input, used to upsample.

    Output size per spatial axis: "same": ``size * stride``; "valid":
    ``size * stride + max(k_eff - stride, 0)``; with `output_padding` p:
    ``(size - 1) * stride + k_eff - 2 * pad + p`` (pad = k_eff // 2 for "same").
    The kernel is ``[*kernel_size, filters, in_channels]``.

    Args:
      output_padding: None, an int or `rank` ints, each smaller than the stride.
      (others as `BaseConv`; `groups` is not supported).
    """

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid",
                 output_padding=None, data_format=None, dilation_rate=1, activation=None,
                 use_bias=True, **kwargs):
        super().__init__(rank, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias, **kwargs)
        self.output_padding = None if output_padding is None else normalize_tuple(
            output_padding, rank, "output_padding", allow_zero=True)
        if self.output_padding is not None:
            for p, s in zip(self.output_padding, self.strides):
                if p >= s:
                    raise ValueError("Strides must be greater than output padding. Received "
                                     f"strides={self.strides}, output_padding="
                                     f"{self.output_padding}.")

    def _kernel_shape(self, in_channels):
        return self.kernel_size + (self.filters, in_channels)

    def _spatial_out(self, spatial):
        ops_ = self.output_padding or (None,) * self.rank
        return tuple(deconv_output_length(d, k, self.padding, p, s, r) for d, k, p, s, r in
                     zip(spatial, self.kernel_size, ops_, self.strides, self.dilation_rate))

    def _convolve(self, x):
        out_shape = None
        if self.output_padding is not None:
            spatial = x.shape.as_list()[1:1 + self.rank]
            out_shape = (None,) + self._spatial_out(spatial) + (self.filters,)
        fn = {1: nn_3d_ops.conv1d_transpose, 2: nn_ops.conv2d_transpose,
              3: nn_3d_ops.conv3d_transpose}[self.rank]
        return fn(x, self.kernel, output_shape=out_shape, strides=self.strides,
                  padding=self.padding.upper(), dilations=self.dilation_rate)

    def get_config(self):
        cfg = super().get_config()
        cfg.pop("groups")
        cfg["output_padding"] = self.output_padding
        return cfg


class Conv1DTranspose(BaseConvTranspose):
    """Transposed 1-D convolution of ``[batch, steps, channels]``; the kernel is
    ``[k, filters, in_channels]``; output ``[batch, new_steps, filters]`` (sizes as
    `BaseConvTranspose`)."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True, **kwargs):
        super().__init__(1, filters, kernel_size, strides=strides, padding=padding,
                         output_padding=output_padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation,
                         use_bias=use_bias, **kwargs)


class Conv2DTranspose(BaseConvTranspose):
    """Transposed 2-D convolution of ``[batch, h, w, channels]``; the kernel is
    ``[kh, kw, filters, in_channels]``; output ``[batch, new_h, new_w, filters]`` (sizes
    as `BaseConvTranspose`)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1), activation=None,
                 use_bias=True, **kwargs):
        super().__init__(2, filters, kernel_size, strides=strides, padding=padding,
                         output_padding=output_padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation,
                         use_bias=use_bias, **kwargs)


class Conv3DTranspose(BaseConvTranspose):
    """Transposed 3-D convolution of ``[batch, d, h, w, channels]``; the kernel is
    ``[kd, kh, kw, filters, in_channels]``; output ``[batch, new_d, new_h, new_w,
    filters]`` (sizes as `BaseConvTranspose`)."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1, 1),
                 activation=None, use_bias=True, **kwargs):
        super().__init__(3, filters, kernel_size, strides=strides, padding=padding,
                         output_padding=output_padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation,
                         use_bias=use_bias, **kwargs)


Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D
Convolution1DTranspose, Convolution2DTranspose = Conv1DTranspose, Conv2DTranspose
Convolution3DTranspose = Conv3DTranspose
