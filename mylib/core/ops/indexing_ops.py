"""Indexing ops: elements chosen by position. Slices (`slice`, `strided_slice` and
`tensor[...]`), gathers (`gather`, `gather_nd`; the gradient of `gather` is a sparse
`IndexedSlices`, so updates touch only the gathered rows) and one-hot encodings
(`one_hot`).

Slice bounds, axes and depths must be known when the graph is built; a scalar integer
tensor may index one position at run time (``x[i]``).
"""

from __future__ import annotations

import builtins as _b

import jax
import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.graph import Tensor
from mylib.core.indexed_slices import IndexedSlices
from mylib.core.op_registry import NotDifferentiable, OpDef, RegisterGradient, TensorSpec, \
    _python_dtype, convert_to_tensor
from mylib.core.ops import _shape_rules
from mylib.core.ops.array_ops import (_axis_int, _int_tuple, _is_static, concat, reshape, shape,
                                      where)
from mylib.core.ops.constant_ops import (_constant_dim, _static_ints, _static_scalar, constant,
                                         constant_value, constant_value_as_shape)
from mylib.core.tensor_shape import TensorShape
from mylib.core.vjp import generic_vjp

__all__ = ["slice", "strided_slice", "gather", "gather_nd", "one_hot"]


# ---------------------------------------------------------------- Slice / StridedSlice
def _slice_kernel(x, *dyn, begin=None, size=None):
    if dyn:  # begin and size tensors; sizes static when the step is traced
        size = _static_ints(dyn[1], "Slice's size")
        if not _is_static(dyn[0]):  # a run-time start: lax.dynamic_slice, sizes known
            if -1 in size:
                raise errors.InvalidArgumentError(
                    "Slice: a size of -1 needs `begin` known when the step is compiled")
            return jax.lax.dynamic_slice(x, list(dyn[0]), size)
        begin = _static_ints(dyn[0], "Slice's begin")
    idx = tuple(_b.slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))
    return x[idx]


Slice = OpDef("Slice", kernel=_slice_kernel)


@Slice.shape_fn
def _slice_shape(x, *dyn, begin=None, size=None):
    if dyn:
        n = x.shape.rank if x.shape.rank is not None else dyn[1].shape[0]
        return TensorSpec(TensorShape(None) if n is None else [None] * n, x.dtype)
    if x.shape.rank is None:
        return TensorSpec([None if s == -1 else s for s in size], x.dtype)
    dims = x.shape.as_list()
    if len(begin) != len(dims) or len(size) != len(dims):
        raise errors.InvalidArgumentError(
            f"begin {list(begin)} and size {list(size)} need length {len(dims)} for {x.shape}")
    out = []
    for d, b, s in zip(dims, begin, size):
        if s == -1:
            out.append(None if d is None else d - b)
        else:
            if d is not None and (b < 0 or b + s > d):
                raise errors.InvalidArgumentError(
                    f"slice begin {list(begin)} size {list(size)} is out of bounds for {x.shape}")
            out.append(s)
    return TensorSpec(out, x.dtype)


def _known_or_tensor(v):
    """A list/tuple/tensor of ints as a tuple when known at graph build, else a tensor."""
    if isinstance(v, (list, tuple)) and any(hasattr(d, "op") for d in v):
        v = convert_to_tensor(v, dtype_hint=_dtypes.int32)
    if hasattr(v, "op") and constant_value(v) is None:
        return convert_to_tensor(v)
    return _int_tuple(v, "slice argument")


