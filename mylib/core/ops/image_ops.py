"""Image ops (TensorFlow's `tf.image`): resizing, flips, crops and pads, colour and
contrast adjustments, dtype conversion, standardization.

Images are `[height, width, channels]` or batches `[batch, height, width, channels]`
(NHWC). Everything is built from existing graph ops (resizing is the `ResizeImages`
op of `nn_ops`); the primitives here are `DynamicSlice`, for crops at a random offset, and
`ImageProjectiveTransform` (`affine_transform`), for rotations, zooms and translations.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from mylib import errors
from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops import array_ops, indexing_ops, math_ops, nn_ops, random_ops, reduction_ops
from mylib.core.ops.cast_ops import cast
from mylib.core.ops.sequence_ops import reverse

__all__ = ["ResizeMethod", "resize_images", "resize", "resize_bilinear",
           "resize_nearest_neighbor", "flip_left_right", "flip_up_down",
           "random_flip_left_right", "random_flip_up_down", "per_image_standardization",
           "convert_image_dtype", "central_crop", "random_crop", "pad_to_bounding_box",
           "crop_to_bounding_box", "resize_image_with_crop_or_pad",
           "resize_with_crop_or_pad", "rgb_to_grayscale", "grayscale_to_rgb",
           "adjust_brightness", "adjust_contrast", "random_brightness", "random_contrast",
           "transpose_image", "rot90", "extract_patches", "extract_image_patches"]


class ResizeMethod:
    """TensorFlow 1's resize method constants (the ints `resize_images` takes) and
    TensorFlow 2's strings."""
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


_METHODS = {0: "bilinear", 1: "nearest", 2: "bicubic", "bilinear": "bilinear",
            "nearest": "nearest", "bicubic": "bicubic", "lanczos3": "lanczos3",
            "lanczos5": "lanczos5"}


def _image(x, owner):
    """`(batch_image, was_3d)`: a 3-D image gains a batch axis of 1."""
    x = convert_to_tensor(x)
    r = x.shape.rank
    if r not in (3, 4):
        raise ValueError(f"{owner}: `images` must be 3-D [h, w, c] or 4-D [n, h, w, c] "
                         f"with a known rank. Received shape {x.shape}")
    return (array_ops.expand_dims(x, 0), True) if r == 3 else (x, False)


def _unbatch(x, was_3d, name=None):
    return array_ops.squeeze(x, [0], name=name) if was_3d else array_ops.identity(x, name=name)


def _hw(x):
    s = x.shape.as_list()
    if s[-3] is None or s[-2] is None:
        raise ValueError(f"the image height and width must be static, got shape {x.shape}")
    return s[-3], s[-2]


# ---------------------------------------------------------------- resize
def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None, antialias=False,
                  half_pixel_centers=False):
    """Resizes `images` to `size` = (new_height, new_width), as TensorFlow 1's
    `tf.image.resize_images`.

    Bilinear and nearest-neighbour sampling follow TensorFlow 1's kernels: output
    pixel ``j`` reads input coordinate ``j * in / out`` (``j * (in - 1) / (out - 1)``
    with `align_corners`); bilinear blends the two pixels around it (the last one
    repeated past the edge), nearest takes ``floor`` of it (``round`` with
    `align_corners`). `half_pixel_centers` samples at pixel centres instead
    (``(j + 0.5) * in / out - 0.5``, TensorFlow 2's `tf.image.resize` and
    `jax.image.resize`), which bicubic and Lanczos always use.

    Args:
      images: float or int `Tensor` [h, w, c] or [n, h, w, c]; h and w may be known
        only at run time (a decoded image: one compiled program per image size).
      size: two Python ints (or a 2-vector of ints known when the graph is built).
      method: `ResizeMethod.BILINEAR` (0) / "bilinear", `NEAREST_NEIGHBOR` (1) /
        "nearest", `BICUBIC` (2) / "bicubic", "lanczos3", "lanczos5".
      align_corners: map the corner pixels onto each other (bilinear, nearest).
      half_pixel_centers: sample at pixel centres (bilinear, nearest).
      preserve_aspect_ratio, antialias: must be False.
    Returns:
      float32 `Tensor` (for bilinear/bicubic on integer images, as TensorFlow) or
      `images`' dtype, of shape [..., new_height, new_width, c].
    Raises:
      ValueError: for an unsupported method or option, or both `align_corners` and
        `half_pixel_centers` (TensorFlow raises too).

    Differs from TensorFlow 1: `AREA` is not supported; bicubic uses half-pixel centres.
    """
    if method not in _METHODS:
        raise ValueError(f"resize_images: unsupported method {method!r}; use one of "
                         "ResizeMethod.BILINEAR, NEAREST_NEIGHBOR, BICUBIC")
    if preserve_aspect_ratio or antialias:
        raise ValueError("resize_images: preserve_aspect_ratio and antialias are not "
                         "supported")
    if align_corners and half_pixel_centers:
        raise ValueError("resize_images: if half_pixel_centers is True, align_corners "
                         "must be False.")
    size = tuple(int(v) for v in (size.tolist() if hasattr(size, "tolist") else size))
    if len(size) != 2 or min(size) < 1:
        raise ValueError(f"resize_images: size must be (height, width), both positive. "
                         f"Received: {size}")
    x, was_3d = _image(images, "resize_images")
    m = _METHODS[method]
    if not x.dtype.is_floating and m != "nearest":
        x = cast(x, _dtypes.float32)
    if m in ("bilinear", "nearest") and not half_pixel_centers:
        s = x.shape.as_list()
        if s[1] is None or s[2] is None:  # known only at run time (a decoded image)
            op = ResizeBilinear if m == "bilinear" else ResizeNearestNeighbor
            return _unbatch(op(x, size=size, align_corners=bool(align_corners)), was_3d,
                            name)
        h, w = s[1], s[2]
        for axis, (n_in, n_out) in ((1, (h, size[0])), (2, (w, size[1]))):
            if n_in != n_out:
                x = _resample_axis(x, axis, n_in, n_out, m, align_corners)
        return _unbatch(x, was_3d, name)
    return _unbatch(nn_ops.resize_images(x, size, method=m), was_3d, name)


