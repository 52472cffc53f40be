"""Colour-space image ops (TensorFlow's `tf.image`): `rgb_to_hsv` / `hsv_to_rgb` and the
hue, saturation and gamma adjustments built on them, with their random versions (the
colour distortions of TensorFlow's CIFAR-10 and Inception input pipelines).

Images are float RGB in [0, 1] with channels last (`[..., 3]`); integer images go
through float32 and back, as in TensorFlow.
"""

from __future__ import annotations

import jax.numpy as jnp

from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops import array_ops, math_ops, random_ops
from mylib.core.ops.image_ops import convert_image_dtype

__all__ = ["rgb_to_hsv", "hsv_to_rgb", "adjust_hue", "adjust_saturation", "adjust_gamma",
           "random_hue", "random_saturation"]


def _rgb_to_hsv_kernel(rgb):
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    v = jnp.max(rgb, axis=-1)
    rng = v - jnp.min(rgb, axis=-1)
    s = jnp.where(v > 0, rng / jnp.where(v > 0, v, 1), 0)
    norm = 1.0 / (6.0 * jnp.where(rng > 0, rng, 1))
    h = jnp.where(r == v, norm * (g - b),
                  jnp.where(g == v, norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0))
    h = jnp.where(rng > 0, h, 0)
    h = jnp.where(h < 0, h + 1, h)
    return jnp.stack([h, s, v], axis=-1).astype(rgb.dtype)


def _hsv_to_rgb_kernel(hsv):
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    c = s * v
    m = v - c
    dh = h * 6
    cat = jnp.floor(dh)
    x = c * (1 - jnp.abs(jnp.fmod(dh, 2) - 1))
    z = jnp.zeros_like(c)
    # the sextant of the hue picks where c and x go; a hue outside [0, 1) gives black + m
    table = [(c, x, z), (x, c, z), (z, c, x), (z, x, c), (x, z, c), (c, z, x)]
    rgb = [z, z, z]
    for k, parts in enumerate(table):
        rgb = [jnp.where(cat == k, p, q) for p, q in zip(parts, rgb)]
    return (jnp.stack(rgb, axis=-1) + m[..., None]).astype(hsv.dtype)


def _same_shape_rgb(x):
    if not x.dtype.is_floating:
        raise TypeError(f"expected a float image, got {x.dtype.name}")
    last = x.shape.as_list()[-1] if x.shape.rank else None
    if last not in (None, 3):
        raise ValueError(f"the last dimension must be 3 (RGB or HSV), got shape {x.shape}")
    return TensorSpec(x.shape, x.dtype)


RGBToHSV = OpDef("RGBToHSV", kernel=_rgb_to_hsv_kernel, shape_fn=_same_shape_rgb)
HSVToRGB = OpDef("HSVToRGB", kernel=_hsv_to_rgb_kernel, shape_fn=_same_shape_rgb)


def rgb_to_hsv(images, name=None):
    """RGB to HSV, as TensorFlow: hue in [0, 1) (a sixth per primary sector, 0 for
    greys), saturation ``range / max`` (0 for black), value ``max``.

    Args:
      images: float `Tensor` [..., 3], RGB in [0, 1].
    Returns:
      `Tensor` of the same shape and dtype.
    Raises:
      ValueError: if the last dimension is not 3. TypeError: for a non-float image.
    """
    return RGBToHSV(convert_to_tensor(images), name=name)


def hsv_to_rgb(images, name=None):
    """HSV to RGB, the inverse of `rgb_to_hsv` (TensorFlow's sector formula).

    Args:
      images: float `Tensor` [..., 3], hue in [0, 1), saturation and value in [0, 1].
    Returns:
      `Tensor` of the same shape and dtype.
    Raises:
      ValueError: if the last dimension is not 3. TypeError: for a non-float image.
    """
    return HSVToRGB(convert_to_tensor(images), name=name)


def _in_hsv(image, fn, name):
    x = convert_to_tensor(image)
    d = x.dtype
    f = x if d.is_floating else convert_image_dtype(x, _dtypes.float32)
    h, s, v = array_ops.unstack(rgb_to_hsv(f), axis=-1)
    out = hsv_to_rgb(array_ops.stack(list(fn(h, s, v)), axis=-1))
    return convert_image_dtype(out, d, name=name) if not d.is_floating else out


def adjust_hue(image, delta, name=None):
    """Rotates the hue of RGB `image` by `delta` (a fraction of the colour wheel,
    in [-1, 1]): ``hue = (hue + delta) mod 1``.

    Args:
      image: `Tensor` [..., 3], float RGB in [0, 1] or integer.
      delta: float or scalar float `Tensor`.
    Returns:
      `Tensor` of `image`'s shape and dtype.
    """
    return _in_hsv(image, lambda h, s, v: (math_ops.floormod(h + delta, 1.0), s, v), name)


def adjust_saturation(image, saturation_factor, name=None):
    """Scales the saturation of RGB `image` by `saturation_factor`, clipped to [0, 1].

    Args:
      image: `Tensor` [..., 3], float RGB in [0, 1] or integer.
      saturation_factor: float or scalar float `Tensor`, >= 0.
    Returns:
      `Tensor` of `image`'s shape and dtype.
    """
    return _in_hsv(image, lambda h, s, v: (
        h, math_ops.minimum(math_ops.maximum(s * saturation_factor, 0.0), 1.0), v), name)


def adjust_gamma(image, gamma=1, gain=1):
    """``gain * image ** gamma`` on images scaled to [0, 1] (integers go through
    float32 and back, as TensorFlow).

    Raises:
      ValueError: if `gamma` is a negative Python number.
    """
    if isinstance(gamma, (int, float)) and gamma < 0:
        raise ValueError(f"adjust_gamma: gamma must be non-negative. Received: {gamma}")
    x = convert_to_tensor(image)
    d = x.dtype
    f = x if d.is_floating else convert_image_dtype(x, _dtypes.float32)
    out = gain * math_ops.pow(f, gamma)
    return out if d.is_floating else convert_image_dtype(out, d)


def random_hue(image, max_delta, seed=None):
    """`adjust_hue` by a delta drawn uniformly from [-max_delta, max_delta].

    Raises:
      ValueError: unless 0 <= max_delta <= 0.5.
    """
    if not 0 <= max_delta <= 0.5:
        raise ValueError(f"random_hue: max_delta must be in [0, 0.5]. Received: {max_delta}")
    return adjust_hue(image, random_ops.random_uniform([], -max_delta, max_delta, seed=seed))


def random_saturation(image, lower, upper, seed=None):
    """`adjust_saturation` by a factor drawn uniformly from [lower, upper].

    Raises:
      ValueError: unless 0 <= lower < upper.
    """
    if not 0 <= lower < upper:
        raise ValueError(f"random_saturation: need 0 <= lower < upper. Received: "
                         f"lower={lower}, upper={upper}")
    return adjust_saturation(image, random_ops.random_uniform([], lower, upper, seed=seed))
