"""Lowering: a pruned subgraph is interpreted as a JAX function of its inputs.

`prune` cuts the graph to what fetches need; `prepare` orders the ops (data and control
edges, creation order breaking ties, so effects are deterministic); `interpret` runs each
op's kernel (or its `lower` rule for stateful ops) on JAX values, with variable reads,
writes and random streams going through a `LoweringContext`. Function graphs (control
flow) interpret their bodies with it; the runtime's `compile_step` builds jitted steps
from it.
"""

from __future__ import annotations

import heapq

import jax
import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.tensor_shape import TensorShape
from mylib.core.vjp import apply_vjp, forward_with_vjp, same_forward


def prune(fetch_tensors, target_ops, feeds):
    """Ops needed to compute `fetch_tensors` and run `target_ops`, given that the
    tensors in `feeds` are supplied. Returns them in execution order."""
    fed = set(feeds)
    needed = set()
    stack = [t.op for t in fetch_tensors if t not in fed] + list(target_ops)
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        for t in op.inputs:
            if t not in fed:
                stack.append(t.op)
        stack.extend(op.control_inputs)
    return topo_order(needed, fed)


def topo_order(ops, fed=()):
    """Kahn's algorithm over data and control edges; ties broken by creation order."""
    fed = set(fed)
    indeg = {}
    users = {}
    for op in ops:
        deps = set()
        for t in op.inputs:
            if t not in fed and t.op in ops:
                deps.add(t.op)
        for c in op.control_inputs:
            if c in ops:
                deps.add(c)
        indeg[op] = len(deps)
        for d in deps:
            users.setdefault(d, []).append(op)
    heap = [(op._id, op) for op, n in indeg.items() if n == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, op = heapq.heappop(heap)
        order.append(op)
        for u in users.get(op, ()):
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(heap, (u._id, u))
    if len(order) != len(ops):
        raise errors.InvalidArgumentError("the graph has a cycle among the ops of this step")
    return order


class LoweringContext:
    """What stateful ops see while a step is traced: the variables' current values
    (`read_var` / `write_var`), their initialization state, and random keys."""

    def __init__(self, state, counter, seed_base, rng_ops=()):
        self.state = state
        self.written = []
        self._written_set = set()
        self.status_keys = []
        self.uses_rng = False
        self.counter = counter
        self.seed_base = seed_base
        self.op = None
        # Per-op run counters: `counter` is a vector with one entry per name in
        # `rng_ops` (the random ops found by the step's discovery trace).
        self._op_counters = {n: counter[i] for i, n in enumerate(rng_ops)} if rng_ops else {}
        self.rng_ops = []
        # Index checks of the step (see `check_indices`): one entry per checked index
        # array, ``(op, nd, any_bad, position of the first bad one, its index, bounds)``;
        # and those of indices that are the step's inputs, checked before it runs:
        # ``(op, input position, index shape, bounds, nd)``. `inputs` maps the step's
        # input tensors to their positions (set by the step's builder).
        self.checks = []
        self.input_checks = []
        self.inputs = {}
        self.index_checks = True  # False: a caller that never waits on the step
        # Variables whose last write was a row update gated by the first n checks
        # (see `gate_rows`): key -> n.
        self.gated = {}

    def check_indices(self, op, tensor, indices, bounds, nd=False):
        """Records that `indices` (the value of `tensor`: an int array; with `nd`, its
        last axis holds one index per entry of `bounds`) must lie in ``[0, bound)``.

        Indices known while tracing are checked now (InvalidArgumentError). Indices
        that are an input of the step (a fed placeholder, maybe reshaped) are checked
        by the runtime before the step runs, on the host. Others give the step small
        outputs that the runtime reads after the step, failing it (with every variable
        as it was) when one is out of range, as TensorFlow does on CPU."""
        bounds = tuple(int(b) for b in bounds)
        if np.size(indices) == 0:
            return
        if isinstance(indices, (np.ndarray, np.generic)):
            idx = np.asarray(indices)
            bad = (idx < 0) | (idx >= np.asarray(bounds))
            bad = bad.any(-1) if nd else bad
            if bad.any():
                pos = np.unravel_index(int(np.argmax(bad.reshape(-1))), bad.shape)
                raise errors.InvalidArgumentError(
                    index_error_message(pos, idx[pos], bounds, nd), op=op)
            return
        src = _input_source(tensor, self.inputs)
        if src is not None:
            self.input_checks.append((op, src, tuple(np.shape(indices)), bounds, nd))
            return
        idx = jnp.asarray(indices)
        hi = jnp.asarray(bounds, idx.dtype) if nd else bounds[0]
        bad = (idx < 0) | (idx >= hi)
        if nd:
            bad = jnp.any(bad, axis=-1)
        flat = bad.reshape(-1)
        first = jax.lax.argmax(flat, 0, np.int32)
        rows = idx.reshape(flat.shape[0], -1) if nd else idx.reshape(-1, 1)
        pos = jnp.unravel_index(first, bad.shape) if bad.ndim else ()
        self.checks.append((op, nd, jnp.any(flat),
                            jnp.stack([jnp.asarray(p, np.int32) for p in pos])
                            if pos else jnp.zeros(0, np.int32),
                            jax.lax.dynamic_index_in_dim(rows, first, 0, keepdims=False),
                            np.asarray(bounds, np.int32)))

    def gate_rows(self, indices, rows):
        """`indices` of rows to update, all moved past the end (so the update drops
        them) when an index check of the step so far failed: a row update of a big
        table is gated at the cost of its indices, not of a select over the table.
        The next `write_var(..., gated=True)` records it."""
        if not self.checks:
            return indices
        ok = ~jnp.any(jnp.stack([c[2] for c in self.checks]))
        return jnp.where(ok, indices, rows)

    def read_var(self, op, ref):
        try:
            return self.state[ref.key]
        except KeyError:
            raise errors.FailedPreconditionError(
                f"Attempting to use uninitialized value {ref.key}: run its initializer "
                "(e.g. ml.global_variables_initializer()) first", op=op) from None

    def write_var(self, op, ref, value, gated=False):
        hop = ref.op
        dt = _dtypes.as_dtype(hop.attrs["dtype"])
        value = jnp.asarray(value)
        if value.dtype != dt.np:
            value = value.astype(dt.np)
        shape = TensorShape(hop.attrs["shape"])
        if not shape.is_compatible_with(value.shape):
            raise errors.InvalidArgumentError(
                f"cannot assign a value of shape {TensorShape(value.shape)} to variable "
                f"'{ref.key}' of shape {shape}", op=op)
        self.state[ref.key] = value
        if gated:
            self.gated[ref.key] = len(self.checks)
        else:
            self.gated.pop(ref.key, None)
        if ref.key not in self._written_set:
            self._written_set.add(ref.key)
            self.written.append(ref.key)

    def is_initialized(self, ref):
        if ref.key not in self.status_keys:
            self.status_keys.append(ref.key)
        return ref.key in self.state

    def rng_key(self, op):
        """A PRNG key for `op` in this run: fixed by its (seed, seed2) attrs and how
        many times this op has run in this session (as TensorFlow 1's stateful random
        kernels), so a fresh session replays the same sequence and two ops with the
        same seeds give the same values."""
        self.uses_rng = True
        name = rng_op_key(op)
        if name not in self.rng_ops:
            self.rng_ops.append(name)
        seed = int(op.attrs.get("seed", 0) or 0)
        seed2 = int(op.attrs.get("seed2", 0) or 0)
        if seed == 0 and seed2 == 0:
            base = (self.seed_base * 1000003 + op._id) % (2 ** 62)
        else:
            base = (seed * 1000003 + seed2) % (2 ** 62)
        key = jax.random.key(base)
        return jax.random.fold_in(key, self._op_counters.get(name, 0))


# Ops that pass integer values through unchanged, in order (reshapes and casts between
# integer types): indices reached from a step input through them are that input's.
_PASS_THROUGH = frozenset({"Identity", "Reshape", "ExpandDims", "Squeeze", "StopGradient",
                           "Cast"})


def _input_source(tensor, inputs):
    """The position in `inputs` of the step input whose values `tensor` holds in the
    same order, or None."""
    t = tensor
    while t is not None:
        i = inputs.get(t)
        if i is not None:
            return i
        op = t.op
        if op.type not in _PASS_THROUGH or not op.inputs or \
                not op.inputs[0].dtype.is_integer:
            return None
        t = op.inputs[0]
    return None


def check_input_indices(input_checks, values):
    """Raises InvalidArgumentError naming the op for the first index out of range among
    the step inputs that `input_checks` (`LoweringContext.input_checks`) name, with
    `values` the step's input values; returns when all are in range."""
    for op, i, shape, bounds, nd in input_checks:
        idx = np.asarray(values[i])
        if idx.size == int(np.prod(shape)):
            idx = idx.reshape(shape)  # positions as the op sees them
        bad = (idx < 0) | (idx >= (np.asarray(bounds) if nd else bounds[0]))
        if nd:
            bad = bad.any(-1)
        if bad.any():
            pos = np.unravel_index(int(np.argmax(bad.reshape(-1))), bad.shape)
            raise errors.InvalidArgumentError(
                index_error_message(pos, idx[pos], bounds, nd), op=op)


def index_error_message(pos, value, bounds, nd):
    """TensorFlow's words for an index out of range: ``indices[3] = 7 is not in [0, 5)``
    (``indices[1] = [7, 0] does not index into shape [5,3]`` for nd indices)."""
    where = ",".join(str(int(p)) for p in pos)
    if nd:
        vals = ", ".join(str(int(v)) for v in np.asarray(value).reshape(-1))
        return (f"indices[{where}] = [{vals}] does not index into shape "
                f"[{','.join(map(str, bounds))}]")
    return f"indices[{where}] = {int(np.asarray(value).reshape(-1)[0])} is not in " \
        f"[0, {bounds[0]})"


def rng_op_key(op):
    """The name under which a session counts the runs of random op `op` (function
    graphs prefix their own name: op names repeat across them)."""
    fg = getattr(op.graph, "name", None)
    return f"{fg}::{op.name}" if isinstance(fg, str) else op.name


def _kernel_attrs(op):
    return {k: v for k, v in op.attrs.items() if not k.startswith("_")}


def prepare(ops, fed=()):
    """Per-op data that `interpret` needs, computed once per step (or function graph):
    ``(op, kernel, lower, kernel_attrs, outputs_fed, shared)`` in execution order.

    `shared` pairs a VJP op with the op it differentiates when both are in `ops`
    (``("forward", op)`` on the forward op, ``("vjp", forward_op)`` on the VJP op): the
    forward op then runs once under `jax.vjp` and the VJP op reuses its residuals, where
    it would otherwise run the forward computation again (a whole `lax.scan` for an RNN).
    """
    fed = set(fed)
    shared = _shared_vjps(ops)
    prepared = []
    for op in ops:
        od = op.op_def
        outs_fed = [o in fed for o in op.outputs]
        prepared.append((op, od.kernel, od.lower, _kernel_attrs(op), outs_fed,
                         shared.get(op)))
    return prepared


def _shared_vjps(ops):
    """``{op: ("forward", op) or ("vjp", forward_op)}`` for the VJP ops of `ops` whose
    forward op is in `ops` too (first such op in order)."""
    vjps = [op for op in ops if op.type == "VJP"]
    if not vjps:
        return {}
    candidates = {}
    for op in ops:
        od = op.op_def
        if od.kernel is not None and od.lower is None and op.type != "VJP":
            candidates.setdefault((op.type, len(op.inputs)), []).append(op)
    shared = {}
    for v in vjps:
        a = v.attrs
        for f in candidates.get((a["forward_type"], a["n_inputs"]), ()):
            if same_forward(v, f):
                shared[v] = ("vjp", f)
                shared[f] = ("forward", f)
                break
    return shared


# Integer values at most this large are folded while tracing (see `_folds`).
_FOLD_ELEMENTS = 4096


def _folds(op, args):
    """Whether `op` computes integer or boolean values from values all known while
    tracing (numpy: constants, shapes, inputs a step is compiled for): it then runs
    now, so sizes computed from them (``reduce_max(lengths)``, ``n * 2``) stay known
    to XLA, as shape arithmetic does."""
    if op.op_def.stateful or op.op_def.host:
        return False
    for a in args:
        if not isinstance(a, (np.ndarray, np.generic)) or a.size > _FOLD_ELEMENTS:
            return False
    for o in op.outputs:  # small integer results only: sizes, not data
        if not (o.dtype.is_integer or o.dtype.is_bool) or not o.shape.is_fully_defined() \
                or o.shape.num_elements() > _FOLD_ELEMENTS:
            return False
    return True


def _fold(kernel, args, kattrs):
    with jax.ensure_compile_time_eval():
        out = kernel(*args, **kattrs)
    if isinstance(out, (tuple, list)):
        return type(out)(np.asarray(o) for o in out)
    return np.asarray(out)


def interpret(prepared, env, ctx):
    """Runs the ops of `prepare(...)` in order, reading inputs from and writing outputs
    to `env` (a dict Tensor -> value). Stateful ops go through `ctx`. Used for a step and
    for the function graphs of control flow (cond branches, loop bodies)."""
    residuals = {}  # forward op -> what its VJP op needs (this run's values only)
    for op, kernel, lower, kattrs, outs_fed, shared in prepared:
        if op.outputs and all(outs_fed):
            # Every output is fed: the feed replaces the op's computation (a fed
            # placeholder or read reached only through a control edge included).
            continue
        ctx.op = op
        args = [env[t] for t in op.inputs]
        try:
            if op.op_def.index_check is not None and getattr(ctx, "index_checks", False):
                # Only a step's own ops: function graphs (loop bodies) are traced inside
                # other transformations, and their indices stay unchecked.
                for k, bounds, nd in op.op_def.index_check(ctx, op, *args, **kattrs):
                    ctx.check_indices(op, op.inputs[k], args[k], bounds, nd)
            if lower is not None:
                out = lower(ctx, op, *args)
            elif shared is None and args and _folds(op, args):
                out = _fold(kernel, args, kattrs)
            elif shared is None:
                out = kernel(*args, **kattrs)
            elif shared[0] == "forward":
                dmask = tuple(bool(t.dtype.is_differentiable) for t in op.inputs)
                out, residuals[op] = forward_with_vjp(args, op.type, kattrs.items(), dmask)
            elif shared[1] in residuals:
                out = apply_vjp(residuals[shared[1]], args[kattrs["n_inputs"]:])
            else:  # the forward op's outputs were all fed: run the forward pass here
                out = kernel(*args, **kattrs)
        except errors.OpError as e:
            if e.op is None:
                raise type(e)(e.message, op=op) from None
            raise
        except (TypeError, ValueError, IndexError, ZeroDivisionError) as e:
            strings = [t.name for t, a in zip(op.inputs, args)
                       if isinstance(a, np.ndarray) and a.dtype == object]
            if strings:
                raise errors.InvalidArgumentError(
                    f"input '{strings[0]}' is a string tensor: string tensors are host "
                    "values and XLA ops cannot take them. Use the string ops (tf.strings.*, "
                    "tf.decode_csv, tf.string_to_number), which run on the host",
                    op=op) from None
            raise errors.InvalidArgumentError(
                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                op=op, show_inputs=True) from None
        n = len(op.outputs)
        if n == 1:
            if isinstance(out, (tuple, list)) and len(out) == 1:
                out = out[0]
            if not outs_fed[0]:
                env[op.outputs[0]] = out
        elif n:
            for o, v, f in zip(op.outputs, out, outs_fed):
                if not f:
                    env[o] = v
    return env
