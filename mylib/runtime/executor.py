"""The general executor: a step split into XLA clusters and host ops.

A step whose ops all compile for one device runs as one `jax.jit` call (the Session's
fast path). Otherwise the pruned graph is cut into *segments*: each op gets a phase
number such that an XLA op that consumes a host op's output (or a value from another
device) lands in a later phase. A phase runs its XLA clusters (one per device, each
compiled once with `jax.jit`, independent ones overlapping through JAX's asynchronous
dispatch), then its host ops in order, in Python, outside XLA (queues, `py_func`,
printing, summaries). Values crossing devices move with one `jax.device_put` per tensor
and destination: the explicit `_Send`/`_Recv` pairs of the partitioned graph.

Variables are read and written per cluster under the session lock, so concurrent
steps never lose an update; if a later segment of the step fails, the variables this
step wrote are put back (unless another step has written them since).
"""

from __future__ import annotations

import collections
import threading
import time

import jax
import numpy as np

from mylib import errors
from mylib.core.lowering import check_input_indices
from mylib.runtime import compile as _compile
from mylib.runtime.compile import compile_step, raise_failed_check, value_key
from mylib.runtime.partition import (FREE_OPS, assign_phases, consumers_of, cut_inputs,
                                     cut_outputs, phase_groups)

HOST = "host"


def is_host_op(op):
    return op.op_def.host


class HostContext:
    """What host ops see: the session's resources (queues, writers), the step's
    deadline and the session's cancellation.

    Attributes:
      session: the running `Session`.
      deadline: `time.monotonic()` value after which blocking raises
        `DeadlineExceededError`, or None.
    """

    def __init__(self, session, deadline):
        self.session = session
        self.deadline = deadline

    def resource(self, key, factory):
        """The session's resource `key`, created by `factory()` on first use."""
        return self.session._get_resource(key, factory)

    def wait(self, cond, predicate, what):
        """Waits on the `threading.Condition` `cond` (held by the caller) until
        `predicate()` holds. Raises CancelledError when the session closes and
        DeadlineExceededError past the step's deadline."""
        while not predicate():
            if self.session._cancelled.is_set():
                raise errors.CancelledError(f"{what}: the session was closed")
            timeout = 0.1
            if self.deadline is not None:
                left = self.deadline - time.monotonic()
                if left <= 0:
                    raise errors.DeadlineExceededError(f"{what}: timed out")
                timeout = min(timeout, left)
            cond.wait(timeout)


class _Cluster:
    __slots__ = ("ops", "device", "inputs", "outputs", "phase", "name", "touched",
                 "programs", "need_static")

    def __init__(self, ops, device, inputs, outputs, phase, name):
        self.ops = ops
        self.device = device
        self.inputs = inputs
        self.outputs = outputs
        self.phase = phase
        self.name = name
        self.touched = [op.attrs["shared_name"] for op in ops if op.type == "VarHandleOp"]
        # Compiled programs by input signature (see `_program_key`), least recently
        # used first out; and the inputs found to be needed as compile-time constants.
        self.programs = collections.OrderedDict()
        self.need_static = frozenset()


class _Program:
    """One compiled program of a cluster: for one signature of its inputs."""

    __slots__ = ("fn", "rw_keys", "ro_keys", "written_keys", "static", "rng_ops",
                 "static_inputs", "checks", "n_checks", "input_checks")


