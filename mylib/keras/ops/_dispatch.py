"""How a `keras.ops` function runs: on arrays, or as a graph op on symbolic tensors.

Each op is written once, as a function of JAX arrays (its kernel). Called with numpy /
JAX arrays or Python numbers, the function runs directly and returns a JAX array (as
Keras 3 on its JAX backend). Called with a mylib `Tensor` or `Variable` among its
tensor arguments (inside a layer's `call`, a custom `train_step`, a graph program), it
adds one op of type ``Keras<Name>`` (e.g. ``KerasLogsumexp``) whose kernel is that
same function: the graph holds it like any other op, so `gradients` (through the
generic VJP op, `jax.vjp` of the kernel), placement, pruning and graph files work
unchanged. Python numbers and static arguments (axes, shapes, dtypes) become the op's
attrs, so a number keeps JAX's weak typing (``x_bf16 * 2.0`` stays bfloat16).
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.graph import Tensor
from mylib.core.op_registry import OpDef, convert_to_tensor

__all__ = []

_OPS = {}  # python name -> OpDef


def is_symbolic(v):
    """Whether `v` is a mylib graph value (a `Tensor`, or a `Variable` / anything with
    ``_as_tensor``)."""
    return isinstance(v, Tensor) or hasattr(v, "_as_tensor")


def any_symbolic(v):
    if isinstance(v, (list, tuple)):
        return any(any_symbolic(x) for x in v)
    if isinstance(v, dict):
        return any(any_symbolic(x) for x in v.values())
    return is_symbolic(v)


def plain(v, what="argument"):
    """`v` as a hashable plain attr value (tuples, Python numbers, strings, dtype
    names)."""
    if v is None or isinstance(v, (bool, int, float, str, complex)):
        return v
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return tuple(plain(x, what) for x in v)
    if isinstance(v, _dtypes.DType):
        return v.name
    if isinstance(v, (np.dtype, type)):
        try:
            return np.dtype(v).name
        except TypeError:
            pass
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    raise TypeError(f"`{what}` must be a static value (a number, a tuple of ints, a string "
                    f"or a dtype) when the op is built into a graph. Received: {what}={v!r}")


def _camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def _make_kernel(fn):
    def kernel(*arrays, layout_, **attrs):
        kwargs = dict(attrs)
        for name, kind, start, count in layout_:
            if kind == "t":
                kwargs[name] = arrays[start]
            else:  # a sequence of tensors
                kwargs[name] = list(arrays[start:start + count])
        return fn(**kwargs)
    return kernel


def keras_op(*tensor_params, seq=None, type_name=None):
    """Makes `fn` (a function of JAX arrays) a `keras.ops` function.

    Args:
      tensor_params: names of the parameters that take tensors (a Python number there
        becomes an attr).
      seq: name of a parameter taking a list of tensors (``concatenate(xs)``).
      type_name: the graph op type (default ``Keras`` + CamelCase of the name).
    """
    def deco(fn):
        sig = inspect.signature(fn)
        op_type = type_name or "Keras" + _camel(fn.__name__)
        opdef = OpDef(op_type, kernel=_make_kernel(fn))
        _OPS[fn.__name__] = opdef

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            name = kwargs.pop("name", None) if "name" not in sig.parameters else None
            ba = sig.bind(*args, **kwargs)
            ba.apply_defaults()
            vals = ba.arguments
            symbolic = any(is_symbolic(vals.get(p)) for p in tensor_params) or (
                seq is not None and any_symbolic(vals.get(seq)))
            if not symbolic:
                for p in tensor_params:  # nested lists of numbers, as Keras accepts
                    if isinstance(vals.get(p), (list, tuple)):
                        vals[p] = np.asarray(vals[p])
                return fn(**vals)
            for p in tensor_params:  # a list of numbers is a tensor here too (Keras)
                v = vals.get(p)
                if isinstance(v, (list, tuple)) and not any_symbolic(v):
                    vals[p] = _python_array(v)
            inputs, layout, attrs = [], [], {}
            for pname, v in vals.items():
                if pname in tensor_params and (is_symbolic(v) or isinstance(v, np.ndarray) or
                                               _is_jax_array(v)):
                    layout.append((pname, "t", len(inputs), 1))
                    inputs.append(convert_to_tensor(v))
                elif pname == seq:
                    items = list(v)
                    layout.append((pname, "s", len(inputs), len(items)))
                    inputs.extend(convert_to_tensor(x) for x in items)
                else:
                    attrs[pname] = plain(v, pname)
            return opdef(*inputs, layout_=tuple(layout), name=name, **attrs)

        wrapper.op_def = opdef
        return wrapper
    return deco


def _python_array(v):
    """A nested list of Python numbers as Keras 3's convert_to_tensor makes it: ints
    int32, floats float32 (numpy's 64-bit defaults would widen the op's result)."""
    a = np.asarray(v)
    if a.dtype == np.int64:
        return a.astype(np.int32)
    if a.dtype == np.float64:
        return a.astype(np.float32)
    return a


def _is_jax_array(v):
    try:
        import jax
    except ImportError:  # pragma: no cover - jax is a dependency
        return False
    return isinstance(v, jax.Array)


def op_types():
    """``{function name: op type}`` of every registered keras op."""
    return {k: v.name for k, v in _OPS.items()}