def slice(input_, begin, size, name=None):  # noqa: A001 - TF's name
    """Extracts `input_[begin[i] : begin[i] + size[i]]` on every axis (size -1: to the end).

    `begin` and `size` may be tensors: sizes must be known when the step is compiled
    (constants, or from the shape of a tensor); `begin` may be computed at run time.

    Raises:
      InvalidArgumentError: if the slice is out of bounds.
    """
    x = convert_to_tensor(input_)
    b, sz = _known_or_tensor(begin), _known_or_tensor(size)
    if isinstance(b, tuple) and isinstance(sz, tuple):
        return Slice(x, begin=b, size=sz, name=name)
    b, sz = (convert_to_tensor(v, dtype=_dtypes.int32) if isinstance(v, tuple) else v
             for v in (b, sz))
    out = Slice(x, b, sz, name=name)
    known_size = constant_value_as_shape(sz)
    if known_size.rank is not None and known_size.rank == x.shape.rank:
        out._shape = known_size.merge_with(out.shape)  # a -1 entry is unknown here
    return out


def _out_axes(spec, rank):
    """The output axis of each item of `spec` (None for items that drop their axis)."""
    consumed = sum(1 for it in spec if it[0] in ("int", "slice", "tensor", "dslice"))
    axes, o = [], 0
    for it in spec:
        kind = it[0]
        if kind == "ellipsis":
            axes.append(None)
            o += rank - consumed
        elif kind in ("int", "tensor"):
            axes.append(None)
        else:
            axes.append(o)
            o += 1
    return axes


def _strided_slice_kernel(x, *dyn, spec, out_shape=None):
    idx, runtime = [], []  # runtime: (output axis, start, stop) of bounds known only now
    out_axes = None
    for item in spec:
        kind = item[0]
        if kind == "int":
            idx.append(item[1])
        elif kind == "slice":
            idx.append(_b.slice(item[1], item[2], item[3]))
        elif kind == "dslice":  # bounds given as tensors
            bounds = [item[i] if item[i + 3] < 0 else dyn[item[i + 3]] for i in (1, 2)]
            if not any(isinstance(b, jax.core.Tracer) for b in bounds):
                start, stop = (None if b is None else int(_static_scalar(b, "a slice bound"))
                               for b in bounds)
                idx.append(_b.slice(start, stop, item[3]))
                continue
            # A bound computed at run time (`x[:, i*n:(i+1)*n]` with `i` dequeued): XLA
            # needs the slice's size when the step is compiled; it is the op's static
            # output dimension (from shape inference or the user's `set_shape`).
            if out_axes is None:
                out_axes = _out_axes(spec, np.ndim(x))
            ax = out_axes[len(idx)]
            size = None if out_shape is None else out_shape[ax]
            if size is None or item[3] not in (None, 1):
                raise errors.InvalidArgumentError(
                    "StridedSlice: a slice bound computed at run time needs the slice's "
                    "size known when the step is compiled and a stride of 1; give the "
                    f"result a static shape with `set_shape` (output axis {ax} is unknown"
                    f"{'' if item[3] in (None, 1) else f', stride {item[3]}'})")
            runtime.append((ax, bounds[0], size))
            idx.append(_b.slice(None))
        elif kind == "newaxis":
            idx.append(None)
        elif kind == "ellipsis":
            idx.append(Ellipsis)
        else:  # "tensor": a scalar index fed in as an input
            idx.append(dyn[item[1]])
    if _is_static(x, *dyn):
        return np.asarray(x[tuple(idx)])
    y = jnp.asarray(x)[tuple(idx)]
    for ax, start, size in runtime:
        n = y.shape[ax]
        start = 0 if start is None else jnp.asarray(start)
        start = jnp.where(start < 0, start + n, start)  # from the end, as Python
        # clamped so the slice fits, as lax.dynamic_slice does
        y = jax.lax.dynamic_slice_in_dim(y, start, size, axis=ax)
    return y


def _strided_slice_lower(ctx, op, x, *dyn):
    shp = op.outputs[0].shape
    return _strided_slice_kernel(x, *dyn, spec=op.attrs["spec"],
                                 out_shape=None if shp.rank is None else tuple(shp.as_list()))


StridedSlice = OpDef("StridedSlice", kernel=_strided_slice_kernel, lower=_strided_slice_lower)


