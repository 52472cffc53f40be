"""Special functions, sorting and searching, histograms, moments, second derivatives
and small TensorFlow 1 utilities (TensorFlow's `lgamma`, `digamma`, `sort`, `argsort`,
`searchsorted`, `histogram_fixed_width`, `math.log_sigmoid`, `math.reduce_variance`,
`math.reduce_std`, `hessians`, `accumulate_n`, `identity_n`, `ensure_shape`,
`verify_tensor_all_finite`, `no_gradient`, `op_scope`, `container`).

`Lgamma`, `Digamma`, `Sort` and `SearchSorted` are ops whose kernels are
`jax.scipy.special` / `jax.numpy` functions; the differentiable ones get their
gradients from `jax.vjp` of those kernels (the generic VJP of `mylib.core.vjp`). The
rest are built from existing ops.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.graph import name_scope
from mylib.core.gradients import gradients
from mylib.core.op_registry import (NotDifferentiable, OpDef, RegisterGradient, TensorSpec,
                                    convert_to_tensor)
from mylib.core.ops import (_shape_rules, array_ops, check_ops, constant_ops, math_ops,
                            nn_ops, reduction_ops, segment_ops)
from mylib.core.tensor_shape import TensorShape

__all__ = ["lgamma", "digamma", "sort", "argsort", "searchsorted", "histogram_fixed_width",
           "log_sigmoid", "reduce_variance", "reduce_std", "hessians", "accumulate_n",
           "identity_n", "ensure_shape", "verify_tensor_all_finite", "no_gradient",
           "NoGradient", "op_scope", "container"]


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



def _searchsorted_kernel(seq, vals, *, side, out_type):
    flat_s = seq.reshape(-1, seq.shape[-1])
    flat_v = vals.reshape(-1, vals.shape[-1])
    idx = jax.vmap(lambda a, v: jnp.searchsorted(a, v, side=side))(flat_s, flat_v)
    return idx.reshape(vals.shape).astype(out_type)


SearchSorted = OpDef("SearchSorted", kernel=_searchsorted_kernel)
NotDifferentiable("SearchSorted")


def searchsorted(sorted_sequence, values, side="left", out_type=_dtypes.int32, name=None):
    """For each row of `values` [..., M], the indices where its entries would be
    inserted into the matching row of `sorted_sequence` [..., N] (sorted along its
    last axis) to keep it sorted; int32 (or `out_type`) [..., M]. ``side="left"`` gives
    the first such index, ``"right"`` the last (TensorFlow's `searchsorted`).

    Raises:
      ValueError: unknown `side`, or leading dimensions that differ."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right'; received {side!r}")
    seq = convert_to_tensor(sorted_sequence)
    vals = convert_to_tensor(values, dtype_hint=seq.dtype)
    ss, vs = seq.shape.as_list() if seq.shape.rank else None, \
        vals.shape.as_list() if vals.shape.rank else None
    if ss is None or vs is None or len(ss) != len(vs) or any(
            a is not None and b is not None and a != b for a, b in zip(ss[:-1], vs[:-1])):
        raise ValueError(f"searchsorted: sorted_sequence {seq.shape} and values "
                         f"{vals.shape} must have the same rank (at least 1) and leading "
                         "dimensions")
    return SearchSorted(seq, vals, side=side, out_type=_dtypes.as_dtype(out_type).np,
                        name=name)


def histogram_fixed_width(values, value_range, nbins=100, dtype=_dtypes.int32, name=None):
    """Counts of `values` (any shape, numbers) in `nbins` equal bins spanning
    ``value_range = [lo, hi]``: a [nbins] `dtype` tensor. Values below `lo` count in
    the first bin, at or above `hi` in the last (TensorFlow's `histogram_fixed_width`).
    `nbins` is a Python int."""
    v = convert_to_tensor(values)
    if not v.dtype.is_floating:
        v = math_ops.cast(v, _dtypes.float32)
    rng = math_ops.cast(convert_to_tensor(value_range), v.dtype)
    nbins = int(nbins)
    lo, hi = rng[0], rng[1]
    scaled = (array_ops.reshape(v, [-1]) - lo) / (hi - lo) * float(nbins)
    bins = math_ops.cast(math_ops.floor(scaled), _dtypes.int32)
    bins = math_ops.minimum(math_ops.maximum(bins, 0), nbins - 1)
    ones = constant_ops.ones_like(bins, dtype=_dtypes.as_dtype(dtype))
    return segment_ops.unsorted_segment_sum(ones, bins, nbins, name=name)


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """The element-wise sum of `inputs` (TensorFlow's `accumulate_n`; here `add_n`)."""
    return math_ops.add_n(list(inputs), name=name)


def identity_n(input, name=None):  # noqa: A002
    """A list of identities of the tensors in `input`."""
    with name_scope(name, "IdentityN"):
        return [array_ops.identity(t) for t in input]


def _ensure_shape_kernel(x, shape):
    got = tuple(x.shape)
    if len(got) != len(shape) or any(w is not None and w != d for w, d in zip(shape, got)):
        from mylib import errors

        raise errors.InvalidArgumentError(
            f"Shape of tensor [{','.join(map(str, got))}] is not compatible with expected "
            f"shape [{','.join('?' if w is None else str(w) for w in shape)}].")
    return x


def _ensure_shape_shape(x, shape):
    return TensorSpec(x.shape.merge_with(TensorShape(list(shape))), x.dtype)


EnsureShape = OpDef("EnsureShape", _ensure_shape_kernel, shape_fn=_ensure_shape_shape)


@RegisterGradient("EnsureShape")
def _ensure_shape_grad(op, grad):
    return [grad]


def ensure_shape(x, shape, name=None):
    """`x`, checked to have `shape` (None for dims of any size), with its static shape
    refined by it (TensorFlow's `ensure_shape`).

    Raises:
      ValueError: `x`'s known shape is incompatible with `shape` (when the graph is
        built).
      InvalidArgumentError: the value's shape is not `shape` when the step is compiled
        for its feeds (a fed batch of another size), naming this op.
    """
    x = convert_to_tensor(x)
    want = TensorShape(shape)
    if not x.shape.is_compatible_with(want):
        raise ValueError(f"ensure_shape: shape of tensor '{x.name}' {x.shape} is not "
                         f"compatible with expected shape {want}.")
    if want.rank is None:
        return array_ops.identity(x, name=name)
    return EnsureShape(x, shape=tuple(want.as_list()), name=name)


def verify_tensor_all_finite(t, msg, name=None, x=None, message=None):
    """`t` checked for NaN and Inf when the step runs (`check_numerics`)."""
    t = t if t is not None else x
    return check_ops.check_numerics(t, message if message is not None else msg, name=name)


def no_gradient(op_type):
    """Declares ops of type `op_type` not differentiable (`NotDifferentiable`)."""
    NotDifferentiable(op_type)


NoGradient = no_gradient


def op_scope(values, name, default_name=None):
    """TensorFlow 0.x's `op_scope`: `name_scope(name, default_name, values)`."""
    return name_scope(name, default_name, values)


@contextlib.contextmanager
def container(container_name):
    """TensorFlow 1's resource container scope. Variables here live in their session's
    store whatever the container, so this only groups code (nothing to reset)."""
    yield container_name

