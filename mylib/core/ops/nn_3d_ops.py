"""Volumetric (3-D) convolution and pooling, and the 1-D and 3-D transposed
convolutions (TensorFlow's `tf.nn.conv3d`, `max_pool3d`, `avg_pool3d`,
`conv3d_transpose`, `conv1d_transpose`).

`Conv3D`, `MaxPool3D`, `AvgPool3D` and `Conv3DTranspose` are primitives whose kernels
are XLA's N-D convolution and windowed reductions; their shapes come from
`jax.eval_shape` of the kernel and their gradients from the generic VJP op.
`conv1d_transpose` is `conv2d_transpose` over a height of 1.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from mylib import errors
from mylib.core.compat_args import deprecated_alias
from mylib.core.op_registry import OpDef, convert_to_tensor
from mylib.core.ops import array_ops
from mylib.core.ops.nn_ops import (_conv_padding, _hw, _transpose_pads, _window,
                                    conv2d_transpose)

__all__ = ["conv3d", "max_pool3d", "avg_pool3d", "conv3d_transpose", "conv1d_transpose"]

_DN = {"NDHWC": ("NDHWC", "DHWIO", "NDHWC"), "NCDHW": ("NCDHW", "DHWIO", "NCDHW")}


def _data_format(data_format):
    df = data_format or "NDHWC"
    if df not in _DN:
        raise errors.InvalidArgumentError(
            f"data_format must be 'NDHWC' or 'NCDHW'. Received: data_format={data_format!r}")
    return df


def _spatial_padding(padding, data_format):
    p = _conv_padding(padding)
    if not isinstance(p, str):
        if len(p) == 5:  # TF's explicit form: one row per axis, batch and channels 0
            p = p[1:4] if data_format == "NDHWC" else p[2:]
        if len(p) != 3:
            raise errors.InvalidArgumentError(
                f"explicit 3-D padding needs 3 (or 5) [before, after] rows, got {padding}")
    return p


# ---------------------------------------------------------------- Conv3D
def _conv3d_kernel(x, w, *, strides, padding, dilations, data_format, groups=1):
    pad = padding if isinstance(padding, str) else tuple(padding)
    return lax.conv_general_dilated(x, w, strides, pad, rhs_dilation=dilations,
                                    dimension_numbers=_DN[data_format],
                                    feature_group_count=groups)


Conv3D = OpDef("Conv3D", kernel=_conv3d_kernel)
# Shape: jax.eval_shape of the kernel. Gradient: the generic VJP op.


def conv3d(input, filters=None, strides=1, padding="VALID", data_format="NDHWC",  # noqa: A002
           dilations=1, name=None, filter=None, groups=1):  # noqa: A002
    """3-D convolution (cross-correlation, as TensorFlow) over volumes.

    Args:
      input: `Tensor` [batch, depth, height, width, in_channels] ("NDHWC"; or "NCDHW");
        float16, bfloat16, float32 or float64.
      filters: `Tensor` [kd, kh, kw, in_channels / groups, out_channels], same dtype.
        `filter` is TensorFlow 1's name for it.
      strides, dilations: int, 3 ints or TF's 5 ([1, sd, sh, sw, 1]).
      padding: "SAME", "VALID", or explicit [[front, back], [top, bottom], [left, right]].
      groups: grouped convolution, as `conv2d`.
    Returns:
      `Tensor` [batch, out_d, out_h, out_w, out_channels]; SAME: out = ceil(in / stride).
    Raises:
      InvalidArgumentError: if the ranks, channel counts or dtypes disagree.
    """
    filters = deprecated_alias("filters", "filter", filters, filter, "conv3d")
    if filters is None:
        raise TypeError("conv3d: `filters` (or TensorFlow 1's `filter`) is required")
    df = _data_format(data_format)
    x = convert_to_tensor(input)
    w = convert_to_tensor(filters, dtype_hint=x.dtype)
    if x.shape.rank not in (None, 5) or w.shape.rank not in (None, 5):
        raise errors.InvalidArgumentError(
            f"conv3d needs a 5-D input and a 5-D filter, got {x.shape} and {w.shape}")
    extra = {} if int(groups) == 1 else {"groups": int(groups)}
    return Conv3D(x, w, strides=_hw(strides, 3, "strides"),
                  padding=_spatial_padding(padding, df),
                  dilations=_hw(dilations, 3, "dilations"), data_format=df, name=name, **extra)


# ---------------------------------------------------------------- pooling
def _window3d(ksize, strides, data_format):
    # nn_ops' 2-D rule: channels last or after the batch
    return _window(ksize, strides, "NHWC" if data_format == "NDHWC" else "NCHW")


def _max_pool3d_kernel(x, *, ksize, strides, padding, data_format):
    win, st = _window3d(ksize, strides, data_format)
    init = -jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min
    # A numpy init value keeps lax's max-monoid path (differentiable) under jit.
    return lax.reduce_window(x, np.array(init, x.dtype), lax.max, win, st, padding)


def _avg_pool3d_kernel(x, *, ksize, strides, padding, data_format):
    win, st = _window3d(ksize, strides, data_format)
    s = lax.reduce_window(x, np.array(0, x.dtype), lax.add, win, st, padding)
    if padding == "VALID":
        return s / np.prod(ksize)
    # SAME: each window averages its real (unpadded) elements, as TensorFlow.
    cnt = lax.reduce_window(jnp.ones(x.shape, x.dtype), np.array(0, x.dtype), lax.add, win,
                            st, padding)
    return s / cnt


MaxPool3D = OpDef("MaxPool3D", kernel=_max_pool3d_kernel)
AvgPool3D = OpDef("AvgPool3D", kernel=_avg_pool3d_kernel)
# Shapes: jax.eval_shape of the kernels. Gradients: the generic VJP op (the max pool's
# goes to the first maximum of each window, as TensorFlow's MaxPool3DGrad).


def _pool3d(opdef, input, ksize, strides, padding, data_format, name):  # noqa: A002
    if input is None or ksize is None or strides is None or padding is None:
        raise TypeError(f"{opdef.name}: `input`, `ksize`, `strides` and `padding` are required")
    p = _conv_padding(padding)
    if not isinstance(p, str):
        raise errors.InvalidArgumentError("3-D pooling padding must be 'SAME' or 'VALID'")
    x = convert_to_tensor(input)
    if x.shape.rank not in (None, 5):
        raise errors.InvalidArgumentError(f"3-D pooling needs a 5-D input, got {x.shape}")
    return opdef(x, ksize=_hw(ksize, 3, "ksize"), strides=_hw(strides, 3, "strides"),
                 padding=p, data_format=_data_format(data_format), name=name)


def max_pool3d(input=None, ksize=None, strides=None, padding=None,  # noqa: A002
               data_format="NDHWC", name=None):
    """Max pooling over 3-D windows.

    Args:
      input: `Tensor` [batch, depth, height, width, channels] ("NDHWC"; or "NCDHW").
      ksize, strides: int, 3 ints or TF's 5 ([1, kd, kh, kw, 1]).
      padding: "SAME" or "VALID".
    Returns:
      `Tensor` [batch, out_d, out_h, out_w, channels], the input's dtype.
    """
    return _pool3d(MaxPool3D, input, ksize, strides, padding, data_format, name)


def avg_pool3d(input=None, ksize=None, strides=None, padding=None,  # noqa: A002
               data_format="NDHWC", name=None):
    """Average pooling over 3-D windows; "SAME" windows average their real elements only.

    Args: as `max_pool3d`.
    Returns:
      `Tensor` [batch, out_d, out_h, out_w, channels], the input's dtype.
    """
    return _pool3d(AvgPool3D, input, ksize, strides, padding, data_format, name)


# ---------------------------------------------------------------- transposed
def _conv3d_transpose_kernel(x, w, *, strides, padding, dilations):
    return lax.conv_transpose(x, w, strides, padding, rhs_dilation=dilations,
                              dimension_numbers=_DN["NDHWC"], transpose_kernel=True)


Conv3DTranspose = OpDef("Conv3DTranspose", kernel=_conv3d_transpose_kernel)
# Shape: jax.eval_shape of the kernel. Gradient: the generic VJP op.


def conv3d_transpose(input=None, filters=None, output_shape=None, strides=1,  # noqa: A002
                     padding="SAME", data_format="NDHWC", dilations=1, name=None, value=None,
                     filter=None):  # noqa: A002
    """Transposed 3-D convolution: the gradient of `conv3d` with respect to its input.

    Args:
      input: `Tensor` [batch, depth, height, width, in_channels] ("NDHWC"; "NCDHW" is
        transposed). `value` is TensorFlow 1's name for it.
      filters: `Tensor` [kd, kh, kw, out_channels, in_channels]; `filter` is TF1's name.
      output_shape: optional [batch, out_d, out_h, out_w, out_channels] (only the spatial
        sizes are used); default `in * stride` ("SAME") or
        `(in - 1) * stride + max(k_eff, stride)` ("VALID").
      strides, dilations: int, 3 ints or 5.
      padding: "SAME" or "VALID": the forward convolution's padding.
    Returns:
      `Tensor` [batch, out_d, out_h, out_w, out_channels].
    Raises:
      InvalidArgumentError: for other paddings, or an `output_shape` with unknown
        spatial input sizes.
    """
    input = deprecated_alias("input", "value", input, value, "conv3d_transpose")  # noqa: A001
    filters = deprecated_alias("filters", "filter", filters, filter, "conv3d_transpose")
    if input is None or filters is None:
        raise TypeError("conv3d_transpose: `input` (or `value`) and `filters` (or `filter`) "
                        "are required")
    df = _data_format(data_format)
    x = convert_to_tensor(input)
    w = convert_to_tensor(filters, dtype_hint=x.dtype)
    if df == "NCDHW":
        x = array_ops.transpose(x, [0, 2, 3, 4, 1])
    p = _conv_padding(padding)
    if not isinstance(p, str):
        raise errors.InvalidArgumentError("conv3d_transpose padding must be 'SAME' or 'VALID'")
    st, dil = _hw(strides, 3, "strides"), _hw(dilations, 3, "dilations")
    ks = w.shape.as_list()[:3] if w.shape.rank == 5 else [None] * 3
    if any(k is None for k in ks):
        raise errors.InvalidArgumentError(f"conv3d_transpose needs a static 5-D filter shape, "
                                          f"got {w.shape}")
    sizes = x.shape.as_list()[1:4] if x.shape.rank == 5 else [None] * 3
    outs = [None] * 3
    if output_shape is not None:
        outs = list(output_shape)[2:5] if df == "NCDHW" else list(output_shape)[1:4]
        if any(v is None for v in sizes):
            raise errors.InvalidArgumentError(
                f"conv3d_transpose with an output_shape needs known spatial input sizes, "
                f"got {x.shape}")
    pads = tuple(_transpose_pads(1 if i is None else i, None if o is None else int(o),
                                 k, s, d, p)
                 for i, o, k, s, d in zip(sizes, outs, ks, st, dil))
    y = Conv3DTranspose(x, w, strides=st, padding=pads, dilations=dil,
                        name=None if df == "NCDHW" else name)
    return array_ops.transpose(y, [0, 4, 1, 2, 3], name=name) if df == "NCDHW" else y


def conv1d_transpose(input, filters, output_shape=None, strides=1,  # noqa: A002
                     padding="SAME", data_format="NWC", dilations=1, name=None):
    """Transposed 1-D convolution (the gradient of `conv1d` with respect to its input),
    as `conv2d_transpose` over a height of 1.

    Args:
      input: `Tensor` [batch, width, in_channels] ("NWC"; or "NCW").
      filters: `Tensor` [k, out_channels, in_channels].
      output_shape: optional [batch, out_width, out_channels] (the width is used).
      strides, dilations: int (or [s] / [1, s, 1]).
      padding: "SAME" or "VALID".
    Returns:
      `Tensor` [batch, out_width, out_channels].
    """
    x = convert_to_tensor(input)
    w = convert_to_tensor(filters, dtype_hint=x.dtype)
    ncw = data_format == "NCW"
    if ncw:
        x = array_ops.transpose(x, [0, 2, 1])
    s, d = _hw(strides, 1, "strides")[0], _hw(dilations, 1, "dilations")[0]
    out = None
    if output_shape is not None:
        o = list(output_shape)
        out = [o[0], 1, o[2] if ncw else o[1], o[1] if ncw else o[2]]
    y = conv2d_transpose(array_ops.expand_dims(x, 1), array_ops.expand_dims(w, 0),
                         output_shape=out, strides=[1, s], padding=padding,
                         dilations=[1, d])
    y = array_ops.squeeze(y, [1], name=None if ncw else name)
    return array_ops.transpose(y, [0, 2, 1], name=name) if ncw else y
