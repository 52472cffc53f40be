"""Activation functions by name (Keras's `activations`): graph-op functions of a tensor.

`get(None)` and `get("linear")` give the identity; `get(callable)` returns it unchanged.
"""

from __future__ import annotations


def _op(name):
    """The op wrapper `name` from `mylib.nn`, else from the core ops (looked up at call
    time, so activations follow wherever the op library defines them)."""
    import mylib.core as core
    from mylib import nn

    fn = getattr(nn, name, None) or getattr(core, name, None)
    if fn is None:
        raise NotImplementedError(f"the op `{name}` is not available in mylib.nn or mylib")
    return fn


def linear(x):
    return x


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    if alpha == 0.0 and max_value is None and threshold == 0.0:
        return _op("relu")(x)
    if alpha == 0.0 and max_value == 6.0 and threshold == 0.0:
        return _op("relu6")(x)
    import mylib.core as core

    y = core.where(core.greater(x, threshold), x, alpha * (x - threshold)) if alpha \
        else core.where(core.greater(x, threshold), x, core.zeros_like(x))
    if max_value is not None:
        y = core.minimum(y, max_value)
    return y


def relu6(x):
    return _op("relu6")(x)


def sigmoid(x):
    return _op("sigmoid")(x)


def tanh(x):
    return _op("tanh")(x)


def softmax(x, axis=-1):
    return _op("softmax")(x, axis=axis)


def log_softmax(x, axis=-1):
    return _op("log_softmax")(x, axis=axis)


def elu(x, alpha=1.0):
    if alpha == 1.0:
        return _op("elu")(x)
    import mylib.core as core

    return core.where(core.greater(x, 0.0), x, alpha * (core.exp(x) - 1.0))


def selu(x):
    return _op("selu")(x)


def softplus(x):
    return _op("softplus")(x)


def gelu(x, approximate=False):
    return _op("gelu")(x, approximate=approximate)


def swish(x):
    return x * sigmoid(x)


silu = swish


