"""Resource-variable ops, as TensorFlow's: a `VarHandleOp` names a variable whose
value lives in the Session (or on a parameter server), and `ReadVariableOp`,
`AssignVariableOp`, `AssignAddVariableOp`, `AssignSubVariableOp`,
`ResourceGather` and `ResourceScatterAdd` read and write it inside a step.

These ops lower with a context (`ctx.read_var` / `ctx.write_var`) instead of a pure
kernel; effects within a step follow data and control edges, then creation order.
"""

from __future__ import annotations

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.graph import _user_frame
from mylib.core.indexed_slices import IndexedSlices
from mylib.core.op_registry import (NotDifferentiable, OpDef, RegisterGradient, TensorSpec,
                                    _creation_message)
from mylib.core.ops import array_ops, constant_ops
from mylib.core.ops.indexing_ops import take_in_range  # ids outside the table: no row
from mylib.core.tensor_shape import TensorShape


class VarRef:
    """The value a resource handle lowers to: the variable's key in the session store."""

    __slots__ = ("key", "op")

    def __init__(self, key, op):
        self.key = key
        self.op = op


def _var_handle_lower(ctx, op):
    return VarRef(op.attrs["shared_name"], op)


VarHandleOp = OpDef("VarHandleOp", lower=_var_handle_lower, stateful=True)


@VarHandleOp.shape_fn
def _var_handle_shape(*, dtype, shape, shared_name, trainable=True):
    return TensorSpec([], _dtypes.resource)


NotDifferentiable("VarHandleOp")


def handle_op(handle):
    """The op behind resource tensor `handle`, through `Identity` ops: a `VarHandleOp`
    for a variable's handle."""
    op = handle.op
    while op.type == "Identity":
        op = op.inputs[0].op
    return op


def handle_var_spec(handle):
    """(dtype, TensorShape) of the variable behind a handle tensor."""
    op = handle_op(handle)
    if op.type != "VarHandleOp":
        raise errors.InvalidArgumentError(
            f"'{handle.name}' is not a variable handle (produced by {op.type})")
    return _dtypes.as_dtype(op.attrs["dtype"]), TensorShape(op.attrs["shape"])


# ---------------------------------------------------------------- read
def _read_lower(ctx, op, ref):
    return ctx.read_var(op, ref)


ReadVariableOp = OpDef("ReadVariableOp", lower=_read_lower, stateful=True)


@ReadVariableOp.shape_fn
def _read_shape(handle, *, dtype, shape):
    return TensorSpec(TensorShape(shape), dtype)


@RegisterGradient("ReadVariableOp")
def _read_grad(op, grad):
    # The gradient of a read flows to the handle: gradients(loss, variable) sums it
    # over every read of the variable.
    return [grad]


def read_variable_op(handle, name=None):
    dt, shape = handle_var_spec(handle)
    return ReadVariableOp(handle, dtype=dt.name, shape=shape.as_tuple(), name=name)


# ---------------------------------------------------------------- assigns
def _check_assign(handle, value, what, validate_shape=True):
    dt, shape = handle_var_spec(handle)
    msg = None
    if value.dtype != dt:
        msg = f"trying to assign a {value.dtype.name} value to the {dt.name} variable " \
              f"'{handle.op.name}'"
    elif validate_shape and not shape.is_compatible_with(value.shape):
        msg = f"shape of the value {value.shape} does not match the variable " \
              f"'{handle.op.name}' of shape {shape}"
    if msg is not None:
        # Name the inputs and the user's line, as errors raised by shape rules do.
        raise errors.InvalidArgumentError(
            _creation_message(what, None, msg, [handle, value], _user_frame()))


def _assign_lower(ctx, op, ref, value):
    ctx.write_var(op, ref, value)
    return ()


def _assign_add_lower(ctx, op, ref, value):
    ctx.write_var(op, ref, ctx.read_var(op, ref) + value)
    return ()


def _assign_sub_lower(ctx, op, ref, value):
    ctx.write_var(op, ref, ctx.read_var(op, ref) - value)
    return ()


