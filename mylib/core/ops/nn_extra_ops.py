"""More of `tf.nn` as TensorFlow 1 programs use it: `lrn` (local response
normalization), `fused_batch_norm`, `xw_plus_b`, `zero_fraction`, `atrous_conv2d`,
`separable_conv2d`, `top_k`, `normalize_moments`, `sufficient_statistics`, `crelu`.

`LRN` is a primitive (one windowed sum of squares over channels); its gradient
is the generic VJP op. The others are built from existing graph ops, so their gradients
are those ops'.
"""

from __future__ import annotations

import jax.numpy as jnp

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.op_registry import OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops import array_ops, indexing_ops, math_ops, nn_ops, reduction_ops
from mylib.core.ops.cast_ops import cast
from mylib.core.ops.sequence_ops import top_k  # noqa: F401 - tf.nn.top_k is tf.math.top_k

__all__ = ["lrn", "local_response_normalization", "fused_batch_norm", "xw_plus_b",
           "zero_fraction", "atrous_conv2d", "separable_conv2d", "top_k", "normalize_moments",
           "sufficient_statistics", "crelu"]


# ---------------------------------------------------------------- LRN
def _lrn_kernel(x, *, depth_radius, bias, alpha, beta):
    r, c = depth_radius, x.shape[-1]
    sq = jnp.pad(jnp.square(x), [(0, 0)] * (x.ndim - 1) + [(r, r)])
    # the channel window as a sum of 2r + 1 shifted slices (differentiable, unlike a
    # generic reduce_window)
    s = sum(sq[..., k:k + c] for k in range(2 * r + 1))
    return x / jnp.power(bias + alpha * s, beta)


LRN = OpDef("LRN", kernel=_lrn_kernel)


@LRN.shape_fn
def _lrn_shape(x, **_):
    if x.shape.rank is not None and x.shape.rank != 4:
        raise errors.InvalidArgumentError(f"input must be 4-D (NHWC), got shape {x.shape}")
    if not x.dtype.is_floating:
        raise errors.InvalidArgumentError(f"input must be float, got {x.dtype.name}")
    return TensorSpec(x.shape, x.dtype)


def local_response_normalization(input, depth_radius=5, bias=1.0, alpha=1.0,  # noqa: A002
                                 beta=0.5, name=None):
    """Local response normalization over channels (Krizhevsky et al., "ImageNet
    Classification with Deep Convolutional Neural Networks", 2012), as TensorFlow's
    `tf.nn.lrn`::

        sqr_sum[b, h, w, c] = sum(input[b, h, w, c - r : c + r + 1] ** 2)
        output = input / (bias + alpha * sqr_sum) ** beta

    Args:
      input: float `Tensor` [batch, height, width, channels] (NHWC).
      depth_radius: int r, the half-width of the channel window.
      bias, alpha, beta: floats, as in the formula (alpha is not divided by the window
        size, as TensorFlow).
    Returns:
      `Tensor` of `input`'s shape and dtype.
    Raises:
      InvalidArgumentError: if `input` is not 4-D float.
    """
    x = convert_to_tensor(input)
    return LRN(x, depth_radius=int(depth_radius), bias=float(bias), alpha=float(alpha),
               beta=float(beta), name=name)


lrn = local_response_normalization


# ---------------------------------------------------------------- batch norm, moments
def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None,
                     exponential_avg_factor=1.0):
    """Batch normalization of a 4-D `x` over all axes but the channels', in one call.

    Args:
      x: float `Tensor` [N, H, W, C] ("NHWC") or [N, C, H, W] ("NCHW").
      scale, offset: `Tensor`s [C].
      mean, variance: `Tensor`s [C]; required when `is_training` is False (the
        population statistics), ignored otherwise.
      epsilon: float added to the variance.
      is_training: normalise with the batch's statistics (True) or `mean`/`variance`.
      exponential_avg_factor: must be 1.0 (TensorFlow 2's running-average option is not
        supported).
    Returns:
      `(y, batch_mean, batch_variance)`: `y` of `x`'s shape; in training, the batch mean
      and the batch variance with Bessel's correction (n / (n - 1)), as TensorFlow
      returns them for the moving averages (`y` uses the biased variance); at
      inference, `mean` and `variance` themselves.
    Raises:
      ValueError: for a bad `data_format`, or missing `mean`/`variance` at inference.
    """
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"fused_batch_norm: data_format must be 'NHWC' or 'NCHW'. "
                         f"Received: data_format={data_format!r}")
    if exponential_avg_factor != 1.0:
        raise ValueError("fused_batch_norm: exponential_avg_factor other than 1.0 is not "
                         "supported")
    x = convert_to_tensor(x)
    axes = [0, 1, 2] if data_format == "NHWC" else [0, 2, 3]
    bshape = [1, 1, 1, -1] if data_format == "NHWC" else [1, -1, 1, 1]

    def b(t):
        return array_ops.reshape(convert_to_tensor(t, dtype_hint=x.dtype), bshape)

    if is_training:
        m, v = nn_ops.moments(x, axes)
        s = x.shape.as_list()
        n = None if any(s[a] is None for a in axes) else s[0] * s[axes[1]] * s[axes[2]]
        if n is None:
            sz = cast(array_ops.size(x), x.dtype) / cast(array_ops.shape(x)[
                1 if data_format == "NCHW" else 3], x.dtype)
            corr = sz / math_ops.maximum(sz - 1, 1.0)
        else:
            corr = n / max(n - 1, 1)
        y = nn_ops.batch_normalization(x, b(m), b(v), b(offset), b(scale), epsilon)
        return array_ops.identity(y, name=name), m, v * corr
    if mean is None or variance is None:
        raise ValueError("fused_batch_norm: `mean` and `variance` are required when "
                         "is_training=False")
    y = nn_ops.batch_normalization(x, b(mean), b(variance), b(offset), b(scale), epsilon)
    return (array_ops.identity(y, name=name), convert_to_tensor(mean),
            convert_to_tensor(variance))


