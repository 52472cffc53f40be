"""Logistic regression on a two-class problem in the style of TensorFlow 1 Estimator-era
scripts: a one-shot iterator over ``shuffle().repeat().batch()``, a global step, and
MonitoredTrainingSession stopped by StopAtStepHook; a second one-shot iterator over the
held-out data is read to the end (OutOfRangeError) for the accuracy."""

import numpy as np
import mylib as tf
from sklearn.datasets import make_classification


def main(steps=150):
    data, target = make_classification(n_samples=1200, n_features=10, n_informative=6,
                                       random_state=0)
    data = data.astype(np.float32)
    target = target.astype(np.float32)
    train_x, test_x = data[:1000], data[1000:]
    train_y, test_y = target[:1000], target[1000:]

    tf.reset_default_graph()
    global_step = tf.train.get_or_create_global_step()
    train = (tf.data.Dataset.from_tensor_slices({"x": train_x, "y": train_y})
             .shuffle(1000, seed=0).repeat().batch(32).prefetch(2))
    batch = train.make_one_shot_iterator().get_next()

    w = tf.Variable(tf.zeros([10, 1]), name="w")
    b = tf.Variable(tf.zeros([1]), name="b")

    def model(x):
        return tf.squeeze(tf.matmul(x, w) + b, axis=1)

    logits = model(batch["x"])
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=batch["y"],
                                                                  logits=logits))
    train_op = tf.train.GradientDescentOptimizer(0.3).minimize(loss, global_step=global_step)

    test_x_t, test_y_t = tf.data.Dataset.from_tensor_slices((test_x, test_y)).batch(64) \
        .make_one_shot_iterator().get_next()
    hits = tf.reduce_sum(tf.cast(tf.equal(tf.cast(model(test_x_t) > 0, tf.float32), test_y_t),
                                 tf.float32))

    losses = []
    with tf.train.MonitoredTrainingSession(
            hooks=[tf.train.StopAtStepHook(last_step=steps)]) as sess:
        while not sess.should_stop():
            l, _ = sess.run([loss, train_op])
            losses.append(float(l))
        last_step = sess.run(global_step)
        right = 0.0
        while True:
            try:
                right += sess.run(hits)
            except tf.errors.OutOfRangeError:
                break
    return {"losses": losses, "step": int(last_step), "accuracy": right / len(test_y)}


if __name__ == "__main__":
    print(main())
