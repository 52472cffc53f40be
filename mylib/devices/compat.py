"""Version checks for the adapters of mylib's dependencies' private APIs.

mylib uses a dependency's public API wherever one exists. Where none does, every use
of a private name lives in ONE adapter module per dependency (`mylib.devices.jax_adapter`,
`mylib._compat.ray_adapter`), which declares the dependency versions it was checked against
(`CHECKED`) and lists its private names (`PRIVATE_NAMES`), so that a test fails
clearly, naming the dependency version and the missing name, when an upgrade moves
one of them.

This module imports nothing else of mylib, and importing it imports neither JAX nor
Ray: the adapters import their dependency inside their functions.
"""

from __future__ import annotations

import importlib
import re
from importlib import metadata


class CompatError(RuntimeError):
    """A private name that an adapter relies on is missing from the installed
    dependency version."""


def installed_version(dist):
    """The installed version string of distribution `dist`, or None."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _release(version):
    """(major, minor, patch) of a version string, ignoring any suffix."""
    parts = [int(p) for p in re.findall(r"\d+", version.split("+")[0])[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


def in_range(version, spec):
    """Whether `version` satisfies `spec`, comma-separated clauses of the form
    ``>=X.Y[.Z]`` / ``<X.Y[.Z]`` (the only ones the adapters declare)."""
    v = _release(version)
    for clause in spec.split(","):
        m = re.fullmatch(r"\s*(>=|<)\s*([\d.]+)\s*", clause)
        if m is None:
            raise ValueError(f"unsupported version clause {clause!r} in {spec!r}")
        bound = _release(m.group(2))
        if (m.group(1) == ">=" and v < bound) or (m.group(1) == "<" and v >= bound):
            return False
    return True


def resolve(dotted):
    """The object named `dotted` ("package.module.attr..."): the longest importable
    module prefix, then attributes. Raises ImportError or AttributeError."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            if i == 1:
                raise
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def missing_names(names):
    """The names among `names` that do not resolve, with the reason."""
    missing = []
    for name in names:
        try:
            resolve(name)
        except (ImportError, AttributeError) as e:
            missing.append(f"{name} ({type(e).__name__}: {e})")
    return missing


_ADAPTERS = {"jax": "mylib.devices.jax_adapter", "ray": "mylib._compat.ray_adapter"}


def compat_error(dist, checked, what):
    """A CompatError naming the dependency, its installed version, the checked range
    and what is missing."""
    return CompatError(
        f"mylib relies on {what}, which the installed {dist} "
        f"{installed_version(dist)} does not provide (mylib's adapter "
        f"{_ADAPTERS.get(dist, dist + '_adapter')} was checked against {dist} {checked}); "
        f"install a {dist} version in that range or update the adapter")
