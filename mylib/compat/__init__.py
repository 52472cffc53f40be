"""`ml.compat`: TensorFlow's ``tf.compat``: string conversions (`as_bytes`, `as_str`,
`as_text`, `as_str_any`, `path_to_str`) and `v1`, the TensorFlow 1 namespace
(``ml.compat.v1.X`` is ``ml.X``)."""

from __future__ import annotations

import numbers as _numbers
import os as _os

from mylib.core.tensor_shape import dimension_value  # noqa: F401 - tf.compat.dimension_value

__all__ = ["as_bytes", "as_str", "as_text", "as_str_any", "path_to_str", "integral_types",
           "real_types", "complex_types", "bytes_or_text_types", "dimension_value", "v1"]

integral_types = (_numbers.Integral,)
real_types = (_numbers.Real,)
complex_types = (_numbers.Complex,)
bytes_or_text_types = (bytes, str)


def as_bytes(bytes_or_text, encoding="utf-8"):
    """`bytes` from `str` (encoded) or bytes-like. Raises TypeError otherwise."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text, encoding="utf-8"):
    """`str` from bytes (decoded) or `str`. Raises TypeError otherwise."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, (bytes, bytearray)):
        return bytes(bytes_or_text).decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text


def as_str_any(value):
    """`str(value)`, decoding bytes."""
    if isinstance(value, (bytes, bytearray)):
        return as_str(value)
    return str(value)


def path_to_str(path):
    """A path-like object as `str` (other values unchanged)."""
    if isinstance(path, _os.PathLike):
        return as_str_any(_os.fspath(path))
    return path


def __getattr__(name):
    if name == "v1":
        import importlib

        return importlib.import_module(f"mylib.compat.{name}")
    raise AttributeError(f"module 'mylib.compat' has no attribute {name!r}")
