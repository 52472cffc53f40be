"""`ml.random`: random ops (TensorFlow's `tf.random`): `normal`, `uniform`,
`truncated_normal`, `shuffle`, `categorical`, `set_seed`."""

from mylib.core.graph import set_random_seed
from mylib.core.ops.random_ops import *  # noqa: F401,F403
from mylib.core.ops.random_ops import __all__ as _all

set_seed = set_random_seed

__all__ = list(_all) + ["set_seed", "set_random_seed"]
