"""`keras.ops` neural-network operations (Keras 3's `keras.ops.nn`): activations,
softmax, one-hot, cross-entropies, moments, normalization, convolution and pooling
(``channels_last`` by default, as Keras). Formulas follow Keras 3's JAX backend."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from mylib.core.ops.ctc_ops import _ctc_kernel
from mylib.keras.ops._dispatch import keras_op

EPSILON = 1e-7  # Keras's backend epsilon, used by the probability cross-entropies


def _act(name, f, doc):
    def fn(x):
        return f(x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return keras_op("x")(fn)


sigmoid = _act("sigmoid", jax.nn.sigmoid, "``1 / (1 + exp(-x))``.")
relu = _act("relu", jax.nn.relu, "``max(x, 0)``.")
relu6 = _act("relu6", jax.nn.relu6, "``min(max(x, 0), 6)``.")
silu = _act("silu", jax.nn.silu, "``x * sigmoid(x)``.")
swish = _act("swish", jax.nn.silu, "``x * sigmoid(x)`` (= `silu`).")
softplus = _act("softplus", jax.nn.softplus, "``log(1 + exp(x))``.")
softsign = _act("softsign", jax.nn.soft_sign, "``x / (1 + |x|)``.")
selu = _act("selu", jax.nn.selu, "Scaled ELU (Klambauer et al., 2017).")
log_sigmoid = _act("log_sigmoid", jax.nn.log_sigmoid, "``log(sigmoid(x))``, stably.")
hard_sigmoid = _act("hard_sigmoid", jax.nn.hard_sigmoid, "``relu6(x + 3) / 6``.")
hard_silu = _act("hard_silu", jax.nn.hard_silu, "``x * hard_sigmoid(x)``.")
hard_swish = _act("hard_swish", jax.nn.hard_silu, "``x * hard_sigmoid(x)``.")
tanh_shrink = _act("tanh_shrink", lambda x: x - jnp.tanh(x), "``x - tanh(x)``.")
mish = _act("mish", lambda x: x * jnp.tanh(jax.nn.softplus(x)), "``x * tanh(softplus(x))``.")


@keras_op("x")
def elu(x, alpha=1.0):
    return jax.nn.elu(x, alpha)


@keras_op("x")
def celu(x, alpha=1.0):
    return jax.nn.celu(x, alpha)


@keras_op("x")
def leaky_relu(x, negative_slope=0.2):
    """``x`` if ``x >= 0`` else ``negative_slope * x`` (Keras's default slope 0.2)."""
    return jax.nn.leaky_relu(x, negative_slope)


@keras_op("x")
def gelu(x, approximate=True):
    """Gaussian error linear unit; the tanh approximation by default (as Keras 3)."""
    return jax.nn.gelu(x, approximate)


@keras_op("x")
def softmax(x, axis=-1):
    return jax.nn.softmax(x, axis=axis)


@keras_op("x")
def log_softmax(x, axis=-1):
    return jax.nn.log_softmax(x, axis=axis)


@keras_op("x")
def normalize(x, axis=-1, order=2, epsilon=None):
    """`x` divided by its `order`-norm along `axis` (at least `epsilon`)."""
    eps = 1e-12 if epsilon is None else epsilon
    n = jnp.linalg.norm(x, ord=order, axis=axis, keepdims=True)
    return x / jnp.maximum(n, eps)


@keras_op("x")
def one_hot(x, num_classes, axis=-1, dtype=None, sparse=False):
    """One-hot vectors of the int class ids `x` (ids outside ``[0, num_classes)`` give
    zeros), float32 by default."""
    return jax.nn.one_hot(x, num_classes, axis=axis, dtype=dtype or "float32")


@keras_op("x")
def multi_hot(x, num_classes, axis=-1, dtype=None, sparse=False):
    """Per-row indicator of the ids in `x` ([batch, k] ids -> [batch, num_classes])."""
    oh = jax.nn.one_hot(x, num_classes, axis=axis, dtype=dtype or "float32")
    red = -2 if axis == -1 else axis
    return jnp.max(oh, axis=red) if x.ndim > 1 else jnp.max(oh, axis=0)


@keras_op("target", "output")
def binary_crossentropy(target, output, from_logits=False):
    """Elementwise binary cross-entropy (probabilities clipped to
    ``[1e-7, 1 - 1e-7]``)."""
    target = jnp.asarray(target, dtype=jnp.result_type(output))
    if from_logits:
        return -target * jax.nn.log_sigmoid(output) - (1 - target) * jax.nn.log_sigmoid(
            -output)
    output = jnp.clip(output, EPSILON, 1 - EPSILON)
    return -(target * jnp.log(output) + (1 - target) * jnp.log(1 - output))


@keras_op("target", "output")
def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy of one-hot (or soft) `target` against `output`, summed over
    `axis`; probabilities are renormalized and clipped as Keras does."""
    if from_logits:
        log_prob = jax.nn.log_softmax(output, axis=axis)
    else:
        output = output / jnp.sum(output, axis, keepdims=True)
        log_prob = jnp.log(jnp.clip(output, EPSILON, 1 - EPSILON))
    return -jnp.sum(target * log_prob, axis=axis)


@keras_op("target", "output")
def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy of int class ids `target` ([batch] or [batch, 1]) against
    `output`."""
    if target.ndim == output.ndim and target.shape[-1] == 1:
        target = jnp.squeeze(target, axis=-1)
    oh = jax.nn.one_hot(target.astype("int32"), output.shape[axis], axis=axis,
                        dtype=output.dtype)
    return categorical_crossentropy.__wrapped__(oh, output, from_logits, axis)


@keras_op("x")
def _moments(x, axes, keepdims=False):
    mean = jnp.mean(x, axis=axes, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=axes, keepdims=True)
    if not keepdims:
        mean, var = jnp.squeeze(mean, axes), jnp.squeeze(var, axes)
    return mean, var


def moments(x, axes, keepdims=False, synchronized=False):
    """``(mean, variance)`` of `x` over `axes` (population variance)."""
    axes = tuple(axes) if isinstance(axes, (list, tuple)) else (axes,)
    return _moments(x, axes, keepdims)


@keras_op("x", "mean", "variance", "offset", "scale")
def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
    """``(x - mean) / sqrt(variance + epsilon) * scale + offset``, with the 1-D
    statistics laid along `axis` of `x`."""
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    r = lambda v: jnp.reshape(v, shape)
    inv = lax.rsqrt(r(variance) + epsilon)
    if scale is not None:
        inv = inv * r(scale)
    out = (x - r(mean)) * inv
    return out + r(offset) if offset is not None else out


def _tuple(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _conv_dims(nd, data_format):
    sp = "DHW"[-nd:] if nd <= 3 else None
    if data_format == "channels_first":
        return ("NC" + sp, "OI" + sp, "NC" + sp)
    return ("N" + sp + "C", sp + "IO", "N" + sp + "C")


@keras_op("inputs", "kernel")
def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """N-D convolution (1, 2 or 3 spatial dims): `inputs` ``[batch, *spatial, in]``
    (``channels_last``), `kernel` ``[*window, in / groups, out]``."""
    nd = inputs.ndim - 2
    dn = lax.conv_dimension_numbers(inputs.shape, kernel.shape,
                                    _conv_dims(nd, data_format or "channels_last"))
    cin = inputs.shape[1] if data_format == "channels_first" else inputs.shape[-1]
    groups = cin // kernel.shape[-2]
    return lax.conv_general_dilated(inputs, kernel, _tuple(strides, nd), padding.upper(),
                                    rhs_dilation=_tuple(dilation_rate, nd),
                                    dimension_numbers=dn, feature_group_count=groups)


@keras_op("inputs", "kernel")
def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1):
    """Depthwise convolution: `kernel` ``[*window, in, multiplier]``."""
    nd = inputs.ndim - 2
    cin = inputs.shape[1] if data_format == "channels_first" else inputs.shape[-1]
    k = jnp.reshape(kernel, kernel.shape[:-2] + (1, cin * kernel.shape[-1]))
    dn = lax.conv_dimension_numbers(inputs.shape, k.shape,
                                    _conv_dims(nd, data_format or "channels_last"))
    return lax.conv_general_dilated(inputs, k, _tuple(strides, nd), padding.upper(),
                                    rhs_dilation=_tuple(dilation_rate, nd),
                                    dimension_numbers=dn, feature_group_count=cin)


@keras_op("inputs", "depthwise_kernel", "pointwise_kernel")
def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1, padding="valid",
                   data_format=None, dilation_rate=1):
    """A depthwise convolution (`depthwise_kernel` ``[*window, in, multiplier]``) then a
    1x1 convolution (`pointwise_kernel` ``[1, ..., in * multiplier, out]``)."""
    y = depthwise_conv.__wrapped__(inputs, depthwise_kernel, strides, padding, data_format,
                                   dilation_rate)
    return conv.__wrapped__(y, pointwise_kernel, 1, "valid", data_format, 1)


