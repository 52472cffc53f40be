"""`ml.random`: random ops (TensorFlow's `tf.random`): `normal`, `uniform`,
`truncated_normal`, `shuffle`, `categorical`, `set_seed`, and the candidate samplers
`log_uniform_candidate_sampler` / `uniform_candidate_sampler` (also in `ml.nn`)."""

from mylib.core.graph import set_random_seed
from mylib.core.ops.random_ops import *  # noqa: F401,F403
from mylib.core.ops.random_ops import __all__ as _all
from mylib.core.ops.embedding_ops import (log_uniform_candidate_sampler,  # noqa: F401
                                          uniform_candidate_sampler)

set_seed = set_random_seed

__all__ = list(_all) + ["set_seed", "set_random_seed", "log_uniform_candidate_sampler",
                        "uniform_candidate_sampler"]
