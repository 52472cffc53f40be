"""A small convolutional network in the style of TensorFlow 1's "Deep MNIST for
experts" and the CIFAR-10 tutorial, on scikit-learn's 8x8 digits: weights made by hand
with `tf.truncated_normal`, `tf.nn.conv2d` with 4-element strides, `tf.nn.lrn`,
`tf.nn.max_pool` with 4-element ksize, `tf.nn.xw_plus_b`, `tf.nn.dropout(h, keep_prob)`
fed through a placeholder, `tf.nn.softmax_cross_entropy_with_logits_v2`, AdamOptimizer;
input scaling with `tf.image.resize_images` and
`tf.image.per_image_standardization`, `tf.nn.zero_fraction` and `tf.math.top_k`."""

import numpy as np
import mylib as tf
from sklearn.datasets import load_digits


def weight_variable(shape):
    return tf.Variable(tf.truncated_normal(shape, stddev=0.1))


def bias_variable(shape):
    return tf.Variable(tf.constant(0.1, shape=shape))


def main(steps=150, batch_size=64, seed=0):
    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32).reshape(-1, 8, 8, 1)
    labels = np.eye(10, dtype=np.float32)[digits.target]
    train_x, test_x = images[:1400], images[1400:]
    train_y, test_y = labels[:1400], labels[1400:]

    tf.reset_default_graph()
    tf.set_random_seed(seed)
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    y_ = tf.placeholder(tf.float32, [None, 10])
    keep_prob = tf.placeholder(tf.float32)

    # 8x8 -> 16x16, standardized per image
    x_big = tf.image.resize_images(x, [16, 16])
    x_std = tf.image.per_image_standardization(x_big)

    W_conv1 = weight_variable([3, 3, 1, 16])
    b_conv1 = bias_variable([16])
    h_conv1 = tf.nn.relu(tf.nn.conv2d(x_std, W_conv1, strides=[1, 1, 1, 1], padding="SAME")
                         + b_conv1)
    h_pool1 = tf.nn.max_pool(h_conv1, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                             padding="SAME")
    norm1 = tf.nn.lrn(h_pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)

    W_conv2 = weight_variable([3, 3, 16, 32])
    b_conv2 = bias_variable([32])
    h_conv2 = tf.nn.relu(tf.nn.bias_add(
        tf.nn.conv2d(norm1, W_conv2, [1, 1, 1, 1], padding="SAME"), b_conv2))
    h_pool2 = tf.nn.avg_pool(h_conv2, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")

    flat = tf.reshape(h_pool2, [-1, 4 * 4 * 32])
    W_fc1 = weight_variable([4 * 4 * 32, 64])
    b_fc1 = bias_variable([64])
    h_fc1 = tf.nn.relu(tf.nn.xw_plus_b(flat, W_fc1, b_fc1))
    h_fc1_drop = tf.nn.dropout(h_fc1, keep_prob)

    W_fc2 = weight_variable([64, 10])
    b_fc2 = bias_variable([10])
    logits = tf.nn.xw_plus_b(h_fc1_drop, W_fc2, b_fc2)

    cross_entropy = tf.reduce_mean(
        tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=logits))
    train_step = tf.train.AdamOptimizer(2e-3).minimize(cross_entropy)
    correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    _, top3 = tf.math.top_k(tf.nn.softmax(logits), k=3)
    in_top3 = tf.reduce_any(tf.equal(top3, tf.expand_dims(tf.to_int32(tf.argmax(y_, 1)), 1)),
                            axis=1)
    top3_accuracy = tf.reduce_mean(tf.cast(in_top3, tf.float32))
    sparsity = tf.nn.zero_fraction(h_fc1)

    rng = np.random.default_rng(seed)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first_loss = sess.run(cross_entropy, {x: train_x, y_: train_y, keep_prob: 1.0})
        for _ in range(steps):
            idx = rng.integers(0, len(train_x), batch_size)
            sess.run(train_step, {x: train_x[idx], y_: train_y[idx], keep_prob: 0.75})
        feed = {x: test_x, y_: test_y, keep_prob: 1.0}
        last_loss = sess.run(cross_entropy, {x: train_x, y_: train_y, keep_prob: 1.0})
        acc, acc3, zf = sess.run([accuracy, top3_accuracy, sparsity], feed)
    return {"first_loss": float(first_loss), "last_loss": float(last_loss),
            "accuracy": float(acc), "top3_accuracy": float(acc3), "zero_fraction": float(zf)}


if __name__ == "__main__":
    print(main())
