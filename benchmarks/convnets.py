"""Training throughput of the two convnets of issue 13 on CPU: mylib `fit` against a
hand-written `jax.jit` + flax + optax loop, Keras 3 on JAX (where installed) and Keras 3
on TensorFlow (where a Python with TensorFlow is given or this one has it), in one run.

    python benchmarks/convnets.py [--model A B] [--epochs 3] [--repeats 3] [--n 256]
                                  [--tf-python PATH]

Keras on TensorFlow runs in a process of its own per repeat (`_keras_tf_worker.py`:
Keras picks one backend per process), started from this one between the other rows.

- A: Conv2D(64, 5) -> MaxPool(2) -> Conv2D(128, 5) -> MaxPool(2) -> Dense(256) ->
  Dense(10) on 32x32x3 images.
- B: 2 x Conv2D(32, 3) -> MaxPool(2) -> 2 x Conv2D(32, 3) -> MaxPool(2) ->
  2 x Conv2D(64, 3) -> MaxPool(2) -> Dense(256) -> Dense(10) on 32x32x3 images.

'same' padding and ReLU on every convolution and the hidden Dense, pools 2x2 stride
2; SGD (learning rate 0.01, momentum 0.9), batch 32, softmax cross-entropy on `--n`
random images with 10 random classes.
"""

from __future__ import annotations

import argparse
import functools
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import flax.linen as nn  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

import mylib as ml  # noqa: E402
from _harness import (EpochTimer, compare, hand_loop, keras_jax,  # noqa: E402
                      keras_tf_runner, keras_timer_callback, mylib_timer_callback,
                      tf_python)

BATCH, LR, MOMENTUM = 32, 0.01, 0.9
# (kind, size): ("conv", (filters, kernel)), ("pool", None), ("dense", units)
SPECS = {
    "A": [("conv", (64, 5)), ("pool", None), ("conv", (128, 5)), ("pool", None),
          ("dense", 256)],
    "B": [("conv", (32, 3)), ("conv", (32, 3)), ("pool", None), ("conv", (32, 3)),
          ("conv", (32, 3)), ("pool", None), ("conv", (64, 3)), ("conv", (64, 3)),
          ("pool", None), ("dense", 256)],
}


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, 32, 32, 3)).astype(np.float32),
            rng.integers(0, 10, n).astype(np.int32))


class FlaxNet(nn.Module):
    spec: tuple

    @nn.compact
    def __call__(self, x):
        flat = False
        for kind, size in self.spec:
            if kind == "conv":
                x = nn.relu(nn.Conv(size[0], (size[1], size[1]), padding="SAME")(x))
            elif kind == "pool":
                x = nn.max_pool(x, (2, 2), strides=(2, 2))
            else:
                if not flat:
                    x, flat = x.reshape((x.shape[0], -1)), True
                x = nn.relu(nn.Dense(size)(x))
        return nn.Dense(10)(x)


def run_flax(spec, x, y, epochs):
    model = FlaxNet(tuple(spec))
    params = model.init(jax.random.key(0), jnp.zeros((1, 32, 32, 3), jnp.float32))
    tx = optax.sgd(LR, momentum=MOMENTUM)
    state = tx.init(params)

    def loss_fn(p, xb, yb):
        return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, xb), yb).mean()

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def step(p, s, xb, yb):
        g = jax.grad(loss_fn)(p, xb, yb)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    times, params = hand_loop(step, params, state, x, y, BATCH, epochs)
    return times, float(jax.jit(loss_fn)(params, x[:256], y[:256]))


def _layers(L, spec, input_layer):
    out = [input_layer]
    flat = False
    for kind, size in spec:
        if kind == "conv":
            out.append(L.Conv2D(size[0], size[1], padding="same", activation="relu"))
        elif kind == "pool":
            out.append(L.MaxPooling2D(2))
        else:
            if not flat:
                out.append(L.Flatten())
                flat = True
            out.append(L.Dense(size, activation="relu"))
    out.append(L.Dense(10))
    return out


def run_mylib(spec, x, y, epochs):
    timer = EpochTimer()
    model = ml.Sequential(_layers(ml.layers, spec, ml.layers.Input((32, 32, 3))))
    model.compile(optimizer=ml.optimizers.SGD(LR, momentum=MOMENTUM),
                  loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True))
    h = model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0,
                  callbacks=[mylib_timer_callback(timer)])
    return timer.times, h.history["loss"][-1]


def run_keras(spec, x, y, epochs, keras=None):
    keras = keras or keras_jax()
    if keras is None:
        return None, None
    timer = EpochTimer()
    model = keras.Sequential(_layers(keras.layers, spec, keras.Input((32, 32, 3))))
    model.compile(optimizer=keras.optimizers.SGD(LR, momentum=MOMENTUM),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    h = model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0,
                  callbacks=[keras_timer_callback(timer)])
    return timer.times, h.history["loss"][-1]


def keras_tf_row(keras, model, n, epochs):
    """The Keras 3 on TensorFlow row (run by `_keras_tf_worker.py`)."""
    x, y = data(n)
    return run_keras(SPECS[model], x, y, epochs, keras=keras)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", nargs="+", default=["A", "B"], choices=sorted(SPECS))
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--tf-python", help="a Python with tensorflow and keras for the Keras "
                   "on TensorFlow rows (default: this one if it has tensorflow)")
    args = p.parse_args(argv)
    x, y = data(args.n)
    tf_py = tf_python(args.tf_python)
    print(f"jax {jax.__version__}, devices {jax.devices()}; Keras on TensorFlow: "
          f"{tf_py or 'no Python with TensorFlow given'}")
    for name in args.model:
        spec = SPECS[name]
        compare(f"convnet {name}, batch {BATCH}, SGD momentum", len(x), [
            ("jax.jit + flax + optax (hand-written)",
             functools.partial(run_flax, spec, x, y)),
            ("mylib Model.fit", functools.partial(run_mylib, spec, x, y)),
            ("Keras 3 (JAX) Model.fit", functools.partial(run_keras, spec, x, y)),
            ("Keras 3 (TensorFlow) Model.fit",
             keras_tf_runner(tf_py, "convnets", model=name, n=args.n)),
        ], args.epochs, args.repeats)


if __name__ == "__main__":
    main()
