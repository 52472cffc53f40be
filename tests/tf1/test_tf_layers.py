"""`tf.layers` functions: TF1 variable names, reuse through variable scopes, values
against numpy, batch normalization's UPDATE_OPS and a tensor `training`."""

import numpy as np
import pytest

import mylib as tf


@pytest.fixture
def g():
    graph = tf.Graph()
    with graph.as_default():
        yield graph


def _session(graph):
    s = tf.Session(graph=graph)
    s.run(tf.global_variables_initializer())
    return s


def test_dense_names_values_and_reuse(g):
    x = tf.placeholder(tf.float32, [None, 3])
    y1 = tf.layers.dense(x, 4, activation=tf.nn.relu)
    y2 = tf.layers.dense(x, 2)
    y3 = tf.layers.dense(x, 2, name="dense_1", reuse=True)  # shares dense_1's weights
    with tf.variable_scope("tower"):
        tf.layers.dense(x, 5, name="fc")
    assert [v.name for v in tf.global_variables()] == [
        "dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0",
        "tower/fc/kernel:0", "tower/fc/bias:0"]
    assert y1.op.name.startswith("dense/") and y2.op.name.startswith("dense_1/")
    xv = np.random.RandomState(0).randn(5, 3).astype(np.float32)
    with _session(g) as s:
        k, b, k2, b2 = s.run(tf.global_variables()[:4])
        o1, o2, o3 = s.run([y1, y2, y3], {x: xv})
    np.testing.assert_array_equal(b, np.zeros(4))
    np.testing.assert_allclose(o1, np.maximum(xv @ k + b, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o2, xv @ k2 + b2, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(o2, o3)
    with pytest.raises(ValueError, match="already exists"):
        tf.layers.dense(x, 2, name="dense_1")


def test_kernel_initializer_regularizer_and_scope_initializer(g):
    x = tf.placeholder(tf.float32, [None, 2])
    with tf.variable_scope("s", initializer=tf.constant_initializer(0.5)):
        y = tf.layers.dense(x, 3, kernel_regularizer=tf.contrib.layers.l2_regularizer(1.0))
    assert len(tf.losses.get_regularization_losses()) == 1
    with _session(g) as s:
        out, reg = s.run([y, tf.losses.get_regularization_loss()], {x: [[1.0, 2.0]]})
    np.testing.assert_allclose(out, [[1.5, 1.5, 1.5]])
    np.testing.assert_allclose(reg, 0.5 * 6 * 0.25)


def _conv_ref(x, k, stride=1):
    kh, kw, _, f = k.shape
    n, h, w, _ = x.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, oh, ow, f), np.float32)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, k, axes=([1, 2, 3], [0, 1, 2]))
    return out


