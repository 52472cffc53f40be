"""TensorFlow 1's RNN cells (``tf.nn.rnn_cell`` / ``tf.contrib.rnn``): `BasicRNNCell`,
`BasicLSTMCell`, `LSTMCell`, `GRUCell`, `MultiRNNCell`, `DropoutWrapper`,
`LSTMStateTuple`, with TF1's formulas, weight shapes and variable names.

A cell is called as ``output, new_state = cell(inputs, state)`` on ``[batch, depth]``
inputs. Its weights are made by `get_variable` in the cell's variable scope the first
time it is called (``rnn/basic_lstm_cell/kernel:0`` under `dynamic_rnn`), so a cell used
twice shares them, as TF1's.

Formulas (TF1's `rnn_cell_impl.py`), with ``[x, h]`` the concatenation on the last axis:

- `BasicRNNCell`: ``h' = activation([x, h] @ kernel + bias)``; kernel [depth + units, units].
- `BasicLSTMCell`: ``i, j, f, o = split([x, h] @ kernel + bias, 4)``;
  ``c' = c * sigmoid(f + forget_bias) + sigmoid(i) * tanh(j)``; ``h' = tanh(c') * sigmoid(o)``
  (gate order i, j, f, o; kernel [depth + units, 4 units]; forget_bias 1.0).
- `LSTMCell`: the same with optional peepholes (``w_f_diag``, ``w_i_diag``, ``w_o_diag``;
  Sak et al. 2014), `cell_clip`, and a projection ``m' = m @ projection/kernel`` to
  `num_proj` units (optionally clipped to `proj_clip`).
- `GRUCell`: ``r, u = split(sigmoid([x, h] @ gates/kernel + gates/bias), 2)``;
  ``c = tanh([x, r * h] @ candidate/kernel + candidate/bias)``; ``h' = u * h + (1 - u) * c``
  (gates/bias initialized to 1.0, as TF1).

Differences from TF1: ``state_is_tuple=False`` is not supported (TF1 deprecated it; a
clear error says so); `DropoutWrapper`'s ``variational_recurrent`` is not supported.
"""

from __future__ import annotations

import collections
import threading

from mylib.core import dtypes as _dtypes
from mylib.core import init_ops
from mylib.core.graph import get_default_graph
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, clip_ops, constant_ops, math_ops, random_ops
from mylib.core.variable_scope import get_variable, variable_scope

__all__ = ["RNNCell", "LayerRNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell",
           "MultiRNNCell", "DropoutWrapper", "ResidualWrapper", "LSTMStateTuple"]


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """The state of an LSTM cell: `c` (memory) [batch, units] and `h` (output)."""

    __slots__ = ()

    @property
    def dtype(self):
        if self.c.dtype != self.h.dtype:
            raise TypeError(f"Inconsistent internal state: {self.c.dtype} vs {self.h.dtype}")
        return self.c.dtype


def _flatten(struct):
    if isinstance(struct, (list, tuple)):
        return [x for s in struct for x in _flatten(s)]
    return [struct]


def _map_structure(fn, *structs):
    s0 = structs[0]
    if isinstance(s0, (list, tuple)):
        items = [_map_structure(fn, *parts) for parts in zip(*structs)]
        if isinstance(s0, tuple) and hasattr(s0, "_fields"):
            return type(s0)(*items)
        return type(s0)(items)
    return fn(*structs)


# ---------------------------------------------------------------- noise for dropout in loops
# A loop body cannot draw random numbers and still be differentiated, so `dynamic_rnn`
# draws the dropout noise of every step before the loop and hands each step its slice
# here; `DropoutWrapper` takes them in the order it asks for them.
_noise = threading.local()


class _step_noise:  # noqa: N801 - a context manager
    def __init__(self, tensors):
        self.tensors = list(tensors)

    def __enter__(self):
        self.prev = getattr(_noise, "queue", None)
        _noise.queue = list(self.tensors)

    def __exit__(self, *exc):
        _noise.queue = self.prev


def _take_noise():
    q = getattr(_noise, "queue", None)
    return q.pop(0) if q else None


