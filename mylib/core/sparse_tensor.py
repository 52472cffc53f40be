"""`SparseTensor` (TensorFlow's COO form) and the TensorFlow 1 operations on it.

A `SparseTensor` is three dense tensors: ``indices`` [n, rank] int64 (the positions of
the stored entries, row-major order), ``values`` [n] and ``dense_shape`` [rank] int64.
It is a Python value holding them, as in TensorFlow: `Session.run` fetches it as a
`SparseTensorValue` and takes one as the feed of a `sparse_placeholder`.

The operations compute with the dense ops of the core: `sparse_tensor_to_dense` scatters
the values into a filled tensor, `sparse_tensor_dense_matmul` and
`embedding_lookup_sparse` gather rows of the dense operand and add them into their
output rows (``tensor_scatter_nd_add``); a ``dense_shape`` fed at run time compiles the
step for each value fed (see the step compiler's sizes from fed values).
"""

from __future__ import annotations

import collections

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.graph import get_default_session, name_scope
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import (array_ops, constant_ops, embedding_ops, indexing_ops, math_ops,
                            reduction_ops,
                            segment_ops, sequence_ops)
from mylib.core.ops.ctc_ops import ctc_loss_dense
from mylib.core.tensor_shape import TensorShape

__all__ = ["SparseTensor", "SparseTensorValue", "sparse_placeholder",
           "sparse_tensor_to_dense", "sparse_to_dense", "sparse_tensor_dense_matmul",
           "sparse_reduce_sum", "sparse_add"]

SparseTensorValue = collections.namedtuple("SparseTensorValue",
                                           ["indices", "values", "dense_shape"])


class SparseTensor:
    """A sparse tensor: `values` at `indices` of a tensor of shape `dense_shape`, zero
    elsewhere (TensorFlow's `tf.SparseTensor`).

    Args:
      indices: int64 [n, rank] (converted), the stored positions in row-major order.
      values: [n], any dtype.
      dense_shape: int64 [rank].
    Raises:
      ValueError: the three do not have ranks 2, 1 and 1.
    """

    def __init__(self, indices, values, dense_shape):
        with name_scope(None, "SparseTensor"):
            self._indices = convert_to_tensor(indices, dtype_hint=_dtypes.int64)
            self._values = convert_to_tensor(values)
            self._dense_shape = convert_to_tensor(dense_shape, dtype_hint=_dtypes.int64)
        if self._indices.dtype != _dtypes.int64:
            self._indices = math_ops.cast(self._indices, _dtypes.int64)
        if self._dense_shape.dtype != _dtypes.int64:
            self._dense_shape = math_ops.cast(self._dense_shape, _dtypes.int64)
        for what, t, rank in (("indices", self._indices, 2), ("values", self._values, 1),
                              ("dense_shape", self._dense_shape, 1)):
            if t.shape.rank is not None and t.shape.rank != rank:
                raise ValueError(f"SparseTensor: `{what}` must have rank {rank}. Received "
                                 f"shape {t.shape}")

    @classmethod
    def from_value(cls, value):
        """A `SparseTensor` of constants from a `SparseTensorValue`."""
        if isinstance(value, SparseTensor):
            return value
        return cls(np.asarray(value.indices, np.int64), np.asarray(value.values),
                   np.asarray(value.dense_shape, np.int64))

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    graph = property(lambda self: self._values.graph)
    op = property(lambda self: self._values.op)

    @property
    def shape(self):
        """The static dense shape: known where ``dense_shape`` is a constant."""
        cv = constant_ops.constant_value(self._dense_shape)
        if cv is not None:
            return TensorShape([int(d) for d in cv])
        n = self._dense_shape.shape.as_list()[0] if self._dense_shape.shape.rank else None
        return TensorShape(None if n is None else [None] * n)

    def get_shape(self):
        return self.shape

    def eval(self, feed_dict=None, session=None):
        """The value in `session` (default: the default session), a
        `SparseTensorValue`."""
        sess = session or get_default_session()
        if sess is None:
            raise ValueError("Cannot evaluate a SparseTensor without a session: pass "
                             "`session=` or use `with sess.as_default():`.")
        return sess.run(self, feed_dict)

    def __repr__(self):
        return (f"SparseTensor(indices={self._indices!r}, values={self._values!r}, "
                f"dense_shape={self._dense_shape!r})")