def _pool(inputs, pool_size, strides, padding, data_format, init, op):
    nd = inputs.ndim - 2
    window = _tuple(pool_size, nd)
    strides = _tuple(strides if strides is not None else pool_size, nd)
    if data_format == "channels_first":
        dims, st = (1, 1) + window, (1, 1) + strides
    else:
        dims, st = (1,) + window + (1,), (1,) + strides + (1,)
    return lax.reduce_window(inputs, init, op, dims, st, padding.upper())


@keras_op("inputs")
def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Max pooling over windows of `pool_size` (stride = pool size by default)."""
    return _pool(inputs, pool_size, strides, padding, data_format, -jnp.inf, lax.max)


@keras_op("inputs")
def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Average pooling; with ``"same"`` padding the mean is over the in-bounds entries
    only (as Keras)."""
    s = _pool(inputs, pool_size, strides, padding, data_format, 0.0, lax.add)
    if padding.lower() == "valid":
        return s / float(math.prod(_tuple(pool_size, inputs.ndim - 2)))
    n = _pool(jnp.ones_like(inputs), pool_size, strides, padding, data_format, 0.0, lax.add)
    return s / n


@keras_op("targets", "predictions")
def in_top_k(targets, predictions, k):
    """Whether each target class id is among the `k` largest predictions of its row
    (ties with the k-th value count as in, as TensorFlow)."""
    t = jnp.take_along_axis(predictions, targets.astype("int32")[:, None], axis=-1)
    kth = lax.top_k(predictions, k)[0][:, -1:]
    return jnp.squeeze(t >= kth, -1)


