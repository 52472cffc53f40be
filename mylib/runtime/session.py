"""`Session`: runs parts of a graph, holding the values of its variables.

A run prunes the graph to what the fetches need given the feeds, validates the feeds
before touching any state, compiles the pruned graph once per fetch/feed signature with
`jax.jit` (variables threaded in and out, the buffers of those it writes donated),
caches the plan, and returns numpy values. A step that fails changes no variable.
"""

from __future__ import annotations

import collections
import collections.abc
import contextlib
import operator
import os
import threading
import weakref

import jax
import numpy as np

from mylib import config as _config
from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.compat_args import warn_ignored
from mylib.core.graph import (Operation, Tensor, default_session_stack, get_default_graph,  # noqa: F401
                              get_default_session)
from mylib.core.lowering import check_input_indices, prune
from mylib.core.tensor_shape import TensorShape
from mylib.core.x64 import with_x64, x64
from mylib.runtime.compile import SpecializedStep, compile_step, raise_failed_check
from mylib.runtime.policy import get_policy
from mylib.runtime.variable_store import VariableStore, host_value
from mylib.core.gradients import IndexedSlices
from mylib.core.sparse_tensor import SparseTensor, SparseTensorValue
from mylib.runtime.placement import device_name, place
from mylib.runtime.executor import SegmentedPlan

_NO_DONATE = bool(os.environ.get("MYLIB_NO_DONATE"))

# Compiled plans a Session keeps by default (`ConfigProto(plan_cache_size=...)`).
DEFAULT_PLAN_CACHE_SIZE = 64

IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue",
                                            ["values", "indices", "dense_shape"])


class GPUOptions:
    """TF1's GPU options of a `ConfigProto`: `allow_growth`,
    `per_process_gpu_memory_fraction`, `visible_device_list`, `allocator_type`,
    `force_gpu_compatible`. Accepted and kept as plain attributes (``config.gpu_options
    .allow_growth = True`` works), but they do nothing on this runtime: JAX sizes GPU
    memory, through its ``XLA_PYTHON_CLIENT_PREALLOCATE`` /
    ``XLA_PYTHON_CLIENT_MEM_FRACTION`` environment variables (set before the first use of
    a GPU), and ``CUDA_VISIBLE_DEVICES`` chooses the GPUs. A value other than the default
    given to the constructor warns once."""

    _DEFAULTS = {"allow_growth": False, "per_process_gpu_memory_fraction": 0.0,
                 "visible_device_list": "", "allocator_type": "",
                 "force_gpu_compatible": False, "deferred_deletion_bytes": 0,
                 "polling_active_delay_usecs": 0, "polling_inactive_delay_msecs": 0}

    def __init__(self, **kwargs):
        unknown = sorted(set(kwargs) - set(self._DEFAULTS))
        if unknown:
            raise TypeError(f"GPUOptions got unexpected keyword arguments {unknown}; "
                            f"known: {sorted(self._DEFAULTS)}")
        for k, default in self._DEFAULTS.items():
            value = kwargs.get(k, default)
            if value != default:
                warn_ignored("GPUOptions", k, "GPU memory is managed by JAX "
                             "(XLA_PYTHON_CLIENT_PREALLOCATE / XLA_PYTHON_CLIENT_MEM_FRACTION).")
            setattr(self, k, value)

    def __repr__(self):
        return "GPUOptions(" + ", ".join(f"{k}={getattr(self, k)!r}"
                                         for k in self._DEFAULTS) + ")"


class ConfigProto:
    """Session options (TensorFlow's names). `allow_soft_placement` and
    `log_device_placement` affect placement. Accepted for TensorFlow compatibility and
    ignored (a value other than the default warns once): the thread counts (XLA sizes
    its own thread pools), `device_count` (every local XLA device is usable; hide
    devices with ``CUDA_VISIBLE_DEVICES`` or `mylib.devices.set_cpu_device_count`)
    and `gpu_options` (a `GPUOptions`, also a dict; JAX's ``XLA_PYTHON_CLIENT_*``
    environment variables size GPU memory). ``config.gpu_options.allow_growth = True``
    is accepted and does nothing.

    `plan_cache_size` (a mylib option, not TensorFlow's): how many compiled plans a
    `Session` keeps, least recently used first out (default `DEFAULT_PLAN_CACHE_SIZE`,
    64). A plan is one fetch/feed signature with one set of feed shapes, holding one
    compiled XLA program (or one per cluster); an evicted plan frees its programs and
    is compiled again if the signature comes back."""

    def __init__(self, allow_soft_placement=False, log_device_placement=False,
                 inter_op_parallelism_threads=0, intra_op_parallelism_threads=0,
                 device_count=None, gpu_options=None, plan_cache_size=None):
        for arg, value in (("inter_op_parallelism_threads", inter_op_parallelism_threads),
                           ("intra_op_parallelism_threads", intra_op_parallelism_threads)):
            if value:
                warn_ignored("ConfigProto", arg, "XLA sizes its own thread pools.")
        if device_count:
            warn_ignored("ConfigProto", "device_count",
                         "every local XLA device is usable; hide devices with "
                         "CUDA_VISIBLE_DEVICES or mylib.devices.set_cpu_device_count.")
        if gpu_options is not None and not isinstance(gpu_options, GPUOptions):
            warn_ignored("ConfigProto", "gpu_options", "GPU memory is managed by JAX "
                         "(XLA_PYTHON_CLIENT_PREALLOCATE / XLA_PYTHON_CLIENT_MEM_FRACTION).")
        self.allow_soft_placement = allow_soft_placement
        self.log_device_placement = log_device_placement
        self.inter_op_parallelism_threads = inter_op_parallelism_threads
        self.intra_op_parallelism_threads = intra_op_parallelism_threads
        self.device_count = device_count or {}
        if isinstance(gpu_options, dict):
            gpu_options = GPUOptions(**gpu_options)
        self.gpu_options = gpu_options if gpu_options is not None else GPUOptions()
        if plan_cache_size is None:
            plan_cache_size = DEFAULT_PLAN_CACHE_SIZE
        if isinstance(plan_cache_size, bool) or not isinstance(plan_cache_size,
                                                               (int, np.integer)) \
                or plan_cache_size < 1:
            raise ValueError("`plan_cache_size` must be an integer >= 1. Received: "
                             f"plan_cache_size={plan_cache_size!r}")
        self.plan_cache_size = int(plan_cache_size)


class RunOptions:
    """Per-run options. `timeout_in_ms` bounds blocking host ops; `trace_level`
    (`RunOptions.FULL_TRACE`) asks for step statistics in `RunMetadata`."""

    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    def __init__(self, trace_level=0, timeout_in_ms=0):
        self.trace_level = trace_level
        self.timeout_in_ms = timeout_in_ms


class RunMetadata:
    """Filled by `Session.run` when tracing: `step_stats` is a list of dicts."""

    def __init__(self):
        self.step_stats = []
        self.partition_graphs = []


def _device_wide(plan, rw, ro):
    """`rw`, `ro` with their 64-bit values (indices `plan.wide_args` in ``rw + ro``) as
    64-bit device arrays: outside the 64-bit scope JAX would narrow numpy ones."""
    vals = list(rw) + list(ro)
    for i in plan.wide_args:
        if not isinstance(vals[i], jax.Array):
            with x64():
                vals[i] = jax.device_put(vals[i])
    return tuple(vals[:len(rw)]), tuple(vals[len(rw):])


