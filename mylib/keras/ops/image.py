"""`keras.ops.image` (Keras 3): `resize` (bilinear / nearest, channels_last)."""

from __future__ import annotations

import jax

from mylib.keras.ops._dispatch import keras_op


@keras_op("images")
def _resize(images, size, interpolation="bilinear", antialias=False,
            data_format=None):
    if data_format == "channels_first":
        shape = images.shape[:-2] + tuple(size)
    else:
        shape = images.shape[:-3] + tuple(size) + images.shape[-1:]
    return jax.image.resize(images, shape, method=interpolation, antialias=antialias)


def resize(images, size, interpolation="bilinear", antialias=False, data_format=None,
           **kwargs):
    """`images` ``[batch, h, w, c]`` (or one image) resized to `size` ``(h, w)``."""
    return _resize(images, tuple(int(s) for s in size), interpolation, antialias,
                   data_format)


__all__ = ["resize"]
