"""The dataflow graph: `Graph`, `Operation`, `Tensor`, name scopes and collections.

Operations only hold fields; what happens to them (differentiation, lowering to XLA,
execution) lives in passes (`gradients.py`, `lowering.py`, `session.py`).
"""

from __future__ import annotations

import contextlib
import linecache
import os
import re
import sys
import threading
import weakref

from mylib.core.tensor_shape import as_shape
from mylib.devices import DeviceSpec

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SKIP_PREFIXES = (_PKG_DIR + os.sep, os.path.dirname(contextlib.__file__) + os.sep + "contextlib")


def _user_frame():
    """(filename, lineno, function) of the first frame outside mylib (JAX's user_frame)."""
    f = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_SKIP_PREFIXES) and not fn.startswith("<frozen"):
            return (fn, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


class GraphKeys:
    """Standard collection names, as TensorFlow's `GraphKeys`."""

    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MODEL_VARIABLES = "model_variables"
    METRIC_VARIABLES = "metric_variables"
    UPDATE_OPS = "update_ops"
    SUMMARIES = "summaries"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    TRAIN_OP = "train_op"
    GLOBAL_STEP = "global_step"
    QUEUE_RUNNERS = "queue_runners"
    INIT_OP = "init_op"
    SAVERS = "savers"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    LOCAL_INIT_OP = "local_init_op"
    SUMMARY_OP = "summary_op"
    # TF1's layer collections (`tf.contrib.layers` adds its weights and biases).
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"


class Tensor:
    """A symbolic value: output `value_index` of `op`.

    Attributes:
      op: the producing `Operation`.
      value_index: which output of `op`.
      dtype: `DType`.
      shape: static `TensorShape`; unknown dimensions are None.
      name: ``"op_name:value_index"``.

    Python operators (``+ - * / // % ** @ < <= > >= & | ~ -x abs() []``) build ops.
    As in TensorFlow 1 graphs, ``==`` compares tensor identity (so tensors can key
    dicts); use `mylib.equal` for the element-wise comparison.
    """

    # `_keras_history` / `_keras_mask`: the Keras layer call that made the tensor and
    # its Keras mask (set by `mylib.layers`; on the tensor, as in TensorFlow, so a
    # dropped model's layers are garbage like its tensors).
    __slots__ = ("op", "value_index", "dtype", "_shape", "_consumers", "_keras_history",
                 "_keras_mask", "__weakref__")
    # Operators are installed by mylib.core.ops.math_ops, ``[]`` by indexing_ops
    # (see _overload_operator).
    __array_priority__ = 100

    def __init__(self, op, value_index, dtype, shape):
        self.op = op
        self.value_index = value_index
        self.dtype = dtype
        self._shape = shape
        self._consumers = []
        self._keras_history = None
        self._keras_mask = None

    @property
    def name(self):
        return f"{self.op.name}:{self.value_index}"

    @property
    def graph(self):
        return self.op.graph

    @property
    def device(self):
        return self.op.device

    @property
    def shape(self):
        return self._shape

    def get_shape(self):
        return self._shape

    def set_shape(self, shape):
        """Refines the static shape. Raises ValueError if `shape` is incompatible."""
        self._shape = self._shape.merge_with(as_shape(shape))

    @property
    def ndim(self):
        return self._shape.rank

    def consumers(self):
        """The operations that take this tensor as an input."""
        return _live(self._consumers)

    def eval(self, feed_dict=None, session=None):
        session = session or get_default_session()
        if session is None:
            raise ValueError("No default session: pass session= or use `with sess.as_default():`")
        return session.run(self, feed_dict)

    def __repr__(self):
        return f"<ml.Tensor '{self.name}' shape={self._shape} dtype={self.dtype.name}>"

    def __bool__(self):
        raise TypeError(
            f"Using a symbolic ml.Tensor ('{self.name}') as a Python bool is not allowed: "
            "its value exists only when a Session runs it. Use ml.cond for data-dependent "
            "branches, or `is not None` to test for presence.")

    def __len__(self):
        if self._shape.rank is None or self._shape[0] is None:
            raise TypeError(f"len() of tensor '{self.name}' with shape {self._shape} is unknown")
        return self._shape[0]

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            f"Cannot convert the symbolic tensor '{self.name}' to a numpy array: "
            "run it with Session.run to get its value.")

    # Operators that build ops (``+``, ``[]``, iteration, ...) are installed by the ops
    # modules that define those ops (math_ops, indexing_ops, array_ops), which sit above
    # this module; `mylib.core` imports them all.
    @classmethod
    def _overload_operator(cls, name, fn):
        setattr(cls, name, fn)


