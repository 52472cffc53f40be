"""`keras.ops.math` (Keras 3): segment reductions, top-k, logsumexp, erf, rsqrt,
framing of sequences, Fourier transforms (complex values as ``(real, imag)`` pairs of
float tensors, as Keras), `stft`."""

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


def _complex(pair, what):
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise ValueError(f"{what}: input `x` should be a tuple of two tensors - real and "
                         f"imaginary. Received: x={pair!r}")
    re, im = pair
    if re.shape != im.shape:
        raise ValueError(f"{what}: the real and imaginary parts must have the same shape. "
                         f"Received: x[0].shape = {re.shape}, x[1].shape = {im.shape}")
    if not (jnp.issubdtype(re.dtype, jnp.floating) and jnp.issubdtype(im.dtype, jnp.floating)):
        raise ValueError(f"{what}: both parts of `x` must be float tensors. Received "
                         f"dtypes {re.dtype} and {im.dtype}.")
    return lax.complex(re, im)


def _pair(z):
    return jnp.real(z), jnp.imag(z)


@keras_op(seq="x")
def fft(x):
    """The discrete Fourier transform over the last axis of the complex `x` given as
    ``(real, imag)``; returns ``(real, imag)``."""
    return _pair(jnp.fft.fft(_complex(x, "fft")))


@keras_op(seq="x")
def fft2(x):
    """The 2-D discrete Fourier transform over the last two axes; ``(real, imag)`` in
    and out."""
    return _pair(jnp.fft.fft2(_complex(x, "fft2")))


@keras_op(seq="x")
def ifft2(x):
    """The inverse of `fft2`; ``(real, imag)`` in and out."""
    return _pair(jnp.fft.ifft2(_complex(x, "ifft2")))


@keras_op("x")
def rfft(x, fft_length=None):
    """The DFT of the real `x` over its last axis (zero-padded or cut to `fft_length`);
    the ``fft_length // 2 + 1`` non-negative frequencies as ``(real, imag)``."""
    return _pair(jnp.fft.rfft(x, n=fft_length, axis=-1))


@keras_op(seq="x")
def irfft(x, fft_length=None):
    """The inverse of `rfft`: a real signal of `fft_length` (default ``2 * (n - 1)``)."""
    return jnp.fft.irfft(_complex(x, "irfft"), n=fft_length, axis=-1)


def _window(window, length, dtype):
    import scipy.signal

    if isinstance(window, str):
        if window not in ("hann", "hamming"):
            raise ValueError('If a string is passed to `window`, it must be one of "hann", '
                             f'"hamming". Received: window={window!r}')
        return jnp.asarray(scipy.signal.get_window(window, length), dtype)
    w = jnp.asarray(window, dtype)
    if w.shape != (length,):
        raise ValueError("The shape of `window` must be equal to [sequence_length]. "
                         f"Received: window shape={w.shape}")
    return w


@keras_op("x")
def stft(x, sequence_length, sequence_stride, fft_length, window="hann", center=True):
    """Short-time Fourier transform of the real signals `x` ``[..., samples]``: frames of
    `sequence_length` every `sequence_stride` samples (the signal reflect-padded by
    ``fft_length // 2`` on both sides with `center`), each times `window` (``"hann"``,
    ``"hamming"`` (periodic) or an array, centred in `fft_length`; None: the whole
    `fft_length` frame unweighted, as Keras 3) and transformed by `rfft`. Returns ``(real, imag)``, each ``[..., frames, fft_length // 2 + 1]``
    (unnormalized, as `tf.signal.stft` and Keras 3).

    Raises:
      TypeError: `x` is not float32/float64.
      ValueError: ``fft_length < sequence_length``, or a bad `window`.
    """
    if x.dtype not in (jnp.float32, jnp.float64):
        raise TypeError(f"Invalid input type. Expected `float32` or `float64`. Received: "
                        f"input type={x.dtype}")
    if fft_length < sequence_length:
        raise ValueError("`fft_length` must equal or larger than `sequence_length`. "
                         f"Received: sequence_length={sequence_length}, "
                         f"fft_length={fft_length}")
    if window is None:  # Keras 3: no window means the whole fft_length frame
        win = jnp.ones((fft_length,), x.dtype)
    else:
        win = _window(window, sequence_length, x.dtype)
        left = (fft_length - sequence_length) // 2
        win = jnp.pad(win, (left, fft_length - sequence_length - left))
    if center:
        pad = [(0, 0)] * (x.ndim - 1) + [(fft_length // 2, fft_length // 2)]
        x = jnp.pad(x, pad, mode="reflect")
    n = x.shape[-1]
    frames = 1 + (n - fft_length) // sequence_stride
    idx = jnp.arange(frames)[:, None] * sequence_stride + jnp.arange(fft_length)[None]
    return _pair(jnp.fft.rfft(x[..., idx] * win, n=fft_length, axis=-1))


__all__ = ["segment_max", "segment_sum", "in_top_k", "top_k", "erf", "erfinv",
           "logsumexp", "rsqrt", "extract_sequences", "fft", "fft2", "ifft2", "rfft",
           "irfft", "stft"]