AssignVariableOp = OpDef("AssignVariableOp", lower=_assign_lower, stateful=True,
                         shape_fn=lambda h, v, **_: [])
AssignAddVariableOp = OpDef("AssignAddVariableOp", lower=_assign_add_lower, stateful=True,
                            shape_fn=lambda h, v, **_: [])
AssignSubVariableOp = OpDef("AssignSubVariableOp", lower=_assign_sub_lower, stateful=True,
                            shape_fn=lambda h, v, **_: [])
for _t in ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"):
    NotDifferentiable(_t)


def assign_variable_op(handle, value, name=None, validate_shape=True):
    _check_assign(handle, value, "AssignVariableOp", validate_shape)
    return AssignVariableOp(handle, value, name=name)


def assign_add_variable_op(handle, value, name=None):
    _check_assign(handle, value, "AssignAddVariableOp")
    return AssignAddVariableOp(handle, value, name=name)


def assign_sub_variable_op(handle, value, name=None):
    _check_assign(handle, value, "AssignSubVariableOp")
    return AssignSubVariableOp(handle, value, name=name)


# ---------------------------------------------------------------- sparse access
def _gather_lower(ctx, op, ref, indices):

    return take_in_range(ctx.read_var(op, ref), indices, 0)


def _rows_check(ctx, op, ref, indices, *rest, **attrs):
    return [(1, ctx.read_var(op, ref).shape[:1], False)]


def _nd_check(ctx, op, ref, indices, updates, **attrs):
    return [(1, ctx.read_var(op, ref).shape[:indices.shape[-1]], True)]


ResourceGather = OpDef("ResourceGather", lower=_gather_lower, stateful=True,
                       index_check=_rows_check)


@ResourceGather.shape_fn
def _resource_gather_shape(handle, indices, *, dtype, shape):
    s = TensorShape(shape)
    if indices.shape.rank is None or s.rank is None:
        return TensorSpec(TensorShape(None), dtype)
    return TensorSpec(indices.shape.as_list() + s.as_list()[1:], dtype)


def _scatter_add_lower(ctx, op, ref, indices, updates):
    v = ctx.read_var(op, ref)
    idx = ctx.gate_rows(indices, v.shape[0])
    ctx.write_var(op, ref, v.at[idx].add(updates.astype(v.dtype), mode="drop"), gated=True)
    return ()


ResourceScatterAdd = OpDef("ResourceScatterAdd", lower=_scatter_add_lower, stateful=True,
                           index_check=_rows_check,
                           shape_fn=lambda h, i, u, **_: [])
NotDifferentiable("ResourceScatterAdd")


def _scatter_update_lower(ctx, op, ref, indices, updates):
    v = ctx.read_var(op, ref)
    idx = ctx.gate_rows(indices, v.shape[0])
    ctx.write_var(op, ref, v.at[idx].set(updates.astype(v.dtype), mode="drop"), gated=True)
    return ()


ResourceScatterUpdate = OpDef("ResourceScatterUpdate", lower=_scatter_update_lower,
                              stateful=True, index_check=_rows_check,
                              shape_fn=lambda h, i, u, **_: [])
NotDifferentiable("ResourceScatterUpdate")


# ---------------------------------------------------------------- initialization state
def _is_init_lower(ctx, op, ref):
    return np.bool_(ctx.is_initialized(ref))


VarIsInitializedOp = OpDef("VarIsInitializedOp", lower=_is_init_lower, stateful=True,
                           shape_fn=lambda h: TensorSpec([], _dtypes.bool_))
NotDifferentiable("VarIsInitializedOp")


def _read_or_init_lower(ctx, op, ref, initial):
    if ctx.is_initialized(ref):
        return ctx.read_var(op, ref)
    return initial


ReadOrInitialValue = OpDef("ReadOrInitialValue", lower=_read_or_init_lower, stateful=True)


@ReadOrInitialValue.shape_fn
def _read_or_init_shape(handle, initial):
    return TensorSpec(initial.shape, initial.dtype)


