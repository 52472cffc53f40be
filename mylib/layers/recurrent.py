"""Recurrent layers: `SimpleRNN`, `LSTM`, `GRU` (Keras 3 names, weights and semantics).

The time loop is one `ml.scan` op in the graph (lowered to `lax.scan`, differentiated
by the generic VJP op). The input projection ``x @ kernel + bias`` of every timestep is
one matmul before the loop; the loop body holds only the recurrent matmul and the gates.

Semantics as Keras 3:

- inputs ``[batch, time, features]``; weights ``kernel [features, G * units]``,
  ``recurrent_kernel [units, G * units]``, ``bias`` (G = 1 SimpleRNN, 4 LSTM with gate
  order i, f, c, o, 3 GRU with order z, r, h; GRU with ``reset_after=True`` has a
  ``bias [2, 3 * units]``: input bias, then recurrent bias).
- ``go_backwards=True`` processes the sequence from the end; the returned sequence is
  in processing order (reversed), as Keras.
- a mask ``[batch, time]`` (from `Embedding(mask_zero=True)` or ``mask=``): a masked
  step keeps the states unchanged; its output is the previous output (zeros with
  ``zero_output_for_mask=True``, which `Bidirectional` sets when returning sequences).
- ``dropout`` / ``recurrent_dropout`` (training only): one mask per sequence, on the
  inputs and on the previous output ``h`` fed back into the step.
- ``unroll=True`` unrolls the time loop in the compiled program (`lax.scan`'s
  ``unroll``; the sequence length is static once compiled): often faster for short
  sequences, at the cost of compile time and memory; results agree up to rounding.
"""

from __future__ import annotations

from mylib.core.compat_args import warn_ignored
from mylib.core.ops import array_ops, control_flow_ops, math_ops
from mylib.core.ops import constant_ops
from mylib.layers import activations, constraints, initializers, regularizers
from mylib.layers.base import InputSpec, Layer
from mylib.layers.rnn_cells import (check_rates, check_units, gru_step, lstm_step,
                                    make_weights, simple_rnn_step,
                                    unit_forget_bias_initializer)
from mylib.layers.rnn_cells import dropout_mask as _dropout_mask
from mylib.layers.rnn_state import StatefulRNNMixin


