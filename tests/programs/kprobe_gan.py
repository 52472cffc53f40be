"""A Keras 3 user program in the style of keras-io's 'GAN overriding train_step' (two
optimizers, custom compile; 2-D Gaussian data).

Only the import line (`from mylib import keras`), the data and the gradient idiom
(`ml.GradientTape` in place of the backend's tape, docs/compatibility_keras.md) differ
from a Keras 3 program. Run: python tests/programs/kprobe_gan.py
"""

import numpy as np
import mylib as ml
from mylib import keras
from mylib.keras import layers, ops

class GAN(keras.Model):
    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.seed_generator = keras.random.SeedGenerator(1337)

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn
        self.d_loss_metric = keras.metrics.Mean(name="d_loss")
        self.g_loss_metric = keras.metrics.Mean(name="g_loss")

    @property
    def metrics(self):
        return [self.d_loss_metric, self.g_loss_metric]

    def train_step(self, real_images):
        batch_size = ops.shape(real_images)[0]
        random_latent_vectors = keras.random.normal(
            shape=(batch_size, self.latent_dim), seed=self.seed_generator)
        generated_images = self.generator(random_latent_vectors)
        combined_images = ops.concatenate([generated_images, real_images], axis=0)
        labels = ops.concatenate([ops.ones((batch_size, 1)), ops.zeros((batch_size, 1))], axis=0)
        labels += 0.05 * keras.random.uniform(ops.shape(labels), seed=self.seed_generator)
        with ml.GradientTape() as tape:
            predictions = self.discriminator(combined_images)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        random_latent_vectors = keras.random.normal(
            shape=(batch_size, self.latent_dim), seed=self.seed_generator)
        misleading_labels = ops.zeros((batch_size, 1))
        with ml.GradientTape() as tape:
            predictions = self.discriminator(self.generator(random_latent_vectors))
            g_loss = self.loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        self.d_loss_metric.update_state(d_loss)
        self.g_loss_metric.update_state(g_loss)
        return {"d_loss": self.d_loss_metric.result(), "g_loss": self.g_loss_metric.result()}

def main(epochs=8):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    # "images": points on a ring in 2-D
    real = rng.normal(3.0, 0.5, size=(2048, 2)).astype("float32")
    latent_dim = 4
    discriminator = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(32), layers.LeakyReLU(negative_slope=0.2),
                                      layers.Dense(32), layers.LeakyReLU(negative_slope=0.2), layers.Dense(1, activation="sigmoid")], name="discriminator")
    generator = keras.Sequential([keras.Input(shape=(latent_dim,)), layers.Dense(32), layers.LeakyReLU(negative_slope=0.2),
                                  layers.Dense(32, activation="relu"), layers.Dense(2)], name="generator")
    gan = GAN(discriminator=discriminator, generator=generator, latent_dim=latent_dim)
    gan.compile(d_optimizer=keras.optimizers.Adam(learning_rate=0.002),
                g_optimizer=keras.optimizers.Adam(learning_rate=0.002),
                loss_fn=keras.losses.BinaryCrossentropy())
    before = generator.predict(rng.normal(size=(500, latent_dim)).astype("float32"), verbose=0)
    h = gan.fit(real, epochs=epochs, batch_size=64)
    print(h.history)
    after = generator.predict(rng.normal(size=(500, latent_dim)).astype("float32"), verbose=0)
    r_before = np.abs(before.mean(0) - 3.0).mean()
    r_after = np.abs(after.mean(0) - 3.0).mean()
    print("mean distance before/after", r_before, r_after)
    assert r_after < 0.6 * r_before
    return h

if __name__ == "__main__":
    main()
