"""The placer: assigns every op of a step to a local device.

Rules, in order (as TensorFlow's placer):
1. Colocation groups: ops with a `_class` attr ``loc:@name`` sit with op `name` (a
   variable's handle, its reads, assigns and optimizer updates are one group).
2. Explicit constraints: an op's (or its group's) `device` string, parsed as a
   `DeviceSpec` and matched against the local XLA devices. A device that does not
   exist, or an op with no kernel for the device's type, is an error naming the op,
   the request and the available devices, unless `ConfigProto(allow_soft_placement=
   True)`, which falls back to a device that can run it.
3. Unconstrained ops stay with their inputs (the device of the input with the most
   bytes, so large tensors do not move); ops with no placed input go to the default
   device (the first local device).
Host ops (queues, `py_func`, summaries) run on the host's CPU.
"""

from __future__ import annotations

import sys

import jax

from mylib import errors


def local_devices():
    return jax.local_devices()


def device_name(d):
    """TensorFlow's full name of a `jax.Device`."""
    return f"/job:localhost/replica:0/task:0/device:{d.platform.upper()}:{d.id}"


def _match(spec_str, devices):
    """The devices matching a device string (job/task must be local)."""
    from mylib.devices import DeviceSpec

    spec = DeviceSpec.from_string(spec_str)
    if spec.job not in (None, "localhost") or spec.task not in (None, 0) or \
            spec.replica not in (None, 0):
        return spec, []
    out = []
    for d in devices:
        if spec.device_type is not None and spec.device_type != d.platform.upper():
            continue
        if spec.device_index is not None and spec.device_index != _index(d, devices):
            continue
        out.append(d)
    return spec, out


def _index(d, devices):
    """A device's index among the local devices of its type."""
    same = [x for x in devices if x.platform == d.platform]
    return same.index(d)


def _nbytes(t):
    n = t.shape.num_elements()
    return (n if n is not None else 1 << 20) * max(t.dtype.size, 1)


def place(ops, config=None, devices=None):
    """Returns `{op: jax.Device}` for `ops` (host ops map to None).

    Raises:
      InvalidArgumentError: an explicit device that cannot be satisfied (without soft
        placement), or conflicting constraints inside a colocation group.
    """
    devices = list(devices or local_devices())
    soft = bool(getattr(config, "allow_soft_placement", False))
    log = bool(getattr(config, "log_device_placement", False))
    default = devices[0]
    by_name = {op.name: op for op in ops}

    # 1. Colocation groups (union-find over loc:@ references).
    find, groups = _colocation_groups(ops)
    # 2. The group's constraint: every explicit device in it must agree.
    group_dev = {}
    for root, members in groups.items():
        group_dev[root] = _group_constraint(root, members, by_name)

    placed = {}
    for op in ops:  # ops arrive in topological order
        if op.op_def.host:
            placed[op] = None
            continue
        root = find(op.name)
        if root in group_dev and group_dev[root] is not None:
            req_op, req = group_dev[root]
            placed[op] = _resolve(op, req, devices, soft)
            continue
        # 3. Unconstrained: follow the heaviest placed input.
        best = _heaviest_input_device(op, placed)
        placed[op] = best if best is not None else default
    _follow_group_heads(groups, group_dev, by_name, placed)
    if log:
        for op in ops:
            d = placed[op]
            sys.stderr.write(f"{op.name}: ({op.type}): "
                             f"{'/job:localhost/replica:0/task:0/device:CPU:0 (host)' if d is None else device_name(d)}\n")
    return placed


def _colocation_groups(ops):
    """``(find, groups)``: `find(name)` gives the root of an op's colocation group (ops
    joined by their ``loc:@`` references), `groups` maps each root to its ops."""
    parent = {}

    def find(x):
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    for op in ops:
        for ref in op.attrs.get("_class", ()):
            if ref.startswith("loc:@"):
                other = ref[5:]
                a, b = find(op.name), find(other)
                if a != b:
                    parent[a] = b
    groups = {}
    for op in ops:
        groups.setdefault(find(op.name), []).append(op)
    return find, groups


def _group_constraint(root, members, by_name):
    """``(op, device string)`` of the first explicit device in the group rooted at
    `root` (the head's, when the head is outside this step), None if there is none;
    every other explicit device in the group must agree with it."""
    head = by_name.get(root)
    reqs = [(m, m.device) for m in members if m.device]
    if head is None:
        # The group head is outside this step: use its device from the graph.
        g = members[0].graph
        try:
            h = g.get_operation_by_name(root)
            if h.device:
                reqs.insert(0, (h, h.device))
        except KeyError:
            pass
    chosen = None
    for m, req in reqs:
        if chosen is None:
            chosen = (m, req)
        elif not _compatible(chosen[1], req):
            raise errors.InvalidArgumentError(
                f"cannot colocate '{m.name}' (device {req!r}) with '{chosen[0].name}' "
                f"(device {chosen[1]!r}): they are in one colocation group", op=m)
    return chosen


def _heaviest_input_device(op, placed):
    """The device of `op`'s largest placed input (constants aside), else None."""
    best, best_bytes = None, -1
    for t in op.inputs:
        d = placed.get(t.op)
        if d is not None and t.op.type not in ("Const",):
            b = _nbytes(t)
            if b > best_bytes:
                best, best_bytes = d, b
    return best


def _follow_group_heads(groups, group_dev, by_name, placed):
    """Colocated ops that were unconstrained follow their group's first placed member."""
    for root, members in groups.items():
        if group_dev.get(root) is None and len(members) > 1:
            head = by_name.get(root)
            d = placed.get(head) if head is not None else None
            if d is None:
                d = next((placed[m] for m in members if placed.get(m) is not None), None)
            for m in members:
                if placed.get(m) is not None:
                    placed[m] = d


def _compatible(a, b):
    from mylib.devices import DeviceSpec

    sa, sb = DeviceSpec.from_string(a), DeviceSpec.from_string(b)
    for f in DeviceSpec.__slots__:
        x, y = getattr(sa, f), getattr(sb, f)
        if x is not None and y is not None and x != y:
            return False
    return True


def _resolve(op, req, devices, soft):
    spec, matches = _match(req, devices)
    if matches:
        return matches[0]
    if soft:
        if spec.device_type is not None:
            same_type = [d for d in devices if d.platform.upper() == spec.device_type]
            if same_type:
                return same_type[0]
        cpus = [d for d in devices if d.platform == "cpu"]
        return (cpus or devices)[0]
    avail = [device_name(d) for d in devices]
    raise errors.InvalidArgumentError(
        f"Cannot assign a device for operation '{op.name}': the requested device "
        f"{req!r} is not among the available devices {avail}. Set "
        "ConfigProto(allow_soft_placement=True) to fall back to an available device.",
        op=op)
