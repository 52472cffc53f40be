"""`ml.contrib`: the ``tf.contrib`` names TensorFlow 1 programs use, each mapped onto
mylib (`tensorboard.plugins.projector`)."""

from mylib.contrib import tensorboard  # noqa: F401

__all__ = ["tensorboard"]
