"""`keras.metrics`: the names of `mylib.metrics` (Keras 3's)."""

from __future__ import annotations

import mylib.losses as _losses
import mylib.metrics as _src
from mylib.metrics import streaming as _tf1
from mylib.keras._face import missing as _missing
from mylib.keras._face import reexport as _reexport

# `mylib.metrics` also holds TensorFlow 1's streaming `tf.metrics.*` functions; Keras's
# namespace has only Keras's: its `mean_squared_error` / `mean_absolute_error` are the
# per-sample functions.
mean_squared_error, mean_absolute_error = _losses.mse, _losses.mae
_KERAS_FUNCTIONS = {"mean_squared_error", "mean_absolute_error"}
__all__ = _reexport(globals(), _src, skip=set(_tf1.__all__) - _KERAS_FUNCTIONS)
_HINTS = {}


def __getattr__(name):
    value = None if name in _tf1.__all__ else getattr(_src, name, None)
    if value is not None and not name.startswith("_"):
        return value
    raise _missing(__name__, name, _HINTS)
