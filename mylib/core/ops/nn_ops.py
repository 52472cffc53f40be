"""Neural-network ops: activations, softmax, cross-entropies, bias_add, convolution,
pooling, dropout, normalization helpers (TensorFlow's `tf.nn`).

The cross-entropy ops are primitives (as in TensorFlow) for their numerics: they are
computed from a stable log-softmax, so huge logits and `-inf` logits give finite losses
and gradients wherever TensorFlow does.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.compat_args import deprecated_alias
from mylib.core.op_registry import NotDifferentiable, OpDef, RegisterGradient, TensorSpec, \
    convert_to_tensor
from mylib.core.ops import (_shape_rules, array_ops, constant_ops, math_ops, random_ops,
                            reduction_ops)
from mylib.core.tensor_shape import TensorShape

__all__ = ["relu", "relu6", "elu", "selu", "gelu", "softplus", "softsign", "leaky_relu",
           "silu", "swish", "softmax", "log_softmax", "bias_add",
           "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
           "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
           "weighted_cross_entropy_with_logits", "conv2d", "max_pool", "max_pool2d",
           "avg_pool", "avg_pool2d", "l2_loss", "l2_normalize", "moments", "dropout",
           "conv1d", "depthwise_conv2d", "conv2d_transpose", "max_pool1d", "avg_pool1d",
           "resize_images", "batch_normalization", "in_top_k"]


def _zeros(t):
    return constant_ops.zeros_like(t)


# ---------------------------------------------------------------- activations
Relu = OpDef("Relu", kernel=jax.nn.relu, shape_fn=_shape_rules.unary)


@RegisterGradient("Relu")
def _relu_grad(op, grad):
    return [array_ops.where(math_ops.greater(op.outputs[0], 0), grad, _zeros(grad))]


def relu(features, name=None):
    """Rectified linear unit: `max(features, 0)` (gradient 0 at 0, as TensorFlow).

    Args:
      features: float `Tensor` of any shape.
    Returns:
      `Tensor` of the same shape and dtype.
    """
    return Relu(convert_to_tensor(features), name=name)


Relu6 = OpDef("Relu6", kernel=lambda x: jnp.clip(x, 0, 6), shape_fn=_shape_rules.unary)


@RegisterGradient("Relu6")
def _relu6_grad(op, grad):
    x = op.inputs[0]
    inside = math_ops.logical_and(math_ops.greater(x, 0), math_ops.less(x, 6))
    return [array_ops.where(inside, grad, _zeros(grad))]


def relu6(features, name=None):
    """`min(max(features, 0), 6)`."""
    return Relu6(convert_to_tensor(features), name=name)


Elu = OpDef("Elu", kernel=jax.nn.elu, shape_fn=_shape_rules.unary)


@RegisterGradient("Elu")
def _elu_grad(op, grad):
    y = op.outputs[0]
    return [array_ops.where(math_ops.greater(y, 0), grad, grad * (y + 1))]


def elu(features, name=None):
    """Exponential linear unit: `x` if `x > 0` else `exp(x) - 1`."""
    return Elu(convert_to_tensor(features), name=name)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
Selu = OpDef("Selu", kernel=jax.nn.selu, shape_fn=_shape_rules.unary)


@RegisterGradient("Selu")
def _selu_grad(op, grad):
    y = op.outputs[0]
    return [array_ops.where(math_ops.greater(y, 0), grad * _SELU_SCALE,
                            grad * (y + _SELU_SCALE * _SELU_ALPHA))]


def selu(features, name=None):
    """Scaled ELU (Klambauer et al., 2017): `scale * elu(x, alpha)` with the paper's
    constants."""
    return Selu(convert_to_tensor(features), name=name)


def gelu(features, approximate=False, name=None):
    """Gaussian error linear unit (Hendrycks & Gimpel): `x * Phi(x)`.

    Args:
      approximate: use the tanh approximation; default False (exact, with erf), as TF.
    """
    x = convert_to_tensor(features)
    if approximate:
        c = float(np.sqrt(2 / np.pi))
        return 0.5 * x * (1 + math_ops.tanh(c * (x + 0.044715 * x * x * x)))
    return math_ops.multiply(0.5 * x, 1 + math_ops.erf(x * float(1 / np.sqrt(2))), name=name)


Softplus = OpDef("Softplus", kernel=jax.nn.softplus, shape_fn=_shape_rules.unary)


@RegisterGradient("Softplus")
def _softplus_grad(op, grad):
    return [grad * math_ops.sigmoid(op.inputs[0])]


def softplus(features, name=None):
    """`log(exp(features) + 1)`, stable for large inputs."""
    return Softplus(convert_to_tensor(features), name=name)


def softsign(features, name=None):
    """`features / (abs(features) + 1)`."""
    x = convert_to_tensor(features)
    return math_ops.divide(x, math_ops.abs(x) + 1, name=name)


def leaky_relu(features, alpha=0.2, name=None):
    """`x` if `x > 0` else `alpha * x` (TF's default alpha 0.2)."""
    x = convert_to_tensor(features)
    return array_ops.where(math_ops.greater(x, 0), x, x * alpha, name=name)


def silu(features, beta=1.0, name=None):
    """`x * sigmoid(beta * x)` (swish)."""
    x = convert_to_tensor(features)
    return math_ops.multiply(x, math_ops.sigmoid(x * beta if beta != 1.0 else x), name=name)


swish = silu


# ---------------------------------------------------------------- softmax
def _softmax_kernel(x, *, axis=-1):
    return jax.nn.softmax(x, axis=axis)


def _log_softmax_kernel(x, *, axis=-1):
    # Subtract the max before exponentiating; a row of finite max keeps -inf entries
    # -inf (exp gives 0) instead of NaN.
    m = lax.stop_gradient(jnp.max(x, axis=axis, keepdims=True))
    m = jnp.where(jnp.isfinite(m), m, 0)
    shifted = x - m
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True))


Softmax = OpDef("Softmax", kernel=_softmax_kernel, shape_fn=_shape_rules.unary)
LogSoftmax = OpDef("LogSoftmax", kernel=_log_softmax_kernel, shape_fn=_shape_rules.unary)


@RegisterGradient("Softmax")
def _softmax_grad(op, grad):
    y = op.outputs[0]
    axis = op.attrs.get("axis", -1)
    return [(grad - reduction_ops.reduce_sum(grad * y, axis, keepdims=True)) * y]


@RegisterGradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    y = op.outputs[0]
    axis = op.attrs.get("axis", -1)
    return [grad - reduction_ops.reduce_sum(grad, axis, keepdims=True) * math_ops.exp(y)]


def softmax(logits, axis=None, name=None, dim=None):
    """`exp(logits) / sum(exp(logits), axis)`, computed stably.

    Args:
      logits: float `Tensor` [..., num_classes]; `-inf` entries get probability 0.
      axis: the class axis (default -1); `dim` is TensorFlow 1's name.
    Returns:
      `Tensor` of the same shape; sums to 1 along `axis`.
    """
    axis = deprecated_alias("axis", "dim", axis, dim, "softmax")
    return Softmax(convert_to_tensor(logits), axis=-1 if axis is None else int(axis), name=name)


