"""`keras.utils` (Keras 3): `to_categorical`, `normalize`, `pad_sequences`,
`set_random_seed`, `plot_model` / `model_to_dot`, `get_file`, `PyDataset` /
`Sequence`, and the serialization registry helpers."""

from __future__ import annotations

import numpy as np

from mylib.config import set_random_seed  # noqa: F401
from mylib.keras.utils.file_utils import get_file  # noqa: F401
from mylib.keras.utils.plot import model_to_dot, plot_model  # noqa: F401
from mylib.keras.utils.sequences import PyDataset, Sequence, pad_sequences  # noqa: F401
from mylib.saving import (custom_object_scope, get_registered_name,  # noqa: F401
                          get_registered_object, register_keras_serializable)

CustomObjectScope = custom_object_scope

__all__ = ["to_categorical", "normalize", "pad_sequences", "set_random_seed", "plot_model",
           "model_to_dot", "get_file", "PyDataset", "Sequence", "custom_object_scope",
           "CustomObjectScope", "get_registered_name", "get_registered_object",
           "register_keras_serializable"]


def to_categorical(x, num_classes=None):
    """One-hot float32 rows of the int class ids `x` (Keras's `to_categorical`): shape
    ``x.shape + (num_classes,)``, a trailing axis of size 1 in `x` dropped first.

    Args:
      x: array-like of non-negative ints.
      num_classes: the number of classes (default ``max(x) + 1``).
    Raises:
      ValueError: for negative ids or ids >= `num_classes`.
    """
    x = np.asarray(x)
    if x.size and not np.issubdtype(x.dtype, np.integer):
        if not np.all(np.equal(np.mod(x, 1), 0)):
            raise ValueError("to_categorical: `x` must hold integer class ids. Received "
                             f"dtype {x.dtype} with non-integer values.")
    x = x.astype("int64")
    shape = x.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    x = x.reshape(-1)
    if num_classes is None:
        num_classes = int(x.max()) + 1 if x.size else 0
    if x.size and (x.min() < 0 or x.max() >= num_classes):
        raise ValueError(f"to_categorical: class ids must lie in [0, {num_classes}). "
                         f"Received ids from {x.min()} to {x.max()}.")
    out = np.zeros((x.size, num_classes), dtype="float32")
    out[np.arange(x.size), x] = 1.0
    return out.reshape(shape + (num_classes,))


def normalize(x, axis=-1, order=2):
    """`x` divided by its `order`-norm along `axis` (zero rows stay zero); numpy in,
    numpy out (a symbolic tensor goes through `keras.ops.normalize`)."""
    from mylib.keras.ops._dispatch import is_symbolic

    if is_symbolic(x):
        from mylib.keras.ops import normalize as _normalize

        return _normalize(x, axis=axis, order=order)
    x = np.asarray(x)
    n = np.atleast_1d(np.linalg.norm(x, order, axis))
    n[n == 0] = 1
    return x / np.expand_dims(n, axis)

_FILES = ("read the files with numpy / PIL into arrays (or build an ml.data.Dataset) and "
          "pass them to fit")
_HINTS = {
    "image_dataset_from_directory": _FILES + ".",
    "text_dataset_from_directory": _FILES + ".",
    "audio_dataset_from_directory": _FILES + ".",
    "timeseries_dataset_from_array": "slice windows with numpy "
                                     "(numpy.lib.stride_tricks.sliding_window_view) and pass "
                                     "the arrays to fit.",
    "split_dataset": "split the arrays with numpy, or use fit(validation_split=...).",
    "load_img": "use PIL.Image.open and numpy.asarray.",
    "img_to_array": "use numpy.asarray(image, dtype='float32').",
    "array_to_img": "use PIL.Image.fromarray.",
    "save_img": "use PIL.Image.fromarray(array).save(path).",
    "Progbar": "fit's progress bar is the ProgbarLogger callback; use tqdm elsewhere.",
    "FeatureSpace": "preprocess the features with keras.layers preprocessing layers or "
                    "numpy.",
}


def __getattr__(name):
    from mylib.keras._face import missing

    raise missing(__name__, name, _HINTS)
