"""Variable partitioners and `ShardedVariable` (TensorFlow's
`tf.distribute.experimental.partitioners` and `ShardedVariable`).

A partitioner is called as ``partitioner(shape, dtype)`` and returns the number of
partitions per axis, e.g. ``[3, 1]``: only the first axis is ever split.
"""

from __future__ import annotations

import math

from mylib.core import dtypes as _dtypes
from mylib.core.tensor_shape import as_shape
from mylib.core.ops import array_ops
from mylib.core.ops import embedding_ops
from mylib.core.op_registry import convert_to_tensor


def _first_dim(shape, who):
    shape = as_shape(shape)
    if shape.rank is None or shape.rank == 0:
        return None
    d = shape.as_list()[0]
    if d is None:
        raise ValueError(f"{who}: cannot partition a variable whose first dimension is "
                         f"unknown (shape {shape})")
    return d


def _bytes_per_row(shape, dtype, bytes_per_string):
    dims = as_shape(shape).as_list()[1:]
    if any(d is None for d in dims):
        raise ValueError(f"cannot partition a variable of partially known shape {shape}")
    dt = _dtypes.as_dtype(dtype)
    item = bytes_per_string if dt.name == "string" else dt.size
    return item * int(math.prod(dims))


class Partitioner:
    """Base class: ``partitioner(shape, dtype) -> [num_partitions_per_axis]``."""

    def __call__(self, shape, dtype):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `__call__` (abstract in the base class)")


class FixedShardsPartitioner(Partitioner):
    """Splits the first axis into `num_shards` (fewer if the axis is shorter).

    Raises:
      ValueError: `num_shards` < 1.
    """

    def __init__(self, num_shards):
        if not isinstance(num_shards, int) or num_shards < 1:
            raise ValueError(f"FixedShardsPartitioner: num_shards must be an int >= 1, got "
                             f"{num_shards!r}")
        self.num_shards = num_shards

    def __call__(self, shape, dtype):
        d = _first_dim(shape, "FixedShardsPartitioner")
        if d is None:
            return [1] * max(as_shape(shape).rank or 0, 0)
        return [max(1, min(self.num_shards, d))] + [1] * (len(as_shape(shape)) - 1)


