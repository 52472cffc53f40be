"""The op registry: one `OpDef` per op type, holding its kernel, shape rule, flags and
gradient, so that an op is defined in one place.

An op type is defined once::

    Square = OpDef("Square", kernel=lambda x: x * x)      # shape/dtype by jax.eval_shape

    @RegisterGradient("Square")                          # written in graph ops
    def _square_grad(op, grad):
        return [grad * 2.0 * op.inputs[0]]

    y = Square(x)                                        # adds an op to the default graph

Kernels are pure functions of JAX arrays; attrs arrive as keyword arguments. Ops that
touch session state (variables, random streams) give `lower(ctx, op, *inputs)` instead.
An op with no registered gradient gets the generic VJP op (`jax.vjp` of its kernel).
"""

from __future__ import annotations

import functools
import threading

import jax
import numpy as np
from jax import export as _jax_export

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.graph import Operation, Tensor, _user_frame, get_default_graph
from mylib.core.tensor_shape import TensorShape, as_shape
from mylib.core.x64 import x64

_REGISTRY = {}
_GRADIENTS = {}
_NOT_DIFFERENTIABLE = set()


class TensorSpec:
    """A (shape, dtype) pair used by shape rules: `shape` is a `TensorShape`."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = as_shape(shape)
        self.dtype = _dtypes.as_dtype(dtype)

    def __repr__(self):
        return f"TensorSpec({self.shape}, {self.dtype.name})"


class OpDef:
    """Definition of an op type.

    Args:
      name: op type, CamelCase as in TensorFlow (``"MatMul"``).
      kernel: pure function ``kernel(*arrays, **attrs) -> array | tuple of arrays``.
      lower: instead of `kernel`, ``lower(ctx, op, *values)`` for ops that read or write
        session state; `ctx` is the lowering context (see `mylib.core.lowering`).
      shape_fn: optional rule ``shape_fn(*specs, **attrs) -> TensorSpec | list`` (faster
        than the default `jax.eval_shape`, and it can word its errors better).
      stateful: the op has effects or is non-deterministic; it is never pruned as
        common or constant-folded, and runs once per step.
      host: the op must run on the host, outside XLA.
      host_effect: optional ``host_effect(attrs) -> str | None``: what an op with these
        attrs does to the host beyond its outputs and session state (writes a file,
        calls a Python function or object of this process), in words, or None.
        `import_graph_def` refuses ops that have one unless the caller allows host
        effects.
      index_check: optional ``index_check(ctx, op, *values, **attrs) -> [(k, bounds,
        nd)]``: the inputs (by position k) that hold indices and the sizes they must
        stay below (``nd``: the last axis of the indices holds one index per entry of
        `bounds`). A step checks them as it runs: an index out of range fails the
        step with InvalidArgumentError naming the op, and no variable changes (see
        `mylib.core.lowering.LoweringContext.check_indices`).
    """

    def __init__(self, name, kernel=None, *, lower=None, shape_fn=None, stateful=False,
                 host=False, host_effect=None, register=True, index_check=None):
        if kernel is None and lower is None:
            raise ValueError(f"OpDef {name!r} needs a kernel or a lower function")
        self.name = name
        self.kernel = kernel
        self.lower = lower
        self._shape_fn = shape_fn
        self.stateful = stateful
        self.host = host
        self.host_effect = host_effect
        self.index_check = index_check
        self._cache = {}
        if register:
            if name in _REGISTRY:
                raise ValueError(f"Op type {name!r} is already registered")
            _REGISTRY[name] = self

    def shape_fn(self, fn):
        """Decorator that sets the shape rule."""
        self._shape_fn = fn
        return fn

    def __call__(self, *inputs, name=None, **attrs):
        op = self.create(inputs, attrs, name)
        outs = op.outputs
        if not outs:
            return op
        return outs[0] if len(outs) == 1 else tuple(outs)

    def create(self, inputs, attrs, name=None, graph=None, frame=None):
        """Adds an op of this type to the graph and returns the `Operation`."""
        tensors = [convert_to_tensor(x) for x in inputs]
        if graph is None:
            default = get_default_graph()
            # Inside a function graph (a cond branch, a loop body) ops go to it, and
            # inputs from enclosing graphs are captured below.
            if tensors and getattr(default, "capture", None) is None:
                graph = tensors[0].graph
            else:
                graph = default
        for i, t in enumerate(tensors):
            if t.graph is not graph:
                capture = getattr(graph, "capture", None)
                if capture is None:
                    raise ValueError(
                        f"{self.name}: input '{t.name}' is from a different graph than the op")
                tensors[i] = capture(t)
        if frame is None:
            frame = _user_frame()
        with x64():  # shape inference traces kernels: 64-bit types stay 64-bit
            specs = self.infer(tensors, attrs, name, frame)
        return graph._create_op(self, tensors, attrs, specs, name, frame)

    # --- shape inference ---
    def infer(self, tensors, attrs, name=None, frame=None):
        """Output (TensorShape, DType) pairs for inputs `tensors` and `attrs`."""
        specs = [TensorSpec(t.shape, t.dtype) for t in tensors]
        try:
            if self._shape_fn is not None:
                out = self._shape_fn(*specs, **attrs)
            else:
                out = self._eval_shape(specs, attrs)
        except errors.OpError as e:
            raise type(e)(_creation_message(self.name, name, e.message, tensors, frame)) from None
        except (ValueError, TypeError, IndexError) as e:
            raise errors.InvalidArgumentError(
                _creation_message(self.name, name, _short(e), tensors, frame)) from None
        if out is None:
            return []
        if isinstance(out, TensorSpec):
            out = [out]
        return [(s.shape, s.dtype) for s in out]

    def _eval_shape(self, specs, attrs):
        if self.kernel is None:
            raise TypeError(f"op {self.name} has no kernel and no shape rule")
        try:
            key = (tuple((s.shape.as_tuple(), s.dtype.name) for s in specs),
                   tuple(sorted(attrs.items())))
            hash(key)
        except TypeError:
            key = None
        if key is not None:
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        out = _eval_shape_symbolic(self.kernel, specs, attrs)
        if key is not None and len(self._cache) < 4096:
            self._cache[key] = out
        return out

    def __repr__(self):
        return f"<OpDef {self.name}>"


def _short(e):
    msg = str(e).strip().split("\n")[0]
    return msg if len(msg) < 400 else msg[:400] + "..."


def _creation_message(op_type, name, msg, tensors, frame):
    lines = [f"{op_type}{' ' + repr(name) if name else ''}: {msg}"]
    for i, t in enumerate(tensors):
        lines.append(f"  input {i} = '{t.name}'  {t.dtype.name} {t.shape}")
    if frame is not None:
        import linecache

        src = linecache.getline(frame[0], frame[1]).strip()
        lines.append(f"  created at {frame[0]}:{frame[1]} in {frame[2]}:   {src}")
    return "\n".join(lines)


_sym_lock = threading.Lock()


def _eval_shape_symbolic(kernel, specs, attrs):
    """`jax.eval_shape` of the kernel with unknown dims as symbolic dimensions."""
    for s in specs:
        if s.dtype == _dtypes.resource:
            raise TypeError("resource inputs need an explicit shape rule")
    fn = functools.partial(kernel, **attrs) if attrs else kernel
    n_unknown = sum(1 for s in specs if s.shape.rank is not None for d in s.shape.as_tuple()
                    if d is None)
    if any(s.shape.rank is None for s in specs):
        # Unknown rank: only the dtype can be inferred (probe with scalars).
        probe = [jax.ShapeDtypeStruct(() if s.shape.rank is None else
                                      tuple(1 if d is None else d for d in s.shape.as_tuple()),
                                      s.dtype.np) for s in specs]
        out = jax.eval_shape(fn, *probe)
        return [TensorSpec(TensorShape(None), _dtypes.as_dtype(o.dtype))
                for o in jax.tree_util.tree_leaves(out)]
    if n_unknown == 0:
        args = [jax.ShapeDtypeStruct(s.shape.as_tuple(), s.dtype.np) for s in specs]
        return _to_specs(jax.eval_shape(fn, *args))
    # First each unknown dim its own symbol; if the kernel needs two unknown dims to
    # agree (x + y with both [?, n]), retry with one shared symbol.
    names = [f"_d{i}" for i in range(n_unknown)]
    last_err = None
    for shared in (False, True):
        syms = (_jax_export.symbolic_shape(", ".join(names)) if not shared
                else _jax_export.symbolic_shape("_d0") * n_unknown)
        it = iter(syms)
        args = [jax.ShapeDtypeStruct(tuple(next(it) if d is None else d
                                           for d in s.shape.as_tuple()), s.dtype.np)
                for s in specs]
        try:
            return _to_specs(jax.eval_shape(fn, *args))
        except Exception as e:  # noqa: BLE001 - symbolic inconclusive comparisons
            last_err = e
            if not _is_symbolic_failure(e):
                raise
    # Last resort: concrete probes (two values) and mark the dims that moved as unknown.
    outs = []
    for probe_val in (2, 3):
        args = [jax.ShapeDtypeStruct(tuple(probe_val if d is None else d
                                           for d in s.shape.as_tuple()), s.dtype.np)
                for s in specs]
        try:
            outs.append(jax.tree_util.tree_leaves(jax.eval_shape(fn, *args)))
        except Exception:  # noqa: BLE001
            raise last_err from None
    res = []
    for a, b in zip(*outs):
        if len(a.shape) != len(b.shape):
            res.append(TensorSpec(TensorShape(None), _dtypes.as_dtype(a.dtype)))
        else:
            res.append(TensorSpec([x if x == y else None for x, y in zip(a.shape, b.shape)],
                                  _dtypes.as_dtype(a.dtype)))
    return res


def _is_symbolic_failure(e):
    s = type(e).__name__ + str(e)
    return ("symbolic" in s.lower() or "inconclusive" in s.lower() or
            "InconclusiveDimensionOperation" in s or "_d" in s)


def _to_specs(out):
    leaves = jax.tree_util.tree_leaves(out)
    res = []
    for o in leaves:
        dims = [d if isinstance(d, (int, np.integer)) else None for d in o.shape]
        res.append(TensorSpec(dims, _dtypes.as_dtype(o.dtype)))
    return res


def get_op_def(op_type):
    """The `OpDef` registered for `op_type`.

    Raises:
      NotFoundError: if no op of that type is registered.
    """
    try:
        return _REGISTRY[op_type]
    except KeyError:
        raise errors.NotFoundError(f"Op type not registered: '{op_type}'") from None


def registered_ops():
    return dict(_REGISTRY)


class RegisterGradient:
    """Decorator registering the gradient function of an op type, as in TensorFlow.

    The function is called as ``fn(op, *output_grads)`` and returns one gradient per
    input (a `Tensor`, `IndexedSlices` or None), built from graph ops so the gradient
    can itself be placed, inspected and differentiated again. Gradients that broadcast
    are summed back to the input's shape by `gradients()`, once, for every op.
    """

    def __init__(self, op_type):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn):
        _GRADIENTS[self._op_type] = fn
        return fn


def NotDifferentiable(op_type):  # noqa: N802 - TensorFlow's name
    """Declares that `op_type` has no gradient (its inputs get None)."""
    _NOT_DIFFERENTIABLE.add(op_type)


no_gradient = NotDifferentiable


def get_gradient_function(op):
    """The registered gradient of `op`, None if not differentiable, or the string
    ``"vjp"`` when the generic VJP op should be used."""
    t = op.type
    if t in _NOT_DIFFERENTIABLE:
        return None
    fn = _GRADIENTS.get(t)
    if fn is not None:
        return fn
    if op.op_def.kernel is None:
        return None
    return "vjp"


# --- conversion of Python values ---
# `convert_to_tensor` makes `Const` (and, for lists holding tensors, `Pack`) ops. Those op
# types are defined in `ops.constant_ops` / `ops.array_ops`, which import this module, so
# they are found here by type name in the registry (`mylib.core` imports every ops
# module, so both are registered before any conversion); the rules that turn a Python
# value into the constant's array are here, shared with `constant_ops.constant`.
_CONST_CACHE_LIMIT = 0


def _python_dtype(value):
    """TensorFlow's defaults: Python float -> float32, int -> int32 (int64 if large)."""
    if isinstance(value, bool):
        return _dtypes.bool_
    if isinstance(value, int):
        return _dtypes.int32 if -2**31 <= value < 2**31 else _dtypes.int64
    if isinstance(value, float):
        return _dtypes.float32
    if isinstance(value, complex):
        return _dtypes.complex64
    if isinstance(value, (list, tuple)):
        flat = np.asarray(value, dtype=object).reshape(-1)
        if flat.size == 0:
            return _dtypes.float32
        kinds = {_python_dtype(v.item() if isinstance(v, np.generic) else v) for v in flat
                 if not isinstance(v, np.ndarray)}
        for order in (_dtypes.complex64, _dtypes.float32, _dtypes.int64, _dtypes.int32,
                      _dtypes.bool_):
            if order in kinds:
                return order
        return _dtypes.as_dtype(np.asarray(value).dtype)
    return None


