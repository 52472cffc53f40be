"""The runtime: what executes a graph built by `mylib.core`.

`Session` (plans, feeds, compiled steps), the segmented executor and its partitioner,
placement, the `VariableStore` holding variable values and random-stream state, the
`Saver` and meta graphs, queue runners and the `Coordinator`, tracing, the per-graph
default session of the Keras API, and `ExecutionPolicy`: the declared interface through
which a distribution strategy changes execution. It imports `mylib.core` and
`mylib.devices`, never the layers, models or strategies above it.
"""

from mylib.runtime.session import (ConfigProto, GPUOptions, InteractiveSession,  # noqa: F401
                                   RunMetadata, RunOptions, Session)
from mylib.runtime.policy import ExecutionPolicy, get_policy, set_policy  # noqa: F401
from mylib.runtime.variable_store import VariableStore  # noqa: F401

__all__ = ["ConfigProto", "GPUOptions", "InteractiveSession", "RunMetadata", "RunOptions", "Session",
           "ExecutionPolicy", "get_policy", "set_policy", "VariableStore"]
