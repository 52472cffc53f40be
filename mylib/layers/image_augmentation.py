"""Keras 3's image preprocessing and augmentation layers: `Resizing`, `CenterCrop`,
`RandomCrop`, `RandomFlip`, `RandomRotation`, `RandomZoom`, `RandomTranslation`,
`RandomContrast`, `RandomBrightness`.

Images are channels-last: batched ``[batch, height, width, channels]`` or single
``[height, width, channels]``. Everything is graph ops (resizes and crops are
`ResizeWithAspect` / `CropAtFraction`, rotations, zooms and translations one
`ImageProjectiveTransform`), so the layers run inside a model, in XLA, and on arrays.

The random layers augment only when called with ``training=True`` (as `fit` builds its
step); otherwise they are the identity and their graph holds no random ops. Keras 3
augments on a direct call with no `training` argument (its `call` defaults to
``training=True``); mylib does not, as for `Dropout`. Each training run of the graph
draws new values; with a `seed` (or a graph seed, `ml.set_random_seed`) a fresh
session replays the same sequence.
"""

from __future__ import annotations

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.ops import (array_ops, cast_ops, clip_ops, constant_ops, image_ops,
                            math_ops, random_ops, reduction_ops)
from mylib.core.ops.sequence_ops import reverse
from mylib.layers.base import Layer
from mylib.layers.convolutional import normalize_data_format

_INTERPOLATIONS = ("bilinear", "nearest")  # of the affine layers
_FILL_MODES = ("reflect", "wrap", "constant", "nearest")
_RESIZE_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "lanczos3", "lanczos5")


def _channels_last(data_format, owner):
    df = normalize_data_format(data_format)
    if df != "channels_last":
        raise ValueError(f"{owner} supports only data_format='channels_last' "
                         f"([batch, height, width, channels]). Received: "
                         f"data_format={data_format!r}")
    return df


def _as_batch(inputs, owner):
    """`(x [n, h, w, c], was_3d)`; raises unless rank 3 or 4."""
    rank = inputs.shape.rank
    if rank not in (3, 4):
        raise ValueError(f"{owner} expects images of rank 3 [height, width, channels] or "
                         f"4 [batch, height, width, channels]. Received: "
                         f"inputs.shape={inputs.shape}")
    return (array_ops.expand_dims(inputs, 0) if rank == 3 else inputs), rank == 3


def _float_dims(x):
    """Height and width of `x` [n, h, w, c] as Python floats, or float32 scalars read at
    run time where the graph does not know them (an array call on one image)."""
    dims = x.shape.as_list()[1:3]
    if None not in dims:
        return tuple(float(d) for d in dims)
    s = cast_ops.cast(array_ops.shape(x), _dtypes.float32)
    return s[1], s[2]


def _unbatch(x, was_3d):
    return array_ops.squeeze(x, [0]) if was_3d else x


def _batch_size(x):
    return array_ops.shape(x)[0:1]


def _ints(values):
    return constant_ops.constant(np.asarray(values, np.int32))


def _sized_shape(input_shape, height, width):
    s = list(input_shape)
    s[-3], s[-2] = height, width
    return tuple(s)


def _factor_pair(factor, bounds, what, owner):
    """Keras's `_set_factor`: a number f gives (max(-|f|, low), |f|), a pair is sorted;
    both checked against `bounds`."""
    msg = (f"{owner}: the `{what}` argument should be a number (or a list of two numbers) "
           f"in the range [{bounds[0]}, {bounds[1]}]. Received: {what}={factor}")
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2 or factor[0] > bounds[1] or factor[1] < bounds[0]:
            raise ValueError(msg)
        lower, upper = sorted(factor)
    elif isinstance(factor, (int, float, np.number)) and not isinstance(factor, bool):
        if factor < bounds[0] or factor > bounds[1]:
            raise ValueError(msg)
        factor = abs(factor)
        lower, upper = max(-factor, bounds[0]), factor
    else:
        raise ValueError(msg)
    return lower, upper


