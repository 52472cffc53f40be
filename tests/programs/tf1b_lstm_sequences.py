"""A sequence classifier in the style of TensorFlow 1's RNN tutorials: a BasicLSTMCell
run by tf.nn.dynamic_rnn over padded variable-length sequences with sequence_length,
classifying each sequence by its final state. The padding is random noise, so the
model only learns if the state at each sequence's own length is used."""

import numpy as np
import mylib as tf

MAX_LEN, NUM_UNITS = 12, 24


def make_data(n, rng):
    """Bit sequences of length 3..12 padded with noise; label: more ones than zeros in
    the valid part (ties drawn with odd lengths only)."""
    lengths = rng.choice(np.arange(3, MAX_LEN + 1, 2), n)
    bits = rng.randint(0, 2, (n, MAX_LEN))
    labels = np.array([int(bits[i, :lengths[i]].sum() * 2 > lengths[i]) for i in range(n)])
    x = bits.astype(np.float32)[:, :, None]
    return x, lengths.astype(np.int32), labels.astype(np.int32)


def main():
    rng = np.random.RandomState(0)
    train_x, train_len, train_y = make_data(2000, rng)
    test_x, test_len, test_y = make_data(500, rng)

    tf.reset_default_graph()
    tf.set_random_seed(0)
    inputs = tf.placeholder(tf.float32, [None, MAX_LEN, 1], name="inputs")
    seq_len = tf.placeholder(tf.int32, [None], name="seq_len")
    labels = tf.placeholder(tf.int32, [None], name="labels")

    cell = tf.contrib.rnn.BasicLSTMCell(NUM_UNITS)
    outputs, state = tf.nn.dynamic_rnn(cell, inputs, sequence_length=seq_len,
                                       dtype=tf.float32)
    with tf.variable_scope("softmax"):
        w = tf.get_variable("w", [NUM_UNITS, 2])
        b = tf.get_variable("b", [2], initializer=tf.zeros_initializer())
    logits = tf.matmul(state.h, w) + b
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                        logits=logits))
    train_op = tf.train.AdamOptimizer(0.02).minimize(loss)
    correct = tf.equal(tf.argmax(logits, 1, output_type=tf.int32), labels)
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed_test = {inputs: test_x, seq_len: test_len, labels: test_y}
        first_loss = sess.run(loss, feed_test)
        for step in range(150):
            idx = rng.choice(len(train_x), 64, replace=False)
            sess.run(train_op, {inputs: train_x[idx], seq_len: train_len[idx],
                                labels: train_y[idx]})
        last_loss, acc = sess.run([loss, accuracy], feed_test)
        out = sess.run(outputs, feed_test)
    padded_zero = all((out[i, test_len[i]:] == 0).all() for i in range(len(test_x)))
    print(f"loss {first_loss:.3f} -> {last_loss:.3f}, test accuracy {acc:.3f}")
    return {"first_loss": first_loss, "last_loss": last_loss, "accuracy": acc,
            "padded_outputs_zero": padded_zero}


if __name__ == "__main__":
    main()
