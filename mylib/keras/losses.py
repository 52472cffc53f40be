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
__all__ += ["deserialize"]


def deserialize(name, custom_objects=None):
    """The loss of a `serialize` form (Keras 3's `keras.losses.deserialize`): a
    ``{"class_name", "config"}`` dict (Keras's own serialized form too) gives an
    instance, a name what `get` gives (the function for ``"mse"``, an instance for
    ``"MeanSquaredError"``). Classes in `custom_objects` (``{name: class or
    function}``) or registered with `register_keras_serializable` are looked up first.

    Raises:
      ValueError: for an unknown class or name.
    """
    from mylib.layers import registration

    if isinstance(name, dict):
        cls = None
        for key in (name.get("registered_name"), name.get("class_name")):
            if key and cls is None:
                cls = registration.get_registered_object(key, custom_objects)
        if cls is not None:
            return cls.from_config(dict(name.get("config") or {}))
    elif isinstance(name, str):
        obj = registration.get_registered_object(name, custom_objects)
        if obj is not None:
            return obj
    return _src.get(name)


_HINTS = {}


def __getattr__(name):
    value = None if name in _tf1.__all__ else getattr(_src, name, None)
    if value is not None and not name.startswith("_"):
        return value
    raise _missing(__name__, name, _HINTS)
