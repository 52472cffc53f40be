"""Where the dataset loaders look for Keras's cached files, and the offline error."""

from __future__ import annotations

import os
import zipfile

import numpy as np

from mylib import _safe_pickle
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


# Object arrays (imdb / reuters sequences) and CIFAR batches are pickles: they are read
# with an unpickler that builds only numpy arrays and dtypes, so a tampered file cannot
# run code (Keras 3 restricts its dataset loading the same way).
def safe_pickle_load(f, encoding="ASCII"):
    """`pickle.load` that builds only numpy arrays, dtypes and plain Python values."""
    return _safe_pickle.load(f, "a dataset file", " The file may be corrupted or not the "
                             "Keras dataset file.", encoding=encoding)


def load_npz(path):
    """``{name: array}`` of an ``.npz`` file; object arrays through `safe_pickle_load`."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for member in z.namelist():
            key = member[:-4] if member.endswith(".npy") else member
            with z.open(member) as f:
                version = np.lib.format.read_magic(f)
                read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                               else np.lib.format.read_array_header_2_0)
                shape, fortran, dtype = read_header(f)
                if dtype.hasobject:
                    arr = safe_pickle_load(f, encoding="latin1")
                else:
                    data = f.read()
                    arr = np.frombuffer(data, dtype=dtype).reshape(
                        shape, order="F" if fortran else "C").copy()
            out[key] = arr
    return out
