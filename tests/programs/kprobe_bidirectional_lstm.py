"""A Keras 3 user program in the style of keras-io's 'Bidirectional LSTM on IMDB'
(generated variable-length sequences).

Only the import line (`from mylib import keras`) and the data differ from a Keras 3
program. Run: python tests/programs/kprobe_bidirectional_lstm.py
"""

import numpy as np
from mylib import keras
from mylib.keras import layers

def main(epochs=6):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(1)
    max_features, maxlen = 100, 30
    def make(n):
        seqs, ys = [], []
        for _ in range(n):
            L = rng.integers(5, 40)
            s = rng.integers(3, max_features, size=L)
            y = rng.integers(0, 2)
            s[rng.choice(L, 3)] = 1 if y else 2
            seqs.append(list(s)); ys.append(y)
        return seqs, np.array(ys)
    x_train, y_train = make(600)
    x_val, y_val = make(200)
    print(len(x_train), "Training sequences")
    x_train = keras.utils.pad_sequences(x_train, maxlen=maxlen)
    x_val = keras.preprocessing.sequence.pad_sequences(x_val, maxlen=maxlen)
    inputs = keras.Input(shape=(None,), dtype="int32")
    x = layers.Embedding(max_features, 16)(inputs)
    x = layers.Bidirectional(layers.LSTM(16, return_sequences=True))(x)
    x = layers.Bidirectional(layers.LSTM(16))(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs, outputs)
    model.summary()
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    h = model.fit(x_train, y_train, batch_size=32, epochs=epochs, validation_data=(x_val, y_val))
    print(h.history)
    assert h.history["val_accuracy"][-1] > 0.8
    return h

if __name__ == "__main__":
    main()
