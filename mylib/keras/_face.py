"""Helpers of the Keras face: re-exporting a mylib module's public names into a
`mylib.keras` module, and the AttributeError of a name mylib deliberately lacks (it
says what to use instead)."""

from __future__ import annotations

import types


def public_names(module):
    """The public names of `module` that are not third-party modules or `__future__`
    features (what a star import of it should give)."""
    out = []
    for n in getattr(module, "__all__", None) or dir(module):
        if n.startswith("_"):
            continue
        v = getattr(module, n, None)
        if isinstance(v, types.ModuleType) and not v.__name__.startswith("mylib."):
            continue
        if type(v).__name__ == "_Feature":
            continue
        out.append(n)
    return out


def reexport(namespace, module, skip=()):
    """Copies the public names of `module` into `namespace` (a module's globals);
    returns their names (for `__all__`)."""
    names = [n for n in public_names(module) if n not in skip and
             not isinstance(getattr(module, n), types.ModuleType)]
    for n in names:
        namespace.setdefault(n, getattr(module, n))
    return names


def missing(where, name, hints, default=None):
    """The AttributeError for `where.name`: what to use instead when known."""
    hint = hints.get(name, default)
    msg = f"module '{where}' has no attribute '{name}'"
    if hint:
        msg += f": mylib does not provide it; {hint}"
    return AttributeError(msg)
