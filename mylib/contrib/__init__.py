"""`tf.contrib`: the TensorFlow 1 contrib names that programs of that era use, as
aliases of mylib's own (`contrib.rnn` is `tf.nn.rnn_cell` and the RNN functions,
`contrib.layers` the initializers and regularizers, `contrib.tensorboard.plugins.projector`
the TensorBoard projector config), and the sequence losses of `contrib.seq2seq` and
`contrib.legacy_seq2seq`. Other contrib modules do not exist in mylib; the
`AttributeError` names the module to use instead where there is one."""

from mylib.contrib import layers, legacy_seq2seq, rnn, seq2seq, tensorboard  # noqa: F401

__all__ = ["layers", "legacy_seq2seq", "rnn", "seq2seq", "tensorboard"]

_INSTEAD = {
    "slim": "mylib.layers (tf.layers) and tf.get_variable / tf.variable_scope",
    "learn": "mylib.models (Keras-style Model.fit) or a tf.Session training loop",
    "training": "tf.train",
    "metrics": "tf.metrics",
    "losses": "tf.losses",
    "framework": "tf.train.get_or_create_global_step and tf.get_variable",
}


def __getattr__(name):
    if name in _INSTEAD:
        raise AttributeError(f"mylib.contrib has no module '{name}'; use {_INSTEAD[name]} "
                             "instead.")
    raise AttributeError(f"module 'mylib.contrib' has no attribute '{name}'")
