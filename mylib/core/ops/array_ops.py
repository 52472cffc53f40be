"""Array ops: placeholders, identity and grouping, shapes and reshaping, joining and
splitting (`concat`, `stack`, `split`), axis moves (`transpose`, `expand_dims`,
`squeeze`), tiling, padding, broadcasting, and element-wise selection (`where`).

Shape-like arguments (``reshape``'s shape, ``tile``'s multiples) may be tensors: XLA needs
them static, so they must be computable when the step is compiled (constants, `shape` of
a tensor, arithmetic on those); a fed shape tensor raises InvalidArgumentError.
Constants and fills are in `constant_ops`, slicing, gathers and one-hot in `indexing_ops`.
"""

from __future__ import annotations

import builtins as _b

import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.compat_args import deprecated_alias, warn_ignored
from mylib.core.graph import Tensor, get_default_graph
from mylib.core.op_registry import (NotDifferentiable, OpDef, RegisterGradient, TensorSpec,
                                    convert_to_tensor)
from mylib.core.ops import _shape_rules
from mylib.core.ops.constant_ops import (_static_ints, constant_value, constant_value_as_shape,
                                         shape_dim_source, zeros_like)
from mylib.core.tensor_shape import TensorShape, as_shape, broadcast_shapes

__all__ = ["placeholder", "placeholder_with_default", "identity", "stop_gradient", "no_op",
           "group", "shape", "reshape", "concat", "stack", "unstack", "split", "transpose",
           "matrix_transpose", "expand_dims", "squeeze", "tile", "pad", "broadcast_to", "size",
           "rank", "where", "where_v2", "select", "select_v2"]


# ---------------------------------------------------------------- Placeholder
def _placeholder_lower(ctx, op):
    raise errors.InvalidArgumentError(
        f"You must feed a value for placeholder tensor '{op.outputs[0].name}' with dtype "
        f"{op.attrs['dtype']} and shape {TensorShape(op.attrs['shape'])}", op=op)


Placeholder = OpDef("Placeholder", lower=_placeholder_lower, stateful=True)


@Placeholder.shape_fn
def _placeholder_shape(*, dtype, shape):
    return TensorSpec(TensorShape(shape), dtype)


NotDifferentiable("Placeholder")


def placeholder(dtype, shape=None, name=None):
    """A tensor whose value must be fed to `Session.run` (``feed_dict``).

    Args:
      dtype: `DType` of the fed values.
      shape: optional shape; `None` entries are unknown dims (``[None, 784]``); `None`
        means any shape.
    Returns:
      `Tensor` of `dtype` and `shape`.
    """
    dt = _dtypes.as_dtype(dtype)
    shp = None if shape is None else as_shape(shape).as_tuple()
    return Placeholder(dtype=dt.name, shape=shp, name=name)


PlaceholderWithDefault = OpDef("PlaceholderWithDefault", kernel=lambda x, *, shape: x)


@PlaceholderWithDefault.shape_fn
def _pwd_shape(x, *, shape):
    s = TensorShape(shape)
    if not s.is_compatible_with(x.shape):
        raise errors.InvalidArgumentError(f"default value shape {x.shape} is not compatible with {s}")
    return TensorSpec(s, x.dtype)


@RegisterGradient("PlaceholderWithDefault")
def _pwd_grad(op, grad):
    return [grad]


def placeholder_with_default(input, shape, name=None):  # noqa: A002 - TF's name
    """A placeholder that yields `input` when it is not fed."""
    t = convert_to_tensor(input)
    return PlaceholderWithDefault(t, shape=as_shape(shape).as_tuple(), name=name)


# ---------------------------------------------------------------- Identity, NoOp
Identity = OpDef("Identity", kernel=lambda x: x, shape_fn=_shape_rules.unary)


@RegisterGradient("Identity")
def _identity_grad(op, grad):
    return [grad]


def identity(input, name=None):  # noqa: A002
    """Returns a tensor with the same value as `input` (a new op, e.g. to name a value
    or to hang control dependencies on)."""
    return Identity(convert_to_tensor(input), name=name)


StopGradient = OpDef("StopGradient", kernel=lambda x: x, shape_fn=_shape_rules.unary)
NotDifferentiable("StopGradient")


def stop_gradient(input, name=None):  # noqa: A002
    """Identity in the forward pass; `gradients` treats the output as a constant."""
    return StopGradient(convert_to_tensor(input), name=name)


NoOp = OpDef("NoOp", kernel=lambda: (), shape_fn=lambda: [])
NotDifferentiable("NoOp")


def no_op(name=None):
    """An op that does nothing; useful as a target for control dependencies."""
    return NoOp(name=name)


