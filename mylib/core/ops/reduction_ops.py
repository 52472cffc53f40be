"""Reduction ops: sums, means, extrema, products and logical reductions over axes
(`reduce_*`), the index of an extremum (`argmax`, `argmin`), running sums (`cumsum`) and
running products (`cumprod`).

An `axis` argument is an int, a list of ints, or None for all axes, known when the graph
is built. The gradient of a reduction broadcasts back through `BroadcastReduced`; `Max`
and `Min` split it between ties, as TensorFlow's `_MinOrMaxGrad`.
"""

from __future__ import annotations

import builtins as _b

import jax
import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.compat_args import deprecated_alias
from mylib.core.gradients import _generic_vjp
from mylib.core.graph import Tensor
from mylib.core.op_registry import NotDifferentiable, OpDef, RegisterGradient, TensorSpec, \
    convert_to_tensor
from mylib.core.ops import _shape_rules
from mylib.core.ops import array_ops, constant_ops
from mylib.core.ops.math_ops import cast, equal, exp, is_finite, log

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_all",
           "reduce_any", "reduce_logsumexp", "argmax", "argmin", "cumsum", "cumprod"]


# ---------------------------------------------------------------- Sum, Mean
def _tf1_axis(axis, keepdims, reduction_indices, keep_dims, owner):
    """TensorFlow 1's spellings ``reduction_indices`` (for `axis`) and ``keep_dims`` (for
    `keepdims`), accepted by every ``reduce_*``; giving both spellings is a ValueError."""
    axis = deprecated_alias("axis", "reduction_indices", axis, reduction_indices, owner)
    keepdims = deprecated_alias("keepdims", "keep_dims", keepdims, keep_dims, owner)
    return axis, keepdims


def _axis_attr(axis):
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        v = constant_ops.constant_value(axis)
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


def _accumulate_kernel(fn):
    """Sum/Prod keep the input dtype, as TensorFlow (jnp would widen int32 to int64)."""
    def kernel(x, *, axis=None, keepdims=False):
        dt = None if x.dtype == np.bool_ else x.dtype
        return fn(x, axis=axis, keepdims=keepdims, dtype=dt)

    return kernel


Sum = OpDef("Sum", kernel=_accumulate_kernel(jnp.sum), shape_fn=_shape_rules.reduction)
Mean = OpDef("Mean", kernel=_reduce_kernel(jnp.mean), shape_fn=_shape_rules.reduction)


def _broadcast_reduced_kernel(g, x, *, axis=None, keepdims=False):
    """Broadcasts the gradient of a reduction of `x` back to `x`'s shape."""
    if not keepdims:
        axes = _b.range(x.ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
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


_SizeRatio = OpDef("SizeRatio", kernel=lambda y, x: np.float64(y.size / _b.max(x.size, 1)) if x.size
                   else np.float64(0.0))


@_SizeRatio.shape_fn
def _size_ratio_shape(y, x):
    return TensorSpec([], _dtypes.float64)


NotDifferentiable("SizeRatio")


def _size_ratio(y, x):
    """size(y) / size(x): static when the graph is built, else when compiled."""
    return _SizeRatio(y, x)


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
               keep_dims=None):
    """Sum over `axis` (int, list, or None for all axes).

    Returns:
      `Tensor` with the reduced axes removed (kept as size 1 with `keepdims`).
    """
    axis, keepdims = _tf1_axis(axis, keepdims, reduction_indices, keep_dims, "reduce_sum")
    x = convert_to_tensor(input_tensor)
    attrs = {"axis": _axis_attr(axis), "keepdims": bool(keepdims)}
    return Sum(x, name=name, **attrs)


@RegisterGradient("Fill")
def _fill_grad(op, grad):
    # Fill (constant_ops, below this module): the filled value gets the sum of `grad`.
    return [None, reduce_sum(grad)]


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
                keep_dims=None):
    """Mean over `axis`. Integer inputs give an integer mean, as TensorFlow's."""
    axis, keepdims = _tf1_axis(axis, keepdims, reduction_indices, keep_dims, "reduce_mean")
    x = convert_to_tensor(input_tensor)
    attrs = {"axis": _axis_attr(axis), "keepdims": bool(keepdims)}
    if x.dtype.is_integer:
        return cast(Mean(cast(x, _dtypes.float64), **attrs), x.dtype, name=name)
    return Mean(x, name=name, **attrs)


