"""`keras.losses`: the names of `mylib.losses` (Keras 3's)."""

from __future__ import annotations

import mylib.losses as _src
from mylib.keras._face import missing as _missing
from mylib.keras._face import reexport as _reexport

__all__ = _reexport(globals(), _src)
_HINTS = {
    "CTC": "not implemented; write the loss with keras.ops in a custom keras.losses.Loss.",
    "Tversky": "write it with keras.ops in a custom keras.losses.Loss.",
    "Dice": "write it with keras.ops in a custom keras.losses.Loss.",
}


def __getattr__(name):
    value = getattr(_src, name, None)
    if value is not None and not name.startswith("_"):
        return value
    raise _missing(__name__, name, _HINTS)
