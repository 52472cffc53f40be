"""A two-layer perceptron in the style of TensorFlow 1 tutorials: truncated-normal
weights, ReLU, sparse softmax cross entropy, AdamOptimizer with an exponentially
decaying rate on the global step, a Saver checkpoint per epoch, then a fresh graph
that restores the latest checkpoint and evaluates."""

import os
import tempfile

import numpy as np
import mylib as tf
from sklearn.datasets import make_moons


def build(x, hidden=32):
    with tf.name_scope("hidden"):
        w1 = tf.Variable(tf.truncated_normal([2, hidden], stddev=0.5, seed=1), name="weights")
        b1 = tf.Variable(tf.zeros([hidden]), name="biases")
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
    with tf.name_scope("softmax_linear"):
        w2 = tf.Variable(tf.truncated_normal([hidden, 2], stddev=0.5, seed=2), name="weights")
        b2 = tf.Variable(tf.zeros([2]), name="biases")
        return tf.matmul(h, w2) + b2


def main(ckpt_dir=None):
    ckpt_dir = ckpt_dir or tempfile.mkdtemp()
    data, target = make_moons(600, noise=0.15, random_state=0)
    data = data.astype(np.float32)
    target = target.astype(np.int32)
    train_x, test_x, train_y, test_y = data[:500], data[500:], target[:500], target[500:]

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        logits = build(x)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits), name="xentropy_mean")
        global_step = tf.train.get_or_create_global_step()
        learning_rate = tf.train.exponential_decay(0.05, global_step, 20, 0.7,
                                                   staircase=True)
        train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss,
                                                                  global_step=global_step)
        saver = tf.train.Saver(max_to_keep=2)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss, {x: train_x, labels: train_y})
            rng = np.random.RandomState(0)
            for epoch in range(6):
                order = rng.permutation(len(train_x))
                for start in range(0, len(order), 50):
                    idx = order[start:start + 50]
                    sess.run(train_op, {x: train_x[idx], labels: train_y[idx]})
                saver.save(sess, os.path.join(ckpt_dir, "model.ckpt"), global_step=global_step)
            last = sess.run(loss, {x: train_x, labels: train_y})
            final_lr, step = sess.run([learning_rate, global_step])

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        logits = build(x)
        correct = tf.nn.in_top_k(logits, tf.constant(test_y), 1) if hasattr(tf.nn, "in_top_k") \
            else tf.equal(tf.argmax(logits, 1, output_type=tf.int32), test_y)
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, tf.train.latest_checkpoint(ckpt_dir))
            acc = sess.run(accuracy, {x: test_x})
    print(f"loss {first:.3f} -> {last:.3f}; lr {final_lr:.4f} at step {step}; "
          f"restored test accuracy {acc:.3f}")
    return {"first_loss": first, "last_loss": last, "accuracy": acc, "lr": final_lr,
            "step": step}


if __name__ == "__main__":
    main()
