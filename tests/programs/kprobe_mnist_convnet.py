"""A Keras 3 user program in the style of keras-io's 'Simple MNIST convnet' (digits 8x8 in
place of MNIST).

Only the import line (`from mylib import keras`) and the data differ from a Keras 3
program. Run: python tests/programs/kprobe_mnist_convnet.py
"""

import numpy as np
from mylib import keras
from mylib.keras import layers
from sklearn.datasets import load_digits

def main(epochs=8):
    keras.utils.set_random_seed(1)
    d = load_digits()
    x = (d.images / 16.0).astype("float32")[..., None]
    y = d.target
    num_classes = 10
    x_train, y_train, x_test, y_test = x[:1400], y[:1400], x[1400:], y[1400:]
    print("x_train shape:", x_train.shape)
    y_train = keras.utils.to_categorical(y_train, num_classes)
    y_test = keras.utils.to_categorical(y_test, num_classes)
    model = keras.Sequential([
        keras.Input(shape=(8, 8, 1)),
        layers.Conv2D(16, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu", padding="same"),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(num_classes, activation="softmax"),
    ])
    model.summary()
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    h = model.fit(x_train, y_train, batch_size=64, epochs=epochs, validation_split=0.1)
    score = model.evaluate(x_test, y_test, verbose=0)
    print("Test loss:", score[0]); print("Test accuracy:", score[1])
    print(sorted(h.history))
    assert h.history["loss"][-1] < h.history["loss"][0]
    assert score[1] > 0.8
    p = model.predict(x_test[:5], verbose=0); print(p.shape, type(p))
    return score

if __name__ == "__main__":
    main()