class SegmentedPlan:
    """A step as an ordered list of segments (XLA clusters and host ops)."""

    def __init__(self, ops, feeds, fetch_tensors, device_of, default_device,
                 index_checks=True):
        self.feeds = tuple(feeds)
        self.index_checks = index_checks
        self.fetch_tensors = list(fetch_tensors)
        self.segments = []
        self.transfers = []  # (tensor, from_device, to_device): the _Send/_Recv pairs
        fed = set(feeds)
        dev = {op: HOST if is_host_op(op) else device_of(op) for op in ops}
        # An XLA op waits a phase for a value from another device or the host; a host op
        # never waits, as the host ops of a phase run after its clusters.
        phase = assign_phases(ops, fed,
                              lambda src, op, _: dev[op] != HOST and dev[src] != dev[op])
        consumers = consumers_of(ops)
        fetch_set = set(fetch_tensors)
        for p, by_dev in enumerate(phase_groups(ops, phase, dev.get)):
            hosts = by_dev.pop(HOST, [])
            for d, cops in by_dev.items():
                self.segments.append(self._make_cluster(cops, d, p, fed, consumers,
                                                        fetch_set, dev))
            self.segments.extend(hosts)
        # Free ops that something fetches directly (e.g. a constant) or host ops use.
        self._free_values = [op for op in ops if op.type in FREE_OPS]
        self.has_host = any(not isinstance(s, _Cluster) for s in self.segments)
        self.n_clusters = sum(1 for s in self.segments if isinstance(s, _Cluster))

    def _make_cluster(self, cops, device, phase, fed, consumers, fetch_set, dev):
        members = set(cops)
        # Pull in the free ops (handles, constants) the cluster reads.
        for op in cops:
            for t in op.inputs:
                if t not in fed and t.op.type in FREE_OPS and t.op not in members:
                    members.add(t.op)
        all_ops = sorted(members, key=lambda o: o._id)
        inputs = cut_inputs(all_ops, fed)
        outputs = cut_outputs(cops, members, consumers, fetch_set)
        for t in inputs:
            src = t.op
            if t not in fed and src in dev and dev[src] not in (HOST, device):
                self.transfers.append((t, dev[src], device))
        from mylib.core.lowering import topo_order

        ordered = topo_order(set(all_ops), set(inputs))
        return _Cluster(ordered, device, inputs, outputs, phase,
                        f"cluster_{phase}_{getattr(device, 'id', device)}")

    # --- execution ---
    def run(self, session, feed_vals, deadline=None, trace=None):
        env = dict(zip(self.feeds, feed_vals))
        store = session.variable_store.values
        undo = {}
        mine = {}
        hctx = HostContext(session, deadline)
        static_env = set()  # the tensors whose values here are compile-time constants
        try:
            for seg in self.segments:
                t0 = time.perf_counter() if trace is not None else 0.0
                if isinstance(seg, _Cluster):
                    self._run_cluster(session, seg, env, store, undo, mine, static_env)
                    if trace is not None:
                        jax.block_until_ready([env[o] for o in seg.outputs])
                        trace.append({"name": seg.name, "device": str(seg.device),
                                      "kind": "xla", "start": t0, "end": time.perf_counter(),
                                      "ops": [o.name for o in seg.ops]})
                else:
                    self._run_host(hctx, seg, env)
                    if trace is not None:
                        trace.append({"name": seg.name, "device": "/host:CPU", "kind": "host",
                                      "start": t0, "end": time.perf_counter(),
                                      "ops": [seg.name], "type": seg.type})
        except BaseException:
            with session.variable_store.lock:
                for k, old in undo.items():
                    if store.get(k) is mine.get(k):
                        if old is None:
                            store.pop(k, None)
                        else:
                            store[k] = old
            raise
        return [env[t] if t in env else self._free_value(t) for t in self.fetch_tensors]

    def _free_value(self, t):
        op = t.op
        if op.type == "Const":
            return op.attrs["value"]
        raise errors.InvalidArgumentError(f"cannot fetch '{t.name}' directly", op=op)

    def _run_cluster(self, session, seg, env, store, undo, mine, static_env):
        args = [env[t] for t in seg.inputs]
        for t, v in zip(seg.inputs, args):
            if isinstance(v, np.ndarray) and v.dtype == object:
                _string_into_xla(seg, t)
        # Values known while tracing the cluster that made them (a `shape`, shape
        # arithmetic) stay constants here, as they were in the unsplit step; other
        # inputs become constants when the cluster cannot compile without them.
        static = seg.need_static.union(
            i for i, t in enumerate(seg.inputs) if t in static_env)
        key = _program_key(args, static)
        with session.variable_store.lock:
            prog = seg.programs.get(key)
            if prog is None:
                prog = self._build_cluster(session, seg, args, static)
                key = _program_key(args, prog.static_inputs)
                seg.programs[key] = prog
                if len(seg.programs) > _compile.MAX_SPECIALIZATIONS:
                    seg.programs.popitem(last=False)
            else:
                seg.programs.move_to_end(key)
            if prog.input_checks:  # indices that are cut edges or feeds: checked first
                check_input_indices(prog.input_checks, args)
            dyn = []
            for i, v in enumerate(args):
                if i in prog.static_inputs:
                    continue
                if seg.device is not None and isinstance(v, jax.Array) and \
                        seg.device not in v.devices():
                    v = jax.device_put(v, seg.device)  # the _Recv of a cut edge
                dyn.append(v)
            try:
                var_vals = [store[k] for k in prog.rw_keys] + [store[k] for k in prog.ro_keys]
            except KeyError as e:
                raise errors.FailedPreconditionError(
                    f"Attempting to use uninitialized value {e.args[0]}") from None
            counter = (session.variable_store.take_rng_counts(prog.rng_ops),) \
                if prog.rng_ops else ()
            outs = prog.fn(*var_vals, *dyn, *counter)
            n = len(seg.outputs)
            for k, v in zip(prog.written_keys, outs[n + prog.n_checks:]):
                if k not in undo:
                    undo[k] = store.get(k)
                store[k] = v
                mine[k] = v
        if prog.n_checks:  # an index out of range: this cluster wrote old values back
            raise_failed_check(prog.checks, outs[n:n + prog.n_checks])
        for o, v in zip(seg.outputs, outs[:n]):
            if o in prog.static:
                env[o] = prog.static[o]
                static_env.add(o)
            else:
                env[o] = v

    def _build_cluster(self, session, seg, args, static):
        # Multi-segment steps do not donate: a later failure must be able to put the
        # old values back. A step of one cluster has no later segment: its written
        # variables' buffers are donated, updated in place (as the Session's fast path).
        single = len(self.segments) == 1
        cs = compile_step(seg.ops, seg.inputs, seg.outputs, session.variable_store.values,
                          session.variable_store.seed_base, args, donate=single,
                          static_inputs=sorted(static), static_outputs=True,
                          index_checks=self.index_checks)
        seg.need_static = seg.need_static.union(cs.static_inputs)
        prog = _Program()
        prog.rw_keys, prog.ro_keys, prog.written_keys = \
            cs.rw_keys, cs.ro_keys, cs.written_keys
        prog.static = {seg.outputs[i]: v for i, v in cs.static.items()}
        prog.rng_ops = cs.rng_ops if cs.uses_rng else ()
        prog.static_inputs = frozenset(cs.static_inputs)
        prog.checks, prog.n_checks = cs.checks, cs.n_checks
        prog.input_checks = cs.input_checks
        jitted = cs.fn
        if seg.device is not None:
            dev = seg.device

            def on_device(*a):
                with jax.default_device(dev):
                    return jitted(*a)

            prog.fn = on_device
        else:
            prog.fn = jitted
        return prog

    def _run_host(self, hctx, op, env):
        vals = []
        for t in op.inputs:
            v = env.get(t)
            if v is None and t not in env:
                src = t.op
                v = src.op_def.lower(hctx, src) if src.op_def.lower is not None else \
                    self._free_value(t)
                env[t] = v
            vals.append(v)
        od = op.op_def
        try:
            if od.lower is not None:
                out = od.lower(hctx, op, *vals)
            else:
                out = od.kernel(*[np.asarray(v) for v in vals],
                                **{k: a for k, a in op.attrs.items() if not k.startswith("_")})
        except errors.OpError as e:
            if e.op is None:
                raise type(e)(e.message, op=op) from None
            raise
        except (TypeError, ValueError, IndexError, ZeroDivisionError, KeyError) as e:
            raise errors.InvalidArgumentError(f"{type(e).__name__}: {e}", op=op) from None
        n = len(op.outputs)
        if n == 1:
            if isinstance(out, (tuple, list)) and len(out) == 1:
                out = out[0]
            env[op.outputs[0]] = out
        elif n:
            for o, v in zip(op.outputs, out):
                env[o] = v

    def partition_graphs(self):
        """The partitioned step as one `GraphDef` per XLA cluster (its device's part of
        the graph), with an explicit `_Recv` node for every tensor the cluster receives
        from another device (or the host) and a `_Send` node for every tensor it sends,
        one per tensor and destination, as TensorFlow's partitioner writes them.
        `RunMetadata.partition_graphs` holds these after a traced run."""
        from mylib.core import graph_io

        clusters = [s for s in self.segments if isinstance(s, _Cluster)]
        dev_of = {}
        for c in clusters:
            for op in c.ops:
                if op.type not in FREE_OPS:
                    dev_of[op] = c.device
        fed = set(self.feeds)
        out = []
        for c in clusters:
            nodes = graph_io._op_nodes(c.ops, False)
            here = str(c.device)
            renames = {}
            recvs = []
            for t in c.inputs:
                if t in fed:
                    continue
                src = "/host:CPU" if t.op.op_def.host else str(dev_of.get(t.op, "?"))
                name = f"_recv_{t.op.name}_{t.value_index}".replace("/", "_")
                renames[graph_io._tensor_ref(t)] = name
                recvs.append(graph_io.NodeDef(name, "_Recv", [], device=here, attr={
                    "tensor_name": t.name, "send_device": src, "recv_device": here,
                    "T": t.dtype.name}))
            for n in nodes:
                n.input = [renames.get(i, i) for i in n.input]
            sends = []
            for t, a, b in self.transfers:
                if a == c.device:
                    name = f"_send_{t.op.name}_{t.value_index}_to_{b}".replace("/", "_")
                    sends.append(graph_io.NodeDef(name, "_Send", [graph_io._tensor_ref(t)],
                                                  device=here, attr={
                                                      "tensor_name": t.name, "send_device": here,
                                                      "recv_device": str(b), "T": t.dtype.name}))
            out.append(graph_io.GraphDef(recvs + nodes + sends))
        return out

    def describe(self):
        """The partitioned step: segments in order, with the cut edges' `_Send`/`_Recv`
        pairs, as plain data (for inspection and tests)."""
        out = []
        for s in self.segments:
            if isinstance(s, _Cluster):
                out.append({"kind": "xla", "name": s.name, "device": str(s.device),
                            "phase": s.phase, "ops": [o.name for o in s.ops],
                            "inputs": [t.name for t in s.inputs],
                            "outputs": [t.name for t in s.outputs]})
            else:
                out.append({"kind": "host", "name": s.name, "type": s.type})
        sends = [{"tensor": t.name, "send_device": str(a), "recv_device": str(b)}
                 for t, a, b in self.transfers]
        return {"segments": out, "transfers": sends}


def _dtype_of(v):
    return v.dtype if hasattr(v, "dtype") else np.asarray(v).dtype


def _string_into_xla(seg, t):
    """Raises InvalidArgumentError: string tensor `t` reaches an XLA op of `seg`."""
    op = next(o for o in seg.ops if t in o.inputs)
    raise errors.InvalidArgumentError(
        f"input '{t.name}' is a string tensor: string tensors are host values and XLA "
        "ops cannot take them. Use the string ops (tf.strings.*, tf.decode_csv, "
        "tf.string_to_number), which run on the host, to turn strings into numbers "
        "first", op=op)


def _program_key(args, static):
    """A cluster's program key: the values of its static inputs, the shapes and dtypes
    of the others (what its static outputs may depend on)."""
    return tuple(value_key(a) if i in static else (np.shape(a), str(_dtype_of(a)))
                 for i, a in enumerate(args))


_lock = threading.Lock()
