"""Keras 3's op entries of a functional model's config, rebuilt with `keras.ops`.

Keras 3 saves an op applied between layers (``x + residual``, ``keras.ops.mean(x,
axis=1)``) as an entry ``{"module": "keras.src.ops.numpy", "class_name": "Mean",
"config": {"name": "mean", "axis": 1, "keepdims": false}}`` whose ``inbound_nodes``
hold the call's arguments. `resolve` turns such an entry into a function of this
package: the class name, in snake case, must be one of `OPS` (an explicit list, so a
crafted file can name nothing else), and the config's arguments (all but ``name``)
are passed as keywords. Nothing from the file runs; ops that take functions
(``cond``, ``scan``, ``while_loop``) are not in the list.
"""

from __future__ import annotations

import inspect
import re

# keras.ops functions (Keras 3's op classes ``Add``, ``Mean``, ``Softmax`` in snake
# case) that a saved Keras config may apply between layers.
OPS = frozenset("""
abs absolute add all amax amin angle any append arccos arccosh arcsin arcsinh arctan
arctan2 arctanh argmax argmin argsort average average_pool binary_crossentropy
bitwise_and bitwise_invert bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift
bitwise_xor broadcast_to cast categorical_crossentropy cbrt ceil celu clip concatenate
conj conjugate conv convert_to_tensor copy corrcoef correlate cos cosh count_nonzero
cross cumprod cumsum deg2rad depth_to_space depthwise_conv diag diagflat diagonal diff
digitize divide divide_no_nan dot dot_product_attention dstack einsum elu empty_like
equal erf erfc erfinv exp exp2 expand_dims expm1 extract_sequences fabs flip fliplr
flipud floor floor_divide fmax fmin fmod full_like gcd gelu glu greater greater_equal
hard_shrink hard_sigmoid hard_silu hard_tanh heaviside hstack hypot i0 imag in_top_k
inner isclose isfinite isinf isnan isneginf isposinf isreal kron lcm ldexp leaky_relu
left_shift less less_equal log log10 log1p log2 log_sigmoid log_softmax logaddexp
logaddexp2 logdet logical_and logical_not logical_or logical_xor logsumexp matmul max
max_pool maximum mean median min minimum mod moments moveaxis multi_hot multiply
nan_to_num nancumprod nancumsum nanmax nanmean nanmedian nanmin nanpercentile nanprod
nanquantile nanstd nansum nanvar negative nextafter normalize not_equal one_hot ones_like
outer pad percentile power prod ptp quantile rad2deg ravel real reciprocal relu relu6
repeat reshape right_shift roll rot90 round rsqrt saturate_cast scatter_update
segment_max segment_min segment_prod segment_sum select selu separable_conv sigmoid sign
signbit silu sin sinc sinh slice slice_update softmax softplus softsign sort
space_to_depth sparse_categorical_crossentropy sparse_plus sparse_sigmoid split sqrt
square squareplus squeeze stack std stop_gradient subtract sum swapaxes take
take_along_axis tan tanh tanh_shrink tensordot threshold tile top_k trace transpose
trapezoid tril triu true_divide trunc unstack var vdot vstack where zeros_like
""".split())


def _snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def resolve(class_name, config):
    """The function that replays a Keras 3 op entry, or None for an op mylib does not
    rebuild (the caller raises ValueError naming it).

    Args:
      class_name: the entry's ``class_name`` (``"Add"``, ``"GetItem"``).
      config: the entry's ``config``: the op's constructor arguments.
    Returns:
      ``fn(*args, **kwargs)`` applying the op with the config's arguments, or None.
    Raises:
      ValueError: the config holds an argument mylib's op does not take (with a value
        other than None).
    """
    from mylib.keras import ops

    if not isinstance(class_name, str) or not isinstance(config, dict):
        return None
    if class_name == "GetItem":
        return lambda x, key: x[tuple(key) if isinstance(key, list) else key]
    name = _snake(class_name)
    if name not in OPS or not callable(getattr(ops, name, None)):
        return None
    fn = getattr(ops, name)
    params = inspect.signature(fn).parameters
    kwargs = {}
    for k, v in config.items():
        if k == "name":
            continue
        if k not in params:
            if v is None:  # an argument newer Keras added, left at its default
                continue
            raise ValueError(f"The saved Keras op {class_name!r} has the argument "
                             f"{k}={v!r}, which mylib's keras.ops.{name} does not take.")
        kwargs[k] = v
    # Arguments before a ``*operands`` parameter (einsum's subscripts) go first, by
    # position: the node's arguments are the operands.
    names = list(params)
    star = next((i for i, p in enumerate(params.values())
                 if p.kind is inspect.Parameter.VAR_POSITIONAL), None)
    lead = [kwargs.pop(n) for n in names[:star] if n in kwargs] if star is not None else []
    return lambda *args, **kw: fn(*lead, *args, **kwargs, **kw)
