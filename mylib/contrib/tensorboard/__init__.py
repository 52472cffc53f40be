"""`ml.contrib.tensorboard`: `plugins.projector` (TensorBoard's embedding projector)."""

from mylib.contrib.tensorboard import plugins  # noqa: F401

__all__ = ["plugins"]
