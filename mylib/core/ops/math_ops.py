"""Math ops: element-wise arithmetic, comparisons, matmul, reductions, casts.

Each op: definition (kernel, optional shape rule), gradient (in graph ops), wrapper.
Gradients may return broadcast-shaped values: `gradients()` sums them back to each
input's shape once, for every op.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core import errors
from mylib.core.graph import Tensor
from mylib.core.op_registry import (NotDifferentiable, OpDef, RegisterGradient, TensorSpec,
                                    convert_to_tensor)
from mylib.core.ops import _shape_rules
from mylib.core.ops import array_ops
from mylib.core.tensor_shape import TensorShape


def _pair(x, y):
    """Converts a binary op's operands: a Python number adopts the tensor's dtype."""
    if isinstance(x, Tensor) or hasattr(x, "_as_tensor"):
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, dtype_hint=x.dtype)
    else:
        y = convert_to_tensor(y)
        x = convert_to_tensor(x, dtype_hint=y.dtype)
    return x, y


def _binary_op(op_type, kernel, shape_fn=_shape_rules.binary):
    return OpDef(op_type, kernel=kernel, shape_fn=shape_fn)


# ---------------------------------------------------------------- arithmetic
AddV2 = _binary_op("AddV2", jnp.add)


@RegisterGradient("AddV2")
def _add_grad(op, grad):
    return [grad, grad]


def add(x, y, name=None):
    """Element-wise `x + y` with numpy broadcasting.

    Raises:
      InvalidArgumentError: if shapes do not broadcast or dtypes differ.
    """
    x, y = _pair(x, y)
    return AddV2(x, y, name=name)


Sub = _binary_op("Sub", jnp.subtract)


@RegisterGradient("Sub")
def _sub_grad(op, grad):
    return [grad, negative(grad)]


def subtract(x, y, name=None):
    """Element-wise `x - y` with broadcasting."""
    x, y = _pair(x, y)
    return Sub(x, y, name=name)


Mul = _binary_op("Mul", jnp.multiply)


@RegisterGradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return [multiply(grad, y), multiply(x, grad)]


def multiply(x, y, name=None):
    """Element-wise `x * y` with broadcasting."""
    x, y = _pair(x, y)
    return Mul(x, y, name=name)


def _realdiv_kernel(x, y):
    return jnp.true_divide(x, y)


RealDiv = _binary_op("RealDiv", _realdiv_kernel)


@RegisterGradient("RealDiv")
def _realdiv_grad(op, grad):
    x, y = op.inputs
    return [divide(grad, y), negative(grad) * x / (y * y)]


def divide(x, y, name=None):
    """Element-wise `x / y`. Integer inputs are divided as floats (as TF's truediv):
    int8/16/uint8 -> float32, int32/int64 -> float64."""
    x, y = _pair(x, y)
    if x.dtype.is_integer:
        ft = _dtypes.float32 if x.dtype.size <= 2 else _dtypes.float64
        x, y = cast(x, ft), cast(y, ft)
    return RealDiv(x, y, name=name)


truediv = divide

Neg = OpDef("Neg", kernel=jnp.negative, shape_fn=_shape_rules.unary)


@RegisterGradient("Neg")
def _neg_grad(op, grad):
    return [negative(grad)]


def negative(x, name=None):
    """Element-wise `-x`."""
    return Neg(convert_to_tensor(x), name=name)


Square = OpDef("Square", kernel=jnp.square, shape_fn=_shape_rules.unary)


@RegisterGradient("Square")
def _square_grad(op, grad):
    x = op.inputs[0]
    return [grad * (x * 2)]


def square(x, name=None):
    """Element-wise `x * x`."""
    return Square(convert_to_tensor(x), name=name)


Exp = OpDef("Exp", kernel=jnp.exp, shape_fn=_shape_rules.unary)


@RegisterGradient("Exp")
def _exp_grad(op, grad):
    return [grad * op.outputs[0]]


def exp(x, name=None):
    """Element-wise `e ** x`."""
    return Exp(convert_to_tensor(x), name=name)


Log = OpDef("Log", kernel=jnp.log, shape_fn=_shape_rules.unary)


@RegisterGradient("Log")
def _log_grad(op, grad):
    return [grad / op.inputs[0]]


def log(x, name=None):
    """Element-wise natural logarithm."""
    return Log(convert_to_tensor(x), name=name)


Tanh = OpDef("Tanh", kernel=jnp.tanh, shape_fn=_shape_rules.unary)


@RegisterGradient("Tanh")
def _tanh_grad(op, grad):
    y = op.outputs[0]
    return [grad * (1 - y * y)]


def tanh(x, name=None):
    """Element-wise hyperbolic tangent."""
    return Tanh(convert_to_tensor(x), name=name)


Sigmoid = OpDef("Sigmoid", kernel=jax.nn.sigmoid, shape_fn=_shape_rules.unary)


@RegisterGradient("Sigmoid")
def _sigmoid_grad(op, grad):
    y = op.outputs[0]
    return [grad * y * (1 - y)]


def sigmoid(x, name=None):
    """Element-wise logistic function `1 / (1 + exp(-x))`."""
    return Sigmoid(convert_to_tensor(x), name=name)


Maximum = _binary_op("Maximum", jnp.maximum)


@RegisterGradient("Maximum")
def _maximum_grad(op, grad):
    x, y = op.inputs
    # Ties send the gradient to x, as TensorFlow does.
    mask = cast(greater_equal(x, y), grad.dtype)
    return [grad * mask, grad * (1 - mask)]


def maximum(x, y, name=None):
    """Element-wise max with broadcasting."""
    x, y = _pair(x, y)
    return Maximum(x, y, name=name)


# ---------------------------------------------------------------- comparisons
def _cmp(op_type, fn):
    od = OpDef(op_type, kernel=fn, shape_fn=_shape_rules.comparison)
    NotDifferentiable(op_type)
    return od


Equal = _cmp("Equal", jnp.equal)
NotEqual = _cmp("NotEqual", jnp.not_equal)
Less = _cmp("Less", jnp.less)
LessEqual = _cmp("LessEqual", jnp.less_equal)
Greater = _cmp("Greater", jnp.greater)
GreaterEqual = _cmp("GreaterEqual", jnp.greater_equal)


def equal(x, y, name=None):
    """Element-wise `x == y` (bool)."""
    x, y = _pair(x, y)
    return Equal(x, y, name=name)


def not_equal(x, y, name=None):
    x, y = _pair(x, y)
    return NotEqual(x, y, name=name)


def less(x, y, name=None):
    x, y = _pair(x, y)
    return Less(x, y, name=name)


def less_equal(x, y, name=None):
    x, y = _pair(x, y)
    return LessEqual(x, y, name=name)


def greater(x, y, name=None):
    x, y = _pair(x, y)
    return Greater(x, y, name=name)


def greater_equal(x, y, name=None):
    x, y = _pair(x, y)
    return GreaterEqual(x, y, name=name)


# ---------------------------------------------------------------- cast
def _cast_kernel(x, *, DstT):
    dt = _dtypes.as_dtype(DstT)
    if dt.is_integer and jnp.issubdtype(x.dtype, jnp.floating):
        x = jnp.trunc(x)  # C-style truncation toward zero, as TensorFlow casts
    return x.astype(dt.np)


Cast = OpDef("Cast", kernel=_cast_kernel)


@Cast.shape_fn
def _cast_shape(x, *, DstT):
    return TensorSpec(x.shape, DstT)


@RegisterGradient("Cast")
def _cast_grad(op, grad):
    src = op.inputs[0].dtype
    if not src.is_differentiable or not grad.dtype.is_differentiable:
        return [None]
    return [cast(grad, src)]


def cast(x, dtype, name=None):
    """Casts `x` to `dtype`; floats to integers truncate toward zero."""
    x = convert_to_tensor(x)
    dt = _dtypes.as_dtype(dtype)
    if x.dtype == dt:
        return x
    return Cast(x, DstT=dt.name, name=name)


# ---------------------------------------------------------------- matmul
def _matmul_kernel(a, b, *, transpose_a=False, transpose_b=False):
    if transpose_a:
        a = jnp.swapaxes(a, -1, -2)
    if transpose_b:
        b = jnp.swapaxes(b, -1, -2)
    return jnp.matmul(a, b)


MatMul = OpDef("MatMul", kernel=_matmul_kernel)


@MatMul.shape_fn
def _matmul_shape(a, b, *, transpose_a=False, transpose_b=False):
    d = _shape_rules.same_dtype(a, b)
    if a.shape.rank is None or b.shape.rank is None:
        return TensorSpec(TensorShape(None), d)
    if a.shape.rank < 2 or b.shape.rank < 2:
        raise errors.InvalidArgumentError(
            f"matmul needs inputs of rank >= 2, got shapes {a.shape} and {b.shape}")
    sa, sb = a.shape.as_list(), b.shape.as_list()
    m, ka = (sa[-1], sa[-2]) if transpose_a else (sa[-2], sa[-1])
    kb, n = (sb[-1], sb[-2]) if transpose_b else (sb[-2], sb[-1])
    if ka is not None and kb is not None and ka != kb:
        raise errors.InvalidArgumentError(
            f"inner dimensions differ: {ka} vs {kb} (shapes {a.shape} and {b.shape})")
    from mylib.core.tensor_shape import broadcast_shapes

    try:
        batch = broadcast_shapes(TensorShape(sa[:-2]), TensorShape(sb[:-2]))
    except ValueError:
        raise errors.InvalidArgumentError(
            f"batch dimensions do not broadcast: {a.shape} vs {b.shape}") from None
    return TensorSpec(batch.as_list() + [m, n], d)


@RegisterGradient("MatMul")
def _matmul_grad(op, grad):
    a, b = op.inputs
    ta, tb = op.attrs.get("transpose_a", False), op.attrs.get("transpose_b", False)
    if not ta and not tb:
        return [matmul(grad, b, transpose_b=True), matmul(a, grad, transpose_a=True)]
    if not ta and tb:
        return [matmul(grad, b), matmul(grad, a, transpose_a=True)]
    if ta and not tb:
        return [matmul(b, grad, transpose_b=True), matmul(a, grad)]
    return [matmul(b, grad, transpose_a=True, transpose_b=True),
            matmul(grad, a, transpose_a=True, transpose_b=True)]


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """Matrix product over the last two axes.

    Args:
      a: `Tensor` [..., m, k] (or [..., k, m] with `transpose_a`).
      b: `Tensor` [..., k, n] (or [..., n, k] with `transpose_b`); same dtype as `a`.
    Returns:
      `Tensor` [..., m, n]; leading (batch) axes broadcast.
    Raises:
      InvalidArgumentError: if the inner dimensions or the dtypes differ.
    """
    a, b = _pair(a, b)
    attrs = {}
    if transpose_a:
        attrs["transpose_a"] = True
    if transpose_b:
        attrs["transpose_b"] = True
    return MatMul(a, b, name=name, **attrs)


# ---------------------------------------------------------------- reductions
def _axis_attr(axis):
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        v = array_ops.constant_value(axis)
        if v is None:
            raise errors.InvalidArgumentError(
                f"reduction axis '{axis.name}' must be known when the graph is built")
        axis = v.tolist()
    if isinstance(axis, (list, tuple, np.ndarray)):
        return tuple(int(a) for a in np.asarray(axis).reshape(-1))
    return int(axis)


def _reduce_kernel(fn):
    def kernel(x, *, axis=None, keepdims=False):
        return fn(x, axis=axis, keepdims=keepdims)

    return kernel


Sum = OpDef("Sum", kernel=_reduce_kernel(jnp.sum), shape_fn=_shape_rules.reduction)
Mean = OpDef("Mean", kernel=_reduce_kernel(jnp.mean), shape_fn=_shape_rules.reduction)


def _broadcast_reduced_kernel(g, x, *, axis=None, keepdims=False):
    """Broadcasts the gradient of a reduction of `x` back to `x`'s shape."""
    if not keepdims:
        axes = range(x.ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
        axes = sorted(a % x.ndim for a in axes) if x.ndim else []
        for a in axes:
            g = jnp.expand_dims(g, a)
    return jnp.broadcast_to(g, x.shape)


BroadcastReduced = OpDef("BroadcastReduced", kernel=_broadcast_reduced_kernel)


@BroadcastReduced.shape_fn
def _broadcast_reduced_shape(g, x, *, axis=None, keepdims=False):
    return TensorSpec(x.shape, g.dtype)


@RegisterGradient("BroadcastReduced")
def _broadcast_reduced_grad(op, grad):
    return [reduce_sum(grad, op.attrs.get("axis"), op.attrs.get("keepdims", False)), None]


@RegisterGradient("Sum")
def _sum_grad(op, grad):
    x = op.inputs[0]
    return [BroadcastReduced(grad, x, **op.attrs)]


@RegisterGradient("Mean")
def _mean_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    g = BroadcastReduced(grad, x, **op.attrs)
    return [g * cast(_size_ratio(y, x), g.dtype)]


_SizeRatio = OpDef("SizeRatio", kernel=lambda y, x: np.float64(y.size / max(x.size, 1)) if x.size
                   else np.float64(0.0))


@_SizeRatio.shape_fn
def _size_ratio_shape(y, x):
    return TensorSpec([], _dtypes.float64)


NotDifferentiable("SizeRatio")


def _size_ratio(y, x):
    """size(y) / size(x): static when the graph is built, else when compiled."""
    return _SizeRatio(y, x)


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over `axis` (int, list, or None for all axes).

    Returns:
      `Tensor` with the reduced axes removed (kept as size 1 with `keepdims`).
    """
    x = convert_to_tensor(input_tensor)
    attrs = {"axis": _axis_attr(axis), "keepdims": bool(keepdims)}
    return Sum(x, name=name, **attrs)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over `axis`. Integer inputs give an integer mean, as TensorFlow's."""
    x = convert_to_tensor(input_tensor)
    attrs = {"axis": _axis_attr(axis), "keepdims": bool(keepdims)}
    if x.dtype.is_integer:
        return cast(Mean(cast(x, _dtypes.float64), **attrs), x.dtype, name=name)
    return Mean(x, name=name, **attrs)


# ---------------------------------------------------------------- operators
def _r(fn):
    return lambda self, other: fn(other, self)


Tensor._overload_operator("__add__", add)
Tensor._overload_operator("__radd__", _r(add))
Tensor._overload_operator("__sub__", subtract)
Tensor._overload_operator("__rsub__", _r(subtract))
Tensor._overload_operator("__mul__", multiply)
Tensor._overload_operator("__rmul__", _r(multiply))
Tensor._overload_operator("__truediv__", divide)
Tensor._overload_operator("__rtruediv__", _r(divide))
Tensor._overload_operator("__matmul__", matmul)
Tensor._overload_operator("__rmatmul__", _r(matmul))
Tensor._overload_operator("__neg__", negative)
Tensor._overload_operator("__lt__", less)
Tensor._overload_operator("__le__", less_equal)
Tensor._overload_operator("__gt__", greater)
Tensor._overload_operator("__ge__", greater_equal)
