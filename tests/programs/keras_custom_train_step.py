"""Overriding `train_step` and `test_step`, in the style of keras-io's "Customizing
what happens in fit()": a loss tracker and an MAE metric updated by hand.

The one change from the TensorFlow / JAX versions of that guide: the gradient comes
from mylib's graph autodiff, ``ml.gradients(loss, self.trainable_variables)``, in
place of ``tf.GradientTape`` or ``jax.grad``.

Run: python tests/programs/keras_custom_train_step.py
"""

import numpy as np

import mylib as ml
from mylib import keras
from mylib.keras import layers, ops


class CustomModel(keras.Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")

    def train_step(self, data):
        x, y = data
        y_pred = self(x, training=True)
        loss = ops.mean(ops.square(y - y_pred))
        trainable_vars = self.trainable_variables
        gradients = ml.gradients(loss, trainable_vars)
        self.optimizer.apply(gradients, trainable_vars)
        self.loss_tracker.update_state(loss)
        self.mae_metric.update_state(y, y_pred)
        return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

    def test_step(self, data):
        x, y = data
        y_pred = self(x, training=False)
        self.loss_tracker.update_state(ops.mean(ops.square(y - y_pred)))
        self.mae_metric.update_state(y, y_pred)
        return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

    @property
    def metrics(self):
        # Listed here so fit() / evaluate() reset them at the start of each epoch.
        return [self.loss_tracker, self.mae_metric]


def main(epochs=12):
    keras.utils.set_random_seed(2)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(600, 8)).astype("float32")
    y = (np.sin(3 * x[:, :1]) + x[:, 1:2] * x[:, 2:3] + 0.05 * rng.normal(size=(600, 1))
         ).astype("float32")

    inputs = keras.Input(shape=(8,))
    h = layers.Dense(64, activation="relu")(inputs)
    h = layers.Dense(64, activation="relu")(h)
    outputs = layers.Dense(1)(h)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=3e-3))

    baseline = float(np.mean((y - y.mean()) ** 2))
    history = model.fit(x[:500], y[:500], epochs=epochs, batch_size=32, verbose=0)
    logs = model.evaluate(x[500:], y[500:], verbose=0, return_dict=True)
    print("history:", {k: [round(v, 4) for v in vs] for k, vs in history.history.items()})
    print("test:", logs, "baseline mse:", baseline)

    assert history.history["loss"][-1] < 0.3 * history.history["loss"][0]
    assert logs["loss"] < 0.3 * baseline, (logs, baseline)
    return logs


if __name__ == "__main__":
    main()