def convert_to_sparse(value):
    """`value` as a `SparseTensor` (a `SparseTensorValue` becomes constants).

    Raises:
      TypeError: `value` is neither."""
    if isinstance(value, SparseTensor):
        return value
    if isinstance(value, SparseTensorValue):
        return SparseTensor.from_value(value)
    raise TypeError(f"Expected a SparseTensor or SparseTensorValue. Received: "
                    f"{type(value).__name__}")


def sparse_placeholder(dtype, shape=None, name=None):
    """A `SparseTensor` to feed with a `SparseTensorValue` (or an ``(indices, values,
    dense_shape)`` tuple): placeholders for the indices and values, and for the dense
    shape unless `shape` is fully known (then it is a constant that may still be fed).

    Args:
      dtype: the values' dtype.
      shape: optional dense shape (a list with None for unknown sizes) or its rank.
    """
    with name_scope(name, "SparseTensor") as scope:
        rank = None
        if shape is not None:
            shape = TensorShape(shape)
            rank = shape.rank
        indices = array_ops.placeholder(_dtypes.int64, [None, rank], name="indices")
        values = array_ops.placeholder(dtype, [None], name="values")
        if shape is not None and shape.is_fully_defined():
            dense = constant_ops.constant(np.asarray(shape.as_list(), np.int64),
                                          name="shape")
        else:
            dense = array_ops.placeholder(_dtypes.int64, [rank], name="shape")
        del scope
    return SparseTensor(indices, values, dense)


def _dense_shape_i32(sp):
    return math_ops.cast(sp.dense_shape, _dtypes.int32)


