"""A Keras 3 user program in the style of keras-io's "Timeseries classification with a
Transformer model": encoder blocks whose residual connections are written as ops on
symbolic tensors (``res = x + inputs``), MultiHeadAttention, 1x1 Conv1D feed-forward,
GlobalAveragePooling1D, EarlyStopping on the validation loss.

Only the import line (`from mylib import keras`) and the data differ from a Keras 3
program: the FordA motor readings are replaced by generated noisy sine waves of random
frequency and phase, class 1 strong and class 0 weak, shapes ``(n, 64, 1)``, int labels.
Run: python tests/programs/k3p_timeseries_transformer.py
"""

import numpy as np
from mylib import keras
from mylib.keras import layers


def make_data(n, rng):
    t = np.arange(64, dtype="float32")
    y = rng.integers(0, 2, size=n)
    amplitude = np.where(y == 1, 1.0, 0.4)[:, None]
    freq = rng.uniform(0.1, 0.4, size=(n, 1))
    phase = rng.uniform(0, 2 * np.pi, size=(n, 1))
    x = amplitude * np.sin(freq * t + phase) + 0.2 * rng.normal(size=(n, 64))
    return x[..., None].astype("float32"), y.astype("int32")


def transformer_encoder(inputs, head_size, num_heads, ff_dim, dropout=0):
    x = layers.MultiHeadAttention(key_dim=head_size, num_heads=num_heads,
                                  dropout=dropout)(inputs, inputs)
    x = layers.Dropout(dropout)(x)
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    res = x + inputs
    x = layers.Conv1D(filters=ff_dim, kernel_size=1, activation="relu")(res)
    x = layers.Dropout(dropout)(x)
    x = layers.Conv1D(filters=inputs.shape[-1], kernel_size=1)(x)
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    return x + res


def build_model(input_shape, head_size, num_heads, ff_dim, num_transformer_blocks,
                mlp_units, dropout=0, mlp_dropout=0):
    inputs = keras.Input(shape=input_shape)
    x = layers.Conv1D(8, 1)(inputs)  # a width the attention heads can share
    for _ in range(num_transformer_blocks):
        x = transformer_encoder(x, head_size, num_heads, ff_dim, dropout)
    x = layers.GlobalAveragePooling1D(data_format="channels_last")(x)
    for dim in mlp_units:
        x = layers.Dense(dim, activation="relu")(x)
        x = layers.Dropout(mlp_dropout)(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    return keras.Model(inputs, outputs)


def main(epochs=5):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x_train, y_train = make_data(256, rng)
    x_test, y_test = make_data(128, rng)
    model = build_model(x_train.shape[1:], head_size=8, num_heads=2, ff_dim=8,
                        num_transformer_blocks=1, mlp_units=[16], mlp_dropout=0.1,
                        dropout=0.1)
    model.compile(loss="sparse_categorical_crossentropy",
                  optimizer=keras.optimizers.Adam(learning_rate=5e-3),
                  metrics=["sparse_categorical_accuracy"])
    model.summary()
    callbacks = [keras.callbacks.EarlyStopping(patience=4, restore_best_weights=True)]
    history = model.fit(x_train, y_train, validation_split=0.2, epochs=epochs,
                        batch_size=32, callbacks=callbacks, verbose=2)
    loss, acc = model.evaluate(x_test, y_test, verbose=0)
    print("test loss", loss, "test accuracy", acc)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert acc > 0.85, acc
    return history


if __name__ == "__main__":
    main()
