"""Keras's `backend` module: the session of each graph, weight values, `clear_session`.

The sessions live in the runtime (`mylib.runtime.keras_session`); this module adds what
belongs to layers (their per-graph name counters).
"""

from mylib.core.graph import get_default_graph
from mylib.layers.base import reset_uids
from mylib.runtime import keras_session
from mylib.runtime.keras_session import (ensure_initialized, get_session, get_values,  # noqa: F401
                                         set_session, set_values)

__all__ = ["clear_session", "ensure_initialized", "get_session", "get_values",
           "set_session", "set_values", "epsilon"]


def clear_session():
    """Closes the default graph's Keras session, forgets its layer names, and installs a
    fresh default graph (Keras's `clear_session`)."""
    reset_uids(get_default_graph())
    keras_session.clear_session()


def epsilon():
    """The fuzz factor Keras uses in numeric expressions: 1e-7."""
    return 1e-7
