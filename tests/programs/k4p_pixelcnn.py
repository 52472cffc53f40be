"""A Keras 3 user program in the style of keras-io's "PixelCNN": a layer that builds
its own Conv2D in `build` and masks the kernel in `call` with
``self.conv.kernel.assign(self.conv.kernel * self.mask)`` (mask type "A" hides the
centre pixel, "B" shows it), residual blocks as Layer subclasses with
`keras.layers.add`, a fixed batch size on the Input, binary cross-entropy training,
then pixel-by-pixel sampling with `predict` and `keras.random.uniform`.

Only the imports and the data differ from a Keras 3 program: MNIST is replaced by
scikit-learn's 8x8 digits, binarized as keras-io binarizes MNIST; the network is
smaller. It asserts the loss falls and that the trained network is causal: changing
a pixel changes no prediction at or before it in raster order.
Run: python tests/programs/k4p_pixelcnn.py
"""

import numpy as np
from sklearn.datasets import load_digits

from mylib import keras
from mylib.keras import layers, ops

input_shape = (8, 8, 1)
n_residual_blocks = 2


class PixelConvLayer(layers.Layer):
    def __init__(self, mask_type, **kwargs):
        super().__init__()
        self.mask_type = mask_type
        self.conv = layers.Conv2D(**kwargs)

    def build(self, input_shape):
        # Build the conv layer to initialize kernel variables
        self.conv.build(input_shape)
        # Use the initialized kernel to create the mask
        kernel_shape = ops.shape(self.conv.kernel)
        self.mask = np.zeros(shape=kernel_shape)
        self.mask[: kernel_shape[0] // 2, ...] = 1.0
        self.mask[kernel_shape[0] // 2, : kernel_shape[1] // 2, ...] = 1.0
        if self.mask_type == "B":
            self.mask[kernel_shape[0] // 2, kernel_shape[1] // 2, ...] = 1.0

    def call(self, inputs):
        self.conv.kernel.assign(self.conv.kernel * self.mask)
        return self.conv(inputs)


class ResidualBlock(keras.layers.Layer):
    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.conv1 = keras.layers.Conv2D(filters=filters, kernel_size=1, activation="relu")
        self.pixel_conv = PixelConvLayer(mask_type="B", filters=filters // 2, kernel_size=3,
                                         activation="relu", padding="same")
        self.conv2 = keras.layers.Conv2D(filters=filters, kernel_size=1, activation="relu")

    def call(self, inputs):
        x = self.conv1(inputs)
        x = self.pixel_conv(x)
        x = self.conv2(x)
        return keras.layers.add([inputs, x])


def main(epochs=4):
    keras.utils.set_random_seed(0)
    digits = load_digits()
    data = np.where(digits.images < (0.33 * 16), 0, 1).astype(np.float32)[..., None]

    inputs = keras.Input(shape=input_shape, batch_size=32)
    x = PixelConvLayer(mask_type="A", filters=32, kernel_size=5, activation="relu",
                       padding="same")(inputs)
    for _ in range(n_residual_blocks):
        x = ResidualBlock(filters=32)(x)
    for _ in range(2):
        x = PixelConvLayer(mask_type="B", filters=32, kernel_size=1, strides=1,
                           activation="relu", padding="valid")(x)
    out = keras.layers.Conv2D(filters=1, kernel_size=1, strides=1, activation="sigmoid",
                              padding="valid")(x)
    pixel_cnn = keras.Model(inputs, out)
    pixel_cnn.compile(optimizer=keras.optimizers.Adam(learning_rate=0.003),
                      loss="binary_crossentropy")
    pixel_cnn.summary()
    history = pixel_cnn.fit(x=data, y=data, batch_size=32, epochs=epochs,
                            validation_split=0.1, verbose=2)
    assert history.history["loss"][-1] < 0.8 * history.history["loss"][0], history.history

    # Causality of the trained network: flipping pixel (r, c) changes no prediction at
    # (r, c) or before it in raster order.
    probe = data[:32].copy()
    base = pixel_cnn.predict(probe, verbose=0)[..., 0]
    for r, c in [(0, 0), (3, 4), (7, 7)]:
        flipped = probe.copy()
        flipped[:, r, c, 0] = 1.0 - flipped[:, r, c, 0]
        diff = np.abs(pixel_cnn.predict(flipped, verbose=0)[..., 0] - base).reshape(32, -1)
        assert diff[:, : r * 8 + c + 1].max() == 0.0, (r, c)
        if (r, c) != (7, 7):
            assert diff[:, r * 8 + c + 1:].max() > 0.0, (r, c)

    # Sampling, as keras-io does it.
    batch = 4
    pixels = np.zeros(shape=(batch,) + (pixel_cnn.input_shape)[1:])
    rows, cols, channels = pixels.shape[1:]
    for row in range(rows):
        for col in range(cols):
            for channel in range(channels):
                probs = pixel_cnn.predict(pixels, verbose=0)[:, row, col, channel]
                pixels[:, row, col, channel] = ops.ceil(
                    probs - keras.random.uniform(probs.shape))
    assert set(np.unique(pixels)) <= {0.0, 1.0}
    print("sampled ink fraction", pixels.mean(), "data", data.mean())
    return history


if __name__ == "__main__":
    main()
