"""Fashion-MNIST: the four gzipped IDX files Keras caches in ``datasets/fashion-mnist``."""

import gzip
import os

import numpy as np

from mylib.keras.datasets._cache import cached

__all__ = ["load_data"]

_FILES = ["train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
          "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"]
_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def load_data():
    """``(x_train, y_train), (x_test, y_test)``: uint8 images [60000, 28, 28] /
    [10000, 28, 28] and uint8 labels 0-9.

    Raises:
      FileNotFoundError: one of the four files under
        ``<KERAS_HOME>/datasets/fashion-mnist/`` is missing.
    """
    paths = [cached(os.path.join("fashion-mnist", f), _ORIGIN + f,
                    "keras.datasets.fashion_mnist") for f in _FILES]
    with gzip.open(paths[0], "rb") as f:
        y_train = np.frombuffer(f.read(), np.uint8, offset=8)
    with gzip.open(paths[1], "rb") as f:
        x_train = np.frombuffer(f.read(), np.uint8, offset=16).reshape(len(y_train), 28, 28)
    with gzip.open(paths[2], "rb") as f:
        y_test = np.frombuffer(f.read(), np.uint8, offset=8)
    with gzip.open(paths[3], "rb") as f:
        x_test = np.frombuffer(f.read(), np.uint8, offset=16).reshape(len(y_test), 28, 28)
    return (x_train, y_train), (x_test, y_test)
