"""Constant ops: tensors whose values are known when the graph is built.

Literal constants (`constant`; `constant_value` reads one back), fills (`fill`, `zeros`,
`ones`, `zeros_like`, `ones_like`) and ranges (`range`). Kernels return numpy rather than
jnp where they can, so shape-like values stay static while a step is traced. A shape-like
argument (``fill``'s dims) may be a tensor, but it must be computable when the step is
compiled (constants, `shape` of a tensor, arithmetic on those); a fed one raises
InvalidArgumentError.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.op_registry import (NotDifferentiable, OpDef, RegisterGradient, TensorSpec,
                                    convert_to_tensor)
from mylib.core.ops import _shape_rules
from mylib.core.tensor_shape import TensorShape, as_shape

__all__ = ["constant", "constant_value", "fill", "zeros", "ones", "zeros_like", "ones_like",
           "range"]


def _static_ints(value, what):
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001 - a tracer
        arr = None
    if arr is None or arr.dtype == object:
        raise errors.InvalidArgumentError(
            f"{what} must be known when the step is compiled (a constant or a shape), "
            "not a fed or computed-at-run-time tensor")
    return tuple(int(d) for d in arr.reshape(-1))


# ---------------------------------------------------------------- Const
def _const_kernel(*, value, dtype):
    # numpy, not jnp: a constant stays concrete while the step is traced, so shape-like
    # values (reshape's shape, shape arithmetic) are static for XLA.
    return np.asarray(value)


Const = OpDef("Const", kernel=_const_kernel)


@Const.shape_fn
def _const_shape(*, value, dtype):
    return TensorSpec(np.shape(value), dtype)


NotDifferentiable("Const")


def _python_dtype(value):
    """TensorFlow's defaults: Python float -> float32, int -> int32 (int64 if large)."""
    if isinstance(value, bool):
        return _dtypes.bool_
    if isinstance(value, int):
        return _dtypes.int32 if -2**31 <= value < 2**31 else _dtypes.int64
    if isinstance(value, float):
        return _dtypes.float32
    if isinstance(value, complex):
        return _dtypes.complex64
    if isinstance(value, (list, tuple)):
        flat = np.asarray(value, dtype=object).reshape(-1)
        if flat.size == 0:
            return _dtypes.float32
        kinds = {_python_dtype(v.item() if isinstance(v, np.generic) else v) for v in flat
                 if not isinstance(v, np.ndarray)}
        for order in (_dtypes.complex64, _dtypes.float32, _dtypes.int64, _dtypes.int32,
                      _dtypes.bool_):
            if order in kinds:
                return order
        return _dtypes.as_dtype(np.asarray(value).dtype)
    return None


def constant(value, dtype=None, shape=None, name="Const", _dtype_hint=None):
    """A constant tensor.

    Args:
      value: Python scalar, nested list, numpy or JAX array.
      dtype: optional `DType`; Python values default to float32/int32 as in TensorFlow,
        numpy arrays keep their dtype.
      shape: optional shape to broadcast or reshape `value` to.
    Returns:
      `Tensor` of `value`'s shape (or `shape`).
    Raises:
      TypeError: if `value` cannot be represented exactly in `dtype` (e.g. 1.5 as int32).
    """
    if dtype is not None:
        dt = _dtypes.as_dtype(dtype)
    else:
        dt = None
        if not isinstance(value, (np.ndarray, np.generic)) and not hasattr(value, "__jax_array__") \
                and not hasattr(value, "dtype"):
            pd = _python_dtype(value)
            if _dtype_hint is not None and pd is not None:
                hint = _dtypes.as_dtype(_dtype_hint)
                # A Python number adopts the other operand's dtype (x + 1.0, x * 2).
                if not (pd.is_floating and hint.is_integer) and not (pd.is_complex and not hint.is_complex):
                    pd = hint
            dt = pd
        if dt is None:
            dt = _dtypes.as_dtype(np.asarray(value).dtype)
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError(f"Cannot convert {value!r} to a tensor")
    if dt.is_integer and arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dt.name}: "
                            "the value is not an integer")
    if dt.is_integer and arr.dtype.kind in "iu" and arr.size:
        if arr.min() < dt.min or arr.max() > dt.max:
            raise TypeError(f"Value {value!r} is out of range for dtype {dt.name}")
    arr = arr.astype(dt.np)
    if shape is not None:
        shape = tuple(as_shape(shape).as_list())
        if arr.size == 1:
            arr = np.broadcast_to(arr.reshape(()), shape).copy()
        elif arr.size == int(np.prod(shape)):
            arr = arr.reshape(shape)
        else:
            raise TypeError(f"Expected {int(np.prod(shape))} values for shape {shape}, got {arr.size}")
    return Const(value=arr, dtype=dt.name, name=name)


