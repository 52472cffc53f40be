"""More of TensorFlow 1's `tf.nn`: `log_poisson_loss`, `weighted_moments`, `pool`,
`convolution`, `conv2d_backprop_input` / `conv2d_backprop_filter`,
`depthwise_conv2d_native`, `max_pool_with_argmax`, `dilation2d` / `erosion2d`.

Each op: definition (kernel, optional shape rule), gradient, wrapper. The convolution
back-propagation ops are `jax.vjp` of the `Conv2D` kernel, so they agree with the
gradient of `conv2d` by construction; they, dilated pooling and the morphological ops
differentiate through the generic VJP op. `MaxPoolWithArgmax` has its own gradient op
(the argmax scatter, as TensorFlow's `MaxPoolGradWithArgmax`).
"""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from mylib import errors
from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import (NotDifferentiable, OpDef, RegisterGradient, TensorSpec,
                                    convert_to_tensor)
from mylib.core.ops import array_ops, constant_ops, math_ops, nn_3d_ops, nn_ops, reduction_ops
from mylib.core.ops.constant_ops import constant_value
from mylib.core.ops.sequence_ops import reverse

__all__ = ["log_poisson_loss", "weighted_moments", "pool", "convolution",
           "conv2d_backprop_input", "conv2d_backprop_filter", "depthwise_conv2d_native",
           "max_pool_with_argmax", "dilation2d", "erosion2d"]


# ---------------------------------------------------------------- losses and moments
def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """Negative log-likelihood of `targets` under a Poisson of rate ``exp(log_input)``:
    ``exp(log_input) - log_input * targets``, plus with `compute_full_loss` the
    Stirling term ``t log t - t + 0.5 log(2 pi t)`` where ``targets > 1``.

    Args:
      targets, log_input: float `Tensor`s of one shape.
    Returns:
      `Tensor` of that shape (element-wise losses).
    Raises:
      ValueError: the shapes differ (as TensorFlow).
    """
    log_input = convert_to_tensor(log_input)
    targets = convert_to_tensor(targets, dtype_hint=log_input.dtype)
    if not log_input.shape.is_compatible_with(targets.shape):
        raise ValueError(f"log_input and targets must have the same shape "
                         f"({log_input.shape} vs {targets.shape})")
    result = math_ops.exp(log_input) - log_input * targets
    if compute_full_loss:
        stirling = (targets * math_ops.log(targets) - targets
                    + 0.5 * math_ops.log(2.0 * math.pi * targets))
        zeros = constant_ops.zeros_like(targets)
        small = math_ops.logical_and(math_ops.greater_equal(targets, 0.0),
                                     math_ops.less_equal(targets, 1.0))
        result = result + array_ops.where(small, zeros, stirling)
    return array_ops.identity(result, name=name or "log_poisson_loss")


def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    """Frequency-weighted mean and variance of `x` over `axes` (TensorFlow's
    `nn.weighted_moments`): ``mean = sum(w x) / sum(w)``,
    ``variance = sum(w (x - mean)^2) / sum(w)``.

    Args:
      x: float `Tensor`.
      axes: list of ints to reduce over.
      frequency_weights: `Tensor` broadcastable to `x`.
      keep_dims / keepdims: keep the reduced axes with size 1.
    Returns:
      `(mean, variance)`; float16 inputs are computed in float32 and cast back.
    """
    keep = bool(keepdims if keepdims is not None else keep_dims)
    x = convert_to_tensor(x)
    w = convert_to_tensor(frequency_weights, dtype_hint=x.dtype)
    half = x.dtype == _dtypes.float16
    if half:
        x, w = math_ops.cast(x, _dtypes.float32), math_ops.cast(w, _dtypes.float32)
    if w.dtype != x.dtype:
        w = math_ops.cast(w, x.dtype)
    axes = list(axes)
    wsum = reduction_ops.reduce_sum(w * x, axes, keepdims=True)
    total = reduction_ops.reduce_sum(w + constant_ops.zeros_like(x), axes, keepdims=True)
    inv = math_ops.reciprocal(total)
    mean = wsum * inv
    var = reduction_ops.reduce_sum(w * math_ops.squared_difference(x, mean), axes,
                                   keepdims=True) * inv
    if not keep:
        mean, var = array_ops.squeeze(mean, axes), array_ops.squeeze(var, axes)
    if half:
        mean, var = math_ops.cast(mean, _dtypes.float16), math_ops.cast(var, _dtypes.float16)
    with_name = (lambda t, n: array_ops.identity(t, name=f"{name}_{n}")) if name else \
        (lambda t, n: t)
    return with_name(mean, "mean"), with_name(var, "variance")


