"""`Cast`: converts a tensor to another dtype (TensorFlow's op and `cast`).

It sits below the other ops modules (only the op registry underneath), so the
constant ops can cast (`zeros_like(x, dtype)`); `math_ops.cast` is its public name.
"""

from __future__ import annotations

import jax.numpy as jnp

from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import OpDef, RegisterGradient, TensorSpec, convert_to_tensor

__all__ = ["cast"]


def _cast_kernel(x, *, DstT):
    dt = _dtypes.as_dtype(DstT)
    if dt.is_integer and jnp.issubdtype(x.dtype, jnp.floating):
        x = jnp.trunc(x)  # C-style truncation toward zero, as TensorFlow casts
    return x.astype(dt.np)


Cast = OpDef("Cast", kernel=_cast_kernel)


@Cast.shape_fn
def _cast_shape(x, *, DstT):
    return TensorSpec(x.shape, DstT)


@RegisterGradient("Cast")
def _cast_grad(op, grad):
    src = op.inputs[0].dtype
    if not src.is_differentiable or not grad.dtype.is_differentiable:
        return [None]
    return [cast(grad, src)]


def cast(x, dtype, name=None):
    """Casts `x` to `dtype`; floats to integers truncate toward zero."""
    x = convert_to_tensor(x)
    dt = _dtypes.as_dtype(dtype)
    if x.dtype == dt:
        return x
    return Cast(x, DstT=dt.name, name=name)
