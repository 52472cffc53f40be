"""`ml.contrib.tensorboard.plugins`: `projector`."""

from mylib.contrib.tensorboard.plugins import projector  # noqa: F401

__all__ = ["projector"]
