"""Pooling layers: `MaxPooling1D/2D/3D`, `AveragePooling1D/2D/3D`,
`GlobalAveragePooling1D/2D/3D`, `GlobalMaxPooling1D/2D/3D`, `AdaptiveAveragePooling1D/2D/3D`,
`AdaptiveMaxPooling1D/2D/3D` (Keras 3's arguments)."""

from __future__ import annotations

from mylib.core.ops import array_ops, constant_ops, math_ops, nn_3d_ops, nn_ops, \
    reduction_ops
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
        elif self._rank == 3:
            fn = nn_3d_ops.max_pool3d if self._mode == "max" else nn_3d_ops.avg_pool3d
            y = fn(x, self.pool_size, self.strides, pad)
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


class MaxPooling3D(BasePooling):
    """Max over windows of a ``[batch, depth, height, width, channels]`` input; output
    ``[batch, new_d, new_h, new_w, channels]``."""

    _rank = 3

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling3D(MaxPooling3D):
    """Mean over windows of a ``[batch, depth, height, width, channels]`` input ("same"
    windows average their real elements only)."""
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

    def call(self, inputs, mask=None):
        if mask is not None and self._rank == 1:
            return self._masked(inputs, mask)
        fn = reduction_ops.reduce_mean if self._mode == "avg" else reduction_ops.reduce_max
        return fn(inputs, self._axes(), keepdims=self.keepdims)

    def _masked(self, inputs, mask):
        """Keras's masked pooling over the steps: the mean over the valid steps, or the
        max over them (a sequence with no valid step pools to 0, not NaN / -inf)."""
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        steps = 1 if self.data_format == "channels_last" else 2
        m = array_ops.expand_dims(math_ops.cast(mask, "bool"), 2 if steps == 1 else 1)
        count = reduction_ops.reduce_sum(math_ops.cast(m, inputs.dtype), steps,
                                         keepdims=self.keepdims)
        if self._mode == "avg":
            total = reduction_ops.reduce_sum(
                array_ops.where(m, inputs, constant_ops.zeros_like(inputs)), steps,
                keepdims=self.keepdims)
            return total / math_ops.maximum(count, constant_ops.ones_like(count))
        lowest = constant_ops.fill(array_ops.shape(inputs),
                                   constant_ops.constant(inputs.dtype.min, dtype=inputs.dtype))
        best = reduction_ops.reduce_max(array_ops.where(m, inputs, lowest), steps,
                                        keepdims=self.keepdims)
        return array_ops.where(math_ops.greater(count, 0.0), best,
                               constant_ops.zeros_like(best))

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
    """Mean over the steps of ``[batch, steps, channels]``; with a mask (e.g. from
    `Embedding(mask_zero=True)`), the mean over the unmasked steps only."""
    _rank, _mode = 1, "avg"


class GlobalMaxPooling1D(BaseGlobalPooling):
    """Max over the steps of ``[batch, steps, channels]``; with a mask, the max over
    the unmasked steps only."""
    _rank, _mode = 1, "max"


class GlobalAveragePooling2D(BaseGlobalPooling):
    """Mean over height and width of ``[batch, h, w, channels]``."""
    _rank, _mode = 2, "avg"


class GlobalMaxPooling2D(BaseGlobalPooling):
    """Max over height and width of ``[batch, h, w, channels]``."""
    _rank, _mode = 2, "max"


class GlobalAveragePooling3D(BaseGlobalPooling):
    """Mean over depth, height and width of ``[batch, d, h, w, channels]``."""
    _rank, _mode = 3, "avg"


class GlobalMaxPooling3D(BaseGlobalPooling):
    """Max over depth, height and width of ``[batch, d, h, w, channels]``."""
    _rank, _mode = 3, "max"


MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D
GlobalAvgPool1D, GlobalAvgPool2D = GlobalAveragePooling1D, GlobalAveragePooling2D
GlobalMaxPool1D, GlobalMaxPool2D = GlobalMaxPooling1D, GlobalMaxPooling2D
GlobalAvgPool3D, GlobalMaxPool3D = GlobalAveragePooling3D, GlobalMaxPooling3D


