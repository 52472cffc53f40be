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
    `step`; returns its directory."""
    import ray

    os.makedirs(checkpoint_dir, exist_ok=True)
    ext = strategy.extended
    ext.ship_graph()
    by_task = _task_vars(strategy)
    refs = {k: ext.ps_handles[k].get_values.remote(keys) for k, keys in by_task.items()}
    sub = os.path.join(checkpoint_dir, f"ps-{int(step)}")
    os.makedirs(sub, exist_ok=True)
    files = {}
    for k, keys in by_task.items():
        vals = ray.get(refs[k], timeout=max(strategy._rpc_timeout, 120))
        arrays = {key: v for key, v in zip(keys, vals) if v is not None}
        path = os.path.join(sub, f"task-{k}.ckpt")
        write_checkpoint_file(path, arrays)
        files[str(k)] = os.path.relpath(path, checkpoint_dir)
    pointer = {"step": int(step), "tasks": files}
    atomic_write(os.path.join(checkpoint_dir, POINTER), json.dumps(pointer))
    _prune(checkpoint_dir, int(step))
    return sub


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


def restore_task(strategy, checkpoint_dir, k):
    """Sets the variables of parameter server `k` from the newest checkpoint.

    Raises:
      NotFoundError: there is no checkpoint, or none for task `k`.
    """
    import ray

    ptr = latest(checkpoint_dir)
    if ptr is None or str(k) not in ptr["tasks"]:
        raise errors.NotFoundError(
            f"no checkpoint of /job:ps/task:{k} in {checkpoint_dir} to restore it from")
    arrays = read_checkpoint_file(os.path.join(checkpoint_dir, ptr["tasks"][str(k)]))
    ray.get(strategy.extended.ps_handles[k].set_values.remote(arrays),
            timeout=max(strategy._rpc_timeout, 120))
    return ptr["step"]
