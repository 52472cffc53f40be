"""`ml.nn`: neural-network ops (TensorFlow's `tf.nn`)."""

from mylib.core.ops.math_ops import sigmoid, tanh  # noqa: F401
from mylib.core.ops.nn_ops import *  # noqa: F401,F403
from mylib.core.ops.nn_ops import __all__ as _nn_all
from mylib.core.ops.clip_ops import *  # noqa: F401,F403
from mylib.core.ops.embedding_ops import *  # noqa: F401,F403
from mylib.core.ops.embedding_ops import __all__ as _embedding_all
from mylib.core.sparse_tensor import ctc_loss, embedding_lookup_sparse  # noqa: F401
from mylib.core.ops.nn_extra_ops import *  # noqa: F401,F403
from mylib.core.ops.nn_extra_ops import __all__ as _extra_all
from mylib.core.ops.nn_3d_ops import *  # noqa: F401,F403
from mylib.core.ops.nn_3d_ops import __all__ as _3d_all
from mylib.core.ops.nn_more_ops import *  # noqa: F401,F403
from mylib.core.ops.nn_more_ops import __all__ as _more_all

from mylib.rnn import rnn_cell  # noqa: F401,E402 - `tf.nn.rnn_cell`
from mylib.rnn.rnn_functions import (bidirectional_dynamic_rnn, dynamic_rnn,  # noqa: E402
                                     static_bidirectional_rnn, static_rnn)

__all__ = list(_nn_all) + list(_embedding_all) + list(_extra_all) + list(_3d_all) + list(_more_all) + [
    "sigmoid", "tanh", "rnn_cell", "dynamic_rnn", "bidirectional_dynamic_rnn", "static_rnn",
    "static_bidirectional_rnn", "ctc_loss", "embedding_lookup_sparse"]
