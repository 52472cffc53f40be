"""Keras-style models: functional `Model(inputs, outputs)`, `Sequential`, subclassed
`Model`s; `compile`, `fit`, `evaluate`, `predict`, `summary`, weights; saving."""

from mylib.models.sequential import Sequential  # noqa: F401
from mylib.models.training import Model  # noqa: F401
from mylib.models.saving import clone_model, load_model, model_from_json, save_model  # noqa: F401,E501
