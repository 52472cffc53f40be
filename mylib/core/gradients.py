"""Reverse-mode automatic differentiation by extending the graph.

`gradients(ys, xs)` walks the ops between `xs` and `ys` in reverse creation order,
calls each op type's registered gradient function (written in graph ops, so the
result can be placed, inspected and differentiated again), sums gradients that
arrive over several paths, and sums broadcast gradients back to each input's shape.
Ops with no registered gradient use the generic VJP op, whose kernel is `jax.vjp` of
the forward kernel. Gradients of gathers stay sparse as `IndexedSlices`.
"""

from __future__ import annotations

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.compat_args import warn_ignored
from mylib.core.graph import Tensor, _user_frame, get_default_graph
# IndexedSlices and the generic VJP op live in modules of their own, below the ops
# modules that use them; their names stay importable from here.
from mylib.core.indexed_slices import (IndexedSlices, IndexedSlicesToDense,  # noqa: F401
                                       indexed_slices_to_dense)
from mylib.core.op_registry import convert_to_tensor, get_gradient_function
from mylib.core.ops import array_ops, constant_ops, math_ops
from mylib.core.ops.state_ops import handle_op
from mylib.core.variables import Variable
from mylib.core.vjp import VJP, generic_vjp as _generic_vjp  # noqa: F401


# ---------------------------------------------------------------- gradients()
def _is_diff(t):
    if t.dtype == _dtypes.resource:
        return _resource_is_float(t)
    return t.dtype.is_differentiable


def _resource_is_float(t):
    dt = handle_op(t).attrs.get("dtype")
    return dt is not None and _dtypes.as_dtype(dt).is_differentiable


def _as_xs(x):
    if isinstance(x, Variable):
        return x.handle
    if isinstance(x, Tensor):
        return x
    h = getattr(x, "handle", None)
    if isinstance(h, Tensor):
        return h
    return convert_to_tensor(x)


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None,
              unconnected_gradients="none"):
    """Symbolic derivatives of `sum(ys)` with respect to each of `xs`.

    Args:
      ys: `Tensor` or list of tensors to differentiate.
      xs: `Tensor`, `Variable`, or a list of them.
      grad_ys: optional initial gradients, one per `y` (default: ones).
      name: name scope of the gradient ops.
      colocate_gradients_with_ops, gate_gradients, aggregation_method: accepted for
        TensorFlow compatibility and ignored (a non-default value warns once):
        gradient ops take the device scope of the `gradients` call, and those left
        unconstrained are placed with their inputs; a step is one compiled program,
        so there is no race for gating to prevent; gradients arriving over several
        paths are always summed by one `AddN`.
      stop_gradients: tensors treated as constants.
      unconnected_gradients: ``"none"`` (None for an x that ys do not depend on) or
        ``"zero"`` (zeros of x's shape).

    The arguments are in TensorFlow's order, so positional TensorFlow calls work.

    Returns:
      A list, one entry per x: a `Tensor`, an `IndexedSlices` (for gathers, so sparse
      updates stay sparse), or None. Integer and bool tensors get no gradient.
    Raises:
      ValueError: if `unconnected_gradients` is unknown or `grad_ys` has the wrong length.
    """
    if unconnected_gradients not in ("none", "zero"):
        raise ValueError(f"Unknown unconnected_gradients: {unconnected_gradients!r}")
    if colocate_gradients_with_ops:
        warn_ignored("gradients", "colocate_gradients_with_ops",
                     "gradient ops take the device scope of the gradients() call; "
                     "unconstrained ones are placed with their inputs.")
    if gate_gradients:
        warn_ignored("gradients", "gate_gradients",
                     "each step runs as one compiled program; gradients need no gating.")
    if aggregation_method is not None:
        warn_ignored("gradients", "aggregation_method",
                     "gradients over several paths are always summed with one AddN.")
    ys = [convert_to_tensor(y) for y in (ys if isinstance(ys, (list, tuple)) else [ys])]
    xs_in = xs if isinstance(xs, (list, tuple)) else [xs]
    xs = [_as_xs(x) for x in xs_in]
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    elif not isinstance(grad_ys, (list, tuple)):
        grad_ys = [grad_ys]
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    stop = set(stop_gradients or [])
    stop = {convert_to_tensor(s) if not isinstance(s, Tensor) else s for s in stop}
    g = ys[0].graph if ys else get_default_graph()

    with g.name_scope(name):
        between = _ops_between(ys, xs, stop)
        grads = _initial_grads(ys, grad_ys)  # tensor -> list of grads
        xset = set(xs)
        for op in sorted(between, key=lambda o: o._id, reverse=True):
            out_grads = [_aggregate(grads.get(o)) for o in op.outputs]
            if all(og is None for og in out_grads):
                continue
            for o, og in zip(op.outputs, out_grads):
                if og is not None:
                    grads[o] = [og]
            fn = get_gradient_function(op)
            if fn is None or not any(_is_diff(t) and t not in stop for t in op.inputs):
                continue
            with g.name_scope(op.name + "_grad"):
                in_grads = _op_input_grads(op, fn, out_grads)
                _add_input_grads(op, in_grads, grads, stop, between, xset)
        return [_x_grad(x, x_in, grads, unconnected_gradients) for x, x_in in zip(xs, xs_in)]