def log_softmax(logits, axis=None, name=None, dim=None):
    """`logits - log(sum(exp(logits), axis))`, stable for large logits (max subtracted).
    `dim` is TensorFlow 1's name of `axis`.

    Returns:
      `Tensor` of the same shape and dtype.
    """
    axis = deprecated_alias("axis", "dim", axis, dim, "log_softmax")
    return LogSoftmax(convert_to_tensor(logits), axis=-1 if axis is None else int(axis),
                      name=name)


# ---------------------------------------------------------------- BiasAdd
def _bias_add_kernel(value, bias, *, data_format="NHWC"):
    if data_format.startswith("NC") and value.ndim > 2:
        bias = jnp.reshape(bias, (-1,) + (1,) * (value.ndim - 2))
    return value + bias


BiasAdd = OpDef("BiasAdd", kernel=_bias_add_kernel)


@BiasAdd.shape_fn
def _bias_add_shape(value, bias, *, data_format="NHWC"):
    d = _shape_rules.same_dtype(value, bias)
    if bias.shape.rank is not None and bias.shape.rank != 1:
        raise errors.InvalidArgumentError(f"bias must be 1-D, got shape {bias.shape}")
    if value.shape.rank is None:
        return TensorSpec(value.shape, d)
    if value.shape.rank < 2:
        raise errors.InvalidArgumentError(f"value must have rank >= 2, got {value.shape}")
    c_axis = 1 if data_format.startswith("NC") else -1
    c = value.shape.as_list()[c_axis]
    b = bias.shape.as_list()[0] if bias.shape.rank else None
    if c is not None and b is not None and c != b:
        raise errors.InvalidArgumentError(
            f"bias size {b} differs from the channel dimension {c} of {value.shape}")
    return TensorSpec(value.shape, d)


@RegisterGradient("BiasAdd")
def _bias_add_grad(op, grad):
    value = op.inputs[0]
    r = value.shape.rank
    nc = op.attrs.get("data_format", "NHWC").startswith("NC")
    if r is None and not nc:
        # rank unknown when the graph is built: sum the leading axes to the bias's [C]
        return [grad, array_ops.sum_to_shape(grad, op.inputs[1])]
    c_axis = 1 if nc else r - 1
    axes = [i for i in range(r) if i != c_axis]
    return [grad, reduction_ops.reduce_sum(grad, axes)]


def bias_add(value, bias, data_format=None, name=None):
    """Adds the 1-D `bias` to the channel axis of `value` (last, or 1 for "NC..." formats).

    Args:
      value: `Tensor` [batch, ..., channels] (rank >= 2).
      bias: `Tensor` [channels], same dtype.
      data_format: "NHWC" (default) or "NCHW".
    Raises:
      InvalidArgumentError: if `bias` is not 1-D or its size differs from the channels.
    """
    v = convert_to_tensor(value)
    b = convert_to_tensor(bias, dtype_hint=v.dtype)
    return BiasAdd(v, b, data_format=data_format or "NHWC", name=name)


# ---------------------------------------------------------------- cross-entropies
def _xent_kernel(logits, labels):
    logp = _log_softmax_kernel(logits)
    loss = -jnp.sum(jnp.where(labels == 0, 0, labels * logp), axis=-1)
    return loss, jnp.exp(logp) - labels


SoftmaxCrossEntropyWithLogits = OpDef("SoftmaxCrossEntropyWithLogits", kernel=_xent_kernel)


@SoftmaxCrossEntropyWithLogits.shape_fn
def _xent_shape(logits, labels):
    d = _shape_rules.same_dtype(logits, labels)
    if not logits.shape.is_compatible_with(labels.shape):
        raise errors.InvalidArgumentError(
            f"logits and labels must have the same shape: {logits.shape} vs {labels.shape}")
    s = logits.shape.merge_with(labels.shape)
    if s.rank == 0:
        raise errors.InvalidArgumentError("logits must have rank >= 1")
    return [TensorSpec(TensorShape(None) if s.rank is None else s.as_list()[:-1], d),
            TensorSpec(s, d)]


def _is_zero_grad(t):
    return t is None or t.op.type == "ZerosLike"


def _xent_second_order(logits, grad_grad):
    # Gradient of the backprop output (softmax - labels) w.r.t. the logits, for
    # second-order derivatives (as TensorFlow's _SoftmaxCrossEntropyWithLogitsGrad).
    sm = softmax(logits)
    return (grad_grad - reduction_ops.reduce_sum(grad_grad * sm, -1, keepdims=True)) * sm


@RegisterGradient("SoftmaxCrossEntropyWithLogits")
def _xent_grad(op, grad_loss, grad_grad):
    logits, labels = op.inputs
    g = array_ops.expand_dims(grad_loss, -1)
    grad_logits = g * op.outputs[1]
    if not _is_zero_grad(grad_grad):
        grad_logits = grad_logits + _xent_second_order(logits, grad_grad)
    grad_labels = g * math_ops.negative(log_softmax(logits))
    return [grad_logits, grad_labels]


def softmax_cross_entropy_with_logits(labels=None, logits=None, axis=-1, name=None, dim=None):
    """Cross-entropy between `labels` (a distribution per row) and `softmax(logits)`.

    Stable: computed from a max-shifted log-softmax; `-inf` logits whose label is 0
    contribute 0 (no NaN). Gradients flow into both `logits` and `labels` (TF2's v2).

    Args:
      labels: float `Tensor` [..., num_classes]; each row a probability distribution.
      logits: float `Tensor` of the same shape and dtype.
      axis: the class axis (default -1); `dim` is TensorFlow 1's name.
    Returns:
      `Tensor` [...] (the class axis removed).
    Raises:
      InvalidArgumentError: if the shapes or dtypes differ.
    """
    if labels is None or logits is None:
        raise ValueError("softmax_cross_entropy_with_logits: both `labels` and `logits` are "
                         "required (pass them by keyword, as TensorFlow 1 requires)")
    if dim is not None:
        axis = dim
    lg = convert_to_tensor(logits)
    lb = convert_to_tensor(labels, dtype_hint=lg.dtype)
    if lb.dtype != lg.dtype:
        lb = math_ops.cast(lb, lg.dtype)
    if axis not in (-1, None) and lg.shape.rank is not None and axis != lg.shape.rank - 1:
        perm = [i for i in range(lg.shape.rank) if i != axis % lg.shape.rank] + [axis]
        lg, lb = array_ops.transpose(lg, perm), array_ops.transpose(lb, perm)
    loss, _ = SoftmaxCrossEntropyWithLogits(lg, lb, name=name)
    return loss


softmax_cross_entropy_with_logits_v2 = softmax_cross_entropy_with_logits


