"""Graph-mode iterators over a `Dataset`, as TensorFlow 1's `tf.data.Iterator`.

An iterator is a session resource, like a queue (`mylib/core/ops/data_flow_ops.py`):
a handle op (``IteratorV2``, ``OneShotIterator``) whose value is a per-session
`_IteratorResource`, plus host ops that act on it: ``MakeIterator`` (the initializer:
starts a fresh pass of a dataset, with the values of the graph tensors the dataset
captured, such as fed placeholders), ``IteratorGetNext`` (the next element, or
`OutOfRangeError` at the end), ``IteratorToStringHandle`` and
``IteratorFromStringHandleV2`` (the feedable-iterator pattern). All run on the host,
between the compiled clusters of a step: the element enters the step's XLA program as
an input, so a training step compiles once per batch shape (a short last batch is a
second program), never per step.

Each `Session` has its own iterator state (two sessions on one graph iterate
independently); a step's ``IteratorGetNext`` runs once per `Session.run`, however many
of its outputs are fetched. Datasets are Python objects: graphs holding iterators run
only in the process that built them (as graphs holding `py_func`).
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from mylib import errors
from mylib.core import dtypes as _dtypes
from mylib.core.graph import Tensor
from mylib.core.op_registry import NotDifferentiable, OpDef, TensorSpec, convert_to_tensor
from mylib.core.tensor_shape import TensorShape, as_shape
from mylib.data import dataset as _ds

__all__ = ["Iterator", "make_one_shot_iterator", "make_initializable_iterator"]

# Datasets are Python objects; attrs are plain data: an op names its dataset by token.
_DATASETS = {}
_tokens = itertools.count()
_lock = threading.Lock()


def _register(dataset):
    with _lock:
        token = f"dataset_{next(_tokens)}"
        _DATASETS[token] = dataset
    return token


def _dataset(op):
    ds = _DATASETS.get(op.attrs["dataset"])
    if ds is None:
        raise errors.NotFoundError(
            f"dataset {op.attrs['dataset']!r} is not registered in this process (graphs "
            "holding dataset iterators run only where they were built)", op=op)
    return ds


# ---------------------------------------------------------------- the resource
class _IteratorResource:
    """One session's iterator: the Python iterator of the current pass, under a lock."""

    def __init__(self, name, types, shapes, one_shot=None):
        self.name = name
        self.types = types
        self.shapes = shapes
        self._one_shot = one_shot  # the dataset a one-shot iterator starts on first use
        self._it = None
        self._lock = threading.Lock()
        self._closed = False

    def reset(self, it):
        with self._lock:
            old, self._it = self._it, it
        _close(old)

    def get_next(self, op):
        with self._lock:
            if self._closed:
                raise errors.CancelledError(f"iterator '{self.name}': the session was closed")
            if self._it is None and self._one_shot is not None:
                self._it, self._one_shot = self._one_shot._iter({}), None
            if self._it is None:
                raise errors.FailedPreconditionError(
                    "GetNext() failed because the iterator has not been initialized. Ensure "
                    "that you have run the initializer operation for this iterator before "
                    "getting the next element.", op=op)
            try:
                el = next(self._it)
            except StopIteration:
                raise errors.OutOfRangeError("End of sequence", op=op) from None
        return self._check(op, _ds._flatten(el))

    def _check(self, op, flat):
        if len(flat) != len(self.types):
            raise errors.InvalidArgumentError(
                f"the dataset produced an element of {len(flat)} components, the iterator "
                f"has {len(self.types)}", op=op)
        out = []
        for i, (v, dt, sh) in enumerate(zip(flat, self.types, self.shapes)):
            a = np.asarray(v, dtype=object) if dt == _dtypes.string else np.asarray(v)
            if dt != _dtypes.string and a.dtype != dt.np:
                if a.dtype.kind == np.dtype(dt.np).kind or (
                        a.dtype.kind in "iub" and dt.is_floating):
                    a = a.astype(dt.np)
                else:
                    raise errors.InvalidArgumentError(
                        f"component {i} of the element has dtype {a.dtype}, the iterator "
                        f"expects {dt.name}", op=op)
            if not sh.is_compatible_with(TensorShape(a.shape)):
                raise errors.InvalidArgumentError(
                    f"component {i} of the element has shape {TensorShape(a.shape)}, the "
                    f"iterator expects {sh}", op=op)
            out.append(a)
        return tuple(out)

    def _session_closed(self):
        with self._lock:
            self._closed = True
            old, self._it = self._it, None
        _close(old)


def _close(it):
    close = getattr(it, "close", None)
    if close is not None:
        try:
            close()
        except Exception:  # noqa: BLE001 - closing an abandoned pass
            pass


# ---------------------------------------------------------------- ops
def _types(op):
    return [_dtypes.as_dtype(t) for t in op.attrs["output_types"]]