class Operation:
    """A node of the graph.

    Attributes:
      name: unique name within the graph (``"dense/MatMul"``).
      type: op type registered in the op registry (``"MatMul"``).
      inputs: tuple of input `Tensor`s.
      control_inputs: list of `Operation`s that must run first.
      attrs: dict of plain attribute values.
      device: requested device string ('' if none).
      outputs: list of output `Tensor`s.
      traceback: ``"file:line in function: source"`` of the user's line that created it.
    """

    __slots__ = ("name", "type", "inputs", "control_inputs", "attrs", "device", "outputs",
                 "graph", "op_def", "_frame", "_id", "_control_outputs", "_collectable",
                 "__weakref__")

    def __init__(self, graph, op_def, name, inputs, attrs, output_specs, control_inputs,
                 device, frame):
        self.graph = graph
        self.op_def = op_def
        self.type = op_def.name
        self.name = name
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.control_inputs = list(control_inputs)
        self.device = device
        self._frame = frame
        self._control_outputs = []
        self._collectable = False
        self.outputs = [Tensor(self, i, dt, sh) for i, (sh, dt) in enumerate(output_specs)]

    @property
    def traceback(self):
        if self._frame is None:
            return None
        fn, line, func = self._frame
        src = linecache.getline(fn, line).strip()
        return f"{fn}:{line} in {func}:   {src}" if src else f"{fn}:{line} in {func}"

    @property
    def node_def(self):
        """This op as a `NodeDef` (``name``, ``op`` (the type), ``input``, ``device``,
        ``attr``), as TensorFlow's `Operation.node_def`; device functions read
        ``op.node_def.op`` to place variables. A new object each time: editing it does
        not change the op."""
        return _node_def_builder(self)

    def get_attr(self, name):
        try:
            return self.attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self.name}' has no attr named '{name}'.") from None

    def values(self):
        return tuple(self.outputs)

    def run(self, feed_dict=None, session=None):
        session = session or get_default_session()
        if session is None:
            raise ValueError("No default session: pass session= or use `with sess.as_default():`")
        session.run(self, feed_dict)

    def _add_control_input(self, op):
        if op not in self.control_inputs:
            self.control_inputs.append(op)
            op._control_outputs.append(weakref.ref(self) if self._collectable else self)

    def __repr__(self):
        return f"<ml.Operation '{self.name}' type={self.type}>"


_VALID_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


def _live(refs):
    """The operations of a list holding operations and weak references to them."""
    out = []
    for r in refs:
        if type(r) is weakref.ReferenceType:
            r = r()
            if r is None:
                continue
        out.append(r)
    return out


class _WeakEntry:
    """A collection item held weakly (it belongs to a collectable op, see
    `Graph.collectable`)."""

    __slots__ = ("ref",)

    def __init__(self, value):
        self.ref = weakref.ref(value)


def _is_collectable(value):
    op = value if isinstance(value, Operation) else getattr(value, "op", None)
    return isinstance(op, Operation) and op._collectable


