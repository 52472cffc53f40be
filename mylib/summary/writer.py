"""`FileWriter`: writes summaries, graphs and run metadata to a TensorBoard event file
(TFRecord records through tensorboardX's `RecordWriter`), as TensorFlow 1's
`tf.summary.FileWriter`.

Events are queued and written by a background thread, as in TensorFlow; `flush()`
returns only once every event added before it is written and fsynced, so a process
killed (``kill -9``) after a `flush()` leaves those events readable, and at worst a
truncated last record after them (which `summary_iterator` reports as `DataLossError`
after yielding every whole event).
"""

from __future__ import annotations

import atexit
import os
import queue
import socket
import threading
import time
import weakref

import numpy as np

from mylib.summary.graph import to_tensorboard_graph_def

__all__ = ["FileWriter", "FileWriterCache"]


def _event_pb2():
    from tensorboardX.proto import event_pb2

    return event_pb2


def run_metadata_proto(run_metadata):
    """TensorBoard's `RunMetadata` proto (``tensorboard.compat.proto.config_pb2``) for a
    mylib `RunMetadata`: one `DeviceStepStats` per device, one `NodeExecStats` per
    segment of the step (an XLA cluster or a host op), its ops in `timeline_label`."""
    from mylib._optional import require

    config_pb2 = require("tensorboard.compat.proto.config_pb2", "run_metadata_proto",
                         "tensorboard")

    rm = config_pb2.RunMetadata()
    base_us = int(getattr(run_metadata, "_wall_start_us", 0) or time.time() * 1e6)
    by_dev = {}
    for ev in run_metadata.step_stats:
        dev = ev.get("device") or "/host:CPU"
        ds = by_dev.get(dev)
        if ds is None:
            ds = by_dev[dev] = rm.step_stats.dev_stats.add()
            ds.device = dev
        ns = ds.node_stats.add()
        ns.node_name = ev["name"]
        start = int(ev["start_us"])
        dur = max(0, int(ev["end_us"]) - start)
        ns.all_start_micros = base_us + start
        ns.op_start_rel_micros = 0
        ns.op_end_rel_micros = dur
        ns.all_end_rel_micros = dur
        ops = ev.get("ops") or []
        ns.timeline_label = f"{ev['name']} = {ev.get('kind', '')}({', '.join(ops)})"
    return rm


class _EventFile:
    """One event file written by a background thread. `flush` waits for every queued
    event (tensorboardX's writer flushes only what its thread has already taken, so
    events added just before a flush could be lost with the process), and each
    instance writes a file of its own (a reopened writer never truncates the last
    one)."""

    _STOP = object()

    def __init__(self, logdir, max_queue, flush_secs, filename_suffix):
        from tensorboardX.record_writer import RecordWriter

        os.makedirs(logdir, exist_ok=True)
        base = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}"
        path, n = os.path.join(logdir, base + filename_suffix), 0
        while os.path.exists(path):  # a writer reopened within the same second
            n += 1
            path = os.path.join(logdir, f"{base}.{os.getpid()}.{n}{filename_suffix}")
        self.path = path
        self._records = RecordWriter(path)
        self._queue = queue.Queue(max(1, int(max_queue)))
        self._flush_secs = float(flush_secs)
        self._error = None
        self._lock = threading.Lock()  # one writer of the file at a time
        first = _event_pb2().Event(wall_time=time.time(), file_version="brain.Event:2")
        self._records.write(first.SerializeToString())
        self._thread = threading.Thread(target=self._run, name="mylib-event-writer",
                                        daemon=True)
        self._thread.start()
        # Events still queued when the program ends are written (the thread is a
        # daemon), as tensorboardX's writer does.
        ref = weakref.ref(self)

        def at_exit():
            f = ref()
            if f is not None and f._thread.is_alive():
                f.close()

        self._at_exit = at_exit
        atexit.register(at_exit)

    def _run(self):
        next_flush = time.time() + self._flush_secs
        pending = False
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, next_flush - time.time()))
            except queue.Empty:
                item = None
            try:
                if item is self._STOP:
                    return
                if item is not None:
                    with self._lock:
                        self._records.write(item)
                    pending = True
                if pending and time.time() >= next_flush:
                    with self._lock:
                        self._records.flush()
                    pending = False
            except Exception as e:  # noqa: BLE001 - reported by the next flush/close
                self._error = self._error or e
            finally:
                if item is not None:
                    self._queue.task_done()
            if time.time() >= next_flush:
                next_flush = time.time() + self._flush_secs

    def add(self, event):
        self._raise_error()
        self._queue.put(event.SerializeToString())

    def _raise_error(self):
        if self._error is not None:
            e, self._error = self._error, None
            raise OSError(f"Writing the event file {self.path} failed: {e}") from e

    def flush(self):
        self._queue.join()
        with self._lock:
            self._records.flush()
        self._raise_error()

    def close(self):
        atexit.unregister(self._at_exit)
        try:
            self.flush()
        finally:
            self._queue.put(self._STOP)
            self._thread.join()
            with self._lock:
                self._records.close()


