"""IMDB reviews as word-index sequences: ``imdb.npz`` (and ``imdb_word_index.json``)."""

import json

import numpy as np

from mylib.keras.datasets._cache import cached, load_npz
from mylib.keras.datasets._sequences import as_object_array, limit_words, mark, remove_long

__all__ = ["load_data", "get_word_index"]


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113,
              start_char=1, oov_char=2, index_from=3, **kwargs):
    """``(x_train, y_train), (x_test, y_test)``: object arrays of int lists (word
    indices offset by `index_from`) and int labels 0/1, processed as Keras 3 does: each
    split shuffled by one ``RandomState(seed)``, `start_char` first, sequences of
    `maxlen` or more dropped, words beyond `num_words` or below `skip_top` replaced by
    `oov_char`.

    Raises:
      FileNotFoundError: ``<KERAS_HOME>/datasets/imdb.npz`` is missing.
    """
    p = cached(path, None, "keras.datasets.imdb")
    f = load_npz(p)  # object arrays, read without running code
    x_train, y_train = f["x_train"], f["y_train"]
    x_test, y_test = f["x_test"], f["y_test"]
    rng = np.random.RandomState(seed)
    idx = np.arange(len(x_train))
    rng.shuffle(idx)
    x_train, y_train = x_train[idx], y_train[idx]
    idx = np.arange(len(x_test))
    rng.shuffle(idx)
    x_test, y_test = x_test[idx], y_test[idx]
    x_train, x_test = mark(x_train, start_char, index_from), mark(x_test, start_char,
                                                                   index_from)
    if maxlen:
        x_train, y_train = remove_long(maxlen, x_train, y_train)
        x_test, y_test = remove_long(maxlen, x_test, y_test)
        if not x_train or not x_test:
            raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, "
                             "no sequence was kept. Increase maxlen.")
    xs = limit_words(x_train + x_test, num_words, skip_top, oov_char)
    n = len(x_train)
    labels = np.concatenate([y_train, y_test])
    return (as_object_array(xs[:n]), labels[:n]), (as_object_array(xs[n:]), labels[n:])


def get_word_index(path="imdb_word_index.json"):
    """``{word: index}`` from ``<KERAS_HOME>/datasets/imdb_word_index.json``."""
    p = cached(path, None, "keras.datasets.imdb.get_word_index")
    with open(p) as f:
        return json.load(f)