def _const_array(value, dtype=None, dtype_hint=None):
    """``(array, DType)`` of a constant holding `value`: `dtype` if given, else TensorFlow's
    default for Python values (adopting `dtype_hint` where it fits), else `value`'s own.

    Raises:
      TypeError: if `value` is not numeric data or does not fit `dtype` exactly.
    """
    if dtype is not None:
        dt = _dtypes.as_dtype(dtype)
    else:
        dt = None
        if not isinstance(value, (np.ndarray, np.generic)) and not hasattr(value, "__jax_array__") \
                and not hasattr(value, "dtype"):
            pd = _python_dtype(value)
            if dtype_hint is not None and pd is not None:
                hint = _dtypes.as_dtype(dtype_hint)
                # A Python number adopts the other operand's dtype (x + 1.0, x * 2).
                if not (pd.is_floating and hint.is_integer) and \
                        not (pd.is_complex and not hint.is_complex):
                    pd = hint
            dt = pd
        if dt is None:
            dt = _dtypes.as_dtype(np.asarray(value).dtype)
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError(f"Cannot convert {value!r} to a tensor")
    if dt.is_integer and arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dt.name}: "
                            "the value is not an integer")
    if dt.is_integer and arr.dtype.kind in "iu" and arr.size:
        if arr.min() < dt.min or arr.max() > dt.max:
            raise TypeError(f"Value {value!r} is out of range for dtype {dt.name}")
    return arr.astype(dt.np), dt


