"""Layer wrappers: `Bidirectional` (a recurrent layer run both ways) and
`TimeDistributed` (a layer applied to every timestep)."""

from __future__ import annotations

import inspect

from mylib.core.compat_args import warn_ignored
from mylib.core.ops import array_ops
from mylib.core.ops import constant_ops
from mylib.layers.base import InputSpec, Layer
from mylib.layers import registration
from mylib import layers as L


def _layer_entry(layer):
    """A wrapped layer's config entry (with its registered name when it has one)."""
    out = {"class_name": type(layer).__name__, "config": layer.get_config()}
    reg = registration.registered_name_of(type(layer))
    if reg is not None:
        out["registered_name"] = reg
    return out


def _from_entry(spec):
    """The layer of `_layer_entry`: a registered class or one of `mylib.layers`."""
    cls = None
    for key in (spec.get("registered_name"), spec["class_name"]):
        if key and cls is None:
            cls = registration.get_registered_object(key)
    if cls is None:
        cls = getattr(L, spec["class_name"], None)
    if not (isinstance(cls, type) and issubclass(cls, Layer)):
        raise ValueError(f"Unknown layer class {spec['class_name']!r}: register custom "
                         "layers with `ml.saving.register_serializable`.")
    return cls.from_config(spec["config"])


class Bidirectional(Layer):
    """Runs a recurrent layer forwards and a copy of it backwards, and merges the two.

    The wrapped layer's config makes two new layers, ``forward_<name>`` and
    ``backward_<name>`` (with `go_backwards` flipped); the backward sequence output is
    reversed back to input order before merging. When returning sequences, masked
    steps output zeros in both directions (as Keras).

    Args:
      layer: a `SimpleRNN`, `LSTM` or `GRU` (anything with ``go_backwards``,
        ``return_sequences``, ``return_state`` and ``get_config``).
      merge_mode: ``"concat"`` (default), ``"sum"``, ``"mul"``, ``"ave"``, or None (a
        list ``[forward, backward]``).
      backward_layer: optional layer to use as the backward direction (must have
        ``go_backwards=True`` and the same `return_sequences` / `return_state`).
      weights: accepted for Keras compatibility and ignored (warns once): set them with
        `set_weights` once the layer is built.
    Call arguments: ``inputs``, ``initial_state`` (forward states then backward
      states), ``mask``, ``training``. With ``return_state``: ``[output] + forward
      states + backward states``.
    """

    supports_masking = True

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None,
                 **kwargs):
        if not isinstance(layer, Layer) or not hasattr(layer, "go_backwards"):
            raise ValueError("Please initialize `Bidirectional` layer with a recurrent "
                             f"layer instance (SimpleRNN, LSTM, GRU). Received: {layer!r}")
        if merge_mode not in ("concat", "sum", "mul", "ave", None):
            raise ValueError(f"Invalid merge mode. Received: {merge_mode}. Merge mode "
                             "should be one of {'sum', 'mul', 'ave', 'concat', None}")
        super().__init__(**kwargs)
        if weights is not None:
            warn_ignored("Bidirectional", "weights",
                         "the weights are initialized by their initializers; call "
                         "set_weights() once the layer is built.")
        cfg = layer.get_config()
        cfg.pop("batch_input_shape", None)
        cls = type(layer)
        self.forward_layer = cls.from_config({**cfg, "name": "forward_" + layer.name})
        # A given backward layer is part of the config (Keras's); a made one is not.
        self._backward_entry = None if backward_layer is None else _layer_entry(
            backward_layer)
        if backward_layer is None:
            backward_layer = cls.from_config({**cfg, "name": "backward_" + layer.name,
                                              "go_backwards": not layer.go_backwards})
        elif (backward_layer.go_backwards == layer.go_backwards or
              backward_layer.return_sequences != layer.return_sequences or
              backward_layer.return_state != layer.return_state):
            raise ValueError("`backward_layer` must have the opposite `go_backwards` and "
                             "the same `return_sequences` and `return_state` as `layer`.")
        self.backward_layer = backward_layer
        self.merge_mode = merge_mode
        self.return_sequences, self.return_state = layer.return_sequences, layer.return_state
        for l in (self.forward_layer, self.backward_layer):
            if hasattr(l, "zero_output_for_mask"):
                l.zero_output_for_mask = self.return_sequences
        self._wrapped_config = {**_layer_entry(layer), "config": cfg}
        if layer._batch_input_shape is not None and self._batch_input_shape is None:
            self._batch_input_shape = layer._batch_input_shape

    def call(self, inputs, initial_state=None, mask=None, training=None):
        kw = {}
        if training is not None:
            kw["training"] = training
        if mask is not None:
            kw["mask"] = mask
        fs = bs = None
        if initial_state is not None:
            states = list(initial_state)
            half = len(states) // 2
            fs, bs = states[:half], states[half:]
        fw = self.forward_layer(inputs, initial_state=fs, **kw)
        bw = self.backward_layer(inputs, initial_state=bs, **kw)
        f_states = b_states = []
        if self.return_state:
            fw, f_states = fw[0], list(fw[1:])
            bw, b_states = bw[0], list(bw[1:])
        if self.return_sequences:
            bw = bw[:, ::-1]
        if self.merge_mode == "concat":
            out = array_ops.concat([fw, bw], axis=-1)
        elif self.merge_mode == "sum":
            out = fw + bw
        elif self.merge_mode == "ave":
            out = (fw + bw) * 0.5
        elif self.merge_mode == "mul":
            out = fw * bw
        else:
            out = [fw, bw]
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + f_states + b_states
        return out

    @property
    def stateful(self):
        return bool(getattr(self.forward_layer, "stateful", False))

    @property
    def states(self):
        """The forward then the backward layer's kept states (stateful layers), or
        None."""
        fs = getattr(self.forward_layer, "states", None)
        bs = getattr(self.backward_layer, "states", None)
        return tuple(fs + bs) if fs and bs else None

    def reset_states(self):
        """Zeroes both directions' kept states (see `mylib.layers.rnn_state`).

        Raises:
          AttributeError: the wrapped layer is not stateful (Keras 3).
        """
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        self.forward_layer.reset_states()
        self.backward_layer.reset_states()

    reset_state = reset_states

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        outs = [out, out] if self.merge_mode is None else [out]
        if self.return_state:
            n = len(getattr(self.forward_layer, "_state_count", 1) * [None]) * 2
            return outs + [None] * n
        return outs if self.merge_mode is None else out

    def get_config(self):
        cfg = {**super().get_config(), "layer": self._wrapped_config,
               "merge_mode": self.merge_mode}
        if self._backward_entry is not None:
            cfg["backward_layer"] = self._backward_entry
        return cfg

    @classmethod
    def from_config(cls, config):

        config = dict(config)
        layer = _from_entry(config.pop("layer"))
        if config.get("backward_layer") is not None:
            config["backward_layer"] = _from_entry(config["backward_layer"])
        return cls(layer, **config)


