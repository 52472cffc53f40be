"""`ml.image`: image ops (TensorFlow's `tf.image`): resize, flips, crops and pads,
brightness/contrast, dtype conversion, standardization. See `mylib.core.ops.image_ops`."""

from mylib.core.ops.image_ops import *  # noqa: F401,F403
from mylib.core.ops.image_ops import __all__ as _all

__all__ = list(_all)
