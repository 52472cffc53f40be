"""`RNN` (a cell run over a sequence) and `StackedRNNCells`, as Keras 3.

`RNN(cell)` takes any cell with Keras 3's contract: a layer (or object) with
``state_size`` (an int, or a list with one entry per state; an entry may itself be a
list, as `StackedRNNCells`' are), optional ``output_size``, ``call(inputs, states,
training=None) -> (output, new_states)`` and optional ``get_initial_state(batch_size)``.
The cell's `call` is traced once into the body of one loop op (`scan_carry`, lowered to
`lax.scan`); its weights are made before the loop, by ``cell.build((batch,
features))``.
"""

from __future__ import annotations

import inspect

import jax
import numpy as np

from mylib.core.graph import Tensor, get_default_graph
from mylib.core.ops import array_ops, constant_ops, control_flow_ops, math_ops
from mylib.layers import registration
from mylib.layers.base import Layer, training_context
from mylib.layers.rnn_cells import zeros_state
from mylib.layers.rnn_state import StatefulRNNMixin

_tree = jax.tree_util


def _is_leaf_size(s):
    return not isinstance(s, (list, tuple))


def _cell_entry(cell):
    """Keras's serialized form of a cell: ``{"module", "class_name", "config",
    "registered_name"}``."""
    cls = type(cell)
    return {"module": cls.__module__, "class_name": cls.__name__,
            "config": cell.get_config(),
            "registered_name": registration.registered_name_of(cls)}


def _cell_from_entry(entry, custom_objects=None):
    """The cell of `_cell_entry`: a class in `custom_objects`, a registered one, or one
    of `mylib.layers` (by class name)."""
    import mylib.layers as L

    if not isinstance(entry, dict) or "class_name" not in entry:
        raise ValueError(f"Expected a serialized cell (a dict with 'class_name'). "
                         f"Received: {entry!r}")
    cls = None
    for key in (entry.get("registered_name"), entry["class_name"]):
        if key and cls is None:
            cls = registration.get_registered_object(key, custom_objects)
    if cls is None:
        cls = getattr(L, entry["class_name"], None)
    if not isinstance(cls, type):
        raise ValueError(f"Unknown cell class {entry['class_name']!r}: pass it in "
                         "`custom_objects` or register it with "
                         "keras.saving.register_keras_serializable.")
    config = dict(entry.get("config") or {})
    if "custom_objects" in inspect.signature(cls.from_config).parameters:
        return cls.from_config(config, custom_objects=custom_objects)
    return cls.from_config(config)


def _check_cell(cell, what="cell"):
    if "call" not in dir(cell):
        raise ValueError(f"Argument `{what}` should have a `call` method. Received: "
                         f"{what}={cell}")
    if "state_size" not in dir(cell):
        raise ValueError("The RNN cell should have a `state_size` attribute (single "
                         "integer or list of integers, one integer per RNN state). "
                         f"Received: {what}={cell}")


def _takes_training(cell):
    if isinstance(cell, Layer):
        return cell._training_arg()[0]
    return "training" in inspect.signature(cell.call).parameters


def _output_size(cell):
    size = getattr(cell, "output_size", None)
    if size is not None:
        return size
    s = cell.state_size
    return s[0] if isinstance(s, (list, tuple)) else s


def _call_cell(cell, inputs, states, kwargs):
    """``cell.call(inputs, states, **kwargs)``, with float inputs and states cast to a
    layer cell's compute dtype first (what its `__call__` would do: a stack of
    mixed-precision cells inside a float32 `StackedRNNCells`)."""
    want = getattr(cell, "dtype", None) if isinstance(cell, Layer) else None
    if want is not None and want.is_floating:
        def cast(t):
            if isinstance(t, Tensor) and t.dtype.is_floating and t.dtype != want:
                return math_ops.cast(t, want)
            return t
        inputs = cast(inputs)
        states = _tree.tree_map(cast, states)
    return cell.call(inputs, states, **kwargs)


def _build_cell(cell, step_shape):
    """Builds a layer cell on ``(batch, features)`` in its own name scope (weights
    ``<rnn>/<cell>/kernel``, as Keras's paths)."""
    if isinstance(cell, Layer) and not cell.built:
        with get_default_graph().name_scope(cell.name):
            cell.build(step_shape)
        cell.built = True
        cell._build_input_shape = step_shape


