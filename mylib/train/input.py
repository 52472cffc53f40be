"""TensorFlow 1's queue-based input pipelines: `slice_input_producer`,
`range_input_producer`, `input_producer`, `string_input_producer`, `limit_epochs`,
`batch`, `shuffle_batch`, `batch_join`, `shuffle_batch_join`.

Each producer or batcher builds a queue (`FIFOQueue`, `RandomShuffleQueue`,
`PaddingFIFOQueue`) and a `QueueRunner` in the graph's ``QUEUE_RUNNERS`` collection,
whose threads `start_queue_runners` starts. With ``num_epochs`` the producers stop
after that many passes: the queue closes and, once drained, a dequeue raises
`OutOfRangeError` (the end of input, as in TensorFlow 1, which a
`Coordinator` loop or `MonitoredSession` takes as the end of training).

Differs from TensorFlow 1: the epoch count lives in the session (no ``epochs`` local
variable to initialize; `local_variables_initializer` does not reset it).
"""

from __future__ import annotations

import threading

import numpy as np

from mylib import errors
from mylib.core import dtypes as _dtypes
from mylib.core.graph import control_dependencies, name_scope
from mylib.core.op_registry import NotDifferentiable, OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, data_flow_ops, indexing_ops, random_ops
from mylib.core.tensor_shape import TensorShape
from mylib.runtime.queue_runner import QueueRunner, add_queue_runner

__all__ = ["limit_epochs", "input_producer", "string_input_producer",
           "range_input_producer", "slice_input_producer", "batch", "shuffle_batch",
           "batch_join", "shuffle_batch_join"]


# ---------------------------------------------------------------- epoch counting
class _Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.value = 0


def _count_up_to_lower(ctx, op):
    c = ctx.resource("count_up_to:" + op.name, _Counter)
    limit = op.attrs["limit"]
    with c.lock:
        if c.value >= limit:
            raise errors.OutOfRangeError(
                f"{op.name}: reached the limit of {limit} (the input's epochs ran out)")
        c.value += 1
        return np.int64(c.value - 1)


CountUpToLimit = OpDef("CountUpToLimit", lower=_count_up_to_lower, stateful=True,
                       host=True, shape_fn=lambda **_: TensorSpec([], _dtypes.int64))
NotDifferentiable("CountUpToLimit")


def limit_epochs(tensor, num_epochs=None, name=None):
    """`tensor`, which raises `OutOfRangeError` once it has been produced `num_epochs`
    times (every time when None is not given: no limit)."""
    t = convert_to_tensor(tensor)
    if num_epochs is None:
        return t
    if int(num_epochs) <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    with name_scope(name, "limit_epochs", [t]) as scope:
        count = CountUpToLimit(limit=int(num_epochs), name="epochs")
        with control_dependencies([count]):
            return array_ops.identity(t, name=scope.rstrip("/") or None)


# ---------------------------------------------------------------- producers
def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True,
                   seed=None, capacity=32, shared_name=None, summary_name=None, name=None,
                   cancel_op=None):
    """A `FIFOQueue` filled with the rows of `input_tensor` [n, ...] (shuffled each
    pass with `shuffle`), `num_epochs` times or forever, by a `QueueRunner`.

    Raises:
      ValueError: the rows' shape is not known and `element_shape` is not given.
    """
    with name_scope(name, "input_producer", [input_tensor]):
        t = convert_to_tensor(input_tensor)
        shape = TensorShape(element_shape) if element_shape is not None else \
            (t.shape[1:] if t.shape.rank is not None else TensorShape(None))
        if not shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined row shape or "
                             f"`element_shape` must be given; received {t.shape}.")
        if shuffle:
            t = random_ops.random_shuffle(t, seed=seed)
        t = limit_epochs(t, num_epochs)
        q = data_flow_ops.FIFOQueue(capacity, dtypes=[t.dtype], shapes=[shape],
                                    shared_name=shared_name, name="fifo_queue")
        enq = q.enqueue_many([t])
        add_queue_runner(QueueRunner(q, [enq], cancel_op=cancel_op))
        return q


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None,
                          capacity=32, shared_name=None, name=None, cancel_op=None):
    """`input_producer` of a 1-D string tensor (file names, usually).

    Raises:
      ValueError: an empty list of strings."""
    if isinstance(string_tensor, (list, tuple)) and not string_tensor:
        raise ValueError("string_input_producer requires a non-empty list of strings.")
    with name_scope(name, "input_producer", [string_tensor]):
        return input_producer(convert_to_tensor(string_tensor, dtype=_dtypes.string), [],
                              num_epochs, shuffle, seed, capacity, shared_name,
                              cancel_op=cancel_op)


def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """A queue of the int32 numbers ``0 .. limit - 1`` (shuffled each pass with
    `shuffle`), `num_epochs` times or forever; `dequeue()` gives one."""
    with name_scope(name, "input_producer", [limit]):
        rng = constant_ops.range(limit if hasattr(limit, "op") else int(limit),
                                 dtype=_dtypes.int32)
        return input_producer(rng, [], num_epochs, shuffle, seed, capacity, shared_name)


def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """One row at a time of the tensors in `tensor_list` (each [n, ...], the same n),
    row i of every tensor together, in a shuffled order with `shuffle`; `num_epochs`
    passes or forever. Returns a list of tensors of the rows' shapes.

    Raises:
      ValueError: an empty `tensor_list`."""
    tensors = [convert_to_tensor(t) for t in tensor_list]
    if not tensors:
        raise ValueError("Expected at least one tensor in slice_input_producer().")
    with name_scope(name, "input_producer", tensors):
        n = tensors[0].shape[0] if tensors[0].shape.rank else None
        limit = int(n) if n is not None else array_ops.shape(tensors[0])[0]
        q = range_input_producer(limit, num_epochs, shuffle, seed, capacity, shared_name)
        index = q.dequeue()
        return [indexing_ops.gather(t, index) for t in tensors]


