"""Training throughput of a CNN: mylib `fit` against a hand-written `jax.jit` + flax +
optax loop and Keras 3 on JAX (where installed), in one process run.

    python benchmarks/fit_cnn.py [--epochs 5] [--repeats 3]

Model: Conv2D(32, 3, same, relu) -> MaxPooling2D(2) -> Conv2D(64, 3, same, relu) ->
Flatten -> Dense(10), Adam 1e-3, batch 64, on scikit-learn's 8x8 digits (1,797 images).
"""

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import flax.linen as nn  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import mylib as ml  # noqa: E402
from _harness import (EpochTimer, compare, keras_jax, keras_timer_callback,  # noqa: E402
                      mylib_timer_callback, run_flax_classifier)

BATCH = 64


def data():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return (x / 16.0).astype(np.float32).reshape(-1, 8, 8, 1), y.astype(np.int64)


class FlaxCNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(32, (3, 3), padding="SAME")(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.relu(nn.Conv(64, (3, 3), padding="SAME")(x))
        x = x.reshape((x.shape[0], -1))
        return nn.Dense(10)(x)


def run_flax(x, y, epochs):
    return run_flax_classifier(FlaxCNN(), jnp.zeros((1, 8, 8, 1), jnp.float32), x, y, BATCH,
                               epochs, 1e-3)


def run_mylib(x, y, epochs):
    timer = EpochTimer()
    model = ml.Sequential([
        ml.layers.Input((8, 8, 1)),
        ml.layers.Conv2D(32, 3, padding="same", activation="relu"),
        ml.layers.MaxPooling2D(2),
        ml.layers.Conv2D(64, 3, padding="same", activation="relu"),
        ml.layers.Flatten(),
        ml.layers.Dense(10),
    ])
    model.compile(optimizer=ml.optimizers.Adam(1e-3),
                  loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True))
    h = model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0,
                  callbacks=[mylib_timer_callback(timer)])
    return timer.times, h.history["loss"][-1]


def run_keras(x, y, epochs):
    keras = keras_jax()
    if keras is None:
        return None, None
    timer = EpochTimer()
    L = keras.layers
    model = keras.Sequential([keras.Input((8, 8, 1)),
                              L.Conv2D(32, 3, padding="same", activation="relu"),
                              L.MaxPooling2D(2),
                              L.Conv2D(64, 3, padding="same", activation="relu"),
                              L.Flatten(), L.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    h = model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0,
                  callbacks=[keras_timer_callback(timer)])
    return timer.times, h.history["loss"][-1]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    x, y = data()
    print(f"jax {jax.__version__}, devices {jax.devices()}")
    compare("digits CNN (conv32-pool-conv64-dense10), batch 64", len(x), [
        ("jax.jit + flax + optax (hand-written)", lambda e: run_flax(x, y, e)),
        ("mylib Model.fit", lambda e: run_mylib(x, y, e)),
        ("Keras 3 (JAX) Model.fit", lambda e: run_keras(x, y, e)),
    ], args.epochs, args.repeats)


if __name__ == "__main__":
    main()
