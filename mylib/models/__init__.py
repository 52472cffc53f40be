"""Keras-style models: functional `Model(inputs, outputs)`, `Sequential`, subclassed
`Model`s; `compile`, `fit`, `evaluate`, `predict`, `summary`, weights."""

from mylib.models.sequential import Sequential  # noqa: F401
from mylib.models.training import Model  # noqa: F401
