"""Unpickling that builds only numpy arrays, numpy scalars and dtypes and plain Python
values (numbers, strings, bytes, tuples, lists, dicts, None), never any other object:
a tampered or crafted pickle fails with `pickle.UnpicklingError` instead of running
code. Used for Keras dataset files and for mylib's own parameter-server messages."""

from __future__ import annotations

import io
import pickle

import numpy as np

_ALLOWED = frozenset({
    (m, name)
    for m in ("numpy.core.multiarray", "numpy._core.multiarray")
    for name in ("_reconstruct", "scalar")
} | {(m, "_frombuffer") for m in ("numpy.core.numeric", "numpy._core.numeric")}
  | {("numpy", "ndarray"), ("numpy", "dtype")})


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, what, hint, **kw):
        super().__init__(f, **kw)
        self._what, self._hint = what, hint

    def find_class(self, module, name):
        if name == "_reconstruct" and (module, name) in _ALLOWED:
            return self._empty_reconstruct(super().find_class(module, name))
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        if module == "ml_dtypes":  # bfloat16, float8 ...: scalar types only
            obj = super().find_class(module, name)
            if isinstance(obj, type) and issubclass(obj, np.generic):
                return obj
        raise pickle.UnpicklingError(
            f"Refusing to load {module}.{name} from {self._what}: only numpy arrays are "
            f"expected.{self._hint}")


    def _empty_reconstruct(self, reconstruct):
        # numpy pickles an array as an empty one, `_reconstruct(ndarray, (0,), b'b')`,
        # whose __setstate__ then brings the data (so its size is bounded by the
        # pickle). A crafted pickle could ask for any shape: 60 bytes returned an
        # uninitialized 3 GB array. Only empty ones are built.
        what, hint = self._what, self._hint

        def checked(subtype, shape, dtype):
            n = 1
            for d in shape if isinstance(shape, tuple) else (shape,):
                n *= d if isinstance(d, int) else 1
            if n != 0:
                raise pickle.UnpicklingError(
                    f"Refusing an array of shape {str(shape)[:100]} built directly in "
                    f"{what}: numpy pickles arrays empty, then sets their data.{hint}")
            return reconstruct(subtype, shape, dtype)
        return checked


def load(f, what, hint="", encoding="ASCII"):
    """`pickle.load` from file object `f`, restricted as the module says; `what` names
    the source in the error, `hint` is appended to it."""
    return _Unpickler(f, what, hint, encoding=encoding).load()


def loads(data, what, hint=""):
    """`load` from `bytes`."""
    return _Unpickler(io.BytesIO(data), what, hint).load()
