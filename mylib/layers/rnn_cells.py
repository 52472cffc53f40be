"""Recurrent cells, as Keras 3: `SimpleRNNCell`, `LSTMCell`, `GRUCell` (one timestep
each; `RNN` runs them over a sequence) and the step math they share with the
whole-sequence layers `SimpleRNN`, `LSTM`, `GRU` (mylib/layers/recurrent.py).

A cell's contract (Keras 3's): ``call(inputs, states, training=None) -> (output,
new_states)`` with ``inputs [batch, features]`` and each state ``[batch, size]``;
``state_size`` (an int, or a list with one int per state), ``output_size`` and
``get_initial_state(batch_size)``. Weights are Keras's, in Keras's order and layout:
``kernel [features, G * units]``, ``recurrent_kernel [units, G * units]``, ``bias``
(G = 1, 4 (gates i, f, c, o) or 3 (gates z, r, h)), so weights copied from Keras with
`set_weights` give Keras's outputs.

Dropout differs from Keras in its random draws only: one mask per sequence on the
inputs and one on the recurrent state, shared by all gates (Keras's
``implementation=1``, which recurrent dropout selects, draws one mask per gate).
"""

from __future__ import annotations

import numpy as np

from mylib.core.ops import array_ops, constant_ops, math_ops
from mylib.layers import activations, constraints, initializers, regularizers
from mylib.layers.base import Layer


# ---------------------------------------------------------------- shared step math
# Each takes the input projection ``x @ kernel + input bias`` of one step, so the
# whole-sequence layers (which project inside their own loop) and the cells share it.

def simple_rnn_step(x_proj, h_rec, recurrent_kernel, activation):
    """``activation(x_proj + h_rec @ recurrent_kernel)``: the new state and output
    ``[batch, units]`` of a fully connected RNN (Elman 1990)."""
    return activation(x_proj + math_ops.matmul(h_rec, recurrent_kernel))


def lstm_step(x_proj, h_rec, c, recurrent_kernel, activation, recurrent_activation):
    """One LSTM step (Hochreiter & Schmidhuber 1997; Keras 3's gate order i, f, c, o).

    Args:
      x_proj: ``[batch, 4 * units]``, ``x @ kernel + bias``.
      h_rec: previous output ``[batch, units]`` (after recurrent dropout).
      c: previous carry ``[batch, units]``.
    Returns:
      ``(h, c)``, each ``[batch, units]``.
    """
    z = x_proj + math_ops.matmul(h_rec, recurrent_kernel)
    # One split, not four slices: the gradient of a split is one concatenation,
    # that of four slices four padded [batch, 4 * units] sums, in every step.
    zi, zf, zc, zo = array_ops.split(z, 4, axis=1)
    i = recurrent_activation(zi)
    f = recurrent_activation(zf)
    c = f * c + i * activation(zc)
    o = recurrent_activation(zo)
    return o * activation(c), c


def gru_step(x_proj, h, h_rec, recurrent_kernel, recurrent_bias, reset_after, activation,
             recurrent_activation):
    """One GRU step (Cho et al. 2014; Keras 3's gate order z, r, h).

    Args:
      x_proj: ``[batch, 3 * units]``, ``x @ kernel + input bias``.
      h: previous state ``[batch, units]`` (mixed into the new state).
      h_rec: `h` after recurrent dropout (fed to the recurrent kernel).
      recurrent_bias: ``[3 * units]`` or None (only with `reset_after`).
      reset_after: apply the reset gate after the recurrent matmul (cuDNN's form).
    Returns:
      the new state ``[batch, units]``.
    """
    units = recurrent_kernel.shape.as_list()[0]
    xz, xr, xh = array_ops.split(x_proj, 3, axis=1)
    if reset_after:
        inner = math_ops.matmul(h_rec, recurrent_kernel)
        if recurrent_bias is not None:
            inner = inner + recurrent_bias
        rz, rr, rh = array_ops.split(inner, 3, axis=1)
        z = recurrent_activation(xz + rz)
        r = recurrent_activation(xr + rr)
        hh = activation(xh + r * rh)
    else:
        rzr = math_ops.matmul(h_rec, recurrent_kernel[:, :2 * units])
        z = recurrent_activation(xz + rzr[:, :units])
        r = recurrent_activation(xr + rzr[:, units:])
        hh = activation(xh + math_ops.matmul(r * h_rec, recurrent_kernel[:, 2 * units:]))
    return z * h + (1.0 - z) * hh


def dropout_mask(like, rate, seed):
    """A keep mask like `like` ([batch, n]): 0 or ``1 / (1 - rate)``."""
    from mylib import nn

    return nn.dropout(constant_ops.ones_like(like), rate=rate, seed=seed)


def zeros_state(batch_size, size, dtype):
    """Zeros ``[batch_size, size]``; `batch_size` an int or a scalar int tensor."""
    if isinstance(batch_size, (int, np.integer)):
        return constant_ops.zeros([int(batch_size), size], dtype)
    z = constant_ops.zeros(array_ops.stack([batch_size, size]), dtype)
    return array_ops.reshape(z, [-1, size])  # the static `size`


