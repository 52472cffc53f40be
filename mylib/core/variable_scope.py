"""TensorFlow 1's `get_variable` and `variable_scope`: variables found by name.

Each graph owns a variable store (the variables `get_variable` made, by full name, and
how many times each scope name was opened) and, per thread, the current
`VariableScope`. ``variable_scope(name)`` opens a variable scope ``outer/name`` and a name
scope for the ops made inside it; ``get_variable(name, shape)`` returns the variable
``<scope>/<name>``, creating it unless the scope reuses (``reuse=True`` requires it to
exist, ``AUTO_REUSE`` creates it the first time and shares it after).

Differences from TensorFlow 1: every variable is a resource variable (``use_resource``
is accepted and ignored); ``custom_getter`` is supported; ``caching_device`` is ignored
(reads happen on the variable's device). A partitioned variable is a
`PartitionedVariable` whose parts are ordinary variables named ``<name>/part_<i>``
(split on the first axis only).
"""

from __future__ import annotations

import contextlib
import enum
import threading
import traceback
import weakref

from mylib.core import dtypes as _dtypes
from mylib.core import init_ops
from mylib.core.graph import GraphKeys, Tensor, get_default_graph
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops
from mylib.core.tensor_shape import TensorShape, as_shape
from mylib.core.variables import Variable

__all__ = ["AUTO_REUSE", "VariableScope", "variable_scope", "get_variable",
           "get_local_variable", "get_variable_scope", "no_regularizer",
           "PartitionedVariable", "fixed_size_partitioner", "variable_axis_size_partitioner",
           "min_max_variable_partitioner", "variable_op_scope"]


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE


def no_regularizer(_):
    """Use as ``regularizer=no_regularizer`` to switch off a scope's regularizer."""
    return None


# ---------------------------------------------------------------- the per-graph store
class _VariableStore:
    def __init__(self):
        self.vars = {}  # full name -> Variable or PartitionedVariable
        self.where = {}  # full name -> the user's line that created it
        self.scope_counts = {}  # full scope name -> times opened
        self.local = threading.local()

    def open_scope(self, name):
        self.scope_counts[name] = self.scope_counts.get(name, 0) + 1

    def close_subscopes(self, name):
        # TF1's close_variable_subscopes: leaving a named scope forgets how often the
        # scopes inside it were opened, so entering it again names its unnamed inner
        # scopes (and layers) ``dense``, ``dense_1``, ... once more, which lets a
        # reusing re-entry find the same variables.
        prefix = name + "/"
        for k in self.scope_counts:
            if k.startswith(prefix):
                self.scope_counts[k] = 0

    def unique_scope_name(self, prefix, base):
        full = f"{prefix}/{base}" if prefix else base
        if self.scope_counts.get(full, 0) == 0:
            return base
        i = 1
        while self.scope_counts.get(f"{full}_{i}", 0) > 0:
            i += 1
        return f"{base}_{i}"


_stores: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_stores_lock = threading.Lock()


def _root_graph(g):
    # Inside a control-flow function graph (a loop body), variables belong to the
    # enclosing graph, as TF1's init_scope lifts them.
    while getattr(g, "outer_graph", None) is not None:
        g = g.outer_graph
    return g


def _store(g=None):
    g = _root_graph(g if g is not None else get_default_graph())
    with _stores_lock:
        st = _stores.get(g)
        if st is None:
            st = _stores[g] = _VariableStore()
    return st


