"""Keras 3's datasets read from a folder of files: `image_dataset_from_directory` and
`text_dataset_from_directory`, as `ml.data` datasets that `fit` / `evaluate` /
`predict` take as `x`.

The files are indexed as Keras 3 does (class sub-folders in alphanumeric order, each
walked recursively with its files sorted; one seeded numpy shuffle of the whole list;
the validation subset is the last ``int(validation_split * n)`` files), so a seed picks
the same training and validation files as Keras 3. The files are read lazily, each time
the dataset is iterated.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["image_dataset_from_directory", "text_dataset_from_directory"]

_IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "lanczos3", "lanczos5")
_CHANNELS = {"grayscale": 1, "rgb": 3, "rgba": 4}


def _check_labels(labels, label_mode, class_names):
    if labels not in ("inferred", None):
        if not isinstance(labels, (list, tuple)):
            raise ValueError("`labels` argument should be a list/tuple of integer labels, "
                             "one per file in the target directory (sorted by path), "
                             '"inferred" (from the sub-folder names) or None (no labels). '
                             f"Received: labels={labels}")
        if class_names:
            raise ValueError('You can only pass `class_names` if `labels="inferred"`. '
                             f"Received: labels={labels}, and class_names={class_names}")
    if label_mode not in ("int", "categorical", "binary", None):
        raise ValueError('`label_mode` argument must be one of "int", "categorical", '
                         f'"binary", or None. Received: label_mode={label_mode}')


def _check_split(validation_split, subset, shuffle, seed):
    if validation_split and not 0 < validation_split < 1:
        raise ValueError("`validation_split` must be between 0 and 1, received: "
                         f"{validation_split}")
    if (validation_split or subset) and not (validation_split and subset):
        raise ValueError("If `subset` is set, `validation_split` must be set, and inversely.")
    if subset not in ("training", "validation", "both", None):
        raise ValueError('`subset` must be either "training", "validation" or "both", '
                         f"received: {subset}")
    if validation_split and shuffle and seed is None:
        raise ValueError("If using `validation_split` and shuffling the data, you must "
                         "provide a `seed` argument, to make sure that there is no overlap "
                         "between the training and validation subset.")


def _index_directory(directory, labels, formats, class_names, shuffle, seed, follow_links,
                     verbose):
    """``(file_paths, labels or None, class_names or None)``, in Keras 3's order."""
    if not os.path.isdir(directory):
        raise ValueError(f"`directory` must be an existing folder. Received: "
                         f"directory={directory!r}")
    if labels == "inferred":
        subdirs = [d for d in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, d)) and not d.startswith(".")]
        if class_names is not None:
            if not set(class_names).issubset(subdirs):
                raise ValueError("The `class_names` passed did not match the names of the "
                                 "subdirectories of the target directory. Expected: "
                                 f"{subdirs} (or a subset of it), but received: "
                                 f"class_names={class_names}")
            subdirs = list(class_names)
    else:
        if class_names is not None:
            raise ValueError("argument `class_names` can only be given with "
                             f'labels="inferred". Received: labels={labels!r}')
        subdirs = [""]
    paths, inferred = [], []
    for index, sub in enumerate(subdirs):
        root_dir = os.path.join(directory, sub)
        walk = sorted(os.walk(root_dir, followlinks=follow_links), key=lambda w: w[0])
        for root, _, files in walk:
            for fname in sorted(files):
                if fname.lower().endswith(formats):
                    paths.append(os.path.join(root, fname))
                    inferred.append(index)
    if labels == "inferred":
        labels = np.asarray(inferred, np.int32)
        names = list(subdirs)
    elif labels is None:
        names = None
    else:
        if len(labels) != len(paths):
            raise ValueError("Expected the lengths of `labels` to match the number of files "
                             f"in the target directory. len(labels) is {len(labels)} while "
                             f"we found {len(paths)} files in directory {directory}.")
        names = [str(v) for v in sorted(set(labels))]
        labels = np.asarray(labels)
    if verbose:
        print(f"Found {len(paths)} files." if labels is None else
              f"Found {len(paths)} files belonging to {len(names)} classes.")
    if shuffle:
        # Keras 3 shuffles paths and labels by two generators of one seed.
        np.random.RandomState(seed).shuffle(paths)
        if labels is not None:
            np.random.RandomState(seed).shuffle(labels)
    return paths, labels, names


