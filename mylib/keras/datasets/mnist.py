"""MNIST digits: ``mnist.npz`` (keys ``x_train``, ``y_train``, ``x_test``, ``y_test``)."""

import numpy as np

from mylib.keras.datasets._cache import cached

__all__ = ["load_data"]


def load_data(path="mnist.npz"):
    """``(x_train, y_train), (x_test, y_test)``: uint8 images [60000, 28, 28] /
    [10000, 28, 28] and uint8 labels 0-9, read from the Keras cache.

    Raises:
      FileNotFoundError: ``<KERAS_HOME>/datasets/mnist.npz`` is missing.
    """
    p = cached(path, "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz",
               "keras.datasets.mnist")
    with np.load(p, allow_pickle=False) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
