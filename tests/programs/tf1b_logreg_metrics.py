"""Logistic regression in the style of TensorFlow 1 tutorials, on scikit-learn's
breast-cancer data: weights from tf.get_variable with a regularizer, the loss from
tf.losses.sigmoid_cross_entropy and tf.losses.get_total_loss, and evaluation by the
streaming tf.metrics.accuracy / auc / precision / recall over test batches (local
variables reset with tf.local_variables_initializer)."""

import numpy as np
import mylib as tf
from sklearn.datasets import load_breast_cancer


def main():
    data = load_breast_cancer()
    x = data.data.astype(np.float32)
    y = data.target.astype(np.float32)
    rng = np.random.RandomState(0)
    order = rng.permutation(len(x))
    x, y = x[order], y[order]
    mean, std = x[:400].mean(0), x[:400].std(0) + 1e-6
    x = (x - mean) / std
    train_x, test_x, train_y, test_y = x[:400], x[400:], y[:400], y[400:]

    tf.reset_default_graph()
    features = tf.placeholder(tf.float32, [None, x.shape[1]], name="features")
    labels = tf.placeholder(tf.float32, [None], name="labels")
    with tf.variable_scope("logreg"):
        w = tf.get_variable("w", [x.shape[1], 1], initializer=tf.zeros_initializer(),
                            regularizer=tf.contrib.layers.l2_regularizer(0.01))
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    logits = tf.squeeze(tf.matmul(features, w) + b, axis=1)
    tf.losses.sigmoid_cross_entropy(multi_class_labels=labels, logits=logits)
    loss = tf.losses.get_total_loss()
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)

    probs = tf.sigmoid(logits)
    predicted = tf.cast(probs > 0.5, tf.float32)
    acc, acc_op = tf.metrics.accuracy(labels, predicted)
    auc, auc_op = tf.metrics.auc(labels, probs)
    prec, prec_op = tf.metrics.precision(labels, predicted)
    rec, rec_op = tf.metrics.recall(labels, predicted)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first_loss = sess.run(loss, {features: train_x, labels: train_y})
        for _ in range(100):
            sess.run(train_op, {features: train_x, labels: train_y})
        last_loss = sess.run(loss, {features: train_x, labels: train_y})
        sess.run(tf.local_variables_initializer())
        for start in range(0, len(test_x), 50):
            feed = {features: test_x[start:start + 50], labels: test_y[start:start + 50]}
            sess.run([acc_op, auc_op, prec_op, rec_op], feed)
        values = sess.run({"accuracy": acc, "auc": auc, "precision": prec, "recall": rec})
        test_probs = sess.run(probs, {features: test_x})
    print(f"loss {first_loss:.3f} -> {last_loss:.3f}, " +
          ", ".join(f"{k} {v:.3f}" for k, v in values.items()))
    return {"first_loss": first_loss, "last_loss": last_loss, "test_probs": test_probs,
            "test_labels": test_y, **values}


if __name__ == "__main__":
    main()