def _tf1_source(n_in, n_out, align_corners):
    scale = (n_in - 1) / (n_out - 1) if align_corners and n_out > 1 else n_in / n_out
    return np.arange(n_out, dtype=np.float64) * scale


def _resize_tf1_kernel(x, *, size, align_corners, method):
    # The image's height and width are static while the step is traced (XLA compiles
    # one program per input shape), so the sampling positions are numpy here.
    for axis, n_out in ((1, size[0]), (2, size[1])):
        n_in = x.shape[axis]
        if n_in == n_out:
            continue
        src = _tf1_source(n_in, n_out, align_corners)
        if method == "nearest":
            idx = np.round(src) if align_corners else np.floor(src)
            x = jnp.take(x, np.minimum(idx, n_in - 1).astype(np.int32), axis=axis)
            continue
        lo = np.minimum(np.floor(src), n_in - 1).astype(np.int32)
        hi = np.minimum(lo + 1, n_in - 1).astype(np.int32)
        shape = [1] * x.ndim
        shape[axis] = n_out
        frac = (src - lo).astype(x.dtype).reshape(shape)
        a, b = jnp.take(x, lo, axis=axis), jnp.take(x, hi, axis=axis)
        x = a + (b - a) * frac
    return x


def _resize_tf1_shape(x, *, size, align_corners):
    s = x.shape.as_list() if x.shape.rank is not None else [None] * 4
    return TensorSpec([s[0], size[0], size[1], s[3]], x.dtype)


# TensorFlow 1's resize kernels for images whose height and width are known only at run
# time; with static ones, `resize_images` builds the same sampling from gathers.
ResizeBilinear = OpDef("ResizeBilinear", kernel=functools.partial(_resize_tf1_kernel,
                                                                  method="bilinear"),
                       shape_fn=_resize_tf1_shape)
ResizeNearestNeighbor = OpDef(
    "ResizeNearestNeighbor", kernel=functools.partial(_resize_tf1_kernel, method="nearest"),
    shape_fn=_resize_tf1_shape)


def _resample_axis(x, axis, n_in, n_out, method, align_corners):
    """`x` resampled along `axis` from `n_in` to `n_out` pixels with TensorFlow 1's
    coordinate mapping (see `resize_images`): gathers at indices computed here, and
    for bilinear a blend with weights fixed when the graph is built."""
    src = _tf1_source(n_in, n_out, align_corners)
    if method == "nearest":
        idx = np.round(src) if align_corners else np.floor(src)
        idx = np.minimum(idx, n_in - 1).astype(np.int32)
        return indexing_ops.gather(x, idx, axis=axis)
    lo = np.minimum(np.floor(src), n_in - 1).astype(np.int32)
    hi = np.minimum(lo + 1, n_in - 1).astype(np.int32)
    frac = (src - lo).astype(x.dtype.np)
    shape = [1] * x.shape.rank
    shape[axis] = n_out
    frac = frac.reshape(shape)
    a = indexing_ops.gather(x, lo, axis=axis)
    b = indexing_ops.gather(x, hi, axis=axis)
    return a + (b - a) * frac