# ---------------------------------------------------------------- N-d pooling and convolution
def _spatial(v, n, what, owner):
    if v is None:
        return (1,) * n
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    v = tuple(int(a) for a in v)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise errors.InvalidArgumentError(
            f"{owner}: `{what}` must have {n} entries (one per spatial dim), got {list(v)}")
    return v


def _channels_first(data_format, n, owner):
    last = {1: "NWC", 2: "NHWC", 3: "NDHWC"}[n]
    first = {1: "NCW", 2: "NCHW", 3: "NCDHW"}[n]
    if data_format in (None, last):
        return False
    if data_format == first:
        return True
    raise errors.InvalidArgumentError(
        f"{owner}: data_format must be {last!r} or {first!r} for {n} spatial dims. "
        f"Received: data_format={data_format!r}")


def _rank_n(x, owner):
    r = x.shape.rank
    if r is None or r not in (3, 4, 5):
        raise errors.InvalidArgumentError(
            f"{owner}: input '{x.name}' must have a known rank of 3, 4 or 5 (batch, 1 to 3 "
            f"spatial dims, channels), got shape {x.shape}")
    return r - 2


def _dilated_pool_kernel(x, *, window, dilation, kind, pads):
    # Channels last. TensorFlow's `pool` with a dilation runs the pool "VALID" on a
    # zero-padded input (with_space_to_batch): zeros take part in max and average.
    # Strides are 1 here, so the window's taps are shifted slices (jax has no VJP of a
    # dilated max `reduce_window`).
    n = len(window)
    x = jnp.pad(x, [(0, 0)] + [tuple(p) for p in pads] + [(0, 0)])
    out = [x.shape[1 + i] - (k - 1) * d for i, (k, d) in enumerate(zip(window, dilation))]
    taps = []
    for offs in itertools.product(*[range(k) for k in window]):
        idx = tuple(slice(o * d, o * d + m) for o, d, m in zip(offs, dilation, out))
        taps.append(x[(slice(None),) + idx + (slice(None),)])
    st = jnp.stack(taps)
    if kind == "MAX":
        return jnp.max(st, 0)
    return jnp.mean(st, 0) if n else st[0]


DilatedPool = OpDef("DilatedPool", kernel=_dilated_pool_kernel)


