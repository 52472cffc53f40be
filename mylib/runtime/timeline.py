"""`Timeline`: a traced step as a Chrome trace (chrome://tracing, Perfetto), as
TensorFlow 1's ``tensorflow.python.client.timeline``.

    opts = ml.RunOptions(trace_level=ml.RunOptions.FULL_TRACE)
    md = ml.RunMetadata()
    sess.run(train_op, options=opts, run_metadata=md)
    with open("step.json", "w") as f:
        f.write(Timeline(md.step_stats).generate_chrome_trace_format())

Each segment of the step (an XLA cluster or a host op) is one complete event
(``"ph": "X"``) in the row ("process") of its device, with its ops in ``args``.
"""

from __future__ import annotations

import json

__all__ = ["Timeline"]


class Timeline:
    """A step's segments as Chrome trace events.

    Args:
      step_stats: `RunMetadata.step_stats` (a list of dicts with name, device, kind,
        start_us, end_us, ops), or the `RunMetadata` itself.
    """

    def __init__(self, step_stats, graph=None):
        if hasattr(step_stats, "step_stats"):
            step_stats = step_stats.step_stats
        self._stats = list(step_stats)
        self._graph = graph

    def _events(self):
        pids = {}
        events = []
        for ev in self._stats:
            dev = ev.get("device") or "/host:CPU"
            if dev not in pids:
                pid = pids[dev] = len(pids)
                events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                               "args": {"name": f"{dev} ({ev.get('kind', '')})"}})
                events.append({"name": "process_sort_index", "ph": "M", "pid": pid,
                               "tid": 0, "args": {"sort_index": pid}})
        for ev in self._stats:
            dev = ev.get("device") or "/host:CPU"
            start = float(ev["start_us"])
            dur = max(0.0, float(ev["end_us"]) - start)
            args = {"name": ev["name"], "kind": ev.get("kind", ""),
                    "ops": list(ev.get("ops") or [])}
            if "type" in ev:
                args["op"] = ev["type"]
            events.append({"name": ev.get("type") or ev["name"], "cat": ev.get("kind", "Op"),
                           "ph": "X", "pid": pids[dev], "tid": 0, "ts": start, "dur": dur,
                           "args": args})
        return events

    def generate_chrome_trace_format(self, show_dataflow=True, show_memory=False):
        """The trace as a JSON string: ``{"traceEvents": [...]}`` with times in
        microseconds from the start of the step. `show_dataflow` and `show_memory`
        are accepted for compatibility (segments have no per-tensor flows)."""
        return json.dumps({"traceEvents": self._events(), "displayTimeUnit": "ms"},
                          indent=None)
