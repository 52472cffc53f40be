"""Data-parallel towers in the style of TensorFlow-Examples' `multigpu_cnn.py` (TF1), on
CPU devices and scikit-learn's digits: one batch split between towers, each tower under
a device function that reads ``op.node_def.op`` to put variables on the parameter
device, weights shared by ``reuse``, a train graph with dropout and a test graph without,
per-tower `compute_gradients` averaged with expand_dims / concat / reduce_mean, and one
`apply_gradients`."""

import numpy as np
import mylib as tf
from sklearn.datasets import load_digits

NUM_TOWERS, BATCH = 2, 64
PS_OPS = ["Variable", "VariableV2", "AutoReloadVariable", "VarHandleOp"]


def net(x, reuse, is_training):
    with tf.variable_scope("MLP", reuse=reuse):
        h = tf.layers.dense(x, 64, activation=tf.nn.relu)
        h = tf.layers.dropout(h, rate=0.2, training=is_training)
        return tf.layers.dense(h, 10)


def average_gradients(tower_grads):
    average = []
    for grad_and_vars in zip(*tower_grads):
        grads = [tf.expand_dims(g, 0) for g, _ in grad_and_vars]
        average.append((tf.reduce_mean(tf.concat(grads, 0), 0), grad_and_vars[0][1]))
    return average


def assign_to_device(device, ps_device="/cpu:0"):
    def _assign(op):
        node_def = op if isinstance(op, tf.NodeDef) else op.node_def
        return "/" + ps_device if node_def.op in PS_OPS else device

    return _assign


def main(steps=150, ps_device="cpu:2"):
    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[digits.target]
    train_x, test_x, train_y, test_y = images[:1400], images[1400:], labels[:1400], labels[1400:]

    tf.reset_default_graph()
    tf.set_random_seed(0)
    with tf.device("/cpu:0"):
        X = tf.placeholder(tf.float32, [None, 64])
        Y = tf.placeholder(tf.float32, [None, 10])
        tower_grads, reuse = [], False
        optimizer = tf.train.AdamOptimizer(0.01)
        for i in range(NUM_TOWERS):
            with tf.device(assign_to_device(f"/cpu:{i}", ps_device=ps_device)):
                _x, _y = X[i * BATCH:(i + 1) * BATCH], Y[i * BATCH:(i + 1) * BATCH]
                logits_train = net(_x, reuse, True)
                logits_test = net(X, True, False)
                loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(
                    logits=logits_train, labels=_y))
                tower_grads.append(optimizer.compute_gradients(loss))
                if i == 0:
                    correct = tf.equal(tf.argmax(logits_test, 1), tf.argmax(Y, 1))
                    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
                    full_loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(
                        logits=logits_test, labels=Y))
                    tower0_matmul = logits_train.op.inputs[0].op
                reuse = True
        train_op = optimizer.apply_gradients(average_gradients(tower_grads))

    rng = np.random.RandomState(0)
    config = tf.ConfigProto(allow_soft_placement=True)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        first_loss = sess.run(full_loss, {X: train_x, Y: train_y})
        for _ in range(steps):
            idx = rng.choice(len(train_x), BATCH * NUM_TOWERS, replace=False)
            sess.run(train_op, {X: train_x[idx], Y: train_y[idx]})
        last_loss = sess.run(full_loss, {X: train_x, Y: train_y})
        acc = sess.run(accuracy, {X: test_x, Y: test_y})
    variables = [(v.name, v.op.device) for v in tf.trainable_variables()]
    print(f"loss {first_loss:.3f} -> {last_loss:.3f}, test accuracy {acc:.3f}")
    return {"first_loss": first_loss, "last_loss": last_loss, "accuracy": acc,
            "variables": variables, "tower0_device": tower0_matmul.device,
            "grad_devices": [g.op.device for g, _ in tower_grads[1] if g is not None]}


if __name__ == "__main__":
    main()