def _shapes(op):
    return [TensorShape(s) for s in op.attrs["output_shapes"]]


def _key(op):
    return "iterator:" + (op.attrs.get("shared_name") or op.name)


def _iterator_lower(ctx, op):
    return ctx.resource(_key(op), lambda: _IteratorResource(op.name, _types(op), _shapes(op)))


def _one_shot_lower(ctx, op):
    return ctx.resource(_key(op), lambda: _IteratorResource(
        op.name, _types(op), _shapes(op), one_shot=_dataset(op)))


def _handle_shape(**attrs):
    return TensorSpec([], _dtypes.resource)


IteratorV2 = OpDef("IteratorV2", lower=_iterator_lower, shape_fn=_handle_shape,
                   stateful=True, host=True)
OneShotIterator = OpDef("OneShotIterator", lower=_one_shot_lower, shape_fn=_handle_shape,
                        stateful=True, host=True)


def _make_iterator_lower(ctx, op, res, *captured):
    ds = _dataset(op)
    env = dict(zip(ds._all_captures(), captured))
    res.reset(ds._iter(env))
    return ()


MakeIterator = OpDef("MakeIterator", lower=_make_iterator_lower, shape_fn=lambda *a, **k: [],
                     stateful=True, host=True)


def _get_next_lower(ctx, op, res):
    return res.get_next(op)


def _get_next_shape(res, *, output_types, output_shapes):
    return [TensorSpec(TensorShape(s), t) for t, s in zip(output_types, output_shapes)]


IteratorGetNext = OpDef("IteratorGetNext", lower=_get_next_lower, shape_fn=_get_next_shape,
                        stateful=True, host=True)


def _to_string_handle_lower(ctx, op, res):
    return np.array(_key(op.inputs[0].op).encode(), dtype=object)


IteratorToStringHandle = OpDef("IteratorToStringHandle", lower=_to_string_handle_lower,
                               shape_fn=lambda res: TensorSpec([], _dtypes.string),
                               stateful=True, host=True)


def _from_string_handle_lower(ctx, op, handle):
    key = np.asarray(handle).item()
    key = key.decode() if isinstance(key, bytes) else str(key)

    def missing():
        raise errors.NotFoundError(
            f"no iterator with string handle {key!r} in this session: fetch the handle "
            "with sess.run(iterator.string_handle()) in the same session", op=op)

    if not key.startswith("iterator:"):
        missing()
    res = ctx.resource(key, missing)
    want = list(zip(_types(op), _shapes(op)))
    for i, ((t, s), t2, s2) in enumerate(zip(want, res.types, res.shapes)):
        if t != t2 or not s.is_compatible_with(s2):
            raise errors.InvalidArgumentError(
                f"the iterator behind handle {key!r} has component {i} of {t2.name} {s2}, "
                f"this handle expects {t.name} {s}", op=op)
    return res


IteratorFromStringHandleV2 = OpDef("IteratorFromStringHandleV2",
                                   lower=_from_string_handle_lower,
                                   shape_fn=lambda h, **a: TensorSpec([], _dtypes.resource),
                                   stateful=True, host=True)

for _t in ("IteratorV2", "OneShotIterator", "MakeIterator", "IteratorGetNext",
           "IteratorToStringHandle", "IteratorFromStringHandleV2"):
    NotDifferentiable(_t)


# ---------------------------------------------------------------- structures
def _spec_of_dataset(dataset):
    spec = dataset._static_spec()
    if spec is None and not dataset._all_captures():
        spec = dataset.element_spec  # peeks at the first element
    if spec is None:
        why = ""
        fn = getattr(dataset, "_fn", None)
        if fn is not None and fn.trace_error() is not None:
            why = (f" The `{fn._what}` function {fn.name!r} could not be traced with graph "
                   f"ops: {type(fn.trace_error()).__name__}: {fn.trace_error()}. Write it "
                   "with mylib ops, or wrap numpy code in ml.py_func inside it.")
        raise ValueError("The element types and shapes of this dataset are not known "
                         "without running it, and it depends on fed tensors (or is "
                         "empty), so no graph iterator can be built on it." + why)
    return spec


def _types_shapes(spec):
    flat = _ds._flatten(spec)
    types = [_dtypes.as_dtype("string" if s.dtype == object else s.dtype) for s in flat]
    shapes = [TensorShape(s.shape) for s in flat]
    return types, shapes


def _structure(spec, leaf_fn):
    return _ds._map_structure(leaf_fn, spec)


def _attrs(types, shapes):
    return dict(output_types=tuple(t.name for t in types),
                output_shapes=tuple(s.as_tuple() for s in shapes))


