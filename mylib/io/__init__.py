"""`ml.io`: TensorFlow's ``tf.io`` names that live outside the graph: `gfile`."""

from mylib import gfile  # noqa: F401

__all__ = ["gfile"]
