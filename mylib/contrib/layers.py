"""`tf.contrib.layers`: the layer functions, initializers and regularizers that TF1
programs take from it.

Layers (TF1's signatures, defaults and variable names): `fully_connected` (scope
``fully_connected``, variables ``weights`` [in, out] and ``biases`` [out]), `conv2d` /
`convolution2d` / `convolution` (scope ``Conv``, ``weights`` [kh, kw, in, out]),
`conv2d_transpose` (scope ``Conv2d_transpose``, ``weights`` [kh, kw, out, in]),
`max_pool2d`, `avg_pool2d`, `flatten`, `dropout` (a *keep* probability, as TF1),
`batch_norm` (scope ``BatchNorm``: ``beta``, ``gamma`` when ``scale=True``,
``moving_mean``, ``moving_variance``), `layer_norm` (scope ``LayerNorm``),
`one_hot_encoding`, `embed_sequence` and `apply_regularization`. Unlike `tf.layers`,
`fully_connected` and the convolutions apply ``activation_fn=tf.nn.relu`` by default,
and weights default to `xavier_initializer()`. A layer's scope is made unique as TF1's
(``fully_connected_1``); ``scope=`` with ``reuse=True`` shares the weights.

`l1_regularizer(scale)` is ``scale * sum(|w|)``; `l2_regularizer(scale)` is
``scale * sum(w ** 2) / 2`` (TF1's, built on `tf.nn.l2_loss`, unlike Keras's `l2`, which
has no ``/ 2``); `sum_regularizer` adds several.

Differences from TF1: `batch_norm` updates the moving variance with the biased batch
variance (TF1's fused kernel, its default for 4-D inputs, uses the unbiased one);
``zero_debias_moving_mean``, ``renorm``, ``batch_weights`` and ``adjustment`` are not
supported (ValueError). Outputs added to ``outputs_collections`` carry no alias.
"""

from mylib.core.init_ops import contrib_variance_scaling_initializer as \
    variance_scaling_initializer  # noqa: F401
from mylib.core.init_ops import xavier_initializer  # noqa: F401
from mylib.core import dtypes as _dtypes
from mylib.core import init_ops
from mylib.core.graph import GraphKeys, Tensor, add_to_collection, control_dependencies, \
    get_collection, name_scope
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, embedding_ops, indexing_ops, linalg_ops, math_ops, \
    nn_3d_ops, nn_ops, reduction_ops
from mylib.core.variable_scope import get_variable, variable_scope

__all__ = ["xavier_initializer", "xavier_initializer_conv2d", "variance_scaling_initializer",
           "l1_regularizer", "l2_regularizer", "l1_l2_regularizer", "sum_regularizer",
           "apply_regularization", "fully_connected", "linear", "conv1d", "conv2d", "conv3d",
           "convolution", "convolution1d", "convolution2d", "convolution3d",
           "conv2d_transpose", "convolution2d_transpose", "max_pool2d", "avg_pool2d",
           "flatten", "dropout", "batch_norm", "layer_norm", "one_hot_encoding",
           "embed_sequence"]

xavier_initializer_conv2d = xavier_initializer


def _check_scale(scale, who):
    if isinstance(scale, (int, float)) and scale < 0:
        raise ValueError(f"{who}: setting a scale less than 0 on a regularizer: {scale}")


def l1_regularizer(scale, scope=None):
    """``fn(weights) -> scale * sum(|weights|)`` (None for scale 0, as TF1)."""
    _check_scale(scale, "l1_regularizer")

    def l1(weights):
        if scale == 0:
            return None
        return math_ops.multiply(scale, reduction_ops.reduce_sum(math_ops.abs(weights)),
                                 name="l1_regularizer")

    return l1


def l2_regularizer(scale, scope=None):
    """``fn(weights) -> scale * sum(weights ** 2) / 2`` (None for scale 0, as TF1)."""
    _check_scale(scale, "l2_regularizer")

    def l2(weights):
        if scale == 0:
            return None
        return math_ops.multiply(scale, nn_ops.l2_loss(weights), name="l2_regularizer")

    return l2


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """The sum of `l1_regularizer(scale_l1)` and `l2_regularizer(scale_l2)`."""
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)])


