"""Constant ops: tensors whose values are known when the graph is built.

Literal constants (`constant`; `constant_value` reads one back), fills (`fill`, `zeros`,
`ones`, `zeros_like`, `ones_like`) and ranges (`range`). Kernels return numpy rather than
jnp where they can, so shape-like values stay static while a step is traced. A shape-like
argument (``fill``'s dims) may be a tensor, but it must be computable when the step is
compiled (constants, `shape` of a tensor, arithmetic on those). One computed from fed
integers makes the runtime compile the step for their values (see
`mylib.runtime.compile.compile_step`); otherwise the kernel raises InvalidArgumentError.
"""

from __future__ import annotations

import builtins as _b

import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.op_registry import (NotDifferentiable, OpDef, TensorSpec, _const_array,
                                    convert_to_tensor)
from mylib.core.ops import _shape_rules
from mylib.core.ops.cast_ops import cast
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


def _to_bytes(x):
    if isinstance(x, bytes):
        return x
    if isinstance(x, (str, np.str_)):
        return x.encode("utf-8")
    raise TypeError(f"Cannot convert {x!r} to a string tensor element (str or bytes)")


def _string_array(value, dtype):
    """An object array of bytes if `value` is text (str, bytes, nested lists of them or
    a numpy U/S/object array of them) or `dtype` is string; else None."""
    if dtype is not None and _dtypes.as_dtype(dtype) != _dtypes.string:
        return None
    if dtype is None:
        probe = value
        while isinstance(probe, (list, tuple)) and probe:
            probe = probe[0]
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "USO" or (value.dtype.kind == "O" and value.size
                                                  and not isinstance(value.flat[0], (str, bytes))):
                return None
        elif not isinstance(probe, (str, bytes, np.str_, np.bytes_)):
            return None
    arr = np.asarray(value, dtype=object)
    out = np.empty(arr.shape, dtype=object)
    for i, x in np.ndenumerate(arr):
        out[i] = _to_bytes(x)
    return out


def constant(value, dtype=None, shape=None, name="Const", _dtype_hint=None):
    """A constant tensor.

    Args:
      value: Python scalar, nested list, numpy or JAX array; or text (``str``,
        ``bytes``, nested lists of them, a numpy string array): a `string` tensor whose
        elements are bytes (``str`` encoded as UTF-8), fetched as bytes as in TF1.
      dtype: optional `DType`; Python values default to float32/int32 as in TensorFlow
        (text to `string`), numpy arrays keep their dtype.
      shape: optional shape to broadcast or reshape `value` to.
    Returns:
      `Tensor` of `value`'s shape (or `shape`).
    Raises:
      TypeError: if `value` cannot be represented exactly in `dtype` (e.g. 1.5 as int32).
    """
    strings = _string_array(value, dtype)
    if strings is not None:
        arr, dt = strings, _dtypes.string
    else:
        arr, dt = _const_array(value, dtype, _dtype_hint)
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


def _constant_dim(t):
    """A scalar size tensor's value if known when the graph is built (-1: unknown), else
    None: a constant, or `shape(x)[i]` where x's dimension i is known."""
    op = t.op
    if op.type in ("Cast", "Identity"):
        return _constant_dim(op.inputs[0])
    cv = constant_value(t)
    if cv is not None:
        return int(cv) if np.ndim(cv) == 0 and int(cv) >= 0 else None
    src = shape_dim_source(t)
    return None if src is None else src[0].shape[src[1]]


def shape_dim_source(t):
    """`(x, i)` if the scalar tensor `t` is `shape(x)[i]` (through casts), else None;
    i is normalized to be non-negative."""
    op = t.op
    if op.type in ("Cast", "Identity"):
        return shape_dim_source(op.inputs[0])
    if (op.type == "StridedSlice" and len(op.inputs) == 1 and op.inputs[0].op.type == "Shape"
            and len(op.attrs["spec"]) == 1 and op.attrs["spec"][0][0] == "int"):
        x = op.inputs[0].op.inputs[0]
        i, rank = op.attrs["spec"][0][1], x.shape.rank
        if rank is not None and -rank <= i < rank:
            return x, i % rank
    return None


def constant_value_as_shape(tensor):
    """The static `TensorShape` a 1-D shape tensor describes, as far as the graph tells
    (TensorFlow's ``constant_value_as_shape``): known entries of a constant, of `shape(x)`
    or a slice of it, of a stacked list of scalars (`[shape(x)[0], 8]` gives (?, 8)), of a
    concatenation of those; unknown (`?`) elsewhere."""
    t = convert_to_tensor(tensor, dtype_hint=_dtypes.int32)
    op = t.op
    cv = constant_value(t)
    if cv is not None:
        return TensorShape([int(d) for d in np.asarray(cv).reshape(-1)])  # -1 is unknown
    if op.type in ("Cast", "Identity"):
        return constant_value_as_shape(op.inputs[0])
    if op.type == "Shape":
        return op.inputs[0].shape
    if op.type == "Pack" and all(x.shape.rank in (0, None) for x in op.inputs):
        return TensorShape([_constant_dim(x) for x in op.inputs])
    if op.type == "ConcatV2":
        out = TensorShape([])
        for x in op.inputs:
            out = out.concatenate(constant_value_as_shape(x))
        return out
    if (op.type == "StridedSlice" and len(op.inputs) == 1 and op.inputs[0].op.type == "Shape"
            and len(op.attrs["spec"]) == 1 and op.attrs["spec"][0][0] == "slice"):
        whole = op.inputs[0].op.inputs[0].shape
        if whole.rank is not None:
            return whole[slice(*op.attrs["spec"][0][1:])]
    n = t.shape[0] if t.shape.rank == 1 else None
    return TensorShape(None) if n is None else TensorShape([None] * n)