@RegisterGradient("StridedSlice")
def _strided_slice_grad(op, grad):
    if not any(it[0] == "dslice" for it in op.attrs["spec"]):
        return generic_vjp(op, [grad])
    # Run-time bounds: the forward kernel needs the output's static shape, as `lower`
    # gives it.
    shp = op.outputs[0].shape
    return generic_vjp(op, [grad], extra_attrs={
        "out_shape": None if shp.rank is None else tuple(shp.as_list())})


@StridedSlice.shape_fn
def _strided_slice_shape(x, *dyn, spec, out_shape=None):
    for d in dyn:
        if d.shape.rank not in (0, None) or not (d.dtype.is_integer):
            raise errors.InvalidArgumentError(
                f"a tensor index must be an integer scalar, got {d.dtype.name} {d.shape}")
    consumed = sum(1 for it in spec if it[0] in ("int", "slice", "tensor", "dslice"))
    if x.shape.rank is None:
        return TensorSpec(TensorShape(None), x.dtype)
    dims = x.shape.as_list()
    if consumed > len(dims):
        raise errors.InvalidArgumentError(
            f"too many indices ({consumed}) for shape {x.shape}")
    n_ell = sum(1 for it in spec if it[0] == "ellipsis")
    if n_ell > 1:
        raise errors.InvalidArgumentError("an index can only have a single ellipsis")
    items = list(spec)
    if n_ell == 0:
        items.append(("ellipsis",))
    out, i = [], 0
    for it in items:
        kind = it[0]
        if kind == "newaxis":
            out.append(1)
        elif kind == "ellipsis":
            k = len(dims) - consumed
            out.extend(dims[i:i + k])
            i += k
        elif kind in ("int", "tensor"):
            d = dims[i]
            if kind == "int" and d is not None and not -d <= it[1] < d:
                raise errors.InvalidArgumentError(
                    f"index {it[1]} is out of bounds for axis {i} with size {d}")
            i += 1
        elif kind == "dslice":
            out.append(None)
            i += 1
        else:
            d = dims[i]
            out.append(None if d is None else len(_b.range(*_b.slice(*it[1:]).indices(d))))
            i += 1
    return TensorSpec(out, x.dtype)


def _index_spec(key):
    """Turns a Python index into a static spec plus the tensors it names."""
    if not isinstance(key, tuple):
        key = (key,)
    spec, dyn = [], []
    for k in key:
        if k is None:
            spec.append(("newaxis",))
        elif k is Ellipsis:
            spec.append(("ellipsis",))
        elif isinstance(k, _b.slice):
            parts, refs = [], [-1, -1]
            for j, v in enumerate((k.start, k.stop, k.step)):
                if v is not None and not isinstance(v, (int, np.integer)):
                    t = convert_to_tensor(v) if hasattr(v, "op") or hasattr(v, "_as_tensor") \
                        else None
                    if t is not None and constant_value(t) is None and \
                            _constant_dim(t) is not None:
                        v = _constant_dim(t)  # `shape(y)[1]` with y's dim 1 known
                    elif j < 2 and t is not None and constant_value(t) is None:
                        # `x[:, :reduce_max(L)]`: the bound is an input of the op
                        refs[j] = len(dyn)
                        dyn.append(t)
                        v = None
                    else:
                        v = _axis_int(v, "a slice bound")
                parts.append(None if v is None else int(v))
            if parts[2] == 0:
                raise ValueError("slice step cannot be zero")
            spec.append(("dslice", *parts, *refs) if refs != [-1, -1] else ("slice", *parts))
        elif isinstance(k, (bool, np.bool_)):
            raise TypeError("Boolean indices are not supported; use ml.boolean_mask")
        elif isinstance(k, (int, np.integer)):
            spec.append(("int", int(k)))
        elif hasattr(k, "op") or hasattr(k, "_as_tensor"):
            t = convert_to_tensor(k)
            cv = constant_value(t)
            if cv is not None and np.ndim(cv) == 0:
                spec.append(("int", int(cv)))
            else:
                spec.append(("tensor", len(dyn)))
                dyn.append(t)
        else:
            raise TypeError(
                f"Only integers, slices, Ellipsis, None (newaxis) and scalar integer tensors "
                f"are valid indices, got {k!r}")
    return tuple(spec), dyn


