"""Cutting one step of a graph across parameter-server tasks, and running it.

A step (the ops pruned for some fetches and feeds) is cut by *task*: an op runs on
parameter server ``k`` when its device says ``/job:ps/task:k`` or when it uses a
variable handle that lives there (reads, gathers, assigns, optimizer updates: the ops
TensorFlow colocates with their resource); every other op runs on the task that runs
the step (a worker, or the coordinator). As the core's executor does for devices
(`mylib.runtime.executor.SegmentedPlan`), each op gets a phase number that grows by one
each time a value must cross tasks, and the ops of one task in one phase form a
*segment*: the segments of a phase run at the same time (the remote ones as Ray actor
calls), and the values crossing tasks are the cut edges (TensorFlow's `_Send`/`_Recv`
pairs). A training step is typically three phases: reads and embedding gathers on the
parameter servers, the forward and backward pass on the worker, the updates on the
parameter servers; only the rows a gather selects and the `IndexedSlices` of their
gradients cross, never the whole table.

In synchronous mode some ops are *gated*: the ops that apply aggregated gradients
(marked by the strategy) and everything downstream of them. A worker then runs only
the ungated part and returns the inputs of the gated part (its *payload*); the
coordinator runs the gated part once per step with the mean of the first m payloads.

A step is described by a plain-data `spec` (names only) so that the same spec runs in
any process holding a copy of the graph.
"""

from __future__ import annotations

import hashlib
import json
import time

import jax
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors

LOCAL = "local"
_FREE_OPS = frozenset({"VarHandleOp", "Const"})


def ps_task_of_device(dev):
    """The parameter-server task index named by device string `dev`, else None."""
    if not dev or "/job:ps" not in dev:
        return None
    from mylib.devices import DeviceSpec

    spec = DeviceSpec.from_string(dev)
    return 0 if spec.task is None else spec.task


def assign_tasks(ops):
    """{op: LOCAL or ps task index} for `ops` in execution order (see module doc)."""
    task = {}
    for op in ops:
        k = ps_task_of_device(op.device)
        if k is None:
            for t in op.inputs:
                if t.dtype == _dtypes.resource:
                    src = task.get(t.op)
                    k = src if src is not None else ps_task_of_device(t.op.device)
                    if k == LOCAL:
                        k = None
                    if k is not None:
                        break
        task[op] = LOCAL if k is None else k
    return task


def spec_id(spec):
    """A short content hash of a step spec."""
    return hashlib.sha1(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]


def build_spec(ops, feeds, fetch_tensors, target_ops, sync_op_names=(), force=False):
    """The plain-data description of a step (see module doc).

    Args:
      ops: the pruned ops, in execution order.
      feeds: fed tensors; fetch_tensors: fetched tensors; target_ops: fetched ops.
      sync_op_names: names of ops that start the gated part (synchronous mode).
    Returns:
      dict with ``feeds``, ``fetches`` (tensor names), ``targets`` (op names),
      ``phases``: a list of lists of segments, each ``{"task", "ops", "inputs",
      "outputs", "gated", "id"}``, and ``aggregate``: names of the gated part's inputs
      that are averaged over replicas. Returns None when every op runs locally.
    """
    fed = set(feeds)
    in_set = set(ops)
    task = assign_tasks(ops)
    if not force and all(task[op] == LOCAL for op in ops if op.type not in _FREE_OPS):
        return None
    sync = set(sync_op_names)
    shaped = _shape_derived(ops, fed, set(fetch_tensors))
    phase, gated = _assign_phases(ops, fed, in_set, task, sync, shaped)
    _delay_floating(ops, fed, in_set, task, phase, gated, shaped)
    consumers = {}
    for op in ops:
        for t in op.inputs:
            consumers.setdefault(t, []).append(op)
    fetch_set = set(fetch_tensors)
    groups = {}
    for op in ops:
        if op.type in _FREE_OPS or op in shaped:
            continue
        groups.setdefault((phase[op], gated[op], task[op]), []).append(op)
    phases = []
    aggregate = set()
    n_phases = 1 + max((k[0] for k in groups), default=0)
    for p in range(n_phases):
        segs = []
        # Ungated segments of a phase before gated ones: a gated segment may consume
        # an ungated one of the same phase and task.
        for key in sorted((k for k in groups if k[0] == p),
                          key=lambda k: (k[1], str(k[2]))):
            seg = _segment(key, groups[key], fed, sync, shaped, consumers, fetch_set,
                           aggregate)
            if seg is not None:
                segs.append(seg)
        phases.append(segs)
    # Fetched free ops (a fetched constant) are computed wherever the step runs.
    return {"feeds": [t.name for t in feeds], "fetches": [t.name for t in fetch_tensors],
            "targets": [op.name for op in target_ops], "phases": phases,
            "aggregate": sorted(aggregate)}


