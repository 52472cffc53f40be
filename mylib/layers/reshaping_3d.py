"""`UpSampling3D`: repeats the voxels of a volume (Keras 3's layer)."""

from __future__ import annotations

from mylib.core.ops import array_ops
from mylib.layers.base import InputSpec, Layer
from mylib.layers.convolutional import normalize_data_format, normalize_tuple, \
    to_channels_first, to_channels_last


class UpSampling3D(Layer):
    """Repeats each voxel of ``[batch, depth, height, width, channels]`` `size` times
    along the three spatial axes (nearest-neighbour upsampling).

    Args:
      size: int or 3 ints, the factors for depth, height and width.
      data_format: "channels_last" (default) or "channels_first".

    Output ``[batch, d * size[0], h * size[1], w * size[2], channels]``, the input's
    dtype; the spatial sizes must be known.
    """

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.size = normalize_tuple(size, 3, "size")
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=5)

    def call(self, inputs):
        x = to_channels_last(inputs, self.data_format)
        d, h, w, c = x.shape.as_list()[1:]
        if None in (d, h, w, c):
            raise ValueError(f'Layer "{self.name}" needs known spatial sizes and channels. '
                             f"Received: input shape {tuple(inputs.shape.as_list())}")
        a, b, e = self.size
        y = array_ops.reshape(x, [-1, d, 1, h, 1, w, 1, c])
        y = array_ops.tile(y, [1, 1, a, 1, b, 1, e, 1])
        y = array_ops.reshape(y, [-1, d * a, h * b, w * e, c])
        return to_channels_first(y, self.data_format)

    def compute_output_shape(self, input_shape):
        s = list(input_shape)
        first = 1 if self.data_format == "channels_last" else 2
        for i, f in enumerate(self.size):
            s[first + i] = None if s[first + i] is None else s[first + i] * f
        return tuple(s)

    def get_config(self):
        return {**super().get_config(), "size": self.size, "data_format": self.data_format}