def _getitem(tensor, key):
    """`tensor[key]`: ints, slices with steps, negative indices, `...`, None, and scalar
    integer tensors (dynamic positions)."""
    spec, dyn = _index_spec(key)
    return StridedSlice(convert_to_tensor(tensor), *dyn, spec=spec, name="strided_slice")


def _bound_list(v, what):
    """`v` (ints, tensors, or a 1-D tensor) as `n` entries, each an int or a scalar
    tensor whose value is known only at run time."""
    if hasattr(v, "op") or hasattr(v, "_as_tensor"):
        t = convert_to_tensor(v)
        cv = constant_value(t)
        if cv is not None:
            return [int(d) for d in np.asarray(cv).reshape(-1)]
        if t.shape.rank != 1 or t.shape.as_list()[0] is None:
            raise errors.InvalidArgumentError(
                f"strided_slice: {what} must be a 1-D tensor of known length, got {t.shape}")
        return [t[k] for k in _b.range(t.shape.as_list()[0])]
    out = []
    for d in (list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v]):
        if hasattr(d, "op") or hasattr(d, "_as_tensor"):
            cv = constant_value(convert_to_tensor(d))
            out.append(convert_to_tensor(d) if cv is None else int(cv))
        else:
            out.append(int(d))
    return out


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0,
                  ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0, name=None):
    """`input_[begin[0]:end[0]:strides[0], ...]`, as TensorFlow's `tf.strided_slice`.

    Bit `i` of a mask applies to entry `i` of `begin`/`end`/`strides`: `begin_mask` and
    `end_mask` ignore that bound (the whole range), `ellipsis_mask` makes the entry
    `...`, `new_axis_mask` a new axis of size 1, `shrink_axis_mask` an index at
    `begin[i]` (the axis is dropped).

    Bounds may be tensors computed at run time (``[0, i * n]`` with `i` dequeued), with
    a stride of 1; XLA then needs the slice's size when the step is compiled: the
    result's static shape (give it with `set_shape`, as TensorFlow's PTB reader does).
    Unlike TensorFlow, where the run-time bounds give another size than that shape, the
    slice keeps the static size (its start clamped so it fits).

    Args:
      input_: `Tensor` of any dtype and rank.
      begin, end, strides: equal-length lists of ints or scalar int tensors, or 1-D int
        tensors; `strides` defaults to ones.
    Returns:
      `Tensor` of `input_`'s dtype.
    Raises:
      InvalidArgumentError: if the lengths differ, an index is out of bounds, or a
        run-time bound's slice has no static size when the step is compiled.
    """
    begin = _bound_list(begin, "begin")
    end = _bound_list(end, "end")
    strides = [1] * len(begin) if strides is None else _bound_list(strides, "strides")
    if not len(begin) == len(end) == len(strides):
        raise errors.InvalidArgumentError(
            f"strided_slice: begin, end and strides need one length, got {len(begin)}, "
            f"{len(end)} and {len(strides)}")
    if any(not isinstance(st, int) for st in strides):
        raise errors.InvalidArgumentError(
            "strided_slice: strides must be known when the graph is built")
    key = []
    for i, (b, e, st) in enumerate(zip(begin, end, strides)):
        bit = 1 << i
        if ellipsis_mask & bit:
            key.append(Ellipsis)
        elif new_axis_mask & bit:
            key.append(None)
        elif shrink_axis_mask & bit:
            key.append(b)
        else:
            key.append(_b.slice(None if begin_mask & bit else b,
                                None if end_mask & bit else e, st))
    spec, dyn = _index_spec(tuple(key))
    return StridedSlice(convert_to_tensor(input_), *dyn, spec=spec, name=name)


Tensor._overload_operator("__getitem__", _getitem)