class TimeDistributed(Layer):
    """Applies `layer` to every timestep: ``[batch, time, ...] -> [batch, time, ...']``.

    The batch and time axes are merged into one for the inner call (one op per inner
    op, not one per timestep); the inner layer's weights are shared across time. An
    inner `BatchNormalization` in training normalizes each time step by its own batch
    statistics (Keras 3, which calls the layer per step; TF-Keras 2 pooled them). A mask
    ``[batch, time]`` passes through to the output (and, reshaped to ``[batch * time]``,
    to an inner layer whose `call` takes ``mask=``).
    """

    supports_masking = True

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `TimeDistributed` layer with a `Layer` "
                             f"instance. Received: {layer!r}")
        super().__init__(**kwargs)
        self.layer = layer
        self.input_spec = InputSpec(min_ndim=3)

    def call(self, inputs, training=None, mask=None):
        shape = inputs.shape.as_list()
        inner = shape[2:]
        if None in inner:
            raise ValueError(f'Layer "{self.name}": the dimensions after the time axis must '
                             f"be known. Received: input shape {tuple(shape)}")
        x = array_ops.reshape(inputs, [-1] + inner)
        kw = {} if training is None else {"training": training}
        if shape[1] is not None and \
                "time_steps" in inspect.signature(type(self.layer).call).parameters:
            # A layer whose training statistics mix the batch (BatchNormalization)
            # keeps them per time step, as Keras 3 (which calls it once per step).
            kw["time_steps"] = shape[1]
        if mask is not None and self.layer._accepts_mask():
            # Each step's mask entry goes with its sample: [batch, T] -> [batch * T].
            kw["mask"] = array_ops.reshape(mask, [-1] + mask.shape.as_list()[2:])
        y = self.layer(x, **kw)
        out_inner = y.shape.as_list()[1:]
        if shape[1] is not None and None not in out_inner:
            return array_ops.reshape(y, [-1, shape[1]] + out_inner)
        s = array_ops.shape(inputs)[:2]
        tail = array_ops.shape(y)[1:] if None in out_inner else \
            constant_ops.constant(out_inner, dtype="int32")
        out = array_ops.reshape(y, array_ops.concat([s, tail], axis=0))
        out.set_shape([shape[0], shape[1]] + out_inner)  # keep the known trailing dims
        return out

    def compute_output_shape(self, input_shape):
        inner = self.layer.compute_output_shape((input_shape[0],) + tuple(input_shape[2:]))
        return (input_shape[0], input_shape[1]) + tuple(inner[1:])

    def get_config(self):
        return {**super().get_config(), "layer": _layer_entry(self.layer)}

    @classmethod
    def from_config(cls, config):

        config = dict(config)
        return cls(_from_entry(config.pop("layer")), **config)
