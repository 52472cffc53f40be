"""`keras.layers`: every layer of `mylib.layers` (Keras 3's names), plus `Layer`,
`Input`, `InputLayer`, `InputSpec`.

Names are read from `mylib.layers` when this module is imported and, for any name
added there later, on first access. A Keras layer mylib lacks raises an
AttributeError saying what to use instead.
"""

from __future__ import annotations

import mylib.layers as _src
from mylib.keras._face import missing as _missing
from mylib.keras._face import reexport as _reexport

__all__ = _reexport(globals(), _src, skip=("backend",)) + ["serialize", "deserialize"]


def serialize(layer):
    """``{"module", "class_name", "registered_name", "config"}`` of a layer (Keras 3's
    `keras.layers.serialize`; `keras.saving.serialize_keras_object` of the layer).

    Raises:
      TypeError: `layer` is not a layer.
    """
    from mylib.models import saving as ms

    if not isinstance(layer, _src.Layer):
        raise TypeError(f"keras.layers.serialize expects a layer. Received: {layer!r}")
    return ms.serialize_layer(layer)


def deserialize(config, custom_objects=None):
    """A new layer from `serialize`'s form (Keras 3's `keras.layers.deserialize`):
    built-in layer classes by name, custom ones from `custom_objects` or the registry
    (never imported from the config).

    Raises:
      ValueError: `config` is not a dict with a ``class_name``.
    """
    from mylib.models import saving as ms

    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("keras.layers.deserialize expects a config dict with a "
                         f"'class_name'. Received: {config!r}")
    return ms.deserialize_layer(config, custom_objects)


_HINTS = {
    "TFSMLayer": "TensorFlow SavedModels are not read; save and load models with "
                 "keras.saving.save_model / load_model.",
    "TorchModuleWrapper": "wrap Flax modules with keras.layers.FlaxLayer instead.",
    "JaxLayer": "use keras.layers.FlaxLayer, or keras.layers.Lambda over keras.ops.",
}


def __getattr__(name):
    value = getattr(_src, name, None)
    if value is not None and not name.startswith("_"):
        return value
    raise _missing(__name__, name, _HINTS,
                   "write a custom keras.layers.Layer (call() with keras.ops) or use "
                   "keras.layers.Lambda.")


def __dir__():
    return sorted(set(globals()) | set(n for n in dir(_src) if not n.startswith("_")))


# Keras's functional forms of the merge layers: `keras.layers.concatenate([a, b])` is
# `Concatenate()([a, b])`, and so on (keras/src/layers/merging/*.py).
def add(inputs, **kwargs):
    """`Add(**kwargs)(inputs)`: the elementwise sum of a list of same-shape tensors."""
    return _src.Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    """`Subtract(**kwargs)(inputs)`: `inputs[0] - inputs[1]` (exactly two tensors)."""
    return _src.Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    """`Multiply(**kwargs)(inputs)`: the elementwise product of a list of tensors."""
    return _src.Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    """`Average(**kwargs)(inputs)`: the elementwise mean of a list of tensors."""
    return _src.Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    """`Maximum(**kwargs)(inputs)`: the elementwise maximum of a list of tensors."""
    return _src.Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    """`Minimum(**kwargs)(inputs)`: the elementwise minimum of a list of tensors."""
    return _src.Minimum(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """`Concatenate(axis=axis, **kwargs)(inputs)`: joins a list of tensors along `axis`."""
    return _src.Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs, axes=-1, **kwargs):
    """`Dot(axes=axes, **kwargs)(inputs)`: the dot product of two tensors along `axes`
    (`normalize=True` L2-normalizes them first, giving cosine similarity)."""
    return _src.Dot(axes=axes, **kwargs)(inputs)


__all__ += ["add", "subtract", "multiply", "average", "maximum", "minimum",
            "concatenate", "dot"]
