"""Sequence and selection ops: `linspace`, `meshgrid`, `sequence_mask`, `reverse`,
`reverse_sequence`, `top_k`, `count_nonzero`, `is_nan`, `is_inf`, `atan2`, `div_no_nan`,
and the data-dependent-shape ops `boolean_mask` and `unique`.

Each op: definition (kernel, optional shape rule), gradient, wrapper; ops with no
registered gradient differentiate through the generic VJP op. `boolean_mask` and
`unique` return as many elements as the data selects, a shape XLA cannot compile: they
run on the host, between the compiled parts of a step (as `py_func` does).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.op_registry import (NotDifferentiable, OpDef, RegisterGradient, TensorSpec,
                                    convert_to_tensor)
from mylib.core.ops import array_ops, math_ops, reduction_ops
from mylib.core.ops.cast_ops import cast
from mylib.core.ops.constant_ops import (_constant_dim, _static_scalar, constant_value,
                                         range as _range)
from mylib.core.tensor_shape import TensorShape

__all__ = ["linspace", "lin_space", "meshgrid", "sequence_mask", "reverse", "reverse_v2",
           "reverse_sequence", "count_nonzero", "is_nan", "is_inf", "atan2",
           "div_no_nan", "boolean_mask", "unique"]  # top_k: in ml.math and ml.nn, as TF


# ---------------------------------------------------------------- linspace, meshgrid
def _linspace_kernel(start, stop, *dyn, num=None):
    if dyn:  # a `num` tensor, static when the step is traced (`shape(x)[0]`)
        num = int(_static_scalar(dyn[0], "linspace's num"))
        if num <= 0:
            raise errors.InvalidArgumentError(f"linspace: num must be positive, got {num}")
    return jnp.linspace(start, stop, num, dtype=jnp.result_type(start))


LinSpace = OpDef("LinSpace", kernel=_linspace_kernel)


@LinSpace.shape_fn
def _linspace_shape(start, stop, *dyn, num=None):
    return TensorSpec([None if dyn else num], start.dtype)


def linspace(start, stop, num, name=None, axis=0):
    """`num` evenly spaced values from `start` to `stop`, both included.

    Args:
      start, stop: float scalars (tensors or numbers).
      num: int > 0: a Python int, or a scalar tensor known when the step is compiled
        (a constant, or from a shape: ``shape(x)[0]``).
      axis: must be 0 (mylib supports scalar `start`/`stop` only).
    Returns:
      `Tensor` [num] of `start`'s dtype (float32 for Python numbers).
    """
    dyn_num = None
    if hasattr(num, "op") or hasattr(num, "_as_tensor"):
        t = convert_to_tensor(num)
        cv = constant_value(t)
        if cv is None:
            dyn_num = t
        else:
            num = cv.item()
    if dyn_num is None and (not isinstance(num, (int, np.integer)) or num <= 0):
        raise TypeError(f"linspace: `num` must be a positive int. Received: num={num!r}")
    if axis != 0:
        raise ValueError(f"linspace: only axis=0 is supported. Received: axis={axis!r}")
    start = convert_to_tensor(start, dtype_hint=_dtypes.float32)
    if not start.dtype.is_floating:
        start = cast(start, _dtypes.float32)
    stop = convert_to_tensor(stop, dtype=start.dtype) if not hasattr(stop, "dtype") or \
        not hasattr(stop, "op") else cast(stop, start.dtype)
    if dyn_num is not None:
        out = LinSpace(start, stop, dyn_num, name=name)
        n = _constant_dim(dyn_num)
        if n is not None:
            out._shape = TensorShape([n])
        return out
    return LinSpace(start, stop, num=int(num), name=name)


lin_space = linspace


def meshgrid(*args, indexing="xy", name=None):
    """Coordinate grids from 1-D `Tensor`s (`numpy.meshgrid`).

    Args:
      *args: 1-D `Tensor`s of static length.
      indexing: "xy" (Cartesian; the first two outputs' axes swapped) or "ij" (matrix).
    Returns:
      list of `Tensor`s, each of the grid's shape.
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij'. Received: {indexing!r}")
    xs = [convert_to_tensor(a) for a in args]
    n = len(xs)
    sizes = []
    for x in xs:
        if x.shape.rank != 1 or x.shape.as_list()[0] is None:
            raise ValueError(f"meshgrid: inputs must be 1-D of static length, got {x.shape}")
        sizes.append(x.shape.as_list()[0])
    if indexing == "xy" and n > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    shape_of = tuple(sizes)
    out = []
    for i, x in enumerate(xs):
        pos = i
        if indexing == "xy" and n > 1 and i < 2:
            pos = 1 - i
        shape = [1] * n
        shape[pos] = -1
        r = array_ops.reshape(x, shape)
        out.append(array_ops.broadcast_to(r, shape_of))
    return out


# ---------------------------------------------------------------- sequence_mask
def sequence_mask(lengths, maxlen=None, dtype=_dtypes.bool_, name=None):
    """Mask of the first `lengths[i]` positions: ``mask[..., j] = j < lengths[...]``.

    Args:
      lengths: integer `Tensor` [...].
      maxlen: Python int or scalar tensor known when the step is compiled (a constant,
        or from a shape: ``shape(x)[1]``); default the largest of `lengths`, which must
        then be a constant. Differs from TensorFlow: a width that depends on fed data
        (`maxlen` computed from fed values, or no `maxlen` with fed `lengths`) is an
        error, as XLA cannot compile it.
      dtype: the mask's dtype (bool by default).
    Returns:
      `Tensor` [..., maxlen] of `dtype`.
    """
    lengths = convert_to_tensor(lengths)
    if not lengths.dtype.is_integer:
        raise TypeError(f"sequence_mask: `lengths` must be integers, got {lengths.dtype.name}")
    if maxlen is None:
        cv = constant_value(lengths)
        if cv is None:
            raise errors.UnimplementedError(
                "sequence_mask: without `maxlen` the mask's width is max(lengths), a shape "
                "that depends on the data, which XLA cannot compile; pass maxlen= (e.g. the "
                "padded sequence length, `inputs.shape[1]`)")
        maxlen = int(np.max(cv)) if np.size(cv) else 0
    if hasattr(maxlen, "op") or hasattr(maxlen, "_as_tensor"):
        cv = constant_value(convert_to_tensor(maxlen))
        if cv is not None:
            maxlen = int(cv)
    if hasattr(maxlen, "op") or hasattr(maxlen, "_as_tensor"):
        # known when the step is compiled (`shape(x)[1]`); the mask's width follows it
        pos = _range(0, cast(maxlen, lengths.dtype), 1, dtype=lengths.dtype)
    else:
        pos = _range(0, int(maxlen), 1, dtype=lengths.dtype)
    mask = math_ops.less(pos, array_ops.expand_dims(lengths, -1))
    d = _dtypes.as_dtype(dtype)
    return array_ops.identity(mask, name=name) if d.is_bool else cast(mask, d, name=name)


# ---------------------------------------------------------------- reverse
ReverseV2 = OpDef("ReverseV2", kernel=lambda x, *, axis: jnp.flip(x, axis))


@ReverseV2.shape_fn
def _reverse_shape(x, *, axis):
    return TensorSpec(x.shape, x.dtype)


@RegisterGradient("ReverseV2")
def _reverse_grad(op, grad):
    return [ReverseV2(grad, axis=op.attrs["axis"])]


def reverse(tensor, axis, name=None):
    """`tensor` with the order of elements reversed along each of `axis` (a list of
    ints)."""
    t = convert_to_tensor(tensor)
    ax = [int(axis)] if isinstance(axis, (int, np.integer)) else [int(a) for a in axis]
    rank = t.shape.rank
    if rank is not None:
        for a in ax:
            if not -rank <= a < rank:
                raise errors.InvalidArgumentError(
                    f"reverse: axis {a} is out of range for a rank-{rank} tensor")
        ax = [a % rank for a in ax]
    return ReverseV2(t, axis=tuple(ax), name=name)


reverse_v2 = reverse


def _reverse_sequence_kernel(x, lengths, *, seq_axis, batch_axis):
    n = x.shape[seq_axis]
    pos = jnp.arange(n)
    lengths = lengths.astype(jnp.int32)
    # source index for each (batch, position): reversed within the first lengths[b].
    src = jnp.where(pos[None, :] < lengths[:, None], lengths[:, None] - 1 - pos[None, :],
                    pos[None, :])                                   # [batch, n]
    xt = jnp.moveaxis(x, (batch_axis, seq_axis), (0, 1))
    idx = src.reshape(src.shape + (1,) * (xt.ndim - 2))
    out = jnp.take_along_axis(xt, jnp.broadcast_to(idx, xt.shape), axis=1)
    return jnp.moveaxis(out, (0, 1), (batch_axis, seq_axis))


ReverseSequence = OpDef("ReverseSequence", kernel=_reverse_sequence_kernel)


@RegisterGradient("ReverseSequence")
def _reverse_sequence_grad(op, grad):
    return [ReverseSequence(grad, op.inputs[1], **op.attrs), None]


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None,  # noqa: A002
                     seq_dim=None, batch_dim=None):
    """Reverses the first `seq_lengths[b]` elements along `seq_axis` of each batch
    entry `b`; the rest stay in place.

    Args:
      input: `Tensor`.
      seq_lengths: int `Tensor` [batch].
      seq_axis, batch_axis: ints (`seq_dim`, `batch_dim` are TensorFlow 1's names);
        `batch_axis` defaults to 0.
    Returns:
      `Tensor` of `input`'s shape.
    """
    x = convert_to_tensor(input)
    seq_axis = seq_axis if seq_axis is not None else seq_dim
    batch_axis = batch_axis if batch_axis is not None else (batch_dim or 0)
    if seq_axis is None:
        raise ValueError("reverse_sequence: `seq_axis` is required")
    r = x.shape.rank
    return ReverseSequence(x, convert_to_tensor(seq_lengths), seq_axis=int(seq_axis) % r,
                           batch_axis=int(batch_axis) % r, name=name)


