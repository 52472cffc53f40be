"""Weight regularizers: ``reg(weight) -> scalar loss`` added to the model's total loss."""

from __future__ import annotations


class Regularizer:
    def __init__(self):
        # Explicit so that `Regularizer(foo=1)` names `foo` in its TypeError (object's does not).
        pass

    def __call__(self, x):
        return 0.0

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x**2)``."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x):
        from mylib.core.ops import math_ops, reduction_ops

        terms = []
        if self.l1:
            terms.append(self.l1 * reduction_ops.reduce_sum(math_ops.abs(x)))
        if self.l2:
            terms.append(self.l2 * reduction_ops.reduce_sum(math_ops.square(x)))
        if not terms:
            return reduction_ops.reduce_sum(x * 0.0)
        return terms[0] if len(terms) == 1 else terms[0] + terms[1]

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


def L1(l1=0.01):  # noqa: N802 - Keras's name
    return L1L2(l1=l1)


def L2(l2=0.01):  # noqa: N802
    return L1L2(l2=l2)


l1, l2, l1_l2 = L1, L2, (lambda l1=0.01, l2=0.01: L1L2(l1, l2))


_CLASSES = {"Regularizer": Regularizer, "L1L2": L1L2, "L1": L1, "L2": L2, "l1": L1,
            "l2": L2, "l1_l2": l1_l2}


def get(identifier):
    """A regularizer from None, a name (``"l2"``, or a registered function's name), a
    config dict (`serialize`'s form; registered custom classes are looked up in the
    registry, never imported), a `Regularizer` or any callable ``w -> scalar``."""
    from mylib.layers import registration

    if identifier is None or callable(identifier):
        return identifier
    if identifier in ("l1", "L1"):
        return L1()
    if identifier in ("l2", "L2"):
        return L2()
    if identifier == "l1_l2":
        return L1L2(0.01, 0.01)
    if isinstance(identifier, dict):
        return registration.deserialize_object(identifier, _CLASSES, "regularizer")
    if isinstance(identifier, str):
        obj = registration.get_registered_object(identifier)
        if obj is not None:
            return obj() if isinstance(obj, type) else obj
    raise ValueError(f"Unknown regularizer: {identifier!r}")


def serialize(regularizer):
    """A config dict (``{"class_name": "L1L2", "config": {...}}``, with
    ``"registered_name"`` for a registered class), a registered function's name; None
    for None."""
    from mylib.layers import registration

    return registration.serialize_object(regularizer)


def deserialize(config, custom_objects=None):
    """The regularizer of a `serialize` config dict or name (Keras 3's `deserialize`), as
    `get`; `custom_objects` (``{name: class}``) are looked up first.

    Raises:
      ValueError: for an unknown class or name.
    """
    from mylib.layers import registration

    if custom_objects and isinstance(config, dict):
        return registration.deserialize_object(config, {**_CLASSES, **custom_objects},
                                               "regularizer")
    if custom_objects and isinstance(config, str) and config in custom_objects:
        obj = custom_objects[config]
        return obj() if isinstance(obj, type) else obj
    return get(config)
