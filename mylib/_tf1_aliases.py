"""TensorFlow 1's deprecated spellings that old programs still use, each the same
operation under its current name: `initialize_all_variables`, `all_variables`,
`to_float` / `to_int32` / ..., `assign` / `assign_add` / `assign_sub` and the scatter
updates `scatter_update` / `scatter_add` / `scatter_sub` / `scatter_nd_update` /
`scatter_nd_add` / `scatter_nd_sub` (functions of a variable), `mul`, `sub`, `neg`, `div`,
`arg_max` / `arg_min`.
Star-imported into `mylib`."""

from __future__ import annotations

from mylib.core import dtypes as _dtypes
from mylib.core.ops import math_ops as _math
from mylib.core.ops import reduction_ops as _reduction
from mylib.core.ops.cast_ops import cast as _cast
from mylib.core.op_registry import convert_to_tensor as _convert
from mylib.core.ops.state_ops import (scatter_add, scatter_nd_add, scatter_nd_sub,  # noqa: F401
                                      scatter_nd_update, scatter_sub, scatter_update)
from mylib.core.variables import (Variable as _Variable, global_variables as _globals,
                                  global_variables_initializer as _gvi,
                                  local_variables_initializer as _lvi,
                                  variables_initializer as _vi)

__all__ = ["initialize_all_variables", "initialize_local_variables", "initialize_variables",
           "all_variables", "to_float", "to_double", "to_int32", "to_int64", "to_bfloat16",
           "assign", "assign_add", "assign_sub", "mul", "sub", "neg", "div", "arg_max", "arg_min",
           "scatter_update", "scatter_add", "scatter_sub", "scatter_nd_update",
           "scatter_nd_add", "scatter_nd_sub"]


def initialize_all_variables():
    """TensorFlow 0.x/1.x's name of `global_variables_initializer`."""
    return _gvi()


def initialize_local_variables():
    """TensorFlow 1's name of `local_variables_initializer`."""
    return _lvi()


def initialize_variables(var_list, name="init"):
    """TensorFlow 1's name of `variables_initializer`."""
    return _vi(var_list, name=name)


def all_variables():
    """TensorFlow 1's name of `global_variables`."""
    return _globals()


def to_float(x, name="ToFloat"):
    return _cast(x, _dtypes.float32, name=name)


def to_double(x, name="ToDouble"):
    return _cast(x, _dtypes.float64, name=name)


def to_int32(x, name="ToInt32"):
    return _cast(x, _dtypes.int32, name=name)


def to_int64(x, name="ToInt64"):
    return _cast(x, _dtypes.int64, name=name)


def to_bfloat16(x, name="ToBFloat16"):
    return _cast(x, _dtypes.bfloat16, name=name)


def _variable(ref, fn):
    if not isinstance(ref, _Variable):
        raise TypeError(f"{fn}: `ref` must be a Variable (values live in variables); got "
                        f"{ref!r}")
    return ref


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """``ref.assign(value)``: the variable's new value, read after the write."""
    return _variable(ref, "assign").assign(value, name=name)


def assign_add(ref, value, use_locking=None, name=None):
    """``ref.assign_add(value)``: the variable's new value, read after the write."""
    return _variable(ref, "assign_add").assign_add(value, name=name)


def assign_sub(ref, value, use_locking=None, name=None):
    """``ref.assign_sub(value)``: the variable's new value, read after the write."""
    return _variable(ref, "assign_sub").assign_sub(value, name=name)


def mul(x, y, name=None):
    return _math.multiply(x, y, name=name)


def sub(x, y, name=None):
    return _math.subtract(x, y, name=name)


def neg(x, name=None):
    return _math.negative(x, name=name)


def div(x, y, name=None):
    """TensorFlow 1's `div`: Python 2 division (floor division for integers, true
    division for floats)."""
    x = _convert(x)
    if x.dtype.is_integer:
        return _math.floordiv(x, y, name=name)
    return _math.divide(x, y, name=name)


def arg_max(input, dimension, output_type=_dtypes.int64, name=None):  # noqa: A002
    """TensorFlow 1's `arg_max`: `argmax(input, axis=dimension)` (the first index of the
    largest value along `dimension`; int64 by default). `dimension` is required, as TF1."""
    return _reduction.argmax(input, axis=dimension, output_type=output_type, name=name)


def arg_min(input, dimension, output_type=_dtypes.int64, name=None):  # noqa: A002
    """TensorFlow 1's `arg_min`: `argmin(input, axis=dimension)` (the first index of the
    smallest value along `dimension`; int64 by default). `dimension` is required, as TF1."""
    return _reduction.argmin(input, axis=dimension, output_type=output_type, name=name)
