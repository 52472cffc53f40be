"""Reading the CIFAR python-pickle batches (the dicts of numpy arrays the CIFAR
archives hold, read with `encoding="bytes"` as Keras does)."""

import os
import tarfile

import numpy as np

from mylib.keras.datasets._cache import cached, safe_pickle_load


def extracted_dir(dirname, archive, origin, what):
    """``<cache>/datasets/<dirname>``: the extracted archive; extracted from
    ``<dirname>.tar.gz`` (or `archive`) when only that is in the cache."""
    from mylib.keras.utils.file_utils import keras_home

    root = os.path.join(keras_home(), "datasets")
    d = os.path.join(root, dirname)
    if os.path.isdir(d):
        return d
    tgz = cached(archive, origin, what)
    with tarfile.open(tgz) as t:
        t.extractall(root, filter="data")
    if not os.path.isdir(d):
        raise FileNotFoundError(f"{what}: {tgz} did not contain the folder {dirname}.")
    return d


def load_batch(fpath, label_key="labels"):
    """``(data [n, 3, 32, 32] uint8, labels)`` of one pickled CIFAR batch. The files
    are the CIFAR archive's pickles of plain dicts of numpy arrays; they are the files
    Keras itself reads the same way."""
    with open(fpath, "rb") as f:
        d = safe_pickle_load(f, encoding="bytes")
    d = {k.decode("utf8") if isinstance(k, bytes) else k: v for k, v in d.items()}
    data = np.asarray(d["data"]).reshape(-1, 3, 32, 32)
    return data, d[label_key]
