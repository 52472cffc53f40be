"""`keras.models`: `Model`, `Sequential`, `load_model`, `save_model`, `clone_model`,
`model_from_json`."""

from mylib.models import (Model, Sequential, clone_model, load_model,  # noqa: F401
                          model_from_json, save_model)

__all__ = ["Model", "Sequential", "clone_model", "load_model", "model_from_json",
           "save_model"]
