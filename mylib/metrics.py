"""Keras-style metrics whose state lives in Variables updated by graph ops.

A metric's state variables are non-trainable, in the ``LOCAL_VARIABLES`` and
``METRIC_VARIABLES`` collections (not ``GLOBAL_VARIABLES``: they are not saved with the
model), created in the graph of the first `update_state` inputs (or the default graph
on first `result`/`reset_state`/`variables`). `update_state` returns the assign-add
`Operation`, `result` a `Tensor`, `reset_state` an `Operation` assigning zeros, which
also serves as the initializer (as does ``ml.local_variables_initializer()``).

Example::

    acc = ml.metrics.SparseCategoricalAccuracy()
    update = acc.update_state(labels, logits)
    value = acc.result()
    sess.run(acc.reset_state())
    sess.run(update, feed_dict=...)        # per batch, in the training step
    sess.run(value)                        # when logging
"""

from __future__ import annotations

from mylib import losses as _losses
from mylib.core import dtypes as _dtypes
from mylib.core.graph import GraphKeys, Tensor, get_default_graph
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, math_ops
from mylib.core.variables import Variable
from mylib.losses import squeeze_or_expand_to_same_rank

__all__ = ["Metric", "Reduce", "Sum", "Mean", "MeanMetricWrapper", "Accuracy",
           "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
           "MeanSquaredError", "MeanAbsoluteError", "accuracy", "binary_accuracy",
           "categorical_accuracy", "sparse_categorical_accuracy", "get", "resolve_accuracy"]


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


class Metric:
    """Base of the metrics: state Variables, `update_state`, `result`, `reset_state`.

    Subclasses declare state in `build_state` with `add_variable` and implement
    `update_state` (returning an `Operation`) and `result` (returning a `Tensor`).

    Args:
      name: the metric's name (its variables live under this name scope).
      dtype: dtype of the state and result (default float32).
    """

    def __init__(self, name=None, dtype=None):
        self.name = name or _snake(type(self).__name__)
        self.dtype = _dtypes.as_dtype(dtype or _dtypes.float32)
        self._variables = []
        self._graph = None
        self._scope = None

    # ------------------------------------------------------------ state
    def build_state(self):
        """Creates the state variables (called once, in the metric's graph)."""

    def add_variable(self, name, shape=(), dtype=None):
        """A zero-initialized, non-trainable state variable."""
        g = self._graph
        dt = _dtypes.as_dtype(dtype or self.dtype)
        with g.as_default(), g.name_scope(""), g.name_scope(self._scope), \
                g.control_dependencies(None):
            v = Variable(lambda: array_ops.zeros(list(shape), dtype=dt), trainable=False,
                         name=name, dtype=dt,
                         collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES])
        self._variables.append(v)
        return v

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
        raise NotImplementedError

    def result(self):
        raise NotImplementedError

    def reset_state(self):
        """An op assigning zeros to every state variable (also initializes them)."""
        g = self._ensure_state()
        with g.as_default():
            return array_ops.group(
                *[v.assign(array_ops.zeros(v.shape.as_list(), dtype=v.dtype),
                           read_value=False) for v in self._variables],
                name=f"{self.name}_reset")

    def __call__(self, *args, **kwargs):
        """`update_state`, then the result read after the update."""
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


class Reduce(Metric):
    """Sample-weighted reduction of values: ``total += sum(values * w)`` and
    ``count += sum(w)`` (``w`` broadcast to the values; 1 when absent)."""

    _mean = True

    def build_state(self):
        self.total = self.add_variable("total")
        if self._mean:
            self.count = self.add_variable("count")

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
                weights = sw * array_ops.ones_like(values)
            else:
                weighted = values
                weights = None
            ops = [self.total.assign_add(math_ops.reduce_sum(weighted), read_value=False)]
            if self._mean:
                n = (math_ops.cast(array_ops.size(values), _dtypes.float32) if weights is None
                     else math_ops.reduce_sum(weights))
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
                                   array_ops.zeros_like(total), name="result")


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
        return super().update_state(values, sample_weight)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


# ------------------------------------------------------------ per-sample functions
def accuracy(y_true, y_pred):
    """1.0 where ``y_true == y_pred`` (aligned as losses do), else 0.0."""
    y_pred = convert_to_tensor(y_pred)
    y_true = convert_to_tensor(y_true, dtype_hint=y_pred.dtype)
    if y_true.dtype != y_pred.dtype:
        y_true = math_ops.cast(y_true, y_pred.dtype)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return math_ops.cast(math_ops.equal(y_true, y_pred), _dtypes.float32)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """Per-sample fraction of ``(y_pred > threshold) == y_true`` (mean over the last axis
    for rank >= 2, as Keras 2; ``[N]`` and ``[N, 1]`` align)."""
    y_pred = _float(y_pred)
    y_true = _float(y_true)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    hits = math_ops.cast(math_ops.equal(
        y_true, math_ops.cast(math_ops.greater(y_pred, threshold), _dtypes.float32)),
        _dtypes.float32)
    if hits.shape.rank is not None and hits.shape.rank >= 2:
        hits = math_ops.reduce_mean(hits, axis=-1)
    return hits


