"""`Variable`: shared, mutable state as a resource, as TensorFlow's resource variables.

The graph holds a `VarHandleOp` and the ops that read and assign through it; the value
lives in each `Session` (set by running `initializer`), so two sessions on one graph
hold independent values.
"""

from __future__ import annotations

import contextlib
import weakref

from mylib.core import dtypes as _dtypes
from mylib.core.compat_args import warn_ignored
from mylib.core.graph import GraphKeys, Tensor, get_default_graph, get_default_session
from mylib.core.op_registry import NotDifferentiable, OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops import array_ops, state_ops
from mylib.core.ops.cast_ops import cast
from mylib.core.tensor_shape import TensorShape, as_shape

# Variable creators (TF's variable_creator_scope): strategies intercept creation here.
_creator_stack = []


def _in_own_graph(method):
    """Runs a Variable method with the variable's graph as the default graph, so
    Python values it converts become constants in the right graph."""
    import functools

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        # Inside a control-flow function graph (a cond branch, a loop body) nested in
        # the variable's graph, ops stay in the function graph, which captures the handle.
        enclosed = getattr(get_default_graph(), "_is_enclosed_by", None)
        if enclosed is not None and enclosed(self._graph):
            return method(self, *args, **kwargs)
        with self._graph.as_default():
            return method(self, *args, **kwargs)

    return wrapper


