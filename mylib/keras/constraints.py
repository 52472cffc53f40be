"""`keras.constraints`: the names of `mylib.layers.constraints` (Keras 3's)."""

from __future__ import annotations

import mylib.layers.constraints as _src
from mylib.keras._face import missing as _missing
from mylib.keras._face import reexport as _reexport

__all__ = _reexport(globals(), _src)


def __getattr__(name):
    value = getattr(_src, name, None)
    if value is not None and not name.startswith("_"):
        return value
    raise _missing(__name__, name, {})
