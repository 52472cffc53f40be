"""RNN cells built with ``reuse=True`` and no name (TensorFlow's PTB model builds its
validation model that way, inside ``variable_scope("Model", reuse=True)``) reuse the
training model's weights, as TF1's layers do."""

import numpy as np

import mylib.compat.v1 as tf


def _model(reuse, inputs):
    cell = tf.nn.rnn_cell.MultiRNNCell(
        [tf.nn.rnn_cell.BasicLSTMCell(6, forget_bias=0.0, reuse=reuse) for _ in range(2)])
    state = cell.zero_state(2, tf.float32)
    outs = []
    with tf.variable_scope("RNN"):
        for t in range(3):
            if t > 0:
                tf.get_variable_scope().reuse_variables()
            out, state = cell(inputs[:, t, :], state)
            outs.append(out)
    return tf.stack(outs, 1)


def test_reusing_cells_share_the_training_weights():
    tf.reset_default_graph()
    x = tf.constant(np.random.RandomState(0).randn(2, 3, 4).astype(np.float32))
    with tf.variable_scope("Model", reuse=None):
        train = _model(False, x)
    names = [v.name for v in tf.global_variables()]
    assert names == ["Model/RNN/multi_rnn_cell/cell_0/basic_lstm_cell/kernel:0",
                     "Model/RNN/multi_rnn_cell/cell_0/basic_lstm_cell/bias:0",
                     "Model/RNN/multi_rnn_cell/cell_1/basic_lstm_cell/kernel:0",
                     "Model/RNN/multi_rnn_cell/cell_1/basic_lstm_cell/bias:0"]
    with tf.variable_scope("Model", reuse=True):
        valid = _model(True, x)
    assert [v.name for v in tf.global_variables()] == names  # nothing new
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        a, b = s.run([train, valid])
        np.testing.assert_allclose(a, b, rtol=1e-6)
        # and they are the LSTM of those weights (numpy, forget_bias 0, gates i, j, f, o)
        w0, b0, w1, b1 = s.run(tf.global_variables())
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    h = [np.zeros((2, 6), np.float32)] * 2
    c = [np.zeros((2, 6), np.float32)] * 2
    xv = np.random.RandomState(0).randn(2, 3, 4).astype(np.float32)
    ref = []
    for t in range(3):
        inp = xv[:, t]
        for k, (w, bb) in enumerate(((w0, b0), (w1, b1))):
            z = np.concatenate([inp, h[k]], 1) @ w + bb
            i, j, f, o = np.split(z, 4, 1)
            c[k] = c[k] * sig(f) + sig(i) * np.tanh(j)
            h[k] = np.tanh(c[k]) * sig(o)
            inp = h[k]
        ref.append(inp)
    np.testing.assert_allclose(a, np.stack(ref, 1), rtol=1e-4, atol=1e-5)