# ---------------------------------------------------------------- top_k
def _top_k_kernel(x, *, k):
    v, i = jax.lax.top_k(x, k)
    return v, i.astype(jnp.int32)


TopKV2 = OpDef("TopKV2", kernel=_top_k_kernel)


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002
    """The `k` largest entries of the last axis and their indices.

    Args:
      input: `Tensor` [..., n] (float or int).
      k: Python int, 1 <= k <= n.
      sorted: ignored; the values are always in descending order (TensorFlow allows
        any order with sorted=False).
    Returns:
      `(values, indices)`: `Tensor`s [..., k], `input`'s dtype and int32. Ties go to
      the lower index, as TensorFlow. The gradient flows to the selected entries.
    """
    x = convert_to_tensor(input)
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise TypeError(f"top_k: `k` must be a positive Python int. Received: k={k!r}")
    n = x.shape.as_list()[-1] if x.shape.rank else None
    if n is not None and k > n:
        raise errors.InvalidArgumentError(
            f"top_k: input must have at least k={k} columns, has {n} (shape {x.shape})")
    v, i = TopKV2(x, k=int(k), name=name)
    return v, i


# ---------------------------------------------------------------- predicates, counts
IsNan = OpDef("IsNan", kernel=jnp.isnan)
IsInf = OpDef("IsInf", kernel=jnp.isinf)
NotDifferentiable("IsNan")
NotDifferentiable("IsInf")