# ---------------------------------------------------------------- adaptive pooling
def adaptive_windows(length, out):
    """The windows ``[(start, end), ...]`` of adaptive pooling of an axis of `length`
    into `out` cells: cell i covers ``floor(i * length / out)`` to ``ceil((i + 1) *
    length / out)`` (PyTorch's and Keras 3's rule; windows overlap when `length` is not a
    multiple of `out`)."""
    return [((i * length) // out, -(-((i + 1) * length) // out)) for i in range(out)]


class BaseAdaptivePooling(Layer):
    """Pools each spatial axis into a fixed number of cells, whatever its length (Keras
    3's adaptive pooling layers).

    Args:
      output_size: int or `rank` ints, the cells per spatial axis.
      data_format: ``"channels_last"`` (default) or ``"channels_first"``.
    Input ``[batch, *spatial, channels]`` (static spatial sizes); output ``[batch,
    *output_size, channels]`` (channels-first alike), in the input's dtype.
    Raises:
      ValueError: bad `output_size`, or spatial sizes unknown when built.
    """

    _rank = 2
    _max = False

    def __init__(self, output_size, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.output_size = normalize_tuple(output_size, self._rank, "output_size")
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def _pool_axis(self, x, axis, out):
        length = x.shape[axis]
        if length is None:
            raise ValueError(f'Layer "{self.name}": adaptive pooling needs static spatial '
                             f"sizes. Received: input_shape={tuple(x.shape.as_list())}")
        cells = []
        for start, end in adaptive_windows(int(length), out):
            idx = [slice(None)] * x.shape.rank
            idx[axis] = slice(start, end)
            part = x[tuple(idx)]
            reduce = reduction_ops.reduce_max if self._max else reduction_ops.reduce_mean
            cells.append(reduce(part, axis=axis, keepdims=True))
        return cells[0] if len(cells) == 1 else array_ops.concat(cells, axis=axis)

    def call(self, inputs):
        x = to_channels_last(inputs, self.data_format)
        for i, out in enumerate(self.output_size):
            x = self._pool_axis(x, 1 + i, out)
        return to_channels_first(x, self.data_format)

    def compute_output_shape(self, input_shape):
        if self.data_format == "channels_last":
            return (input_shape[0], *self.output_size, input_shape[-1])
        return (input_shape[0], input_shape[1], *self.output_size)

    def get_config(self):
        return {**super().get_config(), "output_size": self.output_size,
                "data_format": self.data_format}


class AdaptiveAveragePooling1D(BaseAdaptivePooling):
    """Adaptive average pooling of ``[batch, steps, channels]`` into `output_size`
    steps (see `BaseAdaptivePooling`)."""
    _rank = 1


class AdaptiveAveragePooling2D(BaseAdaptivePooling):
    """Adaptive average pooling of ``[batch, rows, cols, channels]`` into `output_size`
    (see `BaseAdaptivePooling`)."""
    _rank = 2


class AdaptiveAveragePooling3D(BaseAdaptivePooling):
    """Adaptive average pooling of 3 spatial axes (see `BaseAdaptivePooling`)."""
    _rank = 3


class AdaptiveMaxPooling1D(BaseAdaptivePooling):
    """Adaptive max pooling of ``[batch, steps, channels]`` (see
    `BaseAdaptivePooling`)."""
    _rank, _max = 1, True


class AdaptiveMaxPooling2D(BaseAdaptivePooling):
    """Adaptive max pooling of ``[batch, rows, cols, channels]`` (see
    `BaseAdaptivePooling`)."""
    _rank, _max = 2, True


class AdaptiveMaxPooling3D(BaseAdaptivePooling):
    """Adaptive max pooling of 3 spatial axes (see `BaseAdaptivePooling`)."""
    _rank, _max = 3, True
