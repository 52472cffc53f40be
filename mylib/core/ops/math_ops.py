"""Math ops: element-wise arithmetic, comparisons, casts, logical ops, unary functions,
`add_n` and `matmul`, and the Python operators of `Tensor` (``+ - * / // % ** @ < & ~``).

Each op: definition (kernel, optional shape rule), gradient (in graph ops), wrapper.
Gradients may return broadcast-shaped values: `gradients()` sums them back to each
input's shape once, for every op. Reductions, arg-max/min and `cumsum` are in
`reduction_ops`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.graph import Tensor
from mylib.core.op_registry import (NotDifferentiable, OpDef, RegisterGradient, TensorSpec,
                                    convert_to_tensor)
from mylib.core.ops import _shape_rules
from mylib.core.ops import array_ops, constant_ops
from mylib.core.ops.cast_ops import Cast, cast  # noqa: F401 - public here, as in TF
from mylib.core.tensor_shape import TensorShape, broadcast_shapes

__all__ = ["add", "subtract", "multiply", "divide", "truediv", "negative", "square", "exp",
           "log", "tanh", "sigmoid", "maximum", "minimum", "equal", "not_equal", "less",
           "less_equal", "greater", "greater_equal", "cast", "matmul", "add_n", "pow",
           "floordiv", "floor_div", "floormod", "mod", "squared_difference", "sqrt", "rsqrt",
           "log1p", "expm1", "abs", "sign", "reciprocal", "floor", "ceil", "round", "sin", "cos",
           "erf", "logical_and", "logical_or", "logical_not", "logical_xor", "is_finite"]


def _pair(x, y):
    """Converts a binary op's operands: a Python number adopts the tensor's dtype, and
    so does a numpy value of the same kind, as in TF1 (``x / np.sqrt(d)`` for a float32
    `x`; an int64 numpy scalar with an int32 tensor if it fits)."""
    if isinstance(x, Tensor) or hasattr(x, "_as_tensor"):
        x = convert_to_tensor(x)
        y = _convert_operand(y, x.dtype)
    else:
        y = convert_to_tensor(y)
        x = _convert_operand(x, y.dtype)
    return x, y


def _convert_operand(v, dt):
    if isinstance(v, (np.ndarray, np.generic)) and v.dtype != dt.np:
        kind = np.dtype(v.dtype).kind
        if (kind == "f" and dt.is_floating) or (kind in "iu" and dt.is_integer):
            return convert_to_tensor(v, dtype=dt)  # raises if an int is out of range
    return convert_to_tensor(v, dtype_hint=dt)


def _static_aware(kernel, np_fn):
    """Integer arithmetic on concrete numpy values (constants, shapes) stays in numpy, so
    shape arithmetic (``shape(x)[0] * 2``) is static when the step is compiled."""
    def k(*xs):
        if np_fn is not None and all(isinstance(x, (np.ndarray, np.generic)) and
                                     x.dtype.kind in "iub" for x in xs):
            return np.asarray(np_fn(*xs))
        return kernel(*xs)

    k.__name__ = getattr(kernel, "__name__", "kernel")
    return k


def _binary_op(op_type, kernel, shape_fn=_shape_rules.binary, np_fn=None):
    return OpDef(op_type, kernel=_static_aware(kernel, np_fn), shape_fn=shape_fn)


# ---------------------------------------------------------------- arithmetic
AddV2 = _binary_op("AddV2", jnp.add, np_fn=np.add)


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


Sub = _binary_op("Sub", jnp.subtract, np_fn=np.subtract)


@RegisterGradient("Sub")
def _sub_grad(op, grad):
    return [grad, negative(grad)]


def subtract(x, y, name=None):
    """Element-wise `x - y` with broadcasting."""
    x, y = _pair(x, y)
    return Sub(x, y, name=name)


Mul = _binary_op("Mul", jnp.multiply, np_fn=np.multiply)


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


Maximum = _binary_op("Maximum", jnp.maximum, np_fn=np.maximum)


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
# `Cast` and `cast` are defined in `cast_ops` (imported above), below the constant ops
# that cast too; `math_ops.cast` stays their public name.


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
    try:
        batch = broadcast_shapes(TensorShape(sa[:-2]), TensorShape(sb[:-2]))
    except ValueError:
        raise errors.InvalidArgumentError(
            f"batch dimensions do not broadcast: {a.shape} vs {b.shape}") from None
    return TensorSpec(batch.as_list() + [m, n], d)


def _contract(x, xc, y, yc, target):
    """The gradient product for MatMul input `target`: ``sum over c of X[.., p, c] *
    Y[.., c, q]`` summed to `target`'s shape, where `xc` / `yc` is the axis (-2 or -1)
    of `x` / `y` holding the contracted dimension c.

    Batch axes that `target` broadcasts over (missing, or size 1 where the output is
    larger) are folded into the contraction: `x` and `y` are transposed and reshaped so
    those axes sit next to c, and one matmul sums over them. A `Dense` kernel [k, n]
    applied to [batch, time, k] thus gets its gradient as one [k, batch * time] x
    [batch * time, n] product, not a batched product of [batch, k, n] summed over the
    batch (the same flops, but a large intermediate and a slow batched dot in XLA).
    Where static shapes do not allow the reshape, the batched product is returned and
    `gradients()` sums it to `target`'s shape.
    """
    def plain():
        return matmul(x, y, transpose_a=(xc == -2), transpose_b=(yc == -1))

    xs, ys, ts = x.shape, y.shape, target.shape
    if xs.rank is None or ys.rank is None or ts.rank is None or not ts.is_fully_defined():
        return plain()
    n = max(xs.rank, ys.rank, ts.rank) - 2
    xd = [1] * (n + 2 - xs.rank) + xs.as_list()
    yd = [1] * (n + 2 - ys.rank) + ys.as_list()
    td = [1] * (n + 2 - ts.rank) + ts.as_list()
    # Axes the target broadcasts over, where some operand is (maybe) larger than 1.
    fold = [i for i in range(n) if td[i] == 1 and (xd[i] != 1 or yd[i] != 1)]
    if not fold:
        return plain()
    keep = [i for i in range(n) if i not in fold]
    xp, xq = (n, n + 1) if xc == -1 else (n + 1, n)  # (free axis, contracted axis)
    yq, yc_ = (n, n + 1) if yc == -1 else (n + 1, n)
    if any(xd[i] is None for i in keep) or any(yd[i] is None for i in keep) \
            or xd[xp] is None or yd[yq] is None:
        return plain()
    xe, ye = x, y
    for _ in range(n + 2 - xs.rank):
        xe = array_ops.expand_dims(xe, 0)
    for _ in range(n + 2 - ys.rank):
        ye = array_ops.expand_dims(ye, 0)
    # X as [keep.., (fold.., c), p] and Y as [keep.., (fold.., c), q]: one matmul
    # contracting the merged axis (transposed operands fold into XLA's dot).
    xperm = keep + fold + [xq, xp]
    yperm = keep + fold + [yc_, yq]
    xt = xe if xperm == list(range(n + 2)) else array_ops.transpose(xe, xperm)
    yt = ye if yperm == list(range(n + 2)) else array_ops.transpose(ye, yperm)
    xm = array_ops.reshape(xt, [xd[i] for i in keep] + [-1, xd[xp]])
    ym = array_ops.reshape(yt, [yd[i] for i in keep] + [-1, yd[yq]])
    out = matmul(xm, ym, transpose_a=True)  # [keep.., p, q]
    return out if out.shape.as_list() == ts.as_list() else array_ops.reshape(out, ts.as_list())


@RegisterGradient("MatMul")
def _matmul_grad(op, grad):
    """With ``A = a`` (or its transpose) and ``B = b`` likewise, ``dA = G B^T`` and
    ``dB = A^T G``, each written in its input's own layout; broadcast batch axes are
    contracted inside one product (see `_contract`)."""
    a, b = op.inputs
    ta, tb = op.attrs.get("transpose_a", False), op.attrs.get("transpose_b", False)
    # Axis of each operand holding k (contracted in the forward product) and of the
    # gradient holding m (rows) and n (columns).
    ak = -2 if ta else -1
    bk = -1 if tb else -2
    if not ta:  # da[m, k] = sum_n G[m, n] B[k, n]
        da = _contract(grad, -1, b, -1 if bk == -2 else -2, a)
    else:       # da[k, m] = sum_n B[k, n] G[m, n]
        da = _contract(b, -1 if bk == -2 else -2, grad, -1, a)
    if not tb:  # db[k, n] = sum_m A[m, k] G[m, n]
        db = _contract(a, -2 if ak == -1 else -1, grad, -2, b)
    else:       # db[n, k] = sum_m G[m, n] A[m, k]
        db = _contract(grad, -2, a, -2 if ak == -1 else -1, b)
    return [da, db]


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


# ---------------------------------------------------------------- AddN
def _add_n_kernel(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out


AddN = OpDef("AddN", kernel=_add_n_kernel)


@AddN.shape_fn
def _add_n_shape(*xs):
    d = _shape_rules.same_dtype(*xs)
    shape = TensorShape(None)
    for x in xs:
        try:
            shape = shape.merge_with(x.shape)
        except ValueError:
            raise errors.InvalidArgumentError(
                f"all inputs need the same shape: {xs[0].shape} vs {x.shape}") from None
    return TensorSpec(shape, d)


@RegisterGradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


def add_n(inputs, name=None):
    """Element-wise sum of a list of tensors of one shape and dtype (no broadcasting).

    Raises:
      InvalidArgumentError: if shapes or dtypes differ.
    """
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError("inputs must be a non-empty list of tensors")
    ts = [convert_to_tensor(x) for x in inputs]
    if len(ts) == 1 and name is None:
        return ts[0]
    return AddN(*ts, name=name)


# ---------------------------------------------------------------- more binary arithmetic
Minimum = _binary_op("Minimum", jnp.minimum, np_fn=np.minimum)


@RegisterGradient("Minimum")
def _minimum_grad(op, grad):
    x, y = op.inputs
    # Ties send the gradient to x, as TensorFlow does.
    mask = cast(less_equal(x, y), grad.dtype)
    return [grad * mask, grad * (1 - mask)]


def minimum(x, y, name=None):
    """Element-wise min with broadcasting."""
    x, y = _pair(x, y)
    return Minimum(x, y, name=name)


def _pow_kernel(x, y):
    return jnp.power(x, y)


Pow = _binary_op("Pow", _pow_kernel, np_fn=np.power)


@RegisterGradient("Pow")
def _pow_grad(op, grad):
    x, y = op.inputs
    z = op.outputs[0]
    gx = grad * y * pow(x, y - 1)
    if not x.dtype.is_floating and not x.dtype.is_complex:
        return [None, None]
    # d/dy x**y = x**y log(x); zero where x == 0 (TensorFlow's convention, no NaN).
    safe_x = array_ops.where(greater(x, 0), x, constant_ops.ones_like(x))
    gy = grad * z * array_ops.where(greater(x, 0), log(safe_x), constant_ops.zeros_like(x))
    return [gx, gy]


def pow(x, y, name=None):  # noqa: A001 - TF's name
    """Element-wise `x ** y` with broadcasting.

    Raises:
      InvalidArgumentError: if shapes do not broadcast or dtypes differ.
    """
    x, y = _pair(x, y)
    return Pow(x, y, name=name)


def _floordiv_kernel(x, y):
    return jnp.floor_divide(x, y)


FloorDiv = _binary_op("FloorDiv", _floordiv_kernel, np_fn=np.floor_divide)
NotDifferentiable("FloorDiv")


def floordiv(x, y, name=None):
    """Element-wise `x // y`, rounding toward negative infinity (as Python)."""
    x, y = _pair(x, y)
    return FloorDiv(x, y, name=name)


floor_div = floordiv

FloorMod = _binary_op("FloorMod", jnp.mod, np_fn=np.mod)


@RegisterGradient("FloorMod")
def _floor_mod_grad(op, grad):
    x, y = op.inputs
    return [grad, negative(grad) * floor(x / y)]


def floormod(x, y, name=None):
    """Element-wise remainder with the sign of `y` (Python's `%`)."""
    x, y = _pair(x, y)
    return FloorMod(x, y, name=name)


mod = floormod

SquaredDifference = _binary_op("SquaredDifference", lambda x, y: jnp.square(x - y))


@RegisterGradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    d = grad * 2 * (x - y)
    return [d, negative(d)]


def squared_difference(x, y, name=None):
    """Element-wise `(x - y) ** 2`."""
    x, y = _pair(x, y)
    return SquaredDifference(x, y, name=name)


# ---------------------------------------------------------------- unary math
def _unary(op_type, fn):
    return OpDef(op_type, kernel=fn, shape_fn=_shape_rules.unary)


Sqrt = _unary("Sqrt", jnp.sqrt)
Rsqrt = _unary("Rsqrt", jax.lax.rsqrt)
Log1p = _unary("Log1p", jnp.log1p)
Expm1 = _unary("Expm1", jnp.expm1)
Abs = _unary("Abs", jnp.abs)
Sign = _unary("Sign", jnp.sign)
Reciprocal = _unary("Reciprocal", jnp.reciprocal)
Floor = _unary("Floor", jnp.floor)
Ceil = _unary("Ceil", jnp.ceil)
Round = _unary("Round", jnp.round)  # half to even, as TensorFlow
Sin = _unary("Sin", jnp.sin)
Cos = _unary("Cos", jnp.cos)
Erf = _unary("Erf", jax.scipy.special.erf)
for _t in ("Floor", "Ceil", "Round"):
    NotDifferentiable(_t)


@RegisterGradient("Sign")
def _sign_grad(op, grad):
    # Zeros, not None, as TensorFlow: a loss through `sign` still has a gradient.
    return [array_ops.zeros_like(op.inputs[0])]


@RegisterGradient("Sqrt")
def _sqrt_grad(op, grad):
    return [grad * 0.5 / op.outputs[0]]


@RegisterGradient("Rsqrt")
def _rsqrt_grad(op, grad):
    y = op.outputs[0]
    return [grad * -0.5 * y * y * y]


@RegisterGradient("Log1p")
def _log1p_grad(op, grad):
    return [grad / (1 + op.inputs[0])]


@RegisterGradient("Expm1")
def _expm1_grad(op, grad):
    return [grad * exp(op.inputs[0])]


@RegisterGradient("Abs")
def _abs_grad(op, grad):
    return [grad * sign(op.inputs[0])]


@RegisterGradient("Reciprocal")
def _reciprocal_grad(op, grad):
    y = op.outputs[0]
    return [negative(grad) * y * y]


@RegisterGradient("Sin")
def _sin_grad(op, grad):
    return [grad * cos(op.inputs[0])]


@RegisterGradient("Cos")
def _cos_grad(op, grad):
    return [negative(grad) * sin(op.inputs[0])]


@RegisterGradient("Erf")
def _erf_grad(op, grad):
    x = op.inputs[0]
    return [grad * float(2 / np.sqrt(np.pi)) * exp(negative(square(x)))]


def sqrt(x, name=None):
    """Element-wise square root (NaN for negative inputs)."""
    return Sqrt(convert_to_tensor(x), name=name)


def rsqrt(x, name=None):
    """Element-wise `1 / sqrt(x)`."""
    return Rsqrt(convert_to_tensor(x), name=name)


def log1p(x, name=None):
    """Element-wise `log(1 + x)`, accurate for small `x`."""
    return Log1p(convert_to_tensor(x), name=name)


def expm1(x, name=None):
    """Element-wise `exp(x) - 1`, accurate for small `x`."""
    return Expm1(convert_to_tensor(x), name=name)


def abs(x, name=None):  # noqa: A001 - TF's name
    """Element-wise absolute value (gradient `sign(x)`, 0 at 0)."""
    return Abs(convert_to_tensor(x), name=name)


def sign(x, name=None):
    """Element-wise -1, 0 or 1."""
    return Sign(convert_to_tensor(x), name=name)


def reciprocal(x, name=None):
    """Element-wise `1 / x`."""
    return Reciprocal(convert_to_tensor(x), name=name)


def floor(x, name=None):
    """Element-wise floor."""
    return Floor(convert_to_tensor(x), name=name)


def ceil(x, name=None):
    """Element-wise ceiling."""
    return Ceil(convert_to_tensor(x), name=name)


def round(x, name=None):  # noqa: A001 - TF's name
    """Element-wise rounding, halves to even (banker's rounding, as TensorFlow)."""
    return Round(convert_to_tensor(x), name=name)


def sin(x, name=None):
    """Element-wise sine."""
    return Sin(convert_to_tensor(x), name=name)


def cos(x, name=None):
    """Element-wise cosine."""
    return Cos(convert_to_tensor(x), name=name)


def erf(x, name=None):
    """Element-wise Gauss error function."""
    return Erf(convert_to_tensor(x), name=name)


# ---------------------------------------------------------------- logical
def _logical(op_type, fn, npfn):
    od = OpDef(op_type, kernel=_static_aware(fn, npfn), shape_fn=_logical_shape)
    NotDifferentiable(op_type)
    return od


def _logical_shape(*xs):
    for x in xs:
        if not x.dtype.is_bool:
            raise errors.InvalidArgumentError(f"logical ops need bool inputs, got {x.dtype.name}")
    return _shape_rules.binary(*xs) if len(xs) == 2 else _shape_rules.unary(*xs)


LogicalAnd = _logical("LogicalAnd", jnp.logical_and, np.logical_and)
LogicalOr = _logical("LogicalOr", jnp.logical_or, np.logical_or)
LogicalNot = _logical("LogicalNot", jnp.logical_not, np.logical_not)


def logical_and(x, y, name=None):
    """Element-wise `x AND y` of bool tensors, with broadcasting."""
    x, y = _pair(x, y)
    return LogicalAnd(x, y, name=name)


def logical_or(x, y, name=None):
    """Element-wise `x OR y` of bool tensors, with broadcasting."""
    x, y = _pair(x, y)
    return LogicalOr(x, y, name=name)


def logical_not(x, name=None):
    """Element-wise NOT of a bool tensor."""
    return LogicalNot(convert_to_tensor(x), name=name)


def logical_xor(x, y, name=None):
    """Element-wise `x XOR y` of bool tensors."""
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


# ---------------------------------------------------------------- is_finite
IsFinite = OpDef("IsFinite", kernel=jnp.isfinite)
NotDifferentiable("IsFinite")


@IsFinite.shape_fn
def _is_finite_shape(x):
    return TensorSpec(x.shape, _dtypes.bool_)


def is_finite(x, name=None):
    """Element-wise: True where `x` is neither inf nor NaN."""
    return IsFinite(convert_to_tensor(x), name=name)


# ---------------------------------------------------------------- more operators
def _bitwise_or_logical(logical, op_name):
    def fn(x, y):
        x, y = _pair(x, y)
        if x.dtype.is_bool:
            return logical(x, y)
        raise TypeError(f"operator {op_name} is defined for bool tensors only, got "
                        f"{x.dtype.name}")

    return fn


def _invert(x):
    if x.dtype.is_bool:
        return logical_not(x)
    raise TypeError(f"operator ~ is defined for bool tensors only, got {x.dtype.name}")


Tensor._overload_operator("__floordiv__", floordiv)
Tensor._overload_operator("__rfloordiv__", _r(floordiv))
Tensor._overload_operator("__mod__", floormod)
Tensor._overload_operator("__rmod__", _r(floormod))
Tensor._overload_operator("__pow__", pow)
Tensor._overload_operator("__rpow__", _r(pow))
Tensor._overload_operator("__and__", _bitwise_or_logical(logical_and, "&"))
Tensor._overload_operator("__rand__", _r(_bitwise_or_logical(logical_and, "&")))
Tensor._overload_operator("__or__", _bitwise_or_logical(logical_or, "|"))
Tensor._overload_operator("__ror__", _r(_bitwise_or_logical(logical_or, "|")))
Tensor._overload_operator("__xor__", _bitwise_or_logical(logical_xor, "^"))
Tensor._overload_operator("__rxor__", _r(_bitwise_or_logical(logical_xor, "^")))
Tensor._overload_operator("__invert__", _invert)
Tensor._overload_operator("__abs__", abs)