class FileWriter:
    """Writes `Summary` protos, the graph and run metadata to an event file in `logdir`.

    Args:
      logdir: directory of the event file (created if missing).
      graph: optional `Graph` (or a `Session`'s graph) written at once.
      max_queue: events held before a write is forced.
      flush_secs: how often pending events are written.
      filename_suffix: suffix of the event file's name.

    Example::

        merged = ml.summary.merge_all()
        writer = ml.summary.FileWriter(logdir, sess.graph)
        for step in range(n):
            s, _ = sess.run([merged, train_op])
            writer.add_summary(s, step)
        writer.close()
    """

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120,
                 filename_suffix="", session=None):
        self._logdir = str(logdir)
        self._options = (max_queue, flush_secs, filename_suffix)
        self._writer = _EventFile(self._logdir, *self._options)
        self._closed = False
        if graph is not None:
            self.add_graph(graph)

    def get_logdir(self):
        return self._logdir

    def add_event(self, event, global_step=None):
        """Adds an `Event` proto (tensorboardX's)."""
        self._check_open()
        self._add(event, global_step)

    def add_summary(self, summary, global_step=None):
        """Adds a summary: the serialized bytes a summary op returns (or its 0-d array),
        or a `Summary` proto.

        Raises:
          TypeError: `summary` is neither.
        """
        from tensorboardX.proto import summary_pb2

        self._check_open()
        if isinstance(summary, np.ndarray):
            summary = summary.item()
        if isinstance(summary, (bytes, bytearray)):
            s = summary_pb2.Summary()
            s.ParseFromString(bytes(summary))
            summary = s
        if not isinstance(summary, summary_pb2.Summary):
            raise TypeError("add_summary needs the value of a summary op (bytes) or a "
                            f"Summary proto. Received: {type(summary).__name__}")
        self._add(_event_pb2().Event(summary=summary), global_step)

    def add_graph(self, graph, global_step=None, graph_def=None):
        """Adds `graph` (a `Graph`, or `graph_def`) for TensorBoard's Graphs tab."""
        self._check_open()
        g = graph_def if graph_def is not None else graph
        if hasattr(g, "graph") and not hasattr(g, "get_operations"):
            g = g.graph  # a Session
        gd = to_tensorboard_graph_def(g)
        ev = _event_pb2().Event(graph_def=gd.SerializeToString())
        self._add(ev, global_step)

    def add_run_metadata(self, run_metadata, tag, global_step=None):
        """Adds the step statistics of a traced run (`RunOptions(trace_level=FULL_TRACE)`)
        under `tag`, shown in TensorBoard's Graphs tab as compute time per node.

        Raises:
          ValueError: `tag` is already used in this writer.
        """
        self._check_open()
        if not hasattr(self, "_tags"):
            self._tags = set()
        if tag in self._tags:
            raise ValueError(f"The provided tag was already used for this event type: {tag}")
        self._tags.add(tag)
        rm = run_metadata if hasattr(run_metadata, "SerializeToString") else \
            run_metadata_proto(run_metadata)
        pb = _event_pb2()
        trm = pb.TaggedRunMetadata(tag=tag, run_metadata=rm.SerializeToString())
        self._add(pb.Event(tagged_run_metadata=trm), global_step)

    def add_session_log(self, session_log, global_step=None):
        self._check_open()
        self._add(_event_pb2().Event(session_log=session_log), global_step)

    def _add(self, event, global_step):
        if not event.wall_time:
            event.wall_time = time.time()
        if global_step is not None:
            event.step = int(global_step)
        self._writer.add(event)

    def flush(self):
        """Writes every event added so far to disk (fsynced) before returning.

        Raises:
          OSError: writing the file failed (disk full, removed directory...).
        """
        if not self._closed:
            self._writer.flush()

    def close(self):
        """Flushes and closes the file; further adds raise RuntimeError."""
        if not self._closed:
            self._writer.close()
            self._closed = True

    def reopen(self):
        """Reopens a closed writer: further events go to a new event file in the same
        directory, as in TensorFlow. Does nothing if the writer is open."""
        if self._closed:
            self._writer = _EventFile(self._logdir, *self._options)
            self._closed = False

    def _check_open(self):
        if self._closed:
            raise RuntimeError("FileWriter is closed (call reopen() to write again)")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FileWriterCache:
    """One `FileWriter` per log directory, shared by the hooks of a `MonitoredSession`
    (TensorFlow 1's ``tf.summary.FileWriterCache``)."""

    _cache = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir):
        """The cached `FileWriter` of `logdir` (created, and its directory, if needed)."""
        key = os.path.abspath(str(logdir))
        with FileWriterCache._lock:
            w = FileWriterCache._cache.get(key)
            if w is None:
                w = FileWriter(key)
                FileWriterCache._cache[key] = w
            elif w._closed:
                w.reopen()
            return w

    @staticmethod
    def clear():
        """Closes and forgets every cached writer."""
        with FileWriterCache._lock:
            for w in FileWriterCache._cache.values():
                w.close()
            FileWriterCache._cache.clear()
