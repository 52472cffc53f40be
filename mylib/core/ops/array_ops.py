"""Array ops: constants, placeholders, identity, shapes, reshaping, filling.

Shape-like arguments (``reshape``'s shape, ``fill``'s dims) may be tensors: XLA needs
them static, so they must be computable when the step is compiled (constants, `shape`
of a tensor, arithmetic on those); a fed shape tensor raises InvalidArgumentError.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core import errors
from mylib.core.graph import get_default_graph
from mylib.core.op_registry import (NotDifferentiable, OpDef, RegisterGradient, TensorSpec,
                                    convert_to_tensor)
from mylib.core.ops import _shape_rules
from mylib.core.tensor_shape import TensorShape, as_shape


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
    return jnp.asarray(value)


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


# ---------------------------------------------------------------- Placeholder
def _placeholder_lower(ctx, op):
    raise errors.InvalidArgumentError(
        f"You must feed a value for placeholder tensor '{op.outputs[0].name}' with dtype "
        f"{op.attrs['dtype']} and shape {TensorShape(op.attrs['shape'])}", op=op)


Placeholder = OpDef("Placeholder", lower=_placeholder_lower, stateful=True)


@Placeholder.shape_fn
def _placeholder_shape(*, dtype, shape):
    return TensorSpec(TensorShape(shape), dtype)


NotDifferentiable("Placeholder")


def placeholder(dtype, shape=None, name=None):
    """A tensor whose value must be fed to `Session.run` (``feed_dict``).

    Args:
      dtype: `DType` of the fed values.
      shape: optional shape; `None` entries are unknown dims (``[None, 784]``); `None`
        means any shape.
    Returns:
      `Tensor` of `dtype` and `shape`.
    """
    dt = _dtypes.as_dtype(dtype)
    shp = None if shape is None else as_shape(shape).as_tuple()
    return Placeholder(dtype=dt.name, shape=shp, name=name)


PlaceholderWithDefault = OpDef("PlaceholderWithDefault", kernel=lambda x, *, shape: x)


@PlaceholderWithDefault.shape_fn
def _pwd_shape(x, *, shape):
    s = TensorShape(shape)
    if not s.is_compatible_with(x.shape):
        raise errors.InvalidArgumentError(f"default value shape {x.shape} is not compatible with {s}")
    return TensorSpec(s, x.dtype)


@RegisterGradient("PlaceholderWithDefault")
def _pwd_grad(op, grad):
    return [grad]


def placeholder_with_default(input, shape, name=None):  # noqa: A002 - TF's name
    """A placeholder that yields `input` when it is not fed."""
    t = convert_to_tensor(input)
    return PlaceholderWithDefault(t, shape=as_shape(shape).as_tuple(), name=name)


# ---------------------------------------------------------------- Identity, NoOp
Identity = OpDef("Identity", kernel=lambda x: x, shape_fn=_shape_rules.unary)


@RegisterGradient("Identity")
def _identity_grad(op, grad):
    return [grad]


def identity(input, name=None):  # noqa: A002
    """Returns a tensor with the same value as `input` (a new op, e.g. to name a value
    or to hang control dependencies on)."""
    return Identity(convert_to_tensor(input), name=name)


StopGradient = OpDef("StopGradient", kernel=lambda x: x, shape_fn=_shape_rules.unary)
NotDifferentiable("StopGradient")


def stop_gradient(input, name=None):  # noqa: A002
    """Identity in the forward pass; `gradients` treats the output as a constant."""
    return StopGradient(convert_to_tensor(input), name=name)


NoOp = OpDef("NoOp", kernel=lambda: (), shape_fn=lambda: [])
NotDifferentiable("NoOp")


def no_op(name=None):
    """An op that does nothing; useful as a target for control dependencies."""
    return NoOp(name=name)


def group(*inputs, name=None):
    """An op that runs after all of `inputs` (ops or tensors), with no output.

    Returns:
      `Operation` (a NoOp with control inputs).
    """
    flat = []
    for x in inputs:
        if isinstance(x, (list, tuple)):
            flat.extend(x)
        elif isinstance(x, dict):
            flat.extend(x.values())
        elif x is not None:
            flat.append(x)
    g = get_default_graph()
    with g.control_dependencies(flat):
        return NoOp(name=name or "group_deps")


# ---------------------------------------------------------------- shapes
def _shape_kernel(x, *, out_type):
    # Concrete numpy at trace time, so shape arithmetic stays static for XLA.
    return np.array(x.shape, dtype=_dtypes.as_dtype(out_type).np)


Shape = OpDef("Shape", kernel=_shape_kernel)


@Shape.shape_fn
def _shape_shape(x, *, out_type):
    return TensorSpec([x.shape.rank], out_type)


NotDifferentiable("Shape")


def shape(input, out_type="int32", name=None):  # noqa: A002
    """The shape of `input` as a 1-D int32 tensor (dynamic dims resolved at run time)."""
    return Shape(convert_to_tensor(input), out_type=_dtypes.as_dtype(out_type).name, name=name)


def _reshape_kernel(x, shape):
    dims = _static_ints(shape, "Reshape's shape")
    return jnp.reshape(x, dims)


Reshape = OpDef("Reshape", kernel=_reshape_kernel)


@Reshape.shape_fn
def _reshape_shape(x, shape):
    if shape.shape.rank != 1:
        raise errors.InvalidArgumentError(f"shape must be a vector, got shape {shape.shape}")
    return TensorSpec(TensorShape(None) if shape.shape[0] is None else [None] * shape.shape[0],
                      x.dtype)


def _reshape_target(x_shape, dims):
    """Static output shape of reshaping `x_shape` to `dims` (with one -1)."""
    dims = list(dims)
    if dims.count(-1) > 1:
        raise errors.InvalidArgumentError(f"only one input size may be -1, not both in {dims}")
    if -1 not in dims:
        if x_shape.is_fully_defined() and x_shape.num_elements() != int(np.prod(dims)):
            raise errors.InvalidArgumentError(
                f"cannot reshape a tensor with {x_shape.num_elements()} elements to shape "
                f"{dims} ({int(np.prod(dims))} elements)")
        return TensorShape(dims)
    if not x_shape.is_fully_defined():
        return TensorShape([None if d == -1 else d for d in dims])
    known = int(np.prod([d for d in dims if d != -1]))
    n = x_shape.num_elements()
    if known == 0 or n % known:
        raise errors.InvalidArgumentError(
            f"cannot reshape a tensor with {n} elements to shape {dims}")
    return TensorShape([n // known if d == -1 else d for d in dims])


def reshape(tensor, shape, name=None):
    """Reshapes `tensor` to `shape` (one entry may be -1).

    Raises:
      InvalidArgumentError: if the element counts differ.
    """
    x = convert_to_tensor(tensor)
    s = convert_to_tensor(shape, dtype_hint=_dtypes.int32)
    out = Reshape(x, s, name=name)
    cv = constant_value(s)
    if cv is not None:
        try:
            out._shape = _reshape_target(x.shape, [int(d) for d in np.asarray(cv).reshape(-1)])
        except errors.InvalidArgumentError as e:
            raise errors.InvalidArgumentError(e.message, op=out.op, show_inputs=True) from None
    return out


@RegisterGradient("Reshape")
def _reshape_grad(op, grad):
    return [reshape(grad, shape(op.inputs[0])), None]


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
    from mylib.core.ops.math_ops import reduce_sum

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
        from mylib.core.ops.math_ops import cast

        out = cast(out, dtype)
    return out


def ones_like(tensor, dtype=None, name=None):
    """Ones with the shape (and dtype, unless given) of `tensor`."""
    t = convert_to_tensor(tensor)
    out = OnesLike(t, name=name)
    if dtype is not None and _dtypes.as_dtype(dtype) != t.dtype:
        from mylib.core.ops.math_ops import cast

        out = cast(out, dtype)
    return out


# ---------------------------------------------------------------- broadcast gradient helpers
def _sum_to_shape_kernel(g, like):
    """Sums `g` over the axes that broadcasting added or stretched to reach like.shape."""
    target = like.shape
    if g.shape == target:
        return g
    lead = g.ndim - len(target)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(target) if d == 1 and g.shape[lead + i] != 1)
    out = jnp.sum(g, axis=axes, keepdims=False) if axes else g
    return jnp.reshape(out, target)


SumToShape = OpDef("SumToShape", kernel=_sum_to_shape_kernel)


@SumToShape.shape_fn
def _sum_to_shape_shape(g, like):
    return TensorSpec(like.shape, g.dtype)


BroadcastLike = OpDef("BroadcastLike", kernel=lambda g, like: jnp.broadcast_to(g, like.shape))


@BroadcastLike.shape_fn
def _broadcast_like_shape(g, like):
    return TensorSpec(like.shape, g.dtype)


@RegisterGradient("SumToShape")
def _sum_to_shape_grad(op, grad):
    return [BroadcastLike(grad, op.inputs[0]), None]


@RegisterGradient("BroadcastLike")
def _broadcast_like_grad(op, grad):
    return [SumToShape(grad, op.inputs[0]), None]


def sum_to_shape(grad, like):
    """Sums `grad` to the shape of `like` (the reduction of a broadcast)."""
    return SumToShape(grad, like)