def _assign_phases(ops, fed, in_set, task, sync, shaped):
    """``(phase, gated)``: each op's phase, one more than its latest source's where a
    value crosses tasks, and whether it is gated (an op named in `sync` or downstream
    of one)."""
    phase, gated = {}, {}
    for op in ops:
        p, gt = 0, op.name in sync
        data = [t.op for t in op.inputs if t not in fed]
        # A shape computation is recomputed where it is used (see `_shape_derived`):
        # its own sources count instead.
        expanded, stack = [], list(data)
        while stack:
            src = stack.pop()
            if src in shaped:
                stack.extend(t.op for t in src.inputs if t not in fed)
            else:
                expanded.append(src)
        data = expanded
        for src in data + list(op.control_inputs):
            if src not in in_set:
                continue
            gt = gt or gated.get(src, False)
            if src.type in _FREE_OPS or src in shaped:
                continue
            cross = task[src] != task[op]
            if cross and src not in data and task[src] != LOCAL and task[op] != LOCAL:
                # A control edge between two parameter servers: the ops touch
                # different variables, so running them in the same phase (at once)
                # is indistinguishable from running them in order, and saves a round
                # trip (e.g. the step counter's increment after the updates).
                cross = False
            p = max(p, phase[src] + (1 if cross else 0))
        phase[op] = p
        gated[op] = gt
    return phase, gated


def _segment(key, ops, fed, sync, shaped, consumers, fetch_set, aggregate):
    """The segment of `ops`, grouped under `key` = (phase, gated, task), with the shape
    computations they use recomputed in it; its gated inputs that feed an op named in
    `sync` are added to `aggregate`. None when it holds only NoOps with no outputs."""
    members = list(ops)
    mset = set(members)
    pull = [t.op for op in members for t in op.inputs if t.op in shaped]
    while pull:  # the shape computations the segment uses, recomputed in it
        src = pull.pop()
        if src not in mset:
            mset.add(src)
            members.append(src)
            pull.extend(t.op for t in src.inputs if t.op in shaped)
    members.sort(key=lambda o: o._id)
    inputs, seen = [], set()
    for op in members:
        for t in op.inputs:
            if t in seen or (t.op in mset) or (t.op.type in _FREE_OPS and t not in fed):
                continue
            seen.add(t)
            inputs.append(t)
            if key[1] and op.name in sync:
                aggregate.add(t.name)
    outputs = []
    for op in members:
        for o in op.outputs:
            if o in fetch_set or any(c not in mset for c in consumers.get(o, ())):
                outputs.append(o)
    if not outputs and all(o.type == "NoOp" for o in members):
        return None  # only orders what the phases already order
    seg = {"task": key[2], "gated": key[1], "ops": [o.name for o in members],
           "inputs": [t.name for t in inputs], "outputs": [t.name for t in outputs]}
    seg["id"] = hashlib.sha1(json.dumps(seg, sort_keys=True).encode()).hexdigest()[:16]
    return seg