def sum_regularizer(regularizer_list, scope=None):
    """``fn(weights)``: the sum of the non-None results of `regularizer_list`."""
    def fn(weights):
        terms = [t for t in (r(weights) for r in regularizer_list) if t is not None]
        return math_ops.add_n(terms) if terms else None

    return fn


def apply_regularization(regularizer, weights_list=None):
    """``sum(regularizer(w) for w in weights_list)``, added to
    ``GraphKeys.REGULARIZATION_LOSSES`` (TF1's). Default list: ``GraphKeys.WEIGHTS``.

    Raises:
      ValueError: if the list is empty or every term is None.
    """
    if weights_list is None:
        weights_list = get_collection(GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("apply_regularization: no weights to regularize.")
    with name_scope("get_regularization_penalty"):
        terms = [t for t in (regularizer(w) for w in weights_list) if t is not None]
        if not terms:
            raise ValueError("apply_regularization: the regularizer returned None for every "
                             "weight (a scale of 0?).")
        penalty = math_ops.add_n(terms)
    add_to_collection(GraphKeys.REGULARIZATION_LOSSES, penalty)
    return penalty


# ---------------------------------------------------------------- layer functions
def _collections_for(variables_collections, name):
    """TF1's `get_variable_collections`: a list for every variable, or a dict by name."""
    if isinstance(variables_collections, dict):
        c = variables_collections.get(name)
    else:
        c = variables_collections
    if c is None:
        return None
    return [c] if isinstance(c, str) else list(c)


def _variable(name, shape, dtype, initializer, regularizer, trainable,
              variables_collections, model_variable=True):
    extra = _collections_for(variables_collections, name)
    cols = [GraphKeys.GLOBAL_VARIABLES] + ([GraphKeys.MODEL_VARIABLES] if model_variable
                                           else [])
    cols += [c for c in extra or [] if c not in cols]
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                        regularizer=regularizer, trainable=trainable, collections=cols)


def _collect(outputs_collections, outputs):
    for c in ([outputs_collections] if isinstance(outputs_collections, str)
              else outputs_collections or []):
        add_to_collection(c, outputs)
    return outputs


def _float_input(inputs, who):
    x = convert_to_tensor(inputs)
    if not x.dtype.is_floating:
        raise ValueError(f"{who}: inputs must be a float tensor. Received: {x.dtype.name} "
                         f"tensor {x.name!r}")
    return x


def _static_last(x, who, axis=-1):
    d = x.shape.as_list()[axis] if x.shape.rank is not None else None
    if d is None:
        raise ValueError(f"{who}: the last dimension of the inputs must be known when the "
                         f"graph is built. Received: {x.name!r} of shape {x.shape}")
    return d


def _finish(outputs, normalizer_fn, normalizer_params, activation_fn, outputs_collections):
    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return _collect(outputs_collections, outputs)


def fully_connected(inputs, num_outputs, activation_fn=nn_ops.relu, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=None,
                    weights_regularizer=None, biases_initializer=init_ops.zeros_initializer(),
                    biases_regularizer=None, reuse=None, variables_collections=None,
                    outputs_collections=None, trainable=True, scope=None):
    """TF1's `tf.contrib.layers.fully_connected`:
    ``activation_fn(normalizer_fn(inputs @ weights) or inputs @ weights + biases)``.

    Args:
      inputs: float `Tensor` [batch, ..., in] (the last dimension known).
      num_outputs: int, the output size.
      activation_fn: default `tf.nn.relu` (None: linear).
      normalizer_fn: e.g. `batch_norm`; when given there are no biases (TF1's).
      weights_initializer: default `xavier_initializer()`; biases_initializer: zeros,
        None for no biases.
      reuse, scope: share the weights of an earlier call with the same `scope`.
      variables_collections: a list, or a dict keyed by ``"weights"`` / ``"biases"``.
    Returns:
      `Tensor` [batch, ..., num_outputs].
    Raises:
      ValueError: non-float inputs, unknown last dimension, `num_outputs` not an int.
    """
    if not isinstance(num_outputs, int):
        raise ValueError(f"fully_connected: num_outputs should be int. Received: "
                         f"num_outputs={num_outputs!r}")
    x = _float_input(inputs, "fully_connected")
    with variable_scope(scope, default_name="fully_connected", values=[x], reuse=reuse):
        n_in = _static_last(x, "fully_connected")
        w = _variable("weights", [n_in, num_outputs], x.dtype,
                      weights_initializer or xavier_initializer(), weights_regularizer,
                      trainable, variables_collections)
        if x.shape.rank == 2:
            out = math_ops.matmul(x, w)
        else:
            out = linalg_ops.tensordot(x, w, [[x.shape.rank - 1], [0]])
        if normalizer_fn is None and biases_initializer is not None:
            b = _variable("biases", [num_outputs], x.dtype, biases_initializer,
                          biases_regularizer, trainable, variables_collections)
            out = nn_ops.bias_add(out, b)
        return _finish(out, normalizer_fn, normalizer_params, activation_fn,
                       outputs_collections)