# ---------------------------------------------------------------- VariableScope
class VariableScope:
    """The defaults `get_variable` applies in a scope: `name`, `reuse`, `initializer`,
    `regularizer`, `partitioner`, `dtype`, `custom_getter`, `constraint`."""

    def __init__(self, reuse, name="", initializer=None, regularizer=None, caching_device=None,
                 partitioner=None, custom_getter=None, name_scope="", dtype=_dtypes.float32,
                 use_resource=None, constraint=None):
        self._name, self._reuse = name, reuse
        self._initializer, self._regularizer = initializer, regularizer
        self._partitioner, self._custom_getter = partitioner, custom_getter
        self._name_scope, self._dtype = name_scope, _dtypes.as_dtype(dtype)
        self._constraint, self._caching_device = constraint, caching_device
        self._use_resource = use_resource

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    regularizer = property(lambda self: self._regularizer)
    partitioner = property(lambda self: self._partitioner)
    custom_getter = property(lambda self: self._custom_getter)
    dtype = property(lambda self: self._dtype)
    constraint = property(lambda self: self._constraint)
    caching_device = property(lambda self: self._caching_device)
    use_resource = property(lambda self: True)

    def reuse_variables(self):
        """From now on, `get_variable` in this scope returns existing variables."""
        self._reuse = True

    def set_initializer(self, initializer):
        self._initializer = initializer

    def set_regularizer(self, regularizer):
        self._regularizer = regularizer

    def set_partitioner(self, partitioner):
        self._partitioner = partitioner

    def set_dtype(self, dtype):
        self._dtype = _dtypes.as_dtype(dtype)

    def set_custom_getter(self, custom_getter):
        self._custom_getter = custom_getter

    def set_use_resource(self, use_resource):
        self._use_resource = use_resource

    def set_caching_device(self, caching_device):
        self._caching_device = caching_device

    def global_variables(self):
        return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, self._prefix())

    def trainable_variables(self):
        return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, self._prefix())

    def local_variables(self):
        return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, self._prefix())

    def _prefix(self):
        return self._name + "/" if self._name else None

    def get_variable(self, name, shape=None, dtype=None, initializer=None, regularizer=None,
                     reuse=None, trainable=None, collections=None, caching_device=None,
                     partitioner=None, validate_shape=True, use_resource=None,
                     custom_getter=None, constraint=None, synchronization=None,
                     aggregation=None):
        """`get_variable` in this scope (see the module function)."""
        full = f"{self._name}/{name}" if self._name else name
        if reuse is None or reuse is False:
            reuse = self._reuse
        dtype = _dtypes.as_dtype(dtype) if dtype is not None else self._dtype
        kw = dict(name=full, shape=shape, dtype=dtype,
                  initializer=initializer if initializer is not None else self._initializer,
                  regularizer=regularizer if regularizer is not None else self._regularizer,
                  reuse=reuse, trainable=trainable, collections=collections,
                  partitioner=partitioner if partitioner is not None else self._partitioner,
                  validate_shape=validate_shape,
                  constraint=constraint if constraint is not None else self._constraint)
        getters = [g for g in (self._custom_getter, custom_getter) if g is not None]
        fn = _true_getter
        for cg in getters:  # the scope's getter wraps the call's, as TF1
            fn = (lambda c, nxt: (lambda *a, **k: c(nxt, *a, **k)))(cg, fn)
        return fn(**kw)

    def __repr__(self):
        return f"<VariableScope name={self._name!r} reuse={self._reuse!r}>"


def _current(g=None):
    st = _store(g)
    sc = getattr(st.local, "scope", None)
    if sc is None:
        sc = st.local.scope = VariableScope(False)
    return sc