def _delay_floating(ops, fed, in_set, task, phase, gated, shaped):
    """Moves *floating* ops (variable reads and pure computations on them: nothing
    from this step's feeds or other results, e.g. the learning rate read and negated
    for a sparse update) as late as their users allow, and a parameter-server one into
    a phase that already calls that server: it then shares that round trip instead of
    costing one of its own."""
    floating = set()
    for op in ops:
        if op.control_inputs or op in shaped or not op.outputs:
            continue
        if op.op_def.stateful and op.type != "ReadVariableOp":
            continue
        if op.op_def.host:
            continue
        if all((t.op.type in _FREE_OPS and t not in fed) or t.op in floating
               for t in op.inputs if t.op in in_set):
            if all(t not in fed for t in op.inputs):
                floating.add(op)
    if not floating:
        return
    users = {}
    for op in ops:
        for src in [t.op for t in op.inputs if t not in fed] + list(op.control_inputs):
            if src in in_set:
                users.setdefault(src, []).append(op)
    busy = {(phase[op], task[op], gated[op]) for op in ops
            if op not in floating and op.type not in _FREE_OPS and op not in shaped}
    for op in reversed(ops):
        if op not in floating:
            continue
        us = users.get(op)
        if not us or any(u in shaped for u in us):
            continue
        latest = min(phase[u] - (0 if task[u] == task[op] else 1) for u in us)
        if latest <= phase[op]:
            continue
        if task[op] == LOCAL:
            phase[op] = latest
            continue
        for p in range(latest, phase[op], -1):
            if (p, task[op], gated[op]) in busy:
                phase[op] = p
                break


_SHAPE_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank"})


def _shape_derived(ops, fed, fetched):
    """Ops computing only shapes of fed tensors: `Shape`/`Size`/`Rank` of a feed and
    integer arithmetic on them and on constants. Their values are static when a segment
    is compiled (the core folds them), so each segment that needs one recomputes it
    from the feed rather than receiving it as a runtime value (which a `Reshape` could
    not use)."""
    out = set()
    for op in ops:
        if op.control_inputs or any(o in fetched for o in op.outputs) or not op.outputs:
            continue
        if op.type in _SHAPE_OPS:
            # Only shapes of fed tensors: recomputing one elsewhere costs no transfer.
            if all(t in fed for t in op.inputs):
                out.add(op)
            continue
        od = op.op_def
        if od.stateful or od.host or not op.inputs:
            continue
        if not all(o.dtype.is_integer for o in op.outputs):
            continue
        if all(t not in fed and (t.op in out or t.op.type == "Const") for t in op.inputs):
            out.add(op)
    return out


def spec_tasks(spec):
    """The parameter-server tasks a step uses."""
    return sorted({s["task"] for ph in spec["phases"] for s in ph if s["task"] != LOCAL})


def has_gated(spec):
    return any(s["gated"] for ph in spec["phases"] for s in ph)


def to_host(v):
    """A value ready to travel through Ray: numpy (zero-copy view where possible)."""
    if isinstance(v, jax.Array):
        return np.asarray(v)
    return v


class SegmentRunner:
    """Runs segments of one process's copy of the graph on that process's `Session`.

    Each segment is compiled once (a `SegmentedPlan` of its ops, with its cut inputs as
    feeds): XLA clusters plus host ops, as the core's executor runs any step.
    """

    def __init__(self, graph, session):
        self.graph = graph
        self.session = session
        self._plans = {}

    def _plan(self, seg):
        plan = self._plans.get(seg["id"])
        if plan is None:
            from mylib.runtime.executor import SegmentedPlan
            from mylib.core.lowering import topo_order

            g = self.graph
            try:
                ops = [g.get_operation_by_name(n) for n in seg["ops"]]
                inputs = [g.get_tensor_by_name(n) for n in seg["inputs"]]
                outputs = [g.get_tensor_by_name(n) for n in seg["outputs"]]
            except (KeyError, ValueError) as e:
                raise errors.FailedPreconditionError(
                    f"this task's copy of the graph lacks an op of the step: {e}") from None
            ordered = topo_order(set(ops), set(inputs))
            plan = SegmentedPlan(ordered, inputs, outputs, lambda op: None, None)
            plan._read_only = _read_only_outputs(ordered, outputs)
            self._plans[seg["id"]] = plan
        return plan

    def knows(self, seg_id):
        return seg_id in self._plans

    def run(self, seg, values, deadline=None):
        """Runs segment `seg` with its input `values`; returns its output values."""
        plan = self._plan(seg)
        ro = plan._read_only
        if ro is not None:  # only variable reads: hand out the stored values
            vs = self.session.variable_store
            store = vs.values
            with vs.lock:
                try:
                    # Host views taken under the lock: a concurrent update that donates
                    # a variable's buffer then leaves these values alone.
                    return [to_host(store[k]) for k in ro]
                except KeyError as e:
                    raise errors.FailedPreconditionError(
                        f"Attempting to use uninitialized value {e.args[0]}") from None
        return plan.run(self.session, list(values), deadline, None)


