"""`ml.GradientTape` in graph mode: recorded ops only, watched sources, persistence,
structures, checked against `jax.grad` of the same function."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as tf

X = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]], np.float32)
Y = np.array([1.0, -1.0, 2.0], np.float32)
W0 = np.array([0.3, -0.2], np.float32)


def _ref(w, b):
    return jnp.mean((X @ w + b - Y) ** 2)


def test_variables_read_on_tape_are_watched_and_match_jax():
    with tf.Graph().as_default():
        w = tf.Variable(W0, name="w")
        b = tf.Variable(0.5, name="b")
        frozen = tf.Variable(1.0, trainable=False, name="frozen")
        with tf.GradientTape() as tape:
            pred = tf.reduce_sum(tf.constant(X) * w, 1) + b * frozen
            loss = tf.reduce_mean(tf.square(pred - Y))
        assert {v.name for v in tape.watched_variables()} == {"w:0", "b:0"}
        dw, db, dfrozen = tape.gradient(loss, [w, b, frozen])
        assert dfrozen is None  # not trainable: not watched
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got_w, got_b = s.run([dw, db])
    want_w, want_b = jax.grad(_ref, argnums=(0, 1))(jnp.asarray(W0), 0.5)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-5)
    np.testing.assert_allclose(got_b, want_b, rtol=1e-5)


def test_watch_tensor_outside_ops_are_constants_and_persistence():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        before = x * x  # created before the tape: a constant to it
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = before * x + tf.sin(x)
            with tape.stop_recording():
                hidden = x * 10.0
            z = y + hidden
        gx = tape.gradient(y, x)
        gz = tape.gradient(z, {"x": x})  # hidden is not recorded
        unwatched = tape.gradient(y, before)
        assert unwatched is None
        zero = tape.gradient(y, before, unconnected_gradients="zero")
        with tf.Session() as s:
            vx, vz, vzero = s.run([gx, gz["x"], zero], {x: 1.5})
    want = 1.5 * 1.5 + np.cos(1.5)  # d/dx (c * x + sin x) with c = x^2 held constant
    np.testing.assert_allclose(vx, want, rtol=1e-5)
    np.testing.assert_allclose(vz, want, rtol=1e-5)
    assert vzero == 0.0


def test_non_persistent_tape_once_and_gather_gives_indexed_slices():
    with tf.Graph().as_default():
        emb = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2), name="emb")
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(emb)
            loss = tf.reduce_sum(tf.gather(emb, [1, 3, 1]))
        g = tape.gradient(loss, emb)
        assert isinstance(g, tf.IndexedSlices)
        with pytest.raises(RuntimeError, match="non-persistent"):
            tape.gradient(loss, emb)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            values, indices = s.run([g.values, g.indices])
        np.testing.assert_array_equal(values, np.ones((3, 2)))
        np.testing.assert_array_equal(indices, [1, 3, 1])


def test_tape_trains_with_apply_gradients():
    rng = np.random.default_rng(0)
    xv = rng.normal(size=(64, 2)).astype(np.float32)
    yv = xv @ np.array([2.0, -3.0], np.float32) + 1.0
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros(2, np.float32), name="w")
        b = tf.Variable(0.0, name="b")
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.reduce_sum(xv * w, 1) + b - yv))
        grads = tape.gradient(loss, [w, b])
        step = tf.train.GradientDescentOptimizer(0.1).apply_gradients(zip(grads, [w, b]))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run(loss)
            for _ in range(200):
                s.run(step)
            assert s.run(loss) < 1e-3 * first
            np.testing.assert_allclose(s.run(w), [2.0, -3.0], atol=1e-2)


def test_watch_rejects_int():
    with tf.Graph().as_default():
        with tf.GradientTape() as tape:
            with pytest.raises(ValueError, match="int32"):
                tape.watch(tf.constant(1))


def test_tape_records_after_freed_collectable_ops():
    # Freed (collectable) ops leave the graph's op list while a tape records: the tape
    # must still find exactly the ops built in its block.
    import gc

    g = tf.Graph()
    with g.as_default():
        with g.collectable():
            for _ in range(5):
                tf.constant(1.0) * 2.0  # freed at once
        gc.collect()
        w = tf.Variable(3.0)
        with tf.GradientTape() as tape:
            y = w * w
        dw = tape.gradient(y, w)
        assert tape.watched_variables() == [w] or [v.name for v in tape.watched_variables()] == [w.name]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(dw) == 6.0
