"""Weight constraints (Keras's names): projections applied to a weight after each
optimizer update, in the same training step (`Variable.constraint`, which the
optimizer's `apply_gradients` runs after its update ops).

A constraint is called as ``constraint(w) -> Tensor`` on the variable's new value.
"""

from __future__ import annotations

from mylib.core.ops import math_ops, reduction_ops

_EPS = 1e-7  # Keras's backend.epsilon()


class Constraint:
    def __init__(self):
        # Explicit so that `NonNeg(foo=1)` names `foo` in its TypeError (object's does not).
        pass

    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _norms(w, axis):
    return math_ops.sqrt(reduction_ops.reduce_sum(math_ops.square(w), axis=axis, keepdims=True))


class MaxNorm(Constraint):
    """Rescales each slice along `axis` whose L2 norm exceeds `max_value` to that norm.

    For a Dense kernel ``[in, out]`` the default ``axis=0`` constrains each unit's
    incoming weights; for a Conv2D kernel ``[kh, kw, in, out]`` use ``axis=[0, 1, 2]``.
    """

    def __init__(self, max_value=2.0, axis=0):
        self.max_value, self.axis = float(max_value), axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = math_ops.minimum(norms, self.max_value)  # clip to [0, max_value]
        return w * (desired / (norms + _EPS))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Sets negative weights to 0."""

    def __call__(self, w):
        return w * math_ops.cast(math_ops.greater_equal(w, 0.0), w.dtype)


class UnitNorm(Constraint):
    """Scales each slice along `axis` to unit L2 norm."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        return w / (_EPS + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Keeps each slice's L2 norm in ``[min_value, max_value]``; `rate` in (0, 1]
    moves only part of the way (``rate * clipped + (1 - rate) * norm``)."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value = float(min_value), float(max_value)
        self.rate, self.axis = float(rate), axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        clipped = math_ops.minimum(math_ops.maximum(norms, self.min_value), self.max_value)
        desired = self.rate * clipped + (1 - self.rate) * norms
        return w * (desired / (_EPS + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm

_CLASSES = {c.__name__: c for c in (Constraint, MaxNorm, NonNeg, UnitNorm, MinMaxNorm)}
_ALIASES = {"max_norm": MaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm,
            "min_max_norm": MinMaxNorm, "maxnorm": MaxNorm, "nonneg": NonNeg,
            "unitnorm": UnitNorm}


def get(identifier):
    """A constraint from None, a name (``"non_neg"``), a config dict, a `Constraint`
    or any callable ``w -> Tensor``."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        cls = _ALIASES.get(identifier) or _CLASSES.get(identifier)
        if cls is None:
            from mylib.layers import registration

            obj = registration.get_registered_object(identifier)
            if obj is not None:
                return obj() if isinstance(obj, type) else obj
            raise ValueError(f"Unknown constraint: '{identifier}'. Known: {sorted(_ALIASES)}")
        return cls()
    if isinstance(identifier, dict):
        from mylib.layers import registration

        return registration.deserialize_object(identifier, {**_ALIASES, **_CLASSES},
                                               "constraint")
    if isinstance(identifier, type) and issubclass(identifier, Constraint):
        return identifier()
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret constraint identifier: {identifier!r}")


def serialize(constraint):
    """`get`'s config-dict form (``{"class_name", "config"}``, with
    ``"registered_name"`` for a registered class); a registered function's name."""
    from mylib.layers import registration

    return registration.serialize_object(constraint)


__all__ = ["Constraint", "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm", "max_norm", "non_neg",
           "unit_norm", "min_max_norm", "get", "serialize",
           "deserialize"]


def deserialize(config, custom_objects=None):
    """The constraint of a `serialize` config dict or name (Keras 3's `deserialize`), as
    `get`; `custom_objects` (``{name: class}``) are looked up first.

    Raises:
      ValueError: for an unknown class or name.
    """
    from mylib.layers import registration

    if custom_objects and isinstance(config, dict):
        return registration.deserialize_object(config, {**_ALIASES, **_CLASSES, **custom_objects},
                                               "constraint")
    if custom_objects and isinstance(config, str) and config in custom_objects:
        obj = custom_objects[config]
        return obj() if isinstance(obj, type) else obj
    return get(config)