def check_rates(dropout, recurrent_dropout):
    for what, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"`{what}` must be a float in [0, 1). Received: {what}={rate}")


def check_units(units):
    if not isinstance(units, (int, np.integer)) or isinstance(units, bool) or units <= 0:
        raise ValueError(f"Received an invalid value for argument `units`, expected a "
                         f"positive integer, got {units!r}.")
    return int(units)


def make_weights(layer, input_dim, gates, bias_shape, bias_initializer):
    """``kernel [input_dim, gates * units]``, ``recurrent_kernel [units, gates * units]``
    and (with `use_bias`) ``bias`` of `layer`, named and ordered as Keras's."""
    if input_dim is None:
        raise ValueError(f'Layer "{layer.name}": the feature dimension (last axis) of the '
                         f"input must be known. Received: input_dim={input_dim}")
    n = gates * layer.units
    layer.kernel = layer.add_weight("kernel", [input_dim, n], layer.kernel_initializer,
                                    regularizer=layer.kernel_regularizer,
                                    constraint=layer.kernel_constraint)
    layer.recurrent_kernel = layer.add_weight(
        "recurrent_kernel", [layer.units, n], layer.recurrent_initializer,
        regularizer=layer.recurrent_regularizer, constraint=layer.recurrent_constraint)
    layer.bias = (layer.add_weight("bias", bias_shape, bias_initializer,
                                   regularizer=layer.bias_regularizer,
                                   constraint=layer.bias_constraint)
                  if layer.use_bias else None)


def unit_forget_bias_initializer(base, units):
    """Keras's LSTM bias initializer with ``unit_forget_bias``: `base` for the i, c, o
    blocks and ones for the forget gate (Jozefowicz et al. 2015)."""
    def init(shape, dtype=None):
        return array_ops.concat([base([units], dtype=dtype),
                                 initializers.get("ones")([units], dtype=dtype),
                                 base([2 * units], dtype=dtype)], axis=0)
    return init