def group(*inputs, name=None):
    """An op that runs after all of `inputs` (ops or tensors), with no output.

    Returns:
      `Operation` (a NoOp with control inputs).
    """
    flat = []
    for x in inputs:
        if isinstance(x, (list, tuple)):
            flat.extend(x)
        elif isinstance(x, dict):
            flat.extend(x.values())
        elif x is not None:
            flat.append(x)
    g = get_default_graph()
    with g.control_dependencies(flat):
        return NoOp(name=name or "group_deps")


# ---------------------------------------------------------------- shapes
def _shape_kernel(x, *, out_type):
    # Concrete numpy at trace time, so shape arithmetic stays static for XLA.
    return np.array(x.shape, dtype=_dtypes.as_dtype(out_type).np)


Shape = OpDef("Shape", kernel=_shape_kernel)


@Shape.shape_fn
def _shape_shape(x, *, out_type):
    return TensorSpec([x.shape.rank], out_type)


NotDifferentiable("Shape")


def shape(input, out_type="int32", name=None):  # noqa: A002
    """The shape of `input` as a 1-D int32 tensor (dynamic dims resolved at run time)."""
    return Shape(convert_to_tensor(input), out_type=_dtypes.as_dtype(out_type).name, name=name)


def _reshape_kernel(x, shape):
    dims = _static_ints(shape, "Reshape's shape")
    return jnp.reshape(x, dims)


Reshape = OpDef("Reshape", kernel=_reshape_kernel)


@Reshape.shape_fn
def _reshape_shape(x, shape):
    if shape.shape.rank != 1:
        raise errors.InvalidArgumentError(f"shape must be a vector, got shape {shape.shape}")
    return TensorSpec(TensorShape(None) if shape.shape[0] is None else [None] * shape.shape[0],
                      x.dtype)


