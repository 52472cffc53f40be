"""More of TensorFlow 1's array ops: `roll`, `depth_to_space` / `space_to_depth`,
`space_to_batch(_nd)` / `batch_to_space(_nd)`, `invert_permutation`, `batch_gather`,
`tensor_diag`, and the data-dependent-shape ops `bincount`, `setdiff1d` / `listdiff`,
`unique_with_counts`, `dynamic_partition` and `dynamic_stitch`.

Each op: definition (kernel, optional shape rule), gradient, wrapper. Block sizes,
paddings and axes are attrs, known when the graph is built (XLA compiles static
shapes). Ops whose output length depends on the data run on the host between the
compiled parts of a step, as `unique` and `boolean_mask` do (see `sequence_ops`).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from mylib import errors
from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import (NotDifferentiable, OpDef, RegisterGradient, TensorSpec,
                                    convert_to_tensor)
from mylib.core.ops import array_ops, constant_ops, indexing_ops, math_ops
from mylib.core.ops.constant_ops import constant_value
from mylib.core.ops.linalg_ops import matrix_diag_part
from mylib.core.ops.segment_ops import unsorted_segment_sum

__all__ = ["newaxis", "roll", "depth_to_space", "space_to_depth", "space_to_batch",
           "space_to_batch_nd", "batch_to_space", "batch_to_space_nd", "invert_permutation",
           "batch_gather", "tensor_diag", "bincount", "setdiff1d", "listdiff",
           "unique_with_counts", "dynamic_partition", "dynamic_stitch"]

# `x[:, tf.newaxis]`, as numpy's.
newaxis = None


def _static(value, what, owner):
    """A Python/numpy value of an argument that must be known when the graph is built."""
    if hasattr(value, "op") or hasattr(value, "_as_tensor"):
        v = constant_value(convert_to_tensor(value))
        if v is None:
            raise errors.InvalidArgumentError(
                f"{owner}: `{what}` must be known when the graph is built (a Python value "
                f"or a constant), as XLA compiles static shapes; got the computed tensor "
                f"'{value.name}'")
        return np.asarray(v)
    return np.asarray(value)


# ---------------------------------------------------------------- roll
Roll = OpDef("Roll", kernel=lambda x, shift, *, axis: jnp.roll(x, shift, axis))


@Roll.shape_fn
def _roll_shape(x, shift, *, axis):
    if not shift.dtype.is_integer:
        raise errors.InvalidArgumentError(f"shift must be int32 or int64, got {shift.dtype.name}")
    n = shift.shape.num_elements() if shift.shape.is_fully_defined() else None
    if n is not None and n != len(axis):
        raise errors.InvalidArgumentError(
            f"shift and axis must have the same size: {n} vs {len(axis)}")
    return TensorSpec(x.shape, x.dtype)


@RegisterGradient("Roll")
def _roll_grad(op, grad):
    return Roll(grad, math_ops.negative(op.inputs[1]), axis=op.attrs["axis"]), None


def roll(input, shift, axis, name=None):  # noqa: A002
    """Rolls the elements of `input` along `axis` by `shift` (positive: toward higher
    indices), wrapping around; several shifts of one axis add up.

    Args:
      input: `Tensor`.
      shift: int scalar or 1-D `Tensor` (may be computed at run time).
      axis: int or list of ints of `shift`'s length; must be known when the graph is
        built (TensorFlow also takes a computed tensor).
    Returns:
      `Tensor` of `input`'s shape and dtype.
    Raises:
      InvalidArgumentError: `shift` and `axis` differ in size, or an axis is out of range.
    """
    x = convert_to_tensor(input)
    s = convert_to_tensor(shift, dtype_hint=_dtypes.int32)
    ax = _static(axis, "axis", "roll").reshape(-1).astype(int).tolist()
    r = x.shape.rank
    if r is not None:
        bad = [a for a in ax if not -r <= a < r]
        if bad:
            raise errors.InvalidArgumentError(
                f"roll: axis {bad[0]} is out of range for '{x.name}' of shape {x.shape}")
        ax = [a % r for a in ax]
    if s.shape.rank == 0 and len(ax) != 1:
        raise errors.InvalidArgumentError(
            f"roll: shift and axis must have the same size: 1 vs {len(ax)}")
    if s.shape.rank == 1 or len(ax) != 1:
        return Roll(x, s, axis=tuple(ax), name=name)
    return Roll(x, s, axis=ax[0], name=name)


# ---------------------------------------------------------------- depth <-> space
def _nhwc(x, data_format):
    return x if data_format == "NHWC" else jnp.transpose(x, (0, 2, 3, 1))


def _from_nhwc(x, data_format):
    return x if data_format == "NHWC" else jnp.transpose(x, (0, 3, 1, 2))


def _depth_to_space_kernel(x, *, block_size, data_format):
    b = block_size
    x = _nhwc(x, data_format)
    n, h, w, c = x.shape
    y = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    return _from_nhwc(y.reshape(n, h * b, w * b, c // (b * b)), data_format)


def _space_to_depth_kernel(x, *, block_size, data_format):
    b = block_size
    x = _nhwc(x, data_format)
    n, h, w, c = x.shape
    y = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    return _from_nhwc(y.reshape(n, h // b, w // b, b * b * c), data_format)


DepthToSpace = OpDef("DepthToSpace", kernel=_depth_to_space_kernel)
SpaceToDepth = OpDef("SpaceToDepth", kernel=_space_to_depth_kernel)


def _d2s_dims(x, data_format):
    s = x.shape
    if s.rank is not None and s.rank != 4:
        raise errors.InvalidArgumentError(f"input must be 4-D, got shape {s}")
    d = s.as_list() if s.rank is not None else [None] * 4
    return d if data_format == "NHWC" else [d[0], d[2], d[3], d[1]]


def _d2s_out(n, h, w, c, data_format, dtype):
    return TensorSpec([n, h, w, c] if data_format == "NHWC" else [n, c, h, w], dtype)


@DepthToSpace.shape_fn
def _depth_to_space_shape(x, *, block_size, data_format):
    n, h, w, c = _d2s_dims(x, data_format)
    b = block_size
    if c is not None and c % (b * b):
        raise errors.InvalidArgumentError(
            f"the depth {c} is not divisible by block_size * block_size = {b * b}")
    mul = lambda v: None if v is None else v * b  # noqa: E731
    return _d2s_out(n, mul(h), mul(w), None if c is None else c // (b * b), data_format,
                    x.dtype)


@SpaceToDepth.shape_fn
def _space_to_depth_shape(x, *, block_size, data_format):
    n, h, w, c = _d2s_dims(x, data_format)
    b = block_size
    for what, v in (("height", h), ("width", w)):
        if v is not None and v % b:
            raise errors.InvalidArgumentError(
                f"the {what} {v} is not divisible by block_size {b}")
    div = lambda v: None if v is None else v // b  # noqa: E731
    return _d2s_out(n, div(h), div(w), None if c is None else c * b * b, data_format,
                    x.dtype)


@RegisterGradient("DepthToSpace")
def _depth_to_space_grad(op, grad):
    return SpaceToDepth(grad, **op.attrs)


@RegisterGradient("SpaceToDepth")
def _space_to_depth_grad(op, grad):
    return DepthToSpace(grad, **op.attrs)


def _block_args(block_size, data_format, owner):
    if not isinstance(block_size, (int, np.integer)) or block_size < 2:
        raise errors.InvalidArgumentError(
            f"{owner}: block_size must be an int >= 2. Received: block_size={block_size!r}")
    if data_format not in ("NHWC", "NCHW"):
        raise errors.InvalidArgumentError(
            f"{owner}: data_format must be 'NHWC' or 'NCHW' (mylib has no 'NCHW_VECT_C'). "
            f"Received: data_format={data_format!r}")
    return {"block_size": int(block_size), "data_format": data_format}


def depth_to_space(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """Moves blocks of depth into spatial blocks: [n, h, w, c] ->
    [n, h * b, w * b, c / b²]; ``out[n, h*b + i, w*b + j, k] = in[n, h, w, (i*b + j) *
    c/b² + k]`` (TensorFlow's order).

    Args:
      input: 4-D `Tensor` ("NHWC", or "NCHW").
      block_size: int >= 2.
    Returns:
      4-D `Tensor` of `input`'s dtype.
    Raises:
      InvalidArgumentError: the depth is not divisible by block_size², a bad
        `block_size` or `data_format`, or a rank other than 4.
    """
    attrs = _block_args(block_size, data_format, "depth_to_space")
    return DepthToSpace(convert_to_tensor(input), name=name, **attrs)


def space_to_depth(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """Moves spatial blocks into depth, the inverse of `depth_to_space`: [n, h, w, c]
    -> [n, h / b, w / b, c * b²].

    Raises:
      InvalidArgumentError: height or width not divisible by `block_size`, a bad
        `block_size` or `data_format`, or a rank other than 4.
    """
    attrs = _block_args(block_size, data_format, "space_to_depth")
    return SpaceToDepth(convert_to_tensor(input), name=name, **attrs)


# ---------------------------------------------------------------- space <-> batch
def _space_to_batch_kernel(x, *, block_shape, paddings):
    m = len(block_shape)
    rest = x.shape[1 + m:]
    x = jnp.pad(x, [(0, 0)] + [tuple(p) for p in paddings] + [(0, 0)] * len(rest))
    b = x.shape[0]
    dims = [b]
    for i, k in enumerate(block_shape):
        dims += [x.shape[1 + i] // k, k]
    y = x.reshape(dims + list(rest))
    perm = ([2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
            + list(range(1 + 2 * m, 1 + 2 * m + len(rest))))
    y = y.transpose(perm)
    return y.reshape([b * int(np.prod(block_shape))] + [x.shape[1 + i] // k for i, k in
                                                         enumerate(block_shape)] + list(rest))


def _batch_to_space_kernel(x, *, block_shape, crops):
    m = len(block_shape)
    rest = x.shape[1 + m:]
    prod = int(np.prod(block_shape))
    b = x.shape[0] // prod
    y = x.reshape(list(block_shape) + [b] + list(x.shape[1:]))
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    y = y.transpose(perm)
    spatial = [x.shape[1 + i] * k for i, k in enumerate(block_shape)]
    y = y.reshape([b] + spatial + list(rest))
    idx = (slice(None),) + tuple(slice(c0, s - c1) for (c0, c1), s in zip(crops, spatial))
    return y[idx]


SpaceToBatchND = OpDef("SpaceToBatchND", kernel=_space_to_batch_kernel)
BatchToSpaceND = OpDef("BatchToSpaceND", kernel=_batch_to_space_kernel)


def _dims(x, m):
    if x.shape.rank is not None and x.shape.rank < 1 + m:
        raise errors.InvalidArgumentError(
            f"input must have rank >= {1 + m} (batch + {m} block dims), got shape {x.shape}")
    return x.shape.as_list() if x.shape.rank is not None else None


@SpaceToBatchND.shape_fn
def _space_to_batch_shape(x, *, block_shape, paddings):
    m = len(block_shape)
    d = _dims(x, m)
    if d is None:
        return TensorSpec(None, x.dtype)
    out = [None if d[0] is None else d[0] * int(np.prod(block_shape))]
    for i, (k, (p0, p1)) in enumerate(zip(block_shape, paddings)):
        v = d[1 + i]
        if v is not None and (v + p0 + p1) % k:
            raise errors.InvalidArgumentError(
                f"padded input dim {i + 1} ({v} + {p0} + {p1}) is not divisible by "
                f"block_shape[{i}] = {k}")
        out.append(None if v is None else (v + p0 + p1) // k)
    return TensorSpec(out + d[1 + m:], x.dtype)


@BatchToSpaceND.shape_fn
def _batch_to_space_shape(x, *, block_shape, crops):
    m = len(block_shape)
    d = _dims(x, m)
    if d is None:
        return TensorSpec(None, x.dtype)
    prod = int(np.prod(block_shape))
    if d[0] is not None and d[0] % prod:
        raise errors.InvalidArgumentError(
            f"the batch {d[0]} is not divisible by the product of block_shape, {prod}")
    out = [None if d[0] is None else d[0] // prod]
    for i, (k, (c0, c1)) in enumerate(zip(block_shape, crops)):
        v = d[1 + i]
        if v is not None and v * k - c0 - c1 < 0:
            raise errors.InvalidArgumentError(
                f"crops [{c0}, {c1}] of dim {i + 1} exceed its size {v * k}")
        out.append(None if v is None else v * k - c0 - c1)
    return TensorSpec(out + d[1 + m:], x.dtype)


@RegisterGradient("SpaceToBatchND")
def _space_to_batch_grad(op, grad):
    return BatchToSpaceND(grad, block_shape=op.attrs["block_shape"],
                          crops=op.attrs["paddings"])


@RegisterGradient("BatchToSpaceND")
def _batch_to_space_grad(op, grad):
    return SpaceToBatchND(grad, block_shape=op.attrs["block_shape"],
                          paddings=op.attrs["crops"])


def _block_and_pads(block_shape, pads, what, owner):
    bs = _static(block_shape, "block_shape", owner).reshape(-1).astype(int)
    ps = _static(pads, what, owner).astype(int)
    if ps.shape != (len(bs), 2):
        raise errors.InvalidArgumentError(
            f"{owner}: `{what}` must have shape [{len(bs)}, 2] (one pair per block dim), "
            f"got {list(ps.shape)}")
    if (bs < 1).any() or (ps < 0).any():
        raise errors.InvalidArgumentError(
            f"{owner}: block_shape must be >= 1 and {what} >= 0. Received: "
            f"block_shape={bs.tolist()}, {what}={ps.tolist()}")
    return tuple(bs.tolist()), tuple(tuple(p) for p in ps.tolist())


def space_to_batch_nd(input, block_shape, paddings, name=None):  # noqa: A002
    """Zero-pads the M spatial dims after the batch, cuts them into blocks of
    `block_shape` and moves the block offsets into the batch: [b, s1..sM, rest] ->
    [b * prod(block_shape), (s1 + pad) / k1, ..., rest] (TensorFlow's order: the
    output batch index is ``offset * b + n``).

    Args:
      input: `Tensor` of rank >= 1 + M.
      block_shape: M ints >= 1, known when the graph is built.
      paddings: [M, 2] ints >= 0 (start, end), known when the graph is built.
    Returns:
      `Tensor` of `input`'s dtype.
    Raises:
      InvalidArgumentError: a padded dim not divisible by its block size, or bad
        arguments.
    """
    bs, ps = _block_and_pads(block_shape, paddings, "paddings", "space_to_batch_nd")
    return SpaceToBatchND(convert_to_tensor(input), block_shape=bs, paddings=ps, name=name)


def batch_to_space_nd(input, block_shape, crops, name=None):  # noqa: A002
    """The inverse of `space_to_batch_nd`: [b * prod(block_shape), s1..sM, rest] ->
    [b, s1 * k1 - crop1, ..., rest].

    Args:
      input: `Tensor` of rank >= 1 + M.
      block_shape: M ints >= 1, known when the graph is built.
      crops: [M, 2] ints >= 0 cut from the start and end of each spatial dim.
    Raises:
      InvalidArgumentError: the batch is not divisible by ``prod(block_shape)``,
        crops larger than a dim, or bad arguments.
    """
    bs, cs = _block_and_pads(block_shape, crops, "crops", "batch_to_space_nd")
    return BatchToSpaceND(convert_to_tensor(input), block_shape=bs, crops=cs, name=name)


def space_to_batch(input, paddings, block_size=None, name=None, block_shape=None):  # noqa: A002
    """TensorFlow 1's 4-D `space_to_batch`: `space_to_batch_nd` with the block
    ``[block_size, block_size]`` over height and width of an NHWC `input`."""
    if block_size is None:
        block_size = block_shape
    if not isinstance(block_size, (int, np.integer)) or block_size < 2:
        raise errors.InvalidArgumentError(
            f"space_to_batch: block_size must be an int >= 2. Received: {block_size!r}")
    return space_to_batch_nd(input, [block_size, block_size], paddings, name=name)


def batch_to_space(input, crops, block_size, name=None, block_shape=None):  # noqa: A002
    """TensorFlow 1's 4-D `batch_to_space`: `batch_to_space_nd` with the block
    ``[block_size, block_size]`` over height and width of an NHWC `input`."""
    if block_size is None:
        block_size = block_shape
    if not isinstance(block_size, (int, np.integer)) or block_size < 2:
        raise errors.InvalidArgumentError(
            f"batch_to_space: block_size must be an int >= 2. Received: {block_size!r}")
    return batch_to_space_nd(input, [block_size, block_size], crops, name=name)


# ---------------------------------------------------------------- permutations, gathers
InvertPermutation = OpDef("InvertPermutation", kernel=lambda x: jnp.zeros_like(x).at[x].set(
    jnp.arange(x.shape[0], dtype=x.dtype)))
NotDifferentiable("InvertPermutation")


@InvertPermutation.shape_fn
def _invert_permutation_shape(x):
    if x.shape.rank not in (None, 1):
        raise errors.InvalidArgumentError(f"x must be a vector, got shape {x.shape}")
    if x.dtype not in (_dtypes.int32, _dtypes.int64):
        raise errors.InvalidArgumentError(f"x must be int32 or int64, got {x.dtype.name}")
    return TensorSpec(x.shape, x.dtype)


def invert_permutation(x, name=None):
    """The inverse permutation: ``y[x[i]] = i``.

    Args:
      x: int32/int64 `Tensor` [n], a permutation of 0..n-1.
    Returns:
      `Tensor` [n] of `x`'s dtype.
    Raises:
      InvalidArgumentError: `x` not a vector of int32/int64.

    Differs from TensorFlow: a value out of range or repeated is not reported (XLA
    cannot raise from a compiled step); the result is then unspecified.
    """
    return InvertPermutation(convert_to_tensor(x, dtype_hint=_dtypes.int32), name=name)


def batch_gather(params, indices, name=None):
    """``params[b..., indices[b..., j], ...]``: a gather along axis ``rank(indices)-1``
    for each of the leading ``rank(indices) - 1`` (batch) dims (TensorFlow 1's
    `batch_gather`, ``gather(params, indices, batch_dims=rank(indices) - 1)``).

    Args:
      params: `Tensor` [B..., n, ...].
      indices: int `Tensor` [B..., k] of known rank.
    Returns:
      `Tensor` [B..., k, ...].
    Raises:
      InvalidArgumentError: `indices` of unknown rank, or `params` of lower rank.
    """
    p = convert_to_tensor(params)
    i = convert_to_tensor(indices, dtype_hint=_dtypes.int32)
    r = i.shape.rank
    if r is None or r < 1:
        raise errors.InvalidArgumentError(
            f"batch_gather: indices '{i.name}' must have a known rank >= 1, got {i.shape}")
    if p.shape.rank is not None and p.shape.rank < r:
        raise errors.InvalidArgumentError(
            f"batch_gather: params {p.shape} must have rank >= that of indices {i.shape}")
    return indexing_ops.gather(p, i, axis=r - 1, batch_dims=r - 1, name=name)


def _tensor_diag_kernel(d):
    n = int(np.prod(d.shape))
    return (jnp.reshape(d, (-1,))[:, None] * jnp.eye(n, dtype=d.dtype)).reshape(
        d.shape + d.shape)


TensorDiag = OpDef("Diag", kernel=_tensor_diag_kernel)


@RegisterGradient("Diag")
def _tensor_diag_grad(op, grad):
    d = op.inputs[0]
    k = d.shape.rank
    n = d.shape.num_elements()
    flat = array_ops.reshape(grad, [n, n])
    return array_ops.reshape(matrix_diag_part(flat), d.shape.as_list()[:k])


def tensor_diag(diagonal, name=None):
    """The rank-2k tensor with `diagonal` [D1..Dk] on its diagonal:
    ``out[i1..ik, i1..ik] = diagonal[i1..ik]``, zeros elsewhere (TensorFlow's `Diag`).

    Args:
      diagonal: `Tensor` of fully known shape, rank 1 to 3 (as TensorFlow).
    Returns:
      `Tensor` [D1..Dk, D1..Dk].
    Raises:
      InvalidArgumentError: rank 0 or above 3, or unknown dims.
    """
    d = convert_to_tensor(diagonal)
    if not d.shape.is_fully_defined() or not 1 <= d.shape.rank <= 3:
        raise errors.InvalidArgumentError(
            f"tensor_diag: diagonal '{d.name}' must have a known shape of rank 1 to 3, "
            f"got {d.shape}")
    return TensorDiag(d, name=name)


# ---------------------------------------------------------------- host ops
def _bincount_lower(ctx, op, arr, *w):
    arr = np.asarray(arr).reshape(-1)
    if arr.size and arr.min() < 0:
        raise errors.InvalidArgumentError(
            f"bincount {op.name!r}: arr must be non-negative, got {int(arr.min())}", op=op)
    a = op.attrs
    size = int(arr.max()) + 1 if arr.size else 0
    if a["minlength"] is not None:
        size = max(size, a["minlength"])
    if a["maxlength"] is not None:
        size = min(size, a["maxlength"])
    keep = arr < size
    dt = np.dtype(_dtypes.as_dtype(a["dtype"]).np)
    weights = np.asarray(w[0]).reshape(-1)[keep] if w else None
    return (np.bincount(arr[keep], weights, minlength=size)[:size].astype(dt),)


Bincount = OpDef("Bincount", lower=_bincount_lower, host=True)
NotDifferentiable("Bincount")


@Bincount.shape_fn
def _bincount_shape(arr, *w, minlength, maxlength, dtype):
    return TensorSpec([None], dtype)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=_dtypes.int32,
             name=None):
    """Counts of each value of `arr`: ``out[v]`` = number of times (or sum of
    `weights` where) ``arr == v``.

    Args:
      arr: int32 `Tensor` of non-negative values (any shape; flattened).
      weights: optional `Tensor` of `arr`'s shape; the output takes its dtype.
      minlength, maxlength: Python ints bounding the output length (default
        ``max(arr) + 1``); values >= maxlength are dropped.
      dtype: the output dtype without `weights` (int32 by default).
    Returns:
      `Tensor` [length].
    Raises:
      InvalidArgumentError: non-integer `arr`; (at run time) a negative value.

    Differs from TensorFlow: with ``minlength == maxlength`` the length is static and
    the op runs in XLA (differentiable in `weights`, as TensorFlow's); otherwise the
    length depends on the data and the op runs on the host, with no gradient.
    """
    a = convert_to_tensor(arr, dtype_hint=_dtypes.int32)
    if not a.dtype.is_integer:
        raise errors.InvalidArgumentError(
            f"bincount: arr '{a.name}' must be int32, got {a.dtype.name}")
    w = None if weights is None else convert_to_tensor(weights)
    out_dtype = w.dtype if w is not None else _dtypes.as_dtype(dtype)
    lo = None if minlength is None else int(_static(minlength, "minlength", "bincount"))
    hi = None if maxlength is None else int(_static(maxlength, "maxlength", "bincount"))
    if lo is not None and hi is not None and lo >= hi:
        # A static length: a segment sum in XLA; values >= hi get zero weight.
        flat = array_ops.reshape(math_ops.cast(a, _dtypes.int32), [-1])
        inside = math_ops.less(flat, hi)
        ids = array_ops.where(inside, flat, constant_ops.zeros_like(flat))
        vals = (array_ops.reshape(w, [-1]) if w is not None else
                constant_ops.ones_like(flat, dtype=out_dtype))
        vals = array_ops.where(inside, vals, constant_ops.zeros_like(vals))
        return unsorted_segment_sum(vals, ids, hi, name=name)
    inputs = [a] if w is None else [a, w]
    return Bincount(*inputs, minlength=lo, maxlength=hi, dtype=out_dtype.name, name=name)


def _list_diff_lower(ctx, op, x, y):
    x = np.asarray(x)
    keep = ~np.isin(x, np.asarray(y))
    idx = np.nonzero(keep)[0].astype(np.dtype(_dtypes.as_dtype(op.attrs["out_idx"]).np))
    return x[keep], idx


ListDiff = OpDef("ListDiff", lower=_list_diff_lower, host=True)
NotDifferentiable("ListDiff")


@ListDiff.shape_fn
def _list_diff_shape(x, y, *, out_idx):
    for t, what in ((x, "x"), (y, "y")):
        if t.shape.rank not in (None, 1):
            raise errors.InvalidArgumentError(f"{what} must be 1-D, got shape {t.shape}")
    if x.dtype != y.dtype:
        raise errors.InvalidArgumentError(
            f"x and y must have the same dtype: {x.dtype.name} vs {y.dtype.name}")
    return [TensorSpec([None], x.dtype), TensorSpec([None], out_idx)]


def setdiff1d(x, y, index_dtype=_dtypes.int32, name=None):
    """The values of 1-D `x` not in `y`, in `x`'s order (duplicates kept), and their
    positions in `x`.

    Returns:
      `(out, idx)`: `out` [n] of `x`'s dtype, `idx` [n] of `index_dtype`.
    Raises:
      InvalidArgumentError: `x` or `y` not 1-D, or their dtypes differ.

    Differs from TensorFlow: runs on the host (the output's length depends on the
    data, which XLA cannot compile).
    """
    x = convert_to_tensor(x)
    y = convert_to_tensor(y, dtype_hint=x.dtype)
    return ListDiff(x, y, out_idx=_dtypes.as_dtype(index_dtype).name, name=name)


def listdiff(x, y, out_idx=_dtypes.int32, name=None):
    """TensorFlow 1's name of `setdiff1d` (``out_idx`` is its `index_dtype`)."""
    return setdiff1d(x, y, index_dtype=out_idx, name=name)


def _unique_counts_lower(ctx, op, x):
    x = np.asarray(x)
    _, first, inv, counts = np.unique(x, return_index=True, return_inverse=True,
                                      return_counts=True)
    # TensorFlow orders the unique values by first occurrence, not sorted.
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    dt = np.dtype(_dtypes.as_dtype(op.attrs["out_idx"]).np)
    return x[first[order]], rank[inv.reshape(-1)].astype(dt), counts[order].astype(dt)


UniqueWithCounts = OpDef("UniqueWithCounts", lower=_unique_counts_lower, host=True)
NotDifferentiable("UniqueWithCounts")


@UniqueWithCounts.shape_fn
def _unique_counts_shape(x, *, out_idx):
    if x.shape.rank not in (None, 1):
        raise errors.InvalidArgumentError(f"x must be 1-D, got shape {x.shape}")
    return [TensorSpec([None], x.dtype), TensorSpec(x.shape, out_idx),
            TensorSpec([None], out_idx)]


def unique_with_counts(x, out_idx=_dtypes.int32, name=None):
    """`unique` plus how often each distinct value occurs.

    Returns:
      `(y, idx, count)`: `y` [n] the distinct values of 1-D `x` in order of first
      occurrence; `idx` [len(x)] with ``x == y[idx]``; `count` [n]; both of `out_idx`.
    Raises:
      InvalidArgumentError: `x` not 1-D.

    Differs from TensorFlow: runs on the host (data-dependent output length).
    """
    return UniqueWithCounts(convert_to_tensor(x), out_idx=_dtypes.as_dtype(out_idx).name,
                            name=name)


def _dynamic_partition_lower(ctx, op, data, partitions):
    data, p = np.asarray(data), np.asarray(partitions)
    n = op.attrs["num_partitions"]
    if data.shape[:p.ndim] != p.shape:
        raise errors.InvalidArgumentError(
            f"dynamic_partition {op.name!r}: partitions shape {list(p.shape)} must be a "
            f"prefix of data's shape {list(data.shape)}", op=op)
    if p.size and (p.min() < 0 or p.max() >= n):
        bad = p[(p < 0) | (p >= n)].reshape(-1)[0]
        raise errors.InvalidArgumentError(
            f"dynamic_partition {op.name!r}: partitions has value {int(bad)}, not in "
            f"[0, {n})", op=op)
    return tuple(np.ascontiguousarray(data[p == i]) for i in range(n))


DynamicPartition = OpDef("DynamicPartition", lower=_dynamic_partition_lower, host=True)


@DynamicPartition.shape_fn
def _dynamic_partition_shape(data, partitions, *, num_partitions):
    if not partitions.dtype.is_integer:
        raise errors.InvalidArgumentError(
            f"partitions must be int32, got {partitions.dtype.name}")
    k = partitions.shape.rank
    if data.shape.rank is None or k is None:
        return [TensorSpec(None, data.dtype)] * num_partitions
    if not partitions.shape.is_compatible_with(data.shape[:k]):
        raise errors.InvalidArgumentError(
            f"partitions shape {partitions.shape} must be a prefix of data's shape "
            f"{data.shape}")
    return [TensorSpec([None] + data.shape.as_list()[k:], data.dtype)] * num_partitions


def _dynamic_partition_grad_lower(ctx, op, partitions, data, *grads):
    p = np.asarray(partitions)
    out = np.zeros(np.shape(data), dtype=np.asarray(grads[0]).dtype)
    for i, g in enumerate(grads):
        out[p == i] = np.asarray(g)
    return (out,)


DynamicPartitionGrad = OpDef("DynamicPartitionGrad", lower=_dynamic_partition_grad_lower,
                             host=True)
NotDifferentiable("DynamicPartitionGrad")


@DynamicPartitionGrad.shape_fn
def _dynamic_partition_grad_shape(partitions, data, *grads):
    return TensorSpec(data.shape, grads[0].dtype)


@RegisterGradient("DynamicPartition")
def _dynamic_partition_grad(op, *grads):
    # Each partition's gradient goes back to the positions it came from (TensorFlow
    # stitches them; here one host op does, as the forward op runs on the host too).
    data, partitions = op.inputs
    return DynamicPartitionGrad(partitions, data, *grads), None


def dynamic_partition(data, partitions, num_partitions, name=None):
    """Splits `data` into `num_partitions` tensors by `partitions`:
    ``outputs[i] = data[partitions == i]`` (row-major order kept).

    Args:
      data: `Tensor` [d0..d(k-1), ...rest].
      partitions: int32 `Tensor` [d0..d(k-1)] with values in [0, num_partitions).
      num_partitions: Python int >= 1.
    Returns:
      list of `num_partitions` `Tensor`s [n_i, ...rest].
    Raises:
      InvalidArgumentError: non-integer `partitions`, or a shape that is not a prefix
        of `data`'s; (at run time) a partition out of range.

    Differs from TensorFlow: runs on the host (data-dependent output lengths), its
    gradient too.
    """
    if not isinstance(num_partitions, (int, np.integer)) or num_partitions < 1:
        raise errors.InvalidArgumentError(
            f"dynamic_partition: num_partitions must be an int >= 1. Received: "
            f"{num_partitions!r}")
    out = DynamicPartition(convert_to_tensor(data),
                           convert_to_tensor(partitions, dtype_hint=_dtypes.int32),
                           num_partitions=int(num_partitions), name=name)
    return [out] if not isinstance(out, tuple) else list(out)


def _dynamic_stitch_lower(ctx, op, *args):
    n = len(args) // 2
    idx = [np.asarray(i) for i in args[:n]]
    data = [np.asarray(d) for d in args[n:]]
    size = max((int(i.max()) + 1 for i in idx if i.size), default=0)
    rest = data[0].shape[idx[0].ndim:]
    out = np.zeros((size,) + tuple(rest), dtype=data[0].dtype)
    for m, (i, d) in enumerate(zip(idx, data)):
        if d.shape[:i.ndim] != i.shape or d.shape[i.ndim:] != rest:
            raise errors.InvalidArgumentError(
                f"dynamic_stitch {op.name!r}: data[{m}] has shape {list(d.shape)}, expected "
                f"indices[{m}].shape + {list(rest)} = {list(i.shape) + list(rest)}", op=op)
        if i.size and i.min() < 0:
            raise errors.InvalidArgumentError(
                f"dynamic_stitch {op.name!r}: indices[{m}] has a negative value", op=op)
        out[i.reshape(-1)] = d.reshape((-1,) + tuple(rest))
    return (out,)


DynamicStitch = OpDef("DynamicStitch", lower=_dynamic_stitch_lower, host=True)


@DynamicStitch.shape_fn
def _dynamic_stitch_shape(*args):
    n = len(args) // 2
    for i in args[:n]:
        if not i.dtype.is_integer:
            raise errors.InvalidArgumentError(f"indices must be int32, got {i.dtype.name}")
    dts = {d.dtype for d in args[n:]}
    if len(dts) > 1:
        raise errors.InvalidArgumentError(
            f"all data must have one dtype, got {sorted(d.name for d in dts)}")
    i0, d0 = args[0], args[n]
    if i0.shape.rank is None or d0.shape.rank is None:
        return TensorSpec(None, d0.dtype)
    return TensorSpec([None] + d0.shape.as_list()[i0.shape.rank:], d0.dtype)


@RegisterGradient("DynamicStitch")
def _dynamic_stitch_grad(op, grad):
    n = len(op.inputs) // 2
    return [None] * n + [indexing_ops.gather(grad, math_ops.cast(i, _dtypes.int32))
                         for i in op.inputs[:n]]


def dynamic_stitch(indices, data, name=None):
    """Interleaves `data` into one tensor: ``merged[indices[m][i...], ...] =
    data[m][i..., ...]``; a later index overwrites an earlier one.

    Args:
      indices: list of int32 `Tensor`s.
      data: list of `Tensor`s of one dtype, ``data[m].shape = indices[m].shape + rest``.
    Returns:
      `Tensor` [max(indices) + 1, ...rest].
    Raises:
      InvalidArgumentError: lists of different lengths, mixed dtypes, non-integer
        indices; (at run time) shapes that do not match or negative indices.

    Differs from TensorFlow: runs on the host (data-dependent output length); its
    gradient (a gather per input, as TensorFlow's) runs in XLA.
    """
    indices, data = list(indices), list(data)
    if len(indices) != len(data) or not indices:
        raise errors.InvalidArgumentError(
            f"dynamic_stitch: indices and data must be non-empty lists of one length, got "
            f"{len(indices)} and {len(data)}")
    idx = [convert_to_tensor(i, dtype_hint=_dtypes.int32) for i in indices]
    d0 = convert_to_tensor(data[0])
    vals = [d0] + [convert_to_tensor(d, dtype_hint=d0.dtype) for d in data[1:]]
    return DynamicStitch(*idx, *vals, name=name)
