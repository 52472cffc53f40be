"""More of TensorFlow 1's `tf.image`: `sobel_edges`, `total_variation`, `psnr`, `ssim`,
`crop_and_resize` and `non_max_suppression`.

Built from graph ops where TensorFlow is (`sobel_edges`, `total_variation`, `psnr`,
`ssim`); `CropAndResize` is a primitive (a gather XLA fuses) that differentiates in the
image and the boxes through the generic VJP op; `NonMaxSuppressionV3` returns as many
indices as boxes survive, so it runs on the host (as `unique`).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from mylib import errors
from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import NotDifferentiable, OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, math_ops, nn_ops, reduction_ops
from mylib.core.ops.image_ops import convert_image_dtype

__all__ = ["sobel_edges", "total_variation", "psnr", "ssim", "crop_and_resize",
           "non_max_suppression"]


def _rank4(x, owner):
    if x.shape.rank not in (None, 4):
        raise errors.InvalidArgumentError(
            f"{owner}: '{x.name}' must be a 4-D [batch, height, width, channels] image "
            f"batch, got shape {x.shape}")


def sobel_edges(image):
    """Sobel edge maps of each channel: ``[..., 0]`` the vertical gradient (dy),
    ``[..., 1]`` the horizontal one (dx), with the image reflect-padded by one pixel.

    Args:
      image: float `Tensor` [batch, h, w, d].
    Returns:
      `Tensor` [batch, h, w, d, 2].
    Raises:
      InvalidArgumentError: not 4-D.
    """
    x = convert_to_tensor(image)
    _rank4(x, "sobel_edges")
    ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float64)
    kernels = np.stack([ky, ky.T], -1)                                  # [3, 3, 2]
    d = x.shape.as_list()[3]
    if d is None:
        raise errors.InvalidArgumentError(
            f"sobel_edges: the channel count of '{x.name}' must be known, got {x.shape}")
    w = constant_ops.constant(np.tile(kernels[:, :, None, :], (1, 1, d, 1)), dtype=x.dtype)
    padded = array_ops.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    out = nn_ops.depthwise_conv2d(padded, w, [1, 1, 1, 1], "VALID")     # [b, h, w, d*2]
    shape = array_ops.concat([array_ops.shape(x), [2]], 0)
    return array_ops.reshape(out, shape)


def total_variation(images, name=None):
    """The sum of absolute differences of neighbouring pixels (vertically and
    horizontally), over all channels.

    Args:
      images: `Tensor` [h, w, c] or [batch, h, w, c].
    Returns:
      scalar, or `Tensor` [batch]; the images' dtype.
    Raises:
      ValueError: rank not 3 or 4 (as TensorFlow).
    """
    x = convert_to_tensor(images)
    r = x.shape.rank
    if r == 3:
        dy = x[1:, :, :] - x[:-1, :, :]
        dx = x[:, 1:, :] - x[:, :-1, :]
        axes = None
    elif r == 4:
        dy = x[:, 1:, :, :] - x[:, :-1, :, :]
        dx = x[:, :, 1:, :] - x[:, :, :-1, :]
        axes = [1, 2, 3]
    else:
        raise ValueError(f"total_variation: images must be 3-D or 4-D, got shape {x.shape}")
    return math_ops.add(reduction_ops.reduce_sum(math_ops.abs(dy), axes),
                        reduction_ops.reduce_sum(math_ops.abs(dx), axes),
                        name=name or "total_variation")


def _as_float_images(a, b, max_val, owner):
    a = convert_to_tensor(a)
    b = convert_to_tensor(b, dtype_hint=a.dtype)
    if a.dtype != b.dtype:
        raise errors.InvalidArgumentError(
            f"{owner}: the images' dtypes differ: {a.dtype.name} vs {b.dtype.name}")
    sa, sb = a.shape, b.shape
    if sa.rank is not None and sa.rank < 3:
        raise errors.InvalidArgumentError(f"{owner}: images must have rank >= 3, got {sa}")
    if sa.rank is not None and sb.rank is not None and not sa[-3:].is_compatible_with(sb[-3:]):
        raise errors.InvalidArgumentError(
            f"{owner}: the images' [height, width, channels] differ: {sa} vs {sb}")
    mv = math_ops.cast(convert_to_tensor(max_val), a.dtype)
    mv = convert_image_dtype(mv, _dtypes.float32)
    return (convert_image_dtype(a, _dtypes.float32), convert_image_dtype(b, _dtypes.float32),
            mv)


def psnr(a, b, max_val, name=None):
    """Peak signal-to-noise ratio in dB: ``10 log10(max_val² / mean((a - b)²))`` over
    the last three axes (height, width, channels).

    Args:
      a, b: images [..., h, w, c] of one dtype; integer images are scaled to [0, 1]
        first, as `convert_image_dtype` (as TensorFlow).
      max_val: the dynamic range (255 for uint8 images, 1.0 for floats in [0, 1]).
    Returns:
      float32 `Tensor` [...]; inf where the images are equal.
    Raises:
      InvalidArgumentError: different dtypes or [h, w, c], or rank below 3.
    """
    a, b, mv = _as_float_images(a, b, max_val, "psnr")
    mse = reduction_ops.reduce_mean(math_ops.squared_difference(a, b), [-3, -2, -1])
    log10 = np.log(10.0)
    return math_ops.subtract(20.0 * math_ops.log(mv) / np.float32(log10),
                             np.float32(10.0 / log10) * math_ops.log(mse),
                             name=name or "psnr")


def _gauss(size, sigma):
    coords = np.arange(size, dtype=np.float64) - (size - 1) / 2.0
    g = -0.5 * coords ** 2 / sigma ** 2
    g = (g[None, :] + g[:, None]).reshape(-1)
    g = np.exp(g - g.max())
    return (g / g.sum()).reshape(size, size)


def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03):
    """Structural similarity (Wang et al., 2004) as TensorFlow computes it: local
    statistics under a `filter_size` Gaussian window of `filter_sigma` (no padding:
    "VALID"), ``c1 = (k1 max_val)²``, ``c2 = (k2 max_val)²``, averaged over the image
    and then the channels.

    Args:
      img1, img2: images [..., h, w, c] of one dtype (integers scaled to [0, 1] first),
        h and w at least `filter_size`.
      max_val: the dynamic range.
    Returns:
      float32 `Tensor` [...]: one SSIM per image, 1 for identical images.
    Raises:
      InvalidArgumentError: different dtypes or [h, w, c], rank below 3, or an image
        smaller than the window (TensorFlow asserts this when the step runs).
    """
    a, b, mv = _as_float_images(img1, img2, max_val, "ssim")
    s = a.shape.as_list() if a.shape.rank is not None else None
    if s is None or None in s[-3:]:
        raise errors.InvalidArgumentError(
            f"ssim: the images' height, width and channels must be known, got {a.shape}")
    h, w, c = s[-3:]
    size = int(filter_size)
    if h < size or w < size:
        raise errors.InvalidArgumentError(
            f"ssim: the images ({h}x{w}) are smaller than the filter ({size}x{size})")
    kern = np.tile(_gauss(size, float(filter_sigma))[:, :, None, None], (1, 1, c, 1))
    kern = constant_ops.constant(kern, dtype=_dtypes.float32)
    batch = array_ops.shape(a)[:-3]

    def flat(x):
        return array_ops.reshape(x, array_ops.concat([[-1], [h, w, c]], 0))

    def reducer(x):
        y = nn_ops.depthwise_conv2d(flat(x), kern, [1, 1, 1, 1], "VALID")
        return y

    c1 = (float(k1) * mv) ** 2
    c2 = (float(k2) * mv) ** 2
    a4, b4 = flat(a), flat(b)
    mean0, mean1 = reducer(a4), reducer(b4)
    num0 = mean0 * mean1 * 2.0
    den0 = math_ops.square(mean0) + math_ops.square(mean1)
    luminance = (num0 + c1) / (den0 + c1)
    num1 = reducer(a4 * b4) * 2.0
    den1 = reducer(math_ops.square(a4) + math_ops.square(b4))
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)
    per_channel = reduction_ops.reduce_mean(luminance * cs, [-3, -2])    # [n, c]
    out = reduction_ops.reduce_mean(per_channel, [-1])
    return array_ops.reshape(out, batch)


# ---------------------------------------------------------------- crop_and_resize
def _crop_and_resize_kernel(image, boxes, box_ind, *, crop_size, method, extrapolation_value):
    _, h, w, _ = image.shape
    ch, cw = crop_size
    y1, x1, y2, x2 = (boxes[:, i].astype(jnp.float32) for i in range(4))

    def coords(lo, hi, n, size):
        if n > 1:
            scale = (hi - lo) * (size - 1) / (n - 1)
            return lo[:, None] * (size - 1) + jnp.arange(n, dtype=jnp.float32) * scale[:, None]
        return jnp.broadcast_to((0.5 * (lo + hi) * (size - 1))[:, None], (lo.shape[0], 1))

    ys, xs = coords(y1, y2, ch, h), coords(x1, x2, cw, w)            # [b, ch], [b, cw]
    img = jnp.asarray(image, jnp.float32)[box_ind]                       # [b, h, w, d]
    inside = (((ys >= 0) & (ys <= h - 1))[:, :, None]
              & ((xs >= 0) & (xs <= w - 1))[:, None, :])[..., None]    # [b, ch, cw, 1]
    bidx = jnp.arange(boxes.shape[0])[:, None, None]
    if method == "nearest":
        # TensorFlow rounds half away from zero.
        yi = jnp.clip(jnp.floor(ys + 0.5), 0, h - 1).astype(jnp.int32)
        xi = jnp.clip(jnp.floor(xs + 0.5), 0, w - 1).astype(jnp.int32)
        val = img[bidx, yi[:, :, None], xi[:, None, :]]
    else:
        y0 = jnp.floor(ys)
        x0 = jnp.floor(xs)
        dy, dx = (ys - y0)[:, :, None, None], (xs - x0)[:, None, :, None]
        yt = jnp.clip(y0, 0, h - 1).astype(jnp.int32)
        yb = jnp.clip(jnp.ceil(ys), 0, h - 1).astype(jnp.int32)
        xl = jnp.clip(x0, 0, w - 1).astype(jnp.int32)
        xr = jnp.clip(jnp.ceil(xs), 0, w - 1).astype(jnp.int32)
        tl = img[bidx, yt[:, :, None], xl[:, None, :]]
        tr = img[bidx, yt[:, :, None], xr[:, None, :]]
        bl = img[bidx, yb[:, :, None], xl[:, None, :]]
        br = img[bidx, yb[:, :, None], xr[:, None, :]]
        top = tl + (tr - tl) * dx
        bottom = bl + (br - bl) * dx
        val = top + (bottom - top) * dy
    return jnp.where(inside, val, jnp.float32(extrapolation_value))


CropAndResize = OpDef("CropAndResize", kernel=_crop_and_resize_kernel)


@CropAndResize.shape_fn
def _crop_and_resize_shape(image, boxes, box_ind, *, crop_size, **_):
    if image.shape.rank not in (None, 4):
        raise errors.InvalidArgumentError(f"image must be 4-D, got shape {image.shape}")
    if boxes.shape.rank not in (None, 2) or (boxes.shape.rank == 2
                                             and boxes.shape.as_list()[1] not in (None, 4)):
        raise errors.InvalidArgumentError(f"boxes must be [num_boxes, 4], got {boxes.shape}")
    if box_ind.shape.rank not in (None, 1):
        raise errors.InvalidArgumentError(f"box_ind must be 1-D, got {box_ind.shape}")
    nb = boxes.shape.as_list()[0] if boxes.shape.rank else None
    ni = box_ind.shape.as_list()[0] if box_ind.shape.rank else None
    if nb is not None and ni is not None and nb != ni:
        raise errors.InvalidArgumentError(
            f"boxes and box_ind have different numbers of boxes: {nb} vs {ni}")
    d = image.shape.as_list()[3] if image.shape.rank else None
    return TensorSpec([nb if nb is not None else ni, crop_size[0], crop_size[1], d],
                      _dtypes.float32)


def crop_and_resize(image, boxes, box_ind=None, crop_size=None, method="bilinear",
                    extrapolation_value=0, name=None, box_indices=None):
    """Crops boxes out of images and resizes each to `crop_size`, sampling as
    TensorFlow: box ``[y1, x1, y2, x2]`` in normalized coordinates maps the crop's row
    ``i`` to image row ``y1 (h-1) + i (y2-y1)(h-1)/(crop_h-1)`` (the box centre when
    ``crop_h == 1``); ``y1 > y2`` flips the crop; samples outside the image are
    `extrapolation_value`.

    Args:
      image: `Tensor` [batch, h, w, depth] (any real dtype).
      boxes: float `Tensor` [num_boxes, 4].
      box_ind: int32 `Tensor` [num_boxes] of indices into the batch (`box_indices`:
        TensorFlow 2's name).
      crop_size: 2 positive ints (known when the graph is built).
      method: "bilinear" or "nearest".
    Returns:
      float32 `Tensor` [num_boxes, crop_h, crop_w, depth]; differentiable in `image`
      and `boxes` (bilinear, as TensorFlow).
    Raises:
      InvalidArgumentError: bad shapes, `method` or `crop_size`.

    Differs from TensorFlow: a `box_ind` outside [0, batch) is not reported (XLA cannot
    raise from a compiled step); it reads a clamped image.
    """
    if box_ind is None:
        box_ind = box_indices
    if box_ind is None or crop_size is None:
        raise TypeError("crop_and_resize: box_ind and crop_size are required")
    if method not in ("bilinear", "nearest"):
        raise errors.InvalidArgumentError(
            f"crop_and_resize: method must be 'bilinear' or 'nearest'. Received: {method!r}")
    cs = tuple(int(v) for v in np.asarray(crop_size).reshape(-1))
    if len(cs) != 2 or min(cs) <= 0:
        raise errors.InvalidArgumentError(
            f"crop_and_resize: crop_size must be 2 positive ints. Received: {crop_size!r}")
    img = convert_to_tensor(image)
    return CropAndResize(img, convert_to_tensor(boxes, dtype_hint=_dtypes.float32),
                         convert_to_tensor(box_ind, dtype_hint=_dtypes.int32), crop_size=cs,
                         method=method, extrapolation_value=float(extrapolation_value),
                         name=name)


# ---------------------------------------------------------------- non_max_suppression
def _iou(a, b):
    ay1, ay2 = min(a[0], a[2]), max(a[0], a[2])
    ax1, ax2 = min(a[1], a[3]), max(a[1], a[3])
    by1, by2 = min(b[0], b[2]), max(b[0], b[2])
    bx1, bx2 = min(b[1], b[3]), max(b[1], b[3])
    area_a = (ay2 - ay1) * (ax2 - ax1)
    area_b = (by2 - by1) * (bx2 - bx1)
    if area_a <= 0 or area_b <= 0:
        return 0.0
    ih = max(min(ay2, by2) - max(ay1, by1), 0.0)
    iw = max(min(ax2, bx2) - max(ax1, bx1), 0.0)
    inter = ih * iw
    return inter / (area_a + area_b - inter)


def _nms_lower(ctx, op, boxes, scores, max_out, iou_threshold, score_threshold):
    boxes, scores = np.asarray(boxes, np.float64), np.asarray(scores, np.float64)
    k, thr, sthr = int(max_out), float(iou_threshold), float(score_threshold)
    if not 0.0 <= thr <= 1.0:
        raise errors.InvalidArgumentError(
            f"non_max_suppression {op.name!r}: iou_threshold must be in [0, 1], got {thr}",
            op=op)
    if k < 0:
        raise errors.InvalidArgumentError(
            f"non_max_suppression {op.name!r}: max_output_size must be >= 0, got {k}", op=op)
    order = [i for i in np.argsort(-scores, kind="stable") if scores[i] > sthr]
    keep = []
    for i in order:
        if len(keep) == k:
            break
        if all(_iou(boxes[i], boxes[j]) <= thr for j in keep):
            keep.append(i)
    return (np.asarray(keep, np.int32),)


NonMaxSuppressionV3 = OpDef("NonMaxSuppressionV3", lower=_nms_lower, host=True)
NotDifferentiable("NonMaxSuppressionV3")


@NonMaxSuppressionV3.shape_fn
def _nms_shape(boxes, scores, max_out, iou, score):
    if boxes.shape.rank not in (None, 2) or (boxes.shape.rank == 2
                                             and boxes.shape.as_list()[1] not in (None, 4)):
        raise errors.InvalidArgumentError(f"boxes must be [num_boxes, 4], got {boxes.shape}")
    if scores.shape.rank not in (None, 1):
        raise errors.InvalidArgumentError(f"scores must be 1-D, got {scores.shape}")
    return TensorSpec([None], _dtypes.int32)


def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5,
                        score_threshold=float("-inf"), name=None):
    """Greedy non-maximum suppression: boxes by decreasing score (ties: lower index
    first), each kept unless its IoU with a kept box exceeds `iou_threshold`, at most
    `max_output_size`, only scores above `score_threshold`.

    Args:
      boxes: float `Tensor` [num_boxes, 4], ``[y1, x1, y2, x2]`` (any diagonal pair of
        corners).
      scores: float `Tensor` [num_boxes].
      max_output_size: int scalar (tensor or Python).
      iou_threshold: float in [0, 1]; score_threshold: float.
    Returns:
      int32 `Tensor` [M], M <= max_output_size: the kept boxes' indices in selection
      order.
    Raises:
      InvalidArgumentError: bad shapes; (at run time) an `iou_threshold` outside [0, 1].

    Differs from TensorFlow: runs on the host, between the compiled parts of a step
    (the number of kept boxes depends on the data, a shape XLA cannot compile); it has
    no padded fixed-size form here.
    """
    b = convert_to_tensor(boxes, dtype_hint=_dtypes.float32)
    s = convert_to_tensor(scores, dtype_hint=b.dtype)
    return NonMaxSuppressionV3(b, s, convert_to_tensor(max_output_size, dtype_hint=_dtypes.int32),
                               convert_to_tensor(iou_threshold, dtype_hint=_dtypes.float32),
                               convert_to_tensor(score_threshold, dtype_hint=_dtypes.float32),
                               name=name)