def linear(inputs, num_outputs, **kwargs):
    """`fully_connected` with ``activation_fn=None`` (TF1's `tf.contrib.layers.linear`)."""
    return fully_connected(inputs, num_outputs, activation_fn=None, **kwargs)


def _tuple(v, n, who, what):
    v = [v] * n if isinstance(v, int) else list(v)
    if len(v) != n or not all(isinstance(i, int) and i > 0 for i in v):
        raise ValueError(f"{who}: {what} must be an int or {n} positive ints. Received: "
                         f"{what}={v!r}")
    return v


_CONV_FORMATS = {3: ("NWC", "NCW"), 4: ("NHWC", "NCHW"), 5: ("NDHWC", "NCDHW")}


def convolution(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
                rate=1, activation_fn=nn_ops.relu, normalizer_fn=None, normalizer_params=None,
                weights_initializer=None, weights_regularizer=None,
                biases_initializer=init_ops.zeros_initializer(), biases_regularizer=None,
                reuse=None, variables_collections=None, outputs_collections=None,
                trainable=True, scope=None):
    """TF1's `tf.contrib.layers.convolution` (also `conv2d`, `conv1d`, `conv3d`): an N-d
    convolution, N from the rank of `inputs` (3: [batch, width, C], 4: [batch, H, W, C],
    5: [batch, D, H, W, C]; channels first with ``data_format="NCHW"`` etc.).

    Variables in scope ``Conv`` (``Conv_1``, ...): ``weights`` [*kernel_size, C,
    num_outputs], ``biases`` [num_outputs] (none with a `normalizer_fn`).

    Args:
      kernel_size, stride, rate: an int or one per spatial axis (``rate`` is the
        dilation; TF1 forbids a rate and a stride both above 1).
      padding: ``"SAME"`` (default) or ``"VALID"``.
      activation_fn: default `tf.nn.relu`.
    Returns:
      `Tensor` [batch, *out_spatial, num_outputs].
    Raises:
      ValueError: inputs of rank other than 3-5, an unknown channel dimension, a bad
        `data_format`, a rate and a stride both above 1.
    """
    x = _float_input(inputs, "convolution")
    rank = x.shape.rank
    if rank not in _CONV_FORMATS:
        raise ValueError(f"convolution: inputs must have rank 3, 4 or 5. Received: {x.name!r} "
                         f"of shape {x.shape}")
    channels_last, channels_first = _CONV_FORMATS[rank]
    data_format = data_format or channels_last
    if data_format not in (channels_last, channels_first):
        raise ValueError(f"convolution: data_format must be {channels_last!r} or "
                         f"{channels_first!r} for rank-{rank} inputs. Received: "
                         f"data_format={data_format!r}")
    n = rank - 2
    ks = _tuple(kernel_size, n, "convolution", "kernel_size")
    st = _tuple(stride, n, "convolution", "stride")
    dil = _tuple(rate, n, "convolution", "rate")
    if max(st) > 1 and max(dil) > 1:
        raise ValueError(f"convolution: a stride and a rate both above 1 are not supported "
                         f"(as TF1). Received: stride={stride!r}, rate={rate!r}")
    nc = data_format == channels_first
    with variable_scope(scope, default_name="Conv", values=[x], reuse=reuse):
        c_in = _static_last(x, "convolution", axis=1 if nc else -1)
        w = _variable("weights", ks + [c_in, num_outputs], x.dtype,
                      weights_initializer or xavier_initializer(), weights_regularizer,
                      trainable, variables_collections)
        if n == 1:
            out = nn_ops.conv1d(x, w, stride=st[0], padding=padding, data_format=data_format,
                                dilations=dil[0])
        elif n == 2:
            out = nn_ops.conv2d(x, w, strides=st, padding=padding, data_format=data_format,
                                dilations=dil)
        else:
            out = nn_3d_ops.conv3d(x, w, strides=st, padding=padding,
                                   data_format=data_format, dilations=dil)
        if normalizer_fn is None and biases_initializer is not None:
            b = _variable("biases", [num_outputs], x.dtype, biases_initializer,
                          biases_regularizer, trainable, variables_collections)
            if nc:
                out = out + array_ops.reshape(b, [num_outputs] + [1] * n)
            else:
                out = nn_ops.bias_add(out, b)
        return _finish(out, normalizer_fn, normalizer_params, activation_fn,
                       outputs_collections)


