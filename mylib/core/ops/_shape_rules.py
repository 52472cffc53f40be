"""Fast shape rules shared by many ops (each op still names its own rule)."""

from __future__ import annotations

from mylib import errors
from mylib.core import dtypes
from mylib.core.op_registry import TensorSpec
from mylib.core.tensor_shape import TensorShape, broadcast_shapes


def same_dtype(*specs):
    d = specs[0].dtype
    for i, s in enumerate(specs[1:], 1):
        if s.dtype != d:
            raise errors.InvalidArgumentError(
                f"input {i} has dtype {s.dtype.name} but input 0 has {d.name}; "
                "cast one of them (ml.cast) so the dtypes agree")
    return d


def unary(x, **_):
    return TensorSpec(x.shape, x.dtype)


def binary(x, y, **_):
    d = same_dtype(x, y)
    try:
        shape = broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise errors.InvalidArgumentError(
            f"incompatible shapes for broadcasting: {x.shape} vs {y.shape}") from None
    return TensorSpec(shape, d)


def comparison(x, y, **_):
    return TensorSpec(binary(x, y).shape, dtypes.bool_)


def reduction(x, *, axis=None, keepdims=False, **_):
    return TensorSpec(reduced_shape(x.shape, axis, keepdims), x.dtype)


def normalize_axis(axis, rank, what="axis"):
    if rank is None:
        return axis
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        raise errors.InvalidArgumentError(f"{what} {axis} is out of range for rank {rank}")
    return a


def reduced_shape(shape, axis, keepdims):
    if shape.rank is None:
        return TensorShape(None)
    dims = shape.as_list()
    if axis is None:
        axes = set(range(len(dims)))
    else:
        axes = {normalize_axis(a, len(dims)) for a in (axis if isinstance(axis, (tuple, list)) else [axis])}
    if keepdims:
        return TensorShape([1 if i in axes else d for i, d in enumerate(dims)])
    return TensorShape([d for i, d in enumerate(dims) if i not in axes])
