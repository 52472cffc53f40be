"""`MirroredStrategy`: synchronous data parallelism over the local XLA devices.

Variables are mirrored: one logical variable whose value is replicated on every device
(a JAX array with a replicated `NamedSharding`), always equal. Each compiled step takes
the global batch split along its first axis across the devices; XLA's SPMD partitioner
turns the step into per-device programs and inserts the all-reduce of the gradients (and
of every other cross-batch reduction: losses, metrics, batch-normalization statistics)
inside the compiled step, so every replica applies the same update.

Differences from TensorFlow: statistics over the batch (BatchNormalization, metrics)
are always global-batch statistics, as with TF's `synchronized=True`; a global batch
that does not divide evenly (the last one of an epoch) runs replicated instead of split,
which gives the same result at some cost for that one step.
"""

from __future__ import annotations

import threading

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from mylib import errors
from mylib.devices import DeviceSpec, get_device, list_devices
from mylib.distribute import distribute_lib as dl


class MirroredExtended(dl.StrategyExtended):
    def __init__(self, strategy, devices):
        super().__init__(strategy)
        self.devices = list(devices)
        self.mesh = Mesh(np.array(self.devices), ("batch",))
        self.replicated = NamedSharding(self.mesh, P())
        self.batch_sharded = NamedSharding(self.mesh, P("batch"))
        self.n = len(self.devices)

    def shard_step_args(self, args, feed_slice):
        rep = self.replicated
        for i, a in enumerate(args):
            if feed_slice.start <= i < feed_slice.stop:
                # The global batch split along its first axis, or replicated when it
                # does not divide evenly.
                shape = np.shape(a)
                split = bool(shape) and shape[0] > 0 and shape[0] % self.n == 0
                args[i] = self._place(a, self.batch_sharded if split else rep)
            elif not (isinstance(a, jax.Array) and a.sharding == rep):
                args[i] = self._place(a, rep, whole=True)
        return args

    def _place(self, value, sharding, whole=False):  # noqa: ARG002
        """`value` as an array laid out by `sharding` over the strategy's devices.
        `whole`: `value` is a variable's value, of which each shard holds all."""
        return jax.device_put(value, sharding)

    def constrain_variable(self, value):
        return jax.lax.with_sharding_constraint(value, self.replicated)


class MirroredStrategy(dl.Strategy):
    """Synchronous replicas on the local devices.

    Args:
      devices: device names (``["/gpu:0", "/gpu:1"]``) or None for all local devices
        of the default backend.
      cross_device_ops: accepted for compatibility; the all-reduce is XLA's.
    Raises:
      InvalidArgumentError: a device name that is not a local device (the message lists
        them), or an empty or repeated device list.
    """

    def __init__(self, devices=None, cross_device_ops=None):
        if devices is None:
            devs = [d.jax_device for d in list_devices()]
            names = [d.name for d in list_devices()]
        else:
            devices = list(devices)
            if not devices:
                raise errors.InvalidArgumentError("MirroredStrategy needs at least one device")
            devs = [get_device(d) for d in devices]
            names = [DeviceSpec.from_string(d).to_string() for d in devices]
            if len(set(devs)) != len(devs):
                raise errors.InvalidArgumentError(
                    f"MirroredStrategy: devices repeat in {devices}")
        super().__init__(MirroredExtended(self, devs))
        self._device_names = names

    @property
    def num_replicas_in_sync(self):
        return self._extended.n

    def run(self, fn, args=(), kwargs=None):
        """Calls `fn` once per replica, in the graph (as TensorFlow 1's in-graph
        replication), each in a `ReplicaContext` with its `replica_id_in_sync_group`.
        `PerReplica` arguments give each replica its value; other arguments are passed
        to every replica. `ReplicaContext.all_reduce` inside `fn` combines values across
        replicas. Returns a `PerReplica` of the results.

        The replica functions build graph ops from one thread each (they meet at
        `all_reduce` / `merge_call`); the step they build compiles to one program.
        """
        kwargs = kwargs or {}
        n = self.num_replicas_in_sync
        run = _MirroredRun(self, n)
        results = [None] * n
        failures = []
        graph = dl.get_default_graph()
        scope = graph.get_name_scope()

        def replica(r):
            dl._local.replica_ctx = dl.ReplicaContext(self, r, run)
            dl._stack().append(self)
            try:
                a = [x.values[r] if isinstance(x, dl.PerReplica) else x for x in args]
                kw = {k: (v.values[r] if isinstance(v, dl.PerReplica) else v)
                      for k, v in kwargs.items()}
                with graph.as_default(), graph.name_scope(scope + "/" if scope else None):
                    with graph.name_scope(f"replica_{r}" if r else None):
                        results[r] = fn(*a, **kw)
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller
                failures.append(e)
                run.barrier.abort()
            finally:
                dl._local.replica_ctx = None
                dl._stack().pop()

        threads = [threading.Thread(target=replica, args=(r,), daemon=True) for r in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failures:
            real = [e for e in failures if not isinstance(e, threading.BrokenBarrierError)]
            raise (real or failures)[0]
        return results[0] if n == 1 else dl.PerReplica(results)

    def experimental_distribute_values_from_function(self, value_fn):
        """A `PerReplica` of `value_fn(ValueContext)` for each replica."""
        vals = [value_fn(ValueContext(r, self.num_replicas_in_sync))
                for r in range(self.num_replicas_in_sync)]
        return dl.PerReplica(vals)


class ValueContext:
    """`replica_id_in_sync_group` and `num_replicas_in_sync` for a value function."""

    def __init__(self, replica_id_in_sync_group, num_replicas_in_sync):
        self.replica_id_in_sync_group = replica_id_in_sync_group
        self.num_replicas_in_sync = num_replicas_in_sync


class _MirroredRun:
    """Meeting point of the replica threads of one `run`."""

    def __init__(self, strategy, n):
        self.strategy = strategy
        self.barrier = threading.Barrier(n)
        self.slots = [None] * n
        self.result = None

    def _exchange(self, rid, value, combine):
        self.slots[rid] = value
        self.barrier.wait()
        if rid == 0:
            self.result = combine(list(self.slots))
        self.barrier.wait()
        out = self.result
        self.barrier.wait()  # everyone has read it before the next exchange
        return out

    def all_reduce(self, rid, reduce_op, value):
        from mylib.core.ops import math_ops

        def combine(values):
            leaves = [jax.tree_util.tree_flatten(v)[0] for v in values]
            treedef = jax.tree_util.tree_structure(values[0])
            out = []
            for parts in zip(*leaves):
                total = math_ops.add_n(list(parts)) if len(parts) > 1 else parts[0]
                if reduce_op == dl.ReduceOp.MEAN:
                    total = total / float(len(parts))
                out.append(total)
            return jax.tree_util.tree_unflatten(treedef, out)

        return self._exchange(rid, value, combine)

    def merge_call(self, rid, merge_fn, args, kwargs):
        def combine(all_args):
            per = [dl.PerReplica([a[i] for a in all_args]) for i in range(len(args))]
            prev = getattr(dl._local, "replica_ctx", None)
            dl._local.replica_ctx = None
            try:
                return merge_fn(self.strategy, *per, **kwargs)
            finally:
                dl._local.replica_ctx = prev

        return self._exchange(rid, tuple(args), combine)
