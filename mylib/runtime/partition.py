"""Cutting a step's ops into parts: what the device executor (parts keyed by device,
`mylib.runtime.executor.SegmentedPlan`) and the parameter-server plan (parts keyed by
task, `mylib.distribute.ps_plan.build_spec`) share.

Each op gets a *phase*: the least number not below any op it depends on, and one
more than a source whose value (or, for a control edge, whose completion) must cross
from another part. The ops of one part in one phase form a *segment*; the tensors a
segment reads from outside it and those it hands out are the cut edges (TensorFlow's
`_Send`/`_Recv` pairs).
"""

from __future__ import annotations

__all__ = ["FREE_OPS", "assign_phases", "phase_groups", "consumers_of", "cut_inputs",
           "cut_outputs"]

# Ops whose value is cheap and position-free: copied into every part that uses them
# instead of being passed between parts (a variable handle cannot leave XLA).
FREE_OPS = frozenset({"VarHandleOp", "Const"})


def assign_phases(ops, fed, crosses, data_sources=None, skip=frozenset()):
    """{op: phase} for the step's `ops`, in execution order.

    Args:
      ops: the step's ops, in execution order.
      fed: the set of fed tensors (their producers impose nothing).
      crosses: ``crosses(src, op, is_data)``: whether `op` waits one phase more for
        `src`, a source of its values (`is_data`) or one of its control inputs.
      data_sources: ``data_sources(op)``: the ops whose values `op` uses; default the
        producers of its unfed inputs.
      skip: ops that impose no phase (as free ops and ops outside `ops` do not).
    """
    in_set = set(ops)
    phase = {}
    for op in ops:
        data = data_sources(op) if data_sources is not None else \
            [t.op for t in op.inputs if t not in fed]
        p = 0
        for src in data + list(op.control_inputs):
            if src not in in_set or src.type in FREE_OPS or src in skip:
                continue
            p = max(p, phase[src] + (1 if crosses(src, op, src in data) else 0))
        phase[op] = p
    return phase


def phase_groups(ops, phase, part_of, skip=frozenset()):
    """A list, one entry per phase, of ``{part: [ops]}``: the ops (free ops and those
    in `skip` left out) grouped by ``part_of(op)``, each group in `ops`' order and the
    parts of a phase in the order of their first op."""
    kept = [op for op in ops if op.type not in FREE_OPS and op not in skip]
    groups = [{} for _ in range(1 + max((phase[op] for op in kept), default=0))]
    for op in kept:
        groups[phase[op]].setdefault(part_of(op), []).append(op)
    return groups


def consumers_of(ops):
    """{tensor: [the ops of `ops` that read it]}."""
    consumers = {}
    for op in ops:
        for t in op.inputs:
            consumers.setdefault(t, []).append(op)
    return consumers


def cut_inputs(members, fed):
    """The tensors the ops `members` (in order) read from outside themselves, each once,
    in order of first use: fed tensors and the outputs of other ops, except free ops'
    (a segment computes those itself)."""
    mset = set(members)
    inputs, seen = [], set()
    for op in members:
        for t in op.inputs:
            if t not in seen and (t in fed or (t.op not in mset and t.op.type not in FREE_OPS)):
                seen.add(t)
                inputs.append(t)
    return inputs


def cut_outputs(producers, members, consumers, fetched):
    """The outputs of `producers` that leave the segment of `members` (a set): those
    fetched and those read by an op outside it (`consumers`: see `consumers_of`)."""
    return [o for op in producers for o in op.outputs
            if o in fetched or any(c not in members for c in consumers.get(o, ()))]
