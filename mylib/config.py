"""Global switches: op determinism and the global random seed (TensorFlow's
`tf.config.experimental.enable_op_determinism` and `tf.keras.utils.set_random_seed`).

Under ``enable_op_determinism()`` plus ``set_random_seed(seed)`` two runs of the same
script give bit-identical results: every random source mylib draws from (the session's
base for unseeded random ops, `fit`'s shuffling, `Dataset.shuffle`, Python's `random`
and numpy's global generator) is derived from the seed, and XLA is asked for
deterministic kernels on GPU.

This module imports nothing from mylib but `mylib.devices.jax_adapter`, so every layer may
read it.
"""

from __future__ import annotations

import os
import random as _random
import threading
import warnings

import numpy as np

__all__ = ["enable_op_determinism", "disable_op_determinism", "is_op_determinism_enabled",
           "set_random_seed", "get_random_seed", "next_seed", "session_seed_base"]

_lock = threading.Lock()
_state = {"deterministic": False, "seed": None, "counter": 0}
_GPU_FLAG = "--xla_gpu_deterministic_ops=true"


def enable_op_determinism():
    """Makes mylib's ops and data order deterministic: with `set_random_seed` two runs
    of the same program give the same values bit for bit.

    Without a seed, random sources use the fixed seed 0 instead of fresh entropy. On
    GPU, XLA must also be asked for deterministic kernels: this function changes the
    process environment for that, appending ``--xla_gpu_deterministic_ops=true`` to
    ``XLA_FLAGS``, which XLA reads when its backends start. Once JAX has started, the
    flag can no longer take effect and is not set: a warning says so when a GPU is in
    use (CPU kernels are deterministic already).
    """
    _state["deterministic"] = True
    flags = os.environ.get("XLA_FLAGS", "")
    if _GPU_FLAG in flags:
        return
    from mylib.devices import jax_adapter

    if jax_adapter.backends_are_initialized():
        import jax

        if jax.default_backend() != "cpu":
            warnings.warn("enable_op_determinism(): JAX has already started, so XLA's "
                          "deterministic GPU kernels (--xla_gpu_deterministic_ops) cannot be "
                          "turned on; call it before any JAX computation.", stacklevel=2)
        return
    os.environ["XLA_FLAGS"] = (flags + " " + _GPU_FLAG).strip()


def disable_op_determinism():
    """Undoes `enable_op_determinism` (the XLA flag stays for a backend that started)."""
    _state["deterministic"] = False


def is_op_determinism_enabled():
    return _state["deterministic"]


def set_random_seed(seed):
    """Seeds every random source: Python's `random`, numpy's global generator, the
    default graph's graph-level seed (`ml.set_random_seed`), and the base seed of
    sessions created from now on (for unseeded random ops), `fit`'s shuffling and
    `Dataset.shuffle` without a seed.

    Args:
      seed: a non-negative int.
    """
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative int. Received: seed={seed!r}")
    seed = int(seed)
    with _lock:
        _state["seed"] = seed
        _state["counter"] = 0
    _random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    from mylib.core.graph import set_random_seed as _graph_seed  # lazy: no import cycle

    _graph_seed(seed)


def get_random_seed():
    """The global seed, or None."""
    return _state["seed"]


def next_seed():
    """A fresh seed derived from the global seed (a new one per call, in call order), or
    None when no global seed is set and determinism is off."""
    with _lock:
        seed = _state["seed"]
        if seed is None:
            if not _state["deterministic"]:
                return None
            seed = 0
        k = _state["counter"]
        _state["counter"] += 1
    return int(np.random.SeedSequence([seed, k]).generate_state(1)[0])


def session_seed_base():
    """The base seed of a new `Session` (for random ops without a seed)."""
    s = next_seed()
    return int.from_bytes(os.urandom(4), "little") if s is None else s