def sufficient_statistics(x, axes, shift=None, keepdims=False, name=None, keep_dims=None):
    """`(count, sum(x), sum(x ** 2), shift)` over `axes`, as TensorFlow's
    `tf.nn.sufficient_statistics` (`shift` subtracted first when given; the returned
    shift is None otherwise). `count` is a float scalar of `x`'s dtype."""
    x = convert_to_tensor(x)
    keep = bool(keepdims or keep_dims)
    shape = array_ops.shape(x)
    count = reduction_ops.reduce_prod(cast(indexing_ops.gather(shape, list(axes)), x.dtype))
    xs = x if shift is None else x - shift
    m_ss = reduction_ops.reduce_sum(xs, axes, keepdims=keep)
    v_ss = reduction_ops.reduce_sum(math_ops.square(xs), axes, keepdims=keep)
    return count, m_ss, v_ss, (None if shift is None else convert_to_tensor(shift))


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """`(mean, variance)` from sufficient statistics: ``mean = mean_ss / counts +
    shift``, ``variance = variance_ss / counts - (mean_ss / counts) ** 2``."""
    d = math_ops.reciprocal(counts)
    shifted_mean = mean_ss * d
    mean = shifted_mean if shift is None else shifted_mean + shift
    var = variance_ss * d - math_ops.square(shifted_mean)
    return mean, var


# ---------------------------------------------------------------- small composites
def xw_plus_b(x, weights, biases, name=None):
    """`matmul(x, weights) + biases`.

    Args:
      x: `Tensor` [batch, in]; weights: [in, out]; biases: [out].
    Returns:
      `Tensor` [batch, out].
    """
    return nn_ops.bias_add(math_ops.matmul(x, weights), biases, name=name)


def zero_fraction(value, name=None):
    """The fraction of zeros in `value`, a float32 scalar (as TensorFlow, e.g. to
    summarise how many ReLU outputs are dead)."""
    v = convert_to_tensor(value)
    z = math_ops.equal(v, False if v.dtype.is_bool else 0)
    return reduction_ops.reduce_mean(cast(z, _dtypes.float32), name=name)


def crelu(features, axis=-1, name=None):
    """Concatenated ReLU: ``concat([relu(x), relu(-x)], axis)`` (Shang et al., 2016);
    the `axis` size doubles."""
    x = convert_to_tensor(features)
    return array_ops.concat([nn_ops.relu(x), nn_ops.relu(math_ops.negative(x))], axis,
                            name=name or "crelu")


def atrous_conv2d(value, filters, rate, padding, name=None):
    """Dilated ("atrous") 2-D convolution: `conv2d` with stride 1 and dilation `rate`
    (Chen et al., DeepLab, 2015).

    Args:
      value: `Tensor` [batch, height, width, in_channels] (NHWC).
      filters: `Tensor` [kh, kw, in_channels, out_channels].
      rate: positive int, the spacing between filter taps.
      padding: "SAME" or "VALID".
    Returns:
      `Tensor` [batch, out_h, out_w, out_channels].
    Raises:
      ValueError: if `rate` is not a positive int.
    """
    if not isinstance(rate, int) or rate < 1:
        raise ValueError(f"atrous_conv2d: rate must be a positive int. Received: rate={rate!r}")
    return nn_ops.conv2d(value, filters, strides=1, padding=padding, dilations=rate, name=name)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     rate=None, name=None, data_format="NHWC", dilations=None):
    """Depthwise convolution followed by a 1x1 (pointwise) convolution that mixes the
    channels (as TensorFlow's `tf.nn.separable_conv2d`).

    Args:
      input: `Tensor` [batch, height, width, in_channels] (NHWC).
      depthwise_filter: [kh, kw, in_channels, channel_multiplier].
      pointwise_filter: [1, 1, in_channels * channel_multiplier, out_channels].
      strides: [1, s, s, 1] (or an int), applied by the depthwise step.
      padding: "SAME" or "VALID".
      rate / dilations: the depthwise step's dilation.
    Returns:
      `Tensor` [batch, out_h, out_w, out_channels].
    """
    d = dilations if dilations is not None else (rate if rate is not None else 1)
    if isinstance(d, (list, tuple)) and len(d) == 2:
        d = [1, d[0], d[1], 1]
    y = nn_ops.depthwise_conv2d(input, depthwise_filter, strides=strides, padding=padding,
                                data_format=data_format, dilations=d)
    return nn_ops.conv2d(y, pointwise_filter, strides=1, padding="VALID",
                         data_format=data_format, name=name)
