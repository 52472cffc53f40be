"""Softmax regression in the style of TensorFlow 1's "MNIST for ML beginners", on
scikit-learn's 8x8 digits: placeholders, zero-initialized weights, the hand-written
cross entropy with ``reduction_indices``, GradientDescentOptimizer, accuracy."""

import numpy as np
import mylib as tf
from sklearn.datasets import load_digits


def main():
    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[digits.target]
    train_x, test_x = images[:1400], images[1400:]
    train_y, test_y = labels[:1400], labels[1400:]

    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 64])
    W = tf.Variable(tf.zeros([64, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.nn.softmax(tf.matmul(x, W) + b)
    y_ = tf.placeholder(tf.float32, [None, 10])
    cross_entropy = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(y + 1e-10), reduction_indices=[1]))
    train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))

    sess = tf.InteractiveSession()
    tf.global_variables_initializer().run()
    first_loss = sess.run(cross_entropy, feed_dict={x: train_x, y_: train_y})
    rng = np.random.RandomState(0)
    for _ in range(300):
        idx = rng.choice(len(train_x), 100, replace=False)
        sess.run(train_step, feed_dict={x: train_x[idx], y_: train_y[idx]})
    last_loss = sess.run(cross_entropy, feed_dict={x: train_x, y_: train_y})
    acc = sess.run(accuracy, feed_dict={x: test_x, y_: test_y})
    sess.close()
    print(f"loss {first_loss:.3f} -> {last_loss:.3f}, test accuracy {acc:.3f}")
    return {"first_loss": first_loss, "last_loss": last_loss, "accuracy": acc}


if __name__ == "__main__":
    main()
