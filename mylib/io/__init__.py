"""`ml.io`: TensorFlow's ``tf.io`` names: `gfile`, and `decode_csv` (a host op)."""

from mylib import gfile  # noqa: F401
from mylib.core.ops.string_ops import decode_csv  # noqa: F401

__all__ = ["gfile", "decode_csv"]