def _ops_between(ys, xs, stop):
    """The ops on a data path from some x to some y that no `stop` tensor cuts."""
    # Ops reachable backward from ys (data edges) ...
    back = set()
    stack = [y.op for y in ys]
    while stack:
        op = stack.pop()
        if op in back:
            continue
        back.add(op)
        for t in op.inputs:
            if t not in stop:
                stack.append(t.op)
    # ... and forward from xs.
    fwd = set()
    stack = [c for x in xs for c in x.consumers()]
    while stack:
        op = stack.pop()
        if op in fwd or op not in back:
            continue
        fwd.add(op)
        for o in op.outputs:
            stack.extend(o.consumers())
    return fwd  # already restricted to back


def _initial_grads(ys, grad_ys):
    """``{y: [grad]}``: `grad_ys`, checked, or ones for each differentiable y."""
    grads = {}
    for i, (y, gy) in enumerate(zip(ys, grad_ys)):
        if gy is None:
            if not _is_diff(y):
                continue
            gy = constant_ops.ones_like(y, name=None)
        else:
            gy = convert_to_tensor(gy, dtype_hint=y.dtype)
            _check_grad_y(i, y, gy)
        grads.setdefault(y, []).append(gy)
    return grads


def _op_input_grads(op, fn, out_grads):
    """The gradients of `op`'s inputs, one per input (None where there is none), from
    its gradient function `fn` (or the generic VJP op) given its outputs' gradients."""
    if fn == "vjp":
        in_grads = _generic_vjp(op, out_grads)
    else:
        filled = [og if og is not None else
                  (constant_ops.zeros_like(o) if o.dtype.is_differentiable else None)
                  for og, o in zip(out_grads, op.outputs)]
        in_grads = fn(op, *filled)
    if isinstance(in_grads, (Tensor, IndexedSlices)) or in_grads is None:
        in_grads = [in_grads]
    in_grads = list(in_grads)
    if len(in_grads) != len(op.inputs):
        raise errors.InvalidArgumentError(
            f"gradient function returned {len(in_grads)} gradients for "
            f"{len(op.inputs)} inputs", op=op)
    return in_grads


def _add_input_grads(op, in_grads, grads, stop, between, xset):
    """Records each input gradient that matters (its input is differentiable, not
    stopped, and lies between xs and ys), dense ones summed back to the input's shape
    and cast to its dtype."""
    for t, gi in zip(op.inputs, in_grads):
        if gi is None or t in stop or not _is_diff(t):
            continue
        if t.op not in between and t not in xset:
            continue
        if isinstance(gi, IndexedSlices):
            grads.setdefault(t, []).append(gi)
            continue
        gi = convert_to_tensor(gi)
        if t.dtype != _dtypes.resource:
            gi = _match_shape(gi, t)
            if gi.dtype != t.dtype and gi.dtype.is_differentiable:
                gi = math_ops.cast(gi, t.dtype)
        grads.setdefault(t, []).append(gi)


def _x_grad(x, x_in, grads, unconnected_gradients):
    """The summed gradient of x; zeros of its shape for an unconnected x with
    ``unconnected_gradients="zero"``, else None."""
    gx = _aggregate(grads.get(x))
    if gx is None and unconnected_gradients == "zero":
        if x.dtype == _dtypes.resource:
            gx = constant_ops.zeros_like(_as_value(x_in))
        else:
            gx = constant_ops.zeros_like(x)
    return gx


def _check_grad_y(i, y, gy):
    """grad_ys[i] must match ys[i] in dtype and shape (TF checks both too)."""
    problem = None
    if gy.dtype != y.dtype:
        problem = f"has dtype {gy.dtype.name}, but ys[{i}] '{y.name}' has dtype {y.dtype.name}"
    elif not y.shape.is_compatible_with(gy.shape):
        problem = f"has shape {gy.shape}, but ys[{i}] '{y.name}' has shape {y.shape}"
    if problem is not None:
        frame = _user_frame()
        where = "" if frame is None else f"\n  called at {frame[0]}:{frame[1]} in {frame[2]}"
        raise errors.InvalidArgumentError(f"gradients: grad_ys[{i}] '{gy.name}' {problem}{where}")


def _as_value(x):
    return x.value() if isinstance(x, Variable) else convert_to_tensor(x)


def _match_shape(gi, t):
    """Sums a broadcast gradient back to `t`'s shape (once, for every op)."""
    gs, ts = gi.shape, t.shape
    if gs.is_fully_defined() and ts.is_fully_defined() and gs == ts:
        return gi
    if gs.rank is not None and ts.rank is not None and gs.rank == ts.rank and all(
            a == b and a is not None for a, b in zip(gs.as_tuple(), ts.as_tuple())):
        return gi
    out = array_ops.sum_to_shape(gi, t)
    return out


def _aggregate(gs):
    if not gs:
        return None
    if len(gs) == 1:
        return gs[0]
    if all(isinstance(g, IndexedSlices) for g in gs):
        return IndexedSlices(array_ops.concat([g.values for g in gs], axis=0),
                             array_ops.concat([g.indices for g in gs], axis=0), gs[0].dense_shape)
    dense = [indexed_slices_to_dense(g) if isinstance(g, IndexedSlices) else g for g in gs]
    return math_ops.add_n(dense)

