"""Boston housing prices: ``boston_housing.npz`` (keys ``x``, ``y``)."""

import numpy as np

from mylib.keras.datasets._cache import cached

__all__ = ["load_data"]


def load_data(path="boston_housing.npz", test_split=0.2, seed=113):
    """``(x_train, y_train), (x_test, y_test)``: 13 float features and the median price
    (k$), shuffled by ``RandomState(seed)`` and split by `test_split` (as Keras).

    Raises:
      ValueError: `test_split` outside ``[0, 1)``.
      FileNotFoundError: ``<KERAS_HOME>/datasets/boston_housing.npz`` is missing.
    """
    if not 0 <= test_split < 1:
        raise ValueError(f"`test_split` must be in [0, 1). Received: test_split={test_split}")
    p = cached(path, None, "keras.datasets.boston_housing")
    with np.load(p, allow_pickle=False) as f:
        x, y = f["x"], f["y"]
    rng = np.random.RandomState(seed)
    idx = np.arange(len(x))
    rng.shuffle(idx)
    x, y = x[idx], y[idx]
    n = int(len(x) * (1 - test_split))
    return (np.array(x[:n]), np.array(y[:n])), (np.array(x[n:]), np.array(y[n:]))
