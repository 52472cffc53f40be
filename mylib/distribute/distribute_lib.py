"""The strategy API: `Strategy`, `ReplicaContext`, `ReduceOp`, `get_strategy`.

A strategy plugs in through two declared interfaces and nothing else:
- the variable-creator stack (`mylib.core.variables.variable_creator_scope`): variables
  created under `strategy.scope()` are marked as the strategy's;
- the runtime's `ExecutionPolicy` (`mylib.runtime.policy`): `strategy.extended` is one,
  registered for the graph of the strategy's first variable (`set_policy`); the Session,
  optimizers and `fit` ask it for the layout of a step's inputs and outputs, where a step
  runs, and how variable values are read and written.
Neither the core nor the runtime imports this package.
"""

from __future__ import annotations

import contextlib
import threading

from mylib.core.graph import Graph, get_default_graph
from mylib.core.variables import variable_creator_scope
from mylib.runtime.policy import ExecutionPolicy, get_policy, set_policy
from mylib.core.ops import math_ops
from mylib.core.ops import array_ops


class ReduceOp:
    """How `Strategy.reduce` and `ReplicaContext.all_reduce` combine replica values."""

    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def check(op):
        op = getattr(op, "value", op)
        if op not in (ReduceOp.SUM, ReduceOp.MEAN):
            raise ValueError(f"Unknown reduce op {op!r}: expected ReduceOp.SUM or ReduceOp.MEAN")
        return op


class PerReplica:
    """Values of one tensor on each replica, as `Strategy.run` returns them.

    Attributes:
      values: tuple, one `Tensor` (or structure) per replica.
    """

    def __init__(self, values):
        self.values = tuple(values)

    def __repr__(self):
        return f"PerReplica({list(self.values)!r})"


_local = threading.local()


def _stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def get_strategy():
    """The strategy of the innermost `strategy.scope()` (the default strategy, which
    runs on one device, outside any scope)."""
    s = _stack()
    return s[-1] if s else _default_strategy()


def has_strategy():
    """Whether code runs inside some `strategy.scope()`."""
    return bool(_stack())


def get_replica_context():
    """The `ReplicaContext` inside `Strategy.run`; outside it, the default strategy's
    single-replica context when no strategy scope is active, else None (cross-replica
    context), as in TensorFlow."""
    ctx = getattr(_local, "replica_ctx", None)
    if ctx is not None:
        return ctx
    if not has_strategy():
        return ReplicaContext(_default_strategy(), 0)
    return None


def in_cross_replica_context():
    return has_strategy() and getattr(_local, "replica_ctx", None) is None


