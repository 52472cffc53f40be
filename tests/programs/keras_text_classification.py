"""Text classification with an Embedding over padded token sequences, in the style of
keras-io's "Text classification from scratch" / the IMDB examples, on generated
"reviews" (no download): token ids 2-9 are positive words, 10-17 negative ones, the
rest neutral; a review is positive when it holds more positive than negative words.

Run: python tests/programs/keras_text_classification.py
"""

import numpy as np

from mylib import keras
from mylib.keras import layers

VOCAB = 200
MAXLEN = 40


def make_reviews(n, rng):
    texts, labels = [], []
    for _ in range(n):
        length = int(rng.integers(5, 60))
        words = rng.integers(18, VOCAB, size=length)
        k_pos, k_neg = rng.integers(0, 5, size=2)
        while k_pos == k_neg:
            k_pos, k_neg = rng.integers(0, 5, size=2)
        marks = np.concatenate([rng.integers(2, 10, k_pos), rng.integers(10, 18, k_neg)])
        where = rng.choice(min(length, MAXLEN), size=min(len(marks), min(length, MAXLEN)),
                           replace=False)
        words[-MAXLEN:][where] = marks[:len(where)]
        texts.append(list(words))
        labels.append(int(np.sum((words >= 2) & (words < 10)) >
                          np.sum((words >= 10) & (words < 18))))
    return texts, np.array(labels)


def main(epochs=6):
    keras.utils.set_random_seed(3)
    rng = np.random.default_rng(3)
    texts, labels = make_reviews(1500, rng)
    x = keras.preprocessing.sequence.pad_sequences(texts, maxlen=MAXLEN)
    x_train, y_train, x_test, y_test = x[:1200], labels[:1200], x[1200:], labels[1200:]
    print(len(x_train), "train sequences;", len(x_test), "test sequences; shape", x.shape)

    inputs = keras.Input(shape=(MAXLEN,), dtype="int32")
    h = layers.Embedding(VOCAB, 16)(inputs)
    h = layers.GlobalAveragePooling1D()(h)
    h = layers.Dense(16, activation="relu")(h)
    outputs = layers.Dense(1, activation="sigmoid")(h)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(5e-3), loss="binary_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=32, epochs=epochs,
                        validation_data=(x_test, y_test), verbose=0)
    loss, acc = model.evaluate(x_test, y_test, verbose=0)
    print("test loss %.4f, accuracy %.4f" % (loss, acc))

    majority = max(y_test.mean(), 1 - y_test.mean())
    assert history.history["loss"][-1] < 0.6 * history.history["loss"][0]
    assert acc > max(0.85, majority + 0.2), (acc, majority)
    return acc


if __name__ == "__main__":
    main()