def pool(input, window_shape, pooling_type, padding, dilation_rate=None, strides=None,  # noqa: A002
         name=None, data_format=None):
    """N-d max or average pooling (N = 1, 2 or 3 spatial dims), TensorFlow's `nn.pool`.

    Args:
      input: `Tensor` [batch, *spatial, channels] (or channels first with
        `data_format` "NCW" / "NCHW" / "NCDHW").
      window_shape: N ints.
      pooling_type: "MAX" or "AVG".
      padding: "SAME" or "VALID".
      dilation_rate: N ints (default 1); above 1, `strides` must be 1 and the window
        samples every `dilation_rate`-th element. As TensorFlow (which pools a
        zero-padded input then), "SAME" padding with a dilation counts the padding
        zeros in the max and the average.
      strides: N ints (default 1).
    Returns:
      `Tensor` [batch, *out_spatial, channels]; without dilation exactly `max_pool` /
      `avg_pool` (and their 1-D and 3-D forms).
    Raises:
      InvalidArgumentError: bad `pooling_type`, `padding`, `data_format`, sizes, or
        strides above 1 with a dilation.
    """
    x = convert_to_tensor(input)
    owner = "pool"
    n = _rank_n(x, owner)
    first = _channels_first(data_format, n, owner)
    if pooling_type not in ("MAX", "AVG"):
        raise errors.InvalidArgumentError(
            f"pool: pooling_type must be 'MAX' or 'AVG'. Received: {pooling_type!r}")
    pad = nn_ops._conv_padding(padding)
    if not isinstance(pad, str):
        raise errors.InvalidArgumentError("pool: padding must be 'SAME' or 'VALID'")
    window = _spatial(window_shape, n, "window_shape", owner)
    dil = _spatial(dilation_rate, n, "dilation_rate", owner)
    st = _spatial(strides, n, "strides", owner)
    if any(d > 1 for d in dil) and any(s > 1 for s in st):
        raise errors.InvalidArgumentError(
            f"pool: strides > 1 not supported in conjunction with dilation_rate > 1. "
            f"Received: strides={list(st)}, dilation_rate={list(dil)}")
    if all(d == 1 for d in dil):
        fmt = data_format or {1: "NWC", 2: "NHWC", 3: "NDHWC"}[n]
        if n == 1:
            fn = nn_ops.max_pool1d if pooling_type == "MAX" else nn_ops.avg_pool1d
            return fn(x, list(window), list(st), pad, data_format=fmt, name=name)
        if n == 2:
            fn = nn_ops.max_pool if pooling_type == "MAX" else nn_ops.avg_pool
            return fn(x, list(window), list(st), pad, data_format=fmt, name=name)
        fn = nn_3d_ops.max_pool3d if pooling_type == "MAX" else nn_3d_ops.avg_pool3d
        return fn(x, list(window), list(st), pad, data_format=fmt, name=name)
    if first:
        x = array_ops.transpose(x, [0, *range(2, n + 2), 1])
    pads = []
    for k, d in zip(window, dil):
        total = (k - 1) * d if pad == "SAME" else 0
        pads.append((total // 2, total - total // 2))
    y = DilatedPool(x, window=window, dilation=dil, kind=pooling_type, pads=tuple(pads),
                    name=None if first else name)
    return array_ops.transpose(y, [0, n + 1, *range(1, n + 1)], name=name) if first else y


def convolution(input, filter=None, padding=None, strides=None, dilation_rate=None,  # noqa: A002
                name=None, data_format=None, filters=None, dilations=None):
    """N-d convolution (N = 1, 2 or 3 spatial dims), TensorFlow's `nn.convolution`:
    `conv1d`, `conv2d` or `conv3d` by the input's rank.

    Args:
      input: `Tensor` [batch, *spatial, in_channels] (channels first with
        `data_format` "NCW" / "NCHW" / "NCDHW").
      filter: `Tensor` [*window, in_channels, out_channels]; `filters` is its
        TensorFlow 2 name.
      padding: "SAME" or "VALID".
      strides, dilation_rate: N ints each (default 1); `dilations` is TensorFlow 2's
        name of `dilation_rate`.
    Returns:
      `Tensor` [batch, *out_spatial, out_channels].
    Raises:
      InvalidArgumentError: ranks, sizes or `data_format` that do not fit.
      TypeError: the filter missing or given twice.
    """
    if (filter is None) == (filters is None):
        raise TypeError("convolution: give the filter as `filter` (or `filters`), exactly once")
    if dilation_rate is not None and dilations is not None:
        raise TypeError("convolution: give `dilation_rate` or `dilations`, not both")
    w = filter if filter is not None else filters
    x = convert_to_tensor(input)
    n = _rank_n(x, "convolution")
    first = _channels_first(data_format, n, "convolution")
    pad = nn_ops._conv_padding(padding)
    st = _spatial(strides, n, "strides", "convolution")
    dil = _spatial(dilation_rate if dilation_rate is not None else dilations, n,
                   "dilation_rate", "convolution")
    if n == 1:
        return nn_ops.conv1d(x, w, stride=st[0], padding=pad,
                             data_format="NCW" if first else "NWC", dilations=dil[0],
                             name=name)
    if n == 2:
        return nn_ops.conv2d(x, w, strides=list(st), padding=pad,
                             data_format="NCHW" if first else "NHWC", dilations=list(dil),
                             name=name)
    return nn_3d_ops.conv3d(x, w, strides=list(st), padding=pad,
                            data_format="NCDHW" if first else "NDHWC", dilations=list(dil),
                            name=name)


# ---------------------------------------------------------------- conv2d back-propagation
def _four(v, data_format, what, owner):
    """TF1's 4-entry strides/dilations ([1, s, s, 1] for NHWC) -> the two spatial ones."""
    if isinstance(v, (int, np.integer)):
        return (int(v),) * 2
    v = tuple(int(a) for a in v)
    if len(v) == 2:
        return v
    if len(v) != 4:
        raise errors.InvalidArgumentError(
            f"{owner}: `{what}` must have 4 entries (or 2 spatial), got {list(v)}")
    sp = v[1:3] if data_format == "NHWC" else v[2:]
    other = (v[0], v[3]) if data_format == "NHWC" else v[:2]
    if other != (1, 1):
        raise errors.InvalidArgumentError(
            f"{owner}: `{what}` in the batch and depth dimensions must be 1, got {list(v)}")
    return sp


def _conv_attrs(strides, padding, dilations, data_format, owner):
    if data_format not in ("NHWC", "NCHW"):
        raise errors.InvalidArgumentError(
            f"{owner}: data_format must be 'NHWC' or 'NCHW'. Received: {data_format!r}")
    pad = nn_ops._conv_padding(padding)
    if not isinstance(pad, str) and len(pad) == 4:
        pad = pad[1:3] if data_format == "NHWC" else pad[2:]
    return {"strides": _four(strides, data_format, "strides", owner), "padding": pad,
            "dilations": _four(dilations, data_format, "dilations", owner),
            "data_format": data_format}


def _conv_fn(**attrs):
    return lambda x, w: nn_ops._conv2d_kernel(x, w, **attrs)


def _backprop_input_kernel(w, dy, *, input_sizes, **attrs):
    x0 = jnp.zeros(input_sizes, dy.dtype)
    return jax.vjp(lambda x: _conv_fn(**attrs)(x, w), x0)[1](dy)[0]


def _backprop_filter_kernel(x, dy, *, filter_sizes, **attrs):
    w0 = jnp.zeros(filter_sizes, dy.dtype)
    return jax.vjp(lambda w: _conv_fn(**attrs)(x, w), w0)[1](dy)[0]


Conv2DBackpropInput = OpDef("Conv2DBackpropInput", kernel=_backprop_input_kernel)
Conv2DBackpropFilter = OpDef("Conv2DBackpropFilter", kernel=_backprop_filter_kernel)


def _expected_out(sizes, wshape, attrs):
    """The conv2d output shape for an input of `sizes` and a filter of `wshape`."""
    nchw = attrs["data_format"] == "NCHW"
    n, h, w, _ = (sizes[0], sizes[2], sizes[3], sizes[1]) if nchw else sizes
    pad = attrs["padding"]
    oh = nn_ops._out_dim(h, wshape[0], attrs["strides"][0], attrs["dilations"][0],
                         pad if isinstance(pad, str) else pad[0])
    ow = nn_ops._out_dim(w, wshape[1], attrs["strides"][1], attrs["dilations"][1],
                         pad if isinstance(pad, str) else pad[1])
    return [n, wshape[3], oh, ow] if nchw else [n, oh, ow, wshape[3]]


def _check_out(dy, want):
    got = dy.shape
    if got.rank is not None and (got.rank != 4 or any(
            a is not None and b is not None and a != b for a, b in zip(got.as_list(), want))):
        raise errors.InvalidArgumentError(
            f"out_backprop has shape {got}, but a conv2d with these sizes gives "
            f"{[('?' if v is None else v) for v in want]}")


@Conv2DBackpropInput.shape_fn
def _backprop_input_shape(w, dy, *, input_sizes, **attrs):
    if w.shape.is_fully_defined():
        _check_out(dy, _expected_out(list(input_sizes), w.shape.as_list(), attrs))
    return TensorSpec(list(input_sizes), dy.dtype)


@Conv2DBackpropFilter.shape_fn
def _backprop_filter_shape(x, dy, *, filter_sizes, **attrs):
    if x.shape.rank == 4:
        _check_out(dy, _expected_out(x.shape.as_list(), list(filter_sizes), attrs))
    return TensorSpec(list(filter_sizes), dy.dtype)


def _sizes(v, what, owner):
    if hasattr(v, "op") or hasattr(v, "_as_tensor"):
        c = constant_value(convert_to_tensor(v))
        if c is None:
            raise errors.InvalidArgumentError(
                f"{owner}: `{what}` must be known when the graph is built (a list or a "
                f"constant), as XLA compiles static shapes; got the computed tensor "
                f"'{v.name}'")
        v = c
    v = tuple(int(a) for a in np.asarray(v).reshape(-1))
    if len(v) != 4:
        raise errors.InvalidArgumentError(f"{owner}: `{what}` must have 4 entries, got {list(v)}")
    return v


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None,  # noqa: A002
                          padding=None, use_cudnn_on_gpu=True, data_format="NHWC",
                          dilations=(1, 1, 1, 1), name=None, filters=None):
    """The gradient of `conv2d` with respect to its input (a transposed convolution).

    Args:
      input_sizes: the input's shape, 4 ints known when the graph is built.
      filter: `Tensor` [kh, kw, in_channels, out_channels] (`filters`: TF2's name).
      out_backprop: `Tensor` of the conv2d output's shape.
      strides, dilations: 4 ints in `data_format`'s order ([1, s, s, 1]), or 2.
      padding: "SAME", "VALID" or explicit pairs, as `conv2d`.
      use_cudnn_on_gpu: accepted; XLA chooses the kernels.
    Returns:
      `Tensor` of shape `input_sizes` and `out_backprop`'s dtype.
    Raises:
      InvalidArgumentError: `out_backprop`'s shape is not the forward output's for
        these sizes, or bad strides/dilations/padding.
    """
    w = filters if filter is None else filter
    if w is None or out_backprop is None:
        raise TypeError("conv2d_backprop_input: `filter` and `out_backprop` are required")
    attrs = _conv_attrs(strides, padding, dilations, data_format, "conv2d_backprop_input")
    dy = convert_to_tensor(out_backprop)
    return Conv2DBackpropInput(convert_to_tensor(w, dtype_hint=dy.dtype), dy,
                               input_sizes=_sizes(input_sizes, "input_sizes",
                                                  "conv2d_backprop_input"),
                               name=name, **attrs)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           use_cudnn_on_gpu=True, data_format="NHWC",
                           dilations=(1, 1, 1, 1), name=None):
    """The gradient of `conv2d` with respect to its filter.

    Args:
      input: `Tensor` [batch, h, w, in_channels] (or NCHW).
      filter_sizes: the filter's shape, 4 ints known when the graph is built.
      out_backprop: `Tensor` of the conv2d output's shape.
      strides, padding, dilations, data_format: as `conv2d_backprop_input`.
    Returns:
      `Tensor` of shape `filter_sizes`.
    Raises:
      InvalidArgumentError: as `conv2d_backprop_input`.
    """
    attrs = _conv_attrs(strides, padding, dilations, data_format, "conv2d_backprop_filter")
    x = convert_to_tensor(input)
    return Conv2DBackpropFilter(x, convert_to_tensor(out_backprop, dtype_hint=x.dtype),
                                filter_sizes=_sizes(filter_sizes, "filter_sizes",
                                                    "conv2d_backprop_filter"),
                                name=name, **attrs)


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",  # noqa: A002
                            dilations=(1, 1, 1, 1), name=None):
    """TensorFlow's raw depthwise convolution: `depthwise_conv2d` with TF1's 4-entry
    `strides` and `dilations` in `data_format`'s order.

    Args:
      input: `Tensor` [batch, h, w, in_channels] (or NCHW).
      filter: `Tensor` [kh, kw, in_channels, channel_multiplier].
    Returns:
      `Tensor` [batch, out_h, out_w, in_channels * channel_multiplier].
    """
    owner = "depthwise_conv2d_native"
    if data_format not in ("NHWC", "NCHW"):
        raise errors.InvalidArgumentError(
            f"{owner}: data_format must be 'NHWC' or 'NCHW'. Received: {data_format!r}")
    return nn_ops.depthwise_conv2d(input, filter, list(_four(strides, data_format, "strides",
                                                             owner)),
                                   padding, data_format=data_format,
                                   dilations=list(_four(dilations, data_format, "dilations",
                                                        owner)), name=name)