class ReplicaContext:
    """The context of one replica inside `Strategy.run`.

    Attributes:
      strategy: the running `Strategy`.
      replica_id_in_sync_group: this replica's index, 0..num_replicas_in_sync-1.
    """

    def __init__(self, strategy, replica_id, run=None):
        self.strategy = strategy
        self.replica_id_in_sync_group = replica_id
        self._run = run

    @property
    def num_replicas_in_sync(self):
        return self.strategy.num_replicas_in_sync

    def all_reduce(self, reduce_op, value):
        """Combines `value` (a tensor or a nested structure of tensors) across all
        replicas; every replica gets the result. Must be called by all replicas."""
        reduce_op = ReduceOp.check(reduce_op)
        if self._run is None:
            return value
        return self._run.all_reduce(self.replica_id_in_sync_group, reduce_op, value)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Calls `merge_fn(strategy, *per_replica_args)` once in cross-replica context,
        with each argument gathered as a `PerReplica` from all replicas."""
        if self._run is None:
            return merge_fn(self.strategy, *args, **(kwargs or {}))
        return self._run.merge_call(self.replica_id_in_sync_group, merge_fn, args,
                                    kwargs or {})


class StrategyExtended(ExecutionPolicy):
    """The strategy's machinery (TensorFlow's `strategy.extended`), and its
    `ExecutionPolicy`."""

    def __init__(self, strategy):
        self._strategy = strategy

    @contextlib.contextmanager
    def colocate_vars_with(self, colocate_with_variable):
        """Variables created in this context sit with `colocate_with_variable`."""
        g = get_default_graph()
        with g.colocate_with(colocate_with_variable.op):
            yield

    @property
    def worker_devices(self):
        return tuple(self._strategy._device_names)

    @property
    def parameter_devices(self):
        return tuple(self._strategy._device_names)

    @property
    def should_checkpoint(self):
        """Whether this process writes checkpoints (TensorFlow's name)."""
        return self.is_chief()

    @property
    def should_save_summary(self):
        """Whether this process writes summaries (TensorFlow's name)."""
        return self.is_chief()


class Strategy:
    """A way of running one model on several devices or machines.

    Use::

        strategy = ml.distribute.MirroredStrategy()
        with strategy.scope():
            model = make_model()          # variables created here are the strategy's
            model.compile(...)
        model.fit(x, y, batch_size=64)     # 64 is the global batch, split across replicas
    """

    def __init__(self, extended=None):
        self._extended = extended or StrategyExtended(self)
        self._device_names = ["/device:CPU:0"]

    @property
    def extended(self):
        return self._extended

    @property
    def num_replicas_in_sync(self):
        return 1

    @contextlib.contextmanager
    def scope(self):
        """Variables (and models, optimizers, metrics) created here are distributed by
        this strategy. Nesting different strategies raises ValueError.

        A graph runs under one strategy. When the default graph already runs under
        another one (a notebook cell that makes a new strategy and builds its model
        again), the scope builds into a graph of this strategy's own instead (made
        once, re-entered by later scopes), as Keras 3 needs no `clear_session` there;
        an empty graph, or one of this strategy, is used as is."""
        stack = _stack()
        if stack and stack[-1] is not self:
            raise ValueError(
                f"Mixing different strategies: already in the scope of {stack[-1]!r}")
        current = get_policy(get_default_graph())
        graph_ctx = contextlib.nullcontext()
        if current is not None and current is not self._extended:
            if getattr(self, "_own_graph", None) is None:
                self._own_graph = Graph()
            graph_ctx = self._own_graph.as_default()
        stack.append(self)
        try:
            with graph_ctx, variable_creator_scope(self._create_variable):
                yield self
        finally:
            stack.pop()

    def _create_variable(self, next_creator, **kwargs):
        v = next_creator(**kwargs)
        try:
            set_policy(v.graph, self._extended)
        except ValueError:
            raise ValueError(
                f"Variable '{v.name}' is created under {self!r}, but its graph already "
                "holds variables of another strategy; use one strategy per graph/model.") \
                from None
        v._distribute_strategy = self
        return v

    # --- replica-level computation ---
    def run(self, fn, args=(), kwargs=None):
        """Runs `fn(*args, **kwargs)` on each replica; returns a `PerReplica` (or the
        value itself with one replica). Arguments that are `PerReplica` give each
        replica its own value; `DistributedValues` from `experimental_distribute_dataset`
        are split along the batch."""
        return fn(*args, **(kwargs or {}))

    def reduce(self, reduce_op, value, axis=None):
        """Combines a `PerReplica` value across replicas (and over `axis` of each
        value if given: the global reduction over the batch)."""
        from mylib.core.ops import math_ops, reduction_ops

        reduce_op = ReduceOp.check(reduce_op)
        values = value.values if isinstance(value, PerReplica) else (value,)
        if axis is not None:
            if reduce_op == ReduceOp.MEAN:
                sums = [reduction_ops.reduce_sum(v, axis=axis) for v in values]
                counts = [_count(v, axis) for v in values]
                return math_ops.add_n(sums) / math_ops.add_n(counts) if len(values) > 1 \
                    else sums[0] / counts[0]
            values = [reduction_ops.reduce_sum(v, axis=axis) for v in values]
        total = values[0] if len(values) == 1 else math_ops.add_n(list(values))
        if reduce_op == ReduceOp.MEAN and axis is None:
            total = total / float(len(values))
        return total

    def gather(self, value, axis):
        """Concatenates a `PerReplica` value's replicas along `axis`."""

        values = value.values if isinstance(value, PerReplica) else (value,)
        return values[0] if len(values) == 1 else array_ops.concat(list(values), axis=axis)

    def experimental_local_results(self, value):
        return value.values if isinstance(value, PerReplica) else (value,)

    def experimental_distribute_dataset(self, dataset, options=None):
        """Batches of `dataset` are global batches; a compiled step splits each along
        the batch across the replicas (so the dataset is returned as is)."""
        return dataset

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """Calls `dataset_fn(InputContext)`; its batches are the global batches."""
        return dataset_fn(InputContext(1, 0, self.num_replicas_in_sync))

    def __repr__(self):
        return f"<{type(self).__name__} with {self.num_replicas_in_sync} replica(s)>"


def _count(v, axis):

    shape = array_ops.shape(v)
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    n = None
    for a in axes:
        d = math_ops.cast(shape[a], v.dtype)
        n = d if n is None else n * d
    return n


class InputContext:
    """What `distribute_datasets_from_function`'s function learns about the input
    pipeline: `num_input_pipelines`, `input_pipeline_id`, `num_replicas_in_sync`."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size):
        """Raises ValueError if the global batch does not divide evenly."""
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(
                f"The global batch size ({global_batch_size}) must be divisible by the "
                f"number of replicas ({self.num_replicas_in_sync}).")
        return global_batch_size // self.num_replicas_in_sync


_DEFAULT = None


def _default_strategy():
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Strategy()
    return _DEFAULT

