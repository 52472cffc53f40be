"""`DeviceSpec`: TensorFlow's device names, mapped onto JAX devices."""

from __future__ import annotations

import collections
import re

from mylib import errors

_FULL = re.compile(
    r"^(?:/job:(?P<job>[A-Za-z0-9_-]+))?(?:/replica:(?P<replica>\d+))?(?:/task:(?P<task>\d+))?"
    r"(?:/device:(?P<type>[A-Za-z_]+):(?P<index>\d+|\*))?$")
_SHORT = re.compile(r"^/?(?P<type>cpu|gpu|tpu|CPU|GPU|TPU)(?::(?P<index>\d+|\*))?$")
_EXPECTED = "/job:<name>/replica:<int>/task:<int>/device:<TYPE>:<int> (or /cpu:0, GPU:1)"


class DeviceSpec:
    """A (possibly partial) device name.

    Args:
      job: job name (``"worker"``, ``"ps"``) or None.
      replica, task: ints or None.
      device_type: ``"CPU"``, ``"GPU"``, ``"TPU"`` or None.
      device_index: int or None.
    """

    __slots__ = ("job", "replica", "task", "device_type", "device_index")

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self.job = job
        self.replica = None if replica is None else int(replica)
        self.task = None if task is None else int(task)
        self.device_type = None if device_type is None else device_type.upper()
        self.device_index = None if device_index is None else int(device_index)

    @classmethod
    def from_string(cls, spec):
        """Parses a device name.

        Raises:
          InvalidArgumentError: if `spec` is not a device name.
        """
        if isinstance(spec, DeviceSpec):
            return spec
        s = (spec or "").strip()
        if not s:
            return cls()
        m = _SHORT.match(s)
        if m:
            idx = m.group("index")
            return cls(device_type=m.group("type"),
                       device_index=None if idx in (None, "*") else int(idx))
        parts = [p for p in s.split("/") if p]
        spec_obj = cls()
        for p in parts:
            key, _, val = p.partition(":")
            k = key.lower()
            if k == "job" and val:
                spec_obj.job = val
            elif k == "replica" and val.isdigit():
                spec_obj.replica = int(val)
            elif k == "task" and val.isdigit():
                spec_obj.task = int(val)
            elif k == "device" and val:
                t, _, i = val.partition(":")
                spec_obj.device_type = t.upper()
                spec_obj.device_index = int(i) if i.isdigit() else None
            elif k in ("cpu", "gpu", "tpu"):
                spec_obj.device_type = k.upper()
                spec_obj.device_index = int(val) if val.isdigit() else None
            else:
                raise errors.InvalidArgumentError(
                    f"Malformed device specification {spec!r}; expected {_EXPECTED}")
        return spec_obj

    def to_string(self):
        out = ""
        if self.job is not None:
            out += f"/job:{self.job}"
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            idx = "*" if self.device_index is None else self.device_index
            out += f"/device:{self.device_type}:{idx}"
        return out

    def make_merged_spec(self, dev):
        """A new spec: this one with the fields set in `dev` overriding it."""
        dev = DeviceSpec.from_string(dev)
        return DeviceSpec(*[getattr(dev, f) if getattr(dev, f) is not None else getattr(self, f)
                            for f in self.__slots__])

    def __eq__(self, other):
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self):
        return hash(self.to_string())

    def __repr__(self):
        return f"DeviceSpec({self.to_string()!r})"


class LocalDevice(collections.namedtuple(
        "LocalDevice", ["name", "device_type", "index", "memory_limit", "jax_device"])):
    """A local XLA device: `name` is TensorFlow's full name
    (``/job:localhost/replica:0/task:0/device:GPU:0``), `device_type` ``"CPU"``/``"GPU"``/
    ``"TPU"``, `index` its number among devices of that type, `memory_limit` in bytes
    where the backend reports it (None on CPU), `jax_device` the `jax.Device`."""


def list_devices(device_type=None):
    """The local XLA devices (through JAX), optionally only those of `device_type`.

    Returns:
      list of `LocalDevice`.
    """
    import jax

    out = []
    counts = {}
    for d in jax.local_devices():
        kind = d.platform.upper()
        idx = counts.get(kind, 0)
        counts[kind] = idx + 1
        mem = None
        try:
            stats = d.memory_stats()
            if stats:
                mem = stats.get("bytes_limit")
        except Exception:  # noqa: BLE001 - backends without memory stats
            mem = None
        if device_type is None or kind == device_type.upper():
            out.append(LocalDevice(f"/job:localhost/replica:0/task:0/device:{kind}:{idx}",
                                   kind, idx, mem, d))
    return out


def list_physical_devices(device_type=None):
    """As TensorFlow's `config.list_physical_devices`: the local devices of a type."""
    return list_devices(device_type)


def get_device(spec):
    """The `jax.Device` for a device name (``"/gpu:0"``, ``"/device:CPU:1"``).

    Raises:
      InvalidArgumentError: if no local device matches; the message lists them.
    """
    s = DeviceSpec.from_string(spec)
    devs = list_devices()
    if s.job in (None, "localhost") and s.task in (None, 0) and s.replica in (None, 0):
        for d in devs:
            if (s.device_type in (None, d.device_type)
                    and (s.device_index is None or s.device_index == d.index)):
                return d.jax_device
    raise errors.InvalidArgumentError(
        f"No device matches {spec!r}; available: {[d.name for d in devs]}")


def set_cpu_device_count(n):
    """Makes JAX's CPU backend expose `n` devices.

    This changes the process environment: it sets
    ``XLA_FLAGS=--xla_force_host_platform_device_count=n`` (keeping other flags), which
    XLA reads when its backends start. So it must run before JAX initializes its
    backends (before the first computation or `jax.devices()` call); importing mylib
    does not initialize them. After that it changes nothing and refuses.

    Raises:
      ValueError: `n` is not a positive int.
      FailedPreconditionError: JAX has already started with another device count
        (nothing is changed).
    """
    import os
    import re as _re

    from mylib.devices import jax_adapter

    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"`n` must be a positive int. Received: n={n!r}")
    if jax_adapter.backends_are_initialized():
        import jax

        have = len(jax.devices("cpu"))
        if have != n:
            raise RuntimeError(
                f"JAX is already initialized with {have} CPU device(s); call "
                f"set_cpu_device_count({n}) before any JAX computation")
        return
    flags = os.environ.get("XLA_FLAGS", "")
    flag = f"--xla_force_host_platform_device_count={n}"
    if "xla_force_host_platform_device_count" in flags:
        flags = _re.sub(r"--xla_force_host_platform_device_count=\d+", flag, flags)
    else:
        flags = (flags + " " + flag).strip()
    os.environ["XLA_FLAGS"] = flags