# ---------------------------------------------------------------- Max, Min, Prod, All, Any
def _extremum_kernel(fn, lowest):
    def kernel(x, *, axis=None, keepdims=False):
        if x.size == 0:
            # An empty reduction gives the identity, as TensorFlow: -inf (the lowest
            # value) for max, +inf (the highest) for min.
            dt = np.dtype(x.dtype)
            if dt.kind == "f" or dt.name == "bfloat16":
                init = -np.inf if lowest else np.inf
            elif dt.kind == "b":
                init = not lowest
            else:
                init = np.iinfo(dt).min if lowest else np.iinfo(dt).max
            return fn(x, axis=axis, keepdims=keepdims, initial=np.asarray(init, dt))
        return fn(x, axis=axis, keepdims=keepdims)

    return kernel


Max = OpDef("Max", kernel=_extremum_kernel(jnp.max, True), shape_fn=_shape_rules.reduction)
Min = OpDef("Min", kernel=_extremum_kernel(jnp.min, False), shape_fn=_shape_rules.reduction)
Prod = OpDef("Prod", kernel=_accumulate_kernel(jnp.prod), shape_fn=_shape_rules.reduction)
# Prod: no registered gradient; the generic VJP (jax.vjp of jnp.prod) handles zeros.
All = OpDef("All", kernel=_reduce_kernel(jnp.all), shape_fn=_shape_rules.reduction)
Any = OpDef("Any", kernel=_reduce_kernel(jnp.any), shape_fn=_shape_rules.reduction)
NotDifferentiable("All")
NotDifferentiable("Any")


def _min_or_max_grad(op, grad):
    # As TensorFlow's _MinOrMaxGrad: the gradient is split equally between ties.
    x, y = op.inputs[0], op.outputs[0]
    y_b = BroadcastReduced(y, x, **op.attrs)
    g_b = BroadcastReduced(grad, x, **op.attrs)
    ind = cast(equal(y_b, x), grad.dtype)
    num = reduce_sum(ind, op.attrs.get("axis"), keepdims=True)
    return [ind / num * g_b]


RegisterGradient("Max")(_min_or_max_grad)
RegisterGradient("Min")(_min_or_max_grad)


def _reduce(opdef, x, axis, keepdims, name):
    x = convert_to_tensor(x)
    return opdef(x, name=name, axis=_axis_attr(axis), keepdims=bool(keepdims))


def reduce_max(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
               keep_dims=None):
    """Maximum over `axis` (int, list, or None for all). Ties share the gradient."""
    axis, keepdims = _tf1_axis(axis, keepdims, reduction_indices, keep_dims, "reduce_max")
    return _reduce(Max, input_tensor, axis, keepdims, name)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
               keep_dims=None):
    """Minimum over `axis` (int, list, or None for all). Ties share the gradient."""
    axis, keepdims = _tf1_axis(axis, keepdims, reduction_indices, keep_dims, "reduce_min")
    return _reduce(Min, input_tensor, axis, keepdims, name)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
                keep_dims=None):
    """Product over `axis` (int, list, or None for all)."""
    axis, keepdims = _tf1_axis(axis, keepdims, reduction_indices, keep_dims, "reduce_prod")
    return _reduce(Prod, input_tensor, axis, keepdims, name)


def reduce_all(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
               keep_dims=None):
    """Logical AND over `axis` of a bool tensor."""
    axis, keepdims = _tf1_axis(axis, keepdims, reduction_indices, keep_dims, "reduce_all")
    return _reduce(All, input_tensor, axis, keepdims, name)


def reduce_any(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
               keep_dims=None):
    """Logical OR over `axis` of a bool tensor."""
    axis, keepdims = _tf1_axis(axis, keepdims, reduction_indices, keep_dims, "reduce_any")
    return _reduce(Any, input_tensor, axis, keepdims, name)


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
                     keep_dims=None):
    """`log(sum(exp(x)))` over `axis`, stable for large values (max subtracted first)."""
    axis, keepdims = _tf1_axis(axis, keepdims, reduction_indices, keep_dims, "reduce_logsumexp")
    x = convert_to_tensor(input_tensor)
    m = array_ops.stop_gradient(reduce_max(x, axis, keepdims=True))
    m = array_ops.where(is_finite(m), m, constant_ops.zeros_like(m))
    out = log(reduce_sum(exp(x - m), axis, keepdims=True)) + m
    if not keepdims:
        out = reduce_sum(out, axis, keepdims=False, name=name)  # drops the size-1 axes
    return out


