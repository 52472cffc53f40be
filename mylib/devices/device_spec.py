"""`DeviceSpec`: TensorFlow's device names, mapped onto JAX devices."""

from __future__ import annotations

import re

from mylib.core import errors

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


def list_devices():
    """The local XLA devices as (name, jax.Device) pairs, e.g.
    ``("/job:localhost/replica:0/task:0/device:CPU:0", CpuDevice(id=0))``."""
    import jax

    out = []
    for d in jax.local_devices():
        kind = d.platform.upper()
        out.append((f"/job:localhost/replica:0/task:0/device:{kind}:{d.id}", d))
    return out


def get_device(spec):
    """The `jax.Device` for a device name.

    Raises:
      InvalidArgumentError: if no local device matches; the message lists them.
    """
    s = DeviceSpec.from_string(spec)
    devs = list_devices()
    for name, d in devs:
        if (s.device_type in (None, d.platform.upper())
                and (s.device_index is None or s.device_index == d.id)):
            return d
    raise errors.InvalidArgumentError(
        f"No device matches {spec!r}; available: {[n for n, _ in devs]}")
