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


_BY_NAME = {f.__name__: f for f in (linear, relu, relu6, sigmoid, tanh, softmax, log_softmax,
                                     elu, selu, softplus, gelu, swish, hard_sigmoid,
                                     hard_silu, softsign, exponential, leaky_relu, mish)}
_BY_NAME["silu"] = swish
_BY_NAME["hard_swish"] = hard_silu


def get(identifier):
    """The activation function for a name, a callable, or None (identity).

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
            raise ValueError(f"Unknown activation function: '{identifier}'. Known: "
                             f"{sorted(_BY_NAME)}")
        return fn
    raise TypeError(f"Could not interpret activation identifier: {identifier!r}")


def serialize(fn):
    for name, f in _BY_NAME.items():
        if f is fn:
            return name
    return getattr(fn, "__name__", repr(fn))


def deserialize(name):
    return get(name)