def resize(images, size, method="bilinear", preserve_aspect_ratio=False, antialias=False,
           name=None):
    """TensorFlow 2's `tf.image.resize`: sampling at pixel centres (see
    `resize_images` with ``half_pixel_centers=True``)."""
    return resize_images(images, size, method, preserve_aspect_ratio=preserve_aspect_ratio,
                         antialias=antialias, name=name,
                         half_pixel_centers=_METHODS.get(method) in ("bilinear", "nearest"))


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """`resize_images(..., BILINEAR)` (TensorFlow 1's `tf.image.resize_bilinear`)."""
    return resize_images(images, size, ResizeMethod.BILINEAR, align_corners, name=name,
                         half_pixel_centers=half_pixel_centers)


def resize_nearest_neighbor(images, size, align_corners=False, name=None,
                            half_pixel_centers=False):
    """`resize_images(..., NEAREST_NEIGHBOR)` (TensorFlow 1's
    `tf.image.resize_nearest_neighbor`)."""
    return resize_images(images, size, ResizeMethod.NEAREST_NEIGHBOR, align_corners,
                         name=name, half_pixel_centers=half_pixel_centers)


# ---------------------------------------------------------------- patches
def _patches_kernel(x, *, sizes, strides, rates, padding):
    n, c = x.shape[0], x.shape[-1]
    p = jax.lax.conv_general_dilated_patches(
        x, filter_shape=sizes, window_strides=strides, padding=padding,
        rhs_dilation=rates, dimension_numbers=("NHWC", "HWIO", "NHWC"))
    oh, ow = p.shape[1], p.shape[2]
    # XLA orders each patch channel-major (c, kh, kw); TensorFlow (kh, kw, c).
    p = p.reshape(n, oh, ow, c, sizes[0] * sizes[1])
    return jnp.swapaxes(p, -1, -2).reshape(n, oh, ow, sizes[0] * sizes[1] * c)


ExtractImagePatches = OpDef("ExtractImagePatches", kernel=_patches_kernel)


def _four(v, what):
    v = [int(a) for a in v]
    if len(v) != 4 or v[0] != 1 or v[3] != 1:
        raise ValueError(f"extract_patches: `{what}` must be [1, rows, cols, 1]; received {v}")
    return (v[1], v[2])


def extract_patches(images, sizes, strides, rates, padding, name=None):
    """The `sizes` patches of `images` [batch, rows, cols, depth] every `strides`,
    sampled every `rates` pixels, each flattened in (row, col, depth) order:
    [batch, out_rows, out_cols, size_rows * size_cols * depth] (TensorFlow's
    `tf.image.extract_patches`). `sizes`, `strides`, `rates`: ``[1, r, c, 1]``;
    `padding`: "VALID" or "SAME" (zeros), as a convolution's."""
    x = convert_to_tensor(images)
    if x.shape.rank != 4:
        raise ValueError(f"extract_patches: images must be 4-D [batch, rows, cols, depth]; "
                         f"received shape {x.shape}")
    pad = str(padding).upper()
    if pad not in ("VALID", "SAME"):
        raise ValueError(f"extract_patches: padding must be 'VALID' or 'SAME'; received "
                         f"{padding!r}")
    return ExtractImagePatches(x, sizes=_four(sizes, "sizes"), strides=_four(strides, "strides"),
                               rates=_four(rates, "rates"), padding=pad, name=name)


def extract_image_patches(images, ksizes=None, strides=None, rates=None, padding=None,
                          name=None, sizes=None):
    """TensorFlow 1's name of `extract_patches` (`ksizes` for `sizes`)."""
    return extract_patches(images, ksizes if ksizes is not None else sizes, strides, rates,
                           padding, name=name)


# ---------------------------------------------------------------- flips, transposes
def flip_left_right(image, name=None):
    """Mirrors `image` ([h, w, c] or [n, h, w, c]) along its width."""
    x = convert_to_tensor(image)
    _image(x, "flip_left_right")
    return reverse(x, [x.shape.rank - 2], name=name)


