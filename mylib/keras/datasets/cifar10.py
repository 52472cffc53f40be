"""CIFAR-10: the python batches of ``cifar-10-batches-py`` (or its ``.tar.gz``)."""

import os

import numpy as np

from mylib.keras.backend import image_data_format
from mylib.keras.datasets._cifar import extracted_dir, load_batch

__all__ = ["load_data"]


def load_data():
    """``(x_train, y_train), (x_test, y_test)``: uint8 images [50000, 32, 32, 3] /
    [10000, 32, 32, 3] (channels last) and uint8 labels [n, 1].

    Raises:
      FileNotFoundError: neither ``<KERAS_HOME>/datasets/cifar-10-batches-py/`` nor
        ``cifar-10-batches-py.tar.gz`` is in the cache.
    """
    d = extracted_dir("cifar-10-batches-py", "cifar-10-batches-py.tar.gz",
                      "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
                      "keras.datasets.cifar10")
    xs, ys = [], []
    for i in range(1, 6):
        x, y = load_batch(os.path.join(d, f"data_batch_{i}"))
        xs.append(x)
        ys.append(y)
    x_train = np.concatenate(xs).astype("uint8")
    y_train = np.reshape(np.concatenate(ys), (-1, 1)).astype("uint8")
    x_test, y_test = load_batch(os.path.join(d, "test_batch"))
    x_test = np.asarray(x_test, "uint8")
    y_test = np.reshape(y_test, (-1, 1)).astype("uint8")
    if image_data_format() == "channels_last":
        x_train, x_test = x_train.transpose(0, 2, 3, 1), x_test.transpose(0, 2, 3, 1)
    return (x_train, y_train), (x_test, y_test)