def test_conv_pool_flatten_against_numpy(g):
    x = tf.placeholder(tf.float32, [None, 6, 6, 2])
    c = tf.layers.conv2d(x, 3, 3)
    m = tf.layers.max_pooling2d(c, 2, 2)
    a = tf.layers.average_pooling2d(c, 2, 2)
    f = tf.layers.flatten(m)
    x1 = tf.placeholder(tf.float32, [None, 7, 2])
    c1 = tf.layers.conv1d(x1, 4, 3, padding="same")
    p1 = tf.layers.max_pooling1d(c1, 2, 2)
    names = [v.name for v in tf.global_variables()]
    assert names == ["conv2d/kernel:0", "conv2d/bias:0", "conv1d/kernel:0", "conv1d/bias:0"]
    rng = np.random.RandomState(1)
    xv = rng.randn(2, 6, 6, 2).astype(np.float32)
    x1v = rng.randn(2, 7, 2).astype(np.float32)
    with _session(g) as s:
        k, b = s.run(tf.global_variables()[:2])
        cv, mv, av, fv, c1v, p1v = s.run([c, m, a, f, c1, p1], {x: xv, x1: x1v})
        k1 = s.run(tf.global_variables()[2])
    ref = _conv_ref(xv, k) + b
    np.testing.assert_allclose(cv, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mv, ref.reshape(2, 2, 2, 2, 2, 3).max(axis=(2, 4)), rtol=1e-5)
    np.testing.assert_allclose(av, ref.reshape(2, 2, 2, 2, 2, 3).mean(axis=(2, 4)),
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(fv, mv.reshape(2, -1))
    padded = np.pad(x1v, ((0, 0), (1, 1), (0, 0)))
    ref1 = np.stack([np.tensordot(padded[:, t:t + 3], k1, axes=([1, 2], [0, 1]))
                     for t in range(7)], axis=1)
    np.testing.assert_allclose(c1v, ref1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(p1v, ref1[:, :6].reshape(2, 3, 2, 4).max(axis=2), rtol=1e-5)


def test_dropout_with_tensor_training(g):
    x = tf.ones([200, 50])
    training = tf.placeholder_with_default(False, [])
    y = tf.layers.dropout(x, rate=0.25, training=training)
    with tf.Session() as s:
        off = s.run(y)
        on = s.run(y, {training: True})
    np.testing.assert_array_equal(off, np.ones((200, 50)))
    np.testing.assert_allclose(np.unique(on), [0.0, 1.0 / 0.75], rtol=1e-6)
    np.testing.assert_allclose((on == 0).mean(), 0.25, atol=0.02)
    with tf.Session() as s:
        assert (s.run(tf.layers.dropout(x, 0.5, training=True)) == 0).any()


def test_batch_normalization_update_ops_and_tensor_training(g):
    x = tf.placeholder(tf.float32, [None, 3])
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(x, momentum=0.9, training=training)
    names = [v.name for v in tf.global_variables()]
    assert names == ["batch_normalization/gamma:0", "batch_normalization/beta:0",
                     "batch_normalization/moving_mean:0",
                     "batch_normalization/moving_variance:0"]
    assert [v.name for v in tf.trainable_variables()] == names[:2]
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    with tf.control_dependencies(updates):
        step = tf.identity(y)
    xv = np.random.RandomState(2).randn(8, 3).astype(np.float32) * 3 + 1
    mu, var = xv.mean(0), xv.var(0)
    with _session(g) as s:
        out = s.run(step, {x: xv, training: True})
        mm, mv = s.run(tf.global_variables()[2:])
        np.testing.assert_allclose(out, (xv - mu) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(mm, 0.1 * mu, rtol=1e-5)
        np.testing.assert_allclose(mv, 0.9 + 0.1 * var, rtol=1e-5)
        inf = s.run(step, {x: xv, training: False})  # the updates leave the stats alone
        np.testing.assert_allclose(s.run(tf.global_variables()[2]), mm, rtol=1e-6)
        np.testing.assert_allclose(inf, (xv - mm) / np.sqrt(mv + 1e-3), rtol=1e-4, atol=1e-5)


def test_batch_normalization_python_bool_and_unsupported_args(g):
    x = tf.placeholder(tf.float32, [None, 4, 4, 2])
    tf.layers.batch_normalization(x, training=True)
    tf.layers.batch_normalization(x, training=False)
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2  # only the training call
    assert "batch_normalization_1/gamma:0" in [v.name for v in tf.global_variables()]
    with pytest.raises(ValueError, match="renorm"):
        tf.layers.batch_normalization(x, renorm=True)


def test_layers_share_under_auto_reuse_scope(g):
    x = tf.placeholder(tf.float32, [None, 3])
    outs = []
    for _ in range(2):
        with tf.variable_scope("net", reuse=tf.AUTO_REUSE):
            h = tf.layers.dense(x, 4, activation=tf.nn.tanh, name="hidden")
            outs.append(tf.layers.dense(h, 1, name="out"))
    assert [v.name for v in tf.trainable_variables()] == [
        "net/hidden/kernel:0", "net/hidden/bias:0", "net/out/kernel:0", "net/out/bias:0"]
    with _session(g) as s:
        a, b = s.run(outs, {x: np.ones((2, 3), np.float32)})
    np.testing.assert_array_equal(a, b)