def is_nan(x, name=None):
    """Element-wise: True where `x` is NaN (bool, `x`'s shape)."""
    return IsNan(convert_to_tensor(x), name=name)


def is_inf(x, name=None):
    """Element-wise: True where `x` is +inf or -inf (bool, `x`'s shape)."""
    return IsInf(convert_to_tensor(x), name=name)


def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=_dtypes.int64,
                  name=None, reduction_indices=None, keep_dims=None, input=None):  # noqa: A002
    """Number of non-zero elements over `axis` (all by default).

    Args:
      input_tensor: `Tensor` (bool, numeric); `input` is TF2's name.
      axis: None, an int or a list of ints (`reduction_indices` is TF1's name).
      keepdims: keep reduced axes as size 1 (`keep_dims` is TF1's name).
      dtype: the count's dtype (int64, as TensorFlow).
    Returns:
      `Tensor` of `dtype`.
    """
    x = convert_to_tensor(input_tensor if input_tensor is not None else input)
    axis = axis if axis is not None else reduction_indices
    keep = bool(keepdims if keepdims is not None else keep_dims)
    nz = math_ops.not_equal(x, False if x.dtype.is_bool else 0) if not x.dtype.is_bool else x
    return reduction_ops.reduce_sum(cast(nz, dtype), axis, keepdims=keep, name=name)


Atan2 = OpDef("Atan2", kernel=jnp.arctan2)


def atan2(y, x, name=None):
    """Element-wise `arctan(y / x)` in the quadrant of `(x, y)`, with broadcasting."""
    y, x = math_ops._pair(y, x)
    return Atan2(y, x, name=name)


DivNoNan = OpDef("DivNoNan", kernel=lambda x, y: jnp.where(
    y == 0, jnp.zeros((), jnp.result_type(x, y)), x / jnp.where(y == 0, 1, y)))


def div_no_nan(x, y, name=None):
    """Element-wise `x / y`, and 0 where `y` is 0 (float inputs)."""
    x, y = math_ops._pair(x, y)
    return DivNoNan(x, y, name=name)


