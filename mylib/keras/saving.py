"""`keras.saving` (Keras 3): whole-model files, the registry of serializable classes,
and (de)serialization of objects to plain configs. The file format is mylib's (a zip
of JSON config and arrays; see `mylib.models.saving`): loading never runs code."""

from __future__ import annotations

from mylib.saving import (custom_object_scope, get_registered_name,  # noqa: F401
                          get_registered_object, load_model, register_keras_serializable,
                          save_model)
from mylib.layers.registration import get_custom_objects  # noqa: F401
from mylib.models.saving import load_weights as _load_weights
from mylib.models.saving import save_weights as _save_weights

CustomObjectScope = custom_object_scope

__all__ = ["custom_object_scope", "CustomObjectScope", "get_registered_name",
           "get_registered_object", "load_model", "register_keras_serializable",
           "save_model", "serialize_keras_object", "deserialize_keras_object",
           "load_weights", "save_weights", "get_custom_objects"]


def save_weights(model, filepath, overwrite=True):
    _save_weights(model, filepath, overwrite=overwrite)


def load_weights(model, filepath, skip_mismatch=False):
    _load_weights(model, filepath)


def serialize_keras_object(obj):
    """A plain-data config of `obj`: ``{"module", "class_name", "registered_name",
    "config"}`` for layers, models and objects with `get_config`; a function becomes its
    registered name (or its ``__name__``); plain values stay as they are.

    Raises:
      ValueError: for an object that has no config and is not registered.
    """
    from mylib.layers.base import Layer
    from mylib.models import saving as ms

    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [serialize_keras_object(o) for o in obj]
    if isinstance(obj, dict):
        return {k: serialize_keras_object(v) for k, v in obj.items()}
    if isinstance(obj, Layer):
        return ms.serialize_layer(obj)
    if hasattr(obj, "get_config") and not isinstance(obj, type):
        cls = type(obj)
        return {"module": cls.__module__, "class_name": cls.__name__,
                "registered_name": ms.registered_name_of(cls),
                "config": ms._jsonable(obj.get_config(), f"{cls.__name__}.get_config()")}
    if callable(obj):
        reg = ms.registered_name_of(obj)
        return reg if reg is not None else getattr(obj, "__name__", None) or repr(obj)
    raise ValueError(f"Cannot serialize {obj!r}: it has no `get_config` and is not "
                     "registered (keras.saving.register_keras_serializable).")


def deserialize_keras_object(config, custom_objects=None, safe_mode=True, **kwargs):
    """The object `serialize_keras_object` described: layers and models through their
    `from_config`, other classes (losses, metrics, optimizers, initializers,
    regularizers, constraints, schedules, registered classes) by class name; a string
    is a registered or built-in function / object name.

    Raises:
      ValueError: for an unknown class or name.
    """
    from mylib.layers.base import Layer
    from mylib.models import saving as ms

    if config is None or isinstance(config, (bool, int, float)):
        return config
    if isinstance(config, list):
        return [deserialize_keras_object(c, custom_objects) for c in config]
    if isinstance(config, str):
        obj = get_registered_object(config, custom_objects)
        if obj is not None:
            return obj
        for mod in _modules():
            fn = getattr(mod, config, None)
            if fn is not None:
                return fn
        raise ValueError(f"Unknown object name: {config!r}.")
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Expected a config dict with a 'class_name'. Received: {config!r}")
    name = config["class_name"]
    cls = None
    if config.get("registered_name"):
        cls = get_registered_object(config["registered_name"], custom_objects)
    if cls is None and custom_objects and name in custom_objects:
        cls = custom_objects[name]
    if cls is None:
        for mod in _modules():
            c = getattr(mod, name, None)
            if isinstance(c, type):
                cls = c
                break
    if cls is None:
        raise ValueError(f"Unknown class {name!r}: pass it in `custom_objects` or register "
                         "it with keras.saving.register_keras_serializable.")
    if issubclass(cls, Layer):
        return ms.deserialize_layer(config, custom_objects)
    return cls.from_config(dict(config.get("config") or {}))


def _modules():
    from mylib.keras import (activations, constraints, initializers, layers, losses, metrics,
                             optimizers, regularizers)
    from mylib.keras.optimizers import schedules
    from mylib import models

    return (layers, models, losses, metrics, optimizers, schedules, activations,
            initializers, regularizers, constraints)


def _register_op_resolver():
    from mylib.keras.ops.serialized import resolve
    from mylib.models import saving as ms

    ms.register_keras_op_resolver(resolve)


_register_op_resolver()
