"""Clipping: `clip_by_value`, `clip_by_norm`, `global_norm`, `clip_by_global_norm`."""

from __future__ import annotations

from mylib.core.indexed_slices import IndexedSlices
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops
from mylib.core.ops.nn_ops import l2_loss

__all__ = ["clip_by_value", "clip_by_norm", "global_norm", "clip_by_global_norm"]


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Clips `t` element-wise to `[clip_value_min, clip_value_max]` (broadcasting).

    The gradient passes where `t` is inside the range (ties included), else it is 0.
    """
    t = convert_to_tensor(t)
    return math_ops.minimum(math_ops.maximum(t, clip_value_min), clip_value_max, name=name)


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """Scales `t` so that its L2 norm over `axes` is at most `clip_norm`."""
    t = convert_to_tensor(t)
    l2sum = reduction_ops.reduce_sum(t * t, axes, keepdims=True)
    pred = math_ops.greater(l2sum, 0)
    safe = array_ops.where(pred, l2sum, constant_ops.ones_like(l2sum))
    norm = array_ops.where(pred, math_ops.sqrt(safe), l2sum)
    return math_ops.divide(t * clip_norm, math_ops.maximum(norm, clip_norm), name=name)


def _values(t):
    return t.values if isinstance(t, IndexedSlices) else convert_to_tensor(t)


def global_norm(t_list, name=None):
    """`sqrt(sum(l2norm(t) ** 2 for t in t_list))`, skipping None entries."""
    parts = [l2_loss(_values(t)) for t in t_list if t is not None]
    if not parts:  # every entry None (no variable gets a gradient): the norm is 0
        return constant_ops.constant(0.0, name=name or "global_norm")
    dt = parts[0].dtype
    parts = [p if p.dtype == dt else math_ops.cast(p, dt) for p in parts]
    return math_ops.sqrt(math_ops.add_n(parts) * 2, name=name or "global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scales every tensor by `clip_norm / max(global_norm, clip_norm)` (Pascanu et al.,
    2012), as TensorFlow's.

    Args:
      t_list: list of `Tensor`s, `IndexedSlices` or None (kept as None).
      clip_norm: positive scalar.
      use_norm: optional precomputed global norm.
    Returns:
      `(list_clipped, global_norm)`. A NaN/inf global norm gives NaN tensors, as TF.
    """
    t_list = list(t_list)
    norm = global_norm(t_list) if use_norm is None else convert_to_tensor(use_norm)
    clip = convert_to_tensor(clip_norm, dtype_hint=norm.dtype)
    if clip.dtype != norm.dtype:
        clip = math_ops.cast(clip, norm.dtype)
    scale = clip * math_ops.minimum(1.0 / norm, 1.0 / clip)
    # An inf norm would give scale 0 (silently zeroed gradients); TF gives NaN.
    scale = array_ops.where(math_ops.is_finite(norm), scale, scale + float("nan"))
    out = []
    for t in t_list:
        if t is None:
            out.append(None)
        elif isinstance(t, IndexedSlices):
            v = t.values * math_ops.cast(scale, t.values.dtype)
            out.append(IndexedSlices(v, t.indices, t.dense_shape))
        else:
            t = convert_to_tensor(t)
            out.append(t * math_ops.cast(scale, t.dtype))
    return out, norm