# ---------------------------------------------------------------- fill
def _fill_kernel(dims, value):
    return jnp.full(_static_ints(dims, "Fill's dims"), value)


Fill = OpDef("Fill", kernel=_fill_kernel)


@Fill.shape_fn
def _fill_shape(dims, value):
    n = dims.shape[0] if dims.shape.rank else None
    return TensorSpec(TensorShape(None) if n is None else [None] * n, value.dtype)


# Fill's gradient (the sum of `grad`) is registered in `reduction_ops`, beside `Sum`,
# which sits above this module.


def fill(dims, value, name=None):
    """A tensor of shape `dims` filled with scalar `value`."""
    d = convert_to_tensor(dims, dtype_hint=_dtypes.int32)
    v = convert_to_tensor(value)
    out = Fill(d, v, name=name)
    out._shape = constant_value_as_shape(d).merge_with(out.shape)
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
        out = cast(out, dtype)
    return out


def ones_like(tensor, dtype=None, name=None):
    """Ones with the shape (and dtype, unless given) of `tensor`."""
    t = convert_to_tensor(tensor)
    out = OnesLike(t, name=name)
    if dtype is not None and _dtypes.as_dtype(dtype) != t.dtype:
        out = cast(out, dtype)
    return out


# ---------------------------------------------------------------- range
def _static_scalar(value, what):
    """A scalar size as numpy while the step is traced (from constants or shapes)."""
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001 - a tracer: a value fed or computed at run time
        arr = None
    if arr is None or arr.dtype == object or arr.ndim != 0:
        raise errors.InvalidArgumentError(
            f"{what} must be a scalar known when the step is compiled (a constant, or from "
            "the shape of a tensor), not a fed or computed-at-run-time value")
    return arr.item()


def _range_kernel(*args, start=None, limit=None, delta=None, dtype):
    if args:  # tensors whose values are static when the step is traced (`shape(x)[0]`)
        start, limit, delta = (_static_scalar(a, "range's " + n)
                               for a, n in zip(args, ("start", "limit", "delta")))
        if delta == 0:
            raise errors.InvalidArgumentError("range: delta must not be zero")
    return np.arange(start, limit, delta, dtype=_dtypes.as_dtype(dtype).np)


Range = OpDef("Range", kernel=_range_kernel)
NotDifferentiable("Range")


@Range.shape_fn
def _range_shape(*args, start=None, limit=None, delta=None, dtype):
    if args:
        for a in args:
            if a.shape.rank not in (0, None):
                raise errors.InvalidArgumentError(
                    f"range arguments must be scalars, got shape {a.shape}")
        return TensorSpec([None], dtype)
    if delta == 0:
        raise errors.InvalidArgumentError("delta must not be zero")
    return TensorSpec([len(np.arange(start, limit, delta))], dtype)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF's name
    """`[start, start + delta, ...]` up to (not including) `limit`, like Python's range.

    Arguments are numbers or scalar tensors. XLA needs the length static: a tensor
    argument must be known when the step is compiled (a constant, or from the shape of a
    tensor, as ``range(shape(x)[0])``); a fed or data-dependent one raises
    InvalidArgumentError when the step runs. `dtype` defaults to int32 for integer
    arguments, float32 otherwise.
    """
    if limit is None:
        start, limit = 0, start
    vals, dyn = [], False
    for v in (start, limit, delta):
        if hasattr(v, "op") or hasattr(v, "_as_tensor"):
            t = convert_to_tensor(v)
            cv = constant_value(t)
            if cv is None:
                dyn = True
                v = t
            else:
                v = cv.item()
        vals.append(v)
    if dtype is None:
        ints = all(v.dtype.is_integer if hasattr(v, "op") else isinstance(v, (int, np.integer))
                   for v in vals)
        dtype = _dtypes.int32 if ints else _dtypes.float32
    dt = _dtypes.as_dtype(dtype)
    if not dyn:
        start, limit, delta = vals
        return Range(start=start, limit=limit, delta=delta, dtype=dt.name, name=name)
    ts = [cast(v, dt) if v.dtype != dt else v for v in
          (convert_to_tensor(v, dtype=dt) if not hasattr(v, "op") else v for v in vals)]
    out = Range(*ts, dtype=dt.name, name=name)
    n = _range_length(*ts)
    if n is not None:
        out._shape = TensorShape([n])
    return out


def _range_length(start, limit, delta):
    """The static length of a range of scalar size tensors, when all three are known."""
    vals = [_constant_dim(t) if t.dtype.is_integer else None for t in (start, limit, delta)]
    if any(v is None for v in vals) or vals[2] == 0:
        return None
    return len(_b.range(*vals))