def _shift_factor_pair(factor, what, owner, allow_minus_one):
    """Keras's zoom / translation factor: a number f gives (-|f|, |f|), a pair is sorted;
    every value in [-1, 1] (zoom: above -1)."""
    msg = (f"{owner}: the `{what}` argument should be a number (or a list of two numbers) "
           f"in the range [-1.0, 1.0]{'' if allow_minus_one else ' (above -1.0)'}. "
           f"Received: {what}={factor}")

    def check(v):
        if v > 1.0 or v < -1.0 or (v == -1.0 and not allow_minus_one):
            raise ValueError(msg)

    if isinstance(factor, (tuple, list)):
        if len(factor) != 2:
            raise ValueError(msg)
        check(factor[0])
        check(factor[1])
        return tuple(sorted(factor))
    if isinstance(factor, (int, float, np.number)) and not isinstance(factor, bool):
        check(factor)
        return -abs(factor), abs(factor)
    raise ValueError(msg)


def _check_choice(value, allowed, what, owner):
    if value not in allowed:
        raise ValueError(f"{owner}: unknown `{what}` {value!r}. Expected one of {allowed}.")


class _ImageLayer(Layer):
    """Shared pieces: channels-last only, inputs cast to the compute dtype."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _channels_last(data_format, type(self).__name__)

    def _float(self, inputs):
        dt = self.compute_dtype
        return inputs if inputs.dtype == dt else cast_ops.cast(inputs, dt)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class Resizing(_ImageLayer):
    """Resizes images to ``(height, width)`` with `jax.image.resize` (half-pixel
    centres, as Keras 3 and TensorFlow 2's `tf.image.resize`).

    Args:
      height, width: ints, the output size.
      interpolation: "bilinear" (default), "nearest", "bicubic", "lanczos3", "lanczos5".
      crop_to_aspect_ratio: first crop the largest centred window with the output's
        aspect ratio (no distortion).
      pad_to_aspect_ratio: first pad the short side evenly with `fill_value` to the
        output's aspect ratio.
      fill_mode: "constant" only (for `pad_to_aspect_ratio`).
      fill_value: float, the padding value.
      antialias: must be False (mylib's resize does not antialias).
      data_format: "channels_last" (or None).

    Input: ``[batch, h, w, c]`` or ``[h, w, c]``, any numeric dtype; output:
    ``[batch, height, width, c]`` (or unbatched), in the input's dtype (integers are
    rounded and clipped to their range, as Keras 3).

    Raises:
      ValueError: an unknown interpolation, both aspect-ratio options, a fill mode
        other than "constant", ``antialias=True``, or channels-first data.
    """

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0,
                 antialias=False, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        _check_choice(interpolation, _RESIZE_INTERPOLATIONS, "interpolation", "Resizing")
        if fill_mode != "constant":
            raise ValueError("Invalid value for argument `fill_mode`. Only `'constant'` is "
                             f"supported. Received: fill_mode={fill_mode}")
        if crop_to_aspect_ratio and pad_to_aspect_ratio:
            raise ValueError("Only one of `pad_to_aspect_ratio` & `crop_to_aspect_ratio` "
                             "can be `True`.")
        if antialias:
            raise ValueError("Resizing: antialias=True is not supported (mylib's resize does "
                             "not antialias).")
        self.height, self.width = int(height), int(width)
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.pad_to_aspect_ratio = bool(pad_to_aspect_ratio)
        self.fill_mode, self.fill_value = fill_mode, fill_value
        self.antialias = False

    def call(self, inputs):
        x, was_3d = _as_batch(inputs, "Resizing")
        dt = x.dtype
        if not dt.is_floating:
            x = cast_ops.cast(x, _dtypes.float32)
        aspect = ("crop" if self.crop_to_aspect_ratio else
                  "pad" if self.pad_to_aspect_ratio else "stretch")
        y = image_ops.resize_with_aspect(x, (self.height, self.width), self.interpolation,
                                         aspect, self.fill_value)
        if not dt.is_floating:
            info = np.iinfo(dt.np)
            y = clip_ops.clip_by_value(math_ops.round(y), float(info.min), float(info.max))
            y = cast_ops.cast(y, dt)
        return _unbatch(y, was_3d)

    def compute_output_shape(self, input_shape):
        return _sized_shape(input_shape, self.height, self.width)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                "pad_to_aspect_ratio": self.pad_to_aspect_ratio, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "antialias": self.antialias}


class CenterCrop(_ImageLayer):
    """The centred ``(height, width)`` window of each image; an image smaller than that
    on either side is instead cropped to the output's aspect ratio and resized
    (bilinear), as Keras 3's `smart_resize`.

    Input: ``[batch, h, w, c]`` or ``[h, w, c]``; output: ``[batch, height, width, c]``
    (or unbatched), float32 (the layer's compute dtype).
    """

    def __init__(self, height, width, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.height, self.width = int(height), int(width)

    def call(self, inputs):
        x, was_3d = _as_batch(inputs, "CenterCrop")
        x = self._float(x)
        h, w = x.shape.as_list()[1:3]
        if h is not None and w is not None and h >= self.height and w >= self.width:
            top, left = (h - self.height) // 2, (w - self.width) // 2
            y = x[:, top:top + self.height, left:left + self.width, :]
        else:
            y = image_ops.resize_with_aspect(x, (self.height, self.width), aspect="center")
        return _unbatch(y, was_3d)

    def compute_output_shape(self, input_shape):
        return _sized_shape(input_shape, self.height, self.width)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width}


class RandomCrop(_ImageLayer):
    """In training, a ``(height, width)`` window at a random offset, one offset for the
    whole batch (as Keras 3); at inference the centred aspect-ratio crop resized to
    ``(height, width)`` (Keras's `smart_resize`, bilinear).

    In training, an image not larger than the window on both sides gets Keras 3's
    fallback: the ``(height, width)`` window at the aspect-ratio crop's corner, resized
    (bilinear) if it is smaller.

    Args:
      height, width: ints, the output size.
      seed: int, op seed for the offsets.
      data_format: "channels_last" (or None).

    Input: ``[batch, h, w, c]`` or ``[h, w, c]``; output: ``[batch, height, width, c]``
    (or unbatched), float32.

    Differs from Keras 3: Keras 3.15 returns the input unchanged at inference (not of
    the declared output shape, and in its own dtype); mylib resizes as Keras 2 did, so
    a model's inference output has the shape its graph declares.
    """

    def __init__(self, height, width, seed=None, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.height, self.width, self.seed = int(height), int(width), seed

    def call(self, inputs, training=None):
        x, was_3d = _as_batch(inputs, "RandomCrop")
        x = self._float(x)
        size = (self.height, self.width)
        if not training:
            y = image_ops.resize_with_aspect(x, size, aspect="crop")
        else:
            u = random_ops.random_uniform([2], seed=self.seed)
            y = image_ops.crop_at_fraction(x, u, size)
        return _unbatch(y, was_3d)

    def compute_output_shape(self, input_shape):
        return _sized_shape(input_shape, self.height, self.width)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "seed": self.seed}


_FLIP_MODES = ("horizontal", "vertical", "horizontal_and_vertical")


class RandomFlip(_ImageLayer):
    """In training, flips each image with probability 1/2: left-right
    ("horizontal"), upside down ("vertical"), or both at once
    ("horizontal_and_vertical", the default: one draw per image decides both flips, a
    half turn, as Keras 3 does). The identity at inference.

    Args:
      mode: "horizontal", "vertical" or "horizontal_and_vertical".
      seed: int, op seed.
      data_format: "channels_last" (or None).

    Input: ``[batch, h, w, c]`` or ``[h, w, c]``; output: the same shape, float32.
    """

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None,
                 **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        _check_choice(mode, _FLIP_MODES, "mode", "RandomFlip")
        self.mode, self.seed = mode, seed

    def call(self, inputs, training=None):
        x, was_3d = _as_batch(inputs, "RandomFlip")
        x = self._float(x)
        if not training:
            return _unbatch(x, was_3d)
        u = random_ops.random_uniform(_batch_size(x), seed=self.seed)
        flips = array_ops.reshape(math_ops.less_equal(u, 0.5), [-1, 1, 1, 1])
        if self.mode in ("horizontal", "horizontal_and_vertical"):
            x = array_ops.where(flips, reverse(x, [2]), x)
        if self.mode in ("vertical", "horizontal_and_vertical"):
            x = array_ops.where(flips, reverse(x, [1]), x)
        return _unbatch(x, was_3d)

    def get_config(self):
        return {**super().get_config(), "seed": self.seed, "mode": self.mode}


class _AffineLayer(_ImageLayer):
    """Random affine transforms sampled with `affine_transform`."""

    def __init__(self, fill_mode, interpolation, seed, fill_value, data_format, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        owner = type(self).__name__
        _check_choice(fill_mode, _FILL_MODES, "fill_mode", owner)
        _check_choice(interpolation, _INTERPOLATIONS, "interpolation", owner)
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.seed, self.fill_value = seed, fill_value

    def call(self, inputs, training=None):
        x, was_3d = _as_batch(inputs, type(self).__name__)
        x = self._float(x)
        if not training:
            return _unbatch(x, was_3d)
        t = self._transforms(_batch_size(x), *_float_dims(x))
        y = image_ops.affine_transform(x, t, self.interpolation, self.fill_mode,
                                       self.fill_value)
        return _unbatch(y, was_3d)

    def _transforms(self, n, h, w):
        """A float32 [n, 8] tensor of transform rows (see `affine_transform`) for
        images of height `h` and width `w` (floats or float32 scalars)."""
        raise NotImplementedError

    def get_config(self):
        return {**super().get_config(), "fill_mode": self.fill_mode,
                "interpolation": self.interpolation, "seed": self.seed,
                "fill_value": self.fill_value}


def _rows(cols):
    """[n, 8] from eight [n] tensors."""
    return array_ops.stack(cols, axis=1)


class RandomRotation(_AffineLayer):
    """In training, rotates each image about its centre by a random angle of ``factor
    * 360`` degrees, drawn uniformly from ``[lower, upper] * 360``; counter-clockwise
    for positive angles. The identity at inference.

    Args:
      factor: a float f (angles in ``[-f, f] * 360``) or a pair ``(lower, upper)``,
        all in [-1, 1]; e.g. 0.25 rotates by up to a quarter turn either way.
      fill_mode: "reflect" (default), "wrap", "constant", "nearest": how points
        outside the image are filled (see `affine_transform`).
      interpolation: "bilinear" (default) or "nearest".
      seed: int, op seed.
      fill_value: float, for ``fill_mode="constant"``.
      data_format: "channels_last" (or None).

    Input: ``[batch, h, w, c]`` or ``[h, w, c]``; output: the same shape, float32.
    """

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.factor = _factor_pair(factor, (-1, 1), "factor", "RandomRotation")

    def _transforms(self, n, h, w):
        lower, upper = self.factor[0] * 360.0, self.factor[1] * 360.0
        angle = random_ops.random_uniform(n, lower, upper, seed=self.seed)
        angle = angle * np.float32(np.pi / 180.0)
        cos, sin = math_ops.cos(angle), math_ops.sin(angle)
        cx, cy = 0.5 * (w - 1), 0.5 * (h - 1)
        zero = constant_ops.zeros_like(angle)
        # Keras 3's `_compute_affine_matrix` with no shear, scale or translation.
        a2 = cx - cx * cos + cy * sin
        b2 = cy - cx * sin - cy * cos
        return _rows([cos, -sin, a2, sin, cos, b2, zero, zero])

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class RandomZoom(_AffineLayer):
    """In training, zooms each image about its centre: an image axis is scaled by ``1 /
    (1 + z)``, ``z`` drawn uniformly from the factor's range (positive ``z`` zooms out,
    negative zooms in, as Keras 3). The identity at inference.

    Args:
      height_factor: a float f (``z`` in [-f, f]) or a pair ``(lower, upper)``, values in
        (-1, 1].
      width_factor: as `height_factor`, drawn independently; None (default) keeps the
        aspect ratio (the height's draw).
      fill_mode, interpolation, seed, fill_value, data_format: as `RandomRotation`.

    Input: ``[batch, h, w, c]`` or ``[h, w, c]``; output: the same shape, float32.
    """

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._height_range = _shift_factor_pair(height_factor, "height_factor",
                                                "RandomZoom", allow_minus_one=False)
        self._width_range = None if width_factor is None else _shift_factor_pair(
            width_factor, "width_factor", "RandomZoom", allow_minus_one=False)

    def _transforms(self, n, h, w):
        u = random_ops.random_uniform(array_ops.concat([n, _ints([2])], 0), seed=self.seed)
        (hl, hu) = self._height_range
        zy = 1.0 + hl + u[:, 0] * float(hu - hl)
        if self._width_range is None:
            zx = zy
        else:
            wl, wu = self._width_range
            zx = 1.0 + wl + u[:, 1] * float(wu - wl)
        zero = constant_ops.zeros_like(zy)
        return _rows([zx, zero, (w - 1) / 2.0 * (1.0 - zx), zero, zy,
                      (h - 1) / 2.0 * (1.0 - zy), zero, zero])

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class RandomTranslation(_AffineLayer):
    """In training, shifts each image by ``height_factor * height`` pixels down and
    ``width_factor * width`` pixels right, each drawn uniformly from its range. The
    identity at inference.

    Args:
      height_factor: a float f (a shift in ``[-f, f] * height``) or a pair ``(lower,
        upper)``, values in [-1, 1]; positive moves the image down.
      width_factor: the same for the width; positive moves the image right.
      fill_mode, interpolation, seed, fill_value, data_format: as `RandomRotation`.

    Input: ``[batch, h, w, c]`` or ``[h, w, c]``; output: the same shape, float32.
    """

    def __init__(self, height_factor, width_factor, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._height_range = _shift_factor_pair(height_factor, "height_factor",
                                                "RandomTranslation", allow_minus_one=True)
        self._width_range = _shift_factor_pair(width_factor, "width_factor",
                                               "RandomTranslation", allow_minus_one=True)

    def _transforms(self, n, h, w):
        u = random_ops.random_uniform(array_ops.concat([n, _ints([2])], 0), seed=self.seed)
        (hl, hu), (wl, wu) = self._height_range, self._width_range
        dy = (hl + u[:, 0] * float(hu - hl)) * h
        dx = (wl + u[:, 1] * float(wu - wl)) * w
        zero, one = constant_ops.zeros_like(dx), constant_ops.ones_like(dx)
        return _rows([one, zero, -dx, zero, one, -dy, zero, zero])

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class RandomContrast(_ImageLayer):
    """In training, ``(x - mean) * f + mean`` per image and channel (the mean over
    height and width), clipped to `value_range`, with ``f`` drawn uniformly from ``[1 -
    lower, 1 + upper]`` per image. The identity at inference.

    Args:
      factor: a float f in [0, 1] or a pair ``(lower, upper)``. As in Keras 3, a single
        float is stored as ``(0, f)``, so `f` only raises contrast (``[1, 1 + f]``);
        pass ``(f, f)`` for ``[1 - f, 1 + f]``.
      value_range: ``(low, high)`` of the pixel values (default (0, 255)).
      seed: int, op seed.

    Input: ``[batch, h, w, c]`` or ``[h, w, c]``; output: the same shape, float32.
    Differs from Keras 3: outputs are float32 at inference too (Keras returns integer
    inputs unchanged there).
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (0, 1), "factor", "RandomContrast")
        self.value_range, self.seed = value_range, seed

    def call(self, inputs, training=None):
        x, was_3d = _as_batch(inputs, "RandomContrast")
        x = self._float(x)
        if not training:
            return _unbatch(x, was_3d)
        n = array_ops.concat([_batch_size(x), _ints([1, 1, 1])], 0)
        f = random_ops.random_uniform(n, 1.0 - self.factor[0], 1.0 + self.factor[1],
                                      dtype=x.dtype, seed=self.seed)
        mean = reduction_ops.reduce_mean(x, [1, 2], keepdims=True)
        y = (x - mean) * f + mean
        y = clip_ops.clip_by_value(y, float(self.value_range[0]), float(self.value_range[1]))
        return _unbatch(y, was_3d)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range, "seed": self.seed}


class RandomBrightness(_ImageLayer):
    """In training, adds ``d * (high - low)`` to each image, ``d`` drawn uniformly from
    the factor's range per image, and clips to `value_range` ``(low, high)``. The
    identity at inference.

    Args:
      factor: a float f in [-1, 1] (``d`` in [-f, f]) or a pair ``(lower, upper)``.
      value_range: ``(low, high)`` of the pixel values (default (0, 255)).
      seed: int, op seed.

    Input: ``[batch, h, w, c]`` or ``[h, w, c]``; output: the same shape, float32.
    Differs from Keras 3: outputs are float32 (Keras keeps integer inputs' dtype).
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (-1, 1), "factor", "RandomBrightness")
        if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
            raise ValueError("The `value_range` argument should be a list of two numbers. "
                             f"Received: value_range={value_range}")
        self.value_range, self.seed = sorted(value_range), seed

    def call(self, inputs, training=None):
        x, was_3d = _as_batch(inputs, "RandomBrightness")
        x = self._float(x)
        if not training:
            return _unbatch(x, was_3d)
        low, high = (float(v) for v in self.value_range)
        n = array_ops.concat([_batch_size(x), _ints([1, 1, 1])], 0)
        d = random_ops.random_uniform(n, self.factor[0], self.factor[1], dtype=x.dtype,
                                      seed=self.seed)
        y = clip_ops.clip_by_value(x + d * (high - low), low, high)
        return _unbatch(y, was_3d)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range, "seed": self.seed}
