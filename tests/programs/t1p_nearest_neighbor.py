"""Nearest-neighbour classification in the style of TensorFlow-Examples'
`nearest_neighbor.py` (TF1): the L1 distance of one test image to every training image
in the graph, `tf.arg_min(distance, 0)` (TF1's deprecated spelling) picks the neighbour,
one `Session.run` per test image; scikit-learn's digits with one-hot labels."""

import numpy as np
import mylib as tf
from sklearn.datasets import load_digits


def main(n_test=150):
    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    onehot = np.eye(10, dtype=np.float32)[digits.target]
    Xtr, Ytr = images[:1500], onehot[:1500]
    Xte, Yte = images[1500:1500 + n_test], onehot[1500:1500 + n_test]

    tf.reset_default_graph()
    xtr = tf.placeholder("float", [None, 64])
    xte = tf.placeholder("float", [64])
    distance = tf.reduce_sum(tf.abs(tf.add(xtr, tf.negative(xte))), reduction_indices=1)
    pred = tf.arg_min(distance, 0)

    predictions, accuracy = [], 0.0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(len(Xte)):
            nn_index = sess.run(pred, feed_dict={xtr: Xtr, xte: Xte[i, :]})
            predictions.append(int(nn_index))
            if np.argmax(Ytr[nn_index]) == np.argmax(Yte[i]):
                accuracy += 1.0 / len(Xte)
    print(f"Accuracy: {accuracy:.3f}")
    return {"predictions": np.array(predictions), "accuracy": accuracy, "Xtr": Xtr,
            "Xte": Xte, "index_dtype": type(nn_index)}


if __name__ == "__main__":
    main()
