"""`FileWriter`: writes summaries, graphs and run metadata to a TensorBoard event file
(through tensorboardX's event-file writer), as TensorFlow 1's `tf.summary.FileWriter`.
"""

from __future__ import annotations

import os
import threading
import time

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
        from tensorboardX.writer import FileWriter as _TBXFileWriter

        self._logdir = str(logdir)
        self._writer = _TBXFileWriter(self._logdir, max_queue=max_queue,
                                      flush_secs=flush_secs, filename_suffix=filename_suffix)
        self._closed = False
        if graph is not None:
            self.add_graph(graph)

    def get_logdir(self):
        return self._logdir

    def add_event(self, event, global_step=None):
        """Adds an `Event` proto (tensorboardX's)."""
        self._check_open()
        self._writer.add_event(event, global_step)

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
        self._writer.add_summary(summary, None if global_step is None else int(global_step))

    def add_graph(self, graph, global_step=None, graph_def=None):
        """Adds `graph` (a `Graph`, or `graph_def`) for TensorBoard's Graphs tab."""
        self._check_open()
        g = graph_def if graph_def is not None else graph
        if hasattr(g, "graph") and not hasattr(g, "get_operations"):
            g = g.graph  # a Session
        gd = to_tensorboard_graph_def(g)
        ev = _event_pb2().Event(graph_def=gd.SerializeToString())
        self._writer.add_event(ev, None if global_step is None else int(global_step))

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
        self._writer.add_event(pb.Event(tagged_run_metadata=trm),
                               None if global_step is None else int(global_step))

    def add_session_log(self, session_log, global_step=None):
        self._check_open()
        self._writer.add_event(_event_pb2().Event(session_log=session_log),
                               None if global_step is None else int(global_step))

    def flush(self):
        """Writes pending events to disk."""
        if not self._closed:
            self._writer.flush()

    def close(self):
        """Flushes and closes the file; further adds raise RuntimeError."""
        if not self._closed:
            self._writer.close()
            self._closed = True

    def reopen(self):
        if self._closed:
            self._writer.reopen()
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
