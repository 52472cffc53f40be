"""The chief's periodic checkpoint of a parameter-server cluster, one file per
parameter server, from which a restarted parameter server gets its variables back.

Layout under ``checkpoint_dir``::

    ps-<step>/task-<k>.ckpt    the variables of /job:ps/task:k (mylib's checkpoint
                               format: checksummed, written to a temporary name and
                               renamed)
    ps_checkpoint              JSON naming the newest complete checkpoint; replaced
                               atomically after all its files are written, so a crash
                               mid-save leaves the previous one in force.
"""

from __future__ import annotations

import json
import os
import shutil

from mylib import errors
from mylib._fileio import atomic_write
from mylib.runtime.saver import read_checkpoint_file, write_checkpoint_file

POINTER = "ps_checkpoint"
KEEP = 2


def _task_vars(strategy):
    ext = strategy.extended
    g = ext.graph()
    by_task = {}
    if g is None:
        return by_task
    for key in list(g._variables):
        k = ext.task_of_key(key)
        if k is not None:
            by_task.setdefault(k, []).append(key)
    return by_task


def save(strategy, checkpoint_dir, step):
    """Writes every parameter server's variables (those initialized) as checkpoint
    `step`; returns its directory. The caller holds the strategy's exclusive section
    (no step in flight), so the files of all servers hold the same steps.

    Raises:
      UnavailableError: a parameter server failed (Ray's actor errors mapped).
    """
    import ray

    from mylib.distribute.parameter_server import _check_state, _rget

    os.makedirs(checkpoint_dir, exist_ok=True)
    ext = strategy.extended
    ext.ship_graph()
    _same_incarnations(strategy)
    by_task = _task_vars(strategy)
    refs = {k: ext.ps_handles[k].get_values.remote(keys) for k, keys in by_task.items()}
    sub = os.path.join(checkpoint_dir, f"ps-{int(step)}")
    os.makedirs(sub, exist_ok=True)
    files = {}
    for k, keys in by_task.items():
        vals = _rget(ray, refs[k], max(strategy._rpc_timeout, 120),
                     f"/job:ps/task:{k} (saving a checkpoint)")
        _check_state(vals, k)
        arrays = {key: v for key, v in zip(keys, vals) if v is not None}
        path = os.path.join(sub, f"task-{k}.ckpt")
        write_checkpoint_file(path, arrays)
        files[str(k)] = os.path.relpath(path, checkpoint_dir)
    _same_incarnations(strategy)  # no server restarted while being read
    pointer = {"step": int(step), "tasks": files}
    atomic_write(os.path.join(checkpoint_dir, POINTER), json.dumps(pointer))
    _prune(checkpoint_dir, int(step))
    return sub


def _same_incarnations(strategy):
    """Raises UnavailableError if a parameter server restarted (lost its values)
    since the strategy last saw it: such values must not become a checkpoint."""
    import ray

    from mylib.distribute.parameter_server import _rget

    ext = strategy.extended
    seen = ext.recovery.incarnations
    pings = _rget(ray, [h.ping.remote() for h in ext.ps_handles], strategy._rpc_timeout,
                  "parameter servers (saving a checkpoint)")
    for k, p in enumerate(pings):
        if seen is not None and p[4] != seen[k]:
            raise errors.UnavailableError(
                f"parameter server /job:ps/task:{k} restarted and lost its state; it "
                "must be restored before a checkpoint is written")


def _prune(checkpoint_dir, newest):
    steps = []
    for name in os.listdir(checkpoint_dir):
        if name.startswith("ps-") and name[3:].isdigit():
            steps.append(int(name[3:]))
    for st in sorted(steps)[:-KEEP]:
        if st != newest:
            shutil.rmtree(os.path.join(checkpoint_dir, f"ps-{st}"), ignore_errors=True)


def latest(checkpoint_dir):
    """The newest complete checkpoint's pointer ``{"step", "tasks"}``, or None."""
    try:
        with open(os.path.join(checkpoint_dir, POINTER), "rb") as f:
            return json.loads(f.read().decode())
    except FileNotFoundError:
        return None
    except ValueError as e:
        raise errors.DataLossError(f"unreadable {POINTER} in {checkpoint_dir}: {e}") from None


def _read_all(checkpoint_dir, ptr):
    return {int(k): read_checkpoint_file(os.path.join(checkpoint_dir, rel))
            for k, rel in ptr["tasks"].items()}


def restore_all(strategy, checkpoint_dir, ptr=None):
    """Sets the variables of *every* parameter server from one checkpoint (`ptr`,
    default the newest), so that together they hold a state that existed; every file
    is read and checked before any server changes. Variables the checkpoint does not
    hold keep their values. Returns ``(step, keys restored)``.

    Raises:
      NotFoundError: there is no checkpoint. DataLossError: a file is damaged.
      UnavailableError: a parameter server failed meanwhile.
    """
    import ray

    from mylib.distribute.parameter_server import _rget

    ptr = latest(checkpoint_dir) if ptr is None else ptr
    if ptr is None:
        raise errors.NotFoundError(f"no parameter-server checkpoint in {checkpoint_dir}")
    by_task = _read_all(checkpoint_dir, ptr)
    handles = strategy.extended.ps_handles
    refs = [handles[k].set_values.remote(arrays) for k, arrays in by_task.items() if arrays]
    _rget(ray, refs, max(strategy._rpc_timeout, 120),
          "parameter servers (restoring a checkpoint)")
    return int(ptr["step"]), {key for arrays in by_task.values() for key in arrays}
