"""A Keras 3 user program in the style of keras-io's 'Timeseries forecasting'
(timeseries_dataset_from_array + LSTM + EarlyStopping).

Only the import line (`from mylib import keras`) and the data differ from a Keras 3
program. Run: python tests/programs/kprobe_timeseries.py
"""

import numpy as np
from mylib import keras
from mylib.keras import layers

def main(epochs=5):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    t = np.arange(3000, dtype="float32")
    feats = np.stack([np.sin(t / 20), np.cos(t / 33), 0.1 * rng.normal(size=t.shape)], 1).astype("float32")
    mean, std = feats[:2000].mean(0), feats[:2000].std(0)
    feats = (feats - mean) / std
    past, future, step = 30, 5, 1
    sequence_length = past // step
    x_train = feats[:2000 - past - future]
    y_train = feats[past + future:2000][:, [0]]
    dataset_train = keras.utils.timeseries_dataset_from_array(
        x_train, y_train, sequence_length=sequence_length, sampling_rate=step, batch_size=64)
    x_val = feats[2000:-(past + future)]
    y_val = feats[2000 + past + future:][:, [0]]
    dataset_val = keras.utils.timeseries_dataset_from_array(
        x_val, y_val, sequence_length=sequence_length, sampling_rate=step, batch_size=64)
    for batch in dataset_train.take(1):
        inputs, targets = batch
    print("Input shape:", inputs.shape)
    print("Target shape:", targets.shape)
    inputs = keras.layers.Input(shape=(inputs.shape[1], inputs.shape[2]))
    lstm_out = keras.layers.LSTM(16)(inputs)
    outputs = keras.layers.Dense(1)(lstm_out)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.005), loss="mse")
    es_callback = keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=0, patience=5)
    history = model.fit(dataset_train, epochs=epochs, validation_data=dataset_val, callbacks=[es_callback])
    print(history.history)
    assert history.history["val_loss"][-1] < 0.2
    for x, y in dataset_val.take(1):
        p = model.predict(x)
        print(p.shape, y.shape)
    return history

if __name__ == "__main__":
    main()