def convert_to_tensor(value, dtype=None, name=None, dtype_hint=None):
    """Converts `value` to a `Tensor`: tensors pass through; objects with
    ``_as_tensor()`` (variables) convert themselves; numpy arrays, JAX arrays, Python
    scalars and nested lists become `Const` ops.

    Args:
      dtype: required dtype; a Python number or list is created in it.
      dtype_hint: preferred dtype for Python values when `dtype` is None.
    Raises:
      TypeError: if `value` is a tensor of another dtype than `dtype`, or cannot convert.
    """
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != _dtypes.as_dtype(dtype):
            raise TypeError(
                f"Tensor '{value.name}' has dtype {value.dtype.name}, expected "
                f"{_dtypes.as_dtype(dtype).name}")
        return value
    conv = getattr(value, "_as_tensor", None)
    if conv is not None:
        t = conv()
        if dtype is not None and t.dtype != _dtypes.as_dtype(dtype):
            raise TypeError(f"'{t.name}' has dtype {t.dtype.name}, expected {dtype}")
        return t
    if isinstance(value, Operation):
        raise TypeError(f"Cannot use Operation '{value.name}' as a tensor; use op.outputs[i].")
    if isinstance(value, (list, tuple)) and _contains_tensor(value):
        return _autopack(value, dtype, dtype_hint, name)
    with x64():  # only constants need the 64-bit scope (tensors pass through above)
        arr, dt = _const_array(value, dtype, dtype_hint)
        return _REGISTRY["Const"](value=arr, dtype=dt.name, name=name)


def _contains_tensor(v):
    if isinstance(v, (list, tuple)):
        return any(_contains_tensor(x) for x in v)
    return is_tensor_like(v)


def _autopack(value, dtype, dtype_hint, name):
    """A (nested) list mixing tensors and numbers becomes a `stack` of them, as TF's
    auto-packing (``ml.zeros([ml.shape(x)[0], 3])``); numbers take the tensors' dtype."""
    if dtype is None:
        def first(v):
            for x in v:
                if isinstance(x, (list, tuple)):
                    t = first(x)
                    if t is not None:
                        return t
                elif is_tensor_like(x):
                    return x
            return None

        dtype = convert_to_tensor(first(value)).dtype
    elems = [_autopack(x, dtype, None, None) if isinstance(x, (list, tuple)) and
             _contains_tensor(x) else convert_to_tensor(x, dtype=dtype) for x in value]
    return _REGISTRY["Pack"](*elems, axis=0, name=name or "packed")  # array_ops.stack


def is_tensor_like(x):
    return isinstance(x, Tensor) or hasattr(x, "_as_tensor")
