"""More of TensorFlow 1's math: `realdiv`, `truncatediv`, `rint`, `erfc`, `lbeta`,
`polyval`, `multiply_no_nan` / `divide_no_nan`, `reduce_euclidean_norm`,
`cumulative_logsumexp`, and the matrix functions `expm` and `pinv`.

Each op: definition (kernel, optional shape rule), gradient (in graph ops), wrapper.
Most are built from existing graph ops; `MulNoNan`, `Erfc`, `TruncateDiv`, `Rint`,
`CumulativeLogsumexp`, `MatrixExponential` and `Pinv` are primitives (a kernel XLA runs
as one fused op; the last three differentiate through the generic VJP op).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mylib import errors
from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import NotDifferentiable, OpDef, RegisterGradient, TensorSpec
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import _shape_rules, array_ops, constant_ops, math_ops, reduction_ops
from mylib.core.ops.sequence_ops import div_no_nan
from mylib.core.ops.special_ops import lgamma

# TensorFlow 1's top-level names; `ml.math` has these and `MATH_ONLY`, `ml.linalg` the
# matrix functions.
__all__ = ["realdiv", "truncatediv", "rint", "erfc", "lbeta"]
MATH_ONLY = ["polyval", "multiply_no_nan", "divide_no_nan", "reduce_euclidean_norm",
             "cumulative_logsumexp"]


def _need(x, ok, what, owner):
    if not ok(x.dtype):
        raise errors.InvalidArgumentError(
            f"{owner}: '{x.name}' must be {what}, got {x.dtype.name} {x.shape}")


# ---------------------------------------------------------------- divisions
def realdiv(x, y, name=None):
    """Element-wise ``x / y`` for floating (or complex) tensors, with broadcasting (TF's
    `RealDiv`).

    Raises:
      InvalidArgumentError: integer or bool operands (TensorFlow has no integer
        `RealDiv` kernel; use `truncatediv` or `floordiv`).
    """
    x, y = math_ops._pair(x, y)
    _need(x, lambda d: d.is_floating or d.is_complex, "floating or complex", "realdiv")
    return math_ops.divide(x, y, name=name)


TruncateDiv = OpDef("TruncateDiv", kernel=jax.lax.div)
NotDifferentiable("TruncateDiv")


@TruncateDiv.shape_fn
def _truncatediv_shape(x, y):
    return _shape_rules.binary(x, y)


def truncatediv(x, y, name=None):
    """Element-wise integer division rounding toward zero (C's ``/``): ``-7 / 2 = -3``,
    where `floordiv` gives -4. Broadcasts; no gradient (as TensorFlow).

    Args:
      x, y: integer `Tensor`s of the same dtype.
    Returns:
      `Tensor` of the broadcast shape and `x`'s dtype.
    Raises:
      InvalidArgumentError: non-integer operands (TensorFlow's `TruncateDiv` has
        integer kernels only).

    Differs from TensorFlow: a division by zero is not an error (XLA cannot raise
    from a compiled step); its result is unspecified.
    """
    x, y = math_ops._pair(x, y)
    _need(x, lambda d: d.is_integer, "an integer", "truncatediv")
    return TruncateDiv(x, y, name=name)


MulNoNan = OpDef("MulNoNan", kernel=lambda x, y: jnp.where(
    y == 0, jnp.zeros((), jnp.result_type(x, y)), x * y))


@MulNoNan.shape_fn
def _mul_no_nan_shape(x, y):
    return _shape_rules.binary(x, y)


@RegisterGradient("MulNoNan")
def _mul_no_nan_grad(op, grad):
    x, y = op.inputs
    # TensorFlow's _MulNoNanGrad: each side masked where the other factor is zero.
    return MulNoNan(grad, y), MulNoNan(x, grad)


def multiply_no_nan(x, y, name=None):
    """Element-wise ``x * y``, and 0 where `y` is 0 even if `x` is inf or NaN.

    Args:
      x, y: float `Tensor`s of the same dtype; broadcast.
    Returns:
      `Tensor` of the broadcast shape.
    Raises:
      InvalidArgumentError: non-float operands.
    """
    x, y = math_ops._pair(x, y)
    _need(x, lambda d: d.is_floating or d.is_complex, "floating or complex",
          "multiply_no_nan")
    return MulNoNan(x, y, name=name)


def divide_no_nan(x, y, name=None):
    """Element-wise ``x / y``, and 0 where `y` is 0 (`div_no_nan`)."""
    return div_no_nan(x, y, name=name)


# ---------------------------------------------------------------- element-wise functions
Rint = OpDef("Rint", kernel=jnp.rint, shape_fn=_shape_rules.unary)
NotDifferentiable("Rint")  # TF's gradient of Rint is None, as Round's


def rint(x, name=None):
    """Element-wise nearest integer, halves to even (``rint(2.5) = 2``,
    ``rint(-1.5) = -2``); float dtypes only. No gradient, as TensorFlow.

    Raises:
      InvalidArgumentError: non-float `x`.
    """
    x = convert_to_tensor(x)
    _need(x, lambda d: d.is_floating, "floating", "rint")
    return Rint(x, name=name)


Erfc = OpDef("Erfc", kernel=jax.scipy.special.erfc, shape_fn=_shape_rules.unary)


@RegisterGradient("Erfc")
def _erfc_grad(op, grad):
    x = op.inputs[0]
    c = constant_ops.constant(-2.0 / np.sqrt(np.pi), dtype=x.dtype)
    return grad * c * math_ops.exp(-math_ops.square(x))


def erfc(x, name=None):
    """Element-wise complementary error function ``1 - erf(x)``, accurate for large x.

    Raises:
      InvalidArgumentError: non-float `x`.
    """
    x = convert_to_tensor(x)
    _need(x, lambda d: d.is_floating, "floating", "erfc")
    return Erfc(x, name=name)


def lbeta(x, name="lbeta"):
    """Log of the multivariate beta function over the last axis:
    ``sum(lgamma(x), -1) - lgamma(sum(x, -1))``.

    Args:
      x: float `Tensor` [..., n].
    Returns:
      `Tensor` [...]; the gradient is ``digamma(x) - digamma(sum(x))``.
    Raises:
      InvalidArgumentError: non-float `x`.
    """
    x = convert_to_tensor(x, dtype_hint=_dtypes.float32)
    _need(x, lambda d: d.is_floating, "floating", "lbeta")
    log_prod = reduction_ops.reduce_sum(lgamma(x), -1)
    return math_ops.subtract(log_prod, lgamma(reduction_ops.reduce_sum(x, -1)), name=name)


def polyval(coeffs, x, name=None):
    """The polynomial ``coeffs[0] * x**(n-1) + ... + coeffs[n-1]`` by Horner's rule.

    Args:
      coeffs: list of `Tensor`s (or numbers), highest degree first, each broadcastable
        with `x`.
      x: `Tensor`.
    Returns:
      `Tensor` of the broadcast shape; zeros like `x` for empty `coeffs`.
    Raises:
      ValueError: `coeffs` is not a list or tuple.
    """
    if not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"polyval: coeffs must be a list of tensors. Received: {coeffs!r}")
    x = convert_to_tensor(x)
    if not coeffs:
        return constant_ops.zeros_like(x, name=name)
    p = convert_to_tensor(coeffs[0], dtype_hint=x.dtype)
    for c in coeffs[1:]:
        p = math_ops.add(convert_to_tensor(c, dtype_hint=x.dtype), p * x)
    return array_ops.identity(p, name=name)


# ---------------------------------------------------------------- reductions
def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """``sqrt(reduce_sum(x**2, axis))``.

    Args:
      input_tensor: numeric `Tensor`; integer inputs give an integer result (the
        truncated root), as TensorFlow.
      axis: None (all), an int or a list of ints.
    Returns:
      `Tensor` reduced over `axis`; its gradient is ``x / norm`` (NaN at a zero norm,
      as TensorFlow's).
    """
    x = convert_to_tensor(input_tensor)
    if x.dtype.is_integer:
        sq = reduction_ops.reduce_sum(math_ops.square(math_ops.cast(x, _dtypes.float64)),
                                      axis, keepdims=keepdims)
        return math_ops.cast(math_ops.floor(math_ops.sqrt(sq)), x.dtype, name=name)
    return math_ops.sqrt(reduction_ops.reduce_sum(math_ops.square(x), axis,
                                                  keepdims=keepdims), name=name)


def _cumlogsumexp_kernel(x, *, axis, exclusive, reverse):
    if reverse:
        x = jnp.flip(x, axis)
    y = jax.lax.cumlogsumexp(x, axis=axis)
    if exclusive:
        pad = [(0, 0)] * x.ndim
        pad[axis] = (1, 0)
        y = jax.lax.slice_in_dim(jnp.pad(y, pad, constant_values=-jnp.inf), 0,
                                 x.shape[axis], axis=axis)
    return jnp.flip(y, axis) if reverse else y


CumulativeLogsumexp = OpDef("CumulativeLogsumexp", kernel=_cumlogsumexp_kernel,
                            shape_fn=lambda x, **_: TensorSpec(x.shape, x.dtype))


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running ``log(sum(exp(x)))`` along `axis`, computed stably.

    Args:
      x: float `Tensor`.
      axis: Python int (static; TensorFlow also takes a scalar tensor).
      exclusive: the i-th output leaves out the i-th input (the first is -inf).
      reverse: accumulate from the end.
    Returns:
      `Tensor` of `x`'s shape and dtype.
    Raises:
      InvalidArgumentError: non-float `x` or `axis` out of range.
    """
    x = convert_to_tensor(x)
    _need(x, lambda d: d.is_floating, "floating", "cumulative_logsumexp")
    axis = int(axis)
    r = x.shape.rank
    if r is not None:
        if not -r <= axis < r:
            raise errors.InvalidArgumentError(
                f"cumulative_logsumexp: axis {axis} out of range for '{x.name}' of rank {r}")
        axis %= r
    elif axis < 0:
        raise errors.InvalidArgumentError("cumulative_logsumexp: a negative axis needs a "
                                          f"known rank; '{x.name}' has none")
    return CumulativeLogsumexp(x, axis=axis, exclusive=bool(exclusive), reverse=bool(reverse),
                               name=name)


# ---------------------------------------------------------------- matrix functions
MatrixExponential = OpDef("MatrixExponential", kernel=jax.scipy.linalg.expm)


def expm(input, name=None):  # noqa: A002
    """Matrix exponential of each square matrix (Padé approximation with scaling and
    squaring, as TensorFlow and SciPy).

    Args:
      input: float `Tensor` [..., n, n].
    Returns:
      `Tensor` [..., n, n].
    Raises:
      InvalidArgumentError: non-float input or non-square (known) last two dims.
    """
    x = convert_to_tensor(input)
    _need(x, lambda d: d.is_floating or d.is_complex, "floating or complex", "expm")
    _square(x, "expm")
    return MatrixExponential(x, name=name)


def _square(x, owner):
    s = x.shape
    if s.rank is not None:
        if s.rank < 2:
            raise errors.InvalidArgumentError(
                f"{owner}: '{x.name}' must be a [..., n, n] matrix, got shape {s}")
        a, b = s.as_list()[-2:]
        if a is not None and b is not None and a != b:
            raise errors.InvalidArgumentError(
                f"{owner}: '{x.name}' must be square, got shape {s}")


def _pinv_kernel(a, *, rcond):
    m, n = a.shape[-2:]
    if rcond is None:  # TensorFlow's default: 10 * max(m, n) * eps of the dtype
        rcond = 10.0 * max(m, n) * float(jnp.finfo(a.dtype).eps)
    return jnp.linalg.pinv(a, rtol=rcond)


Pinv = OpDef("Pinv", kernel=_pinv_kernel)


def pinv(a, rcond=None, validate_args=False, name=None):
    """Moore-Penrose pseudo-inverse of each matrix, by SVD: singular values at most
    ``rcond * largest`` count as zero.

    Args:
      a: float `Tensor` [..., m, n].
      rcond: Python float; default ``10 * max(m, n) * eps`` (TensorFlow's).
      validate_args: accepted; the checks it asks for happen when the graph is built.
    Returns:
      `Tensor` [..., n, m].
    Raises:
      InvalidArgumentError: non-float `a` or rank below 2.
    """
    x = convert_to_tensor(a)
    _need(x, lambda d: d.is_floating, "floating", "pinv")
    if x.shape.rank is not None and x.shape.rank < 2:
        raise errors.InvalidArgumentError(
            f"pinv: '{x.name}' must be a [..., m, n] matrix, got shape {x.shape}")
    return Pinv(x, rcond=None if rcond is None else float(rcond), name=name)