# ---------------------------------------------------------------- windows: argmax, morphology
def _windows(x, ksize, strides, rates, padding, fill):
    """[n, oh, ow, kh, kw, c] input windows of an NHWC `x`, padding filled with `fill`,
    and the flat (y * w + x) position of each window element (-1 in the padding)."""
    n, h, w, c = x.shape
    (kh, kw), (sh, sw), (rh, rw) = ksize, strides, rates
    eh, ew = (kh - 1) * rh + 1, (kw - 1) * rw + 1
    if padding == "SAME":
        oh, ow = -(-h // sh), -(-w // sw)
        ph = max((oh - 1) * sh + eh - h, 0) // 2
        pw = max((ow - 1) * sw + ew - w, 0) // 2
    else:
        oh, ow = (h - eh) // sh + 1, (w - ew) // sw + 1
        ph = pw = 0
    ys = (np.arange(oh) * sh)[:, None] + np.arange(kh) * rh - ph        # [oh, kh]
    xs = (np.arange(ow) * sw)[:, None] + np.arange(kw) * rw - pw        # [ow, kw]
    yv = (ys >= 0) & (ys < h)
    xv = (xs >= 0) & (xs < w)
    yc, xc = np.clip(ys, 0, h - 1), np.clip(xs, 0, w - 1)
    win = x[:, yc[:, None, :, None], xc[None, :, None, :], :]           # n oh ow kh kw c
    valid = yv[:, None, :, None] & xv[None, :, None, :]                 # oh ow kh kw
    win = jnp.where(valid[None, ..., None], win, jnp.asarray(fill, x.dtype))
    pos = np.where(valid, yc[:, None, :, None] * w + xc[None, :, None, :], -1)
    return win, pos


def _argmax_pool_kernel(x, *, ksize, strides, padding, include_batch_in_index, targmax):
    n, h, w, c = x.shape
    low = -jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min
    win, pos = _windows(x, ksize, strides, (1, 1), padding, low)
    oh, ow, kh, kw = pos.shape
    flat = win.reshape(n, oh, ow, kh * kw, c)
    k = jnp.argmax(flat, axis=3)            # the first maximum in row-major window order
    vals = jnp.max(flat, axis=3)
    p = jnp.asarray(pos.reshape(oh, ow, kh * kw))
    spatial = jnp.take_along_axis(jnp.broadcast_to(p[None, ..., None], flat.shape), k[:, :, :,
                                                                                      None],
                                  axis=3)[:, :, :, 0]
    dt = jnp.dtype(targmax)
    idx = spatial.astype(dt) * c + jnp.arange(c, dtype=dt)
    if include_batch_in_index:
        idx = idx + (jnp.arange(n, dtype=dt) * (h * w * c))[:, None, None, None]
    return vals, idx


MaxPoolWithArgmax = OpDef("MaxPoolWithArgmax", kernel=_argmax_pool_kernel)


def _window_out(x, ksize, strides, rates, padding):
    d = x.shape.as_list() if x.shape.rank is not None else [None] * 4
    n, h, w, c = d
    oh = nn_ops._out_dim(h, ksize[0], strides[0], rates[0], padding)
    ow = nn_ops._out_dim(w, ksize[1], strides[1], rates[1], padding)
    if (oh is not None and oh <= 0) or (ow is not None and ow <= 0):
        raise errors.InvalidArgumentError(
            f"the window {list(ksize)} (rates {list(rates)}) is larger than the input {x.shape}")
    return [n, oh, ow, c]


@MaxPoolWithArgmax.shape_fn
def _argmax_pool_shape(x, *, ksize, strides, padding, include_batch_in_index, targmax):
    out = _window_out(x, ksize, strides, (1, 1), padding)
    return [TensorSpec(out, x.dtype), TensorSpec(out, targmax)]


def _argmax_grad_kernel(x, grad, argmax, *, include_batch_in_index):
    n = x.shape[0]
    per = int(np.prod(x.shape[1:]))
    idx = argmax.reshape(n, -1).astype(jnp.int64 if argmax.dtype == jnp.int64 else jnp.int32)
    if include_batch_in_index:
        idx = idx - (jnp.arange(n, dtype=idx.dtype) * per)[:, None]
    g = grad.reshape(n, -1)
    out = jax.vmap(lambda i, v: jnp.zeros(per, grad.dtype).at[i].add(v))(idx, g)
    return out.reshape(x.shape)


MaxPoolGradWithArgmax = OpDef("MaxPoolGradWithArgmax", kernel=_argmax_grad_kernel)


@MaxPoolGradWithArgmax.shape_fn
def _argmax_grad_shape(x, grad, argmax, **_):
    return TensorSpec(x.shape, grad.dtype)


@RegisterGradient("MaxPoolWithArgmax")
def _max_pool_with_argmax_grad(op, grad, unused_argmax_grad):
    return MaxPoolGradWithArgmax(op.inputs[0], grad, op.outputs[1],
                                 include_batch_in_index=op.attrs["include_batch_in_index"])


@RegisterGradient("MaxPoolGradWithArgmax")
def _argmax_grad_grad(op, grad):
    # Linear in `grad`: its gradient gathers back at the argmax positions.
    x, _, argmax = op.inputs
    ib = op.attrs["include_batch_in_index"]
    g = MaxPoolGradGradWithArgmax(grad, argmax, include_batch_in_index=ib)
    return None, g, None


def _argmax_grad_grad_kernel(gx, argmax, *, include_batch_in_index):
    n = gx.shape[0]
    per = int(np.prod(gx.shape[1:]))
    idx = argmax.reshape(n, -1)
    if include_batch_in_index:
        idx = idx - (jnp.arange(n, dtype=idx.dtype) * per)[:, None]
    return jnp.take_along_axis(gx.reshape(n, -1), idx, axis=1).reshape(argmax.shape)


MaxPoolGradGradWithArgmax = OpDef("MaxPoolGradGradWithArgmax", kernel=_argmax_grad_grad_kernel)
NotDifferentiable("MaxPoolGradGradWithArgmax")


def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC",  # noqa: A002
                         Targmax=None, name=None, output_dtype=None,  # noqa: N803 - TF's name
                         include_batch_in_index=False):
    """Max pooling that also returns where each maximum came from, as a flattened index:
    ``(y * width + x) * channels + c``, or with `include_batch_in_index`
    ``((b * height + y) * width + x) * channels + c`` (TensorFlow's convention). Ties
    go to the first maximum in the window's row-major order; padding never wins.

    Args:
      input: `Tensor` [batch, height, width, channels] (NHWC only, as TensorFlow).
      ksize, strides: 4 ints ([1, k, k, 1]) or 2.
      padding: "SAME" or "VALID".
      Targmax / output_dtype: int64 (default) or int32.
    Returns:
      `(output, argmax)`: `Tensor`s [batch, out_h, out_w, channels]. The gradient of
      `output` goes to the argmax positions.
    Raises:
      InvalidArgumentError: a data_format other than NHWC, bad sizes, or a rank other
        than 4.
    """
    owner = "max_pool_with_argmax"
    if data_format != "NHWC":
        raise errors.InvalidArgumentError(
            f"{owner}: only NHWC is supported (as TensorFlow). Received: {data_format!r}")
    if Targmax is not None and output_dtype is not None and Targmax != output_dtype:
        raise TypeError(f"{owner}: Targmax and output_dtype disagree")
    targ = _dtypes.as_dtype(output_dtype or Targmax or _dtypes.int64)
    if targ not in (_dtypes.int32, _dtypes.int64):
        raise errors.InvalidArgumentError(f"{owner}: Targmax must be int32 or int64, got "
                                          f"{targ.name}")
    pad = nn_ops._conv_padding(padding)
    if not isinstance(pad, str):
        raise errors.InvalidArgumentError(f"{owner}: padding must be 'SAME' or 'VALID'")
    x = convert_to_tensor(input)
    if x.shape.rank not in (None, 4):
        raise errors.InvalidArgumentError(
            f"{owner}: input '{x.name}' must be 4-D (NHWC), got shape {x.shape}")
    return MaxPoolWithArgmax(x, ksize=_four(ksize, "NHWC", "ksize", owner),
                             strides=_four(strides, "NHWC", "strides", owner), padding=pad,
                             include_batch_in_index=bool(include_batch_in_index),
                             targmax=targ.name, name=name)


