"""Where the dataset loaders look for Keras's cached files, and the offline error."""

from __future__ import annotations

import os

from mylib.keras.utils.file_utils import keras_home

_BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def cached(fname, origin=None, what=None):
    """The path of `fname` in ``<KERAS_HOME or ~/.keras>/datasets``.

    Raises:
      FileNotFoundError: the file is not there; the message names the URL to download
        it from and the exact path to place it at (mylib never downloads).
    """
    path = os.path.join(keras_home(), "datasets", fname)
    if not os.path.exists(path):
        origin = origin or _BASE + fname
        raise FileNotFoundError(
            f"{what or fname}: the data file is not in the Keras cache, and mylib does not "
            f"download data. Download {origin} and place it at {path} (set KERAS_HOME to "
            "use another cache root).")
    return path