# ---------------------------------------------------------------- cells
class _DropoutCell(Layer):
    """The arguments, weights and dropout masks the three built-in cells share.

    `RNN` draws a cell's masks once per sequence (`_set_sequence_masks`) before its
    loop, so every step of one sequence drops the same units, as Keras; a cell called
    on its own draws fresh masks in each call.
    """

    _gates = 1

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, **kwargs):
        kwargs.pop("implementation", None)  # Keras's kernel choice; one form here
        super().__init__(**kwargs)
        self.units = check_units(units)
        check_rates(dropout, recurrent_dropout)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.dropout, self.recurrent_dropout = float(dropout), float(recurrent_dropout)
        self.seed = seed
        self._seq_masks = None

    @property
    def output_size(self):
        return self.units

    def _bias_shape(self):
        return [self._gates * self.units]

    def _bias_initializer(self):
        return self.bias_initializer

    def build(self, input_shape):
        make_weights(self, input_shape[-1], self._gates, self._bias_shape(),
                     self._bias_initializer())
        self.built = True

    def _set_sequence_masks(self, step_input, state, training):
        """Draws the masks of one sequence (`RNN` does, before its loop), or clears them
        (``step_input=None``)."""
        if step_input is None or not training:
            self._seq_masks = None
            return
        dm = dropout_mask(step_input, self.dropout, self.seed) if self.dropout else None
        rdm = (dropout_mask(state, self.recurrent_dropout,
                            None if self.seed is None else self.seed + 1)
               if self.recurrent_dropout else None)
        self._seq_masks = (dm, rdm)

    def _dropped(self, inputs, h, training):
        """(inputs, h) after dropout: the sequence's masks, else fresh ones."""
        if not training or not (self.dropout or self.recurrent_dropout):
            return inputs, h
        masks = self._seq_masks
        if masks is None:
            self._set_sequence_masks(inputs, h, training)
            masks, self._seq_masks = self._seq_masks, None
        dm, rdm = masks
        return (inputs * dm if dm is not None else inputs,
                h * rdm if rdm is not None else h)

    def _project(self, inputs, input_bias):
        x = math_ops.matmul(inputs, self.kernel)
        return x + input_bias if input_bias is not None else x

    def get_initial_state(self, batch_size=None):
        """Zero states: a list of ``[batch_size, units]`` tensors, one per state."""
        sizes = self.state_size if isinstance(self.state_size, list) else [self.state_size]
        return [zeros_state(batch_size, s, self.dtype) for s in sizes]

    def get_config(self):
        ser = initializers.serialize
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": ser(self.kernel_initializer),
                "recurrent_initializer": ser(self.recurrent_initializer),
                "bias_initializer": ser(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "recurrent_regularizer": regularizers.serialize(self.recurrent_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "recurrent_constraint": constraints.serialize(self.recurrent_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint),
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
                "seed": self.seed}


def _first_state(states):
    return states[0] if isinstance(states, (list, tuple)) else states


class SimpleRNNCell(_DropoutCell):
    """One step of a fully connected RNN, as Keras 3's `SimpleRNNCell`:
    ``h = activation(x @ kernel + bias + h_prev @ recurrent_kernel)``; the output is `h`.

    Args:
      units: size of the state and output.
      activation: default ``"tanh"`` (None: linear).
      use_bias, kernel_initializer, recurrent_initializer (default ``"orthogonal"``),
      bias_initializer, *_regularizer, *_constraint: as Keras.
      dropout, recurrent_dropout: fractions in [0, 1) of the inputs and of the state
        dropped in training (Keras clips other values; mylib raises ValueError).
      seed: seed of the dropout masks.
    Call arguments: ``inputs [batch, features]``, ``states`` (``[h]`` or ``h``,
      ``[batch, units]``), ``training``. Returns ``(h, [h])`` (``(h, h)`` when `states`
      is a tensor), float in the layer's dtype.
    Weights: ``kernel [features, units]``, ``recurrent_kernel [units, units]``,
      ``bias [units]``.
    """

    def __init__(self, units, activation="tanh", **kwargs):
        super().__init__(units, activation=activation, **kwargs)

    @property
    def state_size(self):
        return self.units

    def call(self, inputs, states, training=False):
        prev = _first_state(states)
        x, h = self._dropped(inputs, prev, training)
        out = simple_rnn_step(self._project(x, self.bias), h, self.recurrent_kernel,
                              self.activation)
        return out, ([out] if isinstance(states, (list, tuple)) else out)


class LSTMCell(_DropoutCell):
    """One LSTM step, as Keras 3's `LSTMCell` (Hochreiter & Schmidhuber 1997).

    With ``z = x @ kernel + h_prev @ recurrent_kernel + bias`` split into blocks i, f,
    c, o of `units`::

        c = ra(z_f) * c_prev + ra(z_i) * activation(z_c);  h = ra(z_o) * activation(c)

    Args:
      units: size of each state and of the output.
      activation (``"tanh"``), recurrent_activation (``"sigmoid"``, `ra` above),
      use_bias, initializers, regularizers, constraints, dropout, recurrent_dropout,
      seed: as `SimpleRNNCell`.
      unit_forget_bias: initialize the forget-gate bias to ones (Jozefowicz et al.
        2015), default True.
    Call arguments: ``inputs [batch, features]``, ``states [h, c]`` (each ``[batch,
      units]``), ``training``. Returns ``(h, [h, c])``.
    Weights: ``kernel [features, 4 * units]``, ``recurrent_kernel [units, 4 * units]``,
      ``bias [4 * units]``.
    """

    _gates = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self):
        return [self.units, self.units]

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        return unit_forget_bias_initializer(self.bias_initializer, self.units)

    def call(self, inputs, states, training=False):
        h_prev, c_prev = states[0], states[1]
        x, h = self._dropped(inputs, h_prev, training)
        h, c = lstm_step(self._project(x, self.bias), h, c_prev, self.recurrent_kernel,
                         self.activation, self.recurrent_activation)
        return h, [h, c]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias}


class GRUCell(_DropoutCell):
    """One GRU step, as Keras 3's `GRUCell` (Cho et al. 2014; gate order z, r, h).

    ``reset_after=True`` (default; cuDNN's form): the reset gate multiplies the
    recurrent projection after the matmul, and ``bias`` is ``[2, 3 * units]`` (input
    bias, recurrent bias)::

        z = ra(x_z + h @ U_z + br_z);  r = ra(x_r + h @ U_r + br_r)
        hh = activation(x_h + r * (h @ U_h + br_h));  h = z * h_prev + (1 - z) * hh

    ``reset_after=False``: ``hh = activation(x_h + (r * h) @ U_h)``, ``bias [3 * units]``.

    Args: as `LSTMCell` (no `unit_forget_bias`), plus reset_after.
    Call arguments: ``inputs [batch, features]``, ``states`` (``[h]`` or ``h``,
      ``[batch, units]``), ``training``. Returns ``(h, [h])`` (``(h, h)`` when `states`
      is a tensor).
    """

    _gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 reset_after=True, **kwargs):
        super().__init__(units, activation=activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = bool(reset_after)

    @property
    def state_size(self):
        return self.units

    def _bias_shape(self):
        return [2, 3 * self.units] if self.reset_after else [3 * self.units]

    def call(self, inputs, states, training=False):
        h_prev = _first_state(states)
        x, h_rec = self._dropped(inputs, h_prev, training)
        in_bias = rec_bias = None
        if self.bias is not None:
            in_bias, rec_bias = ((self.bias[0], self.bias[1]) if self.reset_after
                                 else (self.bias, None))
        h = gru_step(self._project(x, in_bias), h_prev, h_rec, self.recurrent_kernel,
                     rec_bias, self.reset_after, self.activation, self.recurrent_activation)
        return h, ([h] if isinstance(states, (list, tuple)) else h)

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "reset_after": self.reset_after}
