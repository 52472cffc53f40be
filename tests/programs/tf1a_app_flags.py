"""A TensorFlow 1 command-line program: flags defined with ``tf.app.flags``, read
through ``FLAGS``, ``tf.app.run()`` calling ``main(argv)``, ``tf.gfile`` for the output
directory and ``tf.logging`` for progress. It trains a softmax classifier on
scikit-learn's iris data with MomentumOptimizer and writes its result to a file.

Run: python tf1a_app_flags.py --train_steps=200 --learning_rate=0.1 --out_dir=/tmp/iris
"""

import os

import numpy as np
import mylib as tf
from sklearn.datasets import load_iris

flags = tf.app.flags
flags.DEFINE_integer("train_steps", 100, "Number of training steps.")
flags.DEFINE_float("learning_rate", 0.05, "Initial learning rate.")
flags.DEFINE_float("momentum", 0.9, "Momentum.")
flags.DEFINE_string("out_dir", "/tmp/tf1a_iris", "Where the result file goes.")
flags.DEFINE_boolean("nesterov", False, "Use Nesterov momentum.")
FLAGS = flags.FLAGS


def main(_):
    tf.logging.set_verbosity(tf.logging.INFO)
    iris = load_iris()
    data = ((iris.data - iris.data.mean(0)) / iris.data.std(0)).astype(np.float32)
    labels = iris.target.astype(np.int64)
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.placeholder(tf.int64, [None])
    w = tf.Variable(tf.random_normal([4, 3], stddev=0.1, seed=0))
    b = tf.Variable(tf.zeros([3]))
    logits = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    opt = tf.train.MomentumOptimizer(FLAGS.learning_rate, FLAGS.momentum,
                                     use_nesterov=FLAGS.nesterov)
    train_op = opt.minimize(loss)
    accuracy = tf.reduce_mean(tf.to_float(tf.equal(tf.argmax(logits, 1), y))) \
        if hasattr(tf, "to_float") else \
        tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: data, y: labels})
        for step in range(FLAGS.train_steps):
            _, l = sess.run([train_op, loss], {x: data, y: labels})
            if step % 50 == 0:
                tf.logging.info("step %d loss %.4f", step, l)
        last, acc = sess.run([loss, accuracy], {x: data, y: labels})
    if not tf.gfile.Exists(FLAGS.out_dir):
        tf.gfile.MakeDirs(FLAGS.out_dir)
    with tf.gfile.GFile(os.path.join(FLAGS.out_dir, "result.txt"), "w") as f:
        f.write(f"{FLAGS.train_steps} {first:.6f} {last:.6f} {acc:.6f}\n")
    print(f"steps {FLAGS.train_steps}: loss {first:.3f} -> {last:.3f}, accuracy {acc:.3f}")


if __name__ == "__main__":
    tf.app.run()
