"""A custom layer written with `keras.ops` (backend-neutral Keras 3 code) on the
two-moons problem: an RBF layer with trainable centres and widths, then a logistic
output; in the style of keras-io's "Making new layers and models via subclassing".

Run: python tests/programs/keras_ops_custom_layer.py
"""

import numpy as np
from sklearn.datasets import make_moons

from mylib import keras
from mylib.keras import layers, ops


@keras.saving.register_keras_serializable(package="programs")
class RBF(layers.Layer):
    """exp(-gamma_j * |x - c_j|^2) for `units` trainable centres c_j."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.centers = self.add_weight(name="centers", shape=(self.units, input_shape[-1]),
                                       initializer=keras.initializers.RandomUniform(-1.5, 2.5))
        self.log_gamma = self.add_weight(name="log_gamma", shape=(self.units,),
                                         initializer="zeros")

    def call(self, x):
        diff = ops.expand_dims(x, 1) - ops.expand_dims(self.centers, 0)  # [b, units, d]
        dist2 = ops.sum(ops.square(diff), axis=-1)
        return ops.exp(-ops.exp(self.log_gamma) * dist2)

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def main(epochs=40):
    keras.utils.set_random_seed(4)
    x, y = make_moons(n_samples=600, noise=0.15, random_state=0)
    x, y = x.astype("float32"), y.astype("float32")

    inputs = keras.Input(shape=(2,))
    h = RBF(16)(inputs)
    outputs = layers.Dense(1, activation="sigmoid")(h)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="binary_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x[:500], y[:500], batch_size=50, epochs=epochs, verbose=0)
    loss, acc = model.evaluate(x[500:], y[500:], verbose=0)
    print("test loss %.4f, accuracy %.4f" % (loss, acc))

    # The same layer on arrays: keras.ops runs eagerly and agrees with the graph.
    layer = model.layers[1]
    c, lg = layer.get_weights()
    feats = np.exp(-np.exp(lg) * ((x[:5, None, :] - c[None]) ** 2).sum(-1))
    np.testing.assert_allclose(np.asarray(layer(x[:5])), feats, rtol=1e-5, atol=1e-6)

    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert acc > 0.9, acc  # a linear model gets about 0.85
    return acc


if __name__ == "__main__":
    main()