# ---------------------------------------------------------------- host ops: boolean_mask, unique
def _boolean_mask_lower(ctx, op, x, mask):
    x, mask = np.asarray(x), np.asarray(mask).astype(bool)
    k = mask.ndim
    if x.shape[:k] != mask.shape:
        raise errors.InvalidArgumentError(
            f"boolean_mask {op.name!r}: mask shape {mask.shape} does not match the first {k} "
            f"dimensions of the tensor, {x.shape}")
    return (np.ascontiguousarray(x[mask]),)


BooleanMask = OpDef("BooleanMask", lower=_boolean_mask_lower, host=True)


@BooleanMask.shape_fn
def _boolean_mask_shape(x, mask):
    k = mask.shape.rank
    if x.shape.rank is None or k is None:
        return TensorSpec(None, x.dtype)
    if not mask.shape.is_compatible_with(x.shape[:k]):
        raise errors.InvalidArgumentError(
            f"mask shape {mask.shape} does not match the first {k} dimensions of the "
            f"tensor, {x.shape}")
    return TensorSpec([None] + x.shape.as_list()[k:], x.dtype)


def _boolean_mask_grad_lower(ctx, op, grad, mask, x):
    mask = np.asarray(mask).astype(bool)
    out = np.zeros(np.shape(x), dtype=np.asarray(grad).dtype)
    out[mask] = np.asarray(grad)
    return (out,)


BooleanMaskGrad = OpDef("BooleanMaskGrad", lower=_boolean_mask_grad_lower, host=True)
NotDifferentiable("BooleanMaskGrad")


@BooleanMaskGrad.shape_fn
def _boolean_mask_grad_shape(grad, mask, x):
    return TensorSpec(x.shape, grad.dtype)


@RegisterGradient("BooleanMask")
def _boolean_mask_grad(op, grad):
    x, mask = op.inputs
    return [BooleanMaskGrad(grad, mask, x), None]


def boolean_mask(tensor, mask, axis=None, name="boolean_mask"):
    """The entries of `tensor` where `mask` is True, in row-major order.

    Args:
      tensor: `Tensor` [d0, ..., d(k-1), ...rest].
      mask: bool `Tensor` [d0, ..., d(k-1)].
      axis: must be None or 0 (mylib masks the leading axes only).
    Returns:
      `Tensor` [n, ...rest], n the number of True entries.
    Raises:
      InvalidArgumentError: if `mask`'s shape is not `tensor`'s leading shape.

    Differs from TensorFlow: the output's length depends on the data, which XLA cannot
    compile, so the op runs on the host between the compiled parts of the step (its
    gradient too). For speed inside a model, multiply by a float mask or use
    ``where(mask, x, 0)`` and normalise by ``reduce_sum(mask)``.
    """
    if axis not in (None, 0):
        raise ValueError(f"boolean_mask: only axis=None or 0 is supported. Received: axis={axis}")
    x = convert_to_tensor(tensor)
    m = convert_to_tensor(mask)
    if not m.dtype.is_bool:
        raise TypeError(f"boolean_mask: `mask` must be bool, got {m.dtype.name}")
    return BooleanMask(x, m, name=name)


def _unique_lower(ctx, op, x):
    x = np.asarray(x)
    _, first, inv = np.unique(x, return_index=True, return_inverse=True)
    # TensorFlow orders the unique values by first occurrence, not sorted.
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    y = x[np.sort(first)]
    out_idx = np.dtype(_dtypes.as_dtype(op.attrs["out_idx"]).np)
    return y, rank[inv.reshape(-1)].astype(out_idx)


UniqueOp = OpDef("Unique", lower=_unique_lower, host=True)
NotDifferentiable("Unique")


@UniqueOp.shape_fn
def _unique_shape(x, *, out_idx):
    if x.shape.rank not in (None, 1):
        raise errors.InvalidArgumentError(f"unique needs a 1-D tensor, got shape {x.shape}")
    return [TensorSpec([None], x.dtype), TensorSpec(x.shape, out_idx)]


def unique(x, out_idx=_dtypes.int32, name=None):
    """The distinct values of 1-D `x` in order of first occurrence, and for each
    element of `x` the index of its value in them.

    Returns:
      `(y, idx)`: `y` [n_unique] of `x`'s dtype; `idx` [len(x)] of `out_idx`.

    Differs from TensorFlow: runs on the host (the output's length depends on the
    data, which XLA cannot compile) and has no gradient.
    """
    y, idx = UniqueOp(convert_to_tensor(x), out_idx=_dtypes.as_dtype(out_idx).name, name=name)
    return y, idx
