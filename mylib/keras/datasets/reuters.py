"""Reuters newswires as word-index sequences: ``reuters.npz`` (keys ``x``, ``y``)."""

import json

import numpy as np

from mylib.keras.datasets._cache import cached, load_npz
from mylib.keras.datasets._sequences import as_object_array, limit_words, mark, remove_long

__all__ = ["load_data", "get_word_index", "get_label_names"]


def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2,
              seed=113, start_char=1, oov_char=2, index_from=3, **kwargs):
    """``(x_train, y_train), (x_test, y_test)``: the 46-topic newswires as object
    arrays of int lists, shuffled by ``RandomState(seed)`` and split by `test_split`,
    processed as Keras 3 does (see `imdb.load_data`).

    Raises:
      FileNotFoundError: ``<KERAS_HOME>/datasets/reuters.npz`` is missing.
    """
    p = cached(path, None, "keras.datasets.reuters")
    f = load_npz(p)  # object arrays, read without running code
    xs, labels = f["x"], f["y"]
    rng = np.random.RandomState(seed)
    idx = np.arange(len(xs))
    rng.shuffle(idx)
    xs, labels = xs[idx], labels[idx]
    xs = mark(xs, start_char, index_from)
    if maxlen:
        xs, labels = remove_long(maxlen, xs, labels)
    xs = limit_words(xs, num_words, skip_top, oov_char)
    n = int(len(xs) * (1 - test_split))
    return ((as_object_array(xs[:n]), np.asarray(labels[:n])),
            (as_object_array(xs[n:]), np.asarray(labels[n:])))


def get_word_index(path="reuters_word_index.json"):
    p = cached(path, None, "keras.datasets.reuters.get_word_index")
    with open(p) as f:
        return json.load(f)


def get_label_names():
    """The 46 topic names, in label order (as Keras 3)."""
    return ("cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing",
            "money-supply", "coffee", "sugar", "trade", "reserves", "ship", "cotton",
            "carcass", "crude", "nat-gas", "cpi", "money-fx", "interest", "gnp", "meal-feed",
            "alum", "oilseed", "gold", "tin", "strategic-metal", "livestock", "retail",
            "ipi", "iron-steel", "rubber", "heat", "jobs", "lei", "bop", "zinc", "orange",
            "pet-chem", "dlr", "gas", "silver", "wpi", "hog", "lead")