conv1d = conv2d = conv3d = convolution1d = convolution2d = convolution3d = convolution


def conv2d_transpose(inputs, num_outputs, kernel_size, stride=1, padding="SAME",
                     data_format="NHWC", activation_fn=nn_ops.relu, normalizer_fn=None,
                     normalizer_params=None, weights_initializer=None,
                     weights_regularizer=None,
                     biases_initializer=init_ops.zeros_initializer(), biases_regularizer=None,
                     reuse=None, variables_collections=None, outputs_collections=None,
                     trainable=True, scope=None):
    """TF1's `tf.contrib.layers.conv2d_transpose` (``convolution2d_transpose``): the
    transposed 2-D convolution, [batch, H, W, C] -> [batch, H', W', num_outputs] with
    ``H' = H * stride`` ("SAME") or ``H * stride + max(k - stride, 0)`` ("VALID").

    Variables in scope ``Conv2d_transpose``: ``weights`` [kh, kw, num_outputs, C] (TF1's
    order), ``biases`` [num_outputs]. `activation_fn` defaults to `tf.nn.relu`.

    Raises:
      ValueError: inputs not of rank 4, unknown channels, a bad `data_format`.
    """
    x = _float_input(inputs, "conv2d_transpose")
    if x.shape.rank != 4:
        raise ValueError(f"conv2d_transpose: inputs must have rank 4. Received: {x.name!r} of "
                         f"shape {x.shape}")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"conv2d_transpose: data_format must be 'NHWC' or 'NCHW'. Received: "
                         f"data_format={data_format!r}")
    ks = _tuple(kernel_size, 2, "conv2d_transpose", "kernel_size")
    st = _tuple(stride, 2, "conv2d_transpose", "stride")
    nc = data_format == "NCHW"
    with variable_scope(scope, default_name="Conv2d_transpose", values=[x], reuse=reuse):
        c_in = _static_last(x, "conv2d_transpose", axis=1 if nc else -1)
        w = _variable("weights", ks + [num_outputs, c_in], x.dtype,
                      weights_initializer or xavier_initializer(), weights_regularizer,
                      trainable, variables_collections)
        out = nn_ops.conv2d_transpose(x, w, strides=st, padding=padding,
                                      data_format=data_format)
        if normalizer_fn is None and biases_initializer is not None:
            b = _variable("biases", [num_outputs], x.dtype, biases_initializer,
                          biases_regularizer, trainable, variables_collections)
            out = (out + array_ops.reshape(b, [num_outputs, 1, 1])) if nc else \
                nn_ops.bias_add(out, b)
        return _finish(out, normalizer_fn, normalizer_params, activation_fn,
                       outputs_collections)


convolution2d_transpose = conv2d_transpose


def _pool2d(fn, default, inputs, kernel_size, stride, padding, data_format,
            outputs_collections, scope):
    x = convert_to_tensor(inputs)
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{default}: data_format must be 'NHWC' or 'NCHW'. Received: "
                         f"data_format={data_format!r}")
    ks = _tuple(kernel_size, 2, default, "kernel_size")
    st = _tuple(stride, 2, default, "stride")
    with variable_scope(scope, default_name=default, values=[x]):
        nc = data_format == "NCHW"
        window = [1, 1] + ks if nc else [1] + ks + [1]
        strides = [1, 1] + st if nc else [1] + st + [1]
        out = fn(x, ksize=window, strides=strides, padding=padding, data_format=data_format)
        return _collect(outputs_collections, out)