# ---------------------------------------------------------------- GatherV2 / GatherNd
def take_in_range(params, indices, axis):
    """``take(params, indices, axis)`` where an index outside ``[0, n)`` never yields a
    real row: indices known when the step is built (numpy) raise
    `InvalidArgumentError` naming the bad index and the range (the runtime adds the
    op), as TensorFlow on CPU. Run-time indices compute fill rows (NaN for floats, the
    dtype's most negative value for signed integers), negative ones included; the op's
    index check (`OpDef.index_check`) then fails the run."""
    n = params.shape[axis]
    if isinstance(indices, (np.ndarray, np.generic)):
        idx = np.asarray(indices)
        bad = (idx < 0) | (idx >= n)
        if bad.any():
            pos = tuple(int(k) for k in np.argwhere(bad)[0])
            raise errors.InvalidArgumentError(
                f"indices[{', '.join(map(str, pos))}] = {idx[pos]} is not in [0, {n})")
        if isinstance(params, (np.ndarray, np.generic)):
            return np.take(params, idx, axis=axis)
        return jnp.take(params, idx, axis=axis)
    idx = jnp.where(indices < 0, n, indices)  # negative: out of range, not from the end
    return jnp.take(params, idx, axis=axis, mode="fill")


def _gather_kernel(params, indices, *, axis=0, batch_dims=0):
    if batch_dims:
        fn = lambda p, i: take_in_range(p, i, axis - batch_dims)  # noqa: E731
        for _ in _b.range(batch_dims):
            fn = jax.vmap(fn)
        return fn(params, indices)
    return take_in_range(params, indices, axis)


def _gather_check(ctx, op, params, indices, *, axis=0, batch_dims=0):
    return [(1, (params.shape[axis],), False)]


GatherV2 = OpDef("GatherV2", kernel=_gather_kernel, index_check=_gather_check)


@GatherV2.shape_fn
def _gather_shape(params, indices, *, axis=0, batch_dims=0):
    if not indices.dtype.is_integer:
        raise errors.InvalidArgumentError(f"indices must be int32 or int64, got {indices.dtype.name}")
    if params.shape.rank is None or indices.shape.rank is None:
        return TensorSpec(TensorShape(None), params.dtype)
    p, i = params.shape.as_list(), indices.shape.as_list()
    ax = _shape_rules.normalize_axis(axis, len(p))
    return TensorSpec(p[:ax] + i[batch_dims:] + p[ax + 1:], params.dtype)


@RegisterGradient("GatherV2")
def _gather_grad(op, grad):
    params, indices = op.inputs
    if op.attrs.get("axis", 0) != 0 or op.attrs.get("batch_dims", 0):
        return generic_vjp(op, [grad])
    # Sparse, as TensorFlow: only the gathered rows get gradient.
    p = params.shape
    if p.rank is not None and p.is_fully_defined():
        dense_shape = constant(p.as_list(), dtype=_dtypes.int32)
    else:
        dense_shape = shape(params)
    if p.rank is not None and None not in p.as_list()[1:]:
        values = reshape(grad, [-1] + p.as_list()[1:])
    else:
        values = reshape(grad, concat([[-1], shape(params)[1:]], axis=0))
    return [IndexedSlices(values, reshape(indices, [-1]), dense_shape), None]