def _split(paths, labels, validation_split, subset):
    if not validation_split:
        return paths, labels
    n_val = int(validation_split * len(paths))
    if subset == "training":
        print(f"Using {len(paths) - n_val} files for training.")
        sl = slice(None, -n_val) if n_val else slice(None)
    else:
        print(f"Using {n_val} files for validation.")
        sl = slice(-n_val, None) if n_val else slice(0, 0)
    return paths[sl], None if labels is None else labels[sl]


def _encode_labels(labels, label_mode, num_classes):
    if label_mode == "int":
        return labels.astype(np.int32)
    if label_mode == "binary":
        return labels.astype(np.float32)[:, None]
    return np.eye(num_classes, dtype=np.float32)[labels.astype(np.int64)]


def _assemble(paths, labels, label_mode, num_classes, load, shuffle, buffer_size, seed,
              batch_size, class_names, what, directory, formats):
    from mylib.data import Dataset

    if not paths:
        raise ValueError(f"No {what} found in directory {directory}. Allowed formats: "
                         f"{formats}")
    ds = Dataset.from_tensor_slices(np.asarray(paths, dtype=str)).map(load)
    if label_mode is not None:
        ds = Dataset.zip((ds, Dataset.from_tensor_slices(
            _encode_labels(labels, label_mode, num_classes))))
    if shuffle:
        ds = ds.shuffle(buffer_size, seed=seed)
    if batch_size is not None:
        ds = ds.batch(int(batch_size))
    ds.class_names = class_names
    ds.file_paths = list(paths)
    return ds


def _from_directory(directory, labels, label_mode, class_names, batch_size, shuffle, seed,
                    validation_split, subset, follow_links, verbose, formats, load, what):
    _check_labels(labels, label_mode, class_names)
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    _check_split(validation_split, subset, shuffle, seed)
    if seed is None:
        seed = np.random.randint(1e6)
    paths, labels, names = _index_directory(directory, labels, formats, class_names,
                                            shuffle, seed, follow_links, verbose)
    if label_mode == "binary" and len(names) != 2:
        raise ValueError('When passing `label_mode="binary"`, there must be exactly 2 '
                         f"class_names. Received: class_names={names}")
    buffer_size = batch_size * 8 if batch_size is not None else 1024
    num_classes = len(names) if names else 0
    common = dict(label_mode=label_mode, num_classes=num_classes, load=load,
                  buffer_size=buffer_size, seed=seed, batch_size=batch_size,
                  class_names=names, what=what, directory=directory, formats=formats)
    if subset == "both":
        train = _split(paths, labels, validation_split, "training")
        val = _split(paths, labels, validation_split, "validation")
        return [_assemble(*train, shuffle=shuffle, **common),
                _assemble(*val, shuffle=False, **common)]
    paths, labels = _split(paths, labels, validation_split, subset)
    return _assemble(paths, labels, shuffle=shuffle, **common)


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None,
                                 interpolation="bilinear", follow_links=False,
                                 crop_to_aspect_ratio=False, pad_to_aspect_ratio=False,
                                 data_format=None, verbose=True):
    """A dataset of ``(images, labels)`` batches from a folder with one sub-folder of
    images per class (Keras 3's `image_dataset_from_directory`).

    Files ending in .bmp, .gif, .jpeg, .jpg or .png are decoded with PIL (the first frame
    of a GIF), converted to `color_mode` and resized to `image_size` as `Resizing` does
    (`jax.image.resize`, half-pixel centres, no antialiasing).

    Args:
      directory: the folder. With ``labels="inferred"`` each sub-folder (alphanumeric
        order, or `class_names`' order) is a class, walked recursively.
      labels: "inferred", None (images only), or a list of ints, one per file in the
        order of their sorted paths.
      label_mode: "int" (int32 ``[batch]``), "categorical" (float32 one-hot
        ``[batch, num_classes]``), "binary" (float32 ``[batch, 1]``, two classes only)
        or None (images only).
      class_names: with ``labels="inferred"``, the sub-folders to use, in label order.
      color_mode: "grayscale" (1 channel), "rgb" (3) or "rgba" (4).
      batch_size: images per batch; None yields single images.
      image_size: ``(height, width)`` (or one int for both) of every output image.
      shuffle / seed: shuffle the file list once (seeded numpy, as Keras 3), and the
        training elements each epoch through a buffer of ``8 * batch_size``.
      validation_split / subset: a fraction in (0, 1) held out, and which part to
        return: "training", "validation" or "both" (a list ``[train, val]``); with
        shuffling a `seed` is required so the two parts do not overlap.
      interpolation: "bilinear", "nearest", "bicubic", "lanczos3" or "lanczos5".
      crop_to_aspect_ratio / pad_to_aspect_ratio: crop (or zero-pad) each image to the
        output's aspect ratio before resizing, instead of stretching it.
      data_format: "channels_last" (or None).
      verbose: print how many files and classes were found.

    Returns:
      An `ml.data.Dataset` of float32 images ``[batch, height, width, channels]``
      (with labels as above), with ``class_names`` and ``file_paths`` attributes; a list
      of two with ``subset="both"``. Unlike Keras 3, "nearest" also gives float32 (TF
      keeps the file's uint8), and grayscale conversion is PIL's (ITU-R 601 luma).

    Raises:
      ValueError: a bad `labels`, `label_mode`, `color_mode`, `image_size`,
        `interpolation`, split arguments, a missing folder, no images found, or
        ``label_mode="binary"`` without exactly two classes.
      ImportError: PIL is not installed.
    """
    from mylib.core.ops.image_ops import _aspect_resize_kernel
    from mylib.keras.utils.image_utils import _pil

    if color_mode not in _CHANNELS:
        raise ValueError('`color_mode` must be one of {"rgb", "rgba", "grayscale"}. '
                         f"Received: color_mode={color_mode}")
    if isinstance(image_size, int):
        image_size = (image_size, image_size)
    if (not isinstance(image_size, (list, tuple)) or len(image_size) != 2
            or not all(isinstance(v, (int, np.integer)) and v > 0 for v in image_size)):
        raise ValueError("Invalid `image_size` value. Expected a tuple of 2 positive "
                         f"integers. Received: image_size={image_size}")
    interpolation = str(interpolation).lower()
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"Argument `interpolation` should be one of {_INTERPOLATIONS}. "
                         f"Received: interpolation={interpolation}")
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError("Only one of `pad_to_aspect_ratio` and `crop_to_aspect_ratio` can "
                         "be `True`.")
    if data_format not in (None, "channels_last"):
        raise ValueError("image_dataset_from_directory supports only "
                         f"data_format='channels_last'. Received: data_format={data_format!r}")
    image = _pil("keras.utils.image_dataset_from_directory")
    mode = {"grayscale": "L", "rgb": "RGB", "rgba": "RGBA"}[color_mode]
    size = tuple(int(v) for v in image_size)
    aspect = ("crop" if crop_to_aspect_ratio else "pad" if pad_to_aspect_ratio
              else "stretch")

    def load(path):
        with image.open(str(path)) as img:
            arr = np.asarray(img.convert(mode), dtype=np.float32)
        arr = arr.reshape(arr.shape[0], arr.shape[1], _CHANNELS[color_mode])
        if arr.shape[:2] != size:
            arr = np.asarray(_aspect_resize_kernel(arr[None], size=size, method=interpolation,
                                                   aspect=aspect, fill_value=0.0))[0]
        return arr

    return _from_directory(directory, labels, label_mode, class_names, batch_size, shuffle,
                           seed, validation_split, subset, follow_links, verbose,
                           _IMAGE_FORMATS, load, "images")