class MinSizePartitioner(Partitioner):
    """As many shards as keep each at least `min_shard_bytes` (bytes), at most
    `max_shards` and at most one per row.

    Raises:
      ValueError: `min_shard_bytes` < 1 or `max_shards` < 1.
    """

    def __init__(self, min_shard_bytes=256 << 10, max_shards=1, bytes_per_string=16):
        if min_shard_bytes < 1:
            raise ValueError(f"MinSizePartitioner: min_shard_bytes must be >= 1, got "
                             f"{min_shard_bytes}")
        if max_shards < 1:
            raise ValueError(f"MinSizePartitioner: max_shards must be >= 1, got {max_shards}")
        self.min_shard_bytes = min_shard_bytes
        self.max_shards = max_shards
        self.bytes_per_string = bytes_per_string

    def __call__(self, shape, dtype):
        d = _first_dim(shape, "MinSizePartitioner")
        if d is None:
            return [1] * max(as_shape(shape).rank or 0, 0)
        total = d * _bytes_per_row(shape, dtype, self.bytes_per_string)
        n = max(1, min(d, self.max_shards, total // self.min_shard_bytes))
        return [int(n)] + [1] * (len(as_shape(shape)) - 1)


class MaxSizePartitioner(Partitioner):
    """The fewest shards that keep each at most `max_shard_bytes` (bytes; a shard is at
    least one row), capped by `max_shards`.

    Raises:
      ValueError: `max_shard_bytes` < 1 or `max_shards` < 1.
    """

    def __init__(self, max_shard_bytes, max_shards=None, bytes_per_string=16):
        if max_shard_bytes < 1:
            raise ValueError(f"MaxSizePartitioner: max_shard_bytes must be >= 1, got "
                             f"{max_shard_bytes}")
        if max_shards is not None and max_shards < 1:
            raise ValueError(f"MaxSizePartitioner: max_shards must be >= 1, got {max_shards}")
        self.max_shard_bytes = max_shard_bytes
        self.max_shards = max_shards
        self.bytes_per_string = bytes_per_string

    def __call__(self, shape, dtype):
        d = _first_dim(shape, "MaxSizePartitioner")
        if d is None:
            return [1] * max(as_shape(shape).rank or 0, 0)
        row = _bytes_per_row(shape, dtype, self.bytes_per_string)
        rows_per_shard = max(1, self.max_shard_bytes // max(row, 1))
        n = math.ceil(d / rows_per_shard)
        if self.max_shards is not None:
            n = min(n, self.max_shards)
        return [max(1, int(n))] + [1] * (len(as_shape(shape)) - 1)


def shard_sizes(total, n):
    """Rows per shard when `total` rows are split into `n` (the first ``total % n``
    shards get one more: TensorFlow's rule)."""
    base, extra = divmod(total, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


class ShardedVariable:
    """One logical variable stored as `variables` (shards along axis 0, each a
    `Variable` on its own parameter server).

    It behaves as one variable: used as a tensor it is the concatenation of its
    shards; `assign`/`assign_add`/`assign_sub` split the value; `sparse_read` and
    `nn.embedding_lookup` gather only the rows they need from the shards holding them;
    saving writes the whole value under the logical name, so a checkpoint written with
    2 shards restores into 3.

    Attributes:
      variables: the shard `Variable`s, in order.
      name: ``"<name>:0"``; shape: the full shape; dtype; trainable.
    """

    def __init__(self, variables, name):
        self.variables = list(variables)
        self._name = name
        first = self.variables[0]
        rows = [v.shape.as_list()[0] for v in self.variables]
        self._offsets = [sum(rows[:i]) for i in range(len(rows))]
        self._shape = as_shape([sum(rows)] + first.shape.as_list()[1:])
        self._dtype = first.dtype
        for i, v in enumerate(self.variables):
            v._save_slice_info = (name, self._shape.as_list(), self._offsets[i])
            v._sharded_parent = self

    # --- properties ---
    @property
    def name(self):
        return self._name + ":0"

    @property
    def shape(self):
        return self._shape

    def get_shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def trainable(self):
        return self.variables[0].trainable

    @property
    def graph(self):
        return self.variables[0].graph

    @property
    def constraint(self):
        return None

    @property
    def initializer(self):

        return array_ops.group(*[v.initializer for v in self.variables],
                               name=f"{self._name}/initializer")

    @property
    def op(self):
        return self.variables[0].op

    @property
    def device(self):
        return self.variables[0].device

    # --- reads ---
    def value(self):

        g = self.graph
        with g.as_default():
            parts = [v.value() for v in self.variables]
            return parts[0] if len(parts) == 1 else array_ops.concat(parts, axis=0)

    def read_value(self):
        return self.value()

    def _as_tensor(self, dtype=None, name=None):
        t = self.value()
        if dtype is not None and t.dtype != _dtypes.as_dtype(dtype):
            raise ValueError(f"ShardedVariable '{self._name}' has dtype {t.dtype.name}; "
                             f"requested {_dtypes.as_dtype(dtype).name}")
        return t

    def _as_graph_element(self):
        """The tensor a fetch of the variable runs (one concatenation, built once)."""
        t = getattr(self, "_fetch_tensor", None)
        if t is None:
            t = self._fetch_tensor = self.value()
        return t

    def sparse_read(self, indices, name=None):
        """Rows `indices` of the logical value, gathered from the shards holding them."""

        return embedding_ops.embedding_lookup(self, indices, name=name)

    # --- writes ---
    def _split(self, value):
        from mylib.core.ops import indexing_ops

        value = convert_to_tensor(value, dtype_hint=self._dtype)
        rows = [v.shape.as_list()[0] for v in self.variables]
        return [indexing_ops.strided_slice(value, [o], [o + r], [1])
                for o, r in zip(self._offsets, rows)]

    def _update(self, method, value, read_value, name):

        g = self.graph
        with g.as_default():
            parts = self._split(value)
            ops = [getattr(v, method)(p, read_value=False) for v, p in zip(self.variables, parts)]
            grp = array_ops.group(*ops, name=name or f"{self._name}/{method}")
            if not read_value:
                return grp
            with g.control_dependencies([grp]):
                return self.value()

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return self._update("assign", value, read_value, name)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return self._update("assign_add", delta, read_value, name)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return self._update("assign_sub", delta, read_value, name)

    def __repr__(self):
        return (f"<ml.ShardedVariable '{self.name}' shape={self._shape} "
                f"dtype={self._dtype.name} shards={len(self.variables)}>")

    # Arithmetic as on a tensor.
    def __add__(self, o):
        return self._as_tensor() + o

    def __radd__(self, o):
        return o + self._as_tensor()

    def __sub__(self, o):
        return self._as_tensor() - o

    def __mul__(self, o):
        return self._as_tensor() * o

    def __rmul__(self, o):
        return o * self._as_tensor()

    def __matmul__(self, o):
        return self._as_tensor() @ o

    def __rmatmul__(self, o):
        return o @ self._as_tensor()

    def __neg__(self):
        return -self._as_tensor()

    def __getitem__(self, idx):
        return self._as_tensor()[idx]


def expand_sharded(variables):
    """`variables` with each `ShardedVariable` replaced by its shards."""
    out = []
    for v in variables:
        if isinstance(v, ShardedVariable):
            out.extend(v.variables)
        else:
            out.append(v)
    return out