# ---------------------------------------------------------------- batching
def _flatten(tensors):
    """(flat list of tensors, rebuild(flat) -> the original structure)."""
    if isinstance(tensors, dict):
        keys = sorted(tensors)
        return [convert_to_tensor(tensors[k]) for k in keys], \
            lambda flat: dict(zip(keys, flat))
    if isinstance(tensors, (list, tuple)):
        return [convert_to_tensor(t) for t in tensors], list
    return [convert_to_tensor(tensors)], lambda flat: flat[0]


def _shapes(flat, shapes, enqueue_many, dynamic_pad, what):
    if shapes is not None:
        return [TensorShape(s) for s in shapes]
    out = []
    for t in flat:
        s = t.shape if t.shape.rank is not None else TensorShape(None)
        if enqueue_many and s.rank is not None:
            s = s[1:]
        if not dynamic_pad and not s.is_fully_defined():
            raise ValueError(f"{what}: all shapes must be fully defined ('{t.name}' has "
                             f"{t.shape}); give `shapes`, or `dynamic_pad=True` to pad "
                             "unknown dimensions.")
        out.append(s)
    return out


def _batcher(make_queue, tensors_list, batch_size, num_threads, enqueue_many, shapes,
             dynamic_pad, allow_smaller_final_batch, name, default_name, what):
    first, rebuild = _flatten(tensors_list[0])
    with name_scope(name, default_name, first):
        flats = [first] + [_flatten(t)[0] for t in tensors_list[1:]]
        if any(len(f) != len(first) for f in flats):
            raise ValueError(f"{what}: every element of tensors_list must hold the same "
                             "number of tensors.")
        shape_list = _shapes(first, shapes, enqueue_many, dynamic_pad, what)
        q = make_queue([t.dtype for t in first], shape_list)
        enqueues = []
        for flat in flats:
            op = q.enqueue_many(flat) if enqueue_many else q.enqueue(flat)
            enqueues += [op] * (num_threads if len(flats) == 1 else 1)
        add_queue_runner(QueueRunner(q, enqueues))
        out = q.dequeue_up_to(batch_size) if allow_smaller_final_batch else \
            q.dequeue_many(batch_size)
        out = out if isinstance(out, (list, tuple)) else [out]
        lead = None if allow_smaller_final_batch else int(batch_size)
        for t, s in zip(out, shape_list):
            if s.rank is not None:
                t.set_shape(TensorShape([lead]).concatenate(s))
        return rebuild(list(out))


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
          dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of `batch_size` of `tensors` (a tensor, list or dict: the same structure
    comes back, each with a leading batch axis), in order, through a `FIFOQueue` of
    `capacity` filled by `num_threads` `QueueRunner` threads. With `enqueue_many`
    each tensor holds several examples on its first axis. `dynamic_pad` pads unknown
    dimensions to the batch's longest (`PaddingFIFOQueue`). When the input runs out,
    the last smaller batch comes with `allow_smaller_final_batch`, else it is dropped
    and the next dequeue raises `OutOfRangeError`.

    Raises:
      ValueError: a shape not fully defined (without `shapes` or `dynamic_pad`)."""
    def make(dts, shp):
        cls = data_flow_ops.PaddingFIFOQueue if dynamic_pad else data_flow_ops.FIFOQueue
        return cls(capacity, dtypes=dts, shapes=shp, shared_name=shared_name,
                   name="padding_fifo_queue" if dynamic_pad else "fifo_queue")
    return _batcher(make, [tensors], batch_size, num_threads, enqueue_many, shapes,
                    dynamic_pad, allow_smaller_final_batch, name, "batch", "batch")


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1,
                  seed=None, enqueue_many=False, shapes=None,
                  allow_smaller_final_batch=False, shared_name=None, name=None):
    """`batch`, drawn at random from a `RandomShuffleQueue` that keeps at least
    `min_after_dequeue` examples after each dequeue (until the input runs out)."""
    def make(dts, shp):
        return data_flow_ops.RandomShuffleQueue(capacity, min_after_dequeue, dts, shp,
                                                seed=seed, shared_name=shared_name,
                                                name="random_shuffle_queue")
    return _batcher(make, [tensors], batch_size, num_threads, enqueue_many, shapes, False,
                    allow_smaller_final_batch, name, "shuffle_batch", "shuffle_batch")


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None,
               dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None,
               name=None):
    """`batch` over several sources of the same structure, one thread each."""
    def make(dts, shp):
        cls = data_flow_ops.PaddingFIFOQueue if dynamic_pad else data_flow_ops.FIFOQueue
        return cls(capacity, dtypes=dts, shapes=shp, shared_name=shared_name)
    return _batcher(make, list(tensors_list), batch_size, 1, enqueue_many, shapes,
                    dynamic_pad, allow_smaller_final_batch, name, "batch_join", "batch_join")


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None,
                       enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                       shared_name=None, name=None):
    """`shuffle_batch` over several sources of the same structure, one thread each."""
    def make(dts, shp):
        return data_flow_ops.RandomShuffleQueue(capacity, min_after_dequeue, dts, shp,
                                                seed=seed, shared_name=shared_name)
    return _batcher(make, list(tensors_list), batch_size, 1, enqueue_many, shapes, False,
                    allow_smaller_final_batch, name, "shuffle_batch_join",
                    "shuffle_batch_join")