def _loop_vars(plan, store):
    """``(rw, ro)``: the values of the variables `plan`'s loop carries and reads, from
    `store` (64-bit ones as 64-bit device arrays). KeyError: one has no value."""
    rw = tuple(store[k] for k in plan.rw_keys)
    ro = tuple(store[k] for k in plan.ro_keys)
    return _device_wide(plan, rw, ro) if plan.wide_args else (rw, ro)


class _Plan:
    __slots__ = ("fn", "rw_keys", "ro_keys", "var_keys", "written_keys", "fetch_tensors",
                 "feeds", "static", "status_keys", "status", "uses_rng", "n_fetch",
                 "n_tensor_fetches", "segmented", "rng_ops", "step", "n_args", "loop",
                 "key", "x32", "wide_args", "get_vars", "checks", "n_checks", "input_checks")


def _flatten(fetches, graph):
    """Flattens nested fetches into graph elements; returns (leaves, rebuild)."""
    leaves = []

    def visit(f):
        if isinstance(f, (list, tuple)) and not hasattr(f, "_fields"):
            subs = [visit(x) for x in f]
            ctor = type(f)
            return lambda vals: ctor(s(vals) for s in subs)
        if isinstance(f, tuple):  # namedtuple
            subs = [visit(x) for x in f]
            ctor = type(f)
            return lambda vals: ctor(*[s(vals) for s in subs])
        if isinstance(f, (dict, collections.OrderedDict)):
            items = [(k, visit(v)) for k, v in f.items()]
            ctor = type(f)
            return lambda vals: ctor((k, s(vals)) for k, s in items)

        if isinstance(f, SparseTensor):
            parts = [visit(f.indices), visit(f.values), visit(f.dense_shape)]
            return lambda vals: SparseTensorValue(*[p(vals) for p in parts])
        if isinstance(f, IndexedSlices):
            parts = [visit(f.values), visit(f.indices),
                     visit(f.dense_shape) if f.dense_shape is not None else (lambda v: None)]
            return lambda vals: IndexedSlicesValue(*[p(vals) for p in parts])
        el = _as_fetch(f, graph)
        i = len(leaves)
        leaves.append(el)
        return lambda vals: vals[i]

    rebuild = visit(fetches)
    return leaves, rebuild


def _as_fetch(f, graph):
    if isinstance(f, (Tensor, Operation)):
        if f.graph is not graph:
            raise ValueError(f"Fetch argument {f!r} is not an element of this session's graph.")
        return _variable_read(f, graph)
    if isinstance(f, str):
        try:
            return _variable_read(graph.as_graph_element(f), graph)
        except KeyError as e:
            read = _ref_read_name(f, graph)
            if read is not None:
                return read
            raise ValueError(f"Fetch argument {f!r} cannot be interpreted: {e}") from None
    conv = getattr(f, "_as_graph_element", None)
    if conv is not None:
        return conv()
    if f is None:
        raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
    raise TypeError(
        f"Fetch argument {f!r} has invalid type {type(f).__name__}: must be a Tensor, "
        "Operation, Variable, tensor/op name, or a list/tuple/dict of them.")


def _variable_read(el, graph):
    """A fetch of a variable's own tensor (``'w:0'``, the output of its `VarHandleOp`)
    fetches its value, as TF1's ``w:0`` does: a read of it already in the graph (the
    variable's, else the first plain one), or a new one while the graph can grow."""
    if not (isinstance(el, Tensor) and el.op.type == "VarHandleOp"):
        return el
    var = getattr(graph, "_variables", {}).get(el.op.name)
    if var is not None and getattr(var, "_graph_element", None) is not None:
        return var._graph_element
    for op in graph.get_operations():
        if op.type == "ReadVariableOp" and op.inputs[0] is el and not op.control_inputs:
            return op.outputs[0]
    if graph.finalized:
        raise errors.InvalidArgumentError(
            f"Fetching the variable '{el.op.name}' needs a read of it, and the graph is "
            "finalized and has none: fetch `variable.read_value()` made before "
            "finalizing.")
    from mylib.core.ops import state_ops  # noqa: PLC0415 (only for this rare fetch)
    with graph.as_default(), graph.control_dependencies(None), graph.name_scope(""), \
            graph.name_scope(el.op.name + "/Read"):
        return state_ops.read_variable_op(el)


def _ref_read_name(name, graph):
    # TF1 reads a reference variable through ``<name>/read``; here that name resolves
    # to the variable's value.
    base = name[:-2] if name.endswith(":0") else name
    if not base.endswith("/read"):
        return None
    try:
        op = graph.get_operation_by_name(base[:-len("/read")])
    except (KeyError, ValueError):
        return None
    return _variable_read(op.outputs[0], graph) if op.type == "VarHandleOp" else None


def _feed_key(k, graph):
    if isinstance(k, Tensor):
        if k.graph is not graph:
            raise ValueError(f"Feed key {k!r} is not an element of this session's graph.")
        return k
    if isinstance(k, str):
        try:
            return graph.as_graph_element(k, allow_operation=False)
        except (KeyError, ValueError) as e:  # as TensorFlow: a bad key is a TypeError
            raise TypeError(f"Cannot interpret feed_dict key {k!r} as a Tensor: "
                            f"{e.args[0]}") from None
    conv = getattr(k, "_as_graph_element", None)
    if conv is not None:
        return conv()
    raise TypeError(f"Cannot interpret feed_dict key {k!r} as a Tensor")


def _convert_feed(t, value):
    """Checks a fed value against tensor `t` and converts it (no state is touched)."""
    dt = t.dtype
    if type(value) is np.ndarray and value.dtype == dt._np and dt != _dtypes.string:
        # Fast path: a numpy array of the right dtype and fully known shape.
        dims = t._shape._dims
        if dims is None or value.shape == dims:
            return value
    if isinstance(value, jax.Array):
        arr_dtype, shape = value.dtype, value.shape
        arr = value
    else:
        try:
            arr = np.asarray(value)
        except Exception as e:  # noqa: BLE001
            raise errors.InvalidArgumentError(
                f"Cannot convert the value fed for '{t.name}' to an array: {e}") from None
        arr_dtype, shape = arr.dtype, arr.shape
    if dt == _dtypes.string and getattr(arr_dtype, "kind", "") in "SUO":
        # bytes / str fed to a string tensor: elements become bytes, as TensorFlow
        # returns them (a string tensor is a host value: see string_ops)
        try:
            arr = _string_feed(arr)
        except TypeError as e:
            raise errors.InvalidArgumentError(
                f"Cannot feed the value given for '{t.name}' (dtype string): {e}") from None
        arr_dtype = arr.dtype
    if arr_dtype != dt.np:
        if arr_dtype == object or arr_dtype.kind in "USV":
            raise errors.InvalidArgumentError(
                f"Cannot feed value of dtype {arr_dtype} for Tensor '{t.name}' of dtype "
                f"{dt.name}")
        src = _dtypes.as_dtype(arr_dtype)
        if dt.is_floating and (src.is_floating or src.is_integer):
            _check_float_range(t, arr, src, dt)
        if dt.is_integer and src.is_integer:
            a = np.asarray(arr)
            if a.size and (a.min() < dt.min or a.max() > dt.max):
                raise errors.InvalidArgumentError(
                    f"Cannot feed value of dtype {src.name} for Tensor '{t.name}' of dtype "
                    f"{dt.name}: value {a.max() if a.max() > dt.max else a.min()} overflows "
                    f"{dt.name}")
        elif dt.is_integer and src.is_floating:
            _check_integral(t, arr, src, dt)
        elif not _dtypes.is_lossless_cast(src, dt):
            raise errors.InvalidArgumentError(
                f"Cannot feed value of dtype {src.name} for Tensor '{t.name}' of dtype "
                f"{dt.name}: the conversion would lose information (cast it explicitly)")
        if isinstance(arr, jax.Array):
            with x64():
                arr = arr.astype(dt.np)
        else:
            arr = np.asarray(arr, dt.np)
    ts = t._shape
    if ts._dims is not None:
        d = ts._dims
        if len(shape) != len(d) or any(a is not None and a != b for a, b in zip(d, shape)):
            raise errors.InvalidArgumentError(
                f"Cannot feed value of shape {TensorShape(shape)} for Tensor '{t.name}', "
                f"which has shape {ts}")
    return arr