def sparse_tensor_to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense tensor of `sp_input`: its values at its indices, `default_value`
    (default 0) elsewhere. Duplicate indices: the last value is kept (TensorFlow
    raises with ``validate_indices``; mylib does not check the order).

    Raises:
      InvalidArgumentError: (from `Session.run`) an index outside the dense shape.
    """
    sp = convert_to_sparse(sp_input)
    with name_scope(name, "SparseToDense"):
        fill = constant_ops.constant(0 if default_value is None else default_value,
                                     dtype=sp.dtype)
        # Scattered into the flat tensor (whose rank is known even where the dense
        # shape's length is not), then reshaped.
        shape = sp.dense_shape
        strides = reduction_ops.cumprod(shape, exclusive=True, reverse=True)
        flat_index = reduction_ops.reduce_sum(sp.indices * array_ops.expand_dims(strides, 0),
                                              axis=1, keepdims=True)
        size = reduction_ops.reduce_prod(math_ops.cast(shape, _dtypes.int32), keepdims=True)
        flat = segment_ops.tensor_scatter_nd_update(
            constant_ops.fill(size, fill), flat_index, sp.values)
        out = array_ops.reshape(flat, math_ops.cast(shape, _dtypes.int32))
    static = sp.shape
    if static.rank is not None:
        out.set_shape(out.shape.merge_with(static))
    return out


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices=True, name=None):
    """TensorFlow 1's older form: `sparse_values` (or one scalar for all) at
    `sparse_indices` ([n, rank], [n] or a scalar) of a dense `output_shape`."""
    idx = convert_to_tensor(sparse_indices)
    if idx.shape.rank in (0, 1):
        idx = array_ops.reshape(idx, [-1, 1])
    vals = convert_to_tensor(sparse_values)
    if vals.shape.rank == 0:
        vals = constant_ops.fill(array_ops.shape(idx)[:1], vals)
    return sparse_tensor_to_dense(SparseTensor(idx, vals, output_shape), default_value,
                                  validate_indices, name=name or "SparseToDense")


def sparse_tensor_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """``sp_a @ b`` for a rank-2 `SparseTensor` `sp_a` [m, k] and a dense `b` [k, n]:
    each stored value times its row of `b`, added into its output row. `adjoint_a` /
    `adjoint_b` transpose (and conjugate) the operands first.

    Returns:
      `Tensor` [m, n] of `b`'s dtype (TensorFlow's `tf.sparse_tensor_dense_matmul`).
    Raises:
      TypeError: an adjoint of a complex operand (not supported).
    """
    sp = convert_to_sparse(sp_a)
    b = convert_to_tensor(b)
    if (adjoint_a or adjoint_b) and (sp.dtype.is_complex or b.dtype.is_complex):
        raise TypeError("sparse_tensor_dense_matmul: adjoints of complex operands are not "
                        "supported (transpose real ones only).")
    with name_scope(name, "SparseTensorDenseMatMul"):
        if adjoint_b:
            b = array_ops.transpose(b)
        rows, cols = sp.indices[:, 0], sp.indices[:, 1]
        m = _dense_shape_i32(sp)[0]
        vals = sp.values
        if adjoint_a:
            rows, cols = cols, rows
            m = _dense_shape_i32(sp)[1]
        picked = indexing_ops.gather(b, cols) * array_ops.expand_dims(vals, 1)
        zeros = constant_ops.fill(array_ops.stack([m, array_ops.shape(b)[1]]),
                                  constant_ops.constant(0, dtype=b.dtype))
        out = segment_ops.tensor_scatter_nd_add(zeros, array_ops.expand_dims(rows, 1), picked)
    static_m = sp.shape.as_list()[1 if adjoint_a else 0] if sp.shape.rank else None
    out.set_shape([static_m, b.shape.as_list()[1] if b.shape.rank else None])
    return out


def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None,
                      keep_dims=None, name=None):
    """The sum of the entries of `sp_input` over `axis` (all by default), as a dense
    tensor (TensorFlow's `tf.sparse.reduce_sum`)."""
    axis = axis if axis is not None else reduction_axes
    keep = bool(keepdims if keepdims is not None else keep_dims)
    dense = sparse_tensor_to_dense(sp_input)
    return reduction_ops.reduce_sum(dense, axis=axis, keepdims=keep, name=name)


def sparse_add(a, b, threshold=0, thresh=None, name=None):
    """`a + b` where one operand is a `SparseTensor` and the other dense: a dense
    tensor. (The sum of two `SparseTensor`s, a `SparseTensor` in TensorFlow, is not
    provided: convert one with `sparse_tensor_to_dense`.)

    Raises:
      NotImplementedError: both operands are sparse.
    """
    sa = isinstance(a, (SparseTensor, SparseTensorValue))
    sb = isinstance(b, (SparseTensor, SparseTensorValue))
    if sa and sb:
        raise NotImplementedError("sparse_add of two SparseTensors: convert one with "
                                  "sparse_tensor_to_dense (the sum is then dense).")
    if not (sa or sb):
        return math_ops.add(a, b, name=name)
    sp, dense = (a, b) if sa else (b, a)
    sp = convert_to_sparse(sp)
    dense = convert_to_tensor(dense, dtype=sp.dtype)
    with name_scope(name, "SparseAdd"):
        idx = sp.indices
        if dense.shape.rank is not None:  # the index width, static for the scatter
            idx = array_ops.reshape(idx, [-1, dense.shape.rank])
        return segment_ops.tensor_scatter_nd_add(dense, idx, sp.values)


def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy="mod", name=None,
                            combiner=None, max_norm=None):
    """For each row r of `sp_ids` (a [batch, k] `SparseTensor` of ids), the combination
    of the embeddings ``params[id]`` of its ids, weighted by `sp_weights`' values (None:
    weight 1): ``"sum"``, ``"mean"`` (default; divided by the sum of weights) or
    ``"sqrtn"`` (divided by the root of the sum of squared weights).

    Returns:
      `Tensor` [dense_shape[0], dim]. Differs from TensorFlow: rows without ids are
      zeros, including trailing ones (TensorFlow's output stops at the last row that
      has an id).
    Raises:
      ValueError: an unknown `combiner`.
    """
    combiner = combiner or "mean"
    if combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum'. Received: "
                         f"{combiner!r}")
    sp = convert_to_sparse(sp_ids)
    with name_scope(name, "embedding_lookup_sparse"):
        emb = embedding_ops.embedding_lookup(params, sp.values,
                                             partition_strategy=partition_strategy,
                                             max_norm=max_norm)
        rows = array_ops.expand_dims(sp.indices[:, 0], 1)
        if sp_weights is not None:
            w = math_ops.cast(convert_to_sparse(sp_weights).values, emb.dtype)
        else:
            w = constant_ops.ones_like(math_ops.cast(sp.values, emb.dtype))
        batch = _dense_shape_i32(sp)[0]
        dim = array_ops.shape(emb)[1]
        zero = constant_ops.constant(0, dtype=emb.dtype)
        total = segment_ops.tensor_scatter_nd_add(
            constant_ops.fill(array_ops.stack([batch, dim]), zero), rows,
            emb * array_ops.expand_dims(w, 1))
        if combiner == "sum":
            out = total
        else:
            ww = w if combiner == "mean" else w * w
            norm = segment_ops.tensor_scatter_nd_add(
                constant_ops.fill(array_ops.expand_dims(batch, 0), zero), rows, ww)
            if combiner == "sqrtn":
                norm = math_ops.sqrt(norm)
            out = sequence_ops.div_no_nan(total, array_ops.expand_dims(norm, 1))
    out.set_shape([sp.shape.as_list()[0] if sp.shape.rank else None,
                   emb.shape.as_list()[1] if emb.shape.rank else None])
    return out


