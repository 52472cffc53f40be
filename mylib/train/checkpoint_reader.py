"""`NewCheckpointReader`: TensorFlow 1's reader of a checkpoint's tensors by name."""

from __future__ import annotations

import numpy as np

from mylib import errors
from mylib.runtime.saver import load_checkpoint

__all__ = ["NewCheckpointReader", "CheckpointReader"]


class CheckpointReader:
    """The tensors of one checkpoint (a prefix, or a directory: its latest), read once.

    Raises:
      NotFoundError: no such checkpoint (from the constructor) or tensor (`get_tensor`).
    """

    def __init__(self, filepattern):
        self._values = load_checkpoint(filepattern)
        self._path = filepattern

    def get_tensor(self, tensor_str):
        name = tensor_str[:-2] if tensor_str.endswith(":0") else tensor_str
        try:
            return np.asarray(self._values[name])
        except KeyError:
            raise errors.NotFoundError(f"Key {tensor_str} not found in checkpoint "
                                       f"{self._path}") from None

    def has_tensor(self, tensor_str):
        return tensor_str in self._values

    def get_variable_to_shape_map(self):
        return {k: list(np.shape(v)) for k, v in self._values.items()}

    def get_variable_to_dtype_map(self):
        from mylib.core.dtypes import as_dtype

        return {k: as_dtype(np.asarray(v).dtype) for k, v in self._values.items()}

    def debug_string(self):
        return "".join(f"{k} ({np.asarray(v).dtype}) {list(np.shape(v))}\n"
                       for k, v in sorted(self._values.items())).encode()


def NewCheckpointReader(filepattern):  # noqa: N802 - TensorFlow's name
    """A `CheckpointReader` of `filepattern`."""
    return CheckpointReader(filepattern)
