"""`tf.contrib.rnn`: the TF1 RNN cells and functions (aliases of `tf.nn.rnn_cell`'s,
see `mylib.rnn.rnn_cell` for their formulas and variable names)."""

from mylib.rnn.rnn_cell import (BasicLSTMCell, BasicRNNCell, DropoutWrapper,  # noqa: F401
                                GRUCell, LayerRNNCell, LSTMCell, LSTMStateTuple,
                                MultiRNNCell, ResidualWrapper, RNNCell)
from mylib.rnn.rnn_functions import static_bidirectional_rnn, static_rnn  # noqa: F401

__all__ = ["BasicLSTMCell", "BasicRNNCell", "DropoutWrapper", "GRUCell", "LayerRNNCell",
           "LSTMCell", "LSTMStateTuple", "MultiRNNCell", "ResidualWrapper", "RNNCell",
           "static_rnn", "static_bidirectional_rnn"]

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
