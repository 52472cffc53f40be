"""A convolutional network in the style of TensorFlow 1's "Layers tutorial" (the
`cnn_mnist` model), on scikit-learn's 8x8 digits: tf.layers.conv2d / max_pooling2d /
batch_normalization / dropout / dense, a boolean `training` placeholder, the batch
norm updates run through UPDATE_OPS, tf.losses.sparse_softmax_cross_entropy,
tf.metrics.accuracy streamed over the test set and tf.nn.in_top_k."""

import numpy as np
import mylib as tf
from sklearn.datasets import load_digits


def cnn_model(images, training):
    input_layer = tf.reshape(images, [-1, 8, 8, 1])
    conv1 = tf.layers.conv2d(input_layer, filters=16, kernel_size=[3, 3], padding="same",
                             activation=tf.nn.relu)
    pool1 = tf.layers.max_pooling2d(conv1, pool_size=[2, 2], strides=2)
    norm1 = tf.layers.batch_normalization(pool1, momentum=0.9, training=training)
    conv2 = tf.layers.conv2d(norm1, filters=32, kernel_size=[3, 3], padding="same",
                             activation=tf.nn.relu)
    pool2 = tf.layers.max_pooling2d(conv2, pool_size=[2, 2], strides=2)
    flat = tf.layers.flatten(pool2)
    dense = tf.layers.dense(flat, units=64, activation=tf.nn.relu)
    dropout = tf.layers.dropout(dense, rate=0.3, training=training)
    return tf.layers.dense(dropout, units=10)


def main():
    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int32)
    train_x, test_x = images[:1400], images[1400:]
    train_y, test_y = labels[:1400], labels[1400:]

    tf.reset_default_graph()
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    training = tf.placeholder_with_default(False, shape=[], name="training")
    logits = cnn_model(x, training)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = tf.train.AdamOptimizer(learning_rate=0.01).minimize(loss)
    predictions = tf.argmax(logits, axis=1, output_type=tf.int32)
    acc, acc_update = tf.metrics.accuracy(labels=y, predictions=predictions)
    top3 = tf.reduce_mean(tf.cast(tf.nn.in_top_k(logits, y, 3), tf.float32))

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.local_variables_initializer())
        first_loss = sess.run(loss, {x: train_x, y: train_y})
        rng = np.random.RandomState(0)
        for _ in range(150):
            idx = rng.choice(len(train_x), 64, replace=False)
            sess.run(train_op, {x: train_x[idx], y: train_y[idx], training: True})
        last_loss = sess.run(loss, {x: train_x, y: train_y})
        for start in range(0, len(test_x), 100):
            sess.run(acc_update, {x: test_x[start:start + 100], y: test_y[start:start + 100]})
        test_acc, top3_acc = sess.run(acc), sess.run(top3, {x: test_x, y: test_y})
        moving_mean = sess.run(tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES,
                                                 "batch_normalization/moving_mean")[0])
    print(f"loss {first_loss:.3f} -> {last_loss:.3f}, test accuracy {test_acc:.3f}, "
          f"top-3 {top3_acc:.3f}")
    return {"first_loss": first_loss, "last_loss": last_loss, "accuracy": test_acc,
            "top3": top3_acc, "moving_mean_moved": float(np.abs(moving_mean).max())}


if __name__ == "__main__":
    main()