class _RNN(StatefulRNNMixin, Layer):
    """Shared machinery of the recurrent layers: weights, the scan, masks, options.

    Subclasses set `_gates` and `_state_count` and define `_step(x_t, states, rdm)`,
    where `x_t` is the projected input of one timestep ``[batch, G * units]``; the step
    math is the cells' (`mylib.layers.rnn_cells`), the weights stay the layer's own
    (``<layer>/kernel``, not Keras's ``<layer>/<cell>/kernel``: saved weights keep
    their names).
    """

    _gates = 1
    _state_count = 1
    supports_masking = True

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, return_sequences=False,
                 return_state=False, go_backwards=False, stateful=False, unroll=False,
                 zero_output_for_mask=False, **kwargs):
        super().__init__(**kwargs)
        check_units(units)
        check_rates(dropout, recurrent_dropout)
        self.units = int(units)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
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
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.unroll = bool(go_backwards), bool(unroll)
        self.stateful, self.states = bool(stateful), None
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.input_spec = InputSpec(ndim=3)

    # --- weights ---
    def _bias_shape(self):
        return [self._gates * self.units]

    def _bias_init(self):
        return self.bias_initializer

    def build(self, input_shape):
        feat = input_shape[-1]
        make_weights(self, feat, self._gates, self._bias_shape(), self._bias_init())
        self.input_spec = InputSpec(ndim=3, axes={-1: feat})
        if self.stateful:
            zero = constant_ops.zeros([1, self.units], self.dtype)
            self._build_states(input_shape[0], [zero] * self._state_count)

    def _input_bias(self):
        return self.bias

    # --- the loop ---
    def call(self, inputs, initial_state=None, mask=None, training=None):
        x = inputs if inputs.dtype == self.dtype else math_ops.cast(inputs, self.dtype)
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        if self.stateful:
            x, kept = self._read_states(x)
        if training and self.dropout > 0:
            dm = _dropout_mask(x[:, 0, :], self.dropout, self.seed)
            x = x * array_ops.expand_dims(dm, 1)
        xt = array_ops.transpose(x, [1, 0, 2])  # time-major [T, B, F]
        b = self._input_bias()
        m = None
        if mask is not None:
            m = array_ops.transpose(math_ops.cast(mask, "bool"), [1, 0])
        if self.go_backwards:
            xt = xt[::-1]
            m = m[::-1] if m is not None else None

        if initial_state is None and self.stateful:
            states = kept
        elif initial_state is None:
            zero = array_ops.reshape(constant_ops.zeros(
                array_ops.stack([array_ops.shape(xt)[1], self.units]), self.dtype),
                [-1 if xt.shape[1] is None else xt.shape[1], self.units])
            states = [zero] * self._state_count
        else:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
                else [initial_state]
            if len(states) != self._state_count:
                raise ValueError(f'Layer "{self.name}" expects {self._state_count} initial '
                                 f"state(s), but it received {len(states)}.")
            for i, s in enumerate(states):
                shape = s.shape.as_list() if s.shape.rank is not None else None
                if shape is not None and (len(shape) != 2 or shape[1] not in (None,
                                                                             self.units)):
                    raise ValueError(
                        f'Layer "{self.name}": initial state {i} must have shape (batch, '
                        f"{self.units}). Received: shape={tuple(shape)}")
            states = [s if s.dtype == self.dtype else math_ops.cast(s, self.dtype)
                      for s in states]
        rdm = None
        if training and self.recurrent_dropout > 0:
            rdm = _dropout_mask(states[0], self.recurrent_dropout,
                                None if self.seed is None else self.seed + 1)

        # The input projection x_t @ kernel runs inside the loop, one step at a time:
        # on XLA:CPU that is faster than one [T*B, F] @ [F, gates] product before the
        # loop (whose [T, B, gates] result and gradient the loops then stream through):
        # 32 ms against 52 ms a training step of the char LSTM of benchmarks/fit_lstm.py.
        def fn(carry, elem):
            x_t, m_t = elem if m is not None else (elem, None)
            x_t = math_ops.matmul(x_t, self.kernel)
            if b is not None:
                x_t = x_t + b
            new = self._step(x_t, list(carry), rdm)
            if m_t is not None:
                keep = array_ops.expand_dims(m_t, 1)
                new = [array_ops.where(keep, n, s) for n, s in zip(new, carry)]
            return tuple(new)

        elems = (xt, m) if m is not None else xt
        if not self.return_sequences and not (m is not None and self.zero_output_for_mask):
            # Only the last state is read: a fold keeps no [T, B, units] history (nor,
            # in the gradient, its cotangents).
            final = list(control_flow_ops.foldl(fn, elems, initializer=tuple(states),
                                                name="rnn_fold", unroll=self.unroll))
            out = [final[0]] + final if self.return_state else final[0]
            return self._keep_states(final, out) if self.stateful else out
        seqs = control_flow_ops.scan(fn, elems, initializer=tuple(states), name="rnn_scan",
                                     unroll=self.unroll)
        outputs = seqs[0]  # [T, B, units]: the output of each step is the state h
        if m is not None and self.zero_output_for_mask:
            outputs = array_ops.where(array_ops.expand_dims(m, 2), outputs,
                                      constant_ops.zeros_like(outputs))
        last = outputs[-1]
        final = [s[-1] for s in seqs]
        output = array_ops.transpose(outputs, [1, 0, 2]) if self.return_sequences else last
        out = [output] + final if self.return_state else output
        return self._keep_states(final, out) if self.stateful else out

    def _step(self, x_t, states, rdm):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `_step` (abstract in the base class)")

    def _rec(self, h, rdm):
        return h * rdm if rdm is not None else h

    # --- shapes, masks, config ---
    def compute_output_shape(self, input_shape):
        b, t = input_shape[0], input_shape[1]
        out = (b, t, self.units) if self.return_sequences else (b, self.units)
        if self.return_state:
            return [out] + [(b, self.units)] * self._state_count
        return out

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        if self.return_state:
            return [out] + [None] * self._state_count
        return out

    def get_config(self):
        ser = initializers.serialize
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
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
                "seed": self.seed, "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards,
                "stateful": self.stateful, "unroll": self.unroll,
                "zero_output_for_mask": self.zero_output_for_mask}