@RegisterGradient("ReadOrInitialValue")
def _read_or_init_grad(op, grad):
    return [None, grad]


@RegisterGradient("ResourceGather")
def _resource_gather_grad(op, grad):
    # Sparse: only the gathered rows get gradient (IndexedSlices), as TensorFlow.
    handle, indices = op.inputs
    _, shape = handle_var_spec(handle)
    if shape.is_fully_defined():
        dense_shape = constant_ops.constant(shape.as_list(), dtype=_dtypes.int64)
    else:
        dense_shape = array_ops.shape(read_variable_op(handle), out_type="int64")
    tail = shape.as_list()[1:] if shape.rank is not None else None
    flat_idx = array_ops.reshape(indices, [-1])
    values = array_ops.reshape(grad, [-1] + tail) if tail is not None and None not in tail \
        else grad
    return [IndexedSlices(values, flat_idx, dense_shape), None]


# ---------------------------------------------------------------- scatter updates
def _scatter_sub_lower(ctx, op, ref, indices, updates):
    v = ctx.read_var(op, ref)
    idx = ctx.gate_rows(indices, v.shape[0])
    ctx.write_var(op, ref, v.at[idx].add(-updates.astype(v.dtype), mode="drop"), gated=True)
    return ()


def _nd_index(indices):
    # indices [..., K] -> a tuple of K index arrays over the first K axes.
    return tuple(indices[..., k] for k in range(indices.shape[-1]))


def _scatter_nd_lower(kind):
    def lower(ctx, op, ref, indices, updates):
        v = ctx.read_var(op, ref)
        at, u = v.at[_nd_index(indices)], updates.astype(v.dtype)
        new = at.set(u) if kind == "update" else at.add(u if kind == "add" else -u)
        ctx.write_var(op, ref, new)
        return ()
    return lower


ResourceScatterSub = OpDef("ResourceScatterSub", lower=_scatter_sub_lower, stateful=True,
                           index_check=_rows_check,
                           shape_fn=lambda h, i, u, **_: [])
ResourceScatterNdUpdate = OpDef("ResourceScatterNdUpdate", lower=_scatter_nd_lower("update"),
                                index_check=_nd_check,
                                stateful=True, shape_fn=lambda h, i, u, **_: [])
ResourceScatterNdAdd = OpDef("ResourceScatterNdAdd", lower=_scatter_nd_lower("add"),
                             index_check=_nd_check,
                             stateful=True, shape_fn=lambda h, i, u, **_: [])
ResourceScatterNdSub = OpDef("ResourceScatterNdSub", lower=_scatter_nd_lower("sub"),
                             index_check=_nd_check,
                             stateful=True, shape_fn=lambda h, i, u, **_: [])
for _t in ("ResourceScatterSub", "ResourceScatterNdUpdate", "ResourceScatterNdAdd",
           "ResourceScatterNdSub"):
    NotDifferentiable(_t)

_SCATTER_OPS = {"update": ResourceScatterUpdate, "add": ResourceScatterAdd,
                "sub": ResourceScatterSub, "nd_update": ResourceScatterNdUpdate,
                "nd_add": ResourceScatterNdAdd, "nd_sub": ResourceScatterNdSub}