# ---------------------------------------------------------------- base classes
class RNNCell:
    """Base class of TF1 RNN cells: `state_size`, `output_size`, `zero_state`, and
    ``__call__(inputs, state, scope=None) -> (output, new_state)``."""

    _base_name = "rnn_cell"

    def __init__(self, trainable=True, name=None, dtype=None, reuse=None, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown keyword arguments "
                            f"{sorted(kwargs)}")
        self._cell_name, self._reuse, self._scope = name, reuse, None
        self._dtype = None if dtype is None else _dtypes.as_dtype(dtype)
        self.trainable = trainable
        self.built = False
        self._variables = []

    @property
    def state_size(self):
        raise NotImplementedError(f"{type(self).__name__}.state_size")

    @property
    def output_size(self):
        raise NotImplementedError(f"{type(self).__name__}.output_size")

    @property
    def name(self):
        return self._scope.name if self._scope is not None else self._cell_name

    @property
    def variables(self):
        return list(self._variables)

    weights = trainable_variables = trainable_weights = variables

    def build(self, input_depth, dtype):
        self.built = True

    def call(self, inputs, state):
        raise NotImplementedError(f"{type(self).__name__}.call")

    def __call__(self, inputs, state, scope=None):
        inputs = convert_to_tensor(inputs)
        g = get_default_graph()
        if self._scope is None:
            name = scope.name if hasattr(scope, "name") and not isinstance(scope, str) \
                else scope
            name = name or self._cell_name
            if self._reuse and name is None:
                # A reusing cell with no name takes its base name as the scope itself
                # (not a uniquified default), as TF1's layers do: the weights it reuses
                # are under ".../basic_lstm_cell".
                name = self._base_name
            with variable_scope(name, default_name=self._base_name,
                                reuse=self._reuse) as sc:
                self._scope = sc
        reuse = True if self.built else self._reuse
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False), \
                g.name_scope(self._scope.name.split("/")[-1]):
            if not self.built:
                depth = inputs.shape.as_list()[-1]
                if depth is None:
                    raise ValueError(f"{type(self).__name__}: the last dimension of the "
                                     f"inputs must be known. Received: {inputs.shape}")
                self.build(depth, self._dtype or inputs.dtype)
                self.built = True
            return self.call(inputs, state)

    def _weight(self, name, shape, dtype, initializer=None):
        v = get_variable(name, shape, dtype=dtype, initializer=initializer,
                         trainable=self.trainable)
        self._variables.append(v)
        return v

    def zero_state(self, batch_size, dtype):
        """Zeros of `state_size` (nested): each [batch_size, size] of `dtype`."""
        return _zeros(self.state_size, batch_size, dtype)

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        if inputs is not None:
            batch_size = array_ops.shape(inputs)[0]
            dtype = dtype or inputs.dtype
        return self.zero_state(batch_size, dtype)

    def _noise_sites(self, input_depth):
        """The sizes of the per-step dropout noise this cell draws (see `_step_noise`)."""
        return []


LayerRNNCell = RNNCell


def _zeros(size, batch_size, dtype):
    if isinstance(size, (list, tuple)):
        items = [_zeros(s, batch_size, dtype) for s in size]
        return type(size)(*items) if hasattr(size, "_fields") else type(size)(items)
    if isinstance(batch_size, int):
        return constant_ops.zeros([batch_size, int(size)], dtype=dtype)
    b = convert_to_tensor(batch_size)
    shape = array_ops.stack([math_ops.cast(b, _dtypes.int32), int(size)])
    return constant_ops.fill(shape, constant_ops.constant(0, dtype=_dtypes.as_dtype(dtype)))


def _linear_inputs(inputs, h):
    return array_ops.concat([inputs, h], 1)


def _activation(activation):
    return math_ops.tanh if activation is None else activation


class BasicRNNCell(RNNCell):
    """``h' = activation([x, h] @ kernel + bias)``; weights ``kernel`` [depth + units,
    units], ``bias`` [units] (zeros)."""

    _base_name = "basic_rnn_cell"

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None, **kw):
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kw)
        self._num_units, self._activation = int(num_units), _activation(activation)

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, input_depth, dtype):
        self._kernel = self._weight("kernel", [input_depth + self._num_units, self._num_units],
                                    dtype)
        self._bias = self._weight("bias", [self._num_units], dtype,
                                  init_ops.zeros_initializer(dtype))

    def call(self, inputs, state):
        out = self._activation(math_ops.matmul(_linear_inputs(inputs, state), self._kernel)
                               + self._bias)
        return out, out