def max_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """TF1's `tf.contrib.layers.max_pool2d`: the max over `kernel_size` windows, every
    `stride` (default 2) pixels, ``"VALID"`` padding by default. [batch, H, W, C]."""
    return _pool2d(nn_ops.max_pool, "MaxPool2D", inputs, kernel_size, stride, padding,
                   data_format, outputs_collections, scope)


def avg_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """TF1's `tf.contrib.layers.avg_pool2d` (as `max_pool2d`, the window mean)."""
    return _pool2d(nn_ops.avg_pool, "AvgPool2D", inputs, kernel_size, stride, padding,
                   data_format, outputs_collections, scope)


def flatten(inputs, outputs_collections=None, scope=None):
    """TF1's `tf.contrib.layers.flatten`: [batch, d1, ..., dn] -> [batch, d1 * ... * dn].

    Raises:
      ValueError: inputs of rank below 2 or unknown rank.
    """
    x = convert_to_tensor(inputs)
    if x.shape.rank is None or x.shape.rank < 2:
        raise ValueError(f"flatten: inputs must have a least 2 dimensions. Received: "
                         f"{x.name!r} of shape {x.shape}")
    with variable_scope(scope, default_name="Flatten", values=[x]):
        rest = x.shape.as_list()[1:]
        if all(d is not None for d in rest):
            k = 1
            for d in rest:
                k *= d
            out = array_ops.reshape(x, [-1, k])
        else:
            out = array_ops.reshape(x, array_ops.stack([array_ops.shape(x)[0], -1]))
        return _collect(outputs_collections, out)


def _is_tensor(v):
    return isinstance(v, Tensor) or hasattr(v, "_as_tensor")


def _bool_scalar(t):
    t = convert_to_tensor(t)
    if t.dtype != _dtypes.bool_:
        raise ValueError(f"is_training must be a Python bool or a bool tensor. Received: "
                         f"{t.dtype.name} tensor {t.name!r}")
    return t if t.shape.rank == 0 else array_ops.reshape(t, [])


def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True,
            outputs_collections=None, scope=None, seed=None):
    """TF1's `tf.contrib.layers.dropout`: keeps each element with probability
    `keep_prob` (not a drop rate) and scales it by ``1 / keep_prob`` when `is_training`
    (a Python bool or a bool tensor, e.g. a placeholder); the identity otherwise."""
    x = convert_to_tensor(inputs)
    with variable_scope(scope, default_name="Dropout", values=[x]):
        if _is_tensor(is_training):
            keep = array_ops.where(_bool_scalar(is_training),
                                   convert_to_tensor(keep_prob, dtype_hint=x.dtype),
                                   convert_to_tensor(1.0, dtype=x.dtype))
            out = nn_ops.dropout(x, keep_prob=keep, noise_shape=noise_shape, seed=seed)
        elif is_training:
            out = nn_ops.dropout(x, keep_prob=keep_prob, noise_shape=noise_shape, seed=seed)
        else:
            out = array_ops.identity(x)
        return _collect(outputs_collections, out)


