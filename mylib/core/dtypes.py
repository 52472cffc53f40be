"""Data types of tensors, with TensorFlow's names (`float32`, `int64`, `bool`, ...).

A `DType` wraps a numpy dtype (bfloat16 comes from `ml_dtypes`, as in JAX). The
special `resource` dtype marks variable handles: it has no numpy counterpart.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = ["DType", "as_dtype", "float16", "bfloat16", "float32", "float64", "complex64",
           "complex128", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "bool_", "string", "resource"]


class DType:
    """A tensor element type.

    Attributes:
      name: TensorFlow's name, e.g. ``"float32"``.
      as_numpy_dtype: the numpy scalar type (``None`` for ``resource``).
    """

    __slots__ = ("name", "_np")

    def __init__(self, name, np_dtype):
        self.name = name
        self._np = None if np_dtype is None else np.dtype(np_dtype)

    @property
    def as_numpy_dtype(self):
        return None if self._np is None else self._np.type

    @property
    def np(self):
        """The `numpy.dtype` (None for resource)."""
        return self._np

    @property
    def is_floating(self):
        return self._np is not None and (
            np.issubdtype(self._np, np.floating) or self._np == ml_dtypes.bfloat16
        )

    @property
    def is_complex(self):
        return self._np is not None and np.issubdtype(self._np, np.complexfloating)

    @property
    def is_integer(self):
        return self._np is not None and np.issubdtype(self._np, np.integer)

    @property
    def is_unsigned(self):
        return self._np is not None and np.issubdtype(self._np, np.unsignedinteger)

    @property
    def is_bool(self):
        return self._np is not None and self._np == np.bool_

    @property
    def is_differentiable(self):
        """Floating and complex tensors carry gradients; integers and bools do not."""
        return self.is_floating or self.is_complex

    @property
    def size(self):
        """Bytes per element."""
        return 0 if self._np is None else self._np.itemsize

    @property
    def min(self):
        if self.is_floating:
            return ml_dtypes.finfo(self._np).min
        return np.iinfo(self._np).min

    @property
    def max(self):
        if self.is_floating:
            return ml_dtypes.finfo(self._np).max
        return np.iinfo(self._np).max

    @property
    def base_dtype(self):
        return self

    def __repr__(self):
        return f"ml.{self.name}"

    def __str__(self):
        return self.name

    def __eq__(self, other):
        if isinstance(other, DType):
            return self.name == other.name
        try:
            return self.name == as_dtype(other).name
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.name)

    def __reduce__(self):
        return as_dtype, (self.name,)


float16 = DType("float16", np.float16)
bfloat16 = DType("bfloat16", ml_dtypes.bfloat16)
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
complex64 = DType("complex64", np.complex64)
complex128 = DType("complex128", np.complex128)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
uint16 = DType("uint16", np.uint16)
uint32 = DType("uint32", np.uint32)
uint64 = DType("uint64", np.uint64)
bool_ = DType("bool", np.bool_)
resource = DType("resource", None)

_ALL = [float16, bfloat16, float32, float64, complex64, complex128, int8, int16, int32,
        int64, uint8, uint16, uint32, uint64, bool_, resource]
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update({"half": float16, "float": float32, "double": float64, "bool_": bool_})
_BY_NP = {d.np: d for d in _ALL if d.np is not None}
_PY = {float: float32, int: int32, bool: bool_, complex: complex64}


def as_dtype(value):
    """Converts a `DType`, a name (``"float32"``), a numpy dtype or type, or a Python
    type (`float` -> float32, `int` -> int32, `bool`) to a `DType`.

    Raises:
      TypeError: if `value` names no known dtype.
    """
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
        raise TypeError(f"Unknown dtype name {value!r}. Known: {sorted(_BY_NAME)}")
    if value in _PY:
        return _PY[value]
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError(f"Cannot convert {value!r} to a mylib DType.") from None
    if npd in _BY_NP:
        return _BY_NP[npd]
    raise TypeError(f"Unsupported dtype {npd}.")


def is_lossless_cast(src, dst):
    """Whether every value of `src` is exactly representable in `dst` as a feed
    conversion: int into float and narrow into wide are accepted, float into int or a
    narrowing (float64 into float32 excepted, as TensorFlow feeds do) is not."""
    src, dst = as_dtype(src), as_dtype(dst)
    if src == dst:
        return True
    if src.is_bool:
        return dst.is_bool
    if dst.is_bool:
        return False
    if dst.is_floating or dst.is_complex:
        # TF accepts Python floats (float64) for float32/16 placeholders: numpy feeds of
        # float64 into float32 are the everyday case, so allow float -> narrower float.
        return not src.is_complex or dst.is_complex
    if dst.is_integer:
        if not src.is_integer:
            return False
        return np.can_cast(src.np, dst.np, "safe")
    return False

string = DType("string", np.object_)
_BY_NAME["string"] = string
