"""`keras.utils` (Keras 3): `to_categorical`, `normalize`, `pad_sequences`,
`set_random_seed`, `plot_model` / `model_to_dot`, `get_file`, `PyDataset` /
`Sequence`, `Progbar`, `split_dataset`, `image_dataset_from_directory` /
`text_dataset_from_directory`, the image file helpers (`load_img`, `save_img`,
`img_to_array`, `array_to_img`; PIL optional), batch packing
(`pack_x_y_sample_weight`), symbolic-tensor helpers (`is_keras_tensor`,
`get_source_inputs`), and the serialization registry helpers."""

from __future__ import annotations

import numpy as np

from mylib.config import set_random_seed  # noqa: F401
from mylib.keras.backend import clear_session, is_keras_tensor, standardize_dtype  # noqa: F401
from mylib.keras.saving import (deserialize_keras_object,  # noqa: F401
                                serialize_keras_object)
from mylib.keras.utils.dataset_utils import split_dataset  # noqa: F401
from mylib.keras.utils.directory_utils import (image_dataset_from_directory,  # noqa: F401
                                               text_dataset_from_directory)
from mylib.keras.utils.file_utils import get_file  # noqa: F401
from mylib.keras.utils.image_utils import (array_to_img, img_to_array,  # noqa: F401
                                           load_img, save_img)
from mylib.keras.utils.plot import model_to_dot, plot_model  # noqa: F401
from mylib.keras.utils.progbar import Progbar  # noqa: F401
from mylib.keras.utils.sequences import PyDataset, Sequence, pad_sequences  # noqa: F401
from mylib.models.custom_step import (pack_x_y_sample_weight,  # noqa: F401
                                      unpack_x_y_sample_weight)
from mylib.saving import (custom_object_scope, get_custom_objects,  # noqa: F401
                          get_registered_name, get_registered_object,
                          register_keras_serializable)

CustomObjectScope = custom_object_scope

__all__ = ["to_categorical", "normalize", "pad_sequences", "set_random_seed", "plot_model",
           "model_to_dot", "get_file", "PyDataset", "Sequence", "custom_object_scope",
           "CustomObjectScope", "get_registered_name", "get_registered_object",
           "register_keras_serializable", "timeseries_dataset_from_array", "Progbar",
           "clear_session", "get_custom_objects", "serialize_keras_object",
           "deserialize_keras_object", "pack_x_y_sample_weight", "unpack_x_y_sample_weight",
           "is_keras_tensor", "get_source_inputs", "img_to_array", "array_to_img",
           "load_img", "save_img", "split_dataset", "standardize_dtype",
           "image_dataset_from_directory", "text_dataset_from_directory"]


def get_source_inputs(tensor):
    """The `Input` tensors `tensor` is computed from (Keras 3's `get_source_inputs`):
    walks the layer calls that made it back to their inputs.

    Args:
      tensor: a symbolic tensor made by layers.
    Returns:
      A list of the input tensors, each once, in the order the walk meets them
      (``[tensor]`` for an input itself); a value not made by a layer is returned as
      it is (not in a list), as Keras does.
    """
    from mylib.layers.base import InputLayer, keras_history

    history = keras_history(tensor)
    if history is None:
        return tensor
    node = history[0]
    if isinstance(node.layer, InputLayer):
        return [tensor]
    out = []
    for t in node.input_tensors:
        for x in get_source_inputs(t) if keras_history(t) is not None else [t]:
            if all(x is not y for y in out):
                out.append(x)
    return out


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

def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None):
    """Batches of sliding windows over `data` (Keras's `timeseries_dataset_from_array`),
    as an `ml.data.Dataset` that `fit` / `evaluate` / `predict` take as `x`.

    Window ``i`` (for start indices ``start_index, start_index + sequence_stride, ...``
    while the window fits before `end_index`) is ``data[i : i + sequence_length *
    sampling_rate : sampling_rate]``; its target is ``targets[i]``. With
    ``targets=None`` the batches hold the windows only.

    Args:
      data: array ``[time, ...]``.
      targets: array ``[time, ...]`` or None.
      batch_size: windows per batch (None: one window per element, unbatched).
      shuffle / seed: shuffle the windows (once, with numpy, seeded by `seed`).
    Raises:
      ValueError: bad lengths, strides or indices.
    """
    from mylib.data import Dataset

    data = np.asarray(data)
    for name, v in (("sequence_length", sequence_length), ("sequence_stride", sequence_stride),
                    ("sampling_rate", sampling_rate)):
        if int(v) <= 0:
            raise ValueError(f"`{name}` must be a positive int. Received: {name}={v}")
    start = 0 if start_index is None else int(start_index)
    end = len(data) if end_index is None else int(end_index)
    if not 0 <= start < end <= len(data):
        raise ValueError(f"`start_index` and `end_index` must satisfy 0 <= start < end <= "
                         f"{len(data)}. Received: start_index={start_index}, "
                         f"end_index={end_index}")
    span = (sequence_length - 1) * sampling_rate
    starts = np.arange(start, end - span, sequence_stride)
    if targets is not None:
        targets = np.asarray(targets)
        starts = starts[starts < len(targets)]
    if shuffle:
        np.random.RandomState(seed).shuffle(starts)
    idx = starts[:, None] + np.arange(0, span + 1, sampling_rate)[None, :]
    windows = data[idx] if len(starts) else np.zeros((0, sequence_length) + data.shape[1:],
                                                     data.dtype)
    ds = Dataset.from_tensor_slices(windows if targets is None else (windows,
                                                                     targets[starts]))
    return ds.batch(int(batch_size)) if batch_size is not None else ds


_FILES = ("read the files with numpy / PIL into arrays (or build an ml.data.Dataset) and "
          "pass them to fit")
_HINTS = {
    "audio_dataset_from_directory": _FILES + ".",
    "FeatureSpace": "preprocess the features with keras.layers preprocessing layers or "
                    "numpy.",
}


def __getattr__(name):
    from mylib.keras._face import missing

    raise missing(__name__, name, _HINTS)
