"""A siamese network in the style of TensorFlow 1 programs that share weights between
towers with variable scopes: one `tower()` built twice, the second time under
``scope.reuse_variables()``, with weights from tf.get_variable (an L2 regularizer on
the scope, collected by tf.losses.get_regularization_loss). Trained with a contrastive
loss on pairs of scikit-learn digits: same digit or not."""

import numpy as np
import mylib as tf
from sklearn.datasets import load_digits


def tower(x):
    with tf.variable_scope("layer1"):
        w1 = tf.get_variable("weights", [64, 64])
        b1 = tf.get_variable("biases", [64], initializer=tf.constant_initializer(0.0))
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
    with tf.variable_scope("layer2"):
        w2 = tf.get_variable("weights", [64, 16])
        b2 = tf.get_variable("biases", [16], initializer=tf.constant_initializer(0.0))
        return tf.matmul(h, w2) + b2


def make_pairs(x, y, n, rng):
    a = rng.randint(len(x), size=n)
    same = rng.rand(n) < 0.5
    b = np.empty(n, int)
    for i in range(n):
        pool = np.flatnonzero((y == y[a[i]]) == same[i])
        b[i] = rng.choice(pool)
    return x[a], x[b], (y[a] == y[b]).astype(np.float32)


def main():
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target
    rng = np.random.RandomState(0)
    tr_a, tr_b, tr_same = make_pairs(x[:1400], y[:1400], 4000, rng)
    te_a, te_b, te_same = make_pairs(x[1400:], y[1400:], 800, rng)

    tf.reset_default_graph()
    tf.set_random_seed(0)
    left = tf.placeholder(tf.float32, [None, 64], name="left")
    right = tf.placeholder(tf.float32, [None, 64], name="right")
    same = tf.placeholder(tf.float32, [None], name="same")
    with tf.variable_scope("siamese", regularizer=tf.contrib.layers.l2_regularizer(1e-4)) \
            as scope:
        out_left = tower(left)
        scope.reuse_variables()
        out_right = tower(right)
    dist = tf.sqrt(tf.reduce_sum(tf.square(out_left - out_right), 1) + 1e-6)
    margin = 2.0
    contrastive = tf.reduce_mean(same * tf.square(dist) +
                                 (1 - same) * tf.square(tf.maximum(margin - dist, 0.0)))
    loss = contrastive + tf.losses.get_regularization_loss()
    train_op = tf.train.AdamOptimizer(0.005).minimize(loss)
    predict_same = tf.cast(tf.less(dist, margin / 2), tf.float32)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(predict_same, same), tf.float32))

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        test_feed = {left: te_a, right: te_b, same: te_same}
        first_loss = sess.run(contrastive, test_feed)
        for _ in range(250):
            idx = rng.choice(len(tr_a), 128, replace=False)
            sess.run(train_op, {left: tr_a[idx], right: tr_b[idx], same: tr_same[idx]})
        last_loss, acc = sess.run([contrastive, accuracy], test_feed)
    names = [v.name for v in tf.trainable_variables()]
    print(f"contrastive loss {first_loss:.3f} -> {last_loss:.3f}, pair accuracy {acc:.3f}")
    return {"first_loss": first_loss, "last_loss": last_loss, "accuracy": acc,
            "variables": names,
            "regularizers": len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES))}


if __name__ == "__main__":
    main()
