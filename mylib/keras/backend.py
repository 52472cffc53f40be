"""`keras.backend` (Keras 3's small module): the fuzz factor, the default float type,
the image data format, `clear_session`, and the backend's name.

`backend()` returns ``"mylib"``: programs that branch on ``"tensorflow"`` / ``"jax"`` /
``"torch"`` for their gradient code need the mylib idiom instead (``ml.gradients(loss,
variables)`` in a `train_step`; see `mylib.keras`).
"""

from __future__ import annotations

from mylib.layers import backend as _lb
from mylib.layers.policy import global_policy as _global_policy
from mylib.layers.policy import set_global_policy as _set_global_policy

__all__ = ["backend", "epsilon", "set_epsilon", "floatx", "set_floatx", "clear_session",
           "image_data_format", "set_image_data_format", "get_session", "set_session",
           "is_keras_tensor",
           "standardize_dtype", "result_type"]

_state = {"epsilon": 1e-7, "image_data_format": "channels_last"}
_FLOATS = ("float16", "bfloat16", "float32", "float64")


def backend():
    """The name of the backend: ``"mylib"`` (graphs compiled by XLA through JAX)."""
    return "mylib"


def epsilon():
    """The fuzz factor of `keras.ops` cross-entropies and of this module (1e-7 unless
    `set_epsilon` changed it). mylib's own losses (`keras.losses`) always use 1e-7."""
    return _state["epsilon"]


def set_epsilon(value):
    """Sets `epsilon()` (a positive float)."""
    value = float(value)
    if not value > 0:
        raise ValueError(f"`epsilon` must be a positive float. Received: value={value}")
    _state["epsilon"] = value
    from mylib.keras.ops import nn as _nn

    _nn.EPSILON = value


def floatx():
    """The default float type of new layers: the global dtype policy's variable dtype
    (``"float32"`` unless changed)."""
    return _global_policy().variable_dtype


def set_floatx(value):
    """Makes `value` (``"float16"``, ``"bfloat16"``, ``"float32"`` or ``"float64"``) the
    dtype of layers created from now on, by setting the global dtype policy to it (as
    Keras 3, whose default policy follows floatx).

    Raises:
      ValueError: for another dtype.
    """
    value = str(getattr(value, "name", value))
    if value not in _FLOATS:
        raise ValueError(f"Unknown `floatx` value: {value!r}. Expected one of {_FLOATS}.")
    _set_global_policy(value)


def image_data_format():
    """``"channels_last"`` (mylib's image layers are channels-last)."""
    return _state["image_data_format"]


def set_image_data_format(data_format):
    """Only ``"channels_last"`` is accepted: mylib's convolution and pooling layers are
    channels-last.

    Raises:
      ValueError: for ``"channels_first"`` or anything else.
    """
    if data_format != "channels_last":
        raise ValueError("mylib's image layers are channels_last only. Received: "
                         f"data_format={data_format!r}; transpose the data with "
                         "keras.ops.transpose instead.")
    _state["image_data_format"] = data_format


def clear_session(free_memory=True):
    """Closes the default graph's Keras session, forgets its layer names and installs a
    fresh default graph: models built earlier keep working in their own graphs."""
    _lb.clear_session()


get_session = _lb.get_session


def set_session(session):
    """Makes `session` (a `Session`) the one Keras models of its graph run in, as
    TensorFlow 1's ``tf.keras.backend.set_session``: a program that built its own
    session (with its own config) shares it with its models."""
    from mylib.runtime import keras_session

    keras_session.set_session(session)


def is_keras_tensor(x):
    """Whether `x` is a symbolic graph tensor (what layers are called on to build a
    model)."""
    from mylib.core.graph import Tensor

    return isinstance(x, Tensor)


def standardize_dtype(dtype):
    """A dtype's name (``"float32"``), from a name, numpy dtype or mylib DType."""
    from mylib.core import dtypes

    if dtype is None:
        return floatx()
    return dtypes.as_dtype(dtype).name


def result_type(*dtypes):
    """The dtype numpy / JAX promotion gives for `dtypes` (names)."""
    import jax.numpy as jnp

    return jnp.result_type(*[standardize_dtype(d) for d in dtypes]).name