def ctc_loss(labels, inputs=None, sequence_length=None, preprocess_collapse_repeated=False,
             ctc_merge_repeated=True, ignore_longer_outputs_than_inputs=False,
             time_major=True, logits=None):
    """TensorFlow 1's `tf.nn.ctc_loss` (Graves et al. 2006): the negative log
    probability of each label sequence.

    Args:
      labels: int32 `SparseTensor` [batch, max_label_length], row b holding label b's
        class ids in order (the blank is the last class, ``num_classes - 1``).
      inputs: float [max_time, batch, num_classes] unnormalized scores
        ([batch, max_time, num_classes] if not `time_major`); `logits` is its TF2 name.
      sequence_length: int [batch], each sequence's valid steps.
    Returns:
      `Tensor` [batch]: ``-log p(labels | inputs)``.
    Raises:
      NotImplementedError: ``preprocess_collapse_repeated=True`` or
        ``ctc_merge_repeated=False`` (other forms of CTC than the standard one).
    """
    if preprocess_collapse_repeated or not ctc_merge_repeated:
        raise NotImplementedError("ctc_loss: only the standard CTC "
                                  "(preprocess_collapse_repeated=False, "
                                  "ctc_merge_repeated=True) is provided.")
    x = convert_to_tensor(inputs if inputs is not None else logits)
    sp = convert_to_sparse(labels)
    with name_scope(None, "CTCLoss"):
        if time_major:
            x = array_ops.transpose(x, [1, 0, 2])
        dense = sparse_tensor_to_dense(sp)
        batch = _dense_shape_i32(sp)[0]
        ones = constant_ops.ones_like(math_ops.cast(sp.indices[:, 0], _dtypes.int32))
        lengths = segment_ops.tensor_scatter_nd_add(
            constant_ops.fill(array_ops.expand_dims(batch, 0),
                              constant_ops.constant(0, dtype=_dtypes.int32)),
            array_ops.expand_dims(sp.indices[:, 0], 1), ones)
        classes = x.shape.as_list()[-1]
        if classes is None:
            raise ValueError("ctc_loss: the number of classes (last axis of the inputs) "
                             "must be known when the graph is built.")
        return ctc_loss_dense(dense, x, lengths, sequence_length, blank_index=classes - 1)
