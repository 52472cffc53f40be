"""`tf.contrib.rnn`: the TF1 RNN cells and functions (aliases of `tf.nn.rnn_cell`'s,
see `mylib.rnn.rnn_cell` for their formulas and variable names)."""

from mylib.rnn.rnn_cell import (BasicLSTMCell, BasicRNNCell, DropoutWrapper,  # noqa: F401
                                GRUCell, LayerRNNCell, LSTMCell, LSTMStateTuple,
                                MultiRNNCell, ResidualWrapper, RNNCell)
from mylib.rnn.rnn_functions import static_bidirectional_rnn, static_rnn  # noqa: F401
from mylib.core import init_ops
from mylib.core.ops import math_ops

__all__ = ["BasicLSTMCell", "BasicRNNCell", "DropoutWrapper", "GRUCell", "LayerRNNCell",
           "LSTMCell", "LSTMStateTuple", "MultiRNNCell", "OutputProjectionWrapper",
           "ResidualWrapper", "RNNCell", "static_rnn", "static_bidirectional_rnn"]


class OutputProjectionWrapper(RNNCell):
    """``output = activation(cell_output @ kernel + bias)``, the state is the cell's (TF1's
    `tf.contrib.rnn.OutputProjectionWrapper`).

    Weights, in the wrapper's scope (``.../output_projection_wrapper/``), made after
    the wrapped cell's (which sit inside it, ``.../output_projection_wrapper/
    basic_lstm_cell/kernel``): ``kernel`` [cell.output_size, output_size] (the scope's
    initializer, default glorot uniform) and ``bias`` [output_size] (zeros).

    Args:
      cell: the `RNNCell` wrapped.
      output_size: int > 0, the size of the projected output.
      activation: optional function applied to the projection.
      reuse: as other cells.
    Raises:
      ValueError: `output_size` < 1.
    """

    _base_name = "output_projection_wrapper"

    def __init__(self, cell, output_size, activation=None, reuse=None):
        super().__init__(reuse=reuse)
        if int(output_size) < 1:
            raise ValueError(f"Parameter output_size must be > 0: {output_size}.")
        self._cell, self._output_size, self._act = cell, int(output_size), activation
        self._kernel = self._bias = None

    state_size = property(lambda self: self._cell.state_size)
    output_size = property(lambda self: self._output_size)
    variables = property(lambda self: self._cell.variables + list(self._variables))
    weights = trainable_variables = trainable_weights = variables

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    def _noise_sites(self, input_depth):
        return self._cell._noise_sites(input_depth)

    def call(self, inputs, state):
        output, new_state = self._cell(inputs, state)
        if self._kernel is None:
            depth = output.shape.as_list()[-1]
            self._kernel = self._weight("kernel", [depth, self._output_size], output.dtype)
            self._bias = self._weight("bias", [self._output_size], output.dtype,
                                      init_ops.zeros_initializer(output.dtype))
        projected = math_ops.matmul(output, self._kernel) + self._bias
        if self._act is not None:
            projected = self._act(projected)
        return projected, new_state

_INSTEAD = {
    "LSTMBlockCell": "LSTMCell (same formulas)",
    "LSTMBlockFusedCell": "LSTMCell with tf.nn.dynamic_rnn",
    "GRUBlockCell": "GRUCell",
    "LayerNormBasicLSTMCell": "BasicLSTMCell (no layer normalization in mylib's cells)",
    "AttentionCellWrapper": "tf.nn.dynamic_rnn with your own attention over its outputs",
}


def __getattr__(name):
    if name in _INSTEAD:
        raise AttributeError(f"mylib.contrib.rnn has no {name}; use {_INSTEAD[name]} instead.")
    raise AttributeError(f"module 'mylib.contrib.rnn' has no attribute '{name}'")