def flip_up_down(image, name=None):
    """Flips `image` ([h, w, c] or [n, h, w, c]) along its height."""
    x = convert_to_tensor(image)
    _image(x, "flip_up_down")
    return reverse(x, [x.shape.rank - 3], name=name)


def transpose_image(image, name=None):
    """Swaps height and width."""
    x = convert_to_tensor(image)
    perm = [1, 0, 2] if x.shape.rank == 3 else [0, 2, 1, 3]
    return array_ops.transpose(x, perm, name=name)


def rot90(image, k=1, name=None):
    """Rotates by 90 degrees counter-clockwise `k` times (Python int)."""
    x = convert_to_tensor(image)
    for _ in range(int(k) % 4):
        x = flip_up_down(transpose_image(x))
    return array_ops.identity(x, name=name)


def _random_flip(image, seed, axis_from_end, owner, name):
    x = convert_to_tensor(image)
    _image(x, owner)
    r = x.shape.rank
    flipped = reverse(x, [r - axis_from_end])
    if r == 3:
        u = random_ops.random_uniform([], seed=seed)
        cond = math_ops.less(u, 0.5)
    else:  # one coin per image of the batch, as TensorFlow 2
        n = array_ops.shape(x)[0:1]
        u = random_ops.random_uniform(n, seed=seed)
        cond = array_ops.reshape(math_ops.less(u, 0.5), [-1, 1, 1, 1])
    return array_ops.where(cond, flipped, x, name=name)


def random_flip_left_right(image, seed=None):
    """Mirrors `image` along its width with probability 1/2 (each image of a batch
    independently); a new draw every `Session.run`."""
    return _random_flip(image, seed, 2, "random_flip_left_right", None)


def random_flip_up_down(image, seed=None):
    """Flips `image` along its height with probability 1/2 (each image of a batch
    independently)."""
    return _random_flip(image, seed, 3, "random_flip_up_down", None)


