"""`keras.ops.linalg` (Keras 3): a subset (`norm`, `inv`, `det`, `solve`, `cholesky`,
`qr`-free)."""

from __future__ import annotations

import jax.numpy as jnp

from mylib.keras.ops._dispatch import keras_op
from mylib.keras.ops.numpy import norm  # noqa: F401


@keras_op("x")
def inv(x):
    return jnp.linalg.inv(x)


@keras_op("x")
def det(x):
    return jnp.linalg.det(x)


@keras_op("a", "b")
def solve(a, b):
    return jnp.linalg.solve(a, b)


@keras_op("x")
def cholesky(x):
    return jnp.linalg.cholesky(x)


__all__ = ["norm", "inv", "det", "solve", "cholesky"]
