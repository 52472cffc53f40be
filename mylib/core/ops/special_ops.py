"""Special functions, sorting, moments and second derivatives (TensorFlow's `lgamma`,
`digamma`, `sort`, `argsort`, `math.log_sigmoid`, `math.reduce_variance`,
`math.reduce_std`, `hessians`).

`Lgamma`, `Digamma` and `Sort` are ops whose kernels are `jax.scipy.special` /
`jax.numpy` functions; their gradients are `jax.vjp` of those kernels (the generic VJP
of `mylib.core.vjp`). The rest are built from existing ops.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mylib.core.gradients import gradients
from mylib.core.op_registry import NotDifferentiable, OpDef, convert_to_tensor
from mylib.core.ops import _shape_rules, array_ops, math_ops, nn_ops, reduction_ops

__all__ = ["lgamma", "digamma", "sort", "argsort", "log_sigmoid", "reduce_variance",
           "reduce_std", "hessians"]


def _float(x, what):
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError(f"{what}: expected a float tensor; received dtype {x.dtype.name} "
                        f"(op created by {what} on '{x.name}').")
    return x


Lgamma = OpDef("Lgamma", kernel=jax.scipy.special.gammaln, shape_fn=_shape_rules.unary)
Digamma = OpDef("Digamma", kernel=jax.scipy.special.digamma, shape_fn=_shape_rules.unary)


def lgamma(x, name=None):
    """``log|Gamma(x)|`` element-wise (float `Tensor`, any shape); its gradient is
    `digamma`."""
    return Lgamma(_float(x, "lgamma"), name=name)


def digamma(x, name=None):
    """The derivative of `lgamma`, ``Gamma'(x) / Gamma(x)``, element-wise."""
    return Digamma(_float(x, "digamma"), name=name)


def _sort_kernel(x, *, axis, descending):
    return jnp.sort(x, axis=axis, stable=True, descending=descending)


def _argsort_kernel(x, *, axis, descending):
    return jnp.argsort(x, axis=axis, stable=True, descending=descending).astype(jnp.int32)


Sort = OpDef("Sort", kernel=_sort_kernel, shape_fn=_shape_rules.unary)
ArgSort = OpDef("ArgSort", kernel=_argsort_kernel)
NotDifferentiable("ArgSort")


def _sort_args(values, axis, direction, what):
    x = convert_to_tensor(values)
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"{what}: direction must be 'ASCENDING' or 'DESCENDING'; "
                         f"received {direction!r}")
    rank = x.shape.rank
    if rank is None or rank == 0:
        raise ValueError(f"{what}: `values` must have a known rank of at least 1; "
                         f"received shape {x.shape}")
    ax = int(axis)
    if not -rank <= ax < rank:
        raise ValueError(f"{what}: axis {axis} is out of range for rank {rank}")
    return x, ax % rank, direction == "DESCENDING"


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis` (ascending, or descending with
    ``direction="DESCENDING"``); same shape and dtype. NaNs sort last ascending,
    first descending (`jnp.sort`). Differentiable: the gradient routes each output
    back to the entry it came from."""
    x, ax, desc = _sort_args(values, axis, direction, "sort")
    return Sort(x, axis=ax, descending=desc, name=name)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """int32 indices that sort `values` along `axis` (same shape as `values`). The sort
    is always stable (equal values keep their order), which TensorFlow guarantees only
    with ``stable=True``."""
    x, ax, desc = _sort_args(values, axis, direction, "argsort")
    return ArgSort(x, axis=ax, descending=desc, name=name)


def log_sigmoid(x, name=None):
    """``log(sigmoid(x)) = -softplus(-x)`` element-wise, without overflow for large |x|."""
    x = _float(x, "log_sigmoid")
    return math_ops.negative(nn_ops.softplus(math_ops.negative(x)), name=name)


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """Population variance (divided by N) of a float tensor over `axis` (all axes when
    None): ``mean(|x - mean(x)|^2)``."""
    x = _float(input_tensor, "reduce_variance")
    m = reduction_ops.reduce_mean(x, axis=axis, keepdims=True)
    return reduction_ops.reduce_mean(math_ops.square(x - m), axis=axis, keepdims=keepdims,
                                     name=name)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """Population standard deviation: ``sqrt(reduce_variance(...))``."""
    return math_ops.sqrt(reduce_variance(input_tensor, axis, keepdims), name=name)


def hessians(ys, xs, name="hessians", colocate_gradients_with_ops=False,
             gate_gradients=False, aggregation_method=None):
    """The Hessian of ``sum(ys)`` with respect to each tensor in `xs`: for an `x` of
    shape S, a `Tensor` of shape S + S (TensorFlow's `tf.hessians`), built as one
    `gradients` call per entry of `x`, so each `x` needs a fully known shape (its
    size bounds the graph it adds). None where ``sum(ys)`` does not depend on `x`.

    Raises:
      ValueError: an `x` whose shape is not fully known.
    """
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    first = gradients(ys, xs)
    out = []
    for x, g in zip(xs, first):
        if g is None:
            out.append(None)
            continue
        shape = x.shape.as_list() if x.shape.rank is not None else None
        if shape is None or any(d is None for d in shape):
            raise ValueError(f"hessians: the shape of '{x.name}' must be fully known; "
                             f"received {x.shape}")
        n = int(np.prod(shape, dtype=np.int64))
        flat = array_ops.reshape(convert_to_tensor(g), [n])
        rows = []
        for i in range(n):
            r, = gradients(flat[i], [x])
            rows.append(array_ops.reshape(r, [n]) if r is not None else
                        array_ops.zeros([n], dtype=x.dtype))
        h = array_ops.stack(rows) if rows else array_ops.zeros([0, 0], dtype=x.dtype)
        out.append(array_ops.reshape(h, shape + shape, name=name))
    return out