class BasicLSTMCell(RNNCell):
    """TF1's basic LSTM (Zaremba et al. 2014 style; no peepholes, no projection).

    Args:
      num_units: units of the cell.
      forget_bias: added to the forget gate's pre-activation (default 1.0).
      state_is_tuple: must be True (the state is an `LSTMStateTuple(c, h)`).
      activation: of the cell input and output (default tanh).
    """

    _base_name = "basic_lstm_cell"

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None, **kw):
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kw)
        _require_tuple(state_is_tuple, type(self).__name__)
        self._num_units, self._forget_bias = int(num_units), float(forget_bias)
        self._activation = _activation(activation)

    state_size = property(lambda self: LSTMStateTuple(self._num_units, self._num_units))
    output_size = property(lambda self: self._num_units)

    def build(self, input_depth, dtype):
        n = self._num_units
        self._kernel = self._weight("kernel", [input_depth + n, 4 * n], dtype)
        self._bias = self._weight("bias", [4 * n], dtype, init_ops.zeros_initializer(dtype))

    def call(self, inputs, state):
        c, h = state
        gates = math_ops.matmul(_linear_inputs(inputs, h), self._kernel) + self._bias
        i, j, f, o = array_ops.split(gates, 4, axis=1)
        new_c = c * math_ops.sigmoid(f + self._forget_bias) + \
            math_ops.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * math_ops.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


def _require_tuple(state_is_tuple, who):
    if not state_is_tuple:
        raise ValueError(f"{who}: state_is_tuple=False is not supported by mylib (TF1 "
                         "deprecated it); use the default state_is_tuple=True, whose state "
                         "is an LSTMStateTuple(c, h).")


class LSTMCell(RNNCell):
    """TF1's `LSTMCell` (Hochreiter & Schmidhuber 1997; peepholes and projection of Sak
    et al. 2014).

    Args:
      num_units: units of the cell.
      use_peepholes: add ``w_f_diag * c``, ``w_i_diag * c`` to the forget and input gates
        and ``w_o_diag * c'`` to the output gate.
      cell_clip: clip the cell state to ``[-cell_clip, cell_clip]``.
      initializer: of the kernel and projection (default: the scope's, else Glorot).
      num_proj: project the output to this size (the state's `h` has it too).
      proj_clip: clip the projected output.
      forget_bias: default 1.0.
    """

    _base_name = "lstm_cell"

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None, **kw):
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kw)
        _require_tuple(state_is_tuple, type(self).__name__)
        self._num_units, self._use_peepholes = int(num_units), bool(use_peepholes)
        self._cell_clip, self._initializer = cell_clip, initializer
        self._num_proj, self._proj_clip = num_proj, proj_clip
        self._forget_bias, self._activation = float(forget_bias), _activation(activation)

    @property
    def state_size(self):
        return LSTMStateTuple(self._num_units, self._num_proj or self._num_units)

    @property
    def output_size(self):
        return self._num_proj or self._num_units

    def build(self, input_depth, dtype):
        n, h = self._num_units, self._num_proj or self._num_units
        self._kernel = self._weight("kernel", [input_depth + h, 4 * n], dtype, self._initializer)
        self._bias = self._weight("bias", [4 * n], dtype, init_ops.zeros_initializer(dtype))
        if self._use_peepholes:
            self._w_f = self._weight("w_f_diag", [n], dtype, self._initializer)
            self._w_i = self._weight("w_i_diag", [n], dtype, self._initializer)
            self._w_o = self._weight("w_o_diag", [n], dtype, self._initializer)
        if self._num_proj is not None:
            with variable_scope("projection"):
                self._proj = self._weight("kernel", [n, self._num_proj], dtype,
                                          self._initializer)

    def call(self, inputs, state):
        c_prev, m_prev = state
        gates = math_ops.matmul(_linear_inputs(inputs, m_prev), self._kernel) + self._bias
        i, j, f, o = array_ops.split(gates, 4, axis=1)
        sig = math_ops.sigmoid
        if self._use_peepholes:
            c = sig(f + self._forget_bias + self._w_f * c_prev) * c_prev + \
                sig(i + self._w_i * c_prev) * self._activation(j)
        else:
            c = sig(f + self._forget_bias) * c_prev + sig(i) * self._activation(j)
        if self._cell_clip is not None:
            c = clip_ops.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = sig(o + self._w_o * c) * self._activation(c)
        else:
            m = sig(o) * self._activation(c)
        if self._num_proj is not None:
            m = math_ops.matmul(m, self._proj)
            if self._proj_clip is not None:
                m = clip_ops.clip_by_value(m, -self._proj_clip, self._proj_clip)
        return m, LSTMStateTuple(c, m)