# ---------------------------------------------------------------- ArgMax / ArgMin
def _arg_kernel(fn):
    # The indices are computed in `output_type` directly (no 64-bit index array cast
    # to int32 afterwards, which would keep a 32-bit step in the 64-bit scope).
    def kernel(x, *, axis, output_type):
        x = jnp.asarray(x)
        return fn(x, axis % max(x.ndim, 1), _dtypes.as_dtype(output_type).np)

    return kernel


ArgMax = OpDef("ArgMax", kernel=_arg_kernel(jax.lax.argmax))
ArgMin = OpDef("ArgMin", kernel=_arg_kernel(jax.lax.argmin))
NotDifferentiable("ArgMax")
NotDifferentiable("ArgMin")


def _arg_shape(x, *, axis, output_type):
    return TensorSpec(_shape_rules.reduced_shape(x.shape, axis, False), output_type)


ArgMax.shape_fn(_arg_shape)
ArgMin.shape_fn(_arg_shape)


def argmax(input, axis=None, output_type="int64", name=None, dimension=None):  # noqa: A002
    """Index of the largest value along `axis` (default 0); the first one on ties.

    Returns:
      `Tensor` of `output_type` (int64 default, as TF) with `axis` removed.
    """
    axis = deprecated_alias("axis", "dimension", axis, dimension, "argmax")
    x = convert_to_tensor(input)
    return ArgMax(x, axis=0 if axis is None else int(_axis_attr(axis)),
                  output_type=_dtypes.as_dtype(output_type).name, name=name)


def argmin(input, axis=None, output_type="int64", name=None, dimension=None):  # noqa: A002
    """Index of the smallest value along `axis` (default 0); the first one on ties."""
    axis = deprecated_alias("axis", "dimension", axis, dimension, "argmin")
    x = convert_to_tensor(input)
    return ArgMin(x, axis=0 if axis is None else int(_axis_attr(axis)),
                  output_type=_dtypes.as_dtype(output_type).name, name=name)


# ---------------------------------------------------------------- cumsum
Cumsum = OpDef("Cumsum", kernel=lambda x, *, axis=0, exclusive=False, reverse=False:
               _cumsum(x, axis, exclusive, reverse), shape_fn=_shape_rules.unary)


def _cumsum(x, axis, exclusive, reverse):
    if reverse:
        x = jnp.flip(x, axis)
    out = jnp.cumsum(x, axis=axis)
    if exclusive:
        out = out - x
    return jnp.flip(out, axis) if reverse else out


@RegisterGradient("Cumsum")
def _cumsum_grad(op, grad):
    return [cumsum(grad, op.attrs["axis"], exclusive=op.attrs["exclusive"],
                   reverse=not op.attrs["reverse"])]


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along `axis`."""
    return Cumsum(convert_to_tensor(x), axis=int(axis), exclusive=bool(exclusive),
                  reverse=bool(reverse), name=name)


# ---------------------------------------------------------------- cumprod
Cumprod = OpDef("Cumprod", kernel=lambda x, *, axis=0, exclusive=False, reverse=False:
                _cumprod(x, axis, exclusive, reverse), shape_fn=_shape_rules.unary)


def _cumprod(x, axis, exclusive, reverse):
    x = jnp.asarray(x)
    if reverse:
        x = jnp.flip(x, axis)
    if exclusive:  # shift in a 1 (not cumprod / x, which is NaN at zeros)
        n = x.shape[axis]
        first = jnp.ones_like(jnp.take(x, jnp.arange(1), axis=axis))
        x = jnp.concatenate([first, jnp.take(x, jnp.arange(n - 1), axis=axis)], axis=axis)
    out = jnp.cumprod(x, axis=axis)
    return jnp.flip(out, axis) if reverse else out


@RegisterGradient("Cumprod")
def _cumprod_grad(op, grad):
    # The VJP of the scan itself: finite where inputs are 0 (TensorFlow's
    # ``cumsum(grad * out) / x`` is NaN there).
    return _generic_vjp(op, [grad])


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along `axis` (TensorFlow's `tf.math.cumprod`).

    ``exclusive=True`` starts each running product at 1 (``[1, a, a*b]`` for
    ``[a, b, c]``); ``reverse=True`` runs from the end. Its gradient is finite where
    inputs are 0 (the products of the other factors), unlike TensorFlow's.
    """
    x = convert_to_tensor(x)
    ax = int(axis)
    if ax < 0 and x.shape.rank is not None:
        ax += x.shape.rank
    return Cumprod(x, axis=ax, exclusive=bool(exclusive), reverse=bool(reverse), name=name)