def _check_integral(t, arr, src, dt):
    """Floats fed to an integer tensor (``np.ones(n)`` as labels): TensorFlow 1 converts
    them with `np.asarray(value, dtype)`, truncating. mylib converts them only when every
    value is a whole number in `dt`'s range, so the numbers are TF1's, and refuses the
    rest instead of truncating silently."""
    a = np.asarray(arr)
    if not a.size:
        return
    bad = ~np.isfinite(a) | (a != np.trunc(a)) | (a < dt.min) | (a > dt.max)
    if bad.any():
        raise errors.InvalidArgumentError(
            f"Cannot feed value of dtype {src.name} for Tensor '{t.name}' of dtype "
            f"{dt.name}: the conversion would lose information (value {a[bad].flat[0]!r} is "
            f"not a whole number in {dt.name}'s range; cast it explicitly)")


def _string_feed(arr):
    """An object array of bytes from an array of str / bytes."""
    arr = np.asarray(arr, dtype=object)
    out = np.empty(arr.shape, dtype=object)
    for i, x in np.ndenumerate(arr):
        if isinstance(x, (str, np.str_)):
            out[i] = x.encode("utf-8")
        elif isinstance(x, (bytes, np.bytes_)):
            out[i] = bytes(x)
        else:
            raise TypeError(f"element {x!r} is not str or bytes")
    return out


def _check_float_range(t, arr, src, dt):
    """Refuses finite values that would become +-inf in the narrower float `dt`."""
    a = np.asarray(arr)
    if not a.size:
        return
    top = float(jax.numpy.finfo(dt.np).max)
    mags = np.abs(a[np.isfinite(a)]) if src.is_floating else np.abs(a.astype(np.float64))
    if mags.size and float(mags.max()) > top:
        raise errors.InvalidArgumentError(
            f"Cannot feed value of dtype {src.name} for Tensor '{t.name}' of dtype "
            f"{dt.name}: value {float(mags.max()):g} overflows {dt.name} (largest finite "
            f"{top:g}); it would become inf")


def _fed_variable(t, graph):
    """The `Variable` whose value tensor (``w`` as a feed key, its read tensor) `t` is,
    else None."""
    if t.op.type != "ReadVariableOp" or not t.op.inputs:
        return None
    v = graph._variables.get(t.op.inputs[0].op.name)
    return v if v is not None and v._graph_element is t else None


def _expand_sparse_feeds(feed_dict):
    """The ``(key, value)`` pairs of `feed_dict`, a `SparseTensor` key (from
    `sparse_placeholder`) fed with a `SparseTensorValue` or an ``(indices, values,
    dense_shape)`` tuple becoming its three tensors' feeds."""
    for k, v in feed_dict.items():
        if isinstance(k, SparseTensor):
            if isinstance(v, SparseTensor):
                raise TypeError("A SparseTensor is fed a SparseTensorValue (numpy arrays), "
                                "not another SparseTensor.")
            if not isinstance(v, (tuple, list)) or len(v) != 3:
                raise TypeError("A SparseTensor must be fed a SparseTensorValue or an "
                                "(indices, values, dense_shape) tuple. Received: "
                                f"{type(v).__name__}")
            yield k.indices, v[0]
            yield k.values, v[1]
            yield k.dense_shape, v[2]
        else:
            yield k, v


def _feed_items(feed_dict, graph):
    """``(keys, values, {variable key: (tensor, value)})``: the feed keys resolved to
    tensors (each at most once), values converted; fed variables apart."""
    if not isinstance(feed_dict, collections.abc.Mapping):
        raise TypeError("`feed_dict` must be a dict {Tensor or tensor name: value}. "
                        f"Received: a {type(feed_dict).__name__}.")
    keys, vals, seen, var_feeds = [], [], {}, {}
    for k, v in _expand_sparse_feeds(feed_dict):
        t = k if type(k) is Tensor and k.graph is graph else _feed_key(k, graph)
        if t in seen:
            raise ValueError(f"The tensor '{t.name}' is fed more than once: feed_dict keys "
                             f"{seen[t]!r} and {k!r} both name it.")
        seen[t] = k
        var = _fed_variable(t, graph)
        if var is not None:
            var_feeds[var._key] = (t, _convert_feed(t, v))
            continue
        keys.append(t)
        vals.append(_convert_feed(t, v))
    return tuple(keys), vals, var_feeds


def _to_numpy(v):
    if v is None:
        return None
    a = host_value(v)
    return a[()] if a.ndim == 0 else a


