"""`keras.ops.math` (Keras 3): segment reductions, top-k, logsumexp, erf, rsqrt,
framing of sequences."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from mylib.keras.ops._dispatch import keras_op
from mylib.keras.ops.core import segment_max, segment_sum  # noqa: F401
from mylib.keras.ops.nn import in_top_k, top_k  # noqa: F401
from mylib.keras.ops.numpy import erf, erfinv, logsumexp  # noqa: F401


@keras_op("x")
def rsqrt(x):
    """``1 / sqrt(x)``."""
    return lax.rsqrt(x)


@keras_op("x")
def extract_sequences(x, sequence_length, sequence_stride):
    """Frames of length `sequence_length` every `sequence_stride` steps along the last
    axis: ``[..., n] -> [..., frames, sequence_length]``."""
    n = x.shape[-1]
    frames = 1 + (n - sequence_length) // sequence_stride
    idx = jnp.arange(frames)[:, None] * sequence_stride + jnp.arange(sequence_length)[None]
    return x[..., idx]


__all__ = ["segment_max", "segment_sum", "in_top_k", "top_k", "erf", "erfinv",
           "logsumexp", "rsqrt", "extract_sequences"]
