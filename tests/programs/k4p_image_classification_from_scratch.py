"""A Keras 3 user program in the style of keras-io's "Image classification from
scratch": a folder of images per class read with
`keras.utils.image_dataset_from_directory` (validation_split, subset="both", seed),
data augmentation layers inside the model, Rescaling, a small Xception-like network
(SeparableConv2D blocks with strided 1x1 Conv2D residuals added by `layers.add`),
a checkpoint callback, then prediction on one image loaded with `load_img`.

Only the imports and the data differ from a Keras 3 program: the Cats-vs-Dogs JPEGs are
replaced by generated PNGs (class "stripes": horizontal bands, class "rings":
concentric circles, both with noise and random colour, of mixed sizes, so the loader
resizes them); the network has one residual block instead of four, and its
BatchNormalization layers momentum 0.9 so that the moving statistics settle within the
few dozen steps of this small run.
Run: python tests/programs/k4p_image_classification_from_scratch.py
"""

import os
import tempfile

import numpy as np
from PIL import Image

from mylib import keras
from mylib.keras import layers

image_size = (24, 24)


def write_images(root, n_per_class, rng):
    for cls in ("rings", "stripes"):
        os.makedirs(os.path.join(root, cls), exist_ok=True)
        for i in range(n_per_class):
            h, w = (int(v) for v in rng.integers(20, 36, size=2))
            yy, xx = np.mgrid[0:h, 0:w].astype("float32")
            period = rng.uniform(4, 7)
            if cls == "stripes":
                wave = np.sin(2 * np.pi * yy / period + rng.uniform(0, 6))
            else:
                r = np.hypot(yy - h / 2, xx - w / 2)
                wave = np.sin(2 * np.pi * r / period)
            colour = rng.uniform(0.3, 1.0, size=3)
            img = (0.5 + 0.4 * wave)[..., None] * colour + 0.1 * rng.normal(size=(h, w, 3))
            img = np.clip(img * 255, 0, 255).astype("uint8")
            Image.fromarray(img).save(os.path.join(root, cls, f"{i:03d}.png"))


def make_model(input_shape, num_classes):
    data_augmentation = keras.Sequential([layers.RandomFlip("horizontal"),
                                          layers.RandomRotation(0.05)])
    inputs = keras.Input(shape=input_shape)
    x = data_augmentation(inputs)
    x = layers.Rescaling(1.0 / 255)(x)
    x = layers.Conv2D(16, 3, strides=2, padding="same")(x)
    x = layers.BatchNormalization(momentum=0.9)(x)
    x = layers.Activation("relu")(x)
    previous_block_activation = x
    for size in [32]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization(momentum=0.9)(x)
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization(momentum=0.9)(x)
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
        residual = layers.Conv2D(size, 1, strides=2, padding="same")(
            previous_block_activation)
        x = layers.add([x, residual])
        previous_block_activation = x
    x = layers.SeparableConv2D(32, 3, padding="same")(x)
    x = layers.BatchNormalization(momentum=0.9)(x)
    x = layers.Activation("relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    if num_classes == 2:
        units = 1
    else:
        units = num_classes
    x = layers.Dropout(0.25)(x)
    outputs = layers.Dense(units, activation=None)(x)
    return keras.Model(inputs, outputs)


def main(epochs=8):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as root:
        write_images(os.path.join(root, "PetImages"), 60, rng)
        train_ds, val_ds = keras.utils.image_dataset_from_directory(
            os.path.join(root, "PetImages"), validation_split=0.25, subset="both",
            seed=1337, image_size=image_size, batch_size=8)
        assert train_ds.class_names == ["rings", "stripes"]
        model = make_model(input_shape=image_size + (3,), num_classes=2)
        model.compile(optimizer=keras.optimizers.Adam(3e-3),
                      loss=keras.losses.BinaryCrossentropy(from_logits=True),
                      metrics=[keras.metrics.BinaryAccuracy(name="acc")])
        callbacks = [keras.callbacks.ModelCheckpoint(
            os.path.join(root, "save_at_{epoch}.keras"))]
        history = model.fit(train_ds, epochs=epochs, callbacks=callbacks,
                            validation_data=val_ds, verbose=2)
        assert os.path.exists(os.path.join(root, f"save_at_{epochs}.keras"))
        loss, acc = model.evaluate(val_ds, verbose=0)
        print("validation loss", loss, "accuracy", acc)
        assert history.history["loss"][-1] < history.history["loss"][0]
        assert acc > 0.85, acc

        path = val_ds.file_paths[0]
        img = keras.utils.load_img(path, target_size=image_size)
        img_array = keras.utils.img_to_array(img)
        img_array = keras.ops.expand_dims(img_array, 0)
        predictions = model.predict(img_array, verbose=0)
        score = float(keras.ops.sigmoid(predictions[0][0]))
        print(f"{path}: {100 * (1 - score):.2f}% rings and {100 * score:.2f}% stripes.")
        assert 0.0 <= score <= 1.0
    return history


if __name__ == "__main__":
    main()