class Graph:
    """A container of `Operation`s in creation order, with name scopes, collections and
    a default-graph stack.

    Ops created inside `collectable()` (every op a Keras layer or model builds) are
    held weakly: they live as long as something uses them (the layer or model, a
    tensor the user holds, a consuming op, a compiled plan), and when they are
    garbage-collected they leave the graph, its collections, and the sessions'
    variable values (`add_variables_freed_listener`). Other ops live as long as the
    graph, as in TensorFlow.

    Example::

        g = ml.Graph()
        with g.as_default():
            x = ml.placeholder(ml.float32, [None, 3])
    """

    def __init__(self):
        self._ops = []  # operations, or weak references to collectable ones
        self._next_id = 0
        self._by_name = {}
        self._dead = []  # (name, variable key or None) of freed collectable ops
        self._freed_listeners = weakref.WeakSet()
        self._names_in_use = {}
        self._collections = {}
        self._finalized = False
        self._lock = threading.RLock()
        self._local = threading.local()
        self.seed = None
        self._last_op_seed = 0
        self._version = 0
        # handle op name -> Variable (weak: collections hold the graph's own variables)
        self._variables = weakref.WeakValueDictionary()

    # --- thread-local construction state ---
    @property
    def _state(self):
        st = getattr(self._local, "st", None)
        if st is None:
            st = self._local.st = _ConstructionState()
        return st

    # --- default graph ---
    @contextlib.contextmanager
    def as_default(self):
        stack = _default_stack()
        stack.append(self)
        try:
            yield self
        finally:
            stack.pop()

    # --- names ---
    def get_name_scope(self):
        return self._state.name_scope.rstrip("/")

    def unique_name(self, name, mark_as_used=True):
        scope = self._state.name_scope
        full = scope + name if scope else name
        key = full.lower()
        i = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = i + 1
        if i > 0:
            base = full
            while True:
                full = f"{base}_{i}"
                if full.lower() not in self._names_in_use:
                    break
                i += 1
            if mark_as_used:
                self._names_in_use[full.lower()] = 1
        return full

    @contextlib.contextmanager
    def name_scope(self, name):
        st = self._state
        old = st.name_scope
        if name is None or name == "":
            new = ""
        elif name.endswith("/"):
            if not _VALID_SCOPE.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
            new = name  # absolute: re-enter exactly
        else:
            if not _VALID_SCOPE.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
            new = self.unique_name(name) + "/"
        st.name_scope = new
        try:
            yield new
        finally:
            st.name_scope = old

    # --- control dependencies and devices ---
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        st = self._state
        old = st.control_inputs
        if control_inputs is None:
            st.control_inputs = []
        else:
            ops = list(old)
            for c in control_inputs:
                op = _as_op(c, self)
                if op is not None and op not in ops:
                    ops.append(op)
            st.control_inputs = ops
        try:
            yield
        finally:
            st.control_inputs = old

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        if isinstance(device_name_or_function, str):
            _canonical_device(device_name_or_function)  # raises early if malformed
        st = self._state
        old = st.device_stack
        st.device_stack = old + [device_name_or_function]
        try:
            yield
        finally:
            st.device_stack = old

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        st = self._state
        old = st.colocate
        st.colocate = None if op is None else _as_op(op, self)
        try:
            yield
        finally:
            st.colocate = old

    def _current_device(self, op=None):
        dev = ""
        for d in self._state.device_stack:
            if d is None:
                dev = ""
            elif callable(d) and not isinstance(d, str):
                r = d(op) if op is not None else ""
                dev = _merge_device(dev, r)
            else:
                dev = _merge_device(dev, d)
        return _canonical_device(dev)

    # --- collectable ops ---
    @contextlib.contextmanager
    def collectable(self):
        """Ops created inside (in this thread) are collectable: held weakly by the
        graph, freed with whatever uses them (see the class docstring). Keras layers
        and models build their ops inside it, so a dropped model frees its ops,
        variables and compiled programs."""
        st = self._state
        prev = st.collectable
        st.collectable = True
        try:
            yield self
        finally:
            st.collectable = prev

    def add_variables_freed_listener(self, listener):
        """`listener._variables_freed(keys)` is called (held weakly) with the shared
        names of the variables whose handle ops were freed, so sessions drop their
        values."""
        self._freed_listeners.add(listener)

    def _op_freed(self, name, key, ref):
        # A weakref callback (it may run inside the garbage collector, in any
        # thread): only queue; `_collect_freed` does the work under the lock.
        self._dead.append((name, key, ref))

    def _collect_freed(self):
        """Forgets the collectable ops freed since the last call: their names,
        collection entries and list slots; tells the listeners which variables went."""
        if not self._dead:
            return
        with self._lock:
            dead, self._dead = self._dead, []
            keys = []
            for name, key, ref in dead:
                if self._by_name.get(name) is ref:
                    del self._by_name[name]
                if key is not None:
                    keys.append(key)
            self._ops = [o for o in self._ops
                         if type(o) is not weakref.ReferenceType or o() is not None]
            for name, items in self._collections.items():
                if any(type(v) is _WeakEntry and v.ref() is None for v in items):
                    items[:] = [v for v in items if type(v) is not _WeakEntry or
                                v.ref() is not None]
        if keys:
            for listener in list(self._freed_listeners):
                listener._variables_freed(keys)

    # --- op creation ---
    def _create_op(self, op_def, inputs, attrs, output_specs, name, frame):
        if self._dead:
            self._collect_freed()
        with self._lock:
            if self._finalized:
                raise RuntimeError("Graph is finalized and cannot be modified.")
            st = self._state
            if name is not None and name.endswith("/"):
                # A scope name used as an op name (TF allows it): taken exactly.
                name = name[:-1]
                if _live([self._by_name[name]] if name in self._by_name else []):
                    raise ValueError(f"Duplicate op name '{name}'")
                self._names_in_use[name.lower()] = 1
            else:
                if name is not None and not _VALID_NAME.match(name):
                    raise ValueError(f"'{name}' is not a valid op name")
                name = self.unique_name(name or op_def.name)
            ctrl = [c for c in st.control_inputs if c.graph is self]
            op = Operation(self, op_def, name, inputs, attrs, output_specs, ctrl, "", frame)
            if st.colocate is not None:
                op.attrs["_class"] = [f"loc:@{st.colocate.name}"]
                op.device = st.colocate.device
            elif st.device_stack:
                op.device = self._current_device(op)
            op._id = self._next_id
            self._next_id += 1
            for types, ops in st.op_recorders:
                if op_def.name in types:
                    ops.append(op)
            if st.collectable:
                op._collectable = True
                key = op.attrs.get("shared_name") if op_def.name == "VarHandleOp" else None
                held = weakref.ref(op, lambda r, n=op.name, k=key: self._op_freed(n, k, r))
            else:
                held = op
            self._ops.append(held)
            self._by_name[op.name] = held
            for t in op.inputs:
                t._consumers.append(held)
            for c in ctrl:
                c._control_outputs.append(held)
            self._version += 1
            return op

    @contextlib.contextmanager
    def _recording_ops(self, op_types):
        """``with g._recording_ops(types) as ops:`` collects (strongly) the operations
        of `op_types` this thread creates inside the block, including those nothing
        else keeps alive (a collectable op whose result is dropped is freed at once)."""
        st = self._state
        rec = (frozenset(op_types), [])
        st.op_recorders = st.op_recorders + (rec,)
        try:
            yield rec[1]
        finally:
            st.op_recorders = tuple(r for r in st.op_recorders if r is not rec)

    def _last_recorded_write(self, handle):
        """The latest op recorded by an open `_recording_ops` block whose first input
        is `handle` (a variable's last write in the layer call being built), or None."""
        for _, ops in reversed(self._state.op_recorders):
            for op in reversed(ops):
                if op.inputs and op.inputs[0] is handle:
                    return op
        return None

    @contextlib.contextmanager
    def _not_recording_ops(self):
        """Ops created inside the block are hidden from `_recording_ops` (a variable's
        initializer is not an assignment its creator's `call` makes)."""
        st = self._state
        saved, st.op_recorders = st.op_recorders, ()
        try:
            yield
        finally:
            st.op_recorders = saved

    # --- lookup ---
    def get_operations(self):
        """The live operations, in creation order."""
        if self._dead:
            self._collect_freed()
        return _live(self._ops)

    def get_operation_by_name(self, name):
        op = self._by_name.get(name)
        if type(op) is weakref.ReferenceType:
            op = op()
        if op is None:
            raise KeyError(f"The name '{name}' refers to an Operation not in the graph.")
        return op

    def get_tensor_by_name(self, name):
        if ":" not in name:
            raise ValueError(
                f"The name '{name}' looks like an Operation name; a tensor name is 'op:index'.")
        opname, idx = name.rsplit(":", 1)
        if not idx.isdigit():
            raise ValueError(
                f"The name '{name}' is not a valid tensor name: the part after ':' must "
                "be an output index ('op:0').")
        op = self.get_operation_by_name(opname)
        i = int(idx)
        if i >= len(op.outputs):
            raise KeyError(
                f"The name '{name}' refers to output {i} of '{opname}', which has "
                f"{len(op.outputs)} output(s).")
        return op.outputs[i]

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if allow_operation:
                return self.get_operation_by_name(obj)
            if ":" not in obj:
                what = "an Operation" if obj in self._by_name else "no element of the graph"
                raise ValueError(
                    f"The name '{obj}' refers to {what}, not a Tensor. Tensor names have "
                    f"the form '<op_name>:<output_index>', e.g. '{obj}:0'.")
            raise ValueError(f"The name '{obj}' refers to a Tensor, not an Operation.")
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise ValueError(f"Tensor {obj} is not an element of this graph.")
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError(f"Operation {obj} is not an element of this graph.")
            return obj
        conv = getattr(obj, "_as_graph_element", None)
        if conv is not None:
            return conv()
        raise TypeError(f"Can not convert a {type(obj).__name__} into a graph element.")

    # --- collections ---
    def add_to_collection(self, name, value):
        """Adds `value` to collection `name` (weakly when it belongs to a collectable
        op: the collection does not keep a dropped model's ops alive)."""
        with self._lock:
            self._collections.setdefault(name, []).append(
                _WeakEntry(value) if _is_collectable(value) else value)

    def add_to_collections(self, names, value):
        for n in ([names] if isinstance(names, str) else names):
            self.add_to_collection(n, value)

    def get_collection_ref(self, name):
        """The collection's list itself, to change in place. Items of collectable ops
        are held in it strongly from then on (the list is the caller's to keep)."""
        with self._lock:
            items = self._collections.setdefault(name, [])
            if any(type(v) is _WeakEntry for v in items):
                items[:] = [v.ref() if type(v) is _WeakEntry else v for v in items
                            if type(v) is not _WeakEntry or v.ref() is not None]
            return items

    def get_collection(self, name, scope=None):
        items = [v.ref() if type(v) is _WeakEntry else v
                 for v in self._collections.get(name, [])]
        items = [v for v in items if v is not None]
        if scope is None:
            return items
        pat = re.compile(scope)
        return [v for v in items if pat.match(getattr(v, "name", "") or "")]

    def get_all_collection_keys(self):
        return [k for k, v in self._collections.items() if v]

    def clear_collection(self, name):
        self._collections.pop(name, None)

    # --- serialization ---
    def as_graph_def(self, from_version=None, add_shapes=False):
        """The graph as plain data: a `mylib.core.graph_io.GraphDef` of `NodeDef`s
        (name, op, input ``"name:idx"`` / ``"^name"``, device, attr), in creation order.

        Args:
          add_shapes: also record each op's output shapes in its ``_output_shapes``
            attr (TensorBoard labels edges with them).
        Raises:
          InvalidArgumentError: if an op's attr is not plain data.
        """
        return _graph_def_builder(self, add_shapes=add_shapes)

    # --- finalize ---
    def finalize(self):
        """Makes the graph read-only: adding an op raises RuntimeError."""
        self._finalized = True

    @property
    def finalized(self):
        return self._finalized

    def _unsafe_unfinalize(self):
        self._finalized = False

    @property
    def version(self):
        return self._version

    # --- seeds ---
    def _next_op_seed(self):
        with self._lock:
            self._last_op_seed += 1
            return self._last_op_seed

    def __repr__(self):
        return f"<ml.Graph with {len(self.get_operations())} ops>"


