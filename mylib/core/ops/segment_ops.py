"""Segment and scatter ops: `unsorted_segment_sum` / `_mean` / `_max` / `_min` /
`_prod`, `segment_sum` / `_mean` / `_max` / `_min` / `_prod`, `scatter_nd`,
`tensor_scatter_nd_update` / `_add` / `_sub` / `_max` / `_min`.

Kernels are `jax.ops.segment_*` and `.at[]` updates; gradients come from the generic VJP
op (`jax.vjp` of the kernel). The number of segments and a scatter's output shape are
static, as XLA needs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mylib import errors
from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops.constant_ops import constant_value, ones_like
from mylib.core.ops import array_ops as _array, math_ops as _math
from mylib.core.ops.cast_ops import cast as _cast
from mylib.core.ops.math_ops import negative

__all__ = ["unsorted_segment_sum", "unsorted_segment_mean", "unsorted_segment_max",
           "unsorted_segment_min", "unsorted_segment_prod", "unsorted_segment_sqrt_n",
           "segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod",
           "scatter_nd", "tensor_scatter_nd_update", "tensor_scatter_nd_add",
           "tensor_scatter_nd_sub", "tensor_scatter_nd_max", "tensor_scatter_nd_min",
           "tensor_scatter_update", "tensor_scatter_add", "tensor_scatter_sub",
           "confusion_matrix"]

_SEGMENT_FNS = {"sum": jax.ops.segment_sum, "max": jax.ops.segment_max,
                "min": jax.ops.segment_min}


def _flat_ids(data, ids):
    # ids may be [d0, ..., dk-1]: flatten those leading axes of data with them.
    k = ids.ndim
    return data.reshape((-1,) + data.shape[k:]), ids.reshape(-1)


def _segment_kernel(data, ids, *, kind, num_segments):
    d, i = _flat_ids(data, ids)
    i = i.astype(jnp.int32)
    if kind in ("mean", "sqrt_n"):
        s = jax.ops.segment_sum(d, i, num_segments)
        n = jax.ops.segment_sum(jnp.ones(i.shape, d.dtype), i, num_segments)
        n = jnp.maximum(n, 1)
        n = n if kind == "mean" else jnp.sqrt(n)
        return s / n.reshape((-1,) + (1,) * (d.ndim - 1))
    if kind == "prod":
        # jax's segment_prod has no gradient for repeated ids: a product over a one-hot
        # selection (memory num_segments x n) is differentiable.
        hit = i[None, :] == jnp.arange(num_segments)[:, None]
        hit = hit.reshape(hit.shape + (1,) * (d.ndim - 1))
        return jnp.prod(jnp.where(hit, d[None], jnp.ones((), d.dtype)), axis=1)
    out = _SEGMENT_FNS[kind](d, i, num_segments)
    if kind in ("max", "min") and jnp.issubdtype(d.dtype, jnp.floating):
        # jax fills empty segments with -inf / +inf; TensorFlow with the dtype's
        # lowest / highest finite value.
        info = jnp.finfo(d.dtype)
        out = jnp.where(jnp.isinf(out), info.min if kind == "max" else info.max, out)
    return out


UnsortedSegment = OpDef("UnsortedSegment", kernel=_segment_kernel)


@UnsortedSegment.shape_fn
def _segment_shape(data, ids, *, kind, num_segments):
    k = ids.shape.rank
    if data.shape.rank is not None and k is not None:
        if not ids.shape.is_compatible_with(data.shape[:k]):
            raise errors.InvalidArgumentError(
                f"segment_ids shape {ids.shape} must be a prefix of data's shape {data.shape}")
        return TensorSpec([num_segments] + data.shape.as_list()[k:], data.dtype)
    return TensorSpec(None, data.dtype)


def _static_int(v, what, owner):
    if hasattr(v, "op"):
        cv = constant_value(v)
        if cv is None:
            raise errors.UnimplementedError(
                f"{owner}: `{what}` must be known when the graph is built (XLA needs the "
                "output shape static); pass a Python int")
        v = cv
    return int(v)


def _unsorted(kind):
    def fn(data, segment_ids, num_segments, name=None):
        data = convert_to_tensor(data)
        ids = convert_to_tensor(segment_ids)
        if not ids.dtype.is_integer:
            raise TypeError(f"unsorted_segment_{kind}: `segment_ids` must be integers, got "
                            f"{ids.dtype.name}")
        n = _static_int(num_segments, "num_segments", f"unsorted_segment_{kind}")
        return UnsortedSegment(data, ids, kind=kind, num_segments=n, name=name)

    fn.__name__ = f"unsorted_segment_{kind}"
    fn.__doc__ = f"""Per-segment {kind} of `data`: ``out[j] = {kind} of data[i] where
    segment_ids[i] == j``, for j in ``range(num_segments)``.

    Args:
      data: `Tensor` [d0, ..., d(k-1), ...rest].
      segment_ids: int `Tensor` [d0, ..., d(k-1)]; ids outside [0, num_segments) are
        dropped.
      num_segments: Python int (or constant).
    Returns:
      `Tensor` [num_segments, ...rest] of `data`'s dtype. An empty segment gives 0 for
      sum/mean/sqrt_n, 1 for prod, and the dtype's lowest (max) / highest (min) value.
    """
    return fn


unsorted_segment_sum = _unsorted("sum")
unsorted_segment_mean = _unsorted("mean")
unsorted_segment_max = _unsorted("max")
unsorted_segment_min = _unsorted("min")
unsorted_segment_prod = _unsorted("prod")
unsorted_segment_sqrt_n = _unsorted("sqrt_n")


def _sorted(kind):
    def fn(data, segment_ids, name=None):
        ids = convert_to_tensor(segment_ids)
        cv = constant_value(ids)
        if cv is None:
            raise errors.UnimplementedError(
                f"segment_{kind}: the number of segments is max(segment_ids) + 1, a shape "
                "that depends on the data, which XLA cannot compile; use "
                f"unsorted_segment_{kind}(data, segment_ids, num_segments) with a static "
                "num_segments")
        n = int(np.max(cv)) + 1 if np.size(cv) else 0
        return _unsorted(kind)(data, ids, n, name=name)

    fn.__name__ = f"segment_{kind}"
    fn.__doc__ = f"""Per-segment {kind} for sorted `segment_ids` (TensorFlow's
    `segment_{kind}`): `unsorted_segment_{kind}` with ``max(segment_ids) + 1`` segments.

    Differs from TensorFlow: `segment_ids` must be a constant (the number of segments
    sets the output shape, which XLA needs static); otherwise use
    `unsorted_segment_{kind}` with `num_segments`.
    """
    return fn


segment_sum = _sorted("sum")
segment_mean = _sorted("mean")
segment_max = _sorted("max")
segment_min = _sorted("min")
segment_prod = _sorted("prod")


# ---------------------------------------------------------------- scatter
def _scatter_index(indices):
    return tuple(jnp.moveaxis(indices.astype(jnp.int32), -1, 0))


def _scatter_nd_kernel(indices, updates, *, shape):
    return jnp.zeros(shape, updates.dtype).at[_scatter_index(indices)].add(updates)


ScatterNd = OpDef("ScatterNd", kernel=_scatter_nd_kernel,
                  index_check=lambda ctx, op, i, u, *, shape: [(0, shape[:i.shape[-1]], True)])


def _tensor_scatter_kernel(tensor, indices, updates, *, mode):
    at = jnp.asarray(tensor).at[_scatter_index(indices)]  # a constant is numpy
    return getattr(at, mode)(updates)


TensorScatter = OpDef("TensorScatter", kernel=_tensor_scatter_kernel,
                      index_check=lambda ctx, op, t, i, u, *, mode:
                      [(1, t.shape[:i.shape[-1]], True)])


def _check_scatter(indices, updates, shape, owner):
    if not indices.dtype.is_integer:
        raise TypeError(f"{owner}: `indices` must be integers, got {indices.dtype.name}")
    if indices.shape.rank is None or updates.shape.rank is None or shape is None:
        return
    q = indices.shape.rank
    k = indices.shape.as_list()[-1]
    if k is None:
        return
    expect = indices.shape.as_list()[:-1] + list(shape)[k:]
    if not updates.shape.is_compatible_with(expect):
        raise errors.InvalidArgumentError(
            f"{owner}: updates must have shape indices.shape[:-1] + shape[indices.shape[-1]:]"
            f" = {expect}; got {updates.shape} (indices {indices.shape}, rank {q})")


def scatter_nd(indices, updates, shape, name=None):
    """A zero tensor of `shape` with `updates` added at `indices` (duplicates sum).

    Args:
      indices: int `Tensor` [..., k], each row an index into the first k axes.
      updates: `Tensor` [..., *shape[k:]].
      shape: list of Python ints (or a constant).
    Returns:
      `Tensor` of `shape`, `updates`' dtype.
    Raises:
      InvalidArgumentError: (from `Session.run`) an index out of range, as TensorFlow
        on CPU (inside a loop body, or where nothing waits on the step, it is dropped).
    """
    indices = convert_to_tensor(indices)
    updates = convert_to_tensor(updates)
    if hasattr(shape, "op"):
        cv = constant_value(shape)
        if cv is None:
            raise errors.UnimplementedError("scatter_nd: `shape` must be known when the graph "
                                            "is built; pass a list of ints")
        shape = cv
    shape = tuple(int(s) for s in np.asarray(shape).reshape(-1))
    _check_scatter(indices, updates, shape, "scatter_nd")
    return ScatterNd(indices, updates, shape=shape, name=name)


def _tensor_scatter(mode, what):
    def fn(tensor, indices, updates, name=None):
        tensor = convert_to_tensor(tensor)
        indices = convert_to_tensor(indices)
        updates = convert_to_tensor(updates, dtype_hint=tensor.dtype)
        owner = f"tensor_scatter_nd_{mode}"
        shape = tensor.shape.as_list() if tensor.shape.rank is not None else None
        _check_scatter(indices, updates, shape, owner)
        if mode == "sub":
                updates, mode_ = negative(updates), "add"
        else:
            mode_ = {"update": "set"}.get(mode, mode)
        return TensorScatter(tensor, indices, updates, mode=mode_, name=name)

    fn.__name__ = f"tensor_scatter_nd_{mode}"
    fn.__doc__ = f"""A copy of `tensor` with `updates` {what} at `indices`.

    Args:
      tensor: `Tensor`.
      indices: int `Tensor` [..., k].
      updates: `Tensor` [..., *tensor.shape[k:]], `tensor`'s dtype.
    Returns:
      `Tensor` of `tensor`'s shape and dtype.
    Raises:
      InvalidArgumentError: (from `Session.run`) an index out of range, as TensorFlow
        on CPU (inside a loop body, or where nothing waits on the step, it is dropped).
    """
    return fn


tensor_scatter_nd_update = _tensor_scatter("update", "written (for duplicate indices, one "
                                           "of the writes wins)")
tensor_scatter_nd_add = _tensor_scatter("add", "added (duplicates sum)")
tensor_scatter_nd_sub = _tensor_scatter("sub", "subtracted (duplicates sum)")
tensor_scatter_nd_max = _tensor_scatter("max", "combined by maximum")
tensor_scatter_nd_min = _tensor_scatter("min", "combined by minimum")

# TensorFlow 1.13-1.15's names
tensor_scatter_update = tensor_scatter_nd_update
tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub


def confusion_matrix(labels, predictions, num_classes=None, weights=None,
                     dtype=_dtypes.int32, name=None):
    """Counts of (label, prediction) pairs: ``m[i, j]`` is the number (or summed
    `weights`) of examples with label i predicted as j.

    Args:
      labels, predictions: int `Tensor`s [n].
      num_classes: Python int. Without it, both inputs must be constants (the size is
        then ``max(labels, predictions) + 1``), as the matrix's shape must be static.
      weights: optional `Tensor` [n].
      dtype: the matrix's dtype.
    Returns:
      `Tensor` [num_classes, num_classes] of `dtype`. Pairs out of range are dropped
      (TensorFlow raises).
    Raises:
      UnimplementedError: without `num_classes` for inputs computed at run time.
    """
    lab = convert_to_tensor(labels)
    pred = convert_to_tensor(predictions)
    if num_classes is None:
        lv, pv = constant_value(lab), constant_value(pred)
        if lv is None or pv is None:
            raise errors.UnimplementedError(
                "confusion_matrix: pass num_classes= (the matrix's size must be known when "
                "the graph is built)")
        num_classes = int(max(np.max(lv, initial=-1), np.max(pv, initial=-1))) + 1
    num_classes = _static_int(num_classes, "num_classes", "confusion_matrix")
    d = _dtypes.as_dtype(dtype)
    lab, pred = _cast(lab, _dtypes.int32), _cast(pred, _dtypes.int32)
    ids = _math.add(_math.multiply(lab, num_classes), pred)
    valid = _math.logical_and(
        _math.logical_and(_math.greater_equal(lab, 0), _math.less(lab, num_classes)),
        _math.logical_and(_math.greater_equal(pred, 0), _math.less(pred, num_classes)))
    ids = _array.where(valid, ids, -1)
    w = (ones_like(ids) if weights is None else convert_to_tensor(weights))
    w = _cast(w, d)
    flat = unsorted_segment_sum(w, ids, num_classes * num_classes)
    return _array.reshape(flat, [num_classes, num_classes], name=name)
