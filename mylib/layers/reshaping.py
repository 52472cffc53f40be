"""Spatial reshaping layers: `ZeroPadding1D/2D`, `Cropping1D/2D`, `UpSampling1D/2D`."""

from __future__ import annotations

from mylib.core.ops import array_ops, nn_ops
from mylib.layers.base import InputSpec, Layer
from mylib.layers.convolutional import normalize_data_format, to_channels_first, \
    to_channels_last


def _pairs(value, n, name):
    """`value` as n (before, after) pairs: int -> symmetric everywhere, n ints -> each
    axis symmetric, n pairs as given (Keras's argument forms)."""
    if isinstance(value, int):
        out = ((value, value),) * n
    else:
        value = tuple(value)
        if len(value) != n:
            raise ValueError(f"`{name}` should have {n} elements. Received: {name}={value!r}")
        out = tuple((v, v) if isinstance(v, int) else tuple(int(a) for a in v) for v in value)
    if any(len(p) != 2 or min(p) < 0 for p in out):
        raise ValueError(f"`{name}` should hold non-negative ints or pairs of them. "
                         f"Received: {name}={value!r}")
    return out


def _one_axis(value):
    """int, (before, after) or ((before, after),) -> ((before, after),)."""
    if isinstance(value, int):
        return ((value, value),)
    value = tuple(value)
    return value if len(value) == 1 else (value,)


def _spatial(shape, data_format):
    return (1, len(shape) - 1) if data_format == "channels_last" else (2, len(shape))


class _Spatial(Layer):
    _rank = 2

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def compute_output_shape(self, input_shape):
        s = list(input_shape)
        lo, hi = _spatial(s, self.data_format)
        for i, a in enumerate(range(lo, hi)):
            s[a] = None if s[a] is None else self._size(s[a], i)
        return tuple(s)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class ZeroPadding2D(_Spatial):
    """Pads height and width with zeros.

    Args:
      padding: int (all sides), (h, w) (symmetric), or ((top, bottom), (left, right)).
    """

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.padding = _pairs(padding, self._rank, "padding")

    def _size(self, d, i):
        return d + sum(self.padding[i])

    def call(self, inputs):
        pads = [(0, 0)] + list(self.padding) + [(0, 0)]
        if self.data_format == "channels_first":
            pads = [(0, 0), (0, 0)] + list(self.padding)
        return array_ops.pad(inputs, pads)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding}


class ZeroPadding1D(ZeroPadding2D):
    """Pads the steps of ``[batch, steps, channels]`` with zeros: int or (left, right)."""
    _rank = 1

    def __init__(self, padding=1, data_format=None, **kwargs):
        padding = _one_axis(padding)
        super().__init__(padding, data_format, **kwargs)


class Cropping2D(_Spatial):
    """Removes rows and columns at the borders.

    Args:
      cropping: int, (h, w) (symmetric), or ((top, bottom), (left, right)).
    """

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.cropping = _pairs(cropping, self._rank, "cropping")

    def _size(self, d, i):
        out = d - sum(self.cropping[i])
        if out <= 0:
            raise ValueError(f'Layer "{self.name}": cropping {self.cropping} leaves nothing of '
                             f"an axis of size {d}.")
        return out

    def call(self, inputs):
        self.compute_output_shape(tuple(inputs.shape.as_list()))  # raises if over-cropped
        idx = [slice(None)] * inputs.shape.rank
        lo, _ = _spatial(inputs.shape.as_list(), self.data_format)
        for i, (a, b) in enumerate(self.cropping):
            idx[lo + i] = slice(a, -b if b else None)
        return inputs[tuple(idx)]

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping}


class Cropping1D(Cropping2D):
    """Removes steps at the ends of ``[batch, steps, channels]``: int or (left, right)."""
    _rank = 1

    def __init__(self, cropping=(1, 1), data_format=None, **kwargs):
        cropping = _one_axis(cropping)
        super().__init__(cropping, data_format, **kwargs)


class UpSampling2D(_Spatial):
    """Repeats rows and columns `size` times ("nearest"), or resizes bilinearly
    (half-pixel centres, as Keras 3's `ops.image.resize`).

    Requires known height and width.
    """

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(data_format, **kwargs)
        self.size = (size, size) if isinstance(size, int) else tuple(int(s) for s in size)
        if interpolation not in ("nearest", "bilinear", "bicubic", "lanczos3", "lanczos5"):
            raise ValueError("`interpolation` must be one of 'nearest', 'bilinear', "
                             f"'bicubic', 'lanczos3', 'lanczos5'. Received: {interpolation!r}")
        self.interpolation = interpolation

    def _size(self, d, i):
        return d * self.size[i]

    def call(self, inputs):
        x = to_channels_last(inputs, self.data_format)
        h, w = x.shape.as_list()[1:3]
        if h is None or w is None:
            raise ValueError(f'Layer "{self.name}" needs known height and width. Received: '
                             f"input shape {tuple(inputs.shape.as_list())}")
        y = nn_ops.resize_images(x, (h * self.size[0], w * self.size[1]),
                                 method=self.interpolation)
        return to_channels_first(y, self.data_format)

    def get_config(self):
        return {**super().get_config(), "size": self.size, "interpolation": self.interpolation}


class UpSampling1D(Layer):
    """Repeats each step of ``[batch, steps, channels]`` `size` times."""

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = int(size)
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        x = array_ops.expand_dims(inputs, 1)
        steps = inputs.shape.as_list()[1]
        if steps is None:
            raise ValueError(f'Layer "{self.name}" needs a known number of steps.')
        y = nn_ops.resize_images(x, (1, steps * self.size), method="nearest")
        return array_ops.squeeze(y, [1])

    def compute_output_shape(self, input_shape):
        s = tuple(input_shape)
        return (s[0], None if s[1] is None else s[1] * self.size, s[2])

    def get_config(self):
        return {**super().get_config(), "size": self.size}