def gather(params, indices, axis=None, batch_dims=0, name=None):
    """Gathers slices of `params` along `axis` at `indices` (TF's "GatherV2").

    An index outside ``[0, n)`` never yields a real slice (``-1`` is not the last
    one): when the indices are known as the step is built (constants), running it
    raises `InvalidArgumentError` naming the op, the bad index and the range, as
    TensorFlow on CPU. Indices known only at run time (fed or computed) are checked as
    the step runs: `Session.run` raises the same error after the step, which changes
    no variable (TensorFlow on GPU gives zeros instead). Differs from TensorFlow:
    callers that never wait on a step (a Keras model's fit/predict) and gathers
    inside a `while_loop` or `cond` body are not checked; they get NaN slices for
    floating `params` (the most negative value for signed integers).

    Args:
      params: `Tensor` [..., n, ...] (a `Variable` reads its value).
      indices: int32/int64 `Tensor` of any shape, values in [0, n).
      axis: int, default 0.
      batch_dims: leading dims shared by params and indices.
    Returns:
      `Tensor` `params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis+1:]`.
      Its gradient w.r.t. `params` (axis 0) is an `IndexedSlices`.
    Raises:
      InvalidArgumentError: if indices are not integers.
    """
    p = convert_to_tensor(params)
    i = convert_to_tensor(indices, dtype_hint=_dtypes.int32)
    ax = 0 if axis is None else _axis_int(axis)
    if p.shape.rank is not None and ax < 0:
        ax += p.shape.rank
    attrs = {"axis": ax}
    if batch_dims:
        attrs["batch_dims"] = int(batch_dims)
    return GatherV2(p, i, name=name, **attrs)


@RegisterGradient("IndexedSlicesToDense")
def _slices_to_dense_grad(op, grad):
    # IndexedSlicesToDense (`indexed_slices`, below this module) scatter-adds rows; its
    # gradient gathers them back.
    return [gather(grad, op.inputs[1]), None, None]


def _gather_nd_kernel(params, indices):
    # As `take_in_range`: an index outside `params` raises when known as the step is
    # built, else gives a fill value (NaN for floats); never a clamped or wrapped one.
    dims = np.asarray(params.shape[:indices.shape[-1]], dtype=np.int64)
    if isinstance(indices, (np.ndarray, np.generic)):
        bad = ((indices < 0) | (indices >= dims)).any(-1)
        if bad.any():
            pos = tuple(int(k) for k in np.argwhere(bad)[0])
            raise errors.InvalidArgumentError(
                f"indices[{', '.join(map(str, pos))}] = {np.asarray(indices)[pos].tolist()} "
                f"does not index into param shape {list(params.shape)}")
        if _is_static(params):
            return np.asarray(params[tuple(np.moveaxis(indices, -1, 0))])
        return jnp.asarray(params)[tuple(np.moveaxis(indices, -1, 0))]
    ok = ((indices >= 0) & (indices < dims.astype(indices.dtype))).all(-1, keepdims=True)
    idx = jnp.where(ok, indices, dims.astype(indices.dtype))
    # A constant (numpy) `params` cannot be indexed by traced indices: lift it first.
    return jnp.asarray(params).at[tuple(jnp.moveaxis(idx, -1, 0))].get(mode="fill")


def _gather_nd_check(ctx, op, params, indices):
    return [(1, params.shape[:indices.shape[-1]], True)]


GatherNd = OpDef("GatherNd", kernel=_gather_nd_kernel, index_check=_gather_nd_check)


@GatherNd.shape_fn
def _gather_nd_shape(params, indices):
    if params.shape.rank is None or indices.shape.rank is None:
        return TensorSpec(TensorShape(None), params.dtype)
    i = indices.shape.as_list()
    if i[-1] is None:
        return TensorSpec(TensorShape(None), params.dtype)
    if i[-1] > params.shape.rank:
        raise errors.InvalidArgumentError(
            f"index depth {i[-1]} exceeds the rank of params {params.shape}")
    return TensorSpec(i[:-1] + params.shape.as_list()[i[-1]:], params.dtype)


def gather_nd(params, indices, name=None):
    """Gathers `params[indices[..., 0], indices[..., 1], ...]`.

    Args:
      params: `Tensor` of rank P.
      indices: int `Tensor` [..., k], k <= P.
    Returns:
      `Tensor` `indices.shape[:-1] + params.shape[k:]`.
    """
    return GatherNd(convert_to_tensor(params), convert_to_tensor(indices, dtype_hint=_dtypes.int32),
                    name=name)