class _ConstructionState:
    __slots__ = ("name_scope", "control_inputs", "device_stack", "colocate", "collectable",
                 "op_recorders")

    def __init__(self):
        self.op_recorders = ()  # see Graph._recording_ops
        self.collectable = False
        self.name_scope = ""
        self.control_inputs = []
        self.device_stack = []
        self.colocate = None


# The graph -> GraphDef function. It lives in `graph_io` (which imports this module:
# GraphDef and its encoding are graph_io's), and graph_io registers it when imported;
# `mylib.core` imports graph_io, so `Graph.as_graph_def` always finds it.
def _graph_def_builder(graph, add_shapes=False):
    raise RuntimeError("mylib.core.graph_io is not imported")


def _register_graph_def_builder(fn):
    global _graph_def_builder
    _graph_def_builder = fn


def _node_def_builder(op):
    raise RuntimeError("mylib.core.graph_io is not imported")


def _register_node_def_builder(fn):
    global _node_def_builder
    _node_def_builder = fn


def _canonical_device(dev):
    """TensorFlow's canonical spelling (``/cpu:1`` -> ``/device:CPU:1``)."""
    if not dev:
        return ""
    return DeviceSpec.from_string(dev).to_string()


def _merge_device(outer, inner):
    """Merges device strings field by field: inner fields override outer ones."""
    if not inner:
        return outer
    if not outer:
        return inner
    return DeviceSpec.from_string(outer).make_merged_spec(
        DeviceSpec.from_string(inner)).to_string()