def get_variable_scope():
    """The current `VariableScope` of the default graph (its root scope has name '')."""
    return _current()


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None, custom_getter=None,
                   reuse=None, dtype=None, use_resource=None, constraint=None,
                   auxiliary_name_scope=True):
    """Opens a variable scope (and a name scope for the ops made in it), as TF1.

    Args:
      name_or_scope: a name (``"layer1"``: the scope ``<outer>/layer1``) or a captured
        `VariableScope` (re-entered by its full name), or None with `default_name`.
      default_name: with ``name_or_scope=None``, a name made unique among the scopes
        opened in the same outer scope (``dense``, ``dense_1``, ...). As in TF1, leaving
        a named scope resets the counts of the scopes inside it, so each entry of
        ``variable_scope("D")`` numbers its unnamed inner scopes from ``dense`` again
        (``reuse=True`` or `AUTO_REUSE` on a second entry shares their variables).
      values: tensors whose graph becomes the default graph.
      reuse: True (variables must exist), `AUTO_REUSE` (create or reuse), or None/False
        (inherit the outer scope's; a new scope at the root creates). Reuse is inherited
        by inner scopes and cannot be switched off inside a reusing scope, as in TF1.
      initializer, regularizer, partitioner, dtype, custom_getter, constraint: defaults
        for `get_variable` in the scope (inherited by inner scopes).
      auxiliary_name_scope: False opens no name scope (ops keep the current one).
    Yields:
      the `VariableScope`.
    Raises:
      ValueError: both `name_or_scope` and `default_name` are None, or ``reuse=True``
        with only a `default_name`.
      TypeError: `name_or_scope` is neither a string nor a `VariableScope`.
    """
    if name_or_scope is None and default_name is None:
        raise ValueError("If default_name is None then name_or_scope is required")
    if name_or_scope is not None and not isinstance(name_or_scope, (str, VariableScope)):
        raise TypeError("VariableScope: name_or_scope must be a string or VariableScope. "
                        f"Received: {name_or_scope!r}")
    if name_or_scope is None and reuse is True:
        raise ValueError("reuse=True cannot be used without a name_or_scope")
    g = None
    for v in values or ():
        if isinstance(v, Tensor):
            g = v.graph
            break
    with (g.as_default() if g is not None else contextlib.nullcontext()):
        graph = get_default_graph()
        st = _store(graph)
        outer = _current(graph)
        if isinstance(name_or_scope, VariableScope):
            full = name_or_scope.name
            base = full.split("/")[-1]
            parent_like = name_or_scope
        else:
            if name_or_scope is None:
                base = st.unique_scope_name(outer.name, default_name)
            else:
                base = name_or_scope
            full = f"{outer.name}/{base}" if outer.name else base
            parent_like = outer
        if reuse is None or reuse is False:
            reuse_v = outer.reuse if isinstance(name_or_scope, str) or name_or_scope is None \
                else (name_or_scope.reuse or outer.reuse)
        else:
            reuse_v = reuse
        ns_ctx = graph.name_scope(base) if auxiliary_name_scope and base else \
            contextlib.nullcontext(graph._state.name_scope)
        with ns_ctx as ns:
            new = VariableScope(
                reuse_v, name=full,
                initializer=initializer if initializer is not None else parent_like.initializer,
                regularizer=regularizer if regularizer is not None else parent_like.regularizer,
                caching_device=caching_device or parent_like.caching_device,
                partitioner=partitioner if partitioner is not None else parent_like.partitioner,
                custom_getter=custom_getter if custom_getter is not None
                else parent_like.custom_getter,
                name_scope=ns if isinstance(name_or_scope, str) or name_or_scope is None
                else name_or_scope.original_name_scope,
                dtype=dtype if dtype is not None else parent_like.dtype,
                constraint=constraint if constraint is not None else parent_like.constraint)
            st.open_scope(full)
            captured = isinstance(name_or_scope, VariableScope)
            counts = dict(st.scope_counts) if captured else None
            st.local.scope = new
            try:
                yield new
            finally:
                st.local.scope = outer
                if captured:  # TF1 restores the counts of a re-entered captured scope
                    st.scope_counts.clear()
                    st.scope_counts.update(counts)
                else:
                    st.close_subscopes(full)


def variable_op_scope(values, name_or_scope, default_name=None, **kwargs):
    """TF 0.x's spelling of `variable_scope(name_or_scope, default_name, values)`."""
    return variable_scope(name_or_scope, default_name=default_name, values=values, **kwargs)


# ---------------------------------------------------------------- get_variable
def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """The variable ``<current scope>/<name>``: created, or reused when the scope reuses.

    Args:
      name: the name within the current variable scope.
      shape: its shape (a fully known list or `TensorShape`); not given when
        `initializer` is a value or `Tensor` (its shape is used).
      dtype: default the scope's (float32).
      initializer: a TF1 or Keras initializer (``init(shape, dtype)``), a `Tensor`, or a
        Python / numpy value. Default: the scope's initializer, else
        `glorot_uniform_initializer` for floating dtypes and zeros for integers and bools
        (as TF1).
      regularizer: ``fn(variable) -> scalar Tensor`` whose result is added to
        ``GraphKeys.REGULARIZATION_LOSSES`` (None: the scope's).
      trainable: default True (added to ``TRAINABLE_VARIABLES``).
      collections: default ``[GLOBAL_VARIABLES]``.
      partitioner: ``fn(shape, dtype) -> [parts per axis]`` (e.g.
        `fixed_size_partitioner`): the result is a `PartitionedVariable`.
      custom_getter: ``fn(getter, name, *args, **kwargs)`` wrapping the creation.
      constraint: applied by optimizers after each update.
    Returns:
      a `Variable` (or `PartitionedVariable`).
    Raises:
      ValueError: the variable exists and the scope does not reuse ("... already exists,
        disallowed. Did you mean to set reuse=True ..."), it does not exist and
        ``reuse=True``, the shape or dtype of an existing variable differs, a new
        variable's shape is not fully known, or a non-float variable has no initializer.
    """
    return _current().get_variable(
        name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
        trainable=trainable, collections=collections, caching_device=caching_device,
        partitioner=partitioner, validate_shape=validate_shape, use_resource=use_resource,
        custom_getter=custom_getter, constraint=constraint)