def scatter_op(handle, kind, indices, updates, name=None):
    """The op writing `updates` into the rows (``kind`` update/add/sub) or elements
    (``nd_update``/``nd_add``/``nd_sub``, `indices` [..., K]) of the variable behind
    `handle`, after checking the shapes that are known.

    Raises:
      InvalidArgumentError: `indices` is not an integer tensor, or the shape of
        `updates` is not the one `indices` and the variable ask for.
    """
    dt, shape = handle_var_spec(handle)
    msg = None
    if not indices.dtype.is_integer:
        msg = f"indices must be int32 or int64, not {indices.dtype.name}"
    elif updates.dtype != dt:
        msg = f"updates of dtype {updates.dtype.name} for the {dt.name} variable"
    elif indices.shape.rank is not None and shape.rank is not None:
        idx = indices.shape.as_list()
        if kind.startswith("nd_"):
            k = idx[-1] if idx else None
            if not idx or (k is not None and k > shape.rank):
                msg = (f"indices of shape {indices.shape} for a variable of rank "
                       f"{shape.rank}: the last axis must index at most {shape.rank} axes")
                want = None
            else:
                want = None if k is None else TensorShape(idx[:-1] + shape.as_list()[k:])
        else:
            want = TensorShape(idx + shape.as_list()[1:])
        if msg is None and want is not None and not want.is_compatible_with(updates.shape):
            msg = (f"updates of shape {updates.shape}; indices of shape {indices.shape} "
                   f"and the variable of shape {shape} ask for {want}")
    if msg is not None:
        what = _SCATTER_OPS[kind].name
        raise errors.InvalidArgumentError(
            _creation_message(what, name, f"{what} on '{handle.op.name}': {msg}",
                              [handle, indices, updates], _user_frame()))
    return _SCATTER_OPS[kind](handle, indices, updates, name=name)


def _scatter_fn(kind, nd):
    method = "scatter_" + kind

    def fn(ref, indices, updates, use_locking=True, name=None):
        if not hasattr(ref, method):
            raise TypeError(f"{method}: `ref` must be a Variable. Received: {ref!r}")
        if nd:
            return getattr(ref, method)(indices, updates, name=name)
        return getattr(ref, method)(IndexedSlices(updates, indices), name=name)

    fn.__name__ = fn.__qualname__ = method
    return fn


scatter_update = _scatter_fn("update", False)
scatter_update.__doc__ = """TF1's `tf.scatter_update`: ``ref[indices, ...] = updates``.

    Args:
      ref: a `Variable` [d0, d1, ...].
      indices: int32/int64 `Tensor` of any shape, rows of `ref`.
      updates: `Tensor` indices.shape + [d1, ...], `ref`'s dtype.
      use_locking: ignored (writes to one variable never interleave within a step).
    Returns:
      `Tensor`: the variable's value after the update, as TF1 returns `ref`.
    Raises:
      InvalidArgumentError: (from `Session.run`) an index out of range, as TensorFlow
        on CPU; the step then changes no variable. (Inside a `while_loop` body, or
        where nothing waits on the step, such an index is dropped.)
    Differs from TensorFlow: with repeated indices the last update wins.
    """
scatter_add = _scatter_fn("add", False)
scatter_add.__doc__ = """TF1's `tf.scatter_add`: ``ref[indices, ...] += updates``; repeated
    indices add up. Arguments and result as `scatter_update`."""
scatter_sub = _scatter_fn("sub", False)
scatter_sub.__doc__ = """TF1's `tf.scatter_sub`: ``ref[indices, ...] -= updates``; repeated
    indices add up. Arguments and result as `scatter_update`."""
scatter_nd_update = _scatter_fn("nd_update", True)
scatter_nd_update.__doc__ = """TF1's `tf.scatter_nd_update`: ``ref[indices[i]] = updates[i]``.

    Args:
      ref: a `Variable` [d0, ..., dn].
      indices: int32/int64 `Tensor` [..., K], K <= rank of `ref`.
      updates: `Tensor` indices.shape[:-1] + [dK, ..., dn], `ref`'s dtype.
    Returns:
      `Tensor`: the variable's value after the update.
    Raises:
      InvalidArgumentError: (from `Session.run`) an index out of range, as TensorFlow
        on CPU; the step then changes no variable.
    """
scatter_nd_add = _scatter_fn("nd_add", True)
scatter_nd_add.__doc__ = """TF1's `tf.scatter_nd_add`: ``ref[indices[i]] += updates[i]``;
    arguments and result as `scatter_nd_update`."""
scatter_nd_sub = _scatter_fn("nd_sub", True)
scatter_nd_sub.__doc__ = """TF1's `tf.scatter_nd_sub`: ``ref[indices[i]] -= updates[i]``;
    arguments and result as `scatter_nd_update`."""
