"""A small convnet on handwritten digits, in the style of keras-io's "Simple MNIST
convnet", with only the import line and the data source changed: scikit-learn's 8x8
digits stand in for MNIST (no download).

Run: python tests/programs/keras_mnist_convnet.py
"""

import numpy as np
from sklearn.datasets import load_digits

from mylib import keras
from mylib.keras import layers


def main(epochs=6):
    keras.utils.set_random_seed(1)
    num_classes = 10
    input_shape = (8, 8, 1)

    digits = load_digits()
    x = (digits.images / 16.0).astype("float32")
    x = np.expand_dims(x, -1)
    y = keras.utils.to_categorical(digits.target, num_classes)
    x_train, x_test, y_train, y_test = x[:1500], x[1500:], y[:1500], y[1500:]
    print("x_train shape:", x_train.shape, "-", x_test.shape[0], "test samples")

    model = keras.Sequential([
        keras.Input(shape=input_shape),
        layers.Conv2D(8, kernel_size=(3, 3), activation="relu", padding="same"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(16, kernel_size=(3, 3), activation="relu", padding="same"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.3),
        layers.Dense(num_classes, activation="softmax"),
    ])
    model.summary()
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.Adam(5e-3),
                  metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=32, epochs=epochs, validation_split=0.1,
                        verbose=0)
    score = model.evaluate(x_test, y_test, verbose=0)
    print("Test loss:", score[0])
    print("Test accuracy:", score[1])

    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    assert score[1] > 0.85, score  # chance is 0.1
    return score


if __name__ == "__main__":
    main()