class StackedRNNCells(Layer):
    """Cells run one after the other at each timestep, as Keras 3's `StackedRNNCells`:
    each cell's output is the next cell's input; the output is the last cell's.

    Args:
      cells: list of cells (`LSTMCell`, `GRUCell`, `SimpleRNNCell`, or custom cells).
    Attributes:
      state_size: ``[cell.state_size for cell in cells]`` (nested).
      output_size: the last cell's output size.
    Call arguments: ``inputs [batch, features]``, ``states`` (one entry per cell: that
      cell's states), ``training``. Returns ``(output [batch, output_size],
      new_states)`` with `new_states` in the structure of `states`.
    """

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        for cell in cells:
            if "call" not in dir(cell):
                raise ValueError("All cells must have a `call` method. Received cell "
                                 f"without a `call` method: {cell}")
            if "state_size" not in dir(cell):
                raise ValueError("All cells must have a `state_size` attribute. Received "
                                 f"cell without a `state_size`: {cell}")
        self.cells = list(cells)

    @property
    def state_size(self):
        return [c.state_size for c in self.cells]

    @property
    def output_size(self):
        return _output_size(self.cells[-1])

    def get_initial_state(self, batch_size=None):
        """Each cell's initial states (its `get_initial_state`, else zeros)."""
        return [_initial_state(c, batch_size, self.dtype) for c in self.cells]

    def build(self, input_shape):
        for cell in self.cells:
            _build_cell(cell, tuple(input_shape))
            input_shape = (input_shape[0], _output_size(cell))
        self.built = True

    def call(self, inputs, states, training=False, **kwargs):
        new_states = []
        for cell, cell_states in zip(self.cells, states):
            is_list = isinstance(cell_states, (list, tuple))
            cell_states = list(cell_states) if is_list else [cell_states]
            kw = dict(kwargs)
            if _takes_training(cell):
                kw["training"] = training
            inputs, cell_states = _call_cell(cell, inputs, cell_states, kw)
            if not isinstance(cell_states, (list, tuple)):
                cell_states = [cell_states]
            if len(cell_states) == 1 and not is_list:
                cell_states = cell_states[0]
            new_states.append(cell_states)
        return inputs, new_states

    def get_config(self):
        return {**super().get_config(), "cells": [_cell_entry(c) for c in self.cells]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        cells = [_cell_from_entry(e, custom_objects) for e in config.pop("cells")]
        return cls(cells, **config)


def _initial_state(cell, batch_size, dtype):
    """`cell.get_initial_state(batch_size=...)` when it has one, else zeros in the
    structure of its `state_size`."""
    fn = getattr(cell, "get_initial_state", None)
    if fn is not None:
        return fn(batch_size=batch_size)
    size = cell.state_size
    if _is_leaf_size(size):
        return zeros_state(batch_size, size, dtype)
    return [zeros_state(batch_size, s, dtype) if _is_leaf_size(s) else
            [zeros_state(batch_size, d, dtype) for d in s] for s in size]


def _set_dropout_masks(cell, step_input, state, training):
    """Draws the dropout masks of the built-in cells (inside `cell`, for a stack) for
    one sequence; ``step_input=None`` clears them."""
    if isinstance(cell, StackedRNNCells):
        states = state if state is not None else [None] * len(cell.cells)
        for c, s in zip(cell.cells, states):
            s0 = s
            while isinstance(s0, (list, tuple)):
                s0 = s0[0]
            _set_dropout_masks(c, step_input, s0, training)
            if step_input is not None:
                size = _output_size(c)
                step_input = zeros_state(array_ops.shape(step_input)[0], size,
                                         step_input.dtype)
    elif hasattr(cell, "_set_sequence_masks"):
        if isinstance(state, (list, tuple)):
            state = state[0]
        cell._set_sequence_masks(step_input, state, training)


class RNN(StatefulRNNMixin, Layer):
    """Runs a recurrent cell over the time axis of a sequence, as Keras 3's `RNN`.

    Args:
      cell: a cell (`LSTMCell`, `GRUCell`, `SimpleRNNCell`, `StackedRNNCells`, or a
        custom layer with Keras's cell contract: ``state_size``, ``call(inputs, states,
        training=None) -> (output, new_states)``, optional ``output_size`` and
        ``get_initial_state(batch_size)``), or a list of cells (made a
        `StackedRNNCells`).
      return_sequences: return every step's output ``[batch, time, output_size]``
        instead of the last ``[batch, output_size]``.
      return_state: also return the final states: ``[output, *states]`` (a stack's
        states nest per cell, as Keras's).
      go_backwards: process the sequence from its end; the returned sequence is in
        processing order (reversed), as Keras.
      stateful: keep the final states of each batch as the initial states of the next
        (needs a static batch size; `reset_states()` zeroes them; see
        `mylib.layers.rnn_state`).
      unroll: unroll the time loop in the compiled program (`lax.scan`'s ``unroll``;
        needs a static sequence length).
      zero_output_for_mask: masked steps output zeros instead of the previous output.
    Call arguments:
      sequences: ``[batch, time, features]`` float.
      initial_state: the cell's states (a tensor or list of ``[batch, size]``; for a
        stack, nested per cell, or flat in order); default the cell's
        `get_initial_state`, else zeros.
      mask: ``[batch, time]`` bool (also taken from `Embedding(mask_zero=True)`): a
        masked step keeps the states; its output is the previous output (the first
        state, a stack's last cell's first state; with ``unroll=True``, the previous
        step's output, zeros at first), or zeros with ``zero_output_for_mask``
        (ignored with ``unroll=True``) — each as Keras 3's JAX backend does.
      training: passed to the cell's `call` when it takes one.
    Returns:
      ``[batch, output_size]`` or ``[batch, time, output_size]``, in the layer's dtype;
      with `return_state`, ``[output, *final_states]``.
    """

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, zero_output_for_mask=False, **kwargs):
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        _check_cell(cell)
        state_size = getattr(cell, "state_size", None)
        if state_size is None:
            raise ValueError("state_size must be specified as property on the RNN cell.")
        if not isinstance(state_size, (list, tuple, int)):
            raise ValueError("state_size must be an integer, or a list/tuple of integers "
                             f"(one for each state tensor). Received: {state_size!r}")
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful, self.states = bool(stateful), None
        self.unroll = bool(unroll)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.supports_masking = True

    @property
    def state_size(self):
        s = self.cell.state_size
        return [s] if isinstance(s, int) else list(s)

    @property
    def _state_count(self):
        return len(_tree.tree_leaves(self.state_size))

    def build(self, sequences_shape, initial_state_shape=None):
        if isinstance(sequences_shape, list) and sequences_shape and \
                isinstance(sequences_shape[0], tuple):
            sequences_shape = sequences_shape[0]
        if len(sequences_shape) < 3:
            raise ValueError(f'Input 0 of layer "{self.name}" is incompatible with the '
                             "layer: expected ndim=3 ([batch, time, features]), found "
                             f"ndim={len(sequences_shape)}. Full shape received: "
                             f"{tuple(sequences_shape)}")
        _build_cell(self.cell, (sequences_shape[0],) + tuple(sequences_shape[2:]))
        if self.stateful:
            batch = sequences_shape[0]
            self._build_states(batch, _tree.tree_leaves(self.get_initial_state(batch or 1)))
        self.built = True

    def get_initial_state(self, batch_size):
        """The cell's initial states for `batch_size` (an int or scalar int tensor): its
        `get_initial_state`, else zeros ``[batch_size, size]`` per state; a list."""
        dtype = getattr(self.cell, "dtype", self.dtype)
        state = _initial_state(self.cell, batch_size, dtype)
        return list(state) if isinstance(state, (list, tuple)) else [state]

    def _standardize_state(self, initial_state, batch_size):
        template = self.get_initial_state(batch_size)
        want = _tree.tree_leaves(template)
        got = _tree.tree_leaves(initial_state if isinstance(initial_state, (list, tuple))
                                else [initial_state])
        if len(got) != len(want):
            raise ValueError(f'Layer "{self.name}" expects {len(want)} initial state(s) '
                             f"(cell state_size={self.cell.state_size}), but it received "
                             f"{len(got)}.")
        for i, (g, w) in enumerate(zip(got, want)):
            if not isinstance(g, Tensor):
                raise ValueError(f'Layer "{self.name}": initial state {i} must be a '
                                 f"tensor. Received: {g!r}")
            if g.shape.rank is not None and w.shape.rank is not None and \
                    not g.shape[1:].is_compatible_with(w.shape[1:]):
                raise ValueError(
                    f'Layer "{self.name}": initial state {i} must have shape '
                    f"{tuple(['batch'] + w.shape.as_list()[1:])}. Received: "
                    f"shape={tuple(g.shape.as_list())}")
        return _tree.tree_unflatten(_tree.tree_structure(template), got)

    def call(self, sequences, initial_state=None, mask=None, training=None):
        cell = self.cell
        dtype = self.dtype  # of the loop's states and outputs; the cell computes in its own
        x = sequences if sequences.dtype == dtype else math_ops.cast(sequences, dtype)
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        steps = x.shape[1]
        if self.unroll and steps is None:
            raise ValueError("Cannot unroll a RNN if the time dimension is undefined. "
                             "Specify the time dimension with the `shape` of `Input()`.")
        batch = x.shape[0] if x.shape[0] is not None else array_ops.shape(x)[0]
        if self.stateful:
            x, kept = self._read_states(x)
        if initial_state is None and self.stateful:
            states = _tree.tree_unflatten(
                _tree.tree_structure(self.get_initial_state(batch)), kept)
        else:
            states = (self.get_initial_state(batch) if initial_state is None
                      else self._standardize_state(initial_state, batch))
        flat, tree = _tree.tree_flatten(states)
        flat = [s if s.dtype == dtype else math_ops.cast(s, dtype) for s in flat]
        states = _tree.tree_unflatten(tree, flat)

        xt = array_ops.transpose(x, [1, 0] + list(range(2, x.shape.rank)))  # [T, B, F]
        m = None
        if mask is not None:
            m = array_ops.transpose(math_ops.cast(mask, "bool"), [1, 0])
        if self.go_backwards:
            xt = xt[::-1]
            m = m[::-1] if m is not None else None

        out_size = _output_size(cell)
        out_shape = list(out_size) if isinstance(out_size, (list, tuple)) else [out_size]
        out0 = array_ops.reshape(constant_ops.zeros(
            array_ops.stack([array_ops.shape(x)[0], int(np.prod(out_shape))]),
            dtype), [-1] + out_shape)
        cell_kw = {"training": training} if _takes_training(cell) else {}
        # Keras's scan takes a masked step's output from the previous states; its
        # unrolled loop (and a cell whose output is not its first state) carries the
        # previous output itself.
        tm1 = _keras_output_tm1(states)
        carry_prev = self.unroll or tm1 is None or \
            not tm1.shape[1:].is_compatible_with(out0.shape[1:])
        zero_out = self.zero_output_for_mask and not self.unroll

        def step(carry, elem):
            x_t, m_t = elem if m is not None else (elem, None)
            prev_flat, prev_out = carry
            prev_states = _tree.tree_unflatten(tree, prev_flat)
            with training_context(training):
                out, new_states = _call_cell(cell, x_t, prev_states, cell_kw)
            if not isinstance(new_states, (list, tuple)):
                new_states = [new_states]
            new_flat = _tree.tree_leaves(new_states)
            if len(new_flat) != len(prev_flat):
                raise ValueError(f'Layer "{self.name}": the cell returned {len(new_flat)} '
                                 f"state(s) for {len(prev_flat)} (state_size="
                                 f"{cell.state_size}).")
            new_flat = [s if s.dtype == dtype else math_ops.cast(s, dtype)
                        for s in new_flat]
            out = out if out.dtype == dtype else math_ops.cast(out, dtype)
            if m_t is not None:
                new_flat = [array_ops.where(_expand_to(m_t, n), n, s)
                            for n, s in zip(new_flat, prev_flat)]
                if zero_out:
                    prev = constant_ops.zeros_like(out)
                else:
                    prev = prev_out if carry_prev else _keras_output_tm1(prev_states)
                out = array_ops.where(_expand_to(m_t, out), out, prev)
            return (new_flat, out), (out if self.return_sequences else None)

        elems = (xt, m) if m is not None else xt
        with get_default_graph().name_scope("rnn_loop"):
            _set_dropout_masks(cell, x[:, 0], states, training)
            try:
                (final_flat, last), outputs = control_flow_ops.scan_carry(
                    step, (flat, out0), elems, unroll=True if self.unroll else 1,
                    name="rnn_scan")
            finally:
                _set_dropout_masks(cell, None, None, training)
        if self.return_sequences:
            perm = [1, 0] + list(range(2, outputs.shape.rank))
            output = array_ops.transpose(outputs, perm)
        else:
            output = last
        out = [output] + list(_tree.tree_unflatten(tree, final_flat)) \
            if self.return_state else output
        return self._keep_states(final_flat, out) if self.stateful else out

    def compute_output_shape(self, sequences_shape, initial_state_shape=None):
        b, t = sequences_shape[0], sequences_shape[1]
        out_size = _output_size(self.cell)
        out_shape = tuple(out_size) if isinstance(out_size, (list, tuple)) else (out_size,)
        out = (b, t) + out_shape if self.return_sequences else (b,) + out_shape
        if not self.return_state:
            return out
        states = []
        for s in self.state_size:
            states.append((b, s) if _is_leaf_size(s) else [(b, d) for d in s])
        return [out] + states

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        if self.return_state:
            return [out] + [None] * len(self.state_size)
        return out

    def get_config(self):
        return {**super().get_config(), "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards,
                "stateful": self.stateful, "unroll": self.unroll,
                "zero_output_for_mask": self.zero_output_for_mask,
                "cell": _cell_entry(self.cell)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        cell = _cell_from_entry(config.pop("cell"), custom_objects)
        return cls(cell, **config)


def _keras_output_tm1(states):
    """Keras's previous output at a masked step: the first state, or, when that is
    nested (a stack), the last cell's first state."""
    o = states[0]
    if isinstance(o, (list, tuple)):
        o = states[-1]
        while isinstance(o, (list, tuple)):
            o = o[0]
    return o if isinstance(o, Tensor) else None


def _expand_to(m_t, like):
    """The step mask ``[batch]`` as ``[batch, 1, ...]`` of `like`'s rank."""
    rank = like.shape.rank or 2
    return array_ops.reshape(m_t, [-1] + [1] * (rank - 1))
