"""Pooling layers: `MaxPooling1D/2D`, `AveragePooling1D/2D`,
`GlobalAveragePooling1D/2D`, `GlobalMaxPooling1D/2D` (Keras 3's arguments)."""

from __future__ import annotations

from mylib.core.ops import nn_ops, reduction_ops
from mylib.layers.base import InputSpec, Layer
from mylib.layers.convolutional import conv_output_length, normalize_data_format, \
    normalize_padding, normalize_tuple, to_channels_first, to_channels_last


class BasePooling(Layer):
    """Pooling over windows of `pool_size`, moved by `strides` (default: `pool_size`).

    Args:
      pool_size: int or `rank` ints.
      strides: int, `rank` ints, or None (= `pool_size`).
      padding: "valid" or "same" ("same" average windows count real elements only).
      data_format: "channels_last" (default) or "channels_first".
    """

    _rank = 2
    _mode = "max"

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        n = self._rank
        self.pool_size = normalize_tuple(pool_size, n, "pool_size")
        self.strides = self.pool_size if strides is None else normalize_tuple(strides, n,
                                                                              "strides")
        self.padding = normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=n + 2)

    def call(self, inputs):
        x = to_channels_last(inputs, self.data_format)
        pad = self.padding.upper()
        if self._rank == 1:
            fn = nn_ops.max_pool1d if self._mode == "max" else nn_ops.avg_pool1d
            y = fn(x, self.pool_size[0], self.strides[0], pad)
        else:
            fn = nn_ops.max_pool if self._mode == "max" else nn_ops.avg_pool
            y = fn(x, self.pool_size, self.strides, pad)
        return to_channels_first(y, self.data_format)

    def compute_output_shape(self, input_shape):
        s = tuple(input_shape)
        spatial = s[1:-1] if self.data_format == "channels_last" else s[2:]
        out = tuple(conv_output_length(d, k, self.padding, st) for d, k, st in
                    zip(spatial, self.pool_size, self.strides))
        if self.data_format == "channels_last":
            return (s[0],) + out + (s[-1],)
        return (s[0], s[1]) + out

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


class MaxPooling1D(BasePooling):
    """Max over windows of a ``[batch, steps, channels]`` input."""
    _rank, _mode = 1, "max"


class AveragePooling1D(BasePooling):
    """Mean over windows of a ``[batch, steps, channels]`` input."""
    _rank, _mode = 1, "avg"


class MaxPooling2D(BasePooling):
    """Max over windows of a ``[batch, height, width, channels]`` input; output
    ``[batch, new_h, new_w, channels]``."""

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling2D(MaxPooling2D):
    """Mean over windows of a ``[batch, height, width, channels]`` input."""
    _mode = "avg"


class BaseGlobalPooling(Layer):
    """Mean or max over all spatial axes: ``[batch, *spatial, channels] -> [batch,
    channels]`` (``keepdims=True`` keeps the spatial axes as size 1)."""

    _rank = 2
    _mode = "avg"

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def _axes(self):
        n = self._rank
        return list(range(1, n + 1)) if self.data_format == "channels_last" else \
            list(range(2, n + 2))

    def call(self, inputs):
        fn = reduction_ops.reduce_mean if self._mode == "avg" else reduction_ops.reduce_max
        return fn(inputs, self._axes(), keepdims=self.keepdims)

    def compute_output_shape(self, input_shape):
        s = list(input_shape)
        axes = self._axes()
        if self.keepdims:
            return tuple(1 if i in axes else d for i, d in enumerate(s))
        return tuple(d for i, d in enumerate(s) if i not in axes)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


class GlobalAveragePooling1D(BaseGlobalPooling):
    """Mean over the steps of ``[batch, steps, channels]``."""
    _rank, _mode = 1, "avg"


class GlobalMaxPooling1D(BaseGlobalPooling):
    """Max over the steps of ``[batch, steps, channels]``."""
    _rank, _mode = 1, "max"


class GlobalAveragePooling2D(BaseGlobalPooling):
    """Mean over height and width of ``[batch, h, w, channels]``."""
    _rank, _mode = 2, "avg"


class GlobalMaxPooling2D(BaseGlobalPooling):
    """Max over height and width of ``[batch, h, w, channels]``."""
    _rank, _mode = 2, "max"


MaxPool1D, MaxPool2D = MaxPooling1D, MaxPooling2D
AvgPool1D, AvgPool2D = AveragePooling1D, AveragePooling2D
GlobalAvgPool1D, GlobalAvgPool2D = GlobalAveragePooling1D, GlobalAveragePooling2D
GlobalMaxPool1D, GlobalMaxPool2D = GlobalMaxPooling1D, GlobalMaxPooling2D
