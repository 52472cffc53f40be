"""The registry of serializable classes and functions (Keras's
`register_keras_serializable`): saved models refer to custom objects by registered name,
and loading looks them up here; it never runs code from a file. Layers (`Lambda`) and
models (`load_model`) both use this one module.
"""

from __future__ import annotations

import contextlib

__all__ = ["register_serializable", "register_keras_serializable", "get_registered_name",
           "registered_name_of", "get_custom_objects",
           "get_registered_object", "custom_object_scope"]

_REGISTERED = {}  # "package>name" -> class or function
_NAMES = {}  # class or function -> "package>name"
_SCOPES = []  # custom_object_scope dicts


def register_serializable(package="Custom", name=None):
    """Decorator registering a class (or function) under ``"<package>><name>"`` so that
    saved models refer to it by that name and `load_model` finds it (Keras's
    `register_keras_serializable`).

    Example::

        @ml.saving.register_serializable(package="my_project")
        class Scale(ml.layers.Layer):
            def __init__(self, factor=2.0, **kw):
                super().__init__(**kw)
                self.factor = factor
            def call(self, x):
                return x * self.factor
            def get_config(self):
                return {**super().get_config(), "factor": self.factor}
    """
    if not isinstance(package, str) or ">" in package:
        raise ValueError(f"`package` must be a string without '>'. Received: {package!r}")

    def decorator(obj):
        key = f"{package}>{name or obj.__name__}"
        _REGISTERED[key] = obj
        _NAMES[obj] = key
        return obj

    return decorator


register_keras_serializable = register_serializable


def get_registered_name(obj):
    """The registered name of `obj` (a class or function), else its ``__name__``."""
    return _NAMES.get(obj, getattr(obj, "__name__", None))


def get_registered_object(name, custom_objects=None):
    """The class or function registered (or passed in `custom_objects`, or in an
    active `custom_object_scope`) under `name`; None if there is none (always for a
    `name` that is not a string, e.g. a list read from a crafted file)."""
    if not isinstance(name, str):
        return None
    for table in [custom_objects or {}] + _SCOPES[::-1]:
        if name in table:
            return table[name]
    return _REGISTERED.get(name)


def get_custom_objects():
    """The live global dict of custom objects, ``{name: class or function}`` (Keras 3's
    `get_custom_objects`): `register_serializable` adds ``"package>name"`` entries, and
    entries a program adds (``get_custom_objects()["my_loss"] = my_loss``) are found by
    name when models and configs are loaded."""
    return _REGISTERED


@contextlib.contextmanager
def custom_object_scope(custom_objects):
    """Within the block, `load_model` and `from_config` also find `custom_objects`
    (a dict ``{name: class or function}``)."""
    _SCOPES.append(dict(custom_objects))
    try:
        yield
    finally:
        _SCOPES.pop()


def registered_name_of(obj):
    """The name `obj` was registered under, or None when it is not registered."""
    try:
        return _NAMES.get(obj)
    except TypeError:  # unhashable objects are never registered
        return None


def serialize_object(obj):
    """The saved form of a regularizer, constraint or initializer: an object with
    `get_config` becomes ``{"class_name", "config"}`` (plus ``"registered_name"`` when
    its class is registered); a registered function becomes its registered name; any
    other callable its ``__name__`` (a built-in name such as ``"l2"``)."""
    if obj is None:
        return None
    if hasattr(obj, "get_config") and not isinstance(obj, type):
        cls = type(obj)
        out = {"class_name": cls.__name__, "config": obj.get_config()}
        reg = registered_name_of(cls)
        if reg is not None:
            out["registered_name"] = reg
        return out
    reg = registered_name_of(obj)
    if reg is not None:
        return reg
    return getattr(obj, "__name__", repr(obj))


def deserialize_object(identifier, builtins, what):
    """The object saved by `serialize_object`: a class of `builtins` (a dict
    ``{name: class}``) or a registered class (looked up, never imported), rebuilt with
    ``from_config(config)``. Raises ValueError naming `what` for an unknown class."""
    name = identifier.get("class_name")
    reg = identifier.get("registered_name")
    cls = None
    for key in (reg, name):
        if key and cls is None:
            cls = get_registered_object(key)
    if cls is None:
        cls = builtins.get(name)
    if cls is None:
        raise ValueError(f"Unknown {what} class: {name!r}. Register custom classes with "
                         "`ml.saving.register_serializable` before loading.")
    config = identifier.get("config") or {}
    if isinstance(cls, type) and hasattr(cls, "from_config"):
        return cls.from_config(config)
    return cls(**config)
