"""The generic VJP op: the gradient of an op type with no registered gradient function
(or of a case its function leaves to it), `jax.vjp` of the op's forward kernel.

`gradients()` calls it for such ops; gradient functions of ops modules (`indexing_ops`,
`control_flow_ops`) call it too, so it sits below them, just above the constant ops.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from mylib.core.op_registry import OpDef, TensorSpec, get_op_def
from mylib.core.ops import constant_ops

__all__ = ["VJP", "apply_vjp", "forward_with_vjp", "generic_vjp", "same_forward"]


def forward_with_vjp(xs, forward_type, forward_attrs, diff_mask):
    """Runs the kernel of `forward_type` on `xs` with `jax.vjp` with respect to the
    inputs `diff_mask` marks. Returns ``(outputs, saved)``; `apply_vjp(saved, cts)`
    gives those inputs' gradients, reusing the forward pass's residuals."""
    fwd = get_op_def(forward_type).kernel
    attrs = dict(forward_attrs)
    xs = list(xs)
    diff_idx = [i for i, m in enumerate(diff_mask) if m]

    def f(*dx):
        full = list(xs)
        for i, v in zip(diff_idx, dx):
            full[i] = v
        return fwd(*full, **attrs)

    out, vjp = jax.vjp(f, *[xs[i] for i in diff_idx])
    return out, (out, vjp)


def apply_vjp(saved, cts):
    """The input gradients of a `forward_with_vjp` call for output cotangents `cts` (one
    per output, cast to the output's dtype)."""
    out, vjp = saved
    if isinstance(out, (tuple, list)):
        ct = type(out)(jnp.asarray(c, o.dtype) for c, o in zip(cts, out))
    else:
        ct = jnp.asarray(cts[0], out.dtype)
    return tuple(vjp(ct))


def _vjp_kernel(*args, forward_type, forward_attrs, n_inputs, diff_mask):
    _, saved = forward_with_vjp(args[:n_inputs], forward_type, forward_attrs, diff_mask)
    return apply_vjp(saved, args[n_inputs:])


VJP = OpDef("VJP", kernel=_vjp_kernel)


@VJP.shape_fn
def _vjp_shape(*specs, forward_type, forward_attrs, n_inputs, diff_mask):
    return [TensorSpec(specs[i].shape, specs[i].dtype) for i in range(n_inputs) if diff_mask[i]]


def generic_vjp(op, out_grads, forward_type=None, extra_attrs=None):
    """The gradients of `op`'s inputs by the VJP op: `jax.vjp` of the kernel of
    `forward_type` (default `op`'s own type), called with `op`'s inputs and attrs (and
    `extra_attrs`, a dict, when the kernel needs more than the op's attrs)."""
    diff_mask = tuple(bool(t.dtype.is_differentiable) for t in op.inputs)
    if not any(diff_mask):
        return [None] * len(op.inputs)
    attrs = {k: v for k, v in op.attrs.items() if not k.startswith("_")}
    attrs.update(extra_attrs or {})
    attrs = tuple(sorted(attrs.items()))
    cts = [g if g is not None else constant_ops.zeros_like(o)
           for g, o in zip(out_grads, op.outputs)]
    res = VJP(*op.inputs, *cts, forward_type=forward_type or op.type, forward_attrs=attrs,
              n_inputs=len(op.inputs), diff_mask=diff_mask, name=None)
    res = list(res) if isinstance(res, tuple) else [res]
    it = iter(res)
    return [next(it) if m else None for m in diff_mask]


def same_forward(vjp_op, op):
    """Whether `vjp_op` (a VJP op) differentiates `op` itself: same op type, the very
    same input tensors and equal attrs. A step holding both can run `op` once with
    `forward_with_vjp` and give `vjp_op` its residuals instead of running it again."""
    a = vjp_op.attrs
    n = a["n_inputs"]
    if op.type != a["forward_type"] or len(op.inputs) != n:
        return False
    if any(x is not y for x, y in zip(op.inputs, vjp_op.inputs[:n])):
        return False
    mine = sorted((k, v) for k, v in op.attrs.items() if not k.startswith("_"))
    theirs = a["forward_attrs"]
    if len(mine) != len(theirs):
        return False
    for (k1, v1), (k2, v2) in zip(mine, theirs):
        if k1 != k2:
            return False
        if v1 is v2:
            continue
        try:
            if not bool(v1 == v2):
                return False
        except Exception:  # array-valued attrs compare elementwise: not the same op
            return False
    return True