class Session:
    """Runs operations of a `Graph` and holds the values of its variables.

    Args:
      target: '' for in-process execution. Cluster targets come with distribution
        strategies: another target is accepted for TensorFlow compatibility and
        ignored (warns once); the session runs in this process.
      graph: the `Graph` to run (default: the default graph).
      config: optional `ConfigProto`.

    Use as a context manager (which also makes it the default session)::

        with ml.Session() as sess:
            sess.run(ml.global_variables_initializer())
            print(sess.run(y, {x: batch}))

    Differs from TensorFlow: the pruned graph is compiled by XLA on its first run with
    a given fetch/feed signature and new feed shapes, so first runs are slower.
    """

    def __init__(self, target="", graph=None, config=None):
        if target:
            warn_ignored("Session", "target", "the session runs in this process; "
                         "distribution strategies (mylib.distribute) reach clusters.")
        self._graph = graph if graph is not None else get_default_graph()
        self._target = target
        self._config = config or ConfigProto()
        # Fresh entropy, unless a global seed / op determinism fixes it (mylib.config).
        self._vars = VariableStore(_config.session_seed_base())
        self._store = self._vars.values  # the live mapping, for the executors
        self._lock = self._vars.lock
        self._plans = collections.OrderedDict()  # LRU: least recently used first
        self._plan_cache_size = self._config.plan_cache_size
        self._closed = False
        self._default_ctx = None
        self._resources = {}
        self._cancelled = threading.Event()
        self._graph.add_variables_freed_listener(self)

    # --- context management ---
    @property
    def graph(self):
        return self._graph

    @property
    def closed(self):
        """Whether `close()` was called."""
        return self._closed

    @property
    def variable_store(self):
        """This session's `VariableStore` (local variable values and random-stream
        state). Variables a strategy holds elsewhere are read and written with
        `read_variables` / `assign_variables`."""
        return self._vars

    def as_default(self):
        return _DefaultSession(self)

    def __enter__(self):
        self._default_ctx = _DefaultSession(self)
        self._default_ctx.__enter__()
        self._graph_ctx = self._graph.as_default()
        self._graph_ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self._graph_ctx.__exit__(*exc)
        self._default_ctx.__exit__(*exc)
        self.close()

    def close(self):
        """Frees the session's variable values, resources and compiled plans. Steps
        blocked in host ops (a dequeue from an empty queue) wake with CancelledError."""
        self._cancelled.set()
        with self._lock:
            self._closed = True
            self._vars.clear()
            self._plans.clear()
            for r in self._resources.values():
                close = getattr(r, "_session_closed", None)
                if close is not None:
                    close()

    # --- run ---
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs the ops needed for `fetches`, with `feed_dict` replacing tensor values.

        Args:
          fetches: a `Tensor`, `Operation`, `Variable`, a tensor or op name
            (``"x:0"`` / ``"train"``), or a nested list/tuple/namedtuple/dict of them.
          feed_dict: `{tensor or name: value}`; any tensor can be fed, not only
            placeholders. Values are numpy-convertible; an int fed into a float tensor
            is accepted, a lossy conversion (float into int, an int or float that
            overflows the tensor's dtype) is not. Feeding a `Variable` (or its name,
            or the tensor it stands for) substitutes the value for every read of the
            variable in this step, as TensorFlow 1 did; the stored value is unchanged.
            A fed integer that sets a size (``zeros([n])``, ``reshape(x, [n, -1])``)
            compiles the step for its value (32 programs kept per step); fed strings
            are host values that only host (string) ops take.
          options: `RunOptions`; run_metadata: `RunMetadata` filled when tracing.
        Returns:
          The fetched values in the structure of `fetches`: numpy arrays (numpy
          scalars for 0-d values), None for operations.
        Raises:
          InvalidArgumentError: unfed placeholder, or a feed of the wrong shape/dtype;
            a fed variable that the step also writes; an index out of range in a
            gather or scatter (the step then changes no variable), as TensorFlow on
            CPU.
          TypeError: `feed_dict` is not a dict, or a key is not a tensor.
          ValueError: a tensor is fed twice (under two keys).
          UnimplementedError: a variable is fed to a step with host ops or several
            devices.
          FailedPreconditionError: a variable is read before it is initialized.
          RuntimeError: the session is closed.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        g = self._graph
        if type(fetches) is Tensor and fetches.graph is g:
            leaves, rebuild = [_variable_read(fetches, g)], None
        else:
            leaves, rebuild = _flatten(fetches, g)
        var_feeds = None
        if feed_dict is not None and (feed_dict or not isinstance(feed_dict, dict)):
            feed_keys, feed_vals, var_feeds = _feed_items(feed_dict, g)
        else:
            feed_keys, feed_vals = (), []
        plan = self._plan(tuple(leaves), feed_keys, feed_vals)
        if var_feeds:
            outs = self._execute(plan, feed_vals, self._var_overrides(plan, var_feeds))
        elif options is None and plan.segmented is None:
            outs = self._execute(plan, feed_vals)
        else:
            outs = self._execute_with_options(plan, feed_vals, options, run_metadata)
        vals = [_to_numpy(v if s is None else s) for v, s in zip(outs, plan.static)]
        if rebuild is None:
            return vals[0]
        return rebuild(vals)

    def make_callable(self, fetches, feed_list=None, accept_options=False):
        """A function running `fetches` with positional values for `feed_list`.

        Returns:
          ``f(*feed_values)`` returning the fetched values as `run` would; the plan is
          looked up once, so each call costs little more than the compiled step.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        g = self._graph
        leaves, rebuild = _flatten(fetches, g)
        all_keys = tuple(_feed_key(k, g) for k in (feed_list or ()))
        var_at = {i: _fed_variable(t, g) for i, t in enumerate(all_keys)}
        var_at = {i: v for i, v in var_at.items() if v is not None}
        feed_keys = tuple(t for i, t in enumerate(all_keys) if i not in var_at)
        plan_box = [None, None]  # the plan, its runner
        n = len(all_keys)
        single = type(fetches) is Tensor

        def call(*args, options=None, run_metadata=None):
            if len(args) != n:
                raise TypeError(f"callable expects {n} feed values, got {len(args)}")
            vals = [_convert_feed(t, a) for t, a in zip(all_keys, args)]
            plan = plan_box[0]
            fvals = [v for i, v in enumerate(vals) if i not in var_at] if var_at else vals
            if plan is None or plan.status_keys or plan.key[2] != _shapes(fvals):
                new = self._plan(tuple(leaves), feed_keys, fvals)
                if new is not plan:
                    plan_box[:] = [new, self._runner(new)]
                plan = new
                owned.add(plan.key)
            if var_at:
                overrides = self._var_overrides(
                    plan, {v._key: (all_keys[i], vals[i]) for i, v in var_at.items()})
                vals = [v for i, v in enumerate(vals) if i not in var_at]
                outs = self._execute(plan, vals, overrides)
            elif options is None:
                outs = plan_box[1](vals)
            else:
                outs = self._execute_with_options(plan, vals, options, run_metadata)
            res = [_to_numpy(v if s is None else s) for v, s in zip(outs, plan.static)]
            return res[0] if single else rebuild(res)

        owned = self._plans_owned_by(call)
        return call

    def partial_run_setup(self, fetches, feeds=None):
        """Not supported: see `partial_run`."""
        self.partial_run(None, fetches)

    def partial_run(self, handle, fetches, feed_dict=None):
        """Not supported.

        TensorFlow 1's partial runs feed and fetch one step in several calls, keeping
        the step's intermediate tensors alive in the executor between them. mylib
        compiles a whole step into one XLA program (or a few clusters), which has no
        point to pause at. What replaces it: run the first part and feed its results
        to the second (any tensor can be fed, so the second run does not recompute
        them); `make_callable` for the repeated pattern; queues for producer/consumer
        splits.

        Raises:
          UnimplementedError: always.
        """
        raise errors.UnimplementedError(
            "partial_run is not supported: a step compiles to whole XLA programs. Run the "
            "first part, then feed its fetched tensors to the second run (any tensor can "
            "be fed), or use make_callable or a queue.")

    def make_device_callable(self, fetches, feed_list):
        """Like `make_callable` without feed checks or host copies.

        For trusted callers (the Keras training loop) that convert their own batches:
        ``f(*feed_values)`` returns a list of device arrays (None for operations), read
        on the host only when the caller asks. Feed values must already have the
        tensors' dtypes and shapes. ``f.release()`` drops its compiled plan.
        """
        g = self._graph
        leaves = [_as_fetch(f, g) for f in fetches]
        feed_keys = tuple(_feed_key(k, g) for k in feed_list)
        box = []

        def call(*vals):
            # One plan per feed shapes (the session's LRU bounds them): a new shape
            # looks its plan up again. The hot path of every fit/predict step.
            run = box[0] if box else None
            if run is None or run[0] != _shapes(vals):
                plan = self._plan(tuple(leaves), feed_keys, vals, checks=False)
                run = (plan.key[2], self._runner(plan, check=False))
                box[:] = [run]
                owned.add(plan.key)
            return run[1](vals)

        def release():
            # Frees the compiled plans (callers with bounded caches evict with them).
            box.clear()
            prefix = (tuple(leaves), feed_keys)
            with self._lock:
                for k in [k for k in self._plans if k[:2] == prefix]:
                    self._plans.pop(k, None)

        call.release = release
        owned = self._plans_owned_by(call)
        return call

    def make_device_loop_callable(self, fetches, feed_list, all_steps=False):
        """`make_device_callable` for k steps per call: ``call(*stacked_feeds)`` takes
        each feed value with a leading axis of k steps (every step the same shapes)
        and runs the k steps as one compiled `lax.scan` over the plan's step, the
        written variables carried from step to step (their buffers donated). Returns
        the LAST step's fetches (device arrays, None for operations), or with
        `all_steps` every step's, stacked on a leading axis of k (as `predict` needs).
        Random ops draw what k separate runs would. k is read from the feeds; each
        distinct k compiles once, and the program's size does not depend on it.

        Plans that cannot run as one loop (host ops or several devices, a strategy's
        step, variables written but not read) run the single-step program k times:
        the same values, without the fusion."""
        g = self._graph
        leaves = tuple(_as_fetch(f, g) for f in fetches)
        feed_keys = tuple(_feed_key(k, g) for k in feed_list)
        if not feed_keys:
            raise ValueError("a loop callable needs at least one feed: the number of "
                             "steps is the leading dimension of the fed values")
        box = []

        def call(*stacked):
            k = int(np.shape(stacked[0])[0])
            if not box or box[0].key[2] != tuple(np.shape(v)[1:] for v in stacked):
                box[:] = [self._plan(leaves, feed_keys, [v[0] for v in stacked], checks=False)]
                owned.add(box[0].key)
            plan = box[0]
            if plan.loop is not False:
                outs = self._execute_loop(plan, stacked, k, all_steps)
                if outs is not None:
                    return outs
            steps = []
            for i in range(k):
                vals = [v[i] for v in stacked]
                if plan.segmented is not None:
                    outs = self._execute_with_options(plan, vals, None, None)
                else:
                    outs = self._execute(plan, vals, check=False)
                steps.append(outs)
            if all_steps:
                return [None if o is None else np.stack([np.asarray(s[j]) for s in steps])
                        for j, o in enumerate(outs)]
            return outs

        def step_effects():
            """None until a call has run as one loop program; then
            ``{"writes": bool, "random": bool}``: whether its steps write variables
            and draw random numbers (what extra steps, padding a last group to k,
            could change besides the time they take)."""
            plan = box[0] if box else None
            if plan is None or plan.loop in (None, False):
                return None
            return {"writes": bool(plan.written_keys), "random": bool(plan.uses_rng)}

        def steps_are_pure():
            """True once a call has run as one loop program whose steps write no
            variable and draw no random numbers."""
            fx = step_effects()
            return fx is not None and not fx["writes"] and not fx["random"]

        def precompile(k, vals, max_flops=None):
            """Starts compiling the k-step loop for feeds shaped like `vals` (ONE
            step's feed values) on a background thread, so that later calls with k
            stacked steps find it compiled. Returns a `LoopCompile` handle, or None
            where the plan cannot run as one loop program (or, with `max_flops`, where
            XLA's cost analysis puts one step above that many floating-point
            operations: such a step is long enough that its call overhead does not
            matter). Tracing and lowering happen on the calling thread; only XLA's
            compilation, which releases the GIL, runs on the other one."""
            plan = self._plan(leaves, feed_keys, vals, checks=False)
            box[:] = [plan]
            owned.add(plan.key)
            return self._precompile_loop(plan, k, vals, max_flops)

        call.step_effects, call.steps_are_pure = step_effects, steps_are_pure
        call.precompile = precompile
        owned = self._plans_owned_by(call)
        return call

    def _plans_owned_by(self, fn):
        """A set to which callable `fn` adds the keys of the plans it looks up: when
        `fn` is garbage-collected (its model was dropped) they leave the plan cache,
        so the compiled programs and the ops they hold are freed with it."""
        keys = set()
        weakref.finalize(fn, _drop_plans, weakref.ref(self), keys)
        return keys

    def _variables_freed(self, keys):
        """The graph freed these variables' handle ops: their values go too."""
        with self._lock:
            for k in keys:
                self._store.pop(k, None)

    def _loop_fn(self, plan):
        """The jitted k-step loop of a plan, or False when its step cannot loop."""
        n_rw, n_ro, n_feed = plan.n_args
        if plan.step is None or len(plan.written_keys) != n_rw:
            # Written variables the step does not read (first writes of uninitialized
            # ones) have no value to start a carry from.
            return False
        step, n_out, uses_rng = plan.step, plan.n_tensor_fetches, plan.uses_rng
        n_skip = n_out + plan.n_checks  # the index checks' outputs: not read in loops
        rw_at = [plan.written_keys.index(k) for k in plan.rw_keys]

        def loop(rw, ro, feeds, counters, k, all_steps=False):
            with x64():  # traced in the 64-bit scope even when lowered outside it
                return _loop(rw, ro, feeds, counters, k, all_steps)

        def _loop(rw, ro, feeds, counters, k, all_steps):
            def body(carry, xs):
                feed_vals, counter = xs
                outs = step(*carry, *ro, *feed_vals, *((counter,) if uses_rng else ()))
                written = outs[n_skip:]
                new = tuple(written[i] for i in rw_at)
                for old, v in zip(carry, new):
                    if old.shape != v.shape or old.dtype != v.dtype:
                        raise _NoLoop()  # a variable changes shape: no fixed carry
                return new, tuple(outs[:n_out])

            carry, ys = jax.lax.scan(body, rw, (feeds, counters), length=k)
            if all_steps:
                return tuple(ys), carry
            # Only the last step's fetches are returned: XLA keeps the stacked
            # per-step values of small fetches (metrics) and drops the rest.
            return tuple(None if y is None else y[-1] for y in ys), carry

        return jax.jit(loop, static_argnames=("k", "all_steps"),
                       donate_argnums=() if _NO_DONATE else (0,))

    @with_x64
    def _execute_loop(self, plan, stacked, k, all_steps=False):
        """Runs k steps of `plan` as one loop program; None when the plan turns out
        not to loop (nothing has run then, and the caller runs single steps). Returns
        the last step's fetches, or with `all_steps` every step's, stacked [k, ...]."""
        if plan.loop is None:
            plan.loop = self._loop_fn(plan)
            if plan.loop is False:
                return None
        store = self._store
        with self._lock:
            if self._closed:
                raise RuntimeError("Attempted to use a closed Session.")
            try:
                rw, ro = _loop_vars(plan, store)
            except KeyError as e:
                raise errors.FailedPreconditionError(
                    f"Attempting to use uninitialized value {e.args[0]}") from None
            counts = None
            if plan.uses_rng:
                before = self._vars.rng_state()
                counts = self._vars.take_rng_counts(plan.rng_ops, k)
            try:
                # Lowered outside the 64-bit scope where the step allows it (see
                # _execute): the loop counter of the k steps is then int32.
                with _x64_mode(not plan.x32):
                    if all_steps:
                        last, new = plan.loop(rw, ro, tuple(stacked), counts, k=k,
                                              all_steps=True)
                    else:  # fit's hot path: the call signature it always had
                        last, new = plan.loop(rw, ro, tuple(stacked), counts, k=k)
            except _NoLoop:  # raised while tracing: nothing ran, nothing was donated
                plan.loop = False
                if plan.uses_rng:
                    self._vars.set_rng_state(before)
                return None
            store.update(zip(plan.rw_keys, new))
        return [None if o is None else last[o] for o in plan.n_fetch]

    @with_x64
    def _precompile_loop(self, plan, k, vals, max_flops=None):
        """Lowers `plan`'s k-step loop for feeds shaped like `vals` (one step's) with
        the signature `_execute_loop` calls it with, and compiles it on a background
        thread: a `LoopCompile`, or None (the plan does not loop, or is above
        `max_flops` a step)."""
        if plan.segmented is not None:
            return None
        if plan.loop is None:
            plan.loop = self._loop_fn(plan)
        if plan.loop is False:
            return None
        with self._lock:
            try:
                rw, ro = _loop_vars(plan, self._store)
            except KeyError:
                return None
        spec = lambda a: jax.ShapeDtypeStruct((k,) + np.shape(a), a.dtype)  # noqa: E731
        stacked = tuple(spec(v) for v in vals)
        counts = jax.ShapeDtypeStruct((k, len(plan.rng_ops)), np.uint32) \
            if plan.uses_rng else None
        try:
            with _x64_mode(not plan.x32):
                lowered = plan.loop.lower(rw, ro, stacked, counts, k=k)
        except _NoLoop:
            plan.loop = False
            return None
        if max_flops is not None:
            cost = lowered.cost_analysis() or {}
            if isinstance(cost, (list, tuple)):
                cost = cost[0] if cost else {}
            # The loop body is counted once: the flops of one step.
            if float(cost.get("flops", 0.0)) > max_flops:
                return None
        return LoopCompile(lowered)

    # --- plans ---
    def _plan(self, leaves, feed_keys, feed_vals, checks=True):
        """The plan of `leaves` given `feed_keys` with values shaped like `feed_vals`,
        from the LRU cache (at most `plan_cache_size` plans; the least recently used
        is dropped with its compiled programs) or built now. Without `checks` (device
        callables, which never wait on a step), gathers and scatters do not check
        their indices."""
        if self._closed:  # before a compile that would read the cleared values
            raise RuntimeError("Attempted to use a closed Session.")
        key = (leaves, feed_keys, _shapes(feed_vals))
        if not checks:
            key += ("unchecked",)
        plans = self._plans
        plan = plans.get(key)
        if plan is not None:
            st = self._store
            if not plan.status_keys or \
                    plan.status == tuple(k in st for k in plan.status_keys):
                try:
                    plans.move_to_end(key)
                except KeyError:  # evicted meanwhile by another thread
                    pass
                return plan
        with self._lock, x64():
            plan = self._build_plan(leaves, feed_keys, feed_vals, checks)
            plan.key = key
            plans[key] = plan
            plans.move_to_end(key)
            while len(plans) > self._plan_cache_size:
                plans.popitem(last=False)
        return plan

    @property
    def plan_cache_size(self):
        """How many compiled plans this session keeps (`ConfigProto.plan_cache_size`)."""
        return self._plan_cache_size

    def _build_plan(self, leaves, feed_keys, feed_vals, checks=True):
        fetch_tensors, targets = [], []
        for el in leaves:
            if isinstance(el, Operation):
                targets.append(el)
            else:
                fetch_tensors.append(el)
        if len(set(feed_keys)) != len(feed_keys):
            dup = next(t for i, t in enumerate(feed_keys) if t in feed_keys[:i])
            raise ValueError(f"The tensor '{dup.name}' is fed more than once (it appears "
                             "twice among the feeds).")
        ops = prune(fetch_tensors, targets, feed_keys)
        fed = set(feed_keys)
        for op in ops:
            if op.type == "Placeholder" and op.outputs[0] not in fed:
                raise errors.InvalidArgumentError(
                    f"You must feed a value for placeholder tensor '{op.name}' with dtype "
                    f"{op.attrs['dtype']} and shape {TensorShape(op.attrs['shape'])}", op=op)
        policy = get_policy(self._graph)
        if policy is not None:
            # A parameter-server strategy cuts the step across its tasks.
            remote = policy.plan_step(self, ops, feed_keys, fetch_tensors, targets)
            if remote is not None:
                return self._build_segmented_plan(leaves, ops, feed_keys, fetch_tensors,
                                                  None, remote)
        laid_out = policy is not None and policy.lays_out_steps()
        placed = {} if laid_out else self._place(ops)
        devs = {d for d in placed.values() if d is not None}
        # Host ops, and fed strings (host values, which only host ops take), run in a
        # segmented step.
        if any(op.op_def.host for op in ops) or len(devs) > 1 or \
                (devs and next(iter(devs)) != jax.devices()[0]) or \
                any(t.dtype == _dtypes.string for t in feed_keys):
            return self._build_segmented_plan(leaves, ops, feed_keys, fetch_tensors, placed,
                                              checks=checks)
        # Processes of one multi-worker job must draw the same random initial values.
        seed_base = (policy.step_seed_base() if policy is not None else None) or \
            self._vars.seed_base
        store, constrain = self._store, policy.constrain_variable if laid_out else None
        cs = compile_step(ops, feed_keys, fetch_tensors, store, seed_base, feed_vals,
                          donate=not _NO_DONATE, constrain=constrain, index_checks=checks)
        n_rw, n_ro, n_feed = len(cs.rw_keys), len(cs.ro_keys), len(feed_keys)
        plan = _Plan()
        plan.segmented = None
        plan.fn = cs.fn
        specialized = bool(cs.static_inputs)
        if specialized:
            # Sizes computed from fed values: one program per value of those feeds.
            static = cs.static_inputs
            plan.fn = SpecializedStep(cs, lambda vals: compile_step(
                ops, feed_keys, fetch_tensors, store, seed_base, vals,
                donate=not _NO_DONATE, constrain=constrain, static_inputs=static,
                index_checks=checks),
                n_rw + n_ro, feed_vals)
        # The un-jitted step and its argument layout, for k-step loops (`_loop_fn`); a
        # strategy's step (sharded arguments) is not looped, nor one specialized to
        # fed values.
        plan.step = None if laid_out or specialized else cs.step
        plan.n_args = (n_rw, n_ro, n_feed)
        plan.loop = None
        # Run outside the 64-bit scope where that changes nothing but JAX's own index
        # arithmetic (see mylib.runtime.compile); the 64-bit variables it reads (an
        # optimizer's int64 step count) are passed as 64-bit device arrays.
        plan.x32 = bool(cs.x32) and not laid_out and not specialized
        keys = list(cs.rw_keys) + list(cs.ro_keys)
        plan.wide_args = tuple(i for i, k in enumerate(keys)
                               if np.dtype(self._store[k].dtype).itemsize == 8
                               or np.dtype(self._store[k].dtype).kind == "c")
        if laid_out:
            jitted, feeds_at = plan.fn, slice(n_rw + n_ro, n_rw + n_ro + n_feed)
            plan.fn = lambda *a: jitted(*policy.shard_step_args(list(a), feeds_at))
        plan.rw_keys = cs.rw_keys
        plan.ro_keys = cs.ro_keys
        plan.var_keys = tuple(cs.rw_keys) + tuple(cs.ro_keys)
        plan.get_vars = _getter(plan.var_keys)
        plan.written_keys = cs.written_keys
        plan.n_tensor_fetches = len(fetch_tensors)
        plan.fetch_tensors = fetch_tensors
        plan.feeds = feed_keys
        plan.status_keys = cs.status_keys
        plan.status = tuple(k in self._store for k in plan.status_keys)
        plan.uses_rng = cs.uses_rng
        plan.rng_ops = cs.rng_ops
        plan.n_fetch = _fetch_order(leaves)
        plan.static = [None if o is None else cs.static.get(o) for o in plan.n_fetch]
        # Index checks (gathers and scatters with run-time indices): their outputs
        # follow the fetches; a failed one fails the run after the step.
        plan.checks, plan.n_checks = cs.checks, cs.n_checks
        plan.input_checks = cs.input_checks  # fed indices: checked before the step
        return plan

    def _place(self, ops):
        """Assigns each op a device (see `mylib.runtime.placement`) and records it in
        `op.device` where the graph left it unspecified, so placement is visible."""

        placed = place(ops, self._config)
        for op, d in placed.items():
            if d is not None and not op.device:
                op.device = device_name(d)
        return placed

    def _build_segmented_plan(self, leaves, ops, feed_keys, fetch_tensors, placed, seg=None,
                              checks=True):

        if seg is None:
            seg = SegmentedPlan(ops, feed_keys, fetch_tensors, placed.get, None,
                                index_checks=checks)
        plan = _Plan()
        plan.segmented = seg
        plan.fn = None
        plan.step = None
        plan.loop = False
        plan.x32, plan.wide_args = False, ()
        plan.status_keys = ()
        plan.status = ()
        plan.fetch_tensors = fetch_tensors
        plan.feeds = feed_keys
        plan.n_fetch = _fetch_order(leaves)
        plan.static = [None] * len(plan.n_fetch)
        plan.checks, plan.n_checks, plan.input_checks = (), 0, ()  # per cluster
        return plan

    @with_x64
    def _execute_with_options(self, plan, feed_vals, options, run_metadata):
        """The general path: segmented steps, timeouts and tracing."""
        import time

        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        deadline = None
        if options is not None and getattr(options, "timeout_in_ms", 0):
            deadline = time.monotonic() + options.timeout_in_ms / 1000.0
        trace = [] if (options is not None and getattr(options, "trace_level", 0)
                       and run_metadata is not None) else None
        t0 = time.perf_counter()
        if plan.segmented is not None:
            outs = plan.segmented.run(self, list(feed_vals), deadline, trace)
            res = [None if o is None else outs[o] for o in plan.n_fetch]
        else:
            res = self._execute(plan, feed_vals)
            if trace is not None:
                jax.block_until_ready([r for r in res if r is not None])
                trace.append({"name": "cluster_0", "device": str(jax.devices()[0]),
                              "kind": "xla", "start": t0, "end": time.perf_counter(),
                              "ops": [t.op.name for t in plan.fetch_tensors]})
        if trace is not None and plan.segmented is not None:
            run_metadata.partition_graphs[:] = plan.segmented.partition_graphs()
        if trace is not None:
            run_metadata.step_stats.extend(
                dict(ev, start_us=(ev["start"] - t0) * 1e6, end_us=(ev["end"] - t0) * 1e6)
                for ev in trace)
        return res

    def _get_resource(self, key, factory):
        with self._lock:
            r = self._resources.get(key)
            if r is None:
                if self._closed:
                    raise errors.CancelledError("the session is closed")
                r = self._resources[key] = factory()
            return r

    def _var_overrides(self, plan, var_feeds):
        """``{variable key: value}`` for the variables fed in a run: the step reads the
        fed value wherever it reads the variable (TensorFlow 1's feeding of a
        variable), the stored value stays as it was.

        Raises:
          InvalidArgumentError: the step also writes a fed variable.
          UnimplementedError: the step does not compile to one XLA program.
        """
        if plan.segmented is not None:
            names = sorted(t.name for t, _ in var_feeds.values())
            raise errors.UnimplementedError(
                f"Feeding a variable ({names}) is supported for steps that compile to one "
                "XLA program; this step has host ops or spans several devices or tasks. "
                "Feed a placeholder that the graph reads instead.")
        written = set(plan.written_keys)
        for k, (t, _) in var_feeds.items():
            if k in written:
                raise errors.InvalidArgumentError(
                    f"Variable '{k}' is fed (as '{t.name}') and also written by this step: "
                    "a fed variable is read-only for the step. Run the update without "
                    "feeding the variable.")
        return {k: v for k, (t, v) in var_feeds.items()}

    def _runner(self, plan, check=True):
        """``run(feed_vals)``: `_execute` of `plan` specialized to it, for callables
        (which keep it beside their plan; a plan does not hold it, so that evicted
        plans are freed without a reference cycle). A plain plan (one program, no
        random ops, lowered in 32 bits) gets a closure holding everything the step
        reads: at the digits MLP's ~60 us steps, where the Python around the compiled
        call is most of what is left, each attribute read and branch of the general
        path showed in the step rate (fit at k=1 3-9% faster, epochs interleaved with
        the old path in one process; see benchmarks/RESULTS.md, sixth pass)."""
        if plan.segmented is not None:
            return lambda vals: self._execute_with_options(plan, vals, None, None)
        if plan.uses_rng or not plan.x32:
            return lambda vals: self._execute(plan, vals, check=check)
        lock, store, fn, get = self._lock, self._store, plan.fn, plan.get_vars
        written, n, picks, wide = (plan.written_keys, plan.n_tensor_fetches,
                                   plan.n_fetch, plan.wide_args)
        checks, n_checks = plan.checks, plan.n_checks if check else 0
        n_out = n + plan.n_checks
        in_checks = plan.input_checks if check else ()
        config = jax.config
        execute = self._execute

        def run(vals):
            if config.jax_enable_x64:  # the thread computes in 64 bits: leave it to
                return execute(plan, vals, check=check)  # the general path
            if in_checks:
                check_input_indices(in_checks, vals)
            with lock:
                if self._closed:
                    raise RuntimeError("Attempted to use a closed Session.")
                try:
                    args = get(store)
                except KeyError as e:
                    raise errors.FailedPreconditionError(
                        f"Attempting to use uninitialized value {e.args[0]}") from None
                for i in wide:
                    if not isinstance(args[i], jax.Array):  # see _execute
                        with x64():
                            args[i] = jax.device_put(args[i])
                args += vals
                outs = fn(*args)
                if written:
                    store.update(zip(written, outs[n_out:]))
            if n_checks:
                raise_failed_check(checks, outs[n:n_out])
            return [None if o is None else outs[o] for o in picks]

        return run

    def _execute(self, plan, feed_vals, overrides=None, check=True):
        """Runs a plan's compiled step; returns the values in the plan's `leaves`
        order (None for operations) as device arrays. `overrides` replaces the values
        of some variables for this step only (fed variables). With `check`, an index
        check that failed raises InvalidArgumentError (waiting for the step); without
        it (device callables, which never wait), the step's variables keep their
        values and the fetched values hold fill values where an index was out of
        range."""
        store = self._store
        if overrides:
            store = collections.ChainMap(overrides, store)
        if check and plan.input_checks:  # fed indices: before the step, on the host
            check_input_indices(plan.input_checks, feed_vals)
        # mylib's 64-bit scope (see mylib.core.x64): entered here, around the compiled
        # call only, as it is the hot path; a plan that lowers in 32 bits runs outside
        # it (its step enters the scope while it is traced).
        with self._lock, _x64_mode(not plan.x32):
            if self._closed:
                raise RuntimeError("Attempted to use a closed Session.")
            try:
                args = plan.get_vars(store)
            except KeyError as e:
                raise errors.FailedPreconditionError(
                    f"Attempting to use uninitialized value {e.args[0]}") from None
            for i in plan.wide_args:
                if not isinstance(args[i], jax.Array):  # keep 64 bits outside the scope
                    with x64():
                        args[i] = jax.device_put(args[i])
            args.extend(feed_vals)
            if plan.uses_rng:
                args.append(self._vars.take_rng_counts(plan.rng_ops))
            outs = plan.fn(*args)
            n = plan.n_tensor_fetches
            if plan.written_keys:
                self._store.update(zip(plan.written_keys, outs[n + plan.n_checks:]))
        if check and plan.n_checks:
            raise_failed_check(plan.checks, outs[n:n + plan.n_checks])
        return [None if o is None else outs[o] for o in plan.n_fetch]

    # --- variable values (for savers, Keras weights, strategies) ---
    def _store_for(self, keys):
        """The policy's remote store when it holds all of `keys` (variables on
        parameter servers), else this session's own."""
        policy = get_policy(self._graph)
        rs = policy.remote_variable_store() if policy is not None else None
        if rs is not None and keys and all(rs.owns(k) for k in keys):
            return rs
        return self._vars

    def variable_value(self, key):
        """The current value of variable `key` (its shared name): a device array, or
        None when it is uninitialized."""
        return self._store_for([key]).get(key)

    def read_variables(self, keys):
        """Host (numpy) copies of the values of `keys`, one consistent snapshot (None
        for an uninitialized key).

        Raises:
          RuntimeError: the session is closed.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        return self._store_for(list(keys)).read(list(keys))

    def assign_variables(self, values):
        """Sets `{key: array}` all at once. Values must already have the variables'
        shapes and dtypes (callers check them first, so nothing changes on error).

        Raises:
          RuntimeError: the session is closed.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        self._store_for(list(values)).write(values)

    def __del__(self):
        try:
            self._vars.clear()
        except Exception:  # noqa: BLE001
            pass


def _drop_plans(sess_ref, keys):
    sess = sess_ref()
    if sess is not None:
        for k in list(keys):
            sess._plans.pop(k, None)  # atomic: safe from a finalizer in any thread


_NO_CONTEXT = contextlib.nullcontext()  # reusable: it holds no state


class LoopCompile:
    """A k-step loop program compiling on a background thread: `ready()`
    says whether it has finished, `wait(timeout)` waits for it (seconds) and returns
    `ok`, true when it compiled. Compiling fills JAX's cache for the loop's jitted
    function, so the next call with the same signature runs without compiling; the
    handle also keeps the executable alive."""

    def __init__(self, lowered):
        self.ok = False
        self._compiled = None
        self._done = threading.Event()
        # Not a daemon: an interpreter that exits (Ctrl-C in the first epoch) waits
        # for the compile instead of tearing XLA down under it (an abort).
        threading.Thread(target=self._compile, args=(lowered,), daemon=False,
                         name="mylib-loop-compile").start()

    def _compile(self, lowered):
        try:
            self._compiled = lowered.compile()
            self.ok = True
        except Exception:  # noqa: BLE001 - the caller keeps running single steps
            self.ok = False
        finally:
            self._done.set()

    def ready(self):
        return self._done.is_set()

    def wait(self, timeout=None):
        self._done.wait(timeout)
        return self.ok


def _x64_mode(on):
    """`jax.enable_x64(on)`, or no context where the thread already computes in that
    mode: a compiled call made under a thread-local x64 override costs tens of
    microseconds more in JAX's dispatch than the same call without one."""
    if bool(jax.config.jax_enable_x64) == on:
        return _NO_CONTEXT
    return jax.enable_x64(on)


def _getter(keys):
    """``f(store)``: the list of ``store[k]`` for `keys`, in order (one C-level
    `operator.itemgetter` call: the step's hot path reads every variable)."""
    if len(keys) == 1:
        (k,) = keys
        return lambda store: [store[k]]
    if not keys:
        return lambda store: []
    get = operator.itemgetter(*keys)
    return lambda store: list(get(store))


def _shapes(vals):
    """The feed shapes of a plan key (dtypes are fixed by the feed tensors)."""
    try:
        return tuple([v.shape for v in vals])  # arrays: the hot path
    except AttributeError:
        return tuple(np.shape(v) for v in vals)


class _NoLoop(Exception):
    """A step whose written variables change shape cannot be a `lax.scan` carry."""


def _fetch_order(leaves):
    """For each fetched element, its index among the fetched tensors (None for ops)."""
    order, j = [], 0
    for el in leaves:
        if isinstance(el, Operation):
            order.append(None)
        else:
            order.append(j)
            j += 1
    return tuple(order)


def _dtype_of(v):
    return v.dtype if hasattr(v, "dtype") else np.asarray(v).dtype


class _DefaultSession:
    def __init__(self, sess):
        self._sess = sess

    def __enter__(self):
        default_session_stack().append(self._sess)
        return self._sess

    def __exit__(self, *exc):
        default_session_stack().pop()


class InteractiveSession(Session):
    """A session that installs itself as the default session on construction."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        self._default_ctx = _DefaultSession(self)
        self._default_ctx.__enter__()
        self._graph_ctx = self._graph.as_default()
        self._graph_ctx.__enter__()

    def close(self):
        """Closes the session and, as TensorFlow 1 does, leaves the default session and
        default graph it installed, when they are still the innermost ones of this thread
        (once; later calls only close)."""
        super().close()
        sess_ctx, graph_ctx = self._default_ctx, self._graph_ctx
        self._default_ctx = self._graph_ctx = None
        if graph_ctx is not None and get_default_graph() is self._graph:
            try:
                graph_ctx.__exit__(None, None, None)
            except IndexError:
                pass  # the graph stack was emptied by someone else
        stack = default_session_stack()
        if sess_ctx is not None and stack and stack[-1] is self:
            sess_ctx.__exit__(None, None, None)
