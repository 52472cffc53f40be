"""A training loop in the style of TensorFlow 1's distributed-training examples:
``MonitoredTrainingSession`` with a checkpoint directory, ``StopAtStepHook``,
``NanTensorHook``, ``LoggingTensorHook``, summaries every few steps, and a second run
that resumes from the checkpoint. Logistic regression on scikit-learn's breast
cancer data, RMSPropOptimizer."""

import tempfile

import numpy as np
import mylib as tf
from sklearn.datasets import load_breast_cancer


def train(logdir, last_step, data, target):
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [None, data.shape[1]])
        y = tf.placeholder(tf.float32, [None])
        w = tf.Variable(tf.zeros([data.shape[1], 1]), name="w")
        b = tf.Variable(0.0, name="b")
        logits = tf.squeeze(tf.matmul(x, w), [1]) + b
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.cast(logits > 0, tf.float32), y),
                                          tf.float32))
        tf.summary.scalar("loss", loss)
        tf.summary.scalar("accuracy", accuracy)
        tf.summary.histogram("weights", w)
        train_op = tf.train.RMSPropOptimizer(0.01).minimize(loss, global_step=global_step)
        hooks = [tf.train.StopAtStepHook(last_step=last_step), tf.train.NanTensorHook(loss),
                 tf.train.LoggingTensorHook({"step": global_step, "loss": loss},
                                            every_n_iter=50)]
        losses = []
        rng = np.random.RandomState(last_step)
        with tf.train.MonitoredTrainingSession(checkpoint_dir=logdir, hooks=hooks,
                                               save_checkpoint_steps=50,
                                               save_summaries_steps=10) as sess:
            while not sess.should_stop():
                idx = rng.choice(len(data), 64, replace=False)
                l, a, _ = sess.run([loss, accuracy, train_op], {x: data[idx], y: target[idx]})
                losses.append(l)
        return losses, a


def main(logdir=None):
    logdir = logdir or tempfile.mkdtemp()
    raw = load_breast_cancer()
    data = ((raw.data - raw.data.mean(0)) / raw.data.std(0)).astype(np.float32)
    target = raw.target.astype(np.float32)
    first_losses, _ = train(logdir, 100, data, target)
    more_losses, acc = train(logdir, 150, data, target)  # resumes at step 100
    print(f"loss {first_losses[0]:.3f} -> {more_losses[-1]:.3f}; steps {len(first_losses)} "
          f"+ {len(more_losses)}; batch accuracy {acc:.3f}")
    tf.summary.FileWriterCache.clear()
    return {"first_loss": first_losses[0], "last_loss": more_losses[-1],
            "steps": (len(first_losses), len(more_losses)), "accuracy": acc,
            "logdir": logdir}


if __name__ == "__main__":
    tf.logging.set_verbosity(tf.logging.INFO)
    main()
