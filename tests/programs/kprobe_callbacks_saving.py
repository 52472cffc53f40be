"""A Keras 3 user program in the style of keras-io's callbacks (ModelCheckpoint .keras,
EarlyStopping, ReduceLROnPlateau, TensorBoard, CSVLogger), load_model, feature
extractors, fine-tuning, eager loss, plot_model's message.

Only the import line (`from mylib import keras`) and the data differ from a Keras 3
program. Run: python tests/programs/kprobe_callbacks_saving.py
"""

import os, tempfile
import numpy as np
from mylib import keras
from mylib.keras import layers
from sklearn.datasets import load_digits

def main(epochs=30):
    keras.utils.set_random_seed(0)
    tmp = tempfile.mkdtemp()
    d = load_digits()
    x = (d.data / 16.0).astype("float32"); y = d.target
    x_train, y_train, x_test, y_test = x[:1400], y[:1400], x[1400:], y[1400:]
    inputs = keras.Input(shape=(64,), name="digits")
    h1 = layers.Dense(32, activation="relu", name="dense_1")(inputs)
    h2 = layers.Dense(32, activation="relu", name="dense_2")(h1)
    outputs = layers.Dense(10, name="predictions")(h2)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.summary()
    model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[keras.metrics.SparseCategoricalAccuracy()])
    ckpt = os.path.join(tmp, "best.keras")
    callbacks = [
        keras.callbacks.ModelCheckpoint(ckpt, save_best_only=True, monitor="val_loss", verbose=1),
        keras.callbacks.EarlyStopping(monitor="val_loss", patience=3, restore_best_weights=True, verbose=1),
        keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2, min_lr=1e-5),
        keras.callbacks.TensorBoard(log_dir=os.path.join(tmp, "logs")),
        keras.callbacks.CSVLogger(os.path.join(tmp, "log.csv")),
    ]
    history = model.fit(x_train, y_train, batch_size=64, epochs=epochs, validation_split=0.2, callbacks=callbacks)
    print(history.history.keys())
    results = model.evaluate(x_test, y_test, batch_size=128)
    print("test loss, test acc:", results)
    assert results[1] > 0.85
    preds = model.predict(x_test[:3]); print("predictions shape:", preds.shape)
    loaded = keras.models.load_model(ckpt)
    np.testing.assert_allclose(loaded.predict(x_test, verbose=0), model.predict(x_test, verbose=0), rtol=1e-5, atol=1e-5)
    model.save(os.path.join(tmp, "final.keras"))
    re = keras.models.load_model(os.path.join(tmp, "final.keras"))
    np.testing.assert_allclose(re.predict(x_test, verbose=0), model.predict(x_test, verbose=0), rtol=1e-5, atol=1e-5)
    print(open(os.path.join(tmp, "log.csv")).read()[:300])
    print(os.listdir(os.path.join(tmp, "logs")))
    # feature extractor
    extractor = keras.Model(inputs=model.inputs, outputs=[l.output for l in model.layers])
    feats = extractor(x_test[:4])
    print([np.asarray(f).shape for f in feats])
    fe2 = keras.Model(inputs=model.inputs, outputs=model.get_layer(name="dense_2").output)
    f2 = fe2.predict(x_test[:4], verbose=0); print(f2.shape)
    # fine-tune
    model.get_layer("dense_1").trainable = False
    model.compile(optimizer=keras.optimizers.Adam(1e-4), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    w_before = model.get_layer("dense_1").get_weights()[0].copy()
    model.fit(x_train, y_train, epochs=1, verbose=0)
    np.testing.assert_array_equal(model.get_layer("dense_1").get_weights()[0], w_before)
    print(len(model.trainable_weights), len(model.non_trainable_weights))
    # eager losses / metrics
    logits = model.predict(x_test, verbose=0)
    l = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y_test, logits)
    print("eager loss", type(l), float(l))
    assert abs(float(l) - results[0]) < 0.5
    m = keras.metrics.SparseCategoricalAccuracy()
    m.update_state(y_test, logits)
    print("eager accuracy", float(m.result()))
    assert abs(float(m.result()) - np.mean(logits.argmax(1) == y_test)) < 1e-6
    print(keras.ops.convert_to_numpy(keras.ops.softmax(logits[:2])))
    try:
        keras.utils.plot_model(model, to_file=os.path.join(tmp, "m.png"), show_shapes=True)
    except Exception as e:
        print("plot_model:", type(e).__name__, e)
    return results

if __name__ == "__main__":
    main()
