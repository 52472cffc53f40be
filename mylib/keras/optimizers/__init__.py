"""`keras.optimizers`: mylib's optimizers (optax underneath) under Keras 3's names, with
`schedules` and `LossScaleOptimizer`.

Keras 3's ``optimizer.apply(grads, trainable_variables)`` and
``apply_gradients(zip(grads, vars))`` build the update op in the graph (see
`mylib.optimizers.Optimizer`).
"""

from __future__ import annotations

import mylib.optimizers as _src
from mylib.keras._face import missing as _missing
from mylib.keras._face import reexport as _reexport
from mylib.keras.optimizers import schedules  # noqa: F401
from mylib.mixed_precision import LossScaleOptimizer  # noqa: F401

__all__ = _reexport(globals(), _src) + ["schedules", "LossScaleOptimizer"]

_OTHER = ("use keras.optimizers.Adam, AdamW, SGD, RMSprop, Adagrad, Nadam, Adamax, Adadelta, "
          "Ftrl, Lion, Lamb or Adafactor (the optax transforms mylib wraps)")
_HINTS = {n: f"{_OTHER}." for n in ("Muon", "ScheduleFreeAdamW", "MultiOptimizer",
                                    "OptimizerMap")}


def __getattr__(name):
    value = getattr(_src, name, None)
    if value is not None and not name.startswith("_"):
        return value
    raise _missing(__name__, name, _HINTS)
