"""`ml.nn`: neural-network ops (TensorFlow's `tf.nn`)."""

from mylib.core.ops.math_ops import sigmoid, tanh  # noqa: F401
from mylib.core.ops.nn_ops import *  # noqa: F401,F403
from mylib.core.ops.nn_ops import __all__ as _nn_all
from mylib.core.ops.clip_ops import *  # noqa: F401,F403
from mylib.core.ops.embedding_ops import *  # noqa: F401,F403
from mylib.core.ops.embedding_ops import __all__ as _embedding_all
from mylib.core.ops.nn_extra_ops import *  # noqa: F401,F403
from mylib.core.ops.nn_extra_ops import __all__ as _extra_all

__all__ = list(_nn_all) + list(_embedding_all) + list(_extra_all) + ["sigmoid", "tanh"]