def _read_only_outputs(ops, outputs):
    """The variable keys when a segment is only `ReadVariableOp`s of handles and its
    outputs are exactly those reads (the pull of a step), else None."""
    keys = []
    reads = {}
    for op in ops:
        if op.type == "VarHandleOp":
            continue
        if op.type != "ReadVariableOp" or op.control_inputs or \
                op.inputs[0].op.type != "VarHandleOp":
            return None
        reads[op.outputs[0]] = op.inputs[0].op.attrs["shared_name"]
    for o in outputs:
        if o not in reads:
            return None
        keys.append(reads[o])
    return keys


class StepRunner:
    """Runs a step `spec` from one task: its local segments here, the others through
    `call_ps(task, seg, values) -> future` and `wait(futures) -> values`.

    `mode`: ``"all"`` runs every segment; ``"ungated"`` skips the gated part and also
    returns its inputs (the payload).
    """

    def __init__(self, spec, graph, session, call_ps, wait):
        self.spec = spec
        self.graph = graph
        self.local = SegmentRunner(graph, session)
        self.call_ps = call_ps
        self.wait = wait
        g = graph
        self.fetches = [g.get_tensor_by_name(n) for n in spec["fetches"]]
        # The payload: what the gated part takes from the ungated part (or the feeds).
        gated_inputs, gated_outputs = set(), set()
        for ph in spec["phases"]:
            for s in ph:
                if s["gated"]:
                    gated_inputs.update(s["inputs"])
                    gated_outputs.update(s["outputs"])
        self.payload_names = sorted(gated_inputs - gated_outputs)

    def run(self, feed_vals, mode="all", env=None, deadline=None, trace=None):
        env = dict(zip(self.spec["feeds"], feed_vals)) if env is None else env
        for ph in self.spec["phases"]:
            pending = []
            local = []
            for s in ph:
                if mode == "ungated" and s["gated"]:
                    continue
                if mode == "gated" and not s["gated"]:
                    continue
                if s["task"] == LOCAL:
                    local.append(s)
                else:
                    vals = [to_host(_get(env, n)) for n in s["inputs"]]
                    pending.append((s, self.call_ps(s["task"], s, vals)))
            for s in local:
                t0 = time.perf_counter()
                outs = self.local.run(s, [_get(env, n) for n in s["inputs"]], deadline)
                env.update(zip(s["outputs"], outs))
                if trace is not None:
                    trace.append({"name": f"segment_{s['id']}", "device": "/job:local",
                                  "kind": "xla", "start": t0, "end": time.perf_counter(),
                                  "ops": list(s["ops"])})
            if pending:
                t0 = time.perf_counter()
                results = self.wait([f for _, f in pending])
                for (s, _), outs in zip(pending, results):
                    env.update(zip(s["outputs"], outs))
                    if trace is not None:
                        trace.append({"name": f"segment_{s['id']}",
                                      "device": f"/job:ps/task:{s['task']}", "kind": "remote",
                                      "start": t0, "end": time.perf_counter(),
                                      "ops": list(s["ops"])})
        fetched = []
        for t in self.fetches:
            if t.name in env:
                fetched.append(env[t.name])
            elif t.op.type == "Const":
                fetched.append(t.op.attrs["value"])
            elif mode != "all":
                fetched.append(None)  # produced by the other part
            else:
                raise errors.InvalidArgumentError(f"cannot fetch '{t.name}' directly", op=t.op)
        if mode == "ungated":
            payload = [to_host(env[n]) for n in self.payload_names]
            return fetched, payload
        return fetched


def _get(env, name):
    try:
        return env[name]
    except KeyError:
        raise errors.InternalError(f"value of '{name}' missing in a distributed step") \
            from None