def _reshape_target(x_shape, dims):
    """Static output shape of reshaping `x_shape` to `dims` (with one -1)."""
    dims = list(dims)
    if dims.count(-1) > 1:
        raise errors.InvalidArgumentError(f"only one input size may be -1, not both in {dims}")
    if -1 not in dims:
        if x_shape.is_fully_defined() and x_shape.num_elements() != int(np.prod(dims)):
            raise errors.InvalidArgumentError(
                f"cannot reshape a tensor with {x_shape.num_elements()} elements to shape "
                f"{dims} ({int(np.prod(dims))} elements)")
        return TensorShape(dims)
    if not x_shape.is_fully_defined():
        return TensorShape([None if d == -1 else d for d in dims])
    known = int(np.prod([d for d in dims if d != -1]))
    n = x_shape.num_elements()
    if known == 0 or n % known:
        raise errors.InvalidArgumentError(
            f"cannot reshape a tensor with {n} elements to shape {dims}")
    return TensorShape([n // known if d == -1 else d for d in dims])


def reshape(tensor, shape, name=None):
    """Reshapes `tensor` to `shape` (one entry may be -1).

    Raises:
      InvalidArgumentError: if the element counts differ.
    """
    x = convert_to_tensor(tensor)
    s = convert_to_tensor(shape, dtype_hint=_dtypes.int32)
    out = Reshape(x, s, name=name)
    cv = constant_value(s)
    try:
        if cv is not None:
            out._shape = _reshape_target(x.shape, [int(d) for d in np.asarray(cv).reshape(-1)])
        else:  # some entries known (`[shape(x)[0], 2, 2]`), as TensorFlow infers them
            out._shape = _reshape_partial(x, s).merge_with(out.shape)
    except errors.InvalidArgumentError as e:
        raise errors.InvalidArgumentError(e.message, op=out.op, show_inputs=True) from None
    return out


def _reshape_partial(x, s):
    """Static output shape of reshaping `x` to the shape tensor `s`, whose entries are
    partly known (`[shape(x)[0], 2, 2]`). An entry -1 follows from the others when every
    other unknown entry is `shape(x)[i]` for an unknown dimension i of x, each once
    (`[shape(x)[0], -1]`), as in TensorFlow's reshape shape function."""
    target = constant_value_as_shape(s)
    if target.rank is None or x.shape.rank is None:
        return target
    dims = target.as_list()
    minus_one = [i for i, e in enumerate(s.op.inputs) if constant_value(e) is not None
                 and int(constant_value(e)) == -1] if s.op.type == "Pack" else []
    if len(minus_one) != 1:
        return target
    x_unknown = sorted(i for i, d in enumerate(x.shape.as_list()) if d is None)
    passed = []
    for j, e in enumerate(s.op.inputs):
        if dims[j] is None and j != minus_one[0]:
            src = shape_dim_source(e)
            if src is None or src[0] is not x:
                return target
            passed.append(src[1])
    if sorted(passed) != x_unknown:
        return target
    n_in = int(np.prod([d for d in x.shape.as_list() if d is not None]))
    n_out = int(np.prod([d for d in dims if d is not None]))
    if n_out == 0 or n_in % n_out:
        raise errors.InvalidArgumentError(
            f"cannot reshape a tensor of shape {x.shape} to shape {target}")
    dims[minus_one[0]] = n_in // n_out
    return TensorShape(dims)


@RegisterGradient("Reshape")
def _reshape_grad(op, grad):
    return [reshape(grad, shape(op.inputs[0])), None]


# ---------------------------------------------------------------- broadcast gradient helpers
def _sum_to_shape_kernel(g, like):
    """Sums `g` over the axes that broadcasting added or stretched to reach like.shape."""
    target = like.shape
    if g.shape == target:
        return g
    lead = g.ndim - len(target)
    axes = tuple(_b.range(lead)) + tuple(
        lead + i for i, d in enumerate(target) if d == 1 and g.shape[lead + i] != 1)
    out = jnp.sum(g, axis=axes, keepdims=False) if axes else g
    return jnp.reshape(out, target)


SumToShape = OpDef("SumToShape", kernel=_sum_to_shape_kernel)


@SumToShape.shape_fn
def _sum_to_shape_shape(g, like):
    return TensorSpec(like.shape, g.dtype)


BroadcastLike = OpDef("BroadcastLike", kernel=lambda g, like: jnp.broadcast_to(g, like.shape))


@BroadcastLike.shape_fn
def _broadcast_like_shape(g, like):
    return TensorSpec(like.shape, g.dtype)


@RegisterGradient("SumToShape")
def _sum_to_shape_grad(op, grad):
    return [BroadcastLike(grad, op.inputs[0]), None]


@RegisterGradient("BroadcastLike")
def _broadcast_like_grad(op, grad):
    return [SumToShape(grad, op.inputs[0]), None]


def sum_to_shape(grad, like):
    """Sums `grad` to the shape of `like` (the reduction of a broadcast)."""
    return SumToShape(grad, like)


# ---------------------------------------------------------------- static helpers
def _is_static(*xs):
    """True when every value is concrete numpy (a constant or a shape) while tracing:
    shape-like arithmetic then stays in numpy, so XLA sees static shapes."""
    return all(isinstance(x, (np.ndarray, np.generic)) for x in xs)


def _axis_int(axis, what="axis"):
    if isinstance(axis, (np.ndarray, np.generic)):
        return int(axis)
    if hasattr(axis, "op"):  # a Tensor
        v = constant_value(axis)
        if v is None:
            raise errors.InvalidArgumentError(f"{what} must be known when the graph is built")
        return int(v)
    return int(axis)


def _int_tuple(v, what):
    if isinstance(v, (list, tuple)) and any(hasattr(d, "op") for d in v):
        v = convert_to_tensor(v)  # auto-packs; constant when every part is
    if hasattr(v, "op"):
        cv = constant_value(v)
        if cv is None:
            raise errors.InvalidArgumentError(f"{what} must be known when the graph is built")
        v = cv
    return tuple(int(d) for d in np.asarray(v).reshape(-1))


# ---------------------------------------------------------------- ConcatV2
def _concat_kernel(*values, axis):
    if _is_static(*values):
        return np.concatenate(values, axis=axis)
    return jnp.concatenate(values, axis=axis)


ConcatV2 = OpDef("ConcatV2", kernel=_concat_kernel)


@ConcatV2.shape_fn
def _concat_shape(*values, axis):
    d = _shape_rules.same_dtype(*values)
    known = [v.shape for v in values if v.shape.rank is not None]
    if not known:
        return TensorSpec(TensorShape(None), d)
    rank = known[0].rank
    if rank == 0:
        raise errors.InvalidArgumentError("cannot concatenate scalars; use stack")
    ax = _shape_rules.normalize_axis(axis, rank)
    out = [None] * rank
    total = 0
    for s in known:
        if s.rank != rank:
            raise errors.InvalidArgumentError(
                f"ranks differ: {known[0]} vs {s}; all inputs need rank {rank}")
        for i, dim in enumerate(s.as_tuple()):
            if i == ax:
                continue
            if out[i] is not None and dim is not None and out[i] != dim:
                raise errors.InvalidArgumentError(
                    f"dimension {i} differs: {known[0]} vs {s} (only axis {ax} may differ)")
            out[i] = out[i] if out[i] is not None else dim
    for s in known:
        dim = s.as_tuple()[ax]
        total = None if total is None or dim is None else total + dim
    if len(known) != len(values):
        total = None
    out[ax] = total
    return TensorSpec(out, d)


def _split_like_kernel(grad, *likes, axis):
    sizes = np.cumsum([x.shape[axis] for x in likes])[:-1]
    return tuple(jnp.split(grad, sizes, axis=axis))


SplitLike = OpDef("SplitLike", kernel=_split_like_kernel)


@SplitLike.shape_fn
def _split_like_shape(grad, *likes, axis):
    return [TensorSpec(x.shape, grad.dtype) for x in likes]


@RegisterGradient("SplitLike")
def _split_like_grad(op, *grads):
    return [concat(list(grads), axis=op.attrs["axis"])] + [None] * (len(op.inputs) - 1)


@RegisterGradient("ConcatV2")
def _concat_grad(op, grad):
    if len(op.inputs) == 1:
        return [grad]
    axis = op.attrs["axis"]
    rank = op.inputs[0].shape.rank
    if rank is not None:
        axis = _shape_rules.normalize_axis(axis, rank)
    parts = SplitLike(grad, *op.inputs, axis=axis)
    return list(parts)


def concat(values, axis, name="concat"):
    """Concatenates tensors along `axis`.

    Args:
      values: list of `Tensor`s of equal rank and dtype; all dims but `axis` must agree.
      axis: int (negative counts from the end); a constant tensor is accepted.
    Returns:
      `Tensor` whose `axis` dim is the sum of the inputs'.
    Raises:
      InvalidArgumentError: if ranks, dtypes, or non-`axis` dims differ.
    """
    if not isinstance(values, (list, tuple)):
        values = [values]
    values = list(values)
    first = next((v for v in values if hasattr(v, "op") or hasattr(v, "_as_tensor")), None)
    hint = convert_to_tensor(first).dtype if first is not None else None
    ts = [convert_to_tensor(v, dtype_hint=hint) for v in values]
    if len(ts) == 1:
        return identity(ts[0], name=name)
    return ConcatV2(*ts, axis=_axis_int(axis), name=name)


# ---------------------------------------------------------------- Pack / Unpack
def _pack_kernel(*values, axis):
    if _is_static(*values):
        return np.stack(values, axis=axis)
    return jnp.stack(values, axis=axis)


Pack = OpDef("Pack", kernel=_pack_kernel)


@Pack.shape_fn
def _pack_shape(*values, axis):
    d = _shape_rules.same_dtype(*values)
    shape = TensorShape(None)
    for v in values:
        try:
            shape = shape.merge_with(v.shape)
        except ValueError:
            raise errors.InvalidArgumentError(
                f"shapes differ: {values[0].shape} vs {v.shape}; stack needs equal shapes") \
                from None
    if shape.rank is None:
        return TensorSpec(TensorShape(None), d)
    dims = shape.as_list()
    ax = _shape_rules.normalize_axis(axis, len(dims) + 1)
    return TensorSpec(dims[:ax] + [len(values)] + dims[ax:], d)


@RegisterGradient("Pack")
def _pack_grad(op, grad):
    return unstack(grad, num=len(op.inputs), axis=op.attrs["axis"])


def stack(values, axis=0, name="stack"):
    """Stacks a list of rank-R tensors into one rank-(R+1) tensor (TF's op "Pack").

    Args:
      values: list of `Tensor`s (or Python values) of the same shape and dtype.
      axis: where the new axis goes, in [-(R+1), R+1).
    Returns:
      `Tensor` with a new axis of size `len(values)`.
    Raises:
      InvalidArgumentError: if shapes or dtypes differ.
    """
    values = list(values)
    first = next((v for v in values if hasattr(v, "op") or hasattr(v, "_as_tensor")), None)
    hint = convert_to_tensor(first).dtype if first is not None else None
    ts = [convert_to_tensor(v, dtype_hint=hint) for v in values]
    return Pack(*ts, axis=int(axis), name=name)


def _unpack_kernel(x, *, num, axis):
    mod = np if _is_static(x) else jnp
    return tuple(mod.squeeze(p, axis) for p in mod.split(x, num, axis=axis))


Unpack = OpDef("Unpack", kernel=_unpack_kernel)


@Unpack.shape_fn
def _unpack_shape(x, *, num, axis):
    if x.shape.rank is None:
        return [TensorSpec(TensorShape(None), x.dtype)] * num
    dims = x.shape.as_list()
    ax = _shape_rules.normalize_axis(axis, len(dims))
    if dims[ax] is not None and dims[ax] != num:
        raise errors.InvalidArgumentError(f"num={num} but dimension {ax} has size {dims[ax]}")
    return [TensorSpec(dims[:ax] + dims[ax + 1:], x.dtype)] * num


@RegisterGradient("Unpack")
def _unpack_grad(op, *grads):
    return [stack(list(grads), axis=op.attrs["axis"])]


def unstack(value, num=None, axis=0, name="unstack"):
    """Splits `value` along `axis` into a list of tensors of rank R-1 ("Unpack").

    Raises:
      ValueError: if `num` is None and the `axis` dim is unknown.
    """
    x = convert_to_tensor(value)
    if num is None:
        if x.shape.rank is None:
            raise ValueError(f"Cannot infer num from shape {x.shape}")
        num = x.shape.as_list()[_shape_rules.normalize_axis(axis, x.shape.rank)]
        if num is None:
            raise ValueError(f"Cannot infer num from shape {x.shape}")
    out = Unpack(x, num=int(num), axis=int(axis), name=name)
    return list(out) if isinstance(out, tuple) else [out]


def _tensor_iter(self):
    if self._shape.rank is None or self._shape.rank == 0 or self._shape[0] is None:
        raise TypeError(f"Cannot iterate over tensor '{self.name}' with shape {self._shape}")
    return iter(unstack(self, axis=0))


Tensor._overload_operator("__iter__", _tensor_iter)


# ---------------------------------------------------------------- Split / SplitV
def _split_kernel(x, *, num_split=None, size_splits=None, axis=0):
    if size_splits is not None:
        idx = np.cumsum(size_splits)[:-1]
        return tuple(jnp.split(x, idx, axis=axis))
    return tuple(jnp.split(x, num_split, axis=axis))


Split = OpDef("Split", kernel=_split_kernel)
SplitV = OpDef("SplitV", kernel=_split_kernel)


def _split_shape(x, *, num_split=None, size_splits=None, axis=0):
    if x.shape.rank is None:
        n = num_split if size_splits is None else len(size_splits)
        return [TensorSpec(TensorShape(None), x.dtype)] * n
    dims = x.shape.as_list()
    ax = _shape_rules.normalize_axis(axis, len(dims))
    n_ax = dims[ax]
    if size_splits is None:
        if n_ax is not None and n_ax % num_split:
            raise errors.InvalidArgumentError(
                f"dimension {ax} of size {n_ax} is not divisible into {num_split} splits")
        sizes = [None if n_ax is None else n_ax // num_split] * num_split
    else:
        sizes = list(size_splits)
        if n_ax is not None and sum(sizes) != n_ax:
            raise errors.InvalidArgumentError(
                f"size_splits {sizes} sum to {sum(sizes)}, not dimension {ax} size {n_ax}")
    return [TensorSpec(dims[:ax] + [s] + dims[ax + 1:], x.dtype) for s in sizes]


Split.shape_fn(_split_shape)
SplitV.shape_fn(_split_shape)


def _split_grad(op, *grads):
    return [concat(list(grads), axis=op.attrs.get("axis", 0))]


RegisterGradient("Split")(_split_grad)
RegisterGradient("SplitV")(_split_grad)


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Splits `value` along `axis`.

    Args:
      value: `Tensor`.
      num_or_size_splits: an int (number of equal splits) or a list of sizes (one may
        be -1, inferred).
      axis: int.
    Returns:
      list of `Tensor`s.
    Raises:
      InvalidArgumentError: if the `axis` dim is not divisible, or sizes do not sum to it.
    """
    x = convert_to_tensor(value)
    ax = _axis_int(axis)
    if isinstance(num_or_size_splits, (int, np.integer)):
        out = Split(x, num_split=int(num_or_size_splits), axis=ax, name=name)
    else:
        sizes = list(_int_tuple(num_or_size_splits, "size_splits"))
        if -1 in sizes:
            n_ax = x.shape.as_list()[ax] if x.shape.rank is not None else None
            if n_ax is None:
                raise errors.InvalidArgumentError("a -1 split size needs a known axis size")
            sizes[sizes.index(-1)] = n_ax - (sum(sizes) + 1)
        out = SplitV(x, size_splits=tuple(sizes), axis=ax, name=name)
    return list(out) if isinstance(out, tuple) else [out]


# ---------------------------------------------------------------- Transpose
def _transpose_kernel(x, *, perm):
    return (np if _is_static(x) else jnp).transpose(x, perm)


Transpose = OpDef("Transpose", kernel=_transpose_kernel)


@Transpose.shape_fn
def _transpose_shape(x, *, perm):
    if x.shape.rank is None:
        return TensorSpec(TensorShape([None] * len(perm)), x.dtype)
    if sorted(perm) != list(_b.range(x.shape.rank)):
        raise errors.InvalidArgumentError(
            f"perm {list(perm)} is not a permutation of the {x.shape.rank} axes of {x.shape}")
    dims = x.shape.as_list()
    return TensorSpec([dims[p] for p in perm], x.dtype)


@RegisterGradient("Transpose")
def _transpose_grad(op, grad):
    perm = op.attrs["perm"]
    return [transpose(grad, tuple(int(i) for i in np.argsort(perm)))]


def transpose(a, perm=None, name="transpose", conjugate=False):
    """Permutes the axes of `a`: output axis i is input axis `perm[i]`.

    Args:
      a: `Tensor`; `perm` defaults to reversing the axes (needs a known rank).
      conjugate: accepted for TensorFlow compatibility; with a complex `a` it is
        ignored and warns once (the values are not conjugated).
    Raises:
      InvalidArgumentError: if `perm` is not a permutation of range(rank).
    """
    x = convert_to_tensor(a)
    if conjugate and x.dtype.is_complex:
        warn_ignored("transpose", "conjugate", "the values are not conjugated.")
    if perm is None:
        if x.shape.rank is None:
            raise errors.InvalidArgumentError("transpose with perm=None needs a known rank")
        perm = tuple(_b.range(x.shape.rank))[::-1]
    out = Transpose(x, perm=_int_tuple(perm, "perm"), name=name)
    return out


def matrix_transpose(a, name="matrix_transpose"):
    """Swaps the last two axes of `a` (rank >= 2)."""
    x = convert_to_tensor(a)
    r = x.shape.rank
    if r is None or r < 2:
        raise errors.InvalidArgumentError(f"matrix_transpose needs rank >= 2, got {x.shape}")
    perm = list(_b.range(r))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return transpose(x, perm, name=name)


# ---------------------------------------------------------------- ExpandDims / Squeeze
def _expand_dims_kernel(x, *, axis):
    return (np if _is_static(x) else jnp).expand_dims(x, axis)


ExpandDims = OpDef("ExpandDims", kernel=_expand_dims_kernel)


@ExpandDims.shape_fn
def _expand_dims_shape(x, *, axis):
    if x.shape.rank is None:
        return TensorSpec(TensorShape(None), x.dtype)
    dims = x.shape.as_list()
    ax = _shape_rules.normalize_axis(axis, len(dims) + 1)
    return TensorSpec(dims[:ax] + [1] + dims[ax:], x.dtype)


@RegisterGradient("ExpandDims")
def _expand_dims_grad(op, grad):
    return [reshape(grad, shape(op.inputs[0]))]


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    """Inserts a size-1 axis at `axis` (in [-rank-1, rank]); `dim` is TensorFlow 1's
    name of `axis`."""
    axis = deprecated_alias("axis", "dim", axis, dim, "expand_dims")
    if axis is None:
        raise ValueError("expand_dims: `axis` is required")
    return ExpandDims(convert_to_tensor(input), axis=_axis_int(axis), name=name)


def _squeeze_kernel(x, *, squeeze_dims):
    mod = np if _is_static(x) else jnp
    return mod.squeeze(x, axis=squeeze_dims if squeeze_dims else None)


Squeeze = OpDef("Squeeze", kernel=_squeeze_kernel)


@Squeeze.shape_fn
def _squeeze_shape(x, *, squeeze_dims):
    if x.shape.rank is None:
        return TensorSpec(TensorShape(None), x.dtype)
    dims = x.shape.as_list()
    if squeeze_dims:
        axes = {_shape_rules.normalize_axis(a, len(dims)) for a in squeeze_dims}
        for a in axes:
            if dims[a] is not None and dims[a] != 1:
                raise errors.InvalidArgumentError(
                    f"cannot squeeze dimension {a} of size {dims[a]} in shape {x.shape}")
        return TensorSpec([d for i, d in enumerate(dims) if i not in axes], x.dtype)
    if None in dims:
        raise errors.InvalidArgumentError(
            f"squeeze without axis needs a fully known shape, got {x.shape}; pass axis=")
    return TensorSpec([d for d in dims if d != 1], x.dtype)


@RegisterGradient("Squeeze")
def _squeeze_grad(op, grad):
    return [reshape(grad, shape(op.inputs[0]))]


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    """Removes size-1 axes (all of them, or those in `axis`; `squeeze_dims` is
    TensorFlow 1's name).

    Raises:
      InvalidArgumentError: if an `axis` dim is not 1.
    """
    axis = deprecated_alias("axis", "squeeze_dims", axis, squeeze_dims, "squeeze")
    if isinstance(axis, (int, np.integer)):
        axis = [axis]
    dims = () if axis is None else tuple(int(a) for a in axis)
    return Squeeze(convert_to_tensor(input), squeeze_dims=dims, name=name)


# ---------------------------------------------------------------- Tile, Pad, BroadcastTo
def _tile_kernel(x, *dyn, multiples=None):
    if dyn:  # a multiples tensor, static when the step is traced (`[1, shape(x)[0]]`)
        multiples = _static_ints(dyn[0], "Tile's multiples")
    return jnp.tile(x, multiples)


Tile = OpDef("Tile", kernel=_tile_kernel)


@Tile.shape_fn
def _tile_shape(x, *dyn, multiples=None):
    if dyn:
        n = dyn[0].shape[0] if dyn[0].shape.rank == 1 else x.shape.rank
        if dyn[0].shape.rank not in (1, None) or (
                n is not None and x.shape.rank is not None and n != x.shape.rank):
            raise errors.InvalidArgumentError(
                f"multiples of shape {dyn[0].shape} needs one entry per axis of {x.shape}")
        return TensorSpec(TensorShape(None) if n is None else [None] * n, x.dtype)
    if x.shape.rank is None:
        return TensorSpec([None] * len(multiples), x.dtype)
    if len(multiples) != x.shape.rank:
        raise errors.InvalidArgumentError(
            f"multiples {list(multiples)} needs one entry per axis of {x.shape}")
    return TensorSpec([None if d is None else d * m
                       for d, m in zip(x.shape.as_list(), multiples)], x.dtype)


def tile(input, multiples, name=None):  # noqa: A002
    """Repeats `input` `multiples[i]` times along axis i.

    `multiples` may hold tensors known when the step is compiled (``[1, shape(x)[0]]``);
    a fed or data-dependent one raises InvalidArgumentError when the step runs.
    """
    x = convert_to_tensor(input)
    if isinstance(multiples, (list, tuple)) and any(hasattr(d, "op") for d in multiples):
        multiples = convert_to_tensor(multiples)  # auto-packs; constant when every part is
    if hasattr(multiples, "op") and constant_value(multiples) is None:
        m = convert_to_tensor(multiples)
        out = Tile(x, m, name=name)
        known = constant_value_as_shape(m)
        if known.rank is not None and x.shape.rank == known.rank:
            out._shape = TensorShape(
                [None if d is None or k is None else d * k
                 for d, k in zip(x.shape.as_list(), known.as_list())]).merge_with(out.shape)
        return out
    return Tile(x, multiples=_int_tuple(multiples, "multiples"), name=name)


def _pad_kernel(x, *, paddings, constant_values=0):
    return jnp.pad(x, paddings, constant_values=jnp.asarray(constant_values, x.dtype))


def _mirror_pad_kernel(x, *, paddings, mode):
    return jnp.pad(x, paddings, mode=mode.lower())


PadV2 = OpDef("PadV2", kernel=_pad_kernel)
MirrorPad = OpDef("MirrorPad", kernel=_mirror_pad_kernel)


def _pad_shape(x, *, paddings, mode="CONSTANT", constant_values=0):
    if x.shape.rank is None:
        return TensorSpec([None] * len(paddings), x.dtype)
    dims = x.shape.as_list()
    if len(paddings) != len(dims):
        raise errors.InvalidArgumentError(
            f"paddings has {len(paddings)} rows, but the input {x.shape} has rank {len(dims)}")
    for d, (lo, hi) in zip(dims, paddings):
        if lo < 0 or hi < 0:
            raise errors.InvalidArgumentError(f"paddings must be >= 0, got {paddings}")
        lim = None if d is None else (d - 1 if mode == "REFLECT" else d)
        if mode != "CONSTANT" and lim is not None and (lo > lim or hi > lim):
            raise errors.InvalidArgumentError(
                f"{mode} paddings {paddings} are too large for the input {x.shape}")
    return TensorSpec([None if d is None else d + lo + hi for d, (lo, hi) in zip(dims, paddings)],
                      x.dtype)


PadV2.shape_fn(_pad_shape)
MirrorPad.shape_fn(_pad_shape)


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """Pads `tensor` with `paddings[i] = [before, after]` entries on axis i.

    Args:
      mode: "CONSTANT" (with `constant_values`), "REFLECT" (mirror without the edge) or
        "SYMMETRIC" (mirror with the edge), case-insensitive.
    Raises:
      InvalidArgumentError: for a bad mode, negative paddings or a mirror pad larger
        than the axis.
    """
    x = convert_to_tensor(tensor)
    p = tuple(tuple(int(v) for v in row) for row in np.asarray(
        constant_value(paddings) if hasattr(paddings, "op") else paddings).reshape(-1, 2))
    mode = mode.upper()
    if mode == "CONSTANT":
        cv = constant_values
        if hasattr(cv, "op"):
            cv = constant_value(cv)
        return PadV2(x, paddings=p, constant_values=np.asarray(cv).item(), name=name)
    if mode not in ("REFLECT", "SYMMETRIC"):
        raise errors.InvalidArgumentError(
            f"pad mode must be CONSTANT, REFLECT or SYMMETRIC. Received: mode={mode!r}")
    return MirrorPad(x, paddings=p, mode=mode, name=name)


def _broadcast_to_kernel(x, *dyn, shape=None):
    if dyn:  # a shape tensor, static when the step is traced (`[shape(x)[0], 8]`)
        shape = _static_ints(dyn[0], "BroadcastTo's shape")
    return jnp.broadcast_to(x, shape)


BroadcastTo = OpDef("BroadcastTo", kernel=_broadcast_to_kernel)


@BroadcastTo.shape_fn
def _broadcast_to_shape(x, *dyn, shape=None):
    if dyn:
        n = dyn[0].shape[0] if dyn[0].shape.rank == 1 else None
        return TensorSpec(TensorShape(None) if n is None else [None] * n, x.dtype)
    try:
        out = broadcast_shapes(x.shape, TensorShape(shape))
    except ValueError:
        raise errors.InvalidArgumentError(
            f"cannot broadcast {x.shape} to {TensorShape(shape)}") from None
    if out.rank != len(shape):
        raise errors.InvalidArgumentError(f"cannot broadcast {x.shape} to {TensorShape(shape)}")
    return TensorSpec(shape, x.dtype)


@RegisterGradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    # gradients() sums it back to the input's shape
    return [grad] + [None] * (len(op.inputs) - 1)


def broadcast_to(input, shape, name=None):  # noqa: A002
    """Broadcasts `input` to `shape` (numpy rules). `shape` may hold tensors known when
    the step is compiled (``[shape(x)[0], 8]``)."""
    x = convert_to_tensor(input)
    if isinstance(shape, (list, tuple)) and any(hasattr(d, "op") for d in shape):
        shape = convert_to_tensor(shape)  # auto-packs; constant when every part is
    if hasattr(shape, "op") and constant_value(shape) is None:
        out = BroadcastTo(x, shape, name=name)
        out._shape = constant_value_as_shape(shape).merge_with(out.shape)
        return out
    return BroadcastTo(x, shape=_int_tuple(shape, "shape"), name=name)


# ---------------------------------------------------------------- Size, Rank
Size = OpDef("Size", kernel=lambda x, *, out_type: np.asarray(
    int(np.prod(x.shape)), dtype=_dtypes.as_dtype(out_type).np))
Rank = OpDef("Rank", kernel=lambda x: np.asarray(x.ndim, dtype=np.int32))
NotDifferentiable("Size")
NotDifferentiable("Rank")


@Size.shape_fn
def _size_shape(x, *, out_type):
    return TensorSpec([], out_type)


@Rank.shape_fn
def _rank_shape(x):
    return TensorSpec([], _dtypes.int32)


def size(input, out_type="int32", name=None):  # noqa: A002
    """The number of elements of `input`, a scalar (static when compiled)."""
    return Size(convert_to_tensor(input), out_type=_dtypes.as_dtype(out_type).name, name=name)


def rank(input, name=None):  # noqa: A002
    """The rank of `input`, an int32 scalar."""
    return Rank(convert_to_tensor(input), name=name)


# ---------------------------------------------------------------- SelectV2 (where)
def _select_kernel(c, x, y):
    return jnp.where(c, x, y)


SelectV2 = OpDef("SelectV2", kernel=_select_kernel)


@SelectV2.shape_fn
def _select_shape(c, x, y):
    if not c.dtype.is_bool:
        raise errors.InvalidArgumentError(f"condition must be bool, got {c.dtype.name}")
    if x.dtype != y.dtype:
        raise errors.InvalidArgumentError(
            f"x (input 1) has dtype {x.dtype.name} but y (input 2) has {y.dtype.name}; "
            "cast one of them (ml.cast) so the dtypes agree")
    d = x.dtype
    try:
        return TensorSpec(broadcast_shapes(broadcast_shapes(c.shape, x.shape), y.shape), d)
    except ValueError:
        raise errors.InvalidArgumentError(
            f"incompatible shapes for broadcasting: {c.shape}, {x.shape}, {y.shape}") from None


@RegisterGradient("SelectV2")
def _select_grad(op, grad):
    c = op.inputs[0]
    z = zeros_like(grad)
    return [None, where(c, grad, z), where(c, z, grad)]


def _where_coords_lower(ctx, op, c):
    return (np.argwhere(np.asarray(c)).astype(np.int64),)


# the coordinates form of `where`: a data-dependent shape, so a host op
WhereCoords = OpDef("Where", lower=_where_coords_lower, host=True)
NotDifferentiable("Where")


@WhereCoords.shape_fn
def _where_coords_shape(c):
    return TensorSpec([None, c.shape.rank], _dtypes.int64)


def where(condition, x=None, y=None, name=None):
    """Element-wise `x if condition else y`, with broadcasting (TF2's `where`, "SelectV2").

    Args:
      condition: bool `Tensor`.
      x, y: `Tensor`s (or Python values) of one dtype.
    Returns:
      `Tensor` of the broadcast shape.
    Raises:
      InvalidArgumentError: if shapes do not broadcast or dtypes differ.

    With `condition` only (TensorFlow 1's `tf.where(condition)`): the coordinates of
    the True (non-zero) entries, an int64 `Tensor` [n, rank(condition)] in row-major
    order. Differs from TensorFlow: n depends on the data, which XLA cannot compile, so
    this form runs on the host between the compiled parts of the step.
    """
    if x is None and y is None:
        c = convert_to_tensor(condition)
        return WhereCoords(c, name=name)
    if x is None or y is None:
        raise ValueError("where: give both `x` and `y`, or neither")
    c = convert_to_tensor(condition)
    if hasattr(x, "op") or hasattr(x, "_as_tensor"):
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, dtype_hint=x.dtype)
    else:
        y = convert_to_tensor(y)
        x = convert_to_tensor(x, dtype_hint=y.dtype)
    return SelectV2(c, x, y, name=name)


where_v2 = where
select = where
select_v2 = where