def _dilation2d_kernel(x, f, *, strides, rates, padding):
    kh, kw, _ = f.shape
    low = -jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min
    win, _ = _windows(x, (kh, kw), strides, rates, padding, low)
    return jnp.max(win + f[None, None, None], axis=(3, 4))


Dilation2D = OpDef("Dilation2D", kernel=_dilation2d_kernel)


@Dilation2D.shape_fn
def _dilation2d_shape(x, f, *, strides, rates, padding):
    if x.dtype != f.dtype:
        raise errors.InvalidArgumentError(
            f"input and filter dtypes differ: {x.dtype.name} vs {f.dtype.name}")
    fs = f.shape.as_list() if f.shape.rank is not None else [None] * 3
    c = x.shape.as_list()[3] if x.shape.rank is not None else None
    if c is not None and fs[2] is not None and c != fs[2]:
        raise errors.InvalidArgumentError(
            f"the input depth {c} differs from the filter depth {fs[2]}")
    if fs[0] is None or fs[1] is None:
        raise errors.InvalidArgumentError(f"the filter's size must be known, got {f.shape}")
    return TensorSpec(_window_out(x, fs[:2], strides, rates, padding), x.dtype)


def dilation2d(input, filter=None, strides=None, rates=None, padding=None, name=None,  # noqa: A002
               filters=None, dilations=None, data_format="NHWC"):
    """Grayscale morphological dilation of each channel:
    ``out[b, y, x, c] = max_{dy, dx} input[b, y*sy + dy*ry, x*sx + dx*rx, c] +
    filter[dy, dx, c]`` (padding is -inf, never chosen).

    Args:
      input: `Tensor` [batch, h, w, depth] (NHWC).
      filter: `Tensor` [fh, fw, depth] (`filters`: TensorFlow 2's name).
      strides, rates: 4 ints ([1, s, s, 1]) or 2; `dilations` is TF2's `rates`.
      padding: "SAME" or "VALID".
    Returns:
      `Tensor` [batch, out_h, out_w, depth].
    Raises:
      InvalidArgumentError: bad ranks, depths or sizes, or a data_format other than NHWC.
    """
    owner = "dilation2d"
    f = filter if filter is not None else filters
    r = rates if rates is not None else dilations
    if f is None or strides is None or r is None or padding is None:
        raise TypeError(f"{owner}: filter, strides, rates and padding are required")
    if data_format != "NHWC":
        raise errors.InvalidArgumentError(f"{owner}: only NHWC is supported. Received: "
                                          f"{data_format!r}")
    pad = nn_ops._conv_padding(padding)
    if not isinstance(pad, str):
        raise errors.InvalidArgumentError(f"{owner}: padding must be 'SAME' or 'VALID'")
    x = convert_to_tensor(input)
    w = convert_to_tensor(f, dtype_hint=x.dtype)
    if x.shape.rank not in (None, 4) or w.shape.rank not in (None, 3):
        raise errors.InvalidArgumentError(
            f"{owner}: input must be 4-D and filter 3-D, got {x.shape} and {w.shape}")
    return Dilation2D(x, w, strides=_four(strides, "NHWC", "strides", owner),
                      rates=_four(r, "NHWC", "rates", owner), padding=pad, name=name)


def erosion2d(value, kernel, strides, rates, padding, name=None):
    """Grayscale morphological erosion: ``-dilation2d(-value, reverse(kernel))``, i.e.
    ``out = min_{dy, dx} value[b, y*sy - dy*ry, x*sx - dx*rx, c] - kernel[dy, dx, c]``
    (TensorFlow 1's `nn.erosion2d`; padding is +inf, never chosen).

    Args:
      value: `Tensor` [batch, h, w, depth].
      kernel: `Tensor` [kh, kw, depth].
      strides, rates: 4 ints or 2; padding: "SAME" or "VALID".
    Returns:
      `Tensor` [batch, out_h, out_w, depth].
    """
    flipped = reverse(convert_to_tensor(kernel), [0, 1])
    return math_ops.negative(dilation2d(math_ops.negative(convert_to_tensor(value)), flipped,
                                        strides, rates, padding), name=name)