def _sparse_xent_kernel(logits, labels):
    logp = _log_softmax_kernel(logits)
    n = logits.shape[-1]
    hot = jax.nn.one_hot(labels, n, dtype=logits.dtype)
    picked = jnp.take_along_axis(logp, jnp.clip(labels, 0, n - 1)[..., None].astype(jnp.int32),
                                 axis=-1)[..., 0]
    # Out-of-range labels give NaN, as TensorFlow on GPU (CPU raises).
    bad = (labels < 0) | (labels >= n)
    loss = jnp.where(bad, jnp.nan, -picked).astype(logits.dtype)
    return loss, jnp.exp(logp) - hot


SparseSoftmaxCrossEntropyWithLogits = OpDef("SparseSoftmaxCrossEntropyWithLogits",
                                            kernel=_sparse_xent_kernel)


@SparseSoftmaxCrossEntropyWithLogits.shape_fn
def _sparse_xent_shape(logits, labels):
    if not labels.dtype.is_integer:
        raise errors.InvalidArgumentError(
            f"labels must be int32 or int64 class indices, got {labels.dtype.name}; "
            "for one-hot or soft labels use softmax_cross_entropy_with_logits")
    if not logits.dtype.is_floating:
        raise errors.InvalidArgumentError(f"logits must be floating, got {logits.dtype.name}")
    if logits.shape.rank is not None and labels.shape.rank is not None:
        if logits.shape.rank != labels.shape.rank + 1 or not TensorShape(
                logits.shape.as_list()[:-1]).is_compatible_with(labels.shape):
            raise errors.InvalidArgumentError(
                f"labels shape {labels.shape} must equal logits shape {logits.shape} "
                "without its last (class) dimension")
    batch = labels.shape if logits.shape.rank is None else TensorShape(
        logits.shape.as_list()[:-1]).merge_with(labels.shape)
    return [TensorSpec(batch, logits.dtype), TensorSpec(logits.shape, logits.dtype)]


@RegisterGradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_grad(op, grad_loss, grad_grad):
    logits = op.inputs[0]
    grad_logits = array_ops.expand_dims(grad_loss, -1) * op.outputs[1]
    if not _is_zero_grad(grad_grad):
        grad_logits = grad_logits + _xent_second_order(logits, grad_grad)
    return [grad_logits, None]


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """Cross-entropy of `softmax(logits)` against integer class `labels`.

    Stable for huge logits and for `-inf` logits (other than the label's).

    Args:
      labels: int32/int64 `Tensor` [...] of class indices in [0, num_classes).
      logits: float `Tensor` [..., num_classes].
    Returns:
      `Tensor` [...] of `logits`' dtype; NaN for an out-of-range label.
    Raises:
      InvalidArgumentError: if `labels` is not integer or its shape is not `logits`'
        shape without the last axis.
    """
    lg = convert_to_tensor(logits)
    lb = convert_to_tensor(labels, dtype_hint=_dtypes.int32)
    loss, _ = SparseSoftmaxCrossEntropyWithLogits(lg, lb, name=name)
    return loss


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Element-wise logistic loss: `max(x, 0) - x * z + log(1 + exp(-abs(x)))`, the
    stable form TensorFlow uses (x = logits, z = labels).

    Args:
      labels: float `Tensor` with values in [0, 1], same shape and dtype as `logits`.
      logits: float `Tensor`.
    Returns:
      `Tensor` of the element-wise losses.
    Raises:
      InvalidArgumentError: if shapes differ.
    """
    x = convert_to_tensor(logits)
    z = convert_to_tensor(labels, dtype_hint=x.dtype)
    if z.dtype != x.dtype:
        z = math_ops.cast(z, x.dtype)
    if not x.shape.is_compatible_with(z.shape):
        raise errors.InvalidArgumentError(
            f"logits and labels must have the same shape: {x.shape} vs {z.shape}")
    return math_ops.add(relu(x) - x * z, math_ops.log1p(math_ops.exp(-math_ops.abs(x))),
                        name=name)


def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name=None):
    """Sigmoid cross-entropy with the positive term weighted by `pos_weight` (stable)."""
    x = convert_to_tensor(logits)
    z = convert_to_tensor(labels, dtype_hint=x.dtype)
    log_weight = 1 + (pos_weight - 1) * z
    return math_ops.add((1 - z) * x, log_weight * (
        math_ops.log1p(math_ops.exp(-math_ops.abs(x))) + relu(-x)), name=name)


# ---------------------------------------------------------------- convolution, pooling
def _conv_padding(padding):
    if isinstance(padding, str):
        p = padding.upper()
        if p not in ("SAME", "VALID"):
            raise errors.InvalidArgumentError(
                f"padding must be 'SAME' or 'VALID'. Received: padding={padding!r}")
        return p
    return tuple(tuple(int(v) for v in row) for row in padding)


def _hw(v, n, what):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(a) for a in v)
    if len(v) == n + 2:  # TF's [1, s, s, 1] form
        return v[1:-1]
    if len(v) == n:
        return v
    if len(v) == 1:
        return v * n
    raise errors.InvalidArgumentError(f"{what} must have 1, {n} or {n + 2} entries, got {v}")


def _out_dim(d, k, s, dil, padding):
    if d is None:
        return None
    eff = (k - 1) * dil + 1
    if padding == "SAME":
        return -(-d // s)
    if padding == "VALID":
        return -(-(d - eff + 1) // s) if d >= eff else 0
    lo, hi = padding
    return (d + lo + hi - eff) // s + 1


def _conv2d_kernel(x, w, *, strides, padding, dilations, data_format, groups=1):
    dn = ("NHWC", "HWIO", "NHWC") if data_format == "NHWC" else ("NCHW", "HWIO", "NCHW")
    pad = padding if isinstance(padding, str) else tuple(padding)
    if (_FEW_CHANNELS and data_format == "NHWC" and groups == 1 and pad in ("SAME", "VALID")
            and tuple(strides) == (1, 1) and tuple(dilations) == (1, 1)
            and np.ndim(x) == 4 and np.shape(x)[-1] <= _FEW_CHANNELS
            and np.dtype(x.dtype) == np.float32 and np.dtype(w.dtype) == np.float32):
        return _conv_patch_filter_grad(x, w, pad)
    return lax.conv_general_dilated(x, w, strides, pad, rhs_dilation=dilations,
                                    dimension_numbers=dn, feature_group_count=groups)


# The filter gradient of a convolution over an input of at most this many channels
# (an image's first layer) is computed as one matmul of its patches, not by XLA's
# filter-gradient convolution, which is several times slower than the forward
# convolution on CPU for such inputs (benchmarks/conv_lowering.py: 5x5x3x64 on
# 32x32 images, 224 ms against 27 ms, forward included).
_FEW_CHANNELS = 4


def _patches(x, kh, kw, padding):
    """[n, oh, ow, kh * kw * c]: the input window of every output position, in the
    filter's (row, column, channel) order (stride 1)."""
    n, h, wd, c = x.shape
    if padding == "SAME":
        ph, pw = (kh - 1) // 2, (kw - 1) // 2
        x = jnp.pad(x, ((0, 0), (ph, kh - 1 - ph), (pw, kw - 1 - pw), (0, 0)))
        oh, ow = h, wd
    else:
        oh, ow = h - kh + 1, wd - kw + 1
    return jnp.concatenate([x[:, i:i + oh, j:j + ow, :] for i in range(kh)
                            for j in range(kw)], axis=-1)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _conv_patch_filter_grad(x, w, padding):
    """A stride-1 NHWC convolution: XLA's forward and input gradient, the filter
    gradient as ``patches^T @ dy`` (the same sum, in another order)."""
    return lax.conv_general_dilated(x, w, (1, 1), padding,
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _conv_patch_fwd(x, w, padding):
    return _conv_patch_filter_grad(x, w, padding), (x, w)


def _conv_patch_bwd(padding, res, g):
    x, w = res
    kh, kw, c, o = w.shape
    _, vjp_x = jax.vjp(lambda x: lax.conv_general_dilated(
        x, w, (1, 1), padding, dimension_numbers=("NHWC", "HWIO", "NHWC")), x)
    p = _patches(x, kh, kw, padding).reshape(-1, kh * kw * c)
    dw = jnp.matmul(p.T, g.reshape(-1, o)).reshape(w.shape)
    return vjp_x(g)[0], dw


_conv_patch_filter_grad.defvjp(_conv_patch_fwd, _conv_patch_bwd)


Conv2D = OpDef("Conv2D", kernel=_conv2d_kernel)
# Gradient: the generic VJP op (jax.vjp of the convolution: the transposed convolutions;
# for inputs of few channels the filter gradient is a matmul of patches, see above).


@Conv2D.shape_fn
def _conv2d_shape(x, w, *, strides, padding, dilations, data_format, groups=1):
    d = _shape_rules.same_dtype(x, w)
    if x.shape.rank not in (None, 4) or w.shape.rank not in (None, 4):
        raise errors.InvalidArgumentError(
            f"conv2d needs a 4-D input and a 4-D filter, got {x.shape} and {w.shape}")
    if x.shape.rank is None or w.shape.rank is None:
        return TensorSpec(TensorShape(None) if x.shape.rank is None else [None] * 4, d)
    xs, ws = x.shape.as_list(), w.shape.as_list()
    n, h, wd, c = xs if data_format == "NHWC" else (xs[0], xs[2], xs[3], xs[1])
    kh, kw, ci, co = ws
    if c is not None and ci is not None and c != ci * groups:
        raise errors.InvalidArgumentError(
            f"input channels {c} differ from the filter's in_channels {ci}"
            + (f" times groups={groups}" if groups != 1 else "")
            + f" (input {x.shape}, filter {w.shape})")
    if co is not None and co % groups:
        raise errors.InvalidArgumentError(
            f"the filter's out_channels {co} are not divisible by groups={groups}")
    pads = padding if isinstance(padding, str) else (None, None)
    oh = _out_dim(h, kh, strides[0], dilations[0], pads if isinstance(pads, str) else padding[0])
    ow = _out_dim(wd, kw, strides[1], dilations[1], pads if isinstance(pads, str) else padding[1])
    if (oh is not None and oh <= 0) or (ow is not None and ow <= 0):
        raise errors.InvalidArgumentError(
            f"the filter {w.shape} is larger than the padded input {x.shape}")
    out = [n, oh, ow, co] if data_format == "NHWC" else [n, co, oh, ow]
    return TensorSpec(out, d)


def conv2d(input, filters=None, strides=1, padding="VALID", data_format="NHWC",  # noqa: A002
           dilations=1, name=None, groups=1, filter=None, use_cudnn_on_gpu=None):  # noqa: A002
    """2-D convolution (cross-correlation, as TensorFlow) via XLA's conv.

    For a stride-1 float32 NHWC input of at most 4 channels (an image's first layer)
    the filter gradient is one matmul of the input's patches instead of XLA's
    filter-gradient convolution (several times faster on CPU; the same sums, so equal
    up to float32 rounding).

    Args:
      input: `Tensor` [batch, height, width, in_channels] ("NHWC"; or "NCHW").
      filters: `Tensor` [kh, kw, in_channels, out_channels], same dtype.
      strides: int, [sh, sw] or [1, sh, sw, 1].
      padding: "SAME", "VALID", or explicit [[top, bottom], [left, right]].
      dilations: int, [dh, dw] or [1, dh, dw, 1].
      groups: grouped convolution: the input channels split into `groups` groups, each
        convolved with its own `out_channels / groups` filters of
        `in_channels / groups` channels (the filter is [kh, kw, in / groups, out]).
      filter: TensorFlow 1's name of `filters`; `use_cudnn_on_gpu` is accepted and has
        no effect (XLA chooses the kernels).
    Returns:
      `Tensor` [batch, out_h, out_w, out_channels]; SAME: out = ceil(in / stride).
    Raises:
      InvalidArgumentError: if the ranks, channel counts or dtypes disagree.
    """
    if (filters is None) == (filter is None):
        raise TypeError("conv2d: give the filter as `filters` (or TensorFlow 1's `filter`), "
                        "exactly once")
    filters = filters if filters is not None else filter
    x = convert_to_tensor(input)
    w = convert_to_tensor(filters, dtype_hint=x.dtype)
    pad = _conv_padding(padding)
    if not isinstance(pad, str) and len(pad) == 4:
        pad = pad[1:3] if data_format == "NHWC" else pad[2:]
    extra = {} if int(groups) == 1 else {"groups": int(groups)}  # old graphs: no attr
    return Conv2D(x, w, strides=_hw(strides, 2, "strides"), padding=pad,
                  dilations=_hw(dilations, 2, "dilations"), data_format=data_format, name=name,
                  **extra)


def _window(ksize, strides, data_format):
    if data_format == "NHWC":
        return (1, *ksize, 1), (1, *strides, 1)
    return (1, 1, *ksize), (1, 1, *strides)


def _max_pool_kernel(x, *, ksize, strides, padding, data_format):
    win, st = _window(ksize, strides, data_format)
    init = -jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min
    if tuple(ksize) == tuple(strides) and jnp.issubdtype(x.dtype, jnp.floating):
        return _tiled_max_pool(x, tuple(ksize), padding, data_format == "NHWC")
    # A numpy init value keeps lax's max-monoid path (differentiable) under jit.
    return lax.reduce_window(x, np.array(init, x.dtype), lax.max, win, st, padding)


# Windows that tile the input (stride == window, the usual 2x2/2 pooling) are pooled as
# a max over reshaped axes, with the gradient computed elementwise: on XLA:CPU the
# gradient of `reduce_window` (a `select_and_scatter`) took 46 ms for a 2x2 pool of a
# [32, 32, 32, 64] input against 3 ms for this form, same values
# (benchmarks/conv_lowering.py).
def _tile(x, k, padding, nhwc):
    """x cut or padded to whole windows as VALID or SAME pooling does, reshaped
    [n, H, kh, W, kw, c] (NHWC) or [n, c, H, kh, W, kw]; also the (before, after) rows
    and columns added (negative: dropped) on both spatial axes."""
    axes = (1, 2) if nhwc else (2, 3)
    edges = []
    for ax, kk in zip(axes, k):
        rest = x.shape[ax] % kk
        if padding == "VALID":  # the rows and columns no window covers are dropped
            edges.append((0, -rest))
        else:
            total = (kk - rest) % kk
            edges.append((total // 2, total - total // 2))
    if any(e != (0, 0) for e in edges):
        cfg = [(0, 0, 0)] * x.ndim
        for ax, (lo, hi) in zip(axes, edges):
            cfg[ax] = (lo, hi, 0)
        x = lax.pad(x, np.array(-np.inf, x.dtype), cfg)  # negative widths crop
    shape = list(x.shape)
    for ax, kk in sorted(zip(axes, k), reverse=True):
        shape[ax:ax + 1] = [shape[ax] // kk, kk]
    return x.reshape(shape), edges


def _window_axes(nhwc):
    return (2, 4) if nhwc else (3, 5)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3))
def _tiled_max_pool(x, k, padding, nhwc):
    xt, _ = _tile(x, k, padding, nhwc)
    return jnp.max(xt, axis=_window_axes(nhwc))


def _tiled_max_pool_fwd(x, k, padding, nhwc):
    return _tiled_max_pool(x, k, padding, nhwc), x


def _tiled_max_pool_bwd(k, padding, nhwc, x, g):
    """The gradient goes where XLA's `select_and_scatter` (what `lax.reduce_window`'s
    gradient, Keras 3 and the non-tiled pools use) routes it: a scan of each window in
    row-major order that keeps its pick while ``pick >= next`` and moves on otherwise.
    Without NaN that is the first maximum (TensorFlow's `MaxPoolGrad` too); a NaN is
    never kept (``NaN >= v`` and ``v >= NaN`` are false), so the pick is the window's
    last NaN when nothing follows it, else the first maximum of what follows."""
    xt, edges = _tile(x, k, padding, nhwc)
    wa = _window_axes(nhwc)
    zero = jnp.zeros((), g.dtype)
    n_win = k[0] * k[1]
    if n_win <= 9:  # small windows: the scan itself, one position at a time
        def at(n):
            idx = [slice(None)] * xt.ndim
            idx[wa[0]], idx[wa[1]] = divmod(n, k[1])
            return xt[tuple(idx)]

        pick_v, pick = at(0), jnp.zeros(g.shape, jnp.int32)
        for n in range(1, n_win):
            v = at(n)
            keep = pick_v >= v
            pick_v, pick = jnp.where(keep, pick_v, v), jnp.where(keep, pick, n)
        rows = [jnp.stack([jnp.where(pick == i * k[1] + j, g, zero) for j in range(k[1])],
                          wa[1] - 1) for i in range(k[0])]
        dt = jnp.stack(rows, wa[0])
    else:  # the same pick from reductions over the window axes
        pos_shape = [1] * xt.ndim
        pos_shape[wa[0]], pos_shape[wa[1]] = k
        pos = jnp.arange(n_win, dtype=jnp.int32).reshape(pos_shape)
        if jnp.issubdtype(xt.dtype, jnp.inexact):
            last_nan = jnp.max(jnp.where(jnp.isnan(xt), pos, -1), axis=wa, keepdims=True)
            after = pos > last_nan
            top = jnp.max(jnp.where(after, xt, jnp.array(-jnp.inf, xt.dtype)), axis=wa,
                          keepdims=True)
            first = jnp.min(jnp.where(after & (xt == top), pos, n_win), axis=wa,
                            keepdims=True)
            pick = jnp.where(first < n_win, first, last_nan)
        else:
            top = jnp.max(xt, axis=wa, keepdims=True)
            pick = jnp.min(jnp.where(xt == top, pos, n_win), axis=wa, keepdims=True)
        dt = jnp.where(pos == pick, jnp.expand_dims(g, wa), zero)
    shape = list(dt.shape)
    for ax in sorted(wa, reverse=True):
        shape[ax - 1:ax + 1] = [shape[ax - 1] * shape[ax]]
    cfg = [(0, 0, 0)] * x.ndim
    for ax, (lo, hi) in zip((1, 2) if nhwc else (2, 3), edges):
        cfg[ax] = (-lo, -hi, 0)  # undo the forward's padding or cropping
    return (lax.pad(dt.reshape(shape), np.array(0, g.dtype), cfg),)


_tiled_max_pool.defvjp(_tiled_max_pool_fwd, _tiled_max_pool_bwd)


def _avg_pool_kernel(x, *, ksize, strides, padding, data_format):
    win, st = _window(ksize, strides, data_format)
    s = lax.reduce_window(x, np.array(0, x.dtype), lax.add, win, st, padding)
    if padding == "VALID":
        return s / np.prod(ksize)
    # SAME: divide by the number of real (unpadded) elements, as TensorFlow.
    ones = jnp.ones(x.shape, x.dtype)
    cnt = lax.reduce_window(ones, np.array(0, x.dtype), lax.add, win, st, padding)
    return s / cnt


MaxPool = OpDef("MaxPool", kernel=_max_pool_kernel)
AvgPool = OpDef("AvgPool", kernel=_avg_pool_kernel)


def _pool_shape(x, *, ksize, strides, padding, data_format):
    if x.shape.rank is None:
        return TensorSpec([None] * 4, x.dtype)
    if x.shape.rank != 4:
        raise errors.InvalidArgumentError(f"pooling needs a 4-D input, got {x.shape}")
    xs = x.shape.as_list()
    n, h, w, c = xs if data_format == "NHWC" else (xs[0], xs[2], xs[3], xs[1])
    oh = _out_dim(h, ksize[0], strides[0], 1, padding)
    ow = _out_dim(w, ksize[1], strides[1], 1, padding)
    if (oh is not None and oh <= 0) or (ow is not None and ow <= 0):
        raise errors.InvalidArgumentError(f"window {list(ksize)} is larger than {x.shape}")
    return TensorSpec([n, oh, ow, c] if data_format == "NHWC" else [n, c, oh, ow], x.dtype)


MaxPool.shape_fn(_pool_shape)
AvgPool.shape_fn(_pool_shape)


def _pool(opdef, input, ksize, strides, padding, data_format, name):  # noqa: A002
    missing = [n for n, v in (("input (or value)", input), ("ksize", ksize),
                              ("strides", strides), ("padding", padding)) if v is None]
    if missing:
        raise TypeError(f"{opdef.name}: missing required argument(s) {', '.join(missing)}")
    p = _conv_padding(padding)
    if not isinstance(p, str):
        raise errors.InvalidArgumentError("pooling padding must be 'SAME' or 'VALID'")
    return opdef(convert_to_tensor(input), ksize=_hw(ksize, 2, "ksize"),
                 strides=_hw(strides, 2, "strides"), padding=p,
                 data_format=data_format or "NHWC", name=name)


def max_pool(input=None, ksize=None, strides=None, padding=None, data_format="NHWC",  # noqa: A002
             name=None, value=None):
    """Max pooling over spatial windows.

    Args:
      input: `Tensor` [batch, height, width, channels] ("NHWC").
      ksize: int, [kh, kw] or [1, kh, kw, 1].
      value: TensorFlow 1's name of `input` (also for `avg_pool`).
      strides: int, [sh, sw] or [1, sh, sw, 1].
      padding: "SAME" or "VALID".
    Returns:
      `Tensor` [batch, out_h, out_w, channels]. The gradient goes to the max of each
      window.
    """
    input = deprecated_alias("input", "value", input, value, "max_pool")  # noqa: A001
    return _pool(MaxPool, input, ksize, strides, padding, data_format, name)


def avg_pool(input=None, ksize=None, strides=None, padding=None, data_format="NHWC",  # noqa: A002
             name=None, value=None):
    """Average pooling; with "SAME" padding each window averages its real elements only.

    Args: as `max_pool`.
    Returns:
      `Tensor` [batch, out_h, out_w, channels].
    """
    input = deprecated_alias("input", "value", input, value, "avg_pool")  # noqa: A001
    return _pool(AvgPool, input, ksize, strides, padding, data_format, name)


max_pool2d = max_pool
avg_pool2d = avg_pool


def conv1d(input, filters, stride=1, padding="VALID", data_format="NWC",  # noqa: A002
           dilations=1, name=None, groups=1):
    """1-D convolution, as a 2-D convolution over a height of 1 (as TensorFlow).

    Args:
      input: `Tensor` [batch, width, in_channels] ("NWC"; or "NCW").
      filters: `Tensor` [k, in_channels / groups, out_channels], same dtype.
      stride: int (or [s]).
      padding: "SAME", "VALID", or explicit [left, right].
      dilations: int.
      groups: as `conv2d`.
    Returns:
      `Tensor` [batch, out_width, out_channels].
    """
    x = convert_to_tensor(input)
    w = convert_to_tensor(filters, dtype_hint=x.dtype)
    nchw = data_format in ("NCW", "NCHW")
    x = array_ops.expand_dims(x, 2 if nchw else 1)
    w = array_ops.expand_dims(w, 0)
    s = stride if isinstance(stride, int) else int(tuple(stride)[-2 if len(stride) == 3 else 0])
    d = dilations if isinstance(dilations, int) else int(tuple(dilations)[0])
    pad = padding if isinstance(padding, str) else [[0, 0], [int(padding[0]), int(padding[1])]]
    y = conv2d(x, w, strides=[1, s], padding=pad, data_format="NCHW" if nchw else "NHWC",
               dilations=[1, d], groups=groups)
    return array_ops.squeeze(y, [2 if nchw else 1], name=name)


def _depthwise_kernel(x, w, *, strides, padding, dilations):
    c = x.shape[-1]
    w = jnp.reshape(w, w.shape[:2] + (1, w.shape[2] * w.shape[3]))
    pad = padding if isinstance(padding, str) else tuple(padding)
    return lax.conv_general_dilated(x, w, strides, pad, rhs_dilation=dilations,
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=c)


DepthwiseConv2dNative = OpDef("DepthwiseConv2dNative", kernel=_depthwise_kernel)
# Shape: jax.eval_shape of the kernel. Gradient: the generic VJP op.


@DepthwiseConv2dNative.shape_fn
def _depthwise_shape(x, w, *, strides, padding, dilations):
    d = _shape_rules.same_dtype(x, w)
    if x.shape.rank not in (None, 4) or w.shape.rank not in (None, 4):
        raise errors.InvalidArgumentError(
            f"depthwise_conv2d needs a 4-D input and a 4-D filter, got {x.shape} and {w.shape}")
    if x.shape.rank is None or w.shape.rank is None:
        return TensorSpec([None] * 4, d)
    n, h, wd, c = x.shape.as_list()
    kh, kw, ci, m = w.shape.as_list()
    if c is not None and ci is not None and c != ci:
        raise errors.InvalidArgumentError(
            f"input channels {c} differ from the filter's in_channels {ci}")
    oh = _out_dim(h, kh, strides[0], dilations[0], padding if isinstance(padding, str)
                  else padding[0])
    ow = _out_dim(wd, kw, strides[1], dilations[1], padding if isinstance(padding, str)
                  else padding[1])
    if (oh is not None and oh <= 0) or (ow is not None and ow <= 0):
        raise errors.InvalidArgumentError(
            f"the filter {w.shape} is larger than the padded input {x.shape}")
    return TensorSpec([n, oh, ow, None if c is None or m is None else c * m], d)


def depthwise_conv2d(input, filter, strides=1, padding="VALID", data_format="NHWC",  # noqa: A002
                     dilations=1, name=None, rate=None):
    """Depthwise 2-D convolution: each input channel convolved with its own
    `channel_multiplier` filters (TensorFlow's `depthwise_conv2d_native`).

    Args:
      input: `Tensor` [batch, height, width, in_channels] ("NHWC"; "NCHW" is transposed).
      filter: `Tensor` [kh, kw, in_channels, channel_multiplier].
      strides, padding, dilations: as `conv2d`; `rate` is TensorFlow 1's name of
        `dilations` ([rh, rw]).
    Returns:
      `Tensor` [batch, out_h, out_w, in_channels * channel_multiplier]; output channel
      `c * channel_multiplier + m` is input channel `c` with filter `m`.
    """
    if rate is not None:
        r = [rate, rate] if isinstance(rate, int) else list(rate)
        dilations = [1, *r, 1] if len(r) == 2 else r
    x = convert_to_tensor(input)
    w = convert_to_tensor(filter, dtype_hint=x.dtype)
    nchw = data_format == "NCHW"
    if nchw:
        x = array_ops.transpose(x, [0, 2, 3, 1])
    pad = _conv_padding(padding)
    if not isinstance(pad, str) and len(pad) == 4:
        pad = pad[1:3] if not nchw else pad[2:]
    y = DepthwiseConv2dNative(x, w, strides=_hw(strides, 2, "strides"), padding=pad,
                              dilations=_hw(dilations, 2, "dilations"),
                              name=None if nchw else name)
    return array_ops.transpose(y, [0, 3, 1, 2], name=name) if nchw else y


def _conv_transpose_kernel(x, w, *, strides, padding, dilations):
    # The gradient of conv2d w.r.t. its input: a convolution of the stride-dilated
    # input with the spatially flipped, in/out-swapped filter.
    return lax.conv_transpose(x, w, strides, padding, rhs_dilation=dilations,
                              dimension_numbers=("NHWC", "HWIO", "NHWC"),
                              transpose_kernel=True)


Conv2DTranspose = OpDef("Conv2DTranspose", kernel=_conv_transpose_kernel)
# Shape: jax.eval_shape of the kernel. Gradient: the generic VJP op.


def _transpose_pads(i, o, k, s, d, padding):
    """Explicit (lo, hi) padding of the transposed convolution that maps size `i` to `o`,
    for a forward convolution (size o -> i) with `padding` ("SAME"/"VALID")."""
    eff = (k - 1) * d + 1
    if o is None:
        o = i * s if padding == "SAME" else (i - 1) * s + max(eff, s)
    if padding == "SAME":
        total = max((i - 1) * s + eff - o, 0)
    else:
        total = 0
    lo = total // 2
    hi = total - lo
    extra = o - ((i - 1) * s + eff - total)
    return eff - 1 - lo, eff - 1 - hi + extra


def conv2d_transpose(input=None, filters=None, output_shape=None, strides=1,  # noqa: A002
                     padding="SAME", data_format="NHWC", dilations=1, name=None, value=None,
                     filter=None):  # noqa: A002
    """Transposed 2-D convolution: the gradient of `conv2d` with respect to its input
    (TensorFlow's `conv2d_transpose`, the "deconvolution" of upsampling networks).

    Args:
      input: `Tensor` [batch, height, width, in_channels] ("NHWC"; "NCHW" is transposed).
      filters: `Tensor` [kh, kw, out_channels, in_channels] (note the order: as the
        filter of the forward conv2d that this op transposes).
      output_shape: optional [batch, out_h, out_w, out_channels] (only the spatial
        sizes are used); default the natural size: `in * stride` for "SAME",
        `(in - 1) * stride + max(k_eff, stride)` for "VALID".
      strides, dilations: int or [sh, sw].
      padding: "SAME" or "VALID": the forward convolution's padding.
    Returns:
      `Tensor` [batch, out_h, out_w, out_channels].
    Raises:
      InvalidArgumentError: if the spatial input sizes are unknown and `output_shape` is
        given, or the padding is not SAME/VALID.
    """
    # TensorFlow 1's names: conv2d_transpose(value, filter, output_shape, ...)
    input = deprecated_alias("input", "value", input, value, "conv2d_transpose")  # noqa: A001
    filters = deprecated_alias("filters", "filter", filters, filter, "conv2d_transpose")
    if input is None or filters is None:
        raise TypeError("conv2d_transpose: `input` (or `value`) and `filters` (or `filter`) "
                        "are required")
    x = convert_to_tensor(input)
    w = convert_to_tensor(filters, dtype_hint=x.dtype)
    nchw = data_format == "NCHW"
    if nchw:
        x = array_ops.transpose(x, [0, 2, 3, 1])
    p = _conv_padding(padding)
    if not isinstance(p, str):
        raise errors.InvalidArgumentError("conv2d_transpose padding must be 'SAME' or 'VALID'")
    st, dil = _hw(strides, 2, "strides"), _hw(dilations, 2, "dilations")
    ks = w.shape.as_list()[:2]
    if any(k is None for k in ks):
        raise errors.InvalidArgumentError(f"conv2d_transpose needs a static filter shape, "
                                          f"got {w.shape}")
    sizes = x.shape.as_list()[1:3] if x.shape.rank == 4 else [None, None]
    if output_shape is not None:
        outs = list(output_shape)[2:4] if nchw else list(output_shape)[1:3]
        if any(v is None for v in sizes):
            raise errors.InvalidArgumentError(
                f"conv2d_transpose with an output_shape needs known spatial input sizes, "
                f"got {x.shape}")
    else:
        outs = [None, None]
    pads = []
    for i, o, k, s, d in zip(sizes, outs, ks, st, dil):
        if i is None:  # natural sizes: the padding does not depend on the input size
            i = 1
        pads.append(_transpose_pads(i, None if o is None else int(o), k, s, d, p))
    y = Conv2DTranspose(x, w, strides=st, padding=tuple(pads), dilations=dil,
                        name=None if nchw else name)
    return array_ops.transpose(y, [0, 3, 1, 2], name=name) if nchw else y


def _pool1d(fn, input, ksize, strides, padding, data_format, name):  # noqa: A002
    x = convert_to_tensor(input)
    nchw = data_format in ("NCW", "NCHW")
    x = array_ops.expand_dims(x, 2 if nchw else 1)
    k = ksize if isinstance(ksize, int) else int(tuple(ksize)[-2 if len(ksize) == 3 else 0])
    s = strides if isinstance(strides, int) else int(
        tuple(strides)[-2 if len(strides) == 3 else 0])
    y = fn(x, [1, k], [1, s], padding, data_format="NCHW" if nchw else "NHWC")
    return array_ops.squeeze(y, [2 if nchw else 1], name=name)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Max pooling over windows of a [batch, width, channels] input."""
    return _pool1d(max_pool, input, ksize, strides, padding, data_format, name)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Average pooling over windows of a [batch, width, channels] input ("SAME"
    windows average their real elements only)."""
    return _pool1d(avg_pool, input, ksize, strides, padding, data_format, name)


def _resize_kernel(x, *, size, method):
    return jax.image.resize(x, (x.shape[0], *size, x.shape[3]), method=method,
                            antialias=False)


ResizeImages = OpDef("ResizeImages", kernel=_resize_kernel)


@ResizeImages.shape_fn
def _resize_shape(x, *, size, method):
    if x.shape.rank not in (None, 4):
        raise errors.InvalidArgumentError(f"resize needs a 4-D NHWC input, got {x.shape}")
    n, c = (None, None) if x.shape.rank is None else (x.shape.as_list()[0], x.shape.as_list()[3])
    return TensorSpec([n, *size, c], x.dtype)


def resize_images(images, size, method="bilinear", name=None):
    """Resizes NHWC `images` to `size` = (height, width) with `jax.image.resize`
    (half-pixel centres, as TF2's `tf.image.resize`; no antialiasing).

    Args:
      method: "bilinear", "nearest", "bicubic", "lanczos3", "lanczos5".
    """
    return ResizeImages(convert_to_tensor(images), size=tuple(int(v) for v in size),
                        method=str(method), name=name)


# ---------------------------------------------------------------- losses and statistics
L2Loss = OpDef("L2Loss", kernel=lambda x: jnp.sum(jnp.square(x)) / 2)


@L2Loss.shape_fn
def _l2_loss_shape(x):
    return TensorSpec([], x.dtype)


@RegisterGradient("L2Loss")
def _l2_loss_grad(op, grad):
    return [op.inputs[0] * grad]


def l2_loss(t, name=None):
    """`sum(t ** 2) / 2`, a scalar."""
    return L2Loss(convert_to_tensor(t), name=name)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """`x / sqrt(max(sum(x ** 2, axis), epsilon))`; `dim` is TensorFlow 1's name of
    `axis`."""
    axis = deprecated_alias("axis", "dim", axis, dim, "l2_normalize")
    x = convert_to_tensor(x)
    sq = reduction_ops.reduce_sum(math_ops.square(x), axis, keepdims=True)
    return math_ops.multiply(x, math_ops.rsqrt(math_ops.maximum(sq, epsilon)), name=name)


def moments(x, axes, shift=None, keepdims=False, name=None, keep_dims=None):
    """Mean and variance of `x` over `axes`.

    Returns:
      `(mean, variance)`; the axes are kept as size 1 with `keepdims` (`keep_dims` is
      TensorFlow 1's name).
    """
    keepdims = bool(deprecated_alias("keepdims", "keep_dims", keepdims, keep_dims, "moments"))
    x = convert_to_tensor(x)
    mean = reduction_ops.reduce_mean(x, axes, keepdims=True)
    var = reduction_ops.reduce_mean(math_ops.squared_difference(x, array_ops.stop_gradient(mean)),
                               axes, keepdims=True)
    if not keepdims:
        mean = array_ops.squeeze(mean, axes)
        var = array_ops.squeeze(var, axes)
    return mean, var


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """`(x - mean) * scale / sqrt(variance + variance_epsilon) + offset`, as TensorFlow's
    `tf.nn.batch_normalization` computes it (`x * inv + (offset - mean * inv)`), built
    from graph ops (so its gradient is theirs).

    Args:
      x: float `Tensor`.
      mean, variance: `Tensor`s broadcastable to `x` (e.g. from `moments(keepdims=True)`).
      offset, scale: `Tensor`s broadcastable to `x`, or None (0 and 1).
      variance_epsilon: small float added to the variance.
    Returns:
      `Tensor` of `x`'s shape and dtype.
    """
    x = convert_to_tensor(x)
    inv = math_ops.rsqrt(variance + variance_epsilon)
    if scale is not None:
        inv = inv * scale
    shift = -mean * inv if offset is None else offset - mean * inv
    return math_ops.add(x * inv, shift, name=name)


# ---------------------------------------------------------------- dropout
def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """Zeroes elements with probability `rate` and scales the rest by `1 / (1 - rate)`
    (inverted dropout), so the expected value is unchanged.

    The signature is TensorFlow 1's (`tf.compat.v1.nn.dropout`): the second positional
    argument is `keep_prob`, as in ``tf.nn.dropout(h, keep_prob)`` of TF1 tutorials;
    TensorFlow 2 code passes ``rate=`` by keyword, which works unchanged. Differs from
    TensorFlow 2: there, a positional second argument is the drop `rate`.

    Args:
      x: float `Tensor`.
      keep_prob: float in (0, 1] or a scalar tensor (e.g. a placeholder fed 1.0 at test
        time): the probability of keeping; ``rate = 1 - keep_prob``.
      noise_shape: optional shape broadcastable to `x`'s, to share the mask over axes.
      seed: op seed (see `ml.set_random_seed`).
      rate: float in [0, 1) or a scalar tensor: the probability of dropping.
    Returns:
      `Tensor` of `x`'s shape and dtype; each `Session.run` draws a new mask.
    Raises:
      ValueError: if `rate` is a number outside [0, 1), `keep_prob` outside (0, 1], both
        or neither are given.
    """
    x = convert_to_tensor(x)
    if (keep_prob is None) == (rate is None):
        raise ValueError("dropout: give exactly one of `rate` and `keep_prob`. Received: "
                         f"rate={rate!r}, keep_prob={keep_prob!r}")
    if keep_prob is not None:
        if isinstance(keep_prob, (int, float)):
            if not 0 < keep_prob <= 1:
                raise ValueError(f"keep_prob must be a scalar in (0, 1]. Received: "
                                 f"keep_prob={keep_prob}")
            rate = 1 - keep_prob
        else:
            rate = 1 - convert_to_tensor(keep_prob, dtype_hint=x.dtype)
    if isinstance(rate, (int, float)):
        if not 0 <= rate < 1:
            raise ValueError(f"rate must be a scalar in [0, 1). Received: rate={rate}")
        if rate == 0:
            return array_ops.identity(x, name=name)
    shape = array_ops.shape(x) if noise_shape is None else noise_shape
    u = random_ops.random_uniform(shape, dtype=x.dtype, seed=seed)
    rate_t = convert_to_tensor(rate, dtype_hint=x.dtype)
    keep = math_ops.greater_equal(u, rate_t)
    scale = 1 / (1 - rate_t)
    out = math_ops.multiply(x * scale, math_ops.cast(keep, x.dtype), name=name)
    # A rate of unknown shape (``tf.placeholder(tf.float32)`` for keep_prob) is a scalar:
    # the result has x's shape, as TensorFlow sets it.
    out.set_shape(x.shape)
    return out


# ---------------------------------------------------------------- in_top_k
def _in_top_k_kernel(predictions, targets, *, k):
    n = predictions.shape[1]
    tgt = targets.astype(jnp.int32)
    valid = (tgt >= 0) & (tgt < n)
    t = jnp.take_along_axis(predictions, jnp.clip(tgt, 0, n - 1)[:, None], axis=1)
    above = jnp.sum(predictions > t, axis=1)
    return valid & jnp.isfinite(t[:, 0]) & (above < k)


def _in_top_k_shape(predictions, targets, *, k):
    if predictions.shape.rank not in (None, 2):
        raise errors.InvalidArgumentError(
            f"predictions must be 2-dimensional [batch, classes], got {predictions.shape}")
    if targets.shape.rank not in (None, 1):
        raise errors.InvalidArgumentError(
            f"targets must be 1-dimensional [batch], got {targets.shape}")
    return TensorSpec(TensorShape([predictions.shape.as_list()[0]] if predictions.shape.rank
                                  else [None]), _dtypes.bool_)


InTopKV2 = OpDef("InTopKV2", kernel=_in_top_k_kernel, shape_fn=_in_top_k_shape)
NotDifferentiable("InTopKV2")


def in_top_k(predictions, targets, k, name=None):
    """Whether each target is among the `k` largest predictions of its row (TF's
    `in_top_k`): True when fewer than `k` classes score strictly higher, so ties at the
    boundary all count as in; False for a target out of range or a non-finite score.

    Args:
      predictions: float `Tensor` [batch, classes].
      targets: int32/int64 `Tensor` [batch] of class ids.
      k: Python int (or a constant tensor).
    Returns:
      bool `Tensor` [batch].
    Raises:
      InvalidArgumentError: wrong ranks; ValueError: a `k` unknown when the graph is built.
    """
    if hasattr(k, "op"):
        kv = constant_ops.constant_value(k)
        if kv is None:
            raise ValueError("in_top_k: k must be known when the graph is built (a Python "
                             "int or a constant).")
        k = int(kv)
    predictions = convert_to_tensor(predictions)
    targets = convert_to_tensor(targets)
    return InTopKV2(predictions, targets, k=int(k), name=name)