class SimpleRNN(_RNN):
    """Fully connected RNN: ``h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel
    + bias)``; the output is `h`.

    Args:
      units: size of the state and output.
      activation: default ``"tanh"``.
      use_bias, kernel_initializer, recurrent_initializer (default ``"orthogonal"``),
      bias_initializer, *_regularizer, *_constraint: as Keras.
      dropout, recurrent_dropout: fractions dropped (training only) from the inputs and
        from the recurrent state.
      return_sequences: return the output of every step ``[batch, time, units]`` instead
        of the last ``[batch, units]``.
      return_state: also return the final state(s): ``[output, h]``.
      go_backwards: process the sequence backwards (and return it reversed).
      unroll: unroll the time loop in the compiled program (often faster
        for short sequences, slower to compile for long ones).
      zero_output_for_mask: masked steps output zeros instead of the previous output.
      stateful: keep the final states of each batch as the initial states of the next
        (sample i continues sample i; needs a static batch size); `reset_states()`
        zeroes them (see `mylib.layers.rnn_state`).
    A ``recurrent_activation`` argument (which `SimpleRNN` has none of) is accepted and
    ignored, with a warning once.
    Call arguments: ``inputs [batch, time, features]``, ``initial_state`` (list of
      ``[batch, units]``), ``mask [batch, time]`` bool, ``training``.
    """

    def __init__(self, units, activation="tanh", **kwargs):
        if kwargs.pop("recurrent_activation", None) is not None:
            warn_ignored("SimpleRNN", "recurrent_activation",
                         "SimpleRNN has no gates; only `activation` applies.")
        super().__init__(units, activation=activation, **kwargs)

    def _step(self, x_t, states, rdm):
        return [simple_rnn_step(x_t, self._rec(states[0], rdm), self.recurrent_kernel,
                                self.activation)]

    def get_config(self):
        cfg = super().get_config()
        cfg.pop("recurrent_activation")
        return cfg


class LSTM(_RNN):
    """Long short-term memory (Hochreiter & Schmidhuber 1997), as Keras 3.

    With ``z = x_t @ kernel + h @ recurrent_kernel + bias`` split into four blocks of
    `units` in the order i, f, c, o::

        i = recurrent_activation(z_i); f = recurrent_activation(z_f)
        c = f * c_prev + i * activation(z_c); o = recurrent_activation(z_o)
        h = o * activation(c)

    Args:
      units, activation (``"tanh"``), recurrent_activation (``"sigmoid"``), use_bias,
      initializers, regularizers, constraints, dropout, recurrent_dropout,
      return_sequences, return_state (``[output, h, c]``), go_backwards, unroll,
      zero_output_for_mask: as `SimpleRNN`.
      unit_forget_bias: initialize the forget-gate bias to ones (Jozefowicz et al. 2015).
    """

    _gates = 4
    _state_count = 2

    def __init__(self, units, unit_forget_bias=True, **kwargs):
        super().__init__(units, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)

    def _bias_init(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        return unit_forget_bias_initializer(self.bias_initializer, self.units)

    def _step(self, x_t, states, rdm):
        h, c = states
        return list(lstm_step(x_t, self._rec(h, rdm), c, self.recurrent_kernel,
                              self.activation, self.recurrent_activation))

    def get_config(self):
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias}


class GRU(_RNN):
    """Gated recurrent unit (Cho et al. 2014), as Keras 3 (gate order z, r, h).

    ``reset_after=True`` (the default, cuDNN-compatible): the reset gate multiplies the
    recurrent projection after the matmul, and the bias has shape ``[2, 3 * units]``
    (input bias, recurrent bias)::

        z = ra(x_z + h @ U_z + br_z); r = ra(x_r + h @ U_r + br_r)
        hh = activation(x_h + r * (h @ U_h + br_h)); h = z * h_prev + (1 - z) * hh

    With ``reset_after=False``: ``hh = activation(x_h + (r * h) @ U_h)`` and one bias
    ``[3 * units]``.

    Args: as `SimpleRNN`, plus recurrent_activation (``"sigmoid"``) and reset_after.
    """

    _gates = 3
    _state_count = 1

    def __init__(self, units, reset_after=True, **kwargs):
        super().__init__(units, **kwargs)
        self.reset_after = bool(reset_after)

    def _bias_shape(self):
        return [2, 3 * self.units] if self.reset_after else [3 * self.units]

    def _input_bias(self):
        if self.bias is None:
            return None
        return self.bias[0] if self.reset_after else self.bias

    def _step(self, x_t, states, rdm):
        rec_bias = self.bias[1] if self.reset_after and self.bias is not None else None
        # As Keras: the recurrent dropout mask drops `h` on its way into the recurrent
        # kernel; the new state mixes in the undropped `h`.
        return [gru_step(x_t, states[0], self._rec(states[0], rdm), self.recurrent_kernel,
                         rec_bias, self.reset_after, self.activation,
                         self.recurrent_activation)]

    def get_config(self):
        return {**super().get_config(), "reset_after": self.reset_after}