class GRUCell(RNNCell):
    """TF1's GRU (Cho et al. 2014): weights ``gates/kernel`` [depth + units, 2 units],
    ``gates/bias`` (ones), ``candidate/kernel`` [depth + units, units],
    ``candidate/bias`` (zeros)."""

    _base_name = "gru_cell"

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None, **kw):
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kw)
        self._num_units, self._activation = int(num_units), _activation(activation)
        self._kernel_initializer, self._bias_initializer = kernel_initializer, bias_initializer

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, input_depth, dtype):
        n = self._num_units
        with variable_scope("gates"):
            self._gate_kernel = self._weight("kernel", [input_depth + n, 2 * n], dtype,
                                             self._kernel_initializer)
            self._gate_bias = self._weight("bias", [2 * n], dtype, self._bias_initializer or
                                           init_ops.constant_initializer(1.0, dtype=dtype))
        with variable_scope("candidate"):
            self._cand_kernel = self._weight("kernel", [input_depth + n, n], dtype,
                                             self._kernel_initializer)
            self._cand_bias = self._weight("bias", [n], dtype, self._bias_initializer or
                                           init_ops.zeros_initializer(dtype))

    def call(self, inputs, state):
        gates = math_ops.sigmoid(math_ops.matmul(_linear_inputs(inputs, state),
                                                 self._gate_kernel) + self._gate_bias)
        r, u = array_ops.split(gates, 2, axis=1)
        c = self._activation(math_ops.matmul(_linear_inputs(inputs, r * state),
                                             self._cand_kernel) + self._cand_bias)
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class MultiRNNCell(RNNCell):
    """Stacks `cells`: the output of each is the input of the next; the state is the
    tuple of their states. Weights live in ``<scope>/cell_<i>/...``."""

    _base_name = "multi_rnn_cell"

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        _require_tuple(state_is_tuple, "MultiRNNCell")
        self._cells = list(cells)

    state_size = property(lambda self: tuple(c.state_size for c in self._cells))
    output_size = property(lambda self: self._cells[-1].output_size)

    @property
    def variables(self):
        return [v for c in self._cells for v in c.variables]

    weights = trainable_variables = trainable_weights = variables

    def zero_state(self, batch_size, dtype):
        return tuple(c.zero_state(batch_size, dtype) for c in self._cells)

    def call(self, inputs, state):
        cur, new_states = inputs, []
        for i, (cell, st) in enumerate(zip(self._cells, state)):
            with variable_scope(f"cell_{i}"):
                cur, ns = cell(cur, st)
            new_states.append(ns)
        return cur, tuple(new_states)

    def _noise_sites(self, input_depth):
        sites, depth = [], input_depth
        for c in self._cells:
            sites += c._noise_sites(depth)
            depth = c.output_size
        return sites