def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001,
               activation_fn=None, param_initializers=None, param_regularizers=None,
               updates_collections=GraphKeys.UPDATE_OPS, is_training=True, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               batch_weights=None, fused=None, data_format="NHWC",
               zero_debias_moving_mean=False, scope=None, renorm=False,
               renorm_clipping=None, renorm_decay=0.99, adjustment=None):
    """TF1's `tf.contrib.layers.batch_norm` (Ioffe & Szegedy, 2015):
    ``gamma * (x - mean) / sqrt(var + epsilon) + beta`` over every axis but the channel
    axis (last; axis 1 with ``data_format="NCHW"``).

    With `is_training` the batch statistics are used and the moving averages updated as
    ``moving = moving * decay + batch_stat * (1 - decay)``; the update ops go to
    `updates_collections` (``UPDATE_OPS``: run them with the train op), or, when it is
    None, run with the output. Otherwise the moving statistics are used. `is_training`
    may be a bool tensor: both are built and chosen at run time, and a False step leaves
    the moving averages unchanged.

    Variables in scope ``BatchNorm``: ``beta`` [C] (``center``), ``gamma`` [C]
    (``scale``; TF1's default is False), ``moving_mean``, ``moving_variance`` (not
    trainable). `param_initializers` / `param_regularizers` are dicts keyed by those
    names.

    Raises:
      ValueError: unknown channels or rank, a bad `data_format`, or an unsupported
        option (``batch_weights``, ``zero_debias_moving_mean``, ``renorm``,
        ``adjustment``).
    """
    if batch_weights is not None or zero_debias_moving_mean or renorm or \
            adjustment is not None:
        raise ValueError("batch_norm: batch_weights, zero_debias_moving_mean, renorm and "
                         "adjustment are not supported by mylib.")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"batch_norm: data_format must be 'NHWC' or 'NCHW'. Received: "
                         f"data_format={data_format!r}")
    x = _float_input(inputs, "batch_norm")
    rank = x.shape.rank
    if rank is None or rank < 2:
        raise ValueError(f"batch_norm: inputs must have rank >= 2. Received: {x.name!r} of "
                         f"shape {x.shape}")
    axis = 1 if data_format == "NCHW" and rank > 2 else rank - 1
    inits, regs = param_initializers or {}, param_regularizers or {}
    with variable_scope(scope, default_name="BatchNorm", values=[x], reuse=reuse):
        c = _static_last(x, "batch_norm", axis=axis)
        bshape = [c] + [1] * (rank - 1 - axis)

        def param(name, default, train):
            v = _variable(name, [c], x.dtype, inits.get(name, default()), regs.get(name),
                          trainable and train, variables_collections)
            return array_ops.reshape(v, bshape) if axis != rank - 1 else v

        beta = param("beta", init_ops.zeros_initializer, True) if center else None
        gamma = param("gamma", init_ops.ones_initializer, True) if scale else None
        moving_mean = _variable("moving_mean", [c], x.dtype,
                                inits.get("moving_mean", init_ops.zeros_initializer()), None,
                                False, variables_collections)
        moving_var = _variable("moving_variance", [c], x.dtype,
                               inits.get("moving_variance", init_ops.ones_initializer()),
                               None, False, variables_collections)
        reduce_axes = [i for i in range(rank) if i != axis]
        if _is_tensor(is_training) or is_training:
            mean_b, var_b = nn_ops.moments(x, reduce_axes)
            if _is_tensor(is_training):
                training = _bool_scalar(is_training)
                mean = array_ops.where(training, mean_b, moving_mean.value())
                var = array_ops.where(training, var_b, moving_var.value())
                d = array_ops.where(training, convert_to_tensor(decay, dtype=x.dtype),
                                    convert_to_tensor(1.0, dtype=x.dtype))
            else:
                mean, var = mean_b, var_b
                d = convert_to_tensor(decay, dtype=x.dtype)
            updates = [moving.assign(moving.value() * d +
                                     array_ops.stop_gradient(stat) * (1.0 - d),
                                     read_value=False)
                       for moving, stat in ((moving_mean, mean_b), (moving_var, var_b))]
            if updates_collections is None:
                with control_dependencies(updates):
                    mean, var = array_ops.identity(mean), array_ops.identity(var)
            else:
                for cname in ([updates_collections] if isinstance(updates_collections, str)
                              else updates_collections):
                    for u in updates:
                        add_to_collection(cname, u)
        else:
            mean, var = moving_mean.value(), moving_var.value()
        if axis != rank - 1:
            mean, var = array_ops.reshape(mean, bshape), array_ops.reshape(var, bshape)
        out = nn_ops.batch_normalization(x, mean, var, beta, gamma, epsilon)
        if activation_fn is not None:
            out = activation_fn(out)
        return _collect(outputs_collections, out)