def hard_sigmoid(x):
    """``relu6(x + 3) / 6``, Keras 3's piecewise-linear sigmoid: 0 below -3, 1 above
    3. (TensorFlow 2's Keras, up to 2.15, used ``clip(0.2 * x + 0.5, 0, 1)``.)"""
    return _op("relu6")(x + 3.0) / 6.0


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (also `hard_swish`)."""
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def softsign(x):
    """``x / (|x| + 1)``."""
    return _op("softsign")(x)


def exponential(x):
    """``exp(x)``."""
    return _op("exp")(x)


def leaky_relu(x, negative_slope=0.2):
    """`x` where positive, else ``negative_slope * x`` (Keras 3's default slope 0.2)."""
    return _op("leaky_relu")(x, alpha=negative_slope)


def mish(x):
    """``x * tanh(softplus(x))`` (Misra, 2019)."""
    return x * tanh(softplus(x))


def _core():
    import mylib.core as core

    return core


def celu(x, alpha=1.0):
    """``max(x, 0) + min(alpha * (exp(x / alpha) - 1), 0)`` (Barron, 2017)."""
    c = _core()
    return c.maximum(x, 0.0) + c.minimum(alpha * (c.exp(x / alpha) - 1.0), 0.0)


def glu(x, axis=-1):
    """Gated linear unit (Dauphin et al., 2017): `x` split in two halves `a`, `b` along
    `axis` (its size must be even), ``a * sigmoid(b)``."""
    c = _core()
    a, b = c.split(x, 2, axis=axis)
    return a * c.sigmoid(b)


def hard_shrink(x, threshold=0.5):
    """`x` where ``|x| > threshold``, else 0."""
    c = _core()
    return c.where(c.greater(c.abs(x), threshold), x, c.zeros_like(x))


def hard_tanh(x):
    """`x` clipped to [-1, 1]."""
    return _core().clip_by_value(x, -1.0, 1.0)


def log_sigmoid(x):
    """``log(sigmoid(x))``, computed as ``-softplus(-x)``."""
    return _core().log_sigmoid(x)


def soft_shrink(x, threshold=0.5):
    """``x - threshold`` above `threshold`, ``x + threshold`` below ``-threshold``, else
    0."""
    c = _core()
    return c.where(c.greater(x, threshold), x - threshold,
                   c.where(c.less(x, -threshold), x + threshold, c.zeros_like(x)))


def sparse_plus(x):
    """0 for ``x <= -1``, `x` for ``x >= 1``, ``(x + 1)^2 / 4`` between (a smooth
    relu)."""
    c = _core()
    return c.where(c.less_equal(x, -1.0), c.zeros_like(x),
                   c.where(c.greater_equal(x, 1.0), x, c.square(x + 1.0) / 4.0))


def sparse_sigmoid(x):
    """0 for ``x <= -1``, 1 for ``x >= 1``, ``(x + 1) / 2`` between."""
    c = _core()
    return c.where(c.less_equal(x, -1.0), c.zeros_like(x),
                   c.where(c.greater_equal(x, 1.0), c.ones_like(x), (x + 1.0) / 2.0))


def squareplus(x, b=4):
    """``(x + sqrt(x^2 + b)) / 2`` (So, 2021)."""
    c = _core()
    return (x + c.sqrt(c.square(x) + float(b))) / 2.0


def tanh_shrink(x):
    """``x - tanh(x)``."""
    return x - _core().tanh(x)


def threshold(x, threshold, default_value):
    """`x` where ``x > threshold``, else `default_value`."""
    c = _core()
    return c.where(c.greater(x, threshold), x, c.ones_like(x) * default_value)


def sparsemax(x, axis=-1):
    """Sparsemax (Martins and Astudillo, 2016): the Euclidean projection of `x` onto the
    probability simplex along `axis`; like softmax, rows sum to 1, but small entries
    are exactly 0."""
    c = _core()
    x = c.convert_to_tensor(x)
    rank = x.shape.rank
    ax = axis % rank
    perm = None
    if ax != rank - 1:
        perm = [i for i in range(rank) if i != ax] + [ax]
        x = c.transpose(x, perm)
    z = c.sort(x, direction="DESCENDING")
    n = x.shape.as_list()[-1]
    k = c.range(1, n + 1, dtype=x.dtype)
    cum = c.cumsum(z, axis=-1)
    support = c.cast(c.greater(1.0 + k * z, cum), x.dtype)
    k_z = c.reduce_sum(support, axis=-1, keepdims=True)
    tau = (c.reduce_sum(z * support, axis=-1, keepdims=True) - 1.0) / k_z
    out = c.maximum(x - tau, 0.0)
    if perm is not None:
        out = c.transpose(out, [perm.index(i) for i in range(rank)])
    return out


_BY_NAME = {f.__name__: f for f in (linear, relu, relu6, sigmoid, tanh, softmax, log_softmax,
                                     elu, selu, softplus, gelu, swish, hard_sigmoid,
                                     hard_silu, softsign, exponential, leaky_relu, mish,
                                     celu, glu, hard_shrink, hard_tanh, log_sigmoid,
                                     soft_shrink, sparse_plus, sparse_sigmoid, squareplus,
                                     tanh_shrink, sparsemax)}
_BY_NAME["silu"] = swish
_BY_NAME["hard_swish"] = hard_silu


def get(identifier):
    """The activation function for a name (built-in, or a custom object's: see
    `keras.utils.get_custom_objects`), a callable, or None (identity).

    Raises:
      ValueError: for an unknown name (the message lists the known ones).
    """
    if identifier is None:
        return linear
    if callable(identifier):
        return identifier
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        if fn is None:
            # A custom function by name (`get_custom_objects()["name"] = fn`, a
            # registered one, or one in an active `custom_object_scope`), as Keras.
            from mylib.layers import registration

            fn = registration.get_registered_object(identifier)
        if fn is None:
            raise ValueError(f"Unknown activation function: '{identifier}'. Known: "
                             f"{sorted(_BY_NAME)}")
        return fn
    raise TypeError(f"Could not interpret activation identifier: {identifier!r}")


def serialize(fn):
    for name, f in _BY_NAME.items():
        if f is fn:
            return name
    # A registered custom function is saved under its registered "package>name",
    # which `get` (and so `load_model`) looks up, as Keras 3 does.
    from mylib.layers import registration

    return registration.get_registered_name(fn) or repr(fn)


def deserialize(name):
    return get(name)
