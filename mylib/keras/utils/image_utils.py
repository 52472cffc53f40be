"""Keras 3's image file helpers: `load_img`, `save_img`, `img_to_array`, `array_to_img`.

They work on PIL images and numpy arrays, outside any graph. PIL (the ``pillow``
package) is optional: ``pip install 'mylib[image]'``.
"""

from __future__ import annotations

import io
import pathlib
import warnings

import numpy as np

from mylib import _optional

__all__ = ["img_to_array", "array_to_img", "load_img", "save_img"]

_INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def _pil(feature):
    return _optional.require("PIL.Image", feature, "image", package="pillow")


def _data_format(data_format):
    if data_format is None:
        from mylib.keras.backend import image_data_format

        return image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("The `data_format` argument must be one of 'channels_first', "
                         f"'channels_last'. Received: data_format={data_format!r}")
    return data_format


def _floatx(dtype):
    if dtype is None:
        from mylib.keras.backend import floatx

        return floatx()
    return dtype


def img_to_array(img, data_format=None, dtype=None):
    """A PIL image (or anything `numpy.asarray` takes) as a rank-3 array, as Keras 3.

    Args:
      img: a PIL image ``(width, height)`` in modes such as ``"RGB"``, ``"RGBA"``,
        ``"L"``; or an array ``[height, width]`` / ``[height, width, channels]``.
      data_format: ``"channels_last"`` (default) or ``"channels_first"``.
      dtype: the array's dtype (default ``floatx()``, float32). Pixel values are
        kept as they are (0-255 for 8-bit images), not rescaled.
    Returns:
      ``[height, width, channels]`` (``[channels, height, width]`` channels-first); a
      grayscale image gets one channel.
    Raises:
      ValueError: an array of another rank, or an unknown `data_format`.
    """
    data_format = _data_format(data_format)
    x = np.asarray(img, dtype=_floatx(dtype))
    if x.ndim == 3:
        return x.transpose(2, 0, 1) if data_format == "channels_first" else x
    if x.ndim == 2:
        return x[None] if data_format == "channels_first" else x[..., None]
    raise ValueError(f"Unsupported image shape: {x.shape}")


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A rank-3 array as a PIL image, as Keras 3.

    Args:
      x: ``[height, width, channels]`` (``[channels, height, width]`` channels-first)
        with 1, 3 or 4 channels: modes ``"L"`` (``"I"``, 32-bit, where values exceed
        255), ``"RGB"``, ``"RGBA"``.
      data_format: ``"channels_last"`` (default) or ``"channels_first"``.
      scale: rescale the values linearly so that their minimum is 0 and maximum 255
        (default True); otherwise they are cast to uint8 as they are.
      dtype: the float type the values are converted to first (default ``floatx()``).
    Returns:
      A ``PIL.Image.Image``.
    Raises:
      ValueError: `x` not of rank 3, or another number of channels.
      ImportError: PIL is not installed (``pip install 'mylib[image]'``).
    """
    data_format = _data_format(data_format)
    image = _pil("keras.utils.array_to_img")
    x = np.array(x, dtype=_floatx(dtype))
    if x.ndim != 3:
        raise ValueError("Expected image array to have rank 3 (single image). Got array "
                         f"with shape: {x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        x_max = np.max(x)
        if x_max != 0:
            x /= x_max
        x *= 255
    channels = x.shape[2]
    if channels in (3, 4):
        return image.fromarray(x.astype("uint8"), "RGB" if channels == 3 else "RGBA")
    if channels == 1:
        if np.max(x) > 255:
            return image.fromarray(x[:, :, 0].astype("int32"), "I")
        return image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"Unsupported channel number: {channels}")


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Writes the rank-3 array `x` as an image file, through `array_to_img` and
    ``PIL.Image.save``, as Keras 3.

    Args:
      path: a file path (str or `pathlib.Path`) or a writable file object.
      x: the image array (see `array_to_img`).
      data_format: ``"channels_last"`` (default) or ``"channels_first"``.
      file_format: ``"png"``, ``"jpeg"`` (``"jpg"``), ...; default the path's suffix
        (required for a file object). An RGBA image saved as JPEG becomes RGB, with a
        warning.
      scale: as `array_to_img`.
      **kwargs: passed to ``PIL.Image.save`` (``quality=...``).
    Raises:
      ImportError: PIL is not installed (``pip install 'mylib[image]'``).
    """
    data_format = _data_format(data_format)
    if file_format is None and isinstance(path, (str, pathlib.Path)):
        file_format = pathlib.Path(path).suffix[1:].lower()
    if file_format and file_format.lower() == "jpg":
        file_format = "jpeg"
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and file_format == "jpeg":
        warnings.warn("The JPEG format does not support RGBA images, converting to RGB.",
                      stacklevel=2)
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest",
             keep_aspect_ratio=False):
    """Reads an image file as a PIL image, as Keras 3.

    Args:
      path: a file path (str, bytes or `pathlib.Path`) or an `io.BytesIO`.
      color_mode: ``"rgb"`` (default), ``"rgba"`` or ``"grayscale"`` (mode ``"L"``;
        16- and 32-bit grayscale files keep their mode).
      target_size: None (the file's size) or ``(height, width)`` in pixels.
      interpolation: the resampling filter when resizing: ``"nearest"`` (default),
        ``"bilinear"``, ``"bicubic"``, ``"hamming"``, ``"box"`` or ``"lanczos"``.
      keep_aspect_ratio: crop the largest centred box of the target's aspect ratio
        before resizing, instead of stretching.
    Returns:
      A ``PIL.Image.Image`` (use `img_to_array` for an array).
    Raises:
      ValueError: an unknown `color_mode` or `interpolation`.
      TypeError: `path` of another type.
      ImportError: PIL is not installed (``pip install 'mylib[image]'``).
    """
    image = _pil("keras.utils.load_img")
    if isinstance(path, io.BytesIO):
        img = image.open(path)
    elif isinstance(path, (pathlib.Path, bytes, str)):
        with open(path, "rb") as f:  # read whole: the file is closed on return
            img = image.open(io.BytesIO(f.read()))
    else:
        raise TypeError(f"path should be path-like or io.BytesIO, not {type(path)}")
    modes = {"grayscale": ("L", "I;16", "I"), "rgba": ("RGBA",), "rgb": ("RGB",)}
    if color_mode not in modes:
        raise ValueError('color_mode must be "grayscale", "rgb", or "rgba"')
    if img.mode not in modes[color_mode]:
        img = img.convert(modes[color_mode][0])
    if target_size is None:
        return img
    size = (int(target_size[1]), int(target_size[0]))  # PIL's (width, height)
    if img.size == size:
        return img
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"Invalid interpolation method {interpolation} specified. "
                         f"Supported methods are {', '.join(_INTERPOLATIONS)}")
    resample = getattr(image.Resampling, interpolation.upper())
    box = None
    if keep_aspect_ratio:
        width, height = img.size
        crop_h = min(height, (width * size[1]) // size[0])
        crop_w = min(width, (height * size[0]) // size[1])
        top, left = (height - crop_h) // 2, (width - crop_w) // 2
        box = [left, top, left + crop_w, top + crop_h]
    return img.resize(size, resample, box=box)