# ---------------------------------------------------------------- standardization, dtype
def per_image_standardization(image, name=None):
    """`(image - mean) / max(stddev, 1 / sqrt(N))` per image, N = h * w * c (as
    TensorFlow).

    Args:
      image: `Tensor` [h, w, c] or [n, h, w, c]; integers are cast to float32.
    Returns:
      float `Tensor` of `image`'s shape.
    """
    x, was_3d = _image(image, "per_image_standardization")
    if not x.dtype.is_floating:
        x = cast(x, _dtypes.float32)
    s = x.shape.as_list()
    if None in s[1:]:  # a decoded image: its size is known at run time
        n = cast(array_ops.size(x) // array_ops.shape(x)[0], x.dtype)
        min_std = math_ops.rsqrt(n)
    else:
        min_std = 1.0 / np.sqrt(float(s[1] * s[2] * s[3]))
    mean = reduction_ops.reduce_mean(x, [1, 2, 3], keepdims=True)
    var = reduction_ops.reduce_mean(math_ops.square(x - mean), [1, 2, 3], keepdims=True)
    std = math_ops.maximum(math_ops.sqrt(var), min_std)
    return _unbatch((x - mean) / std, was_3d, name)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """Converts `image` between dtypes, rescaling values: integers span [0, MAX] of
    their dtype, floats [0, 1].

    Args:
      image: `Tensor`.
      dtype: the target dtype.
      saturate: clip before casting when converting float to integer (always done for
        float to integer here, as the values would otherwise wrap).
    Returns:
      `Tensor` of `dtype`: int -> float divides by MAX; float -> int multiplies by
      MAX + 0.5 and truncates (as TensorFlow); int -> int shifts bits; float -> float
      casts.
    """
    x = convert_to_tensor(image)
    d = _dtypes.as_dtype(dtype)
    src = x.dtype
    if src == d:
        return array_ops.identity(x, name=name)
    if src.is_integer and d.is_integer:
        smax, dmax = np.iinfo(src.np).max, np.iinfo(d.np).max
        if smax > dmax:
            return cast(math_ops.floordiv(x, (smax + 1) // (dmax + 1)), d, name=name)
        return math_ops.multiply(cast(x, d), (dmax + 1) // (smax + 1), name=name)
    if src.is_integer:
        return math_ops.multiply(cast(x, d), 1.0 / np.iinfo(src.np).max, name=name)
    if d.is_integer:
        dmax = np.iinfo(d.np).max
        scaled = math_ops.multiply(x, dmax + 0.5)
        scaled = math_ops.minimum(math_ops.maximum(scaled, 0.0), float(dmax))
        return cast(scaled, d, name=name)
    return cast(x, d, name=name)


# ---------------------------------------------------------------- crops and pads
def central_crop(image, central_fraction):
    """The central `central_fraction` (in (0, 1]) of each image's height and width.

    Args:
      image: `Tensor` [h, w, c] or [n, h, w, c] with static height and width.
    Returns:
      `Tensor` [..., h', w', c] with h' = h - 2 * int((h - h * f) / 2) (as TensorFlow).
    """
    if not 0 < central_fraction <= 1:
        raise ValueError(f"central_crop: central_fraction must be in (0, 1]. Received: "
                         f"{central_fraction}")
    x, was_3d = _image(image, "central_crop")
    if central_fraction == 1:
        return _unbatch(x, was_3d)
    h, w = _hw(x)
    oh = int((h - h * central_fraction) / 2)
    ow = int((w - w * central_fraction) / 2)
    y = indexing_ops.slice(x, [0, oh, ow, 0], [-1, h - 2 * oh, w - 2 * ow, -1])
    return _unbatch(y, was_3d)


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """`image[..., offset_height : offset_height + target_height, offset_width : ...,
    :]` (Python int offsets and sizes).

    Raises:
      ValueError: if the box does not fit in the image.
    """
    x, was_3d = _image(image, "crop_to_bounding_box")
    h, w = _hw(x)
    if offset_height < 0 or offset_width < 0 or offset_height + target_height > h or \
            offset_width + target_width > w or target_height <= 0 or target_width <= 0:
        raise ValueError(f"crop_to_bounding_box: box ({offset_height}, {offset_width}, "
                         f"{target_height}, {target_width}) does not fit an image of "
                         f"height {h} and width {w}")
    y = indexing_ops.slice(x, [0, int(offset_height), int(offset_width), 0],
                           [-1, int(target_height), int(target_width), -1])
    return _unbatch(y, was_3d)


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """Pads `image` with zeros to [target_height, target_width], placing it at
    (offset_height, offset_width) (Python ints).

    Raises:
      ValueError: if the image does not fit in the target box.
    """
    x, was_3d = _image(image, "pad_to_bounding_box")
    h, w = _hw(x)
    after_h = target_height - offset_height - h
    after_w = target_width - offset_width - w
    if offset_height < 0 or offset_width < 0 or after_h < 0 or after_w < 0:
        raise ValueError(f"pad_to_bounding_box: an image of height {h} and width {w} at "
                         f"({offset_height}, {offset_width}) does not fit in "
                         f"({target_height}, {target_width})")
    y = array_ops.pad(x, [[0, 0], [int(offset_height), int(after_h)],
                          [int(offset_width), int(after_w)], [0, 0]])
    return _unbatch(y, was_3d)


def resize_image_with_crop_or_pad(image, target_height, target_width):
    """Centrally crops or zero-pads `image` to [target_height, target_width]."""
    x, was_3d = _image(image, "resize_image_with_crop_or_pad")
    h, w = _hw(x)
    if h > target_height or w > target_width:
        ch, cw = min(h, target_height), min(w, target_width)
        x = crop_to_bounding_box(x, (h - ch) // 2, (w - cw) // 2, ch, cw)
        h, w = ch, cw
    if h < target_height or w < target_width:
        x = pad_to_bounding_box(x, (target_height - h) // 2, (target_width - w) // 2,
                                target_height, target_width)
    return _unbatch(x, was_3d)


resize_with_crop_or_pad = resize_image_with_crop_or_pad


def _dynamic_slice_kernel(x, begin, *, size):
    return jax.lax.dynamic_slice(x, [begin[i] for i in range(x.ndim)], size)


DynamicSlice = OpDef("DynamicSlice", kernel=_dynamic_slice_kernel)


@DynamicSlice.shape_fn
def _dynamic_slice_shape(x, begin, *, size):
    return TensorSpec(list(size), x.dtype)


def random_crop(value, size, seed=None, name=None):
    """A crop of `size` at a uniformly random offset (a new one every `Session.run`).

    Args:
      value: `Tensor` with a static shape.
      size: list of Python ints, one per axis, each <= `value`'s.
      seed: op seed.
    Returns:
      `Tensor` of shape `size`.
    Raises:
      ValueError: if `size` does not fit in `value`.
    """
    x = convert_to_tensor(value)
    shape = x.shape.as_list()
    size = [int(s) for s in size]
    if None in shape or len(size) != len(shape) or any(s > d for s, d in zip(size, shape)):
        raise ValueError(f"random_crop: size {size} must fit in the static shape {x.shape}")
    limit = np.asarray([d - s + 1 for d, s in zip(shape, size)], np.float32)
    u = random_ops.random_uniform([len(shape)], seed=seed)
    off = cast(math_ops.floor(u * limit), _dtypes.int32)
    off = math_ops.minimum(off, convert_to_tensor((limit - 1).astype(np.int32)))
    return DynamicSlice(x, off, size=tuple(size), name=name)


# ---------------------------------------------------------------- colour
def rgb_to_grayscale(images, name=None):
    """Luma of RGB images: ``0.2989 R + 0.5870 G + 0.1140 B`` (ITU-R BT.601, as
    TensorFlow), keeping a channel axis of size 1; integer images are converted through
    float and back."""
    x = convert_to_tensor(images)
    d = x.dtype
    f = convert_image_dtype(x, _dtypes.float32) if not d.is_floating else x
    wts = convert_to_tensor(np.asarray([0.2989, 0.5870, 0.1140]), dtype=f.dtype)
    g = reduction_ops.reduce_sum(f * wts, -1, keepdims=True)
    return convert_image_dtype(g, d, name=name) if not d.is_floating else \
        array_ops.identity(g, name=name)


def grayscale_to_rgb(images, name=None):
    """Repeats the single channel three times."""
    x = convert_to_tensor(images)
    return array_ops.concat([x, x, x], -1, name=name or "grayscale_to_rgb")


def adjust_brightness(image, delta):
    """`image + delta` (floats; integer images go through float32 [0, 1] and back)."""
    x = convert_to_tensor(image)
    if x.dtype.is_floating:
        return math_ops.add(x, delta)
    return convert_image_dtype(math_ops.add(convert_image_dtype(x, _dtypes.float32), delta),
                               x.dtype)


def adjust_contrast(images, contrast_factor):
    """`(x - mean) * contrast_factor + mean`, the mean per image and channel over
    height and width (as TensorFlow)."""
    x = convert_to_tensor(images)
    d = x.dtype
    f = x if d.is_floating else cast(x, _dtypes.float32)
    mean = reduction_ops.reduce_mean(f, [f.shape.rank - 3, f.shape.rank - 2], keepdims=True)
    y = (f - mean) * contrast_factor + mean
    return y if d.is_floating else cast(math_ops.round(y), d)


def random_brightness(image, max_delta, seed=None):
    """`adjust_brightness` by a delta drawn uniformly from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError(f"random_brightness: max_delta must be non-negative. Received: "
                         f"{max_delta}")
    delta = random_ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def random_contrast(image, lower, upper, seed=None):
    """`adjust_contrast` by a factor drawn uniformly from [lower, upper)."""
    if not 0 <= lower < upper:
        raise ValueError(f"random_contrast: need 0 <= lower < upper. Received: lower={lower}, "
                         f"upper={upper}")
    f = random_ops.random_uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, f)


# ---------------------------------------------------------------- affine transforms
_TRANSFORM_ORDERS = {"nearest": 0, "bilinear": 1}
_TRANSFORM_FILL_MODES = ("reflect", "wrap", "constant", "nearest")


def _projective_kernel(images, transforms, *, interpolation, fill_mode, fill_value):
    n, h, w, _ = images.shape
    ct = images.dtype if jnp.issubdtype(images.dtype, jnp.floating) else jnp.float32
    t = jnp.broadcast_to(transforms.astype(ct), (n, 8))
    y, x = jnp.meshgrid(jnp.arange(h, dtype=ct), jnp.arange(w, dtype=ct), indexing="ij")

    def coords(row):  # output pixel (x, y) reads input (x', y'), TensorFlow's convention
        a0, a1, a2, b0, b1, b2, c0, c1 = (row[i] for i in range(8))
        k = c0 * x + c1 * y + 1
        return (b0 * x + b1 * y + b2) / k, (a0 * x + a1 * y + a2) / k

    def one_channel(img, yy, xx):
        return jax.scipy.ndimage.map_coordinates(
            img, [yy, xx], order=_TRANSFORM_ORDERS[interpolation], mode=fill_mode,
            cval=fill_value)

    def one_image(img, row):
        yy, xx = coords(row)
        return jax.vmap(one_channel, in_axes=(2, None, None), out_axes=2)(img, yy, xx)

    return jax.vmap(one_image)(images, t).astype(images.dtype)


ImageProjectiveTransform = OpDef("ImageProjectiveTransform", kernel=_projective_kernel)
# No registered gradient: the generic VJP op differentiates the kernel (with respect to
# the images and the transforms).


@ImageProjectiveTransform.shape_fn
def _projective_shape(images, transforms, **_):
    if images.shape.rank not in (None, 4):
        raise errors.InvalidArgumentError(
            f"images must be 4-D [batch, height, width, channels], got {images.shape}")
    if transforms.shape.rank not in (None, 2) or (
            transforms.shape.rank == 2 and transforms.shape.as_list()[1] not in (None, 8)):
        raise errors.InvalidArgumentError(
            f"transforms must be [batch, 8] or [1, 8], got {transforms.shape}")
    return TensorSpec(images.shape, images.dtype)


def affine_transform(images, transforms, interpolation="bilinear", fill_mode="constant",
                     fill_value=0.0, name=None):
    """Applies a projective transform to each image (TensorFlow's
    `ImageProjectiveTransformV3` with the output size of the input; Keras 3's
    `keras.ops.image.affine_transform`).

    Each row ``[a0, a1, a2, b0, b1, b2, c0, c1]`` maps an *output* pixel ``(x, y)`` to
    the *input* point ``((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k)``, ``k = c0 x +
    c1 y + 1``, which is sampled with `interpolation`; points outside the image are
    filled by `fill_mode`: "reflect" (``d c b a | a b c d | d c b a``), "wrap"
    (``a b c d | a b c d``), "constant" (`fill_value`), "nearest" (``a a a a | a b c
    d | d d d d``) (the modes of `jax.scipy.ndimage.map_coordinates`).

    Args:
      images: `Tensor` [batch, height, width, channels] or [height, width, channels].
      transforms: float `Tensor` [batch, 8], [1, 8] (one for all) or [8].
      interpolation: "bilinear" or "nearest".
      fill_mode: "reflect", "wrap", "constant" or "nearest".
      fill_value: float, for ``fill_mode="constant"``.
      name: optional op name.
    Returns:
      `Tensor` of `images`' shape and dtype.
    Raises:
      ValueError: an unknown `interpolation` or `fill_mode`.
    """
    if interpolation not in _TRANSFORM_ORDERS:
        raise ValueError("Invalid value for argument `interpolation`. Expected one of "
                         f"{tuple(_TRANSFORM_ORDERS)}. Received: interpolation={interpolation!r}")
    if fill_mode not in _TRANSFORM_FILL_MODES:
        raise ValueError("Invalid value for argument `fill_mode`. Expected one of "
                         f"{_TRANSFORM_FILL_MODES}. Received: fill_mode={fill_mode!r}")
    x, was_3d = _image(images, "affine_transform")
    t = convert_to_tensor(transforms)
    if not t.dtype.is_floating:
        t = cast(t, _dtypes.float32)
    if t.shape.rank == 1:
        t = array_ops.expand_dims(t, 0)
    y = ImageProjectiveTransform(x, t, interpolation=interpolation, fill_mode=fill_mode,
                                 fill_value=float(fill_value))
    return _unbatch(y, was_3d, name)


# ---------------------------------------------------------------- Keras's resizes and crops
def _aspect_box(h, w, height, width):
    """The largest centred window of the output's aspect ratio (Keras's `smart_resize`):
    `(top, left, crop_height, crop_width)`."""
    ch = max(min(h, int(float(w * height) / width)), 1)
    cw = max(min(w, int(float(h * width) / height)), 1)
    return int(float(h - ch) / 2), int(float(w - cw) / 2), ch, cw


def _resize_to(x, size, method):
    if tuple(x.shape[1:3]) == tuple(size):
        return x
    return jax.image.resize(x, (x.shape[0], *size, x.shape[3]), method=method,
                            antialias=False)


def _aspect_resize_kernel(x, *, size, method, aspect, fill_value):
    # Shapes are concrete here, so the crop box is computed even where the graph
    # holds an unknown height or width.
    h, w = x.shape[1:3]
    height, width = size
    if aspect == "center" and h >= height and w >= width:
        top, left = (h - height) // 2, (w - width) // 2
        return x[:, top:top + height, left:left + width, :]
    if aspect in ("crop", "center"):
        top, left, ch, cw = _aspect_box(h, w, height, width)
        x = x[:, top:top + ch, left:left + cw, :]
    elif aspect == "pad":
        top = int(float(max(h, int(float(w * height) / width)) - h) / 2)
        left = int(float(max(w, int(float(h * width) / height)) - w) / 2)
        if top > 0:  # one side only, the same on each end (as Keras)
            x = jnp.pad(x, [(0, 0), (top, top), (0, 0), (0, 0)], constant_values=fill_value)
        elif left > 0:
            x = jnp.pad(x, [(0, 0), (0, 0), (left, left), (0, 0)], constant_values=fill_value)
    return jax.image.resize(x, (x.shape[0], height, width, x.shape[3]), method=method,
                            antialias=False)


ResizeWithAspect = OpDef("ResizeWithAspect", kernel=_aspect_resize_kernel)


@ResizeWithAspect.shape_fn
def _aspect_resize_shape(x, *, size, **_):
    if x.shape.rank not in (None, 4):
        raise errors.InvalidArgumentError(
            f"images must be 4-D [batch, height, width, channels], got {x.shape}")
    n, c = (None, None) if x.shape.rank is None else (x.shape.as_list()[0],
                                                        x.shape.as_list()[3])
    return TensorSpec([n, *size, c], x.dtype)


def resize_with_aspect(images, size, method="bilinear", aspect="stretch", fill_value=0.0,
                       name=None):
    """Resizes float images to `size` = (height, width) as Keras 3's `Resizing` /
    `smart_resize` / `CenterCrop` do (`jax.image.resize`, half-pixel centres, no
    antialiasing).

    Args:
      images: float `Tensor` [batch, h, w, c] or [h, w, c]; h and w may be unknown in
        the graph.
      size: two Python ints.
      method: "bilinear", "nearest", "bicubic", "lanczos3", "lanczos5".
      aspect: "stretch" (plain resize), "crop" (first crop the largest centred window of
        the output's aspect ratio), "pad" (first pad the short side evenly with
        `fill_value` to that ratio), "center" (the centred `size` window when the image
        is at least that large, else "crop").
      fill_value: float, for "pad".
      name: optional op name.
    Returns:
      `Tensor` [batch, height, width, c] (or unbatched) of `images`' dtype.
    """
    if aspect not in ("stretch", "crop", "pad", "center"):
        raise ValueError(f"resize_with_aspect: unknown aspect {aspect!r}; use 'stretch', "
                         "'crop', 'pad' or 'center'")
    x, was_3d = _image(images, "resize_with_aspect")
    y = ResizeWithAspect(x, size=tuple(int(v) for v in size), method=str(method),
                         aspect=aspect, fill_value=float(fill_value))
    return _unbatch(y, was_3d, name)


def _crop_at_kernel(x, fractions, *, size):
    h, w = x.shape[1:3]
    height, width = size
    if h > height and w > width:
        start = jnp.floor(fractions * jnp.asarray([h - height + 1, w - width + 1],
                                                  fractions.dtype)).astype(jnp.int32)
        start = jnp.clip(start, 0, jnp.asarray([h - height, w - width]))
        return jax.lax.dynamic_slice(x, (0, start[0], start[1], 0),
                                     (x.shape[0], height, width, x.shape[3]))
    # Keras 3's fallback: the window at the aspect-ratio crop's corner, resized.
    top, left, _, _ = _aspect_box(h, w, height, width)
    return _resize_to(x[:, top:top + height, left:left + width, :], size, "bilinear")


CropAtFraction = OpDef("CropAtFraction", kernel=_crop_at_kernel)


@CropAtFraction.shape_fn
def _crop_at_shape(x, fractions, *, size):
    return _aspect_resize_shape(x, size=size)


def crop_at_fraction(images, fractions, size, name=None):
    """The `size` = (height, width) window of each image whose top-left corner is at
    ``floor(fractions * (image_size - size + 1))`` (Keras 3's `RandomCrop` in training,
    given its uniform draws); an image not larger than `size` on both sides gets Keras's
    fallback (the window at the aspect-ratio crop's corner, resized bilinearly).

    Args:
      images: float `Tensor` [batch, h, w, c] or [h, w, c]; h, w may be unknown.
      fractions: float `Tensor` [2] in [0, 1): (row, column); one window for the batch.
      size: two Python ints.
    Returns:
      `Tensor` [batch, height, width, c] (or unbatched).
    """
    x, was_3d = _image(images, "crop_at_fraction")
    y = CropAtFraction(x, convert_to_tensor(fractions), size=tuple(int(v) for v in size))
    return _unbatch(y, was_3d, name)