def text_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                class_names=None, batch_size=32, max_length=None,
                                shuffle=True, seed=None, validation_split=None, subset=None,
                                follow_links=False, verbose=True):
    """A dataset of ``(texts, labels)`` batches from a folder with one sub-folder of .txt
    files per class (Keras 3's `text_dataset_from_directory`).

    Args:
      directory, labels, label_mode, class_names, batch_size, shuffle, seed,
      validation_split, subset, follow_links, verbose: as `image_dataset_from_directory`.
      max_length: keep at most this many characters of each file (Keras 3 cuts bytes;
        mylib cuts decoded characters, the same for ASCII text).

    Returns:
      An `ml.data.Dataset` whose texts are numpy unicode strings ``[batch]`` (files read
      as UTF-8), which `TextVectorization` takes; labels as in
      `image_dataset_from_directory`. It has ``class_names`` and ``file_paths``.

    Raises:
      ValueError: as `image_dataset_from_directory`, and for a `max_length` that is not
        a positive int.
    """
    if max_length is not None and (not isinstance(max_length, (int, np.integer))
                                   or max_length <= 0):
        raise ValueError("`max_length` must be a positive int or None. Received: "
                         f"max_length={max_length}")

    def load(path):
        with open(str(path), encoding="utf-8") as f:
            text = f.read()
        return np.asarray(text if max_length is None else text[:max_length])

    return _from_directory(directory, labels, label_mode, class_names, batch_size, shuffle,
                           seed, validation_split, subset, follow_links, verbose, (".txt",),
                           load, "text files")
