"""Linear regression with ``tf.GradientTape`` in graph mode, as TensorFlow 1.x
programs wrote it once the tape existed: the tape records the forward pass, its
gradients are clipped by global norm and applied with an optimizer."""

import numpy as np
import mylib as tf


def main():
    rng = np.random.RandomState(42)
    true_w = np.array([[1.5], [-2.0], [0.5]], np.float32)
    xs = rng.normal(size=(256, 3)).astype(np.float32)
    ys = xs @ true_w + 0.7 + 0.05 * rng.normal(size=(256, 1)).astype(np.float32)

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        y = tf.placeholder(tf.float32, [None, 1])
        w = tf.Variable(tf.zeros([3, 1]), name="w")
        b = tf.Variable(tf.zeros([1]), name="b")
        with tf.GradientTape() as tape:
            pred = tf.matmul(x, w) + b
            loss = tf.reduce_mean(tf.square(pred - y))
        grads = tape.gradient(loss, [w, b])
        clipped, norm = tf.clip_by_global_norm(grads, 5.0)
        optimizer = tf.train.GradientDescentOptimizer(0.1)
        train_op = optimizer.apply_gradients(zip(clipped, [w, b]))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss, {x: xs, y: ys})
            for _ in range(150):
                sess.run(train_op, {x: xs, y: ys})
            last, w_val, b_val = sess.run([loss, w, b], {x: xs, y: ys})
    print(f"loss {first:.3f} -> {last:.4f}; w {w_val.ravel()}, b {b_val}")
    return {"first_loss": first, "last_loss": last, "w": w_val, "b": b_val,
            "true_w": true_w}


if __name__ == "__main__":
    main()
