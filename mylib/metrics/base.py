"""The `Metric` base (state Variables, `update_state`, `result`, `reset_state`), the
weighted reductions `Sum` and `Mean`, `MeanMetricWrapper` of a per-sample function,
and the helpers the metric modules share."""

from __future__ import annotations

import functools

from mylib._naming import to_snake_case
from mylib.core import dtypes as _dtypes
from mylib.core.graph import Graph, GraphKeys, Tensor, _default_stack, get_default_graph
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops
from mylib.core.variables import Variable
from mylib.losses import squeeze_or_expand_to_same_rank


def _graph_of(*xs):
    for x in xs:
        if isinstance(x, Tensor):
            return x.graph
        g = getattr(x, "graph", None)
        if g is not None:
            return g
    return get_default_graph()


def _float(x):
    x = convert_to_tensor(x, dtype_hint=_dtypes.float32)
    return x if x.dtype == _dtypes.float32 else math_ops.cast(x, _dtypes.float32)


def _has_symbolic(struct):
    if isinstance(struct, dict):
        return any(_has_symbolic(v) for v in struct.values())
    if isinstance(struct, (list, tuple)):
        return any(_has_symbolic(v) for v in struct)
    return isinstance(struct, Tensor) or hasattr(struct, "_as_tensor")


_UPDATE_OPS = frozenset({"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
                         "ResourceScatterAdd", "ResourceScatterUpdate"})


def _with_updates(fn, metric, args, kwargs):
    """``fn(metric, *args, **kwargs)``; for an `update_state` or `reset_state` that
    returns nothing (a Keras 3 user metric: ``self.tp.assign_add(...)``, no return),
    the group of the variable updates it made, so the step that fetches it runs them."""
    if fn.__name__ not in ("update_state", "reset_state"):
        return fn(metric, *args, **kwargs)
    g = _graph_of(*args, *kwargs.values()) if (args or kwargs) else \
        (metric._graph or get_default_graph())
    with g._recording_ops(_UPDATE_OPS) as made:
        out = fn(metric, *args, **kwargs)
    if out is None and made:
        with g.as_default():
            out = array_ops.group(*made, name=f"{metric.name}_{fn.__name__[:-6]}")
    return out


def _eager_method(fn):
    """`fn` (a metric's `update_state` / `result` / `reset_state`) run at once on array
    arguments outside graph building (see `Metric`); unchanged otherwise."""

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        if _default_stack() or _has_symbolic((args, kwargs)):
            return _with_updates(fn, self, args, kwargs)
        if fn.__name__ == "update_state" and (
                self._graph is None or getattr(self, "_bound_at_init", False)):
            # First use, on arrays: an eager metric (one whose variables `__init__`
            # made keeps their graph; the others get a private one).
            self._eager, self._bound_at_init = True, False
            self._state_from_arguments(*args, **kwargs)
            self._ensure_state(self._graph or Graph())
        if not getattr(self, "_eager", False):
            return _with_updates(fn, self, args, kwargs)
        return self._run_eagerly(fn, args, kwargs)

    method._eager_wrapped = True
    return method


def _initial_value(initializer, shape, dtype, name):
    if initializer is None or (isinstance(initializer, str) and initializer == "zeros"):
        return constant_ops.zeros(shape, dtype=dtype)
    if isinstance(initializer, str):
        if initializer == "ones":
            return constant_ops.ones(shape, dtype=dtype)
        raise ValueError(f"Metric variable '{name}': unknown initializer {initializer!r}; "
                         "use 'zeros', 'ones', a number or a callable init(shape, dtype).")
    if callable(initializer):
        return initializer(tuple(shape), dtype=dtype)
    return constant_ops.fill(shape, constant_ops.constant(initializer, dtype=dtype))


