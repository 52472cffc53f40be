"""More of Keras 3's numpy / nn / linalg ops (same two-world behaviour; see
`mylib.keras.ops._dispatch`). Data-dependent shapes (`unique`, `histogram`) are left
out: a graph op needs a static output shape."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from mylib.keras.ops._dispatch import keras_op
from mylib.keras.ops.numpy import _binary, _reduction, _unary

arccosh = _unary("arccosh", jnp.arccosh)
cbrt = _unary("cbrt", jnp.cbrt)
conjugate = _unary("conjugate", jnp.conjugate)
deg2rad = _unary("deg2rad", jnp.deg2rad)
rad2deg = _unary("rad2deg", jnp.rad2deg)
erfc = _unary("erfc", jax.scipy.special.erfc)
exp2 = _unary("exp2", jnp.exp2)
fabs = _unary("fabs", jnp.fabs)
signbit = _unary("signbit", jnp.signbit)
sinc = _unary("sinc", jnp.sinc)
i0 = _unary("i0", jnp.i0)
isneginf = _unary("isneginf", jnp.isneginf)
isposinf = _unary("isposinf", jnp.isposinf)
isreal = _unary("isreal", jnp.isreal)
bitwise_not = _unary("bitwise_not", jnp.bitwise_not)
bitwise_invert = _unary("bitwise_invert", jnp.bitwise_not)
fliplr = _unary("fliplr", jnp.fliplr)
flipud = _unary("flipud", jnp.flipud)
copy = _unary("copy", jnp.array)
angle = _unary("angle", jnp.angle)
logdet = _unary("logdet", lambda x: jnp.linalg.slogdet(x)[1])
pinv = _unary("pinv", jnp.linalg.pinv)

fmax = _binary("fmax", jnp.fmax)
fmin = _binary("fmin", jnp.fmin)
fmod = _binary("fmod", jnp.fmod)
gcd = _binary("gcd", jnp.gcd)
lcm = _binary("lcm", jnp.lcm)
logaddexp2 = _binary("logaddexp2", jnp.logaddexp2)
kron = _binary("kron", jnp.kron)
left_shift = _binary("left_shift", jnp.left_shift)
right_shift = _binary("right_shift", jnp.right_shift)
bitwise_left_shift = _binary("bitwise_left_shift", jnp.left_shift)
bitwise_right_shift = _binary("bitwise_right_shift", jnp.right_shift)
ldexp = _binary("ldexp", jnp.ldexp)
nextafter = _binary("nextafter", jnp.nextafter)
polar = _binary("polar", lambda r, theta: r * jnp.exp(1j * theta))

nanmax = _reduction("nanmax", jnp.nanmax, "Maximum ignoring NaNs")
nanmin = _reduction("nanmin", jnp.nanmin, "Minimum ignoring NaNs")
nanmean = _reduction("nanmean", jnp.nanmean, "Mean ignoring NaNs")
nansum = _reduction("nansum", jnp.nansum, "Sum ignoring NaNs")
nanprod = _reduction("nanprod", jnp.nanprod, "Product ignoring NaNs")
nanstd = _reduction("nanstd", jnp.nanstd, "Standard deviation ignoring NaNs")
nanvar = _reduction("nanvar", jnp.nanvar, "Variance ignoring NaNs")
ptp = _reduction("ptp", jnp.ptp, "Range (max - min)")


@keras_op("a")
def diff(a, n=1, axis=-1):
    return jnp.diff(a, n=n, axis=axis)


@keras_op("array")
def rot90(array, k=1, axes=(0, 1)):
    return jnp.rot90(array, k, axes)


@keras_op("x")
def empty_like(x, dtype=None):
    return jnp.zeros_like(x, dtype=dtype)


def empty(shape, dtype=None):
    """Zeros of `shape` (JAX has no uninitialized arrays)."""
    from mylib.keras.ops.numpy import zeros

    return zeros(shape, dtype)


def array(x, dtype=None):
    from mylib.keras.ops.core import convert_to_tensor

    return convert_to_tensor(x, dtype)


@keras_op("x1", "x2")
def allclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    return jnp.allclose(x1, x2, rtol=rtol, atol=atol, equal_nan=equal_nan)


@keras_op("x")
def diagflat(x, k=0):
    return jnp.diagflat(x, k)


@keras_op("x")
def percentile(x, q, axis=None, method="linear", keepdims=False):
    return jnp.percentile(x, jnp.asarray(q), axis=axis, method=method, keepdims=keepdims)


@keras_op("x")
def nanpercentile(x, q, axis=None, method="linear", keepdims=False):
    return jnp.nanpercentile(x, jnp.asarray(q), axis=axis, method=method, keepdims=keepdims)


@keras_op("x")
def nanquantile(x, q, axis=None, method="linear", keepdims=False):
    return jnp.nanquantile(x, jnp.asarray(q), axis=axis, method=method, keepdims=keepdims)


@keras_op("x")
def nanmedian(x, axis=None, keepdims=False):
    return jnp.nanmedian(x, axis=axis, keepdims=keepdims)


@keras_op("x")
def nancumsum(x, axis=None, dtype=None):
    return jnp.nancumsum(x, axis=axis, dtype=dtype)


@keras_op("x")
def nancumprod(x, axis=None, dtype=None):
    return jnp.nancumprod(x, axis=axis, dtype=dtype)


@keras_op("x")
def corrcoef(x):
    return jnp.corrcoef(x)


@keras_op("x1", "x2")
def correlate(x1, x2, mode="valid"):
    return jnp.correlate(x1, x2, mode=mode)


@keras_op("elements", "test_elements")
def isin(elements, test_elements, assume_unique=False, invert=False):
    return jnp.isin(elements, test_elements, assume_unique=assume_unique, invert=invert)


@keras_op("y", "x")
def trapezoid(y, x=None, dx=1.0, axis=-1):
    return jnp.trapezoid(y, x, dx=dx, axis=axis)


@keras_op("x")
def vander(x, N=None, increasing=False):  # noqa: N803 - numpy's name
    return jnp.vander(x, N, increasing)


@keras_op("x", "y")
def cdist(x, y, p=2.0):
    """Pairwise p-norm distances of the rows of `x` [..., n, d] and `y` [..., m, d]."""
    d = jnp.abs(x[..., :, None, :] - y[..., None, :, :])
    return jnp.sum(d ** p, -1) ** (1.0 / p)


def logspace(start, stop, num=50, endpoint=True, base=10, dtype=None, axis=0):
    return jnp.logspace(start, stop, num, endpoint, base, dtype, axis)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    return jnp.geomspace(start, stop, num, endpoint, dtype, axis)


@keras_op(seq="x")
def _meshgrid(x, indexing="xy"):
    return tuple(jnp.meshgrid(*x, indexing=indexing))


def meshgrid(*x, indexing="xy"):
    return list(_meshgrid(list(x), indexing=indexing))


@keras_op(seq="xs")
def dstack(xs):
    return jnp.dstack(xs)


@keras_op("x")
def _array_split(x, indices_or_sections, axis=0):
    return tuple(jnp.array_split(x, indices_or_sections, axis=axis))


def array_split(x, indices_or_sections, axis=0):
    return list(_array_split(x, indices_or_sections, axis))


@keras_op(seq="operands")
def _select(operands, n, default=0):
    return jnp.select(list(operands[:n]), list(operands[n:]), default)


def select(condlist, choicelist, default=0):
    """``choicelist[i]`` where ``condlist[i]`` first holds, else `default`."""
    return _select(list(condlist) + list(choicelist), len(condlist), default)


# ------------------------------------------------------------ nn
@keras_op("x")
def glu(x, axis=-1):
    a, b = jnp.split(x, 2, axis=axis)
    return a * jax.nn.sigmoid(b)


@keras_op("x")
def hard_tanh(x):
    return jnp.clip(x, -1.0, 1.0)


@keras_op("x")
def hard_shrink(x, threshold=0.5):
    return jnp.where(jnp.abs(x) > threshold, x, 0.0)


@keras_op("x")
def soft_shrink(x, threshold=0.5):
    return jnp.where(x > threshold, x - threshold, jnp.where(x < -threshold, x + threshold,
                                                             0.0))


@keras_op("x")
def squareplus(x, b=4):
    return (x + jnp.sqrt(x ** 2 + b)) / 2


@keras_op("x")
def sparse_plus(x):
    return jnp.where(x <= -1, 0.0, jnp.where(x >= 1, x, (x + 1) ** 2 / 4))


@keras_op("x")
def sparse_sigmoid(x):
    return jnp.where(x <= -1, 0.0, jnp.where(x >= 1, 1.0, (x + 1) / 2))


@keras_op("x")
def threshold(x, threshold, default_value):
    return jnp.where(x > threshold, x, default_value)


@keras_op("x", "gamma", "beta")
def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=None):
    """Normalizes `x` over `axis` (mean 0, variance 1), then scales by `gamma` and
    shifts by `beta`; `epsilon` defaults to the backend epsilon (1e-7), as Keras 3's
    op (the `LayerNormalization` layer passes its own 1e-3)."""
    from mylib.keras.ops import nn as _nn

    eps = _nn.EPSILON if epsilon is None else epsilon
    mean = jnp.mean(x, axis=axis, keepdims=True)
    var = jnp.var(x, axis=axis, keepdims=True)
    out = (x - mean) * lax.rsqrt(var + eps)
    if gamma is not None:
        out = out * gamma
    return out + beta if beta is not None else out


@keras_op("x", "scale")
def rms_normalization(x, scale=1, axis=-1, epsilon=None):
    eps = 1e-6 if epsilon is None else epsilon
    return x * lax.rsqrt(jnp.mean(jnp.square(x), axis=axis, keepdims=True) + eps) * scale


@keras_op("x1", "x2")
def psnr(x1, x2, max_val):
    mse = jnp.mean(jnp.square(x1 - x2))
    return 20 * jnp.log10(max_val) - 10 * jnp.log10(mse)


@keras_op("query", "key", "value", "bias", "mask")
def dot_product_attention(query, key, value, bias=None, mask=None, scale=None,
                          is_causal=False, flash_attention=None, attn_logits_soft_cap=None):
    """Softmax attention on ``[batch, seq, heads, dim]`` inputs (Keras 3's layout):
    ``softmax(q k^T * scale + bias, masked) v``, `scale` defaulting to
    ``1 / sqrt(dim)``."""
    scale = 1.0 / jnp.sqrt(query.shape[-1]) if scale is None else scale
    logits = jnp.einsum("bqhd,bkhd->bhqk", query, key) * scale
    if bias is not None:
        logits = logits + bias
    if is_causal:
        q, k = logits.shape[-2:]
        causal = jnp.tril(jnp.ones((q, k), bool))
        mask = causal if mask is None else jnp.logical_and(mask, causal)
    if mask is not None:
        logits = jnp.where(mask, logits, jnp.finfo(logits.dtype).min)
    probs = jax.nn.softmax(logits, axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", probs, value)


@keras_op("x")
def depth_to_space(x, block_size, data_format="channels_last"):
    b, h, w, c = x.shape
    x = x.reshape(b, h, w, block_size, block_size, c // block_size ** 2)
    return x.transpose(0, 1, 3, 2, 4, 5).reshape(b, h * block_size, w * block_size, -1)


@keras_op("x")
def space_to_depth(x, block_size, data_format="channels_last"):
    b, h, w, c = x.shape
    x = x.reshape(b, h // block_size, block_size, w // block_size, block_size, c)
    return x.transpose(0, 1, 3, 2, 4, 5).reshape(b, h // block_size, w // block_size, -1)


@keras_op("data", "segment_ids")
def _segment_min(data, segment_ids, num_segments, sorted=False):  # noqa: A002
    return jax.ops.segment_min(data, segment_ids, num_segments, indices_are_sorted=sorted)


@keras_op("data", "segment_ids")
def _segment_prod(data, segment_ids, num_segments, sorted=False):  # noqa: A002
    return jax.ops.segment_prod(data, segment_ids, num_segments, indices_are_sorted=sorted)


def segment_min(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    from mylib.keras.ops.core import _num_segments

    return _segment_min(data, segment_ids,
                        _num_segments(segment_ids, num_segments, "segment_min"), sorted)


def segment_prod(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    from mylib.keras.ops.core import _num_segments

    return _segment_prod(data, segment_ids,
                         _num_segments(segment_ids, num_segments, "segment_prod"), sorted)


# ------------------------------------------------------------ linalg
@keras_op("x")
def qr(x, mode="reduced"):
    return jnp.linalg.qr(x, mode=mode)


@keras_op("x")
def svd(x, full_matrices=True, compute_uv=True):
    return jnp.linalg.svd(x, full_matrices=full_matrices, compute_uv=compute_uv)


@keras_op("x")
def eigh(x):
    return jnp.linalg.eigh(x)


@keras_op("x")
def slogdet(x):
    return jnp.linalg.slogdet(x)


@keras_op("a", "b")
def lstsq(a, b, rcond=None):
    return jnp.linalg.lstsq(a, b, rcond=rcond)[0]


@keras_op("a", "b")
def solve_triangular(a, b, lower=False):
    return jax.scipy.linalg.solve_triangular(a, b, lower=lower)


@keras_op("x")
def matrix_rank(x, tol=None):
    return jnp.linalg.matrix_rank(x, tol)


def switch(index, branches, *operands):
    """``branches[index](*operands)``; on arrays `jax.lax.switch`, on a symbolic index
    a chain of mylib `cond`s."""
    from mylib.keras.ops._dispatch import any_symbolic

    if not any_symbolic(index) and not any_symbolic(operands):
        return lax.switch(index, branches, *operands)
    from mylib.core.ops import control_flow_ops, math_ops

    def pick(i):
        if i == len(branches) - 1:
            return branches[i](*operands)
        return control_flow_ops.cond(math_ops.equal(index, i),
                                     lambda: branches[i](*operands), lambda: pick(i + 1))
    return pick(0)


__all__ = sorted(n for n, v in list(globals().items())
                 if not n.startswith("_") and callable(v) and n != "keras_op" and
                 getattr(v, "__module__", None) in (__name__, "mylib.keras.ops.numpy"))
