"""A variational autoencoder with a custom `train_step`, in the style of keras-io's
"Variational AutoEncoder" (Keras 3 version), on scikit-learn's 8x8 digits (no
download). The sampling layer draws with `keras.random.normal` and a `SeedGenerator`;
the gradient is `ml.gradients(total_loss, self.trainable_weights)`.

Run: python tests/programs/keras_vae_digits.py
"""

import numpy as np
from sklearn.datasets import load_digits

import mylib as ml
from mylib import keras
from mylib.keras import layers, ops
class Sampling(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = ops.shape(z_mean)[0]
        dim = ops.shape(z_mean)[1]
        epsilon = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


class VAE(keras.Model):
    def __init__(self, encoder, decoder, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder
        self.total_loss_tracker = keras.metrics.Mean(name="total_loss")
        self.reconstruction_loss_tracker = keras.metrics.Mean(name="reconstruction_loss")
        self.kl_loss_tracker = keras.metrics.Mean(name="kl_loss")

    @property
    def metrics(self):
        return [self.total_loss_tracker, self.reconstruction_loss_tracker,
                self.kl_loss_tracker]

    def train_step(self, data):
        z_mean, z_log_var, z = self.encoder(data)
        reconstruction = self.decoder(z)
        reconstruction_loss = ops.mean(ops.sum(
            keras.losses.binary_crossentropy(data, reconstruction), axis=(1, 2)))
        kl_loss = -0.5 * (1 + z_log_var - ops.square(z_mean) - ops.exp(z_log_var))
        kl_loss = ops.mean(ops.sum(kl_loss, axis=1))
        total_loss = reconstruction_loss + kl_loss
        grads = ml.gradients(total_loss, self.trainable_weights)  # the tape's gradient()
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.total_loss_tracker.update_state(total_loss)
        self.reconstruction_loss_tracker.update_state(reconstruction_loss)
        self.kl_loss_tracker.update_state(kl_loss)
        return {"loss": self.total_loss_tracker.result(),
                "reconstruction_loss": self.reconstruction_loss_tracker.result(),
                "kl_loss": self.kl_loss_tracker.result()}


def build(latent_dim=2):
    enc_in = keras.Input(shape=(8, 8, 1))
    x = layers.Flatten()(enc_in)
    x = layers.Dense(32, activation="relu")(x)
    z_mean = layers.Dense(latent_dim, name="z_mean")(x)
    z_log_var = layers.Dense(latent_dim, name="z_log_var")(x)
    z = Sampling()([z_mean, z_log_var])
    encoder = keras.Model(enc_in, [z_mean, z_log_var, z], name="encoder")
    lat_in = keras.Input(shape=(latent_dim,))
    x = layers.Dense(32, activation="relu")(lat_in)
    x = layers.Dense(64, activation="sigmoid")(x)
    decoder = keras.Model(lat_in, layers.Reshape((8, 8, 1))(x), name="decoder")
    return encoder, decoder


def main(epochs=8):
    keras.utils.set_random_seed(5)
    digits = (load_digits().images / 16.0).astype("float32")[..., None]
    encoder, decoder = build()
    vae = VAE(encoder, decoder)
    vae.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = vae.fit(digits, epochs=epochs, batch_size=64, verbose=0)
    print({k: [round(v, 3) for v in vs] for k, vs in history.history.items()})

    losses = history.history["loss"]
    assert losses[-1] < 0.8 * losses[0], losses
    # The decoder reconstructs better than the mean image does.
    z_mean, _, _ = encoder.predict(digits, verbose=0)
    recon = decoder.predict(z_mean, verbose=0)
    err = np.mean((recon - digits) ** 2)
    baseline = np.mean((digits.mean(0, keepdims=True) - digits) ** 2)
    print("reconstruction mse %.4f vs mean-image %.4f" % (err, baseline))
    assert err < 0.9 * baseline, (err, baseline)
    return losses


if __name__ == "__main__":
    main()
