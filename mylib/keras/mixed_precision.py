"""`keras.mixed_precision` (Keras 3): dtype policies and loss scaling."""

from mylib.layers.policy import Policy, global_policy, set_global_policy  # noqa: F401
from mylib.mixed_precision import LossScaleOptimizer  # noqa: F401

DTypePolicy = Policy
dtype_policy = global_policy
set_dtype_policy = set_global_policy

__all__ = ["Policy", "DTypePolicy", "global_policy", "set_global_policy", "dtype_policy",
           "set_dtype_policy", "LossScaleOptimizer"]
