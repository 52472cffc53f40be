"""`VariableStore`: the values of a graph's variables for one `Session`, and the state of
its random streams.

The store is the runtime's front door to execution state: savers, Keras weights,
checkpoint callbacks and strategies read and write variables through it, never through
a Session's private fields. A parameter-server strategy's remote store implements the
same methods (`owns`, `get`, `read`, `write`) for the variables its tasks hold.
"""

from __future__ import annotations

import threading

import jax
import numpy as np

__all__ = ["VariableStore", "host_value"]


def host_value(v):
    """A numpy copy of `v`. Arrays that span several processes (multi-worker
    strategies) are read from this process's replica, or gathered when sharded."""
    try:
        # The common case, and replicated multi-process arrays (JAX reads the local
        # replica); asking `is_fully_addressable` first would cost more than the copy.
        return np.asarray(v)
    except RuntimeError:
        if not (isinstance(v, jax.Array) and not v.is_fully_addressable):
            raise
    if v.sharding.is_fully_replicated:
        return np.asarray(v.addressable_data(0))
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(v, tiled=True))


class VariableStore:
    """Variable values (device arrays keyed by the variable's shared name) and
    random-stream state (a base seed and a run count per random op).

    Attributes:
      lock: the re-entrant lock that every change to `values` holds; a step holds it
        while it reads and writes the variables it touches, so two steps that write
        the same variable never lose an update.
      values: the live `{key: jax.Array}` mapping (hold `lock` to change it).
      seed_base: int, the base of unseeded random ops' seeds for this session.
    """

    def __init__(self, seed_base=0):
        self.lock = threading.RLock()
        self.values = {}
        self.seed_base = int(seed_base)
        self._rng_counts = {}

    def owns(self, key):  # noqa: ARG002 - a local store holds every key
        """Whether this store holds `key` (always, for a local store)."""
        return True

    def get(self, key):
        """The device value of `key`, or None when it is uninitialized."""
        return self.values.get(key)

    def read(self, keys):
        """Host (numpy) copies of `keys`, one consistent snapshot taken under the lock
        (None for an uninitialized key)."""
        with self.lock:  # held until copied: a step may donate (delete) these buffers
            vals = [self.values.get(k) for k in keys]
            for v in vals:
                if v is not None and hasattr(v, "copy_to_host_async"):
                    v.copy_to_host_async()
            return [None if v is None else host_value(v) for v in vals]

    def write(self, values):
        """Sets `{key: array}` all at once, under the lock (values are not checked:
        callers check shapes and dtypes first)."""
        with self.lock:
            self.values.update(values)

    def snapshot(self):
        """Everything the store holds: ``{"values": {...}, "rng": rng_state()}`` (device
        arrays are shared, not copied: they are never mutated in place while held)."""
        with self.lock:
            return {"values": dict(self.values), "rng": self.rng_state()}

    def restore(self, snapshot):
        """Replaces the values and random-stream state with a `snapshot()`'s."""
        with self.lock:
            self.values.update(snapshot["values"])
            self.set_rng_state(snapshot["rng"])

    def rng_state(self):
        """``{"seed_base": int, "counts": {op_name: int}}``: enough to continue the
        random streams exactly where they are (checkpointed by `BackupAndRestore`)."""
        with self.lock:
            return {"seed_base": self.seed_base, "counts": dict(self._rng_counts)}

    def set_rng_state(self, state):
        """Restores an `rng_state()`; a missing ``seed_base`` keeps the current one."""
        with self.lock:
            self._rng_counts = {str(k): int(v) for k, v in state.get("counts", {}).items()}
            if state.get("seed_base") is not None:
                self.seed_base = int(state["seed_base"])

    def take_rng_counts(self, names, steps=None):
        """The run counts of random ops `names` (uint32 vector), then counts them run.
        With `steps`: the counts of that many consecutive runs, ``[steps, len(names)]``
        (row i is what the i-th of `steps` separate runs would have drawn)."""
        with self.lock:
            counts = self._rng_counts
            out = np.fromiter((counts.get(n, 0) for n in names), np.uint32, len(names))
            k = 1 if steps is None else steps
            for n in names:
                counts[n] = (counts.get(n, 0) + k) & 0xFFFFFFFF
            if steps is None:
                return out
            return out[None, :] + np.arange(steps, dtype=np.uint32)[:, None]  # wraps mod 2**32

    def clear(self):
        """Drops every value (the session closed)."""
        with self.lock:
            self.values.clear()