def categorical_accuracy(y_true, y_pred):
    """1.0 where ``argmax(y_true) == argmax(y_pred)`` over the last axis."""
    return math_ops.cast(math_ops.equal(math_ops.argmax(y_true, axis=-1),
                                        math_ops.argmax(y_pred, axis=-1)), _dtypes.float32)


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where the label ``y_true`` (``[N]`` or ``[N, 1]``, int or float) equals
    ``argmax(y_pred, -1)``; returns ``[N]``."""
    y_pred = convert_to_tensor(y_pred)
    y_true = convert_to_tensor(y_true, dtype_hint=_dtypes.int64)
    if (y_true.shape.rank is not None and y_pred.shape.rank is not None
            and y_true.shape.rank == y_pred.shape.rank and y_true.shape.as_list()[-1] == 1):
        y_true = array_ops.squeeze(y_true, axis=[-1])
    pred = math_ops.argmax(y_pred, axis=-1)
    if pred.dtype != y_true.dtype:
        pred = math_ops.cast(pred, y_true.dtype)
    return math_ops.cast(math_ops.equal(y_true, pred), _dtypes.float32)


# ------------------------------------------------------------ classes
class Accuracy(MeanMetricWrapper):
    """How often ``y_pred == y_true`` exactly."""

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often ``(y_pred > threshold) == y_true``."""

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold


class CategoricalAccuracy(MeanMetricWrapper):
    """How often ``argmax(y_pred) == argmax(y_true)`` (one-hot targets)."""

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often ``argmax(y_pred) == y_true`` (integer labels ``[N]`` or ``[N, 1]``)."""

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


class MeanSquaredError(MeanMetricWrapper):
    """Mean of `losses.mean_squared_error` over the samples seen."""

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(_losses.mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """Mean of `losses.mean_absolute_error` over the samples seen."""

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(_losses.mean_absolute_error, name=name, dtype=dtype)


def _snake(name):
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(c.lower())
    return "".join(out)


_CLASSES = {c.__name__: c for c in (Mean, Sum, Accuracy, BinaryAccuracy, CategoricalAccuracy,
                                    SparseCategoricalAccuracy, MeanSquaredError,
                                    MeanAbsoluteError)}
_BY_NAME = {"accuracy": Accuracy, "acc": Accuracy, "binary_accuracy": BinaryAccuracy,
            "categorical_accuracy": CategoricalAccuracy,
            "sparse_categorical_accuracy": SparseCategoricalAccuracy,
            "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError,
            "mean_absolute_error": MeanAbsoluteError, "mae": MeanAbsoluteError}


def get(identifier):
    """A new `Metric` from a name, a ``{"class_name", "config"}`` dict, a `Metric`
    (returned as is) or a per-sample function (wrapped in `MeanMetricWrapper`).

    ``"accuracy"``/``"acc"`` give the plain `Accuracy`; a trainer that knows the targets
    and predictions should call `resolve_accuracy` instead, as Keras's compile does.
    Loss names (``"binary_crossentropy"``, ...) give the mean of that loss.
    """
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        key = identifier if identifier in _CLASSES else identifier.lower()
        if key in _CLASSES:
            return _CLASSES[key]()
        if key in _BY_NAME:
            return _BY_NAME[key](name=identifier)
        try:
            fn = _losses.get(key)
        except ValueError:
            raise ValueError(f"Unknown metric: {identifier!r}") from None
        return MeanMetricWrapper(fn, name=identifier)
    if isinstance(identifier, dict):
        cls = _CLASSES.get(identifier.get("class_name"))
        if cls is None:
            raise ValueError(f"Unknown metric class: {identifier.get('class_name')!r}")
        return cls.from_config(dict(identifier.get("config") or {}))
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}")


def _shape_of(x):
    from mylib.core.tensor_shape import as_shape

    s = getattr(x, "shape", x)
    return as_shape(s if not isinstance(s, list) else tuple(s))


def _loss_name(loss):
    if loss is None:
        return ""
    if isinstance(loss, str):
        return loss.lower()
    fn = getattr(loss, "fn", None)  # LossFunctionWrapper
    return (getattr(fn, "__name__", None) or getattr(loss, "__name__", None)
            or _snake(type(loss).__name__)).lower()


def resolve_accuracy(y_true, y_pred, loss=None, name="accuracy"):
    """The accuracy metric Keras's compile picks for ``"accuracy"``/``"acc"``.

    Args:
      y_true, y_pred: the targets and predictions (tensors, or their shapes).
      loss: the loss (name, function or `Loss`), used when shapes do not decide.
      name: the metric's name (default ``"accuracy"``, as the user wrote it).
    Returns:
      `SparseCategoricalAccuracy` when ``y_true`` has one fewer dim than ``y_pred`` or
      ends in 1 while ``y_pred``'s last dim is > 1 (or the loss is sparse categorical);
      `BinaryAccuracy` when ``y_pred``'s last dim is 1 or ``y_pred`` is rank 1 (or the
      loss is binary cross-entropy); `CategoricalAccuracy` otherwise.
    """
    ts, ps = _shape_of(y_true), _shape_of(y_pred)
    lname = _loss_name(loss)
    t_rank, p_rank = ts.rank, ps.rank
    p_last = ps.as_list()[-1] if p_rank else None
    t_last = ts.as_list()[-1] if t_rank else None
    if p_rank is not None and (p_last == 1 or p_rank == 1):
        return BinaryAccuracy(name=name)
    if "sparse_categorical" in lname:
        return SparseCategoricalAccuracy(name=name)
    if "binary" in lname:
        return BinaryAccuracy(name=name)
    if t_rank is not None and p_rank is not None and (
            t_rank < p_rank or (t_last == 1 and (p_last or 0) > 1)):
        return SparseCategoricalAccuracy(name=name)
    return CategoricalAccuracy(name=name)
