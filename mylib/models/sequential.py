"""`Sequential`: a linear stack of layers."""

from __future__ import annotations

from mylib.core.graph import Tensor
from mylib.layers.base import Input, InputLayer, keras_history
from mylib.models.network import check_layer, sequential_layers
from mylib.models.training import Model


class Sequential(Model):
    """A model that applies its layers one after the other.

    Built right away when the first entry is an `Input` (or a layer given
    ``input_shape=``); otherwise built on the first data (`fit`, `predict`) or by
    `build(input_shape)`, with the input shape of that data.

    Example::

        model = ml.Sequential([ml.layers.Input(shape=(4,)),
                               ml.layers.Dense(8, activation="relu"),
                               ml.layers.Dense(3)])
    """

    def __init__(self, layers=None, name=None, trainable=True):
        super().__init__(name=name, trainable=trainable)
        for layer in layers or []:
            self.add(layer)

    def add(self, layer):
        """Appends `layer` (a layer, or an `Input` tensor as the first entry)."""
        if isinstance(layer, Tensor):
            h = keras_history(layer)
            if h is None or not isinstance(h[0].layer, InputLayer):
                raise TypeError("Sequential.add takes layers, or an ml.layers.Input tensor "
                                f"as the first entry. Received: {layer!r}")
            layer = h[0].layer
        check_layer(layer)
        if isinstance(layer, InputLayer):
            if self._layers:
                raise ValueError("An Input can only be the first entry of a Sequential model.")
            self._layers.append(layer)
            self._trace(layer.input_tensor)
            return
        if any(layer is l for l in self._layers):
            raise ValueError(f'Layer "{layer.name}" is already in the model; layer names in '
                             f"a model must be unique.")
        names = {l.name for l in self._layers}
        if layer.name in names:
            raise ValueError(f'All layers added to a Sequential model should have unique '
                             f'names. Name "{layer.name}" is already the name of a layer in '
                             f"this model.")
        first = not sequential_layers(self) and not self._layers
        self._layers.append(layer)
        if self.outputs is not None:
            g = self.outputs[0].graph
            with g.as_default(), g.collectable():
                out = layer(self.outputs[0])
            self.outputs = [out]
            self._nested_outputs = out
            self._set_io_names()
        elif first and layer._batch_input_shape is not None:
            inp = Input(batch_shape=layer._batch_input_shape, dtype=layer.dtype.name)
            self._layers.insert(0, keras_history(inp)[0].layer)
            self._trace(inp)
        self._fns = {}
        self._tracking = None if not self.compiled else self._tracking

    def pop(self):
        """Removes the last layer (the model is rebuilt on its next use)."""
        layers = sequential_layers(self)
        if not layers:
            raise TypeError("There are no layers in the model.")
        self._layers.remove(layers[-1])
        inl = [l for l in self._layers if isinstance(l, InputLayer)]
        self.inputs = self.outputs = None
        self.built = False
        self._fns, self._tracking = {}, None
        if inl:
            self._trace(inl[0].input_tensor)

    @property
    def layers(self):
        return sequential_layers(self)

    def call(self, inputs, training=None):
        x = inputs
        for layer in sequential_layers(self):
            x = layer(x, training=training) if training is not None else layer(x)
        return x
