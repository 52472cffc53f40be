"""Queues, as TensorFlow 1's: `FIFOQueue`, `RandomShuffleQueue`, `PaddingFIFOQueue`,
`PriorityQueue`.

A queue is a handle op (``FIFOQueueV2`` ...) whose value is a per-session queue object
(a session resource, created on first use), plus one host op per method
(``QueueEnqueueV2``, ``QueueDequeueManyV2``, ``QueueCloseV2`` ...). All of them run on
the host, outside XLA, between the compiled clusters of a step, so a step may dequeue a
batch, train on it in XLA and enqueue results, as in the paper's input pipelines.

Blocking follows TensorFlow: an enqueue waits while the queue is full, a dequeue while
it holds too few elements. Waiting requests are served in arrival order. A dequeue
from a closed queue with too few elements raises `OutOfRangeError` (`dequeue_up_to`
returns what is left when that is not nothing); an enqueue into a closed queue raises
`CancelledError`, as do enqueues still waiting when the queue is closed with
``cancel_pending_enqueues=True``. `RunOptions(timeout_in_ms=...)` bounds any wait with
`DeadlineExceededError`, and `Session.close()` wakes waiting steps with
`CancelledError`.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import threading

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.op_registry import NotDifferentiable, OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops.random_ops import get_seed
from mylib.core.tensor_shape import TensorShape, as_shape

__all__ = ["QueueBase", "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue",
           "PriorityQueue"]


# ---------------------------------------------------------------- the queue resource
class _QueueResource:
    """The session-side queue: elements (tuples of numpy arrays) under a condition.

    Requests wait in line (`_deq_line`, `_enq_line`): only the head of a line takes or
    puts elements, so two `dequeue_many` calls never interleave their batches and a
    large request cannot starve behind small ones.
    """

    kind = "FIFOQueue"

    def __init__(self, name, capacity, dtypes, shapes):
        self.name = name
        self.capacity = capacity
        self.dtypes = dtypes
        self.shapes = shapes  # list of TensorShape (possibly unknown)
        self.cv = threading.Condition()
        self.closed = False
        self.cancel_enqueues = False
        self.session_closed = False
        self._deq_line = collections.deque()
        self._enq_line = collections.deque()
        self._init_storage()

    # storage: overridden by the shuffle and priority queues
    def _init_storage(self):
        self._items = collections.deque()

    def __len__(self):
        return len(self._items)

    def _put(self, item):
        self._items.append(item)

    def _take(self):
        return self._items.popleft()

    def _put_back(self, items):
        for it in reversed(items):
            self._items.appendleft(it)

    def _min_left(self):
        """Elements that must stay in the queue after a dequeue (while open)."""
        return 0

    def _session_closed(self):
        with self.cv:
            self.session_closed = True
            self.cv.notify_all()

    # --- checks ---
    def _check_component(self, i, a, batched):
        d = self.dtypes[i]
        if d == _dtypes.string:
            a = np.asarray(a, dtype=object)
        else:
            a = np.asarray(a)
            if a.dtype != d.np:
                raise errors.InvalidArgumentError(
                    f"{self.kind} '{self.name}': component {i} has dtype "
                    f"{_dtypes.as_dtype(a.dtype).name if a.dtype != object else 'object'}, "
                    f"the queue holds {d.name}")
        shape = self.shapes[i]
        got = a.shape[1:] if batched else a.shape
        if shape.rank is not None and not shape.is_compatible_with(got):
            what = "each element of component" if batched else "component"
            raise errors.InvalidArgumentError(
                f"{self.kind} '{self.name}': {what} {i} has shape {TensorShape(got)}, "
                f"the queue expects {shape}")
        return a

    def _elements(self, vals, many):
        if len(vals) != len(self.dtypes):
            raise errors.InvalidArgumentError(
                f"{self.kind} '{self.name}': enqueue of {len(vals)} component(s), the queue "
                f"holds {len(self.dtypes)}")
        comps = [self._check_component(i, v, many) for i, v in enumerate(vals)]
        if not many:
            return [tuple(np.array(c, copy=True) for c in comps)]
        if any(c.ndim == 0 for c in comps):
            raise errors.InvalidArgumentError(
                f"{self.kind} '{self.name}': enqueue_many needs components of rank >= 1")
        n = comps[0].shape[0]
        if any(c.shape[0] != n for c in comps):
            raise errors.InvalidArgumentError(
                f"{self.kind} '{self.name}': enqueue_many components differ in their first "
                f"dimension: {[c.shape[0] for c in comps]}")
        return [tuple(np.array(c[j], copy=True) for c in comps) for j in range(n)]

    # --- operations (called from host ops) ---
    def enqueue(self, ctx, vals, many):
        items = self._elements(vals, many)
        what = f"Enqueue to {self.kind} '{self.name}'"
        with self.cv:
            if self.closed:
                raise errors.CancelledError(f"{self.kind} '{self.name}' is closed.")
            ticket = object()
            self._enq_line.append(ticket)
            try:
                for item in items:
                    ctx.wait(self.cv, lambda: self._enq_ready(ticket), what)
                    if self.cancel_enqueues:
                        raise errors.CancelledError(f"{what} was cancelled")
                    self._check_session()
                    self._put(item)
                    self.cv.notify_all()
            finally:
                self._enq_line.remove(ticket)
                self.cv.notify_all()

    def _check_session(self):
        if self.session_closed:
            raise errors.CancelledError(f"{self.kind} '{self.name}': the session was closed")

    def _enq_ready(self, ticket):
        if self.cancel_enqueues or self.session_closed:
            return True
        return self._enq_line[0] is ticket and len(self) < self.capacity

    def dequeue(self, ctx, n, allow_fewer):
        """`n` elements (None: one, unbatched) as a list of tuples."""
        want = 1 if n is None else int(n)
        if want < 0:
            raise errors.InvalidArgumentError(f"dequeue of a negative count: {want}")
        what = f"Dequeue from {self.kind} '{self.name}'"
        got = []
        with self.cv:
            ticket = object()
            self._deq_line.append(ticket)
            try:
                while len(got) < want:
                    ctx.wait(self.cv, lambda: self._deq_ready(ticket), what)
                    self._check_session()
                    if self.closed and len(self) == 0 or \
                            not self.closed and len(self) <= self._min_left():
                        # Closed and drained (the wait only ends this way when closed).
                        if allow_fewer and got:
                            break
                        self._put_back(got)
                        got = []
                        raise errors.OutOfRangeError(
                            f"{self.kind} '{self.name}' is closed and has insufficient "
                            f"elements (requested {want}, current size {len(self)})")
                    got.append(self._take())
                    self.cv.notify_all()
            except BaseException:
                if got:
                    self._put_back(got)
                raise
            finally:
                self._deq_line.remove(ticket)
                self.cv.notify_all()
        return got

    def _deq_ready(self, ticket):
        if self.session_closed or self.closed:
            return self._deq_line[0] is ticket or self.session_closed
        return self._deq_line[0] is ticket and len(self) > self._min_left()

    def close(self, cancel_pending_enqueues):
        with self.cv:
            self.closed = True
            if cancel_pending_enqueues:
                self.cancel_enqueues = True
            self.cv.notify_all()

    def size(self):
        with self.cv:
            return len(self)

    # --- output assembly ---
    def batch(self, items):
        """Stacks dequeued elements per component (PaddingFIFOQueue pads)."""
        out = []
        for i, d in enumerate(self.dtypes):
            comps = [it[i] for it in items]
            if comps:
                out.append(np.stack(comps).astype(d.np, copy=False))
            else:
                sh = self.shapes[i]
                dims = [0] + [x or 0 for x in (sh.as_list() if sh.rank is not None else [])]
                out.append(np.zeros(dims, d.np))
        return out


class _ShuffleResource(_QueueResource):
    kind = "RandomShuffleQueue"

    def __init__(self, name, capacity, dtypes, shapes, min_after_dequeue, seed, seed2):
        self.min_after_dequeue = min_after_dequeue
        if seed is None and seed2 is None:
            self._rng = np.random.default_rng()
        else:
            self._rng = np.random.default_rng([int(seed or 0), int(seed2 or 0)])
        super().__init__(name, capacity, dtypes, shapes)

    def _init_storage(self):
        self._items = []

    def _put(self, item):
        self._items.append(item)

    def _take(self):
        i = int(self._rng.integers(len(self._items)))
        items = self._items
        items[i], items[-1] = items[-1], items[i]
        return items.pop()

    def _put_back(self, items):
        self._items.extend(items)

    def _min_left(self):
        return self.min_after_dequeue


class _PaddingResource(_QueueResource):
    kind = "PaddingFIFOQueue"

    def batch(self, items):
        out = []
        for i, d in enumerate(self.dtypes):
            comps = [it[i] for it in items]
            rank = self.shapes[i].rank
            if not comps:
                dims = [0] + [x or 0 for x in self.shapes[i].as_list()]
                out.append(np.zeros(dims, d.np))
                continue
            rank = comps[0].ndim if rank is None else rank
            big = [max(c.shape[k] for c in comps) for k in range(rank)]
            fill = b"" if d == _dtypes.string else 0
            buf = np.full([len(comps)] + big, fill, dtype=d.np)
            for j, c in enumerate(comps):
                buf[(j,) + tuple(slice(0, s) for s in c.shape)] = c
            out.append(buf)
        return out


class _PriorityResource(_QueueResource):
    kind = "PriorityQueue"

    def _init_storage(self):
        self._items = []
        self._seq = itertools.count()

    def _put(self, item):
        pri = np.asarray(item[0])
        if pri.shape != ():
            raise errors.InvalidArgumentError(
                f"PriorityQueue '{self.name}': the priority (component 0) must be a "
                f"scalar, got shape {TensorShape(pri.shape)}")
        heapq.heappush(self._items, (int(pri), next(self._seq), item))

    def _take(self):
        return heapq.heappop(self._items)[2]

    def _put_back(self, items):
        for it in items:
            self._put(it)


# ---------------------------------------------------------------- handle ops
def _queue_key(op):
    return "queue:" + (op.attrs.get("shared_name") or op.name)


def _attr_shapes(op):
    shapes = op.attrs["shapes"]
    if not shapes:
        return [TensorShape(None)] * len(op.attrs["component_types"])
    return [TensorShape(s) for s in shapes]


def _attr_dtypes(op):
    return [_dtypes.as_dtype(t) for t in op.attrs["component_types"]]


def _fifo_lower(ctx, op):
    return ctx.resource(_queue_key(op), lambda: _QueueResource(
        op.name, op.attrs["capacity"], _attr_dtypes(op), _attr_shapes(op)))


def _shuffle_lower(ctx, op):
    a = op.attrs
    return ctx.resource(_queue_key(op), lambda: _ShuffleResource(
        op.name, a["capacity"], _attr_dtypes(op), _attr_shapes(op), a["min_after_dequeue"],
        a["seed"], a["seed2"]))


def _padding_lower(ctx, op):
    return ctx.resource(_queue_key(op), lambda: _PaddingResource(
        op.name, op.attrs["capacity"], _attr_dtypes(op), _attr_shapes(op)))


def _priority_lower(ctx, op):
    return ctx.resource(_queue_key(op), lambda: _PriorityResource(
        op.name, op.attrs["capacity"], _attr_dtypes(op), _attr_shapes(op)))


def _handle_shape(**attrs):
    return TensorSpec([], _dtypes.resource)


FIFOQueueV2 = OpDef("FIFOQueueV2", lower=_fifo_lower, shape_fn=_handle_shape,
                    stateful=True, host=True)
RandomShuffleQueueV2 = OpDef("RandomShuffleQueueV2", lower=_shuffle_lower,
                             shape_fn=_handle_shape, stateful=True, host=True)
PaddingFIFOQueueV2 = OpDef("PaddingFIFOQueueV2", lower=_padding_lower,
                           shape_fn=_handle_shape, stateful=True, host=True)
PriorityQueueV2 = OpDef("PriorityQueueV2", lower=_priority_lower, shape_fn=_handle_shape,
                        stateful=True, host=True)


# ---------------------------------------------------------------- method ops
def _enqueue_lower(ctx, op, q, *vals):
    q.enqueue(ctx, vals, many=False)
    return ()


def _enqueue_many_lower(ctx, op, q, *vals):
    q.enqueue(ctx, vals, many=True)
    return ()


def _dequeue_lower(ctx, op, q):
    (item,) = q.dequeue(ctx, None, allow_fewer=False)
    return tuple(np.asarray(c) for c in item)


def _dequeue_many_lower(ctx, op, q, n):
    return tuple(q.batch(q.dequeue(ctx, int(np.asarray(n)), allow_fewer=False)))


def _dequeue_up_to_lower(ctx, op, q, n):
    return tuple(q.batch(q.dequeue(ctx, int(np.asarray(n)), allow_fewer=True)))


def _close_lower(ctx, op, q):
    q.close(op.attrs["cancel_pending_enqueues"])
    return ()


def _size_lower(ctx, op, q):
    return np.int32(q.size())


def _is_closed_lower(ctx, op, q):
    return np.bool_(q.closed)


def _no_outputs(*specs, **attrs):
    return []


def _dequeue_shape(q, *, component_types, shapes):
    return [TensorSpec(s, t) for t, s in zip(component_types, shapes)]


def _dequeue_many_shape(q, n, *, component_types, shapes):
    return [TensorSpec(TensorShape([None]).concatenate(s) if s is not None
                       else TensorShape(None), t) for t, s in zip(component_types, shapes)]


QueueEnqueueV2 = OpDef("QueueEnqueueV2", lower=_enqueue_lower, shape_fn=_no_outputs,
                       stateful=True, host=True)
QueueEnqueueManyV2 = OpDef("QueueEnqueueManyV2", lower=_enqueue_many_lower,
                           shape_fn=_no_outputs, stateful=True, host=True)
QueueDequeueV2 = OpDef("QueueDequeueV2", lower=_dequeue_lower, shape_fn=_dequeue_shape,
                       stateful=True, host=True)
QueueDequeueManyV2 = OpDef("QueueDequeueManyV2", lower=_dequeue_many_lower,
                           shape_fn=_dequeue_many_shape, stateful=True, host=True)
QueueDequeueUpToV2 = OpDef("QueueDequeueUpToV2", lower=_dequeue_up_to_lower,
                           shape_fn=_dequeue_many_shape, stateful=True, host=True)
QueueCloseV2 = OpDef("QueueCloseV2", lower=_close_lower, shape_fn=_no_outputs,
                     stateful=True, host=True)
QueueSizeV2 = OpDef("QueueSizeV2", lower=_size_lower,
                    shape_fn=lambda q: TensorSpec([], _dtypes.int32), stateful=True,
                    host=True)
QueueIsClosedV2 = OpDef("QueueIsClosedV2", lower=_is_closed_lower,
                        shape_fn=lambda q: TensorSpec([], _dtypes.bool_), stateful=True,
                        host=True)

for _t in ("FIFOQueueV2", "RandomShuffleQueueV2", "PaddingFIFOQueueV2", "PriorityQueueV2",
           "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2", "QueueDequeueManyV2",
           "QueueDequeueUpToV2", "QueueCloseV2", "QueueSizeV2", "QueueIsClosedV2"):
    NotDifferentiable(_t)


# ---------------------------------------------------------------- Python wrappers
def _as_list(x):
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


class QueueBase:
    """A queue in the graph: the handle (`queue_ref`) and methods that add ops.

    Attributes:
      name: the handle op's name.
      dtypes: list of component `DType`s.
      shapes: list of component `TensorShape`s (unknown when not given).
      names: component names (then values are dicts), or None.
      queue_ref: the handle `Tensor` (dtype resource).
    """

    def __init__(self, dtypes, shapes, names, queue_ref):
        self._dtypes = dtypes
        self._shapes = shapes
        self._names = names
        self._queue_ref = queue_ref

    @property
    def name(self):
        return self._queue_ref.op.name

    @property
    def dtypes(self):
        return list(self._dtypes)

    @property
    def shapes(self):
        return list(self._shapes)

    @property
    def names(self):
        return self._names

    @property
    def queue_ref(self):
        return self._queue_ref

    def _check_vals(self, vals, many):
        if self._names is not None:
            if not isinstance(vals, dict):
                raise ValueError(f"Queue '{self.name}' has component names "
                                 f"{self._names}: enqueue a dict. Received: vals={vals!r}")
            if set(vals) != set(self._names):
                raise ValueError(f"Keys in vals {sorted(vals)} differ from the queue's "
                                 f"names {self._names}")
            vals = [vals[k] for k in self._names]
        else:
            if isinstance(vals, dict):
                raise ValueError(f"Queue '{self.name}' has no component names: enqueue a "
                                 "list or tuple")
            vals = _as_list(vals)
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Queue '{self.name}' holds {len(self._dtypes)} component(s), "
                             f"enqueue got {len(vals)}")
        out = []
        for i, (v, d, s) in enumerate(zip(vals, self._dtypes, self._shapes)):
            t = convert_to_tensor(v, dtype=d)
            got = t.shape
            if many:
                if got.rank == 0:
                    raise ValueError(f"enqueue_many to '{self.name}': component {i} is a "
                                     "scalar; it needs a leading batch dimension")
                got = TensorShape(None) if got.rank is None else TensorShape(
                    got.as_list()[1:])
            if not s.is_compatible_with(got):
                raise ValueError(
                    f"Queue '{self.name}': component {i} has shape {got}"
                    f"{' per element' if many else ''}, the queue expects {s}")
            out.append(t)
        return out

    def enqueue(self, vals, name=None):
        """An op that enqueues one element (blocks while the queue is full).

        Args:
          vals: a tensor, a list/tuple of tensors (one per component), or a dict when
            the queue has `names`.
        Returns:
          The enqueue `Operation`.
        Raises (at run time):
          CancelledError: the queue is closed, or closed with cancel_pending_enqueues
            while this enqueue waits.
        """
        ts = self._check_vals(vals, many=False)
        return QueueEnqueueV2(self._queue_ref, *ts, name=name or f"{self._scope}_enqueue")

    def enqueue_many(self, vals, name=None):
        """An op that enqueues the slices of `vals` along axis 0 as separate elements."""
        ts = self._check_vals(vals, many=True)
        return QueueEnqueueManyV2(self._queue_ref, *ts,
                                  name=name or f"{self._scope}_EnqueueMany")

    @property
    def _scope(self):
        return self.name.split("/")[-1]

    def _wrap(self, outs):
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        if self._names is not None:
            return dict(zip(self._names, outs))
        return outs[0] if len(outs) == 1 else outs

    def _attrs(self):
        return dict(component_types=tuple(d.name for d in self._dtypes),
                    shapes=tuple(None if s.rank is None else tuple(s.as_list())
                                 for s in self._shapes))

    def dequeue(self, name=None):
        """Dequeues one element: a tensor (one component), a list, or a dict.

        Raises (at run time):
          OutOfRangeError: the queue is closed and empty.
        """
        out = QueueDequeueV2(self._queue_ref, name=name or f"{self._scope}_Dequeue",
                             **self._attrs())
        return self._wrap(out)

    def _dequeue_n(self, op_def, n, name, static):
        n_t = convert_to_tensor(n, dtype=_dtypes.int32)
        out = op_def(self._queue_ref, n_t, name=name, **self._attrs())
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        if static and isinstance(n, (int, np.integer)):
            for t in outs:
                if t.shape.rank is not None:
                    t.set_shape([int(n)] + [None] * (t.shape.rank - 1))
        return self._wrap(outs)

    def dequeue_many(self, n, name=None):
        """Dequeues `n` elements stacked along a new axis 0: shape [n] + component shape
        (n static when a Python int). Blocks until n are available.

        Raises (at run time):
          OutOfRangeError: the queue is closed with fewer than `n` elements (nothing is
            taken then).
        """
        return self._dequeue_n(QueueDequeueManyV2, n, name or f"{self._scope}_DequeueMany",
                               True)

    def dequeue_up_to(self, n, name=None):
        """Like `dequeue_many`, but on a closed queue returns the remaining elements
        (fewer than `n`) if there are any; axis 0 is unknown statically."""
        return self._dequeue_n(QueueDequeueUpToV2, n, name or f"{self._scope}_DequeueUpTo",
                               False)

    def close(self, cancel_pending_enqueues=False, name=None):
        """An op that closes the queue: later enqueues fail, dequeues drain what is
        left; with `cancel_pending_enqueues` waiting enqueues fail with CancelledError."""
        return QueueCloseV2(self._queue_ref, cancel_pending_enqueues=bool(
            cancel_pending_enqueues), name=name or f"{self._scope}_Close")

    def size(self, name=None):
        """An int32 scalar tensor: the number of elements in the queue."""
        return QueueSizeV2(self._queue_ref, name=name or f"{self._scope}_Size")

    def is_closed(self, name=None):
        """A bool scalar tensor: whether the queue is closed."""
        return QueueIsClosedV2(self._queue_ref, name=name or f"{self._scope}_IsClosed")


def _norm(dtypes, shapes, names):
    single = not isinstance(dtypes, (list, tuple))
    dts = [_dtypes.as_dtype(d) for d in ([dtypes] if single else dtypes)]
    if shapes is None:
        shs = [TensorShape(None)] * len(dts)
    else:
        sl = shapes
        if len(dts) == 1 and (not isinstance(sl, (list, tuple)) or not sl or
                              not isinstance(sl[0], (list, tuple, TensorShape)) and
                              sl[0] is not None):
            sl = [sl]
        if isinstance(sl, TensorShape):
            sl = [sl]
        shs = [as_shape(s) for s in sl]
        if len(shs) != len(dts):
            raise ValueError(f"shapes has {len(shs)} entries, dtypes {len(dts)}. "
                             f"Received: shapes={shapes!r}")
    if names is not None:
        names = list(names) if isinstance(names, (list, tuple)) else [names]
        if len(names) != len(dts):
            raise ValueError(f"names has {len(names)} entries, dtypes {len(dts)}")
    return dts, shs, names


def _check_capacity(capacity):
    if not isinstance(capacity, (int, np.integer)) or capacity <= 0:
        raise ValueError(f"`capacity` must be a positive int. Received: capacity={capacity!r}")
    return int(capacity)


def _shape_attr(shapes, given):
    if not given:
        return ()
    return tuple(None if s.rank is None else tuple(s.as_list()) for s in shapes)


class FIFOQueue(QueueBase):
    """A queue that dequeues elements in the order they were enqueued.

    Args:
      capacity: the most elements it holds; enqueues block when full.
      dtypes: a `DType` or a list of them, one per component.
      shapes: optional shapes, one per component (fully defined); with them,
        `dequeue_many` gives statically shaped batches.
      names: optional component names; enqueue and dequeue then use dicts.
      shared_name: the resource key within a session (default: the op name).
      name: op name (default ``"fifo_queue"``).

    Example::

        q = ml.FIFOQueue(10, [ml.float32], shapes=[[3]])
        enq = q.enqueue_many([batch])        # [n, 3]
        x = q.dequeue_many(4)                # [4, 3]
    """

    _op = FIFOQueueV2
    _default_name = "fifo_queue"

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None,
                 name=None):
        dts, shs, names = _norm(dtypes, shapes, names)
        for s in shs if shapes is not None else ():
            if not s.is_fully_defined():
                raise ValueError(f"{type(self).__name__} needs fully defined shapes, got "
                                 f"{s} (use PaddingFIFOQueue for unknown dims)")
        ref = self._op(capacity=_check_capacity(capacity),
                       component_types=tuple(d.name for d in dts),
                       shapes=_shape_attr(shs, shapes is not None),
                       shared_name=shared_name or "", name=name or self._default_name,
                       **self._extra_attrs())
        super().__init__(dts, shs, names, ref)

    def _extra_attrs(self):
        return {}


class PaddingFIFOQueue(FIFOQueue):
    """A FIFO queue whose components may have unknown dims (None); `dequeue_many` pads
    each batch with zeros (b"" for strings) to the largest element of the batch.

    Args:
      shapes: required; one shape per component, of known rank.
    """

    _op = PaddingFIFOQueueV2
    _default_name = "padding_fifo_queue"

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None, name=None):
        dts, shs, names = _norm(dtypes, shapes, names)
        if any(s.rank is None for s in shs):
            raise ValueError("PaddingFIFOQueue needs shapes of known rank. Received: "
                             f"shapes={shapes!r}")
        ref = self._op(capacity=_check_capacity(capacity),
                       component_types=tuple(d.name for d in dts),
                       shapes=_shape_attr(shs, True), shared_name=shared_name or "",
                       name=name or self._default_name)
        QueueBase.__init__(self, dts, shs, names, ref)


class RandomShuffleQueue(FIFOQueue):
    """A queue that dequeues elements in a random order.

    Args:
      capacity: the most elements it holds.
      min_after_dequeue: while open, a dequeue waits until more than this many
        elements are held, so that every dequeue leaves at least this many to mix with;
        once closed, the rest drains.
      seed: op seed; with the graph seed (`ml.set_random_seed`) it fixes the order, so
        two sessions given the same enqueues dequeue the same sequence.
    """

    _op = RandomShuffleQueueV2
    _default_name = "random_shuffle_queue"

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None,
                 seed=None, shared_name=None, name=None):
        if not isinstance(min_after_dequeue, (int, np.integer)) or min_after_dequeue < 0:
            raise ValueError("`min_after_dequeue` must be a non-negative int. Received: "
                             f"min_after_dequeue={min_after_dequeue!r}")
        if min_after_dequeue >= capacity:
            raise ValueError(f"min_after_dequeue ({min_after_dequeue}) must be less than "
                             f"capacity ({capacity}), or no dequeue could ever run")
        s1, s2 = get_seed(seed)
        self._seed_attrs = dict(min_after_dequeue=int(min_after_dequeue), seed=s1, seed2=s2)
        super().__init__(capacity, dtypes, shapes, names, shared_name, name)

    def _extra_attrs(self):
        return self._seed_attrs


class PriorityQueue(QueueBase):
    """A queue that dequeues the element with the lowest priority first (ties in
    enqueue order).

    Elements are tuples ``(priority, *components)``: the priority is an int64 scalar.
    `dequeue` returns the same tuple, priority first.

    Args:
      capacity: the most elements it holds.
      types: dtypes of the components after the priority.
      shapes: their shapes (required, as in TensorFlow).
    """

    def __init__(self, capacity, types, shapes, names=None, shared_name=None,
                 name="priority_queue"):
        dts, shs, names = _norm(types, shapes, names)
        dts = [_dtypes.int64] + dts
        shs = [TensorShape([])] + shs
        if names is not None:
            raise ValueError("PriorityQueue does not support component names")
        ref = PriorityQueueV2(capacity=_check_capacity(capacity),
                              component_types=tuple(d.name for d in dts),
                              shapes=_shape_attr(shs, True), shared_name=shared_name or "",
                              name=name)
        super().__init__(dts, shs, None, ref)
