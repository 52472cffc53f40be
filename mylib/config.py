"""Global switches: op determinism and the global random seed (TensorFlow's
`tf.config.experimental.enable_op_determinism` and `tf.keras.utils.set_random_seed`).

Under ``enable_op_determinism()`` plus ``set_random_seed(seed)`` two runs of the same
script give bit-identical results: every random source mylib draws from (the session's
base for unseeded random ops, `fit`'s shuffling, `Dataset.shuffle`, Python's `random`
and numpy's global generator) is derived from the seed, and XLA is asked for
deterministic kernels on GPU.

This module imports nothing from mylib but `mylib.devices` (`jax_adapter`, and the device
list for `list_physical_devices`), so every layer may read it.
"""

from __future__ import annotations

import os
import random as _random
import threading
import warnings

import numpy as np

__all__ = ["enable_op_determinism", "disable_op_determinism", "is_op_determinism_enabled",
           "set_random_seed", "get_random_seed", "next_seed", "session_seed_base",
           "PhysicalDevice", "list_physical_devices", "set_memory_growth", "get_memory_growth",
           "experimental"]

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


# ---------------------------------------------------------------- physical devices
class PhysicalDevice(tuple):
    """A local device as TensorFlow's `config.PhysicalDevice`: `name`
    (``/physical_device:GPU:0``) and `device_type` (``"CPU"``, ``"GPU"``, ``"TPU"``)."""

    __slots__ = ()

    def __new__(cls, name, device_type):
        return super().__new__(cls, (name, device_type))

    name = property(lambda self: self[0])
    device_type = property(lambda self: self[1])

    def __repr__(self):
        return f"PhysicalDevice(name={self.name!r}, device_type={self.device_type!r})"


def list_physical_devices(device_type=None):
    """The local XLA devices (through JAX), optionally only those of `device_type`
    (``"CPU"``, ``"GPU"``, ``"TPU"``; case-insensitive).

    Returns:
      list of `PhysicalDevice`.

    Differs from TensorFlow: listing starts JAX's backends (TensorFlow lists devices
    without initializing its runtime), so a later `set_memory_growth` on a GPU comes too
    late to change XLA's allocator and only warns.
    """
    from mylib.devices.device_spec import list_devices

    return [PhysicalDevice(f"/physical_device:{d.device_type}:{d.index}", d.device_type)
            for d in list_devices(device_type)]


_growth = {}
_GROWTH_ENV = "XLA_PYTHON_CLIENT_PREALLOCATE"


def set_memory_growth(device, enable):
    """Lets a GPU's memory grow on demand instead of being reserved up front.

    XLA's GPU client (through JAX) reserves most of a GPU's memory when its backend
    starts; on-demand allocation is chosen by ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` in
    the environment before that. So this is not a no-op: before JAX's backends start
    it sets (``enable=True``) or removes (``enable=False``) that variable of the
    process environment. After they started (listing devices starts them) the choice
    can no longer take effect: a warning says so, and the value is only recorded for
    `get_memory_growth`.

    Args:
      device: a `PhysicalDevice` from `list_physical_devices` (a GPU).
      enable: bool.
    Raises:
      ValueError: `device` is not a GPU (as TensorFlow).
    """
    kind = getattr(device, "device_type", None)
    if kind != "GPU":
        raise ValueError(f"Cannot set memory growth on non-GPU devices. Received: {device!r}")
    _growth[device.name] = bool(enable)
    from mylib.devices import jax_adapter

    if jax_adapter.backends_are_initialized():
        warnings.warn("set_memory_growth(): JAX's GPU backend has already started (listing "
                      "devices starts it), so XLA's allocator cannot change; set "
                      f"{_GROWTH_ENV}=false in the environment before starting the "
                      "program instead.", stacklevel=2)
        return
    if enable:
        os.environ[_GROWTH_ENV] = "false"
    else:
        os.environ.pop(_GROWTH_ENV, None)


def get_memory_growth(device):
    """Whether `set_memory_growth` asked for on-demand growth of `device` (False if
    never set)."""
    if getattr(device, "device_type", None) != "GPU":
        raise ValueError(f"Cannot get memory growth of non-GPU devices. Received: {device!r}")
    return _growth.get(device.name, False)


class _Experimental:
    """`config.experimental`: TensorFlow 1.15's home of the device functions."""

    list_physical_devices = staticmethod(list_physical_devices)
    set_memory_growth = staticmethod(set_memory_growth)
    get_memory_growth = staticmethod(get_memory_growth)
    enable_op_determinism = staticmethod(enable_op_determinism)


experimental = _Experimental()
