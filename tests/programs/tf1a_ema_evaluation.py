"""Training with an exponential moving average of the weights, evaluated with the
averages, in the style of TensorFlow 1's CIFAR-10 tutorial: the train op runs the
optimizer then ``ema.apply``; evaluation builds the model again and restores the
shadow values through ``ema.variables_to_restore()``."""

import os
import tempfile

import numpy as np
import mylib as tf
from sklearn.datasets import load_wine


def inference(x):
    w = tf.Variable(tf.zeros([13, 3]), name="weights")
    b = tf.Variable(tf.zeros([3]), name="biases")
    return tf.matmul(x, w) + b


def main(ckpt_dir=None):
    ckpt_dir = ckpt_dir or tempfile.mkdtemp()
    wine = load_wine()
    data = ((wine.data - wine.data.mean(0)) / wine.data.std(0)).astype(np.float32)
    labels = wine.target.astype(np.int32)
    perm = np.random.RandomState(0).permutation(len(data))
    data, labels = data[perm], labels[perm]
    train_x, test_x, train_y, test_y = data[:130], data[130:], labels[:130], labels[130:]

    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [None, 13])
        y = tf.placeholder(tf.int32, [None])
        logits = inference(x)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=logits))
        opt = tf.train.AdagradOptimizer(0.3)
        apply_op = opt.minimize(loss, global_step=global_step)
        ema = tf.train.ExponentialMovingAverage(0.95, global_step)
        with tf.control_dependencies([apply_op]):
            train_op = ema.apply(tf.trainable_variables())
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss, {x: train_x, y: train_y})
            rng = np.random.RandomState(1)
            for _ in range(200):
                idx = rng.choice(len(train_x), 32, replace=False)
                sess.run(train_op, {x: train_x[idx], y: train_y[idx]})
            last = sess.run(loss, {x: train_x, y: train_y})
            raw_w, avg_w = sess.run([tf.trainable_variables()[0],
                                     ema.average(tf.trainable_variables()[0])])
            path = saver.save(sess, os.path.join(ckpt_dir, "model.ckpt"), global_step)

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 13])
        logits = inference(x)
        ema = tf.train.ExponentialMovingAverage(0.95)
        restorer = tf.train.Saver(ema.variables_to_restore())
        correct = tf.equal(tf.argmax(logits, 1, output_type=tf.int32), test_y)
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
        with tf.Session() as sess:
            restorer.restore(sess, path)
            acc = sess.run(accuracy, {x: test_x})
            restored_w = sess.run(tf.trainable_variables()[0])
    print(f"loss {first:.3f} -> {last:.3f}; test accuracy with averaged weights {acc:.3f}")
    return {"first_loss": first, "last_loss": last, "accuracy": acc, "raw_w": raw_w,
            "avg_w": avg_w, "restored_w": restored_w}


if __name__ == "__main__":
    main()