def layer_norm(inputs, center=True, scale=True, activation_fn=None, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               begin_norm_axis=1, begin_params_axis=-1, scope=None):
    """TF1's `tf.contrib.layers.layer_norm` (Ba et al., 2016): normalizes over the axes
    from `begin_norm_axis` to the last with epsilon 1e-12 (TF1's), then
    ``* gamma + beta`` of shape ``inputs.shape[begin_params_axis:]``.

    Variables in scope ``LayerNorm``: ``beta`` (``center``), ``gamma`` (``scale``).

    Raises:
      ValueError: unknown rank, axes out of range, unknown parameter dimensions.
    """
    x = _float_input(inputs, "layer_norm")
    rank = x.shape.rank
    if rank is None:
        raise ValueError(f"layer_norm: inputs {x.name!r} must have a known rank.")
    bn = begin_norm_axis % rank if -rank <= begin_norm_axis < rank else None
    bp = begin_params_axis % rank if -rank <= begin_params_axis < rank else None
    if bn is None or bp is None:
        raise ValueError(f"layer_norm: begin_norm_axis={begin_norm_axis} and "
                         f"begin_params_axis={begin_params_axis} must lie in [-{rank}, "
                         f"{rank}) for inputs of shape {x.shape}")
    pshape = x.shape.as_list()[bp:]
    if any(d is None for d in pshape):
        raise ValueError(f"layer_norm: inputs {x.name!r} of shape {x.shape} have unknown "
                         f"dimensions from begin_params_axis={begin_params_axis}.")
    with variable_scope(scope, default_name="LayerNorm", values=[x], reuse=reuse):
        beta = _variable("beta", pshape, x.dtype, init_ops.zeros_initializer(), None,
                         trainable, variables_collections) if center else None
        gamma = _variable("gamma", pshape, x.dtype, init_ops.ones_initializer(), None,
                          trainable, variables_collections) if scale else None
        mean, var = nn_ops.moments(x, list(range(bn, rank)), keepdims=True)
        out = nn_ops.batch_normalization(x, mean, var, beta, gamma, 1e-12)
        if activation_fn is not None:
            out = activation_fn(out)
        return _collect(outputs_collections, out)


def one_hot_encoding(labels, num_classes, on_value=1.0, off_value=0.0,
                     outputs_collections=None, scope=None):
    """TF1's `tf.contrib.layers.one_hot_encoding`: int labels [...] -> float32
    [..., num_classes] (`on_value` at the label, `off_value` elsewhere)."""
    labels = convert_to_tensor(labels)
    with variable_scope(scope, default_name="OneHotEncoding", values=[labels]):
        out = indexing_ops.one_hot(labels, num_classes, on_value=on_value,
                                   off_value=off_value, dtype=_dtypes.float32)
        return _collect(outputs_collections, out)


def embed_sequence(ids, vocab_size=None, embed_dim=None, unique=False, initializer=None,
                   regularizer=None, trainable=True, scope=None, reuse=None):
    """TF1's `tf.contrib.layers.embed_sequence`: int ids [batch, time] -> [batch, time,
    embed_dim], looked up in the variable ``EmbedSequence/embeddings`` [vocab_size,
    embed_dim] (default initializer: the scope's, else Glorot uniform). `unique` is
    accepted and has no effect (the gradient is sparse either way).

    Raises:
      ValueError: if `vocab_size` or `embed_dim` is missing.
    """
    if vocab_size is None or embed_dim is None:
        raise ValueError(f"embed_sequence: vocab_size and embed_dim are required. Received: "
                         f"vocab_size={vocab_size!r}, embed_dim={embed_dim!r}")
    ids = convert_to_tensor(ids)
    with variable_scope(scope, default_name="EmbedSequence", values=[ids], reuse=reuse):
        emb = get_variable("embeddings", shape=[vocab_size, embed_dim],
                           initializer=initializer, regularizer=regularizer,
                           trainable=trainable)
        return embedding_ops.embedding_lookup(emb, ids)


_INSTEAD = {
    "optimize_loss": "tf.train.<Optimizer>().minimize(loss, global_step) (with "
                     "tf.clip_by_global_norm on compute_gradients for clip_gradients)",
    "repeat": "a Python loop calling the layer function with scope=f'{scope}_{i + 1}'",
    "stack": "a Python loop calling the layer function once per size",
    "separable_conv2d": "tf.nn.separable_conv2d with tf.get_variable filters",
    "summarize_activation": "tf.summary.histogram", "summarize_tensor": "tf.summary.scalar",
    "summarize_collection": "tf.summary.histogram over tf.get_collection(...)",
    "legacy_fully_connected": "fully_connected",
}


def __getattr__(name):
    if name in _INSTEAD:
        raise AttributeError(f"mylib.contrib.layers has no {name}; use {_INSTEAD[name]} "
                             "instead.")
    raise AttributeError(f"module 'mylib.contrib.layers' has no attribute '{name}'")