class Metric:
    """Base of the metrics: state Variables, `update_state`, `result`, `reset_state`.

    Subclasses declare state in `build_state` with `add_variable` and implement
    `update_state` (returning an `Operation`) and `result` (returning a `Tensor`).

    Used on symbolic tensors (in a model, a `train_step`, a graph program) these add
    ops. A metric whose first `update_state` gets arrays (numpy / JAX arrays, Python
    numbers) outside graph building (no ``with graph.as_default():`` open) is an eager
    metric, as in Keras 3: its state lives in a private graph and that graph's Keras
    session; `update_state` runs at once (returns None), `result()` returns a JAX array
    and `reset_state()` zeroes the state at once. Each argument signature (structure,
    shapes, dtypes) is built once, on placeholders.

    Args:
      name: the metric's name (its variables live under this name scope).
      dtype: dtype of the state and result (default float32).
    """

    def __init__(self, name=None, dtype=None):
        self.name = name or to_snake_case(type(self).__name__)
        self.dtype = _dtypes.as_dtype(dtype or _dtypes.float32)
        self._variables = []
        self._graph = None
        self._scope = None

    # ------------------------------------------------------------ state
    def build_state(self):
        """Creates the state variables (called once, in the metric's graph)."""

    def _add_state(self, name, shape=(), dtype=None, initializer=None):
        """A non-trainable state variable of this metric's graph (zeros by default)."""
        g = self._graph
        dt = _dtypes.as_dtype(dtype or self.dtype)
        shape = list(shape)
        with g.as_default(), g.name_scope(""), g.name_scope(self._scope), \
                g.control_dependencies(None):
            v = Variable(lambda: _initial_value(initializer, shape, dt, name), trainable=False,
                         name=name, dtype=dt,
                         collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES])
        self._variables.append(v)
        return v

    def add_variable(self, shape=(), initializer="zeros", dtype=None, aggregation="sum",
                     name=None):
        """A state variable, as Keras 3's `Metric.add_variable`; user metrics call it in
        `__init__` (``self.tp = self.add_variable(shape=(), name="tp",
        initializer="zeros")``) and update it in `update_state` with `assign_add`.

        Args:
          shape: the variable's shape (tuple of ints).
          initializer: "zeros", "ones", a number, or a callable ``init(shape, dtype)``
            (a Keras initializer object). `reset_state` sets the variables to zeros,
            as Keras 3's default `reset_state` does.
          dtype: default the metric's dtype.
          aggregation: accepted for Keras 3's signature; unused (mylib's replicas
            aggregate metric updates in the step graph).
          name: the variable's name.
        Returns:
          A non-trainable `Variable`. Called outside any graph's construction (in
          `__init__`), it binds the metric to the default graph, where `keras.Input`
          builds models; such a metric's first `update_state` on arrays still runs it
          eagerly.
        Raises:
          ValueError: an unknown initializer string.
        """
        del aggregation
        if self._graph is None:
            self._ensure_state(get_default_graph())
            self._bound_at_init = self._state_in_init = True
        return self._add_state(name or "variable", shape, dtype, initializer)

    def add_weight(self, shape=(), initializer=None, dtype=None, name=None):
        """Keras 3's other spelling of `add_variable` (zeros when `initializer` is None)."""
        return self.add_variable(shape=shape, initializer=initializer or "zeros",
                                 dtype=dtype, name=name)

    def _state_from_arguments(self, *args, **kwargs):
        """Before the state of an eager metric is built: reads what its shape depends
        on from the first `update_state` arguments (multi-label AUC's label count)."""

    def _ensure_state(self, graph=None):
        if self._graph is None:
            g = graph or get_default_graph()
            self._graph = g
            with g.name_scope(""), g.name_scope(self.name) as scope:
                self._scope = scope
            self.build_state()
        elif graph is not None and graph is not self._graph:
            raise ValueError(f"Metric '{self.name}' is already used in another graph; create "
                             "one metric per graph.")
        return self._graph

    @property
    def variables(self):
        """The state variables (created now if they do not exist yet)."""
        self._ensure_state()
        return list(self._variables)

    # ------------------------------------------------------------ API
    def update_state(self, y_true, y_pred, sample_weight=None):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `update_state` (abstract in the base class)")

    def result(self):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `result` (abstract in the base class)")

    def reset_state(self):
        """An op assigning zeros to every state variable (also initializes them)."""
        g = self._ensure_state()
        with g.as_default():
            return array_ops.group(
                *[v.assign(constant_ops.zeros(v.shape.as_list(), dtype=v.dtype),
                           read_value=False) for v in self._variables],
                name=f"{self.name}_reset")

    def _run_eagerly(self, fn, args, kwargs):
        import jax
        import jax.numpy as jnp
        import numpy as np

        from mylib.runtime import keras_session

        flat, treedef = jax.tree_util.tree_flatten((args, kwargs))
        arrays = [np.asarray(a) for a in flat]
        key = (fn.__name__, treedef, tuple((a.shape, a.dtype.str) for a in arrays))
        cache = self.__dict__.setdefault("_eager_steps", {})
        if key not in cache:
            g = self._graph
            with g.as_default():
                feeds = [array_ops.placeholder(_dtypes.as_dtype(a.dtype), shape=a.shape)
                         for a in arrays]
                a2, k2 = jax.tree_util.tree_unflatten(treedef, feeds)
                cache[key] = (feeds, _with_updates(fn, self, a2, k2))
        feeds, out = cache[key]
        keras_session.ensure_initialized(self._variables)
        value = keras_session.get_session(self._graph).run(
            out, feed_dict=dict(zip(feeds, arrays)))
        if fn.__name__ != "result":
            return None
        return jax.tree_util.tree_map(jnp.asarray, value)

    def __call__(self, *args, **kwargs):
        """`update_state`, then the result read after the update."""
        if not _default_stack() and not _has_symbolic((args, kwargs)) and (
                self._graph is None or getattr(self, "_eager", False)):
            self.update_state(*args, **kwargs)
            return self.result()
        op = self.update_state(*args, **kwargs)
        with self._graph.as_default(), self._graph.control_dependencies([op]):
            return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<ml.metrics.{type(self).__name__} name={self.name!r}>"


