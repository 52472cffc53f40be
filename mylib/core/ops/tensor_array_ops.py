"""`TensorArray`: TensorFlow's array of tensors for loops, over one dense buffer.

TensorFlow's TensorArray is a resource with its own ops. Here it is a value: a buffer
`[size, *element_shape]` that `write` updates with `tensor_scatter_nd_update` and `read`
reads with `gather`, so it is an ordinary loop variable of the functional `while_loop`
(it is a JAX pytree node with the buffer as its one leaf) and gradients flow through
the ops it is made of.
"""

from __future__ import annotations

import jax
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.graph import get_default_graph
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, indexing_ops
from mylib.core.ops.cast_ops import cast
from mylib.core.ops.constant_ops import constant, constant_value, zeros
from mylib.core.ops.segment_ops import tensor_scatter_nd_update
from mylib.core.tensor_shape import as_shape

__all__ = ["TensorArray"]


class TensorArray:
    """A fixed-size array of tensors of one dtype and shape, written and read by index,
    as TensorFlow's `tf.TensorArray` in a `while_loop`::

        ta = tf.TensorArray(tf.float32, size=n, element_shape=[batch, units])
        def body(t, ta):
            return t + 1, ta.write(t, f(t))
        _, ta = tf.while_loop(lambda t, ta: t < n, body, [0, ta])
        out = ta.stack()                                  # [n, batch, units]

    Args:
      dtype: the elements' dtype.
      size: Python int (or constant) number of elements.
      dynamic_size: must be False/None; a growing array has a data-dependent shape,
        which XLA cannot compile.
      element_shape: the elements' shape. Needed when the first write happens inside
        a `while_loop` (the buffer must exist before the loop); otherwise taken from
        the first `write` or from `unstack`.
      clear_after_read, infer_shape, tensor_array_name, colocate_with_first_write_call,
        name: accepted for TensorFlow compatibility (reads never clear here).

    Differs from TensorFlow: `write`, `unstack` and `scatter` return the new array and
    leave the old one as it was (TensorFlow's programs use the returned value anyway);
    reading an element that was never written gives zeros (TensorFlow raises).

    Raises:
      UnimplementedError: for `dynamic_size=True` or a size unknown when the graph is
        built; for a first write inside a loop without `element_shape`.
    """

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        if dynamic_size:
            raise errors.UnimplementedError(
                "TensorArray(dynamic_size=True): a growing array has a data-dependent "
                "shape, which XLA cannot compile; give a static `size` (e.g. the maximum "
                "number of steps) or build the sequence with ml.scan / ml.map_fn")
        if size is None:
            raise ValueError("TensorArray: `size` is required")
        if hasattr(size, "op"):
            cv = constant_value(size)
            if cv is None:
                raise errors.UnimplementedError(
                    "TensorArray: `size` must be known when the graph is built (XLA needs "
                    "static shapes); pass a Python int")
            size = cv
        self._dtype = _dtypes.as_dtype(dtype)
        self._size = int(size)
        self._graph = get_default_graph()
        self._buffer = None
        self._element_shape = None
        if element_shape is not None:
            es = as_shape(element_shape)
            if es.rank is not None and None not in es.as_list():
                self._element_shape = tuple(es.as_list())
                self._buffer = zeros([self._size, *self._element_shape], self._dtype)

    # -- pytree: the buffer is the one leaf
    def _replace(self, buffer):
        new = object.__new__(TensorArray)
        new._dtype, new._size, new._graph = self._dtype, self._size, self._graph
        new._buffer = buffer
        shape = getattr(buffer, "shape", None)
        new._element_shape = (tuple(as_shape(shape).as_list()[1:]) if shape is not None
                              else self._element_shape)
        return new

    @property
    def dtype(self):
        return self._dtype

    @property
    def element_shape(self):
        return as_shape(self._element_shape) if self._element_shape is not None else \
            as_shape(None)

    def size(self, name=None):
        """The number of elements, an int32 scalar."""
        return constant(np.int32(self._size), name=name or "TensorArraySize")

    def _need_buffer(self, what):
        if self._buffer is None:
            raise errors.FailedPreconditionError(
                f"TensorArray.{what}: nothing has been written yet (and no element_shape "
                "was given), so the elements' shape is unknown")
        return self._buffer

    def _value(self, value):
        v = convert_to_tensor(value, dtype_hint=self._dtype)
        if v.dtype != self._dtype:
            raise errors.InvalidArgumentError(
                f"TensorArray of dtype {self._dtype.name} cannot hold a value of dtype "
                f"{v.dtype.name}")
        return v

    def write(self, index, value, name=None):
        """A new array with element `index` set to `value` (of the array's dtype and
        element shape)."""
        v = self._value(value)
        buf = self._buffer
        if buf is None:
            if get_default_graph() is not self._graph:
                raise errors.UnimplementedError(
                    "TensorArray.write: the first write is inside a loop, but the array "
                    "has no element_shape, so its buffer cannot be a loop variable; create "
                    "it with TensorArray(dtype, size, element_shape=[...])")
            shape = v.shape.as_list() if v.shape.rank is not None else None
            if shape is None or None in shape:
                raise errors.UnimplementedError(
                    f"TensorArray.write: the element shape {v.shape} must be fully known; "
                    "give element_shape= when creating the array")
            buf = zeros([self._size, *shape], self._dtype)
        idx = array_ops.reshape(cast(convert_to_tensor(index), _dtypes.int32), [1, 1])
        return self._replace(tensor_scatter_nd_update(buf, idx, array_ops.expand_dims(v, 0),
                                                      name=name))

    def read(self, index, name=None):
        """Element `index` (zeros if it was never written)."""
        return indexing_ops.gather(self._need_buffer("read"), index, name=name)

    def gather(self, indices, element_shape=None, name=None):
        """The elements at `indices`, stacked: [len(indices), *element_shape]."""
        return indexing_ops.gather(self._need_buffer("gather"), indices, name=name)

    def stack(self, name=None):
        """All elements stacked: [size, *element_shape]."""
        return array_ops.identity(self._need_buffer("stack"), name=name)

    def concat(self, name=None):
        """All elements concatenated along their first axis."""
        buf = self._need_buffer("concat")
        s = buf.shape.as_list()
        return array_ops.reshape(buf, [s[0] * s[1], *s[2:]], name=name)

    def unstack(self, value, name=None):
        """A new array whose elements are the rows of `value` [size, ...]."""
        v = self._value(value)
        n = v.shape.as_list()[0] if v.shape.rank else None
        if n is not None and n != self._size:
            raise errors.InvalidArgumentError(
                f"TensorArray.unstack: value has {n} rows, the array's size is {self._size}")
        return self._replace(array_ops.identity(v, name=name))

    def scatter(self, indices, value, name=None):
        """A new array with the rows of `value` written at `indices`."""
        v = self._value(value)
        buf = self._buffer
        if buf is None:
            buf = zeros([self._size, *v.shape.as_list()[1:]], self._dtype)
        idx = array_ops.reshape(cast(convert_to_tensor(indices), _dtypes.int32), [-1, 1])
        return self._replace(tensor_scatter_nd_update(buf, idx, v, name=name))

    def close(self, name=None):
        """Nothing to release here; a no-op."""
        return array_ops.no_op(name=name)

    def __repr__(self):
        return (f"TensorArray(dtype={self._dtype.name}, size={self._size}, "
                f"element_shape={self._element_shape})")


def _flatten(ta):
    children = () if ta._buffer is None else (ta._buffer,)
    return children, (ta._dtype, ta._size, ta._element_shape)


def _unflatten(aux, children):
    new = object.__new__(TensorArray)
    new._dtype, new._size, new._element_shape = aux
    new._buffer = children[0] if children else None
    # inside a loop body: the graph being built; a first write there has no buffer
    new._graph = getattr(new._buffer, "graph", None)
    return new


jax.tree_util.register_pytree_node(TensorArray, _flatten, _unflatten)
