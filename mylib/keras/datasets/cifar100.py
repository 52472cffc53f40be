"""CIFAR-100: ``cifar-100-python/train`` and ``test`` (or the ``.tar.gz``)."""

import os

import numpy as np

from mylib.keras.datasets._cifar import extracted_dir, load_batch

__all__ = ["load_data"]


def load_data(label_mode="fine"):
    """``(x_train, y_train), (x_test, y_test)``: uint8 images [50000, 32, 32, 3] /
    [10000, 32, 32, 3] and labels [n, 1] (``"fine"``: 100 classes, ``"coarse"``: 20).

    Raises:
      ValueError: for another `label_mode`.
      FileNotFoundError: the files are not in the cache.
    """
    if label_mode not in ("fine", "coarse"):
        raise ValueError('`label_mode` must be one of "fine", "coarse". Received: '
                         f"label_mode={label_mode!r}")
    d = extracted_dir("cifar-100-python", "cifar-100-python.tar.gz",
                      "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
                      "keras.datasets.cifar100")
    key = label_mode + "_labels"
    x_train, y_train = load_batch(os.path.join(d, "train"), label_key=key)
    x_test, y_test = load_batch(os.path.join(d, "test"), label_key=key)
    y_train = np.reshape(y_train, (-1, 1)).astype("uint8")
    y_test = np.reshape(y_test, (-1, 1)).astype("uint8")
    return ((np.asarray(x_train, "uint8").transpose(0, 2, 3, 1), y_train),
            (np.asarray(x_test, "uint8").transpose(0, 2, 3, 1), y_test))