class DropoutWrapper(RNNCell):
    """Dropout on a cell's inputs, outputs and state (Zaremba et al. 2014; Gal &
    Ghahramani's variational form is not supported).

    Args:
      cell: the wrapped cell.
      input_keep_prob, output_keep_prob, state_keep_prob: keep probabilities (floats in
        (0, 1] or scalar tensors, e.g. a placeholder fed 1.0 at test time). The state's
        LSTM memory `c` is never dropped (TF1's default state filter).
      seed: op seed.
    Raises:
      ValueError: a float keep probability outside (0, 1]; ``variational_recurrent=True``.
    """

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None):
        super().__init__()
        if variational_recurrent:
            raise ValueError("DropoutWrapper: variational_recurrent=True is not supported by "
                             "mylib; use the default per-step dropout.")
        for n, p in (("input_keep_prob", input_keep_prob),
                     ("output_keep_prob", output_keep_prob),
                     ("state_keep_prob", state_keep_prob)):
            if isinstance(p, (int, float)) and not 0 < p <= 1:
                raise ValueError(f"Parameter {n} must be between 0 and 1: {p}")
        self._cell, self._seed = cell, seed
        self._in_kp, self._out_kp, self._st_kp = input_keep_prob, output_keep_prob, \
            state_keep_prob

    state_size = property(lambda self: self._cell.state_size)
    output_size = property(lambda self: self._cell.output_size)
    wrapped_cell = property(lambda self: self._cell)

    @property
    def variables(self):
        return self._cell.variables

    weights = trainable_variables = trainable_weights = variables

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    @staticmethod
    def _active(kp):
        return not (isinstance(kp, (int, float)) and kp == 1)

    def _state_leaves_dropped(self):
        """(size, dropped?) for each leaf of the state, c of an LSTM state never."""
        out = []

        def visit(size):
            if isinstance(size, LSTMStateTuple):
                out.append((size.c, False))
                out.append((size.h, True))
            elif isinstance(size, (list, tuple)):
                for s in size:
                    visit(s)
            else:
                out.append((size, True))

        visit(self.state_size)
        return out

    def _noise_sites(self, input_depth):
        sites = [input_depth] if self._active(self._in_kp) else []
        sites += self._cell._noise_sites(input_depth)
        if self._active(self._st_kp):
            sites += [s for s, dropped in self._state_leaves_dropped() if dropped]
        if self._active(self._out_kp):
            sites.append(self._cell.output_size)
        return sites

    def _dropout(self, x, keep_prob):
        u = _take_noise()
        if u is None:
            u = random_ops.random_uniform(array_ops.shape(x), dtype=x.dtype, seed=self._seed)
        kp = convert_to_tensor(keep_prob, dtype_hint=x.dtype)
        if kp.dtype != x.dtype:
            kp = math_ops.cast(kp, x.dtype)
        if kp.shape.rank != 0:  # an unshaped placeholder: a scalar, so x keeps its shape
            kp = array_ops.reshape(kp, [])
        keep = math_ops.cast(math_ops.less(u, kp), x.dtype)
        return x * keep / kp

    def __call__(self, inputs, state, scope=None):
        # No scope of its own: the wrapped cell's weights are named as without it (TF1).
        inputs = convert_to_tensor(inputs)
        if self._active(self._in_kp):
            inputs = self._dropout(inputs, self._in_kp)
        output, new_state = self._cell(inputs, state, scope=scope)
        if self._active(self._st_kp):
            leaves = _flatten(new_state)
            flags = [d for _, d in self._state_leaves_dropped()]
            leaves = [self._dropout(s, self._st_kp) if d else s for s, d in zip(leaves, flags)]
            it = iter(leaves)
            new_state = _map_structure(lambda _: next(it), new_state)
        if self._active(self._out_kp):
            output = self._dropout(output, self._out_kp)
        return output, new_state


class ResidualWrapper(RNNCell):
    """``output = inputs + cell(inputs)`` (the sizes must match)."""

    def __init__(self, cell, residual_fn=None):
        super().__init__()
        self._cell, self._fn = cell, residual_fn

    state_size = property(lambda self: self._cell.state_size)
    output_size = property(lambda self: self._cell.output_size)
    variables = property(lambda self: self._cell.variables)

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    def _noise_sites(self, input_depth):
        return self._cell._noise_sites(input_depth)

    def __call__(self, inputs, state, scope=None):
        inputs = convert_to_tensor(inputs)
        out, new_state = self._cell(inputs, state, scope=scope)
        out = self._fn(inputs, out) if self._fn is not None else inputs + out
        return out, new_state

