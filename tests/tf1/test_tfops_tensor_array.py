"""TensorArray in a while_loop (the hand-written RNN loop of TF1 programs): values and
gradients against a jax reference of the same recurrence; clear errors for what XLA
cannot compile."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as tf

N = 5


def _ref(xv, wv):
    h = jnp.zeros(3)
    outs = []
    for t in range(N):
        h = jnp.tanh(xv[t] * wv + h)
        outs.append(h)
    return jnp.stack(outs)


def test_rnn_loop_writes_reads_stacks_and_differentiates():
    rng = np.random.default_rng(0)
    xv = rng.normal(size=(N, 3)).astype(np.float32)
    wv = rng.normal(size=3).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [N, 3])
        w = tf.Variable(wv)
        inputs = tf.TensorArray(tf.float32, size=N).unstack(x)
        outputs = tf.TensorArray(tf.float32, size=N, element_shape=[3])

        def body(t, h, outputs):
            h = tf.tanh(inputs.read(t) * w + h)
            return t + 1, h, outputs.write(t, h)

        _, _, outputs = tf.while_loop(lambda t, h, o: t < N, body,
                                      [tf.constant(0), tf.zeros([3]), outputs],
                                      maximum_iterations=N)
        stacked = outputs.stack()
        second = outputs.read(1)
        picked = outputs.gather([4, 0])
        flat = outputs.concat()
        loss = tf.reduce_sum(stacked * stacked)
        gw, gx = tf.gradients(loss, [w, x])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            st, sec, pk, fl, gwv, gxv, n = sess.run(
                [stacked, second, picked, flat, gw, gx, outputs.size()], {x: xv})
    ref = np.asarray(_ref(xv, wv))
    np.testing.assert_allclose(st, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sec, ref[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pk, ref[[4, 0]], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fl, ref.reshape(-1), rtol=1e-5, atol=1e-6)
    assert n == N
    rg_w, rg_x = jax.grad(lambda w_, x_: jnp.sum(_ref(x_, w_) ** 2), (0, 1))(wv, xv)
    np.testing.assert_allclose(gwv, rg_w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gxv, rg_x, rtol=1e-4, atol=1e-5)


def test_writes_outside_a_loop_and_scatter():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.int32, size=3)
        ta = ta.write(2, tf.constant([7, 8])).write(0, [1, 2])
        sc = tf.TensorArray(tf.float32, size=4).scatter([3, 1], tf.constant([[1.0], [2.0]]))
        with tf.Session() as sess:
            a, b = sess.run([ta.stack(), sc.stack()])
    np.testing.assert_array_equal(a, [[1, 2], [0, 0], [7, 8]])   # unwritten rows are 0
    np.testing.assert_array_equal(b, [[0.0], [2.0], [0.0], [1.0]])


def test_errors_name_the_alternative():
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.UnimplementedError, match="scan"):
            tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        with pytest.raises(tf.errors.UnimplementedError, match="size"):
            tf.TensorArray(tf.float32, size=tf.placeholder(tf.int32, []))
        ta = tf.TensorArray(tf.float32, size=3)
        with pytest.raises(tf.errors.UnimplementedError, match="element_shape"):
            tf.while_loop(lambda t, ta: t < 3, lambda t, ta: (t + 1, ta.write(t, 1.0)),
                          [tf.constant(0), ta])
        with pytest.raises(tf.errors.InvalidArgumentError, match="dtype"):
            tf.TensorArray(tf.float32, size=2).write(0, tf.constant([1, 2]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="size is 3"):
            ta.unstack(tf.zeros([4, 2]))