def _as_op(x, graph=None):
    if isinstance(x, Operation):
        return x
    if isinstance(x, Tensor):
        return x.op
    op = getattr(x, "op", None)
    if isinstance(op, Operation):
        return op
    if x is None:
        return None
    if isinstance(x, str) and graph is not None:
        return graph.as_graph_element(x, allow_tensor=False)
    raise TypeError(f"Control input must be an Operation or Tensor, got {type(x).__name__}")


# --- default session stack (thread-local): `Session.as_default()` pushes onto it ---
_session_local = threading.local()


def default_session_stack():
    """The calling thread's stack of default sessions (innermost last). The runtime's
    `Session.as_default()` pushes and pops it; `Tensor.eval` and `Operation.run` read
    it. The core never runs a session itself."""
    s = getattr(_session_local, "stack", None)
    if s is None:
        s = _session_local.stack = []
    return s


def get_default_session():
    """The innermost session of `with sess.as_default():` (or `with sess:`) in this
    thread, else None."""
    s = default_session_stack()
    return s[-1] if s else None


# --- default graph stack (thread-local, with a process-wide fallback) ---
_global_default_graph = None
_local = threading.local()


def _default_stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def get_default_graph():
    """The innermost graph of `with g.as_default():`, else the global default graph."""
    s = _default_stack()
    if s:
        return s[-1]
    global _global_default_graph
    if _global_default_graph is None:
        _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph():
    """Replaces the global default graph with a new empty one.

    Raises:
      AssertionError: if called inside a `with g.as_default():` block.
    """
    if _default_stack():
        raise AssertionError("Do not use reset_default_graph() inside a graph's as_default() block.")
    global _global_default_graph
    _global_default_graph = Graph()