Metric.reset_state = _eager_method(Metric.reset_state)


def _wrap_subclass(cls, **kwargs):
    for name in ("update_state", "result", "reset_state"):
        fn = cls.__dict__.get(name)
        if fn is not None and not getattr(fn, "_eager_wrapped", False):
            setattr(cls, name, _eager_method(fn))


Metric.__init_subclass__ = classmethod(_wrap_subclass)


class Reduce(Metric):
    """Sample-weighted reduction of values: ``total += sum(values * w)`` and
    ``count += sum(w)`` (``w`` broadcast to the values; 1 when absent)."""

    _mean = True

    def build_state(self):
        self.total = self._add_state("total")
        if self._mean:
            self.count = self._add_state("count")

    def update_state(self, values, sample_weight=None):
        """Adds `values` (any shape), weighted by `sample_weight`. Returns the op."""
        g = self._ensure_state(_graph_of(values, sample_weight))
        with g.as_default(), g.name_scope(self._scope), g.name_scope("update"):
            values = _float(values)
            if sample_weight is not None:
                sw = _float(sample_weight)
                sw, values = squeeze_or_expand_to_same_rank(sw, values, expand_rank_1=False)
                # Weights of lower rank (per sample) cover the trailing axes of values.
                while sw.shape.rank is not None and values.shape.rank is not None \
                        and sw.shape.rank < values.shape.rank:
                    sw = array_ops.expand_dims(sw, -1)
                weighted = values * sw
                weights = sw * constant_ops.ones_like(values)
            else:
                weighted = values
                weights = None
            ops = [self.total.assign_add(reduction_ops.reduce_sum(weighted), read_value=False)]
            if self._mean:
                n = (math_ops.cast(array_ops.size(values), _dtypes.float32) if weights is None
                     else reduction_ops.reduce_sum(weights))
                ops.append(self.count.assign_add(n, read_value=False))
            return array_ops.group(*ops)

    def result(self):
        g = self._ensure_state()
        with g.as_default(), g.name_scope(self._scope):
            total = self.total.value()
            if not self._mean:
                return array_ops.identity(total, name="result")
            count = self.count.value()
            # divide_no_nan: 0 before any update.
            return array_ops.where(math_ops.greater(count, 0.0),
                                   total / math_ops.maximum(count, 1e-30),
                                   constant_ops.zeros_like(total), name="result")


class Sum(Reduce):
    """The (weighted) sum of the values seen."""

    _mean = False


class Mean(Reduce):
    """The (weighted) mean of the values seen: ``sum(values * w) / sum(w)``."""


class MeanMetricWrapper(Mean):
    """Weighted mean of a per-sample function ``fn(y_true, y_pred, **kwargs)``.

    Args:
      fn: per-sample function, e.g. `binary_accuracy` or a loss function.
      name: metric name (default ``fn.__name__``).
    """

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None), dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        g = self._ensure_state(_graph_of(y_pred, y_true))
        with g.as_default(), g.name_scope(self._scope):
            values = self._fn(y_true, y_pred, **self._fn_kwargs)
            mask = getattr(values, "_keras_mask", None)
            if mask is not None and sample_weight is not None:
                # As Keras 3's `reduce_to_samplewise_values`: the mask of the values
                # (`ignore_class`) zeroes the weights only when weights are given;
                # unweighted, the masked entries count as 0.
                sample_weight = _weights_like(sample_weight, values) * math_ops.cast(
                    mask, _dtypes.float32)
        return super().update_state(values, sample_weight)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


# ------------------------------------------------------------ shared by the metric modules
def _weights_like(sample_weight, values):
    """`sample_weight` broadcast to `values` (per-sample weights cover trailing axes)."""
    if sample_weight is None:
        return constant_ops.ones_like(values)
    sw = _float(sample_weight)
    # Aligning may squeeze a trailing 1 off `values` ([batch, 1] -> [batch]); the
    # weights are still returned in `values`' own shape.
    sw, _ = squeeze_or_expand_to_same_rank(sw, values, expand_rank_1=False)
    while sw.shape.rank is not None and values.shape.rank is not None \
            and sw.shape.rank < values.shape.rank:
        sw = array_ops.expand_dims(sw, -1)
    return sw * constant_ops.ones_like(values)


def _div_no_nan(a, b):
    safe = array_ops.where(math_ops.equal(b, 0.0), constant_ops.ones_like(b), b)
    return array_ops.where(math_ops.equal(b, 0.0), constant_ops.zeros_like(a * b), a / safe)
