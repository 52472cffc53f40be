"""The user functions of a dataset (`map`, `filter`): numpy code or graph code.

TensorFlow 1 programs write dataset functions with graph ops (``tf.cast``,
``tf.one_hot``, ``tf.reshape``, ``tf.py_func``); Keras programs often write numpy.
A `DataFunction` serves both:

* **graph code** is traced once, on placeholders shaped like the dataset's element,
  into a `FuncGraph` (tensors of the program's graph that it uses, such as a
  placeholder, are captured: their values come from the iterator's initializer run,
  as every other captured tensor of the pipeline). The traced graph then runs once per
  element in a private `Session` of that function graph, through `make_callable`:
  compiled by XLA once per element signature, with its own random stream (random
  augmentations differ per element) and host ops (``py_func``) in between.
* **numpy code** is called on the element's numpy arrays.

Which kind a function is, is decided the first time it runs on an element: it is
called on the numpy element with a throw-away graph as the default graph; if what it
returns holds graph tensors, it is graph code (that probe's result is discarded), else
numpy code (that call is the element's result). A graph iterator needs static output
types and shapes before anything runs: it traces the function (`output_spec`) without
fixing its kind.

Differs from TensorFlow: a dataset function cannot read variables (the pipeline runs
outside the training step): `UnimplementedError` at trace time says so.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from mylib import errors
from mylib.core import dtypes as _dtypes
from mylib.core.func_graph import FuncGraph
from mylib.core.graph import Graph, Operation, Tensor, get_default_graph
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops

_names = itertools.count(1)


def _call(fn, el):
    """Calls `fn` on one element, unpacking tuples into arguments as tf.data does."""
    if isinstance(el, tuple) and not hasattr(el, "_fields"):
        return fn(*el)
    return fn(el)


def _has_graph_values(out):
    from mylib.data.dataset import _flatten

    return any(isinstance(x, (Tensor, Operation)) or hasattr(x, "_as_tensor")
               for x in _flatten(out))


class DataFunction:
    """A dataset's user function (see the module docstring).

    Args:
      fn: the Python callable.
      what: the transformation (for messages): ``"map"``, ``"filter"``.
      src: the input `Dataset` (its static element spec is the traced signature).
    """

    def __init__(self, fn, what, src):
        if not callable(fn):
            raise TypeError(f"`{what}` needs a callable. Received: {fn!r}")
        self._fn = fn
        self._what = what
        self._src = src
        self._outer = get_default_graph()
        self._lock = threading.RLock()
        self._mode = None  # "numpy" or "graph", fixed by the first call
        self._traced = None
        self._trace_error = None

    @property
    def name(self):
        return getattr(self._fn, "__name__", type(self._fn).__name__)

    def captures(self):
        """The program's graph tensors the traced function uses (empty if untraced)."""
        return tuple(self._traced.outer) if self._traced is not None else ()

    def output_spec(self):
        """The output structure of `TensorSpec`s from a trace, or None when the input
        spec is unknown or the function cannot be traced (numpy code)."""
        in_spec = self._src._static_spec()
        if in_spec is None:
            return None
        tr = self._trace(in_spec)
        return None if tr is None else tr.out_spec

    def trace_error(self):
        """Why tracing failed, or None."""
        return self._trace_error

    def _trace(self, in_spec):
        with self._lock:
            if self._traced is None and self._trace_error is None:
                try:
                    self._traced = _Traced(self._fn, in_spec, self._what, self._outer)
                except errors.UnimplementedError:
                    raise
                except Exception as e:  # noqa: BLE001 - numpy code fails on tensors
                    self._trace_error = e
            return self._traced

    def __call__(self, el, env):
        mode = self._mode
        if mode is None:
            with self._lock:
                if self._mode is None:
                    return self._first_call(el, env)
                mode = self._mode
        if mode == "numpy":
            return _numpy_out(_call(self._fn, el))
        return self._traced.run(el, env)

    def _first_call(self, el, env):
        from mylib.data.dataset import TensorSpec, _map_structure

        probe = Graph()
        err = None
        try:
            with probe.as_default():
                out = _call(self._fn, el)
        except Exception as e:  # noqa: BLE001 - graph code may fail on arrays
            out, err = None, e
        if err is None and not _has_graph_values(out):
            self._mode = "numpy"
            return _numpy_out(out)
        spec = self._src._static_spec()
        if spec is None:  # rank-only: any size per dimension
            spec = _map_structure(lambda a: TensorSpec((None,) * np.ndim(a),
                                                       np.asarray(a).dtype), el)
        tr = self._trace(spec)
        if tr is None:
            if err is not None:
                raise err
            raise TypeError(
                f"The `{self._what}` function {self.name!r} returned graph tensors for numpy "
                f"input but could not be traced on placeholders: {self._trace_error}")
        self._mode = "graph"
        return tr.run(el, env)


def _numpy_out(out):
    from mylib.data.dataset import _map_structure, _to_numpy

    return _map_structure(_to_numpy, out)


class _Traced:
    """A function traced into a `FuncGraph`, run per element in a private Session."""

    def __init__(self, fn, in_spec, what, outer_graph):
        from mylib.data.dataset import TensorSpec, _flatten, _map_structure, _pack

        fg = FuncGraph(f"dataset_{what}_{next(_names)}", outer_graph)
        flat_in = _flatten(in_spec)
        with fg.as_default():
            phs = [array_ops.placeholder(
                _dtypes.as_dtype(s.dtype if s.dtype != object else "string"),
                s.shape, name=f"arg{i}") for i, s in enumerate(flat_in)]
            out = _call(fn, _pack(in_spec, phs))
            if isinstance(out, list):
                out = tuple(out)  # tf.data turns lists into tuples
            leaves = _flatten(out)
            for x in leaves:
                if isinstance(x, Operation):
                    raise TypeError(f"The `{what}` function returned the operation "
                                    f"'{x.name}'; return tensors")
            outs = [fg.capture(convert_to_tensor(x)) for x in leaves]
        for op in fg._ops:
            if op.type == "VarHandleOp":
                raise errors.UnimplementedError(
                    f"The `{what}` function {getattr(fn, '__name__', fn)!r} uses the "
                    f"variable '{op.attrs.get('shared_name')}': dataset functions run in "
                    "the input pipeline, outside the training step, and cannot read "
                    "variables here. Pass the value as a constant or a fed placeholder.")
        self.graph = fg
        self.inputs = phs
        self.outer = list(fg.captures)
        self.inner = [fg.captures[t] for t in self.outer]
        self.outputs = outs
        self.structure = out
        self.out_spec = _pack(out, [TensorSpec(
            None if t.shape.rank is None else tuple(t.shape.as_list()),
            t.dtype.np if t.dtype != _dtypes.string else object) for t in outs])
        self._map = _map_structure
        self._pack = _pack
        self._flatten = _flatten
        self._call = None
        self._lock = threading.Lock()

    def _callable(self):
        with self._lock:
            if self._call is None:
                from mylib.runtime.session import Session

                self._session = Session(graph=self.graph)
                self._call = self._session.make_callable(
                    list(self.outputs), self.inputs + self.inner)
            return self._call

    def run(self, el, env):
        call = self._callable()
        try:
            extra = [env[t] for t in self.outer]
        except KeyError as e:
            raise errors.InvalidArgumentError(
                f"the dataset function uses '{e.args[0].name}', whose value is only known "
                "when an iterator's initializer runs") from None
        vals = call(*self._flatten(el), *extra)
        return self._pack(self.structure, [np.asarray(v) for v in vals])
