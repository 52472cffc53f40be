"""`IndexedSlices`: a sparse gradient (rows of a dense tensor), and its conversion to a
dense tensor (the `IndexedSlicesToDense` op).

Gradients of gathers are `IndexedSlices` so that sparse updates stay sparse. The ops
modules that make them (`indexing_ops`, `state_ops`) import this module, which sits just
above the constant ops; `mylib.core.gradients.IndexedSlices` is the same class.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from mylib.core.op_registry import OpDef, TensorSpec
from mylib.core.ops import constant_ops
from mylib.core.tensor_shape import TensorShape

__all__ = ["IndexedSlices", "indexed_slices_to_dense"]


class IndexedSlices:
    """A sparse gradient: rows `indices` of a tensor of shape `dense_shape` hold
    `values`; rows not named are zero, a row named twice sums.

    Attributes:
      values: `Tensor` [n, ...].
      indices: `Tensor` [n] of int32/int64.
      dense_shape: `Tensor` [rank] int, the full shape.
    """

    def __init__(self, values, indices, dense_shape=None):
        self.values = values
        self.indices = indices
        self.dense_shape = dense_shape

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self):
        if self.dense_shape is not None:
            cv = constant_ops.constant_value(self.dense_shape)
            if cv is not None:
                return TensorShape([int(d) for d in cv])
        return self.values.shape

    @property
    def graph(self):
        return self.values.graph

    @property
    def name(self):
        return self.values.name

    @property
    def op(self):
        return self.values.op

    def _as_tensor(self):
        return indexed_slices_to_dense(self)

    def __repr__(self):
        return (f"IndexedSlices(values={self.values.name}, indices={self.indices.name}, "
                f"dense_shape={None if self.dense_shape is None else self.dense_shape.name})")


def _slices_to_dense_kernel(values, indices, dense_shape):
    shape = tuple(int(d) for d in np.asarray(dense_shape))
    return jnp.zeros(shape, values.dtype).at[indices].add(values)


IndexedSlicesToDense = OpDef("IndexedSlicesToDense", kernel=_slices_to_dense_kernel)


@IndexedSlicesToDense.shape_fn
def _slices_to_dense_shape(values, indices, dense_shape):
    n = dense_shape.shape[0] if dense_shape.shape.rank else None
    return TensorSpec(TensorShape(None) if n is None else [None] * n, values.dtype)


# Its gradient (a gather of `grad` at `indices`) is registered in `indexing_ops`, beside
# `GatherV2`, which sits above this module.


def indexed_slices_to_dense(s):
    out = IndexedSlicesToDense(s.values, s.indices, s.dense_shape)
    out._shape = s.shape
    return out