def _norm_structure(output_types, output_shapes):
    """(spec structure, flat types, flat shapes) from TF1's output_types/output_shapes."""
    types_s = _ds._map_structure(_dtypes.as_dtype, output_types)
    flat_t = _ds._flatten(types_s)
    if output_shapes is None:
        flat_s = [TensorShape(None)] * len(flat_t)
    else:
        flat_s = _flatten_shapes_like(output_shapes, types_s)
    spec = _ds._pack(types_s, [_ds.TensorSpec(s.as_tuple() if s.rank is not None else None,
                                              t.np if t != _dtypes.string else object)
                               for t, s in zip(flat_t, flat_s)])
    return spec, flat_t, flat_s


def _flatten_shapes_like(shapes, types):
    if isinstance(types, dict):
        if not isinstance(shapes, dict) or set(shapes) != set(types):
            raise ValueError(f"`output_shapes` {shapes!r} does not match the structure of "
                             f"`output_types` {types!r}")
        return [x for k in sorted(types) for x in _flatten_shapes_like(shapes[k], types[k])]
    if isinstance(types, (tuple, list)):
        if not isinstance(shapes, (tuple, list)) or len(shapes) != len(types):
            raise ValueError(f"`output_shapes` {shapes!r} does not match the structure of "
                             f"`output_types` {types!r}")
        return [x for s, t in zip(shapes, types) for x in _flatten_shapes_like(s, t)]
    return [as_shape(shapes)]


