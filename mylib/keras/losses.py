"""`keras.losses`: the names of `mylib.losses` (Keras 3's)."""

from __future__ import annotations

import mylib.losses as _src
import mylib.losses_v1 as _tf1
from mylib.keras._face import missing as _missing
from mylib.keras._face import reexport as _reexport

# `mylib.losses` also holds TensorFlow 1's `tf.losses.*` functions; Keras's namespace has
# only Keras's, and its `mean_squared_error` is the per-sample function (`mse`).
mean_squared_error = _src.mse
__all__ = _reexport(globals(), _src, skip=set(_tf1.__all__) - {"mean_squared_error"})
_HINTS = {}


def __getattr__(name):
    value = None if name in _tf1.__all__ else getattr(_src, name, None)
    if value is not None and not name.startswith("_"):
        return value
    raise _missing(__name__, name, _HINTS)