def get_local_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                       trainable=False, collections=None, **kwargs):
    """`get_variable` into ``LOCAL_VARIABLES`` (not trainable, not saved)."""
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                        regularizer=regularizer, trainable=False, collections=collections,
                        **kwargs)


def _user_line():
    for fr in reversed(traceback.extract_stack()[:-3]):
        if "/mylib/" not in fr.filename.replace("\\", "/"):
            return f"{fr.filename}:{fr.lineno}"
    return "<unknown>"


def _true_getter(name, shape=None, dtype=_dtypes.float32, initializer=None, regularizer=None,
                 reuse=None, trainable=None, collections=None, partitioner=None,
                 validate_shape=True, constraint=None, **_ignored):
    g = _root_graph(get_default_graph())
    st = _store(g)
    dtype = _dtypes.as_dtype(dtype)
    if name in st.vars:
        if not reuse:
            raise ValueError(
                f"Variable {name} already exists, disallowed. Did you mean to set reuse=True "
                f"or reuse=tf.AUTO_REUSE in VarScope? Originally defined at: {st.where[name]}")
        found = st.vars[name]
        if shape is not None and not as_shape(shape).is_compatible_with(found.shape):
            raise ValueError(f"Trying to share variable {name}, but specified shape "
                             f"{as_shape(shape)} and found shape {found.shape}.")
        if dtype != found.dtype:
            raise ValueError(f"Trying to share variable {name}, but specified dtype "
                             f"{dtype.name} and found dtype {found.dtype.name}.")
        return found
    if reuse is True:
        raise ValueError(f"Variable {name} does not exist, or was not created with "
                         "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                         "VarScope?")
    init_is_value = initializer is not None and not callable(initializer) or \
        isinstance(initializer, Tensor)
    if init_is_value:
        if shape is not None and validate_shape:
            # TF1 refuses a shape next to a constant initializer; allow an equal one.
            t = convert_to_tensor(initializer, dtype_hint=dtype)
            if not t.shape.is_compatible_with(as_shape(shape)):
                raise ValueError(f"If initializer is a constant, do not specify shape. "
                                 f"Variable {name}: shape {as_shape(shape)} vs initializer "
                                 f"shape {t.shape}")
    else:
        if shape is None:
            raise ValueError(f"Shape of a new variable ({name}) must be fully defined, but "
                             "instead was <unknown>.")
        shape = as_shape(shape)
        if not shape.is_fully_defined():
            raise ValueError(f"Shape of a new variable ({name}) must be fully defined, but "
                             f"instead was {shape}.")
        if initializer is None:
            if dtype.is_floating:
                initializer = init_ops.glorot_uniform_initializer()
            elif dtype.is_integer or dtype.is_bool or dtype.name == "string":
                initializer = init_ops.zeros_initializer()
            else:
                raise ValueError(f"An initializer for variable {name} of {dtype.name} is "
                                 "required")
        elif isinstance(initializer, type):
            initializer = initializer()
    if partitioner is not None and not init_is_value:
        v = _partitioned(g, name, shape, dtype, initializer, trainable, collections,
                         partitioner, constraint)
    else:
        v = _make_variable(g, name, shape, dtype, initializer, init_is_value, trainable,
                           collections, validate_shape, constraint)
    st.vars[name] = v
    st.where[name] = _user_line()
    if regularizer is not None:
        _regularize(g, name, v, regularizer)
    return v


def _make_variable(g, name, shape, dtype, initializer, init_is_value, trainable, collections,
                   validate_shape, constraint, partition_info=None):
    if init_is_value:
        init_value = initializer
    elif partition_info is not None:
        def init_value():
            return _call_init(initializer, shape, dtype, partition_info)
    else:
        def init_value():
            return _call_init(initializer, shape, dtype)
    with g.as_default(), g.control_dependencies(None), g.name_scope(""):
        v = Variable(init_value, trainable=trainable, name=name, dtype=dtype,
                     shape=shape if not init_is_value else None, collections=collections,
                     validate_shape=validate_shape, constraint=constraint)
    return v


def _call_init(initializer, shape, dtype, partition_info=None):
    try:
        if partition_info is not None:
            return initializer(shape.as_list(), dtype=dtype, partition_info=partition_info)
        return initializer(shape.as_list(), dtype=dtype)
    except TypeError as e:
        if "partition_info" in str(e):  # a Keras initializer: init(shape, dtype)
            return initializer(shape.as_list(), dtype=dtype)
        raise


def _regularize(g, name, v, regularizer):
    parts = v._variables if isinstance(v, PartitionedVariable) else [v]
    with g.as_default(), g.name_scope(""), g.name_scope(name + "/Regularizer"):
        for p in parts:
            loss = regularizer(p)
            if loss is not None:
                g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)


