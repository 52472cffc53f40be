"""Distribution strategies. They plug in through declared interfaces: the core's
variable-creator stack and the runtime's `ExecutionPolicy` (`mylib.runtime.policy`) —
so neither the core nor the runtime imports this package.

- `MirroredStrategy`: synchronous replicas over the local XLA devices.
- `MultiWorkerMirroredStrategy`: synchronous replicas over processes/machines
  (`jax.distributed`), the cluster from ``TF_CONFIG``; `python -m
  mylib.distribute.launch` runs a script on N local processes.
- `get_strategy()`, `has_strategy()`, `get_replica_context()`, `ReduceOp`.
"""

from mylib.distribute.distribute_lib import (InputContext, PerReplica, ReduceOp,  # noqa: F401
                                             ReplicaContext, Strategy, StrategyExtended,
                                             get_replica_context, get_strategy,
                                             has_strategy, in_cross_replica_context)
from mylib.distribute.mirrored import MirroredStrategy  # noqa: F401
from mylib.distribute.cluster_resolver import (ClusterResolver, ClusterSpec,  # noqa: F401
                                               SimpleClusterResolver,
                                               TFConfigClusterResolver)
from mylib.distribute.multi_worker import MultiWorkerMirroredStrategy  # noqa: F401
from mylib.distribute.parameter_server import ParameterServerStrategy  # noqa: F401,E402
from mylib.distribute.sharded_variable import (FixedShardsPartitioner,  # noqa: F401,E402
                                               MaxSizePartitioner, MinSizePartitioner,
                                               ShardedVariable)