class Variable:
    """A resource variable.

    Args:
      initial_value: a `Tensor`, array, Python value, or a callable returning one.
      trainable: added to `TRAINABLE_VARIABLES` (default True) so optimizers find it.
      name: base name; the handle op is named ``name`` (uniquified in the scope).
      dtype: converts `initial_value` to this `DType` if given.
      shape: static shape; defaults to `initial_value`'s. Unknown dims allow assigning
        values of other sizes (``validate_shape=False`` also allows it).
      collections: graph collections (default ``[GLOBAL_VARIABLES]``).
      constraint: optional function applied after optimizer updates (Keras constraints).
      caching_device: accepted for TensorFlow compatibility and ignored (warns once):
        reads happen where the variable's handle is placed.
      use_resource: accepted for TensorFlow 1 compatibility: every variable is a
        resource variable; ``use_resource=False`` is ignored (warns once).

    An unknown keyword argument raises `TypeError` naming it (``trainabel=False`` is
    not silently dropped).

    The value exists only in a `Session`: run `initializer` (or
    `global_variables_initializer()`) first; reading an uninitialized variable raises
    `FailedPreconditionError` naming it. Using the variable as a tensor creates a fresh
    `ReadVariableOp`, so reads created under `control_dependencies` see prior writes.
    """

    def __new__(cls, *args, **kwargs):
        if cls is Variable and _creator_stack:
            return _make_with_creators(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, initial_value=None, trainable=None, name=None, dtype=None,
                 shape=None, collections=None, validate_shape=True, constraint=None,
                 caching_device=None, use_resource=None, _skip_creators=False):
        if getattr(self, "_initialized_object", False):
            return  # created through a creator that already ran __init__
        self._initialized_object = True
        if caching_device is not None:
            warn_ignored("Variable", "caching_device",
                         "reads happen on the device of the variable's handle.")
        if use_resource is not None and not use_resource:
            warn_ignored("Variable", "use_resource",
                         "every mylib variable is a resource variable.")
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if trainable is None:
            trainable = True
        g = get_default_graph()
        self._graph = g
        # As TF1's init_scope: a variable made inside `control_dependencies` (an optimizer's
        # slots under ``control_dependencies(UPDATE_OPS)``) initializes without them.
        with g.control_dependencies(None), g.name_scope(name or "Variable") as scope:
            handle_name = scope[:-1]
            with g.name_scope("Initializer"):
                init_fn = initial_value
                iv = init_fn() if callable(init_fn) and not isinstance(init_fn, Tensor) else init_fn
                iv = convert_to_tensor(iv, dtype_hint=dtype)
                if dtype is not None and iv.dtype != _dtypes.as_dtype(dtype):
                    iv = cast(iv, dtype)
            self._initial_value = iv
            self._dtype = iv.dtype
            vshape = iv.shape if shape is None else as_shape(shape)
            if not validate_shape:
                vshape = TensorShape(None) if shape is None else vshape
            if shape is not None and not as_shape(shape).is_compatible_with(iv.shape):
                raise ValueError(
                    f"Variable '{handle_name}': initial value shape {iv.shape} is not "
                    f"compatible with shape {as_shape(shape)}")
            self._shape = vshape
            with g.control_dependencies(None), _default_device(g, handle_name, vshape,
                                                               self._dtype):
                self._handle = state_ops.VarHandleOp(
                    dtype=self._dtype.name, shape=vshape.as_tuple(),
                    shared_name=handle_name, trainable=bool(trainable), name=handle_name + "/")
            self._name = handle_name
            with g.colocate_with(self._handle.op), g._not_recording_ops():
                self._initializer_op = state_ops.assign_variable_op(
                    self._handle, iv, name="Assign", validate_shape=validate_shape)
                with g.name_scope("Read"):
                    self._graph_element = state_ops.read_variable_op(self._handle)
        self._trainable = bool(trainable)
        self.constraint = constraint
        self._validate_shape = validate_shape
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        collections = list(collections)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        g.add_to_collections(collections, self)
        g._variables[handle_name] = self

    # --- properties ---
    @property
    def name(self):
        """TF's convention: ``"name:0"``."""
        return self._name + ":0"

    @property
    def path(self):
        """Keras 3's `Variable.path`: the name without TensorFlow's ``:0``, such as
        ``"dense/kernel"`` for a layer's weight (its name scopes joined by ``/``).
        Differs from Keras 3 where scopes differ: mylib's path is the graph name
        scope the variable was made in (uniquified like op names)."""
        return self._name

    @property
    def op(self):
        return self._handle.op

    @property
    def handle(self):
        return self._handle

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return self._shape

    def get_shape(self):
        return self._shape

    @property
    def graph(self):
        return self._graph

    @property
    def device(self):
        return self._handle.op.device

    @property
    def trainable(self):
        return self._trainable

    @property
    def initializer(self):
        return self._initializer_op

    @property
    def initial_value(self):
        return self._initial_value

    @property
    def _key(self):
        return self._name

    # --- reads ---
    @_in_own_graph
    def value(self):
        """A new read of the variable (respects enclosing control dependencies).

        Inside a Keras layer's `call`, a read made after that call assigned the variable
        is ordered after the assignment and sees it, as in Keras 3 (and TensorFlow 2's
        automatic control dependencies): keras-io's PixelCNN masks its kernel with
        ``kernel.assign(kernel * mask)`` and then convolves with it."""
        g = self._graph
        write = g._last_recorded_write(self._handle)
        after = g.control_dependencies([write]) if write is not None else \
            contextlib.nullcontext()
        with g.colocate_with(self._handle.op), after:
            return state_ops.read_variable_op(self._handle)

    @_in_own_graph
    def read_value(self):
        """A new read of the variable, as an `Identity` named ``Read`` (TF's)."""
        with self._graph.name_scope(self._name + "/"):
            return array_ops.identity(self.value(), name="Read")

    @_in_own_graph
    def sparse_read(self, indices, name=None):
        """Rows `indices` of the variable, read by one `ResourceGather` (TF's
        `sparse_read`): only those rows leave the variable's device.

        Args:
          indices: int32/int64 `Tensor` of any shape, values in [0, shape[0]).
          name: optional op name.
        Returns:
          `Tensor` `indices.shape + shape[1:]` of the variable's dtype. Its gradient with
          respect to the variable is an `IndexedSlices` naming only those rows.
        """
        i = convert_to_tensor(indices, dtype_hint=_dtypes.int32)
        return state_ops.ResourceGather(self._handle, i, dtype=self._dtype.name,
                                        shape=self._shape.as_tuple(), name=name)

    def _as_tensor(self):
        return self.value()

    def _as_graph_element(self):
        return self._graph_element

    @_in_own_graph
    def initialized_value(self):
        """The value, initialized first if needed, for initializing another variable
        from this one (runs this variable's initial value when it is uninitialized)."""
        with self._graph.colocate_with(self._handle.op):
            return state_ops.ReadOrInitialValue(self._handle, self._initial_value)

    @_in_own_graph
    def is_initialized(self, name=None):
        return state_ops.VarIsInitializedOp(self._handle, name=name)

    def eval(self, session=None):
        return self._graph_element.eval(session=session)

    def load(self, value, session=None):
        # Always through a graph op run in `session` (never the Keras session).
        (session or get_default_session()).run(self._assign_op(value))

    # --- writes ---
    def _value_tensor(self, value):
        return convert_to_tensor(value, dtype_hint=self._dtype) if not isinstance(value, Tensor) \
            else value

    @_in_own_graph
    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Assigns `value`. Returns the new value (a read ordered after the write), or
        the assign `Operation` if `read_value=False`.

        A Keras weight or optimizer variable (`layer.kernel`, `optimizer.iterations`,
        `optimizer.learning_rate`) given a concrete value (array, number, another such
        variable) outside a step being built, and outside a TensorFlow 1 session of its
        graph, is assigned at once in its Keras session, as Keras 3 does: the variable
        itself is returned. (`assign_add` and `assign_sub` likewise.)"""
        done = _write_now(self, "assign", value)
        if done is not None:
            return done
        op = self._assign_op(value, name)
        return self._after(op) if read_value else op

    @_in_own_graph
    def _assign_op(self, value, name=None):
        v = self._cast_value(value)
        with self._graph.colocate_with(self._handle.op):
            return state_ops.assign_variable_op(self._handle, v, name=name,
                                                validate_shape=self._validate_shape)

    @_in_own_graph
    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        """Adds `delta` to the variable (at once for a Keras variable: see `assign`)."""
        done = _write_now(self, "assign_add", delta)
        if done is not None:
            return done
        v = self._cast_value(delta)
        with self._graph.colocate_with(self._handle.op):
            op = state_ops.assign_add_variable_op(self._handle, v, name=name)
        return self._after(op) if read_value else op

    @_in_own_graph
    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        """Subtracts `delta` from the variable (at once for a Keras variable: see
        `assign`)."""
        done = _write_now(self, "assign_sub", delta)
        if done is not None:
            return done
        v = self._cast_value(delta)
        with self._graph.colocate_with(self._handle.op):
            op = state_ops.assign_sub_variable_op(self._handle, v, name=name)
        return self._after(op) if read_value else op

    @_in_own_graph
    def _scatter(self, kind, indices, updates, name, read_value):
        indices = convert_to_tensor(indices)
        with self._graph.colocate_with(self._handle.op):
            op = state_ops.scatter_op(self._handle, kind, indices, self._cast_value(updates),
                                      name=name)
        return self._after(op) if read_value else op

    def scatter_add(self, sparse_delta, use_locking=False, name=None, read_value=True):
        """Adds `IndexedSlices` `sparse_delta` to the rows it names (repeated rows add
        up). Returns the variable's value after the write, as TF1 returns the variable
        (the `Operation` with ``read_value=False``, a mylib option)."""
        return self._scatter("add", sparse_delta.indices, sparse_delta.values, name,
                             read_value)

    def scatter_sub(self, sparse_delta, use_locking=False, name=None, read_value=True):
        """Subtracts `IndexedSlices` `sparse_delta` from the rows it names; as
        `scatter_add`."""
        return self._scatter("sub", sparse_delta.indices, sparse_delta.values, name,
                             read_value)

    def scatter_update(self, sparse_delta, use_locking=False, name=None, read_value=True):
        """Writes `IndexedSlices` `sparse_delta` into the rows it names (with repeated
        rows, the last wins); as `scatter_add`."""
        return self._scatter("update", sparse_delta.indices, sparse_delta.values, name,
                             read_value)

    def scatter_nd_update(self, indices, updates, name=None, read_value=True):
        """``self[indices[i]] = updates[i]`` (`indices` [..., K]); as `scatter_add`."""
        return self._scatter("nd_update", indices, updates, name, read_value)

    def scatter_nd_add(self, indices, updates, name=None, read_value=True):
        """``self[indices[i]] += updates[i]`` (`indices` [..., K]); as `scatter_add`."""
        return self._scatter("nd_add", indices, updates, name, read_value)

    def scatter_nd_sub(self, indices, updates, name=None, read_value=True):
        """``self[indices[i]] -= updates[i]`` (`indices` [..., K]); as `scatter_add`."""
        return self._scatter("nd_sub", indices, updates, name, read_value)

    def _cast_value(self, value):
        t = convert_to_tensor(value, dtype_hint=self._dtype)
        if t.dtype != self._dtype:
            if t.op.type == "Const" and t.dtype.is_integer and self._dtype.is_floating:
                return cast(t, self._dtype)
        return t

    def _after(self, op):
        # The read goes where the assign went (a control-flow function graph included).
        with op.graph.control_dependencies([op]):
            return self.value()

    # --- operators: delegate to the read value ---
    def __getattr__(self, item):
        if item.startswith("__") or item.startswith("_"):
            raise AttributeError(item)
        raise AttributeError(f"'Variable' object has no attribute '{item}'")

    def __repr__(self):
        return f"<ml.Variable '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __bool__(self):
        raise TypeError(f"Using ml.Variable '{self.name}' as a Python bool is not allowed.")

    # As Tensor's: ``numpy_array * variable`` builds an op (numpy defers to us) instead
    # of numpy trying to convert the variable element by element.
    __array_priority__ = 100

    def numpy(self):
        """The variable's current value as a numpy array, read from the session that
        holds it: its graph's Keras session (layer and model weights), else the
        default session when that one has a value for it. (TensorFlow 1 has no
        `numpy()` in graph mode; Keras 3's variables have it.)

        Raises:
          FailedPreconditionError: no session holds a value for the variable (run
            its initializer, or use ``session.run(variable)``).
        """
        for read in _value_readers:
            value = read(self)
            if value is not None:
                return value
        from mylib import errors

        raise errors.FailedPreconditionError(
            f"Cannot read the value of variable '{self.name}': no session holds it. "
            "Initialize it and use `session.run(variable)` (TensorFlow 1) or build its "
            "layer or model first (Keras).")

    def __array__(self, dtype=None, copy=None):
        value = self.numpy()
        return value if dtype is None else value.astype(dtype, copy=False)

    def __float__(self):
        return float(self.numpy())

    def __int__(self):
        return int(self.numpy())


# Functions ``read(variable) -> numpy array or None`` that find a variable's value in
# a session (the runtime registers them: the core does not import the runtime).
_value_readers = []


def register_value_reader(read):
    """Adds `read` to the functions `Variable.numpy()` asks, in order."""
    if read not in _value_readers:
        _value_readers.append(read)


# Functions ``write(variable, kind, value) -> variable or None`` that assign a Keras
# variable's value at once (kind: "assign", "assign_add" or "assign_sub") when it is
# not being used in a graph under construction; None leaves the write to a graph op.
_eager_writers = []


def register_eager_writer(write):
    """Adds `write` to the functions `assign` / `assign_add` / `assign_sub` ask first."""
    if write not in _eager_writers:
        _eager_writers.append(write)


def _write_now(variable, kind, value):
    for write in _eager_writers:
        done = write(variable, kind, value)
        if done is not None:
            return done
    return None


def _binop(name):
    def fwd(self, other):
        return getattr(self.value(), name)(other)

    return fwd


for _n in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
           "__rtruediv__", "__matmul__", "__rmatmul__", "__neg__", "__lt__", "__le__", "__gt__",
           "__ge__", "__pow__", "__rpow__", "__floordiv__", "__rfloordiv__", "__mod__",
           "__rmod__", "__abs__", "__getitem__", "__invert__", "__and__", "__or__"):
    def _mk(n):
        def f(self, *args):
            return getattr(self.value(), n)(*args)

        f.__name__ = n
        return f

    setattr(Variable, _n, _mk(_n))


_variable_device_fns: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def set_variable_device_function(graph, fn):
    """Sets (or with None clears) the function choosing the device of variables created
    in `graph` when no device scope or colocation does: ``fn(graph, name, shape, dtype)``
    returns a device string or None. The runtime's `ExecutionPolicy` registration sets
    it (a parameter-server strategy places variables on its parameter servers)."""
    if fn is None:
        _variable_device_fns.pop(graph, None)
    else:
        _variable_device_fns[graph] = fn


def _default_device(g, name, shape, dtype):
    """The device scope of a new variable's handle (see `set_variable_device_function`)."""
    fn = _variable_device_fns.get(g)
    if fn is None or g._current_device() or g._state.colocate is not None:
        return contextlib.nullcontext()
    device = fn(g, name, shape, dtype)
    return g.device(device) if device else contextlib.nullcontext()


def _make_with_creators(*args, **kwargs):
    """Runs the variable-creator stack (outermost last), as TF's variable_creator_scope."""

    def base(**kw):
        v = object.__new__(Variable)
        Variable.__init__(v, **kw)
        return v

    kw = _bind(args, kwargs)
    fn = base
    for creator in _creator_stack:
        fn = (lambda c, nxt: (lambda **k: c(nxt, **k)))(creator, fn)
    return fn(**kw)


def _bind(args, kwargs):
    """`Variable(*args, **kwargs)`'s arguments by name, checked as `Variable.__init__`
    checks them: an unknown, repeated or extra argument raises `TypeError` here, before
    any creator sees it."""
    import inspect

    try:
        bound = inspect.signature(Variable.__init__).bind(None, *args, **kwargs)
    except TypeError as e:
        raise TypeError(f"Variable(): {e}") from None
    kw = dict(bound.arguments)
    kw.pop("self")
    return kw


class variable_creator_scope:  # noqa: N801 - TF's name
    """Context in which `creator(next_creator, **kwargs)` intercepts `Variable(...)`."""

    def __init__(self, creator):
        self._creator = creator

    def __enter__(self):
        _creator_stack.append(self._creator)

    def __exit__(self, *exc):
        _creator_stack.remove(self._creator)


def global_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def trainable_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope=None):
    """The variables in `GraphKeys.MODEL_VARIABLES` (those a model adds there, e.g. with
    ``get_variable(..., collections=[GLOBAL_VARIABLES, MODEL_VARIABLES])``), optionally
    only those whose name matches the regex `scope`."""
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope=None):
    """The variables `train.ExponentialMovingAverage.apply` averages
    (`GraphKeys.MOVING_AVERAGE_VARIABLES`), optionally filtered by the regex `scope`."""
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    """An op that initializes `var_list`. Initializers run in dependency order: a
    variable whose initial value reads another is initialized after it."""
    if not var_list:
        return array_ops.no_op(name=name)
    return array_ops.group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer():
    """An op initializing every variable in `GLOBAL_VARIABLES`."""
    return variables_initializer(global_variables(), name="init")


def local_variables_initializer():
    return variables_initializer(local_variables(), name="init_local")


def is_variable_initialized(variable):
    return variable.is_initialized()


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """A 1-D string tensor with the names of the uninitialized variables in `var_list`
    (default: all global and local variables)."""
    if var_list is None:
        var_list = global_variables() + local_variables()
    handles = [v.handle for v in var_list]
    return _ReportUninitialized(*handles, names=tuple(v._name for v in var_list), name=name)


def _report_lower(ctx, op, *refs):
    import numpy as np

    names = [n.encode() for n, r in zip(op.attrs["names"], refs) if not ctx.is_initialized(r)]
    return np.array(names, dtype=object)


def _report_shape(*handles, names):
    return TensorSpec([None], _dtypes.string)


_ReportUninitialized = OpDef("ReportUninitializedVariables", lower=_report_lower, stateful=True,
                             shape_fn=_report_shape)
NotDifferentiable("ReportUninitializedVariables")