def constant_value(tensor):
    """The value of `tensor` as numpy if it is known when the graph is built, else None."""
    op = tensor.op
    if op.type == "Const":
        return op.attrs["value"]
    if op.type == "Shape" and op.inputs[0].shape.is_fully_defined():
        return np.array(op.inputs[0].shape.as_list(), dtype=tensor.dtype.np)
    if op.type == "Pack":
        vals = [constant_value(t) for t in op.inputs]
        if all(v is not None for v in vals):
            return np.stack(vals, axis=op.attrs.get("axis", 0))
    if op.type == "Identity":
        return constant_value(op.inputs[0])
    return None


# ---------------------------------------------------------------- fill
def _fill_kernel(dims, value):
    return jnp.full(_static_ints(dims, "Fill's dims"), value)


Fill = OpDef("Fill", kernel=_fill_kernel)


@Fill.shape_fn
def _fill_shape(dims, value):
    n = dims.shape[0] if dims.shape.rank else None
    return TensorSpec(TensorShape(None) if n is None else [None] * n, value.dtype)


@RegisterGradient("Fill")
def _fill_grad(op, grad):
    from mylib.core.ops.reduction_ops import reduce_sum  # it imports this module

    return [None, reduce_sum(grad)]


def fill(dims, value, name=None):
    """A tensor of shape `dims` filled with scalar `value`."""
    d = convert_to_tensor(dims, dtype_hint=_dtypes.int32)
    v = convert_to_tensor(value)
    out = Fill(d, v, name=name)
    cv = constant_value(d)
    if cv is not None:
        out._shape = TensorShape([int(x) for x in np.asarray(cv).reshape(-1)])
    return out


def zeros(shape, dtype=_dtypes.float32, name=None):
    """A tensor of zeros. `shape` is a list or a 1-D int tensor."""
    dt = _dtypes.as_dtype(dtype)
    return fill(shape, constant(0, dtype=dt), name=name)


def ones(shape, dtype=_dtypes.float32, name=None):
    """A tensor of ones. `shape` is a list or a 1-D int tensor."""
    dt = _dtypes.as_dtype(dtype)
    return fill(shape, constant(1, dtype=dt), name=name)


ZerosLike = OpDef("ZerosLike", kernel=jnp.zeros_like, shape_fn=_shape_rules.unary)
OnesLike = OpDef("OnesLike", kernel=jnp.ones_like, shape_fn=_shape_rules.unary)
NotDifferentiable("ZerosLike")
NotDifferentiable("OnesLike")


def zeros_like(tensor, dtype=None, name=None):
    """Zeros with the shape (and dtype, unless given) of `tensor`."""
    t = convert_to_tensor(tensor)
    out = ZerosLike(t, name=name)
    if dtype is not None and _dtypes.as_dtype(dtype) != t.dtype:
        from mylib.core.ops.math_ops import cast  # it imports this module

        out = cast(out, dtype)
    return out


def ones_like(tensor, dtype=None, name=None):
    """Ones with the shape (and dtype, unless given) of `tensor`."""
    t = convert_to_tensor(tensor)
    out = OnesLike(t, name=name)
    if dtype is not None and _dtypes.as_dtype(dtype) != t.dtype:
        from mylib.core.ops.math_ops import cast  # it imports this module

        out = cast(out, dtype)
    return out


# ---------------------------------------------------------------- range
def _range_kernel(*, start, limit, delta, dtype):
    return np.arange(start, limit, delta, dtype=_dtypes.as_dtype(dtype).np)


Range = OpDef("Range", kernel=_range_kernel)
NotDifferentiable("Range")


@Range.shape_fn
def _range_shape(*, start, limit, delta, dtype):
    if delta == 0:
        raise errors.InvalidArgumentError("delta must not be zero")
    return TensorSpec([len(np.arange(start, limit, delta))], dtype)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF's name
    """`[start, start + delta, ...]` up to (not including) `limit`, like Python's range.

    Arguments must be known when the graph is built (XLA needs the length static).
    `dtype` defaults to int32 for integer arguments, float32 otherwise.
    """
    vals = []
    for v in (start, limit, delta):
        if hasattr(v, "op"):
            cv = constant_value(v)
            if cv is None:
                raise errors.InvalidArgumentError("range arguments must be known when the "
                                                  "graph is built")
            v = cv.item()
        vals.append(v)
    start, limit, delta = vals
    if limit is None:
        start, limit = 0, start
    if dtype is None:
        dtype = (_dtypes.int32 if all(isinstance(v, (int, np.integer)) for v in vals if
                                      v is not None) else _dtypes.float32)
    return Range(start=start, limit=limit, delta=delta, dtype=_dtypes.as_dtype(dtype).name,
                 name=name)
