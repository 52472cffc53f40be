"""TensorFlow 1's recurrent networks: the cells of ``tf.nn.rnn_cell`` (`rnn_cell`) and
`dynamic_rnn`, `bidirectional_dynamic_rnn`, `static_rnn` (`rnn_functions`), reached as
``tf.nn.*`` and ``tf.contrib.rnn.*``. Built on the core only (variable scopes, ops,
`scan`)."""

from mylib.rnn import rnn_cell  # noqa: F401
from mylib.rnn.rnn_functions import (bidirectional_dynamic_rnn, dynamic_rnn,  # noqa: F401
                                     static_bidirectional_rnn, static_rnn)