# ---------------------------------------------------------------- partitioned variables
class _PartitionInfo:
    """What an initializer of one part may ask: the whole variable's shape and the
    offset of the part (TF1's `PartitionInfo`)."""

    def __init__(self, full_shape, var_offset):
        self.full_shape, self.var_offset = list(full_shape), list(var_offset)

    def single_offset(self, shape):
        return self.var_offset[0]


def _split_sizes(total, n):
    base, extra = divmod(total, n)
    return [base + 1 if i < extra else base for i in range(n)]


def _partitioned(g, name, shape, dtype, initializer, trainable, collections, partitioner,
                 constraint):
    parts = list(partitioner(shape=shape, dtype=dtype))
    if len(parts) != shape.rank or any(int(p) < 1 for p in parts):
        raise ValueError(f"Partitioner returned {parts} for variable {name} of shape "
                         f"{shape}: expected one positive count per axis")
    if any(int(p) > 1 for p in parts[1:]):
        raise ValueError(f"Partitioner returned {parts} for variable {name}: only the first "
                         "axis can be partitioned")
    n = min(int(parts[0]), shape.as_list()[0]) if shape.rank else 1
    if n <= 1:
        return _make_variable(g, name, shape, dtype, initializer, False, trainable,
                              collections, True, constraint)
    sizes = _split_sizes(shape.as_list()[0], n)
    rest = shape.as_list()[1:]
    vs, off = [], 0
    for i, s in enumerate(sizes):
        info = _PartitionInfo(shape.as_list(), [off] + [0] * len(rest))
        vs.append(_make_variable(g, f"{name}/part_{i}", TensorShape([s] + rest), dtype,
                                 initializer, False, trainable, collections, True, constraint,
                                 partition_info=info))
        vs[-1]._save_slice_info = (name, shape.as_list(), [off] + [0] * len(rest), [s] + rest)
        off += s
    pv = PartitionedVariable(name, shape, dtype, vs)
    with g.as_default(), g.control_dependencies(None), g.name_scope(""), \
            g.name_scope(name + "/"):
        pv._graph_element = array_ops.concat([v._as_graph_element() for v in vs], 0,
                                             name="ConcatPartitions")
    return pv


class PartitionedVariable:
    """A variable split on its first axis into parts (ordinary `Variable`s named
    ``<name>/part_<i>``), as TF1's. Used as a tensor it is the concatenation of its
    parts (a read of each); `embedding_lookup` gathers from the parts directly;
    optimizers see the parts (they are in ``TRAINABLE_VARIABLES``). Iterating gives the
    parts; `assign` writes each part its slice."""

    def __init__(self, name, shape, dtype, variables):
        self._name, self._shape, self._dtype = name, as_shape(shape), dtype
        self._variables = list(variables)

    name = property(lambda self: self._name)
    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    variables = property(lambda self: list(self._variables))
    graph = property(lambda self: self._variables[0].graph)
    trainable = property(lambda self: self._variables[0].trainable)

    def get_shape(self):
        return self._shape

    def __iter__(self):
        return iter(self._variables)

    def __len__(self):
        return len(self._variables)

    def _as_graph_element(self):
        return self._graph_element  # for Session.run(partitioned_variable)

    def _get_variable_list(self):
        return list(self._variables)

    def _get_partitions(self):
        return [len(self._variables)] + [1] * (self._shape.rank - 1)

    def as_tensor(self):
        with self.graph.as_default() if get_default_graph() is self.graph else \
                contextlib.nullcontext():
            return array_ops.concat([v.value() for v in self._variables], 0,
                                    name=self._name.split("/")[-1] + "_concat")

    _as_tensor = as_tensor

    def value(self):
        return self.as_tensor()

    read_value = value

    @property
    def initializer(self):
        return array_ops.group(*[v.initializer for v in self._variables])

    def assign(self, value, use_locking=None, name=None, read_value=True):
        value = convert_to_tensor(value, dtype=self._dtype)
        sizes = [v.shape.as_list()[0] for v in self._variables]
        pieces = array_ops.split(value, sizes, axis=0)
        ops = [v.assign(p, read_value=False) for v, p in zip(self._variables, pieces)]
        op = array_ops.group(*ops, name=name)
        if not read_value:
            return op
        with get_default_graph().control_dependencies([op]):
            return self.as_tensor()

    def __repr__(self):
        return (f"<PartitionedVariable '{self._name}' shape={self._shape} "
                f"parts={len(self._variables)}>")