# ---------------------------------------------------------------- Iterator
class Iterator:
    """A graph-mode iterator over a `Dataset` (TensorFlow 1's `tf.data.Iterator`).

    Make one with `Dataset.make_one_shot_iterator()`,
    `Dataset.make_initializable_iterator()`, `Iterator.from_structure` or
    `Iterator.from_string_handle`; `get_next()` gives the element's tensors.

    Example::

        x_ph = ml.placeholder(ml.float32, [None, 64])
        y_ph = ml.placeholder(ml.int64, [None])
        it = ml.data.Dataset.from_tensor_slices((x_ph, y_ph)).batch(32) \\
            .make_initializable_iterator()
        x, y = it.get_next()
        ...
        for epoch in range(5):
            sess.run(it.initializer, {x_ph: X, y_ph: Y})
            while True:
                try:
                    sess.run(train_op)
                except ml.errors.OutOfRangeError:
                    break
    """

    def __init__(self, handle, initializer, spec, types, shapes):
        self._handle = handle
        self._initializer = initializer
        self._spec = spec
        self._types = types
        self._shapes = shapes

    # --- constructors ---
    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None,
                       output_classes=None):
        """An iterator with no dataset yet: `make_initializer(dataset)` gives the op that
        (re)starts it on a dataset of matching types and shapes (switching between
        training and validation data).

        Args:
          output_types: a structure (tuple / dict) of `DType`s.
          output_shapes: the same structure of shapes (default: unknown).
          shared_name: the resource name within a session (default: the op name).
        Raises:
          ValueError: the shapes do not match the structure of the types.
        """
        spec, types, shapes = _norm_structure(output_types, output_shapes)
        handle = IteratorV2(shared_name=shared_name or "", container="",
                            name="Iterator", **_attrs(types, shapes))
        return Iterator(handle, None, spec, types, shapes)

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None,
                           output_classes=None):
        """An iterator that reads the iterator named by `string_handle` (a scalar
        string tensor, usually a placeholder fed with the value of another iterator's
        `string_handle()` fetched in the same session).

        Raises (at run time):
          NotFoundError: no iterator of this session has that handle.
          InvalidArgumentError: that iterator's types or shapes differ.
        """
        spec, types, shapes = _norm_structure(output_types, output_shapes)
        h = convert_to_tensor(string_handle, dtype=_dtypes.string)
        handle = IteratorFromStringHandleV2(h, name="IteratorFromStringHandle",
                                            **_attrs(types, shapes))
        return Iterator(handle, None, spec, types, shapes)

    @staticmethod
    def _for_dataset(dataset, one_shot, shared_name=None):
        if not isinstance(dataset, _ds.Dataset):
            raise TypeError(f"expected a mylib.data.Dataset. Received: {dataset!r}")
        spec = _spec_of_dataset(dataset)
        types, shapes = _types_shapes(spec)
        if one_shot:
            caps = dataset._all_captures()
            if caps:
                raise ValueError(
                    "Failed to create a one-shot iterator for a dataset that depends on "
                    f"graph tensors ({', '.join(t.name for t in caps[:3])}): one-shot "
                    "iterators do not support parameterization. Use "
                    "`dataset.make_initializable_iterator()` and run its initializer with "
                    "the values in feed_dict.")
            handle = OneShotIterator(dataset=_register(dataset), name="OneShotIterator",
                                     **_attrs(types, shapes))
            return Iterator(handle, None, spec, types, shapes)
        handle = IteratorV2(shared_name=shared_name or "", container="", name="Iterator",
                            **_attrs(types, shapes))
        it = Iterator(handle, None, spec, types, shapes)
        it._initializer = it.make_initializer(dataset)
        return it

    # --- ops ---
    @property
    def initializer(self):
        """The op that (re)starts the iterator on its dataset: run it again to restart
        (each run takes the current values of fed placeholders).

        Raises:
          ValueError: a one-shot iterator, or one made by `from_structure` (use
            `make_initializer`).
        """
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer: a one-shot iterator "
                             "initializes itself; for `from_structure` use "
                             "`make_initializer(dataset)`.")
        return self._initializer

    def make_initializer(self, dataset, name=None):
        """An op that starts this iterator on `dataset` (a fresh pass each run).

        Raises:
          TypeError: the dataset's element types differ from the iterator's.
          ValueError: its structure or shapes are incompatible.
        """
        if not isinstance(dataset, _ds.Dataset):
            raise TypeError(f"`make_initializer` expects a Dataset. Received: {dataset!r}")
        spec = _spec_of_dataset(dataset)
        types, shapes = _types_shapes(spec)
        if len(types) != len(self._types):
            raise ValueError(f"The dataset's element has {len(types)} components "
                             f"({_describe(spec)}), the iterator {len(self._types)} "
                             f"({_describe(self._spec)}).")
        for i, (t, t2) in enumerate(zip(types, self._types)):
            if t != t2:
                raise TypeError(f"Expected output types {[x.name for x in self._types]} "
                                f"but got dataset with output types "
                                f"{[x.name for x in types]} (component {i}).")
        for i, (s, s2) in enumerate(zip(shapes, self._shapes)):
            if not s2.is_compatible_with(s):
                raise ValueError(f"Expected output shapes compatible with "
                                 f"{[str(x) for x in self._shapes]} but got dataset with "
                                 f"output shapes {[str(x) for x in shapes]} (component {i}).")
        caps = dataset._all_captures()
        graph = self._handle.graph
        for t in caps:
            if t.graph is not graph:
                raise ValueError(f"The dataset uses '{t.name}', a tensor of another graph "
                                 "than the iterator's.")
        return MakeIterator(self._handle, *caps, dataset=_register(dataset),
                            name=name or "MakeIterator")

    def get_next(self, name=None):
        """The next element as tensors, in the dataset's structure (tuples, dicts),
        with the static types and shapes of `output_types` / `output_shapes`.

        Each `Session.run` that needs these tensors advances the iterator once, however
        many of them it fetches.

        Raises (at run time):
          OutOfRangeError: the pass is over ("End of sequence").
          FailedPreconditionError: the iterator was never initialized.
        """
        out = IteratorGetNext(self._handle, name=name or "IteratorGetNext",
                              **_attrs(self._types, self._shapes))
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        return _ds._pack(self._spec, outs)

    def string_handle(self, name=None):
        """A scalar string tensor naming this iterator in a session, for
        `Iterator.from_string_handle`."""
        return IteratorToStringHandle(self._handle, name=name or "IteratorToStringHandle")

    # --- structure ---
    @property
    def output_types(self):
        return _ds._pack(self._spec, list(self._types))

    @property
    def output_shapes(self):
        return _ds._pack(self._spec, list(self._shapes))

    @property
    def output_classes(self):
        return _ds._pack(self._spec, [Tensor] * len(self._types))

    @property
    def element_spec(self):
        return self._spec


def _describe(spec):
    return ", ".join(f"{TensorShape(s.shape)} {s.dtype}" for s in _ds._flatten(spec))


def make_one_shot_iterator(dataset):
    """An `Iterator` that starts on `dataset` at its first use in each session
    (TensorFlow 1's ``tf.compat.v1.data.make_one_shot_iterator``).

    Raises:
      ValueError: the dataset depends on graph tensors (use an initializable iterator).
    """
    return Iterator._for_dataset(dataset, one_shot=True)


def make_initializable_iterator(dataset, shared_name=None):
    """An `Iterator` whose `initializer` (re)starts it on `dataset`
    (``tf.compat.v1.data.make_initializable_iterator``)."""
    return Iterator._for_dataset(dataset, one_shot=False, shared_name=shared_name)


def get_output_types(dataset):
    types, _ = _types_shapes(_spec_of_dataset(dataset))
    return _ds._pack(_spec_of_dataset(dataset), types)


def get_output_shapes(dataset):
    _, shapes = _types_shapes(_spec_of_dataset(dataset))
    return _ds._pack(_spec_of_dataset(dataset), shapes)


def get_output_classes(dataset):
    spec = _spec_of_dataset(dataset)
    return _ds._pack(spec, [Tensor] * len(_ds._flatten(spec)))

