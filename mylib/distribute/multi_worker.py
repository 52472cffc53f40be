"""`MultiWorkerMirroredStrategy`: synchronous replicas over the devices of several
processes (machines), joined with `jax.distributed`.

Each process runs the same program. The cluster comes from ``TF_CONFIG``
(`TFConfigClusterResolver`) or an explicit resolver; the first task (the chief, else
worker 0) hosts JAX's coordination service, which listens on that task's address from
the cluster spec and nowhere else. Collectives use gloo on CPU and NCCL on GPU (JAX's
defaults). Like `MirroredStrategy`, a compiled step splits the global batch across
all devices of all processes and XLA inserts the all-reduce.

Every process must feed the same global batches (same data and order: fit with
`shuffle=False`, or with the same seed everywhere); each contributes the rows of its
own devices. Fetched values are replicated, so every process reads the same numbers.

JAX's coordination service ends a process (exit status 134) when a peer is lost:
run jobs under `python -m mylib.distribute.launch`, which supervises the tasks and
reports which one failed.
"""

from __future__ import annotations

import jax
import numpy as np

from mylib import errors
from mylib.distribute import mirrored
from mylib.distribute.cluster_resolver import TFConfigClusterResolver

_INITIALIZED = {}


class MultiWorkerExtended(mirrored.MirroredExtended):

    def __init__(self, strategy, devices, resolver):
        super().__init__(strategy, devices)
        self.resolver = resolver

    def step_seed_base(self):
        return 0x5EED  # random initializers must give the same values in every process

    def is_chief(self):
        return self.resolver.is_chief()

    def _place(self, value, sharding, whole=False):
        # `device_put` cannot reach the other processes' devices: each process builds
        # the shards of its own devices from its copy of the global value.
        if whole and isinstance(value, jax.Array):
            value = value.addressable_data(0)
        value = np.asarray(value)
        return jax.make_array_from_callback(value.shape, sharding, lambda idx: value[idx])


class MultiWorkerMirroredStrategy(mirrored.MirroredStrategy):
    """Synchronous replicas over several processes.

    Args:
      cluster_resolver: a `ClusterResolver`; default `TFConfigClusterResolver()`.
      communication_options: accepted for compatibility (XLA picks the collectives).
      heartbeat_timeout: seconds after which a silent peer counts as lost.
      initialization_timeout: seconds to wait for every task to join.
    Raises:
      InvalidArgumentError: no cluster (empty ``TF_CONFIG``) or this task is not in it.
      RuntimeError: JAX was already initialized in this process (create the strategy
        before any other JAX or mylib computation).
    """

    def __init__(self, cluster_resolver=None, communication_options=None,
                 heartbeat_timeout=30, initialization_timeout=120):
        resolver = cluster_resolver or TFConfigClusterResolver()
        workers = resolver.workers()
        if not workers:
            raise errors.InvalidArgumentError(
                "MultiWorkerMirroredStrategy needs a cluster: set TF_CONFIG (see "
                "mylib.distribute.launch) or pass a cluster_resolver")
        pid = resolver.process_index()
        coordinator = workers[0][2]
        key = (coordinator, len(workers), pid)
        if len(workers) > 1 and key not in _INITIALIZED:
            from mylib.devices import jax_adapter

            if jax_adapter.backends_are_initialized():
                raise RuntimeError(
                    "MultiWorkerMirroredStrategy must be created before any JAX "
                    "computation in the process (jax.distributed must start first)")
            jax.distributed.initialize(
                coordinator_address=coordinator, num_processes=len(workers),
                process_id=pid,
                coordinator_bind_address=coordinator if pid == 0 else None,
                heartbeat_timeout_seconds=int(heartbeat_timeout),
                initialization_timeout=int(initialization_timeout))
            _INITIALIZED[key] = True
        devices = jax.devices()
        mirrored.dl.Strategy.__init__(self, MultiWorkerExtended(self, devices, resolver))
        self._device_names = [f"/job:{job}/task:{i}" for job, i, _ in workers]
        self._resolver = resolver

    @property
    def cluster_resolver(self):
        return self._resolver
