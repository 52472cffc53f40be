"""A digits MLP in the style of TensorFlow 1's tf.data tutorials: the training arrays
go in through placeholders fed to an initializable iterator's initializer, epochs end
with OutOfRangeError, and a reinitializable iterator (`Iterator.from_structure`)
switches between the training and validation datasets."""

import numpy as np
import mylib as tf
from sklearn.datasets import load_digits


def main(epochs=8):
    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int64)
    train_x, val_x = images[:1400], images[1400:]
    train_y, val_y = labels[:1400], labels[1400:]

    tf.reset_default_graph()
    tf.set_random_seed(0)
    features = tf.placeholder(tf.float32, [None, 64], name="features")
    targets = tf.placeholder(tf.int64, [None], name="targets")

    def preprocess(x, y):
        return x * 2.0 - 1.0, tf.one_hot(y, 10)

    train_ds = (tf.data.Dataset.from_tensor_slices((features, targets))
                .shuffle(2000, seed=1).map(preprocess).batch(64))
    val_ds = tf.data.Dataset.from_tensor_slices((features, targets)).map(preprocess).batch(500)
    iterator = tf.data.Iterator.from_structure(train_ds.output_types, train_ds.output_shapes)
    x, y = iterator.get_next()
    train_init = iterator.make_initializer(train_ds)
    val_init = iterator.make_initializer(val_ds)

    w1 = tf.Variable(tf.truncated_normal([64, 32], stddev=0.1, seed=1))
    b1 = tf.Variable(tf.zeros([32]))
    w2 = tf.Variable(tf.truncated_normal([32, 10], stddev=0.1, seed=2))
    b2 = tf.Variable(tf.zeros([10]))
    hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
    logits = tf.matmul(hidden, w2) + b2
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
    correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1)),
                                    tf.float32))

    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(epochs):
            sess.run(train_init, feed_dict={features: train_x, targets: train_y})
            epoch_losses = []
            while True:
                try:
                    l, _ = sess.run([loss, train_op])
                    epoch_losses.append(l)
                except tf.errors.OutOfRangeError:
                    break
            losses.append(float(np.mean(epoch_losses)))
        sess.run(val_init, feed_dict={features: val_x, targets: val_y})
        right = 0.0
        while True:
            try:
                right += sess.run(correct)
            except tf.errors.OutOfRangeError:
                break
    return {"losses": losses, "accuracy": right / len(val_y),
            "steps_per_epoch": len(epoch_losses)}


if __name__ == "__main__":
    print(main())
