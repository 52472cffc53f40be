"""`keras.ops` core operations (Keras 3's `keras.ops.core`): conversion, casting,
control flow, slicing, segment reductions.

Control flow on symbolic values builds mylib's functional control flow (`cond`,
`while_loop`; sub-graphs lowered to `lax.cond` / `lax.while_loop`), so gradients and
saving see ordinary graph ops; on arrays it runs `jax.lax` directly.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.ops import array_ops, control_flow_ops, math_ops
from mylib.core.op_registry import convert_to_tensor as _to_tensor
from mylib.core.variables import Variable as _Variable
from mylib.keras.ops._dispatch import any_symbolic, is_symbolic, keras_op


def _flat(v):
    return jax.tree_util.tree_leaves(v, is_leaf=lambda x: x is None)


def is_tensor(x):
    """Whether `x` is a tensor of this backend: a mylib `Tensor` / `Variable`, or a JAX
    array."""
    return is_symbolic(x) or isinstance(x, jax.Array)


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    """A JAX array of `x` (a symbolic `x` stays a graph `Tensor`, cast to `dtype` if it
    differs; a `Variable` gives its value)."""
    if is_symbolic(x):
        t = _to_tensor(x)
        if dtype is not None and t.dtype != _dtypes.as_dtype(dtype):
            t = math_ops.cast(t, dtype)
        return t
    if isinstance(x, (list, tuple)) and any_symbolic(x):
        return _to_tensor(x, dtype=dtype)
    dt = dtype.name if isinstance(dtype, _dtypes.DType) else dtype
    return jnp.asarray(x, dtype=dt)


def convert_to_numpy(x):
    """A numpy array of `x`.

    A `Variable` (a layer weight, `optimizer.learning_rate`, a metric's state) gives
    its current value in the Keras session of its graph, the values `fit` trains and
    `get_weights` reads (as Keras 3 reads a variable's value).

    Raises:
      ValueError: for a symbolic tensor, whose value exists only when its graph runs
        (call the layer / model on arrays, or run it in a `Session`).
    """
    if isinstance(x, _Variable):
        from mylib.runtime import keras_session

        return keras_session.get_values([x])[0]
    if is_symbolic(x):
        raise ValueError(f"convert_to_numpy: '{_to_tensor(x).name}' is a symbolic graph "
                         "tensor with no value yet; call the layer or model on arrays (or "
                         "`model.predict`) to get numbers.")
    return np.asarray(x)


def cast(x, dtype):
    """`x` converted to `dtype` (a graph `Cast` op on symbolic tensors)."""
    if is_symbolic(x):
        return math_ops.cast(x, dtype)
    dt = dtype.name if isinstance(dtype, _dtypes.DType) else dtype
    return jnp.asarray(x).astype(dt)


saturate_cast = cast


def dtype(x):
    """The dtype name of `x` (``"float32"``)."""
    if is_symbolic(x):
        return _to_tensor(x).dtype.name
    return jnp.asarray(x).dtype.name


def stop_gradient(variable):
    """`variable` as a value that gradients do not flow through."""
    if is_symbolic(variable):
        return array_ops.stop_gradient(variable)
    return jax.lax.stop_gradient(variable)


def cond(pred, true_fn, false_fn):
    """``true_fn()`` if `pred` else ``false_fn()``; only the branch taken runs."""
    if is_symbolic(pred) or any_symbolic(_closure_hint(true_fn, false_fn)):
        return control_flow_ops.cond(pred, true_fn, false_fn)
    if isinstance(pred, (bool, np.bool_)):
        return true_fn() if pred else false_fn()
    return jax.lax.cond(pred, true_fn, false_fn)


def _closure_hint(*fns):
    cells = []
    for f in fns:
        for c in (getattr(f, "__closure__", None) or ()):
            try:
                cells.append(c.cell_contents)
            except ValueError:
                pass
    return [c for c in cells if is_symbolic(c)]


def while_loop(cond, body, loop_vars, maximum_iterations=None):
    """Repeats ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` (Keras 3's
    signature: a tuple / list of loop variables is unpacked into the calls; a single
    value is passed as is). Returns the final loop variables, in the same structure."""
    single = not isinstance(loop_vars, (list, tuple))
    if any_symbolic(loop_vars):
        out = control_flow_ops.while_loop(
            (lambda v: cond(v)) if single else cond,
            (lambda v: body(v)) if single else (lambda *v: tuple(_as_seq(body(*v)))),
            loop_vars if single else list(loop_vars),
            maximum_iterations=maximum_iterations)
        return out if single else type(loop_vars)(out) if isinstance(loop_vars, tuple) \
            else list(out)
    vs = loop_vars if single else tuple(loop_vars)
    if maximum_iterations is not None:
        def c(s):
            i, v = s
            return jnp.logical_and(i < maximum_iterations, cond(v) if single else cond(*v))

        def b(s):
            i, v = s
            return i + 1, (body(v) if single else tuple(_as_seq(body(*v))))
        _, out = jax.lax.while_loop(c, b, (0, vs))
    else:
        out = jax.lax.while_loop(
            (lambda v: cond(v)) if single else (lambda v: cond(*v)),
            (lambda v: body(v)) if single else (lambda v: tuple(_as_seq(body(*v)))), vs)
    return out if single else type(loop_vars)(out)


def _as_seq(v):
    return v if isinstance(v, (list, tuple)) else (v,)


def fori_loop(lower, upper, body_fun, init_val):
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``."""
    if any_symbolic(init_val) or is_symbolic(lower) or is_symbolic(upper):
        single = not isinstance(init_val, (list, tuple))
        lo = _to_tensor(lower, dtype="int32")
        init = [lo] + ([init_val] if single else list(init_val))

        def body(i, *v):
            out = body_fun(i, v[0] if single else type(init_val)(v))
            return [i + 1] + ([out] if single else list(out))
        res = control_flow_ops.while_loop(lambda i, *v: math_ops.less(i, upper), body, init)
        return res[1] if single else type(init_val)(res[1:])
    return jax.lax.fori_loop(lower, upper, body_fun, init_val)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """``(carry, ys)``: ``carry, y = f(carry, x)`` over the leading axis of `xs`, as
    `jax.lax.scan`. On symbolic values it is a mylib loop over the `length` (static)
    steps, ys stacked; `f` must keep the carry's structure."""
    if not (any_symbolic(init) or any_symbolic(xs)):
        return jax.lax.scan(f, init, xs, length=length, reverse=reverse, unroll=unroll)
    x_leaves = _flat(xs) if xs is not None else []
    n = length
    if n is None:
        n = _to_tensor(x_leaves[0]).shape.as_list()[0]
    if n is None:
        raise ValueError("scan: the number of steps must be static on symbolic tensors "
                         "(the leading axis of `xs`, or `length`).")
    carry, ys = init, []
    order = range(n - 1, -1, -1) if reverse else range(n)
    for i in order:
        x = None if xs is None else jax.tree_util.tree_map(lambda a: _to_tensor(a)[i], xs)
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys = ys[::-1]
    if ys and ys[0] is not None:
        ys = jax.tree_util.tree_map(lambda *a: array_ops.stack(list(a)), *ys)
    else:
        ys = None
    return carry, ys


def vectorized_map(function, elements):
    """``stack([function(e) for e in elements])`` over the leading axis; `jax.vmap` on
    arrays, an unrolled loop on symbolic tensors of static length."""
    if any_symbolic(elements):
        leaves = _flat(elements)
        n = _to_tensor(leaves[0]).shape.as_list()[0]
        if n is None:
            from mylib.core.ops.control_flow_ops import map_fn
            return map_fn(function, elements)
        outs = [function(jax.tree_util.tree_map(lambda a: _to_tensor(a)[i], elements))
                for i in range(n)]
        return jax.tree_util.tree_map(lambda *a: array_ops.stack(list(a)), *outs)
    return jax.vmap(function)(elements)


def map(f, xs):  # noqa: A001 - Keras's name
    """``stack([f(x) for x in xs])`` (see `vectorized_map`)."""
    return vectorized_map(f, xs)


@keras_op("inputs")
def _slice(inputs, start_indices, shape):
    return jax.lax.dynamic_slice(inputs, start_indices, shape)


def slice(inputs, start_indices, shape):  # noqa: A001 - Keras's name
    """The block of `inputs` at `start_indices` with size `shape` (static ints)."""
    return _slice(inputs, tuple(int(s) for s in start_indices), tuple(int(s) for s in shape))


@keras_op("inputs", "updates")
def _slice_update(inputs, start_indices, updates):
    return jax.lax.dynamic_update_slice(inputs, updates.astype(inputs.dtype), start_indices)


def slice_update(inputs, start_indices, updates):
    """`inputs` with the block at `start_indices` replaced by `updates`."""
    return _slice_update(inputs, tuple(int(s) for s in start_indices), updates)


@keras_op("indices", "values")
def scatter(indices, values, shape):
    """Zeros of `shape` with `values` added at `indices` (``[n, rank]``)."""
    z = jnp.zeros(shape, values.dtype)
    idx = tuple(jnp.moveaxis(jnp.asarray(indices), -1, 0))
    return z.at[idx].add(values)


@keras_op("inputs", "indices", "updates")
def scatter_update(inputs, indices, updates):
    """`inputs` with the entries at `indices` (``[n, rank]``) set to `updates`."""
    idx = tuple(jnp.moveaxis(jnp.asarray(indices), -1, 0))
    return inputs.at[idx].set(updates.astype(inputs.dtype))


@keras_op("data", "segment_ids")
def _segment_sum(data, segment_ids, num_segments, sorted=False):  # noqa: A002
    return jax.ops.segment_sum(data, segment_ids, num_segments, indices_are_sorted=sorted)


@keras_op("data", "segment_ids")
def _segment_max(data, segment_ids, num_segments, sorted=False):  # noqa: A002
    return jax.ops.segment_max(data, segment_ids, num_segments, indices_are_sorted=sorted)


def _num_segments(segment_ids, num_segments, what):
    if num_segments is not None:
        return int(num_segments)
    if is_symbolic(segment_ids):
        raise ValueError(f"{what}: `num_segments` is required on symbolic tensors (the "
                         "output size must be static). Received: num_segments=None")
    return int(np.max(np.asarray(segment_ids))) + 1


def segment_sum(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """Sums of the rows of `data` per segment id (``[num_segments, ...]``)."""
    return _segment_sum(data, segment_ids,
                        _num_segments(segment_ids, num_segments, "segment_sum"), sorted)


def segment_max(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """Maxima of the rows of `data` per segment id."""
    return _segment_max(data, segment_ids,
                        _num_segments(segment_ids, num_segments, "segment_max"), sorted)


__all__ = sorted(n for n, v in list(globals().items())
                 if not n.startswith("_") and callable(v) and
                 getattr(v, "__module__", None) == __name__)
