"""64-bit types inside mylib, and nowhere else in the user's process.

JAX computes in 32 bits unless its global `jax_enable_x64` flag is on. mylib keeps a
user's int64 and float64 tensors 64-bit (as TensorFlow does) without touching that
flag: op creation (shape inference, constants), tracing, compilation and execution run
inside JAX's thread-local `jax.enable_x64(True)` context, entered at mylib's entry
points. Code outside them, including the user's own JAX code in the same process,
keeps JAX's defaults. Entering the context costs well under a microsecond.
"""

from __future__ import annotations

import functools

import jax

__all__ = ["x64", "with_x64"]


def x64():
    """A context manager: 64-bit types are real inside it (this thread only)."""
    return jax.enable_x64(True)


def with_x64(fn):
    """Decorates `fn` to run inside `x64()`."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return wrapper
