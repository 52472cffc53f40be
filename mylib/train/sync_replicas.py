"""`SyncReplicasOptimizer` and `replica_device_setter`: TensorFlow 1's synchronous
replicas and parameter-server placement, mapped onto `ParameterServerStrategy`.

TensorFlow 1 builds synchronous training by hand: gradient accumulators on the
parameter servers, a token queue, and a chief queue runner. mylib's
`ParameterServerStrategy(replicas_to_aggregate=m)` already applies, per step, the mean
of the first m of the workers' gradients (the rest are backup workers, Chen et al.
2016), so `SyncReplicasOptimizer` checks that the strategy of the graph is configured
that way and otherwise behaves as the optimizer it wraps.
"""

from __future__ import annotations

import warnings

from mylib.core.graph import get_default_graph
from mylib.devices.device_spec import DeviceSpec
from mylib.runtime.policy import get_policy
from mylib.train.optimizer import Optimizer
from mylib.train.session_run_hook import SessionRunHook

__all__ = ["SyncReplicasOptimizer", "replica_device_setter"]


def _strategy_of(graph):
    policy = get_policy(graph)
    return getattr(policy, "_strategy", None) if policy is not None else None


class SyncReplicasOptimizer(Optimizer):
    """Synchronous training with backup workers (TensorFlow 1's
    ``tf.train.SyncReplicasOptimizer``), as the aggregation of a
    `ParameterServerStrategy`.

    Args:
      opt: the optimizer computing and applying the updates.
      replicas_to_aggregate: gradients averaged per update (m).
      total_num_replicas: workers (n, default m); n - m are backup workers.
      variable_averages / variables_to_average: not supported (must be None): use an
        `ExponentialMovingAverage` on the updated variables.
      name: the optimizer's name.

    Behaviour: when the graph's variables were created under
    ``ParameterServerStrategy(replicas_to_aggregate=m)`` (the strategy's scope), each
    update applies the mean of the first m workers' gradients; `apply_gradients` checks
    that the strategy's m and worker count match. In one process without a strategy
    (one replica), it behaves exactly as `opt` and warns once that nothing is
    aggregated.

    Raises:
      ValueError: `replicas_to_aggregate` < 1, `total_num_replicas` < m,
        `variable_averages` given; at `apply_gradients`, a strategy in asynchronous mode
        or with another m.
    """

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None,
                 variable_averages=None, variables_to_average=None, use_locking=False,
                 name="sync_replicas"):
        super().__init__(use_locking, name)
        if not isinstance(opt, Optimizer):
            raise TypeError(f"SyncReplicasOptimizer wraps a tf.train optimizer; got {opt!r}")
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        if replicas_to_aggregate < 1:
            raise ValueError(f"replicas_to_aggregate must be >= 1; got {replicas_to_aggregate}")
        if total_num_replicas < replicas_to_aggregate:
            raise ValueError(f"total_num_replicas ({total_num_replicas}) must be >= "
                             f"replicas_to_aggregate ({replicas_to_aggregate})")
        if variable_averages is not None or variables_to_average is not None:
            raise ValueError("SyncReplicasOptimizer(variable_averages=...) is not supported "
                             "in mylib; apply an ExponentialMovingAverage after the update")
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._total_num_replicas = total_num_replicas
        self._gradients_applied = False

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's `compute_gradients`."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The wrapped optimizer's update, aggregated over `replicas_to_aggregate`
        workers by the graph's `ParameterServerStrategy` (see the class docstring).

        Raises:
          ValueError: no `global_step` (TensorFlow 1 requires one), or a strategy that is
          asynchronous or aggregates another number of replicas.
        """
        grads_and_vars = list(grads_and_vars)
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        graph = next((v.graph for _, v in grads_and_vars), get_default_graph())
        strategy = _strategy_of(graph)
        if strategy is not None and hasattr(strategy, "replicas_to_aggregate"):
            m = strategy.replicas_to_aggregate
            if m is None:
                raise ValueError(
                    "SyncReplicasOptimizer: the graph's ParameterServerStrategy is "
                    "asynchronous; create it with ParameterServerStrategy("
                    f"replicas_to_aggregate={self._replicas_to_aggregate}, num_workers="
                    f"{self._total_num_replicas})")
            if m != self._replicas_to_aggregate or \
                    strategy.num_workers != self._total_num_replicas:
                raise ValueError(
                    f"SyncReplicasOptimizer(replicas_to_aggregate="
                    f"{self._replicas_to_aggregate}, total_num_replicas="
                    f"{self._total_num_replicas}) does not match the graph's "
                    f"ParameterServerStrategy (replicas_to_aggregate={m}, num_workers="
                    f"{strategy.num_workers})")
        elif self._replicas_to_aggregate > 1:
            warnings.warn(
                "SyncReplicasOptimizer without a ParameterServerStrategy: one replica, "
                "so updates are applied as the wrapped optimizer's (nothing to aggregate). "
                "Create the variables under ParameterServerStrategy(replicas_to_aggregate="
                f"{self._replicas_to_aggregate}).scope() for synchronous replicas.",
                stacklevel=2)
        op = self._opt.apply_gradients(grads_and_vars, global_step=global_step, name=name)
        self._gradients_applied = True
        return op

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self):
        return self._opt.variables()

    def get_init_tokens_op(self, num_tokens=-1):
        """A no-op: the strategy needs no token queue (for TensorFlow 1 programs that
        run it on the chief)."""
        from mylib.core.ops.array_ops import no_op

        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        return no_op(name="sync_init_tokens")

    def get_chief_queue_runner(self):
        """Not available: aggregation is the strategy's, not a queue runner's.

        Raises:
          NotImplementedError: always, naming what to use instead.
        """
        raise NotImplementedError(
            "SyncReplicasOptimizer.get_chief_queue_runner(): mylib aggregates gradients in "
            "ParameterServerStrategy(replicas_to_aggregate=m), with no chief queue runner; "
            "use `hooks=[opt.make_session_run_hook(is_chief)]` with "
            "MonitoredTrainingSession instead")

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        """A `SessionRunHook` to pass to `MonitoredTrainingSession`; it checks that
        `apply_gradients` was called (the aggregation itself needs no per-run work)."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)


