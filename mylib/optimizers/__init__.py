"""Keras-style optimizers built on optax: `SGD`, `Adam`, `AdamW`, `Adagrad`, `RMSprop`,
`Nadam`, `Adamax`, `Adadelta`, `Ftrl`, `Lion`, `Lamb`, `Adafactor`.

Each optimizer adds one `ResourceApplyOptax` op per `apply_gradients`; its state lives
in slot variables (see `Optimizer`).
"""

from __future__ import annotations

from mylib.optimizers.adadelta import Adadelta
from mylib.optimizers.adafactor import Adafactor
from mylib.optimizers.adagrad import Adagrad
from mylib.optimizers.adam import Adam, AdamW
from mylib.optimizers.ftrl import Ftrl
from mylib.optimizers.lamb import Lamb
from mylib.optimizers.lion import Lion
from mylib.optimizers.nadam import Adamax, Nadam
from mylib.optimizers.optimizer import Optimizer
from mylib.optimizers.rmsprop import RMSprop
from mylib.optimizers.sgd import SGD

_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "adagrad": Adagrad,
            "rmsprop": RMSprop, "nadam": Nadam, "adamax": Adamax, "adadelta": Adadelta,
            "ftrl": Ftrl, "lion": Lion, "lamb": Lamb, "adafactor": Adafactor}

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Nadam", "Adamax",
           "Adadelta", "Ftrl", "Lion", "Lamb", "Adafactor", "get", "serialize",
           "deserialize"]


def serialize(optimizer):
    """``{"class_name": ..., "config": ...}`` of an optimizer (Keras's form)."""
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config):
    """An optimizer from `serialize`'s form (or a name)."""
    if isinstance(config, str):
        return get(config)
    name = config.get("class_name")
    cls = _BY_NAME.get(str(name).lower())
    if cls is None:
        raise ValueError(f"Unknown optimizer: {name!r}. Known: {sorted(_BY_NAME)}")
    return cls.from_config(dict(config.get("config") or {}))


def get(identifier):
    """An `Optimizer` from a name (``"adam"``, case-insensitive), a config dict, or an
    instance (returned as is).

    Raises:
      ValueError: for an unknown name or an unsupported identifier.
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Unknown optimizer: {identifier!r}. Known: {sorted(_BY_NAME)}")
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}")
