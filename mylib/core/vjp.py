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

__all__ = ["VJP", "generic_vjp"]


def _vjp_kernel(*args, forward_type, forward_attrs, n_inputs, diff_mask):
    fwd = get_op_def(forward_type).kernel
    attrs = dict(forward_attrs)
    xs = list(args[:n_inputs])
    cts = args[n_inputs:]
    diff_idx = [i for i, m in enumerate(diff_mask) if m]

    def f(*dx):
        full = list(xs)
        for i, v in zip(diff_idx, dx):
            full[i] = v
        return fwd(*full, **attrs)

    out, vjp = jax.vjp(f, *[xs[i] for i in diff_idx])
    if isinstance(out, (tuple, list)):
        ct = type(out)(jnp.asarray(c, o.dtype) for c, o in zip(cts, out))
    else:
        ct = jnp.asarray(cts[0], out.dtype)
    return tuple(vjp(ct))


VJP = OpDef("VJP", kernel=_vjp_kernel)


@VJP.shape_fn
def _vjp_shape(*specs, forward_type, forward_attrs, n_inputs, diff_mask):
    return [TensorSpec(specs[i].shape, specs[i].dtype) for i in range(n_inputs) if diff_mask[i]]


def generic_vjp(op, out_grads, forward_type=None):
    """The gradients of `op`'s inputs by the VJP op: `jax.vjp` of the kernel of
    `forward_type` (default `op`'s own type), called with `op`'s inputs and attrs."""
    diff_mask = tuple(bool(t.dtype.is_differentiable) for t in op.inputs)
    if not any(diff_mask):
        return [None] * len(op.inputs)
    attrs = tuple(sorted((k, v) for k, v in op.attrs.items() if not k.startswith("_")))
    cts = [g if g is not None else constant_ops.zeros_like(o)
           for g, o in zip(out_grads, op.outputs)]
    res = VJP(*op.inputs, *cts, forward_type=forward_type or op.type, forward_attrs=attrs,
              n_inputs=len(op.inputs), diff_mask=diff_mask, name=None)
    res = list(res) if isinstance(res, tuple) else [res]
    it = iter(res)
    return [next(it) if m else None for m in diff_mask]