def name_scope(name, default_name=None, values=None):
    """Context manager for a name scope in the default graph (or the graph of `values`)."""
    g = _graph_of(values) or get_default_graph()
    return g.name_scope(name if name is not None else default_name)


def control_dependencies(control_inputs):
    """Ops created in this context run after `control_inputs` (ops or tensors)."""
    g = get_default_graph()
    return g.control_dependencies(control_inputs)


def device(device_name_or_function):
    """Device scope for ops created in this context (string, DeviceSpec or function of op)."""
    if not isinstance(device_name_or_function, str) and not callable(device_name_or_function) \
            and device_name_or_function is not None:
        device_name_or_function = device_name_or_function.to_string()
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing=False):
    return get_default_graph().colocate_with(op, ignore_existing)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    get_default_graph().add_to_collections(names, value)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)


def set_random_seed(seed):
    """Sets the graph-level random seed of the default graph (TF1 `set_random_seed`).

    Random ops created from here on without an op seed take op seeds 1, 2, ... in
    creation order, counted from this call (as TensorFlow 2's `tf.random.set_seed`
    resets its counter): the same construction after the same seed draws the same
    values, whatever the graph held before. TensorFlow 1 derives them from the graph's
    op count instead, which agrees with this on a fresh graph."""
    g = get_default_graph()
    with g._lock:
        g.seed = seed
        g._last_op_seed = 0


def _graph_of(values):
    if not values:
        return None
    for v in values:
        if isinstance(v, Tensor):
            return v.graph
    return None