@keras_op("target", "output", "target_length", "output_length")
def ctc_loss(target, output, target_length, output_length, mask_index=0):
    """CTC loss of each sequence (Graves et al., 2006), as Keras 3's ``ops.ctc_loss``
    (whose JAX backend copies `optax.ctc_loss`, used here: the kernel of the
    `CTCLossDense` op).

    Args:
      target: int ``[batch, max_label_length]`` labels, padded past `target_length`.
      output: float ``[batch, max_time, num_classes]`` logits (log-softmax inside).
      target_length: int ``[batch]`` label lengths.
      output_length: int ``[batch]`` numbers of valid steps.
      mask_index: the blank class id.
    Returns:
      float ``[batch]``: ``-log p(target | output)``.
    """
    output = jnp.asarray(output)
    output = output.astype(jnp.result_type(output.dtype, jnp.float32))
    return _ctc_kernel(jnp.asarray(target, jnp.int32), output,
                       jnp.asarray(target_length, jnp.int32),
                       jnp.asarray(output_length, jnp.int32), blank_index=int(mask_index))


@keras_op("x")
def _top_k(x, k, sorted=True):  # noqa: A002
    v, i = lax.top_k(x, k)
    return v, i.astype("int32")


def top_k(x, k, sorted=True):  # noqa: A002
    """``(values, indices)`` of the `k` largest entries of the last axis."""
    return _top_k(x, k, sorted)


def _adaptive_pool(inputs, output_size, data_format, reduce):
    from mylib.layers.pooling import adaptive_windows

    rank = inputs.ndim - 2
    sizes = (output_size,) * rank if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != rank:
        raise ValueError(f"`output_size` must be an int or {rank} ints for inputs of rank "
                         f"{inputs.ndim}. Received: output_size={output_size!r}")
    first = (data_format or "channels_last") == "channels_first"
    x = inputs
    for i, out in enumerate(sizes):
        axis = 2 + i if first else 1 + i
        cells = [reduce(lax.slice_in_dim(x, a, b, axis=axis), axis=axis, keepdims=True)
                 for a, b in adaptive_windows(x.shape[axis], int(out))]
        x = jnp.concatenate(cells, axis=axis)
    return x


@keras_op("inputs")
def adaptive_average_pool(inputs, output_size, data_format=None):
    """Averages each spatial axis into `output_size` cells (cell i covers
    ``floor(i * n / out)`` to ``ceil((i + 1) * n / out)``), as Keras 3."""
    return _adaptive_pool(inputs, output_size, data_format, jnp.mean)


@keras_op("inputs")
def adaptive_max_pool(inputs, output_size, data_format=None):
    """The maximum of each adaptive-pooling cell (see `adaptive_average_pool`)."""
    return _adaptive_pool(inputs, output_size, data_format, jnp.max)


__all__ = sorted(n for n, v in list(globals().items())
                 if not n.startswith("_") and callable(v) and
                 getattr(v, "__module__", None) == __name__)
