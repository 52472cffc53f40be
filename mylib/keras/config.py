"""`keras.config` (Keras 3): global settings (floatx, epsilon, image data format, the
dtype policy, unsafe deserialization, the random seed, determinism)."""

from __future__ import annotations

from mylib.keras.backend import (backend, epsilon, floatx, image_data_format,  # noqa: F401
                                 set_epsilon, set_floatx, set_image_data_format)
from mylib.layers.policy import global_policy as dtype_policy  # noqa: F401
from mylib.layers.policy import set_global_policy as set_dtype_policy  # noqa: F401
from mylib.config import enable_op_determinism  # noqa: F401

__all__ = ["backend", "epsilon", "floatx", "image_data_format", "set_epsilon", "set_floatx",
           "set_image_data_format", "dtype_policy", "set_dtype_policy",
           "enable_unsafe_deserialization", "is_unsafe_deserialization_enabled",
           "enable_interactive_logging", "disable_interactive_logging",
           "is_interactive_logging_enabled", "enable_traceback_filtering",
           "disable_traceback_filtering", "is_traceback_filtering_enabled",
           "enable_op_determinism", "max_epochs", "max_steps_per_epoch"]

_state = {"unsafe": False, "interactive": True, "traceback_filtering": True}


def enable_unsafe_deserialization():
    """Accepted for compatibility. mylib's model files never hold code (a `Lambda`
    layer's function is not stored), so there is nothing unsafe to allow; the flag is
    only recorded."""
    _state["unsafe"] = True


def is_unsafe_deserialization_enabled():
    return _state["unsafe"]


def enable_interactive_logging():
    """Progress bars on (the default)."""
    _state["interactive"] = True


def disable_interactive_logging():
    """Recorded only: use ``verbose=0`` / ``2`` in `fit` to change the progress output."""
    _state["interactive"] = False


def is_interactive_logging_enabled():
    return _state["interactive"]


def enable_traceback_filtering():
    _state["traceback_filtering"] = True


def disable_traceback_filtering():
    """Recorded only: mylib's errors already name the user's line that built the op."""
    _state["traceback_filtering"] = False


def is_traceback_filtering_enabled():
    return _state["traceback_filtering"]


def max_epochs():
    return None


def max_steps_per_epoch():
    return None