# ---------------------------------------------------------------- OneHot
def _one_hot_kernel(indices, *dyn, depth=None, on_value, off_value, axis, dtype):
    if dyn:  # a depth tensor (TensorFlow's depth input), static when the step is traced
        depth = int(_static_scalar(dyn[0], "OneHot's depth"))
        if depth < 0:
            raise errors.InvalidArgumentError(f"depth must be non-negative, got {depth}")
    dt = _dtypes.as_dtype(dtype).np
    hot = jax.nn.one_hot(indices, depth, axis=axis, dtype=jnp.bool_)
    return jnp.where(hot, jnp.asarray(on_value, dt), jnp.asarray(off_value, dt))


OneHot = OpDef("OneHot", kernel=_one_hot_kernel)
NotDifferentiable("OneHot")


@OneHot.shape_fn
def _one_hot_shape(indices, *dyn, depth=None, on_value, off_value, axis, dtype):
    if not indices.dtype.is_integer:
        raise errors.InvalidArgumentError(f"indices must be integers, got {indices.dtype.name}")
    if dyn and (dyn[0].shape.rank not in (0, None) or not dyn[0].dtype.is_integer):
        raise errors.InvalidArgumentError(
            f"depth must be an integer scalar, got {dyn[0].dtype.name} {dyn[0].shape}")
    if indices.shape.rank is None:
        return TensorSpec(TensorShape(None), dtype)
    dims = indices.shape.as_list()
    ax = len(dims) if axis == -1 else axis
    return TensorSpec(dims[:ax] + [depth] + dims[ax:], dtype)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot encoding: `on_value` where `indices == j` along a new axis of size `depth`.

    Out-of-range (e.g. negative) indices give an all-`off_value` row, as in TensorFlow.

    Args:
      indices: int `Tensor` [...].
      depth: int, or an int scalar tensor (e.g. from a shape or a fed placeholder: the
        step is then compiled for its value).
      axis: where the new axis goes (default -1, last).
      dtype: output dtype (default float32, or that of `on_value`).
    Returns:
      `Tensor` [..., depth] (for axis=-1).
    """
    tensors = [v for v in (on_value, off_value) if hasattr(v, "op") or hasattr(v, "_as_tensor")]
    if dtype is None and tensors:
        dtype = convert_to_tensor(tensors[0]).dtype  # TF: the dtype of on/off_value
    dt = _dtypes.as_dtype(dtype) if dtype is not None else (
        _python_dtype(on_value) if isinstance(on_value, (int, float)) and
        not isinstance(on_value, bool) else _dtypes.float32)
    on = 1 if on_value is None else on_value
    off = 0 if off_value is None else off_value
    dyn, depth = _depth_arg(depth)
    if tensors:
        vals = [constant_value(convert_to_tensor(v, dtype_hint=dt))
                if hasattr(v, "op") or hasattr(v, "_as_tensor") else v for v in (on, off)]
        if any(v is None for v in vals):
            # Values known only when the step runs (TF accepts scalar tensors here).
            hot = OneHot(convert_to_tensor(indices, dtype_hint=_dtypes.int32), *dyn,
                         depth=depth, on_value=True, off_value=False,
                         axis=-1 if axis is None else int(axis), dtype="bool")
            return where(hot, convert_to_tensor(on, dtype=dt), convert_to_tensor(off, dtype=dt),
                         name=name)
        on, off = vals
    return OneHot(convert_to_tensor(indices, dtype_hint=_dtypes.int32), *dyn, depth=depth,
                  on_value=np.asarray(on).item(), off_value=np.asarray(off).item(),
                  axis=-1 if axis is None else int(axis), dtype=dt.name, name=name)


def _depth_arg(depth):
    """``(inputs, depth attr)``: a depth known when the graph is built is an attr, one
    known only when the step runs an input (its attr None)."""
    if hasattr(depth, "op") or hasattr(depth, "_as_tensor"):
        t = convert_to_tensor(depth)
        if constant_value(t) is None:
            return (t,), None
    return (), _axis_int(depth, "depth")