class _SyncReplicasOptimizerHook(SessionRunHook):
    def __init__(self, sync_optimizer, is_chief, num_tokens):
        self._sync_optimizer = sync_optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self):
        if not self._sync_optimizer._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before "
                             "using the hook.")


# ---------------------------------------------------------------- device setter
STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
                   "MutableHashTableV2", "MutableHashTableOfTensors",
                   "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                   "MutableDenseHashTableV2", "VarHandleOp", "BoostedTreesEnsembleResourceHandleOp",
                   "BoostedTreesQuantileStreamResourceHandleOp")


class _RoundRobinStrategy:
    """Parameter-server tasks in turn, one per placed op."""

    def __init__(self, num_tasks):
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op):
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker",
                          merge_devices=True, cluster=None, ps_ops=None, ps_strategy=None):
    """A device function for ``with ml.device(...)``: variables (their `VarHandleOp`s
    and the other `ps_ops`) go to the parameter-server tasks in turn, every other op to
    `worker_device` (TensorFlow 1's ``tf.train.replica_device_setter``).

    Args:
      ps_tasks: number of parameter-server tasks (ignored when `cluster` is given).
      ps_device, worker_device: device strings of the two jobs.
      merge_devices: accepted (always merges, as TensorFlow's default).
      cluster: a `ClusterSpec` or dict; its ``ps`` job's size gives `ps_tasks`.
      ps_ops: op types placed on parameter servers (default the variable ops).
      ps_strategy: ``f(op) -> task index`` (default round robin).
    Returns:
      The device function, or None when there are no parameter-server tasks (so
      ``ml.device(None)`` leaves placement alone).
    """
    if cluster is not None:
        from mylib.distribute.cluster_resolver import ClusterSpec

        spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job
        ps_tasks = spec.num_tasks(ps_job) if ps_job in spec.jobs else 0
    if not ps_tasks:
        return None
    ps_ops = tuple(STANDARD_PS_OPS if ps_ops is None else ps_ops)
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    elif not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")

    def device_function(op):
        current = DeviceSpec.from_string(op.device or "")
        op_type = getattr(op, "type", None) or getattr(op, "op", None)
        if ps_device and op_type in ps_ops:
            ps = DeviceSpec.from_string(ps_device)
            if ps.job and (not current.job or current.job == ps.job):
                ps.task = int(ps_strategy(op))
            return ps.make_merged_spec(current).to_string()
        worker = DeviceSpec.from_string(worker_device or "")
        return worker.make_merged_spec(current).to_string()

    return device_function
