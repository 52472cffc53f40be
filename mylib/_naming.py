"""Names made from class names (``MeanSquaredError`` -> ``mean_squared_error``), shared
by layers, losses and metrics for their default names.

This module imports nothing from mylib, so every room may use it.
"""

from __future__ import annotations

import re

__all__ = ["to_snake_case"]


def to_snake_case(name):
    """`name` in snake case as Keras spells it: ``TopKCategoricalAccuracy`` ->
    ``top_k_categorical_accuracy``, ``AUC`` -> ``auc``."""
    s = re.sub(r"\W+", "", name)
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", s)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()