def _delegate(opname):
    def f(self, *args):
        return getattr(self.as_tensor(), opname)(*args)

    f.__name__ = opname
    return f


for _n in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
           "__rtruediv__", "__matmul__", "__rmatmul__", "__neg__", "__getitem__", "__pow__"):
    setattr(PartitionedVariable, _n, _delegate(_n))


def fixed_size_partitioner(num_shards, axis=0):
    """A partitioner into `num_shards` parts along `axis` (only axis 0 is supported).

    Raises:
      ValueError: `num_shards` < 1 or `axis` != 0.
    """
    if not isinstance(num_shards, int) or num_shards < 1:
        raise ValueError(f"fixed_size_partitioner: num_shards must be an int >= 1. "
                         f"Received: {num_shards!r}")
    if axis != 0:
        raise ValueError(f"fixed_size_partitioner: only axis=0 is supported. Received: {axis}")

    def _partitioner(shape, dtype, **_):
        shape = as_shape(shape)
        return [num_shards] + [1] * (shape.rank - 1)

    return _partitioner


def _row_bytes(shape, dtype, bytes_per_string):
    dt = _dtypes.as_dtype(dtype)
    item = bytes_per_string if dt.name == "string" else dt.size
    n = 1
    for d in as_shape(shape).as_list()[1:]:
        n *= int(d)
    return item * n


def variable_axis_size_partitioner(max_shard_bytes, axis=0, bytes_per_string_element=16,
                                   max_shards=None):
    """Parts of at most `max_shard_bytes` each along axis 0 (TF1's), at most
    `max_shards` of them.

    Raises:
      ValueError: `max_shard_bytes` < 1, `max_shards` < 1 or `axis` != 0.
    """
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be positive."
                         f" Received: {max_shard_bytes}, {bytes_per_string_element}")
    if max_shards is not None and max_shards < 1:
        raise ValueError(f"max_shards must be positive. Received: {max_shards}")
    if axis != 0:
        raise ValueError(f"variable_axis_size_partitioner: only axis=0 is supported. "
                         f"Received: {axis}")

    def _partitioner(shape, dtype, **_):
        shape = as_shape(shape)
        rows = shape.as_list()[0]
        per_row = max(1, _row_bytes(shape, dtype, bytes_per_string_element))
        rows_per_shard = max(1, max_shard_bytes // per_row)
        n = -(-rows // rows_per_shard)
        if max_shards is not None:
            n = min(n, max_shards)
        return [max(1, min(n, rows))] + [1] * (shape.rank - 1)

    return _partitioner


def min_max_variable_partitioner(max_partitions=1, axis=0, min_slice_size=256 << 10,
                                 bytes_per_string_element=16):
    """As many parts along axis 0 as keep each at least `min_slice_size` bytes, at most
    `max_partitions` (TF1's).

    Raises:
      ValueError: `axis` != 0 or `max_partitions` < 1.
    """
    if axis != 0:
        raise ValueError(f"min_max_variable_partitioner: only axis=0 is supported. "
                         f"Received: {axis}")
    if max_partitions < 1:
        raise ValueError(f"max_partitions must be >= 1. Received: {max_partitions}")

    def _partitioner(shape, dtype, **_):
        shape = as_shape(shape)
        rows = shape.as_list()[0]
        total = rows * _row_bytes(shape, dtype, bytes_per_string_element)
        n = max(1, min(max_partitions, rows, total // max(1, min_slice_size)))
        return [int(n)] + [1] * (shape.rank - 1)

    return _partitioner
