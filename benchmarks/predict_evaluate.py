"""`predict` and `evaluate` throughput: mylib against a hand-written jitted forward loop
(and Keras 3 on JAX, where installed), in one process run.

    python benchmarks/predict_evaluate.py [--passes 20] [--repeats 3] [--batch 32]

Model: the digits MLP of `fit_mlp.py` (64-128-10), scikit-learn's 1,797 digits, batch
32: 57 batches a pass, the last one of 5 samples. The hand-written loops jit the
forward pass (predict: the logits of each batch, gathered and concatenated on the
host; evaluate: the summed cross-entropy and correct count of each batch, accumulated
on the device and read once), over the same batches including the last partial one.
samples/s is the median over passes after the first (which includes compilation);
repeats rotate the runners.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

import mylib as ml  # noqa: E402
from _harness import compare, keras_jax  # noqa: E402
from fit_mlp import digits_data  # noqa: E402


def init(sizes, seed=0):
    rng = np.random.default_rng(seed)
    ws = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        lim = np.sqrt(6.0 / (a + b))
        ws.append((rng.uniform(-lim, lim, (a, b)).astype(np.float32),
                   np.zeros((b,), np.float32)))
    return ws


def forward(p, xb):
    h = xb
    for i, (w, b) in enumerate(p):
        h = h @ w + b
        if i < len(p) - 1:
            h = jax.nn.relu(h)
    return h


def run_jax_predict(x, weights, batch, passes):
    p = [(jnp.asarray(w), jnp.asarray(b)) for w, b in weights]
    fwd = jax.jit(forward)
    times, out = [], None
    for _ in range(passes):
        t0 = time.perf_counter()
        chunks = [fwd(p, x[i:i + batch]) for i in range(0, len(x), batch)]
        out = np.concatenate([np.asarray(c) for c in chunks])
        times.append(time.perf_counter() - t0)
    return times, float(out.sum())


def run_jax_evaluate(x, y, weights, batch, passes):
    p = [(jnp.asarray(w), jnp.asarray(b)) for w, b in weights]

    @jax.jit
    def acc(p, xb, yb, tot):
        lg = forward(p, xb)
        loss = optax.softmax_cross_entropy_with_integer_labels(lg, yb).sum()
        hit = (jnp.argmax(lg, -1) == yb).sum().astype(jnp.float32)
        return tot + jnp.stack([loss, hit])

    times, res = [], None
    for _ in range(passes):
        t0 = time.perf_counter()
        tot = jnp.zeros(2, jnp.float32)
        for i in range(0, len(x), batch):
            tot = acc(p, x[i:i + batch], y[i:i + batch], tot)
        res = np.asarray(tot) / len(x)
        times.append(time.perf_counter() - t0)
    return times, float(res[0])


def mylib_model(sizes, weights):
    layers = [ml.layers.Input((sizes[0],))]
    layers += [ml.layers.Dense(s, activation="relu") for s in sizes[1:-1]]
    layers.append(ml.layers.Dense(sizes[-1]))
    model = ml.Sequential(layers)
    model.compile(optimizer=ml.optimizers.Adam(1e-3),
                  loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.set_weights([a for wb in weights for a in wb])
    return model


def keras_model(sizes, weights):
    keras = keras_jax()
    if keras is None:
        return None
    model = keras.Sequential([keras.Input((sizes[0],))] +
                             [keras.layers.Dense(s, activation="relu") for s in sizes[1:-1]] +
                             [keras.layers.Dense(sizes[-1])])
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.set_weights([a for wb in weights for a in wb])
    return model


def timed(fn, passes):
    times, out = [], None
    for _ in range(passes):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--passes", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch", type=int, default=32)
    args = p.parse_args(argv)
    x, y, sizes, _ = digits_data()
    y = y.astype(np.int32)
    b = args.batch
    weights = init(sizes)
    print(f"jax {jax.__version__}, devices {jax.devices()}, {len(x)} samples, batch {b} "
          f"({-(-len(x) // b)} batches, the last of {len(x) % b or b})")

    def mylib_predict(e):
        m = mylib_model(sizes, weights)
        t, out = timed(lambda: m.predict(x, batch_size=b, verbose=0), e)
        return t, float(np.sum(out))

    def keras_predict(e):
        m = keras_model(sizes, weights)
        if m is None:
            return None, None
        t, out = timed(lambda: m.predict(x, batch_size=b, verbose=0), e)
        return t, float(np.sum(out))

    def mylib_evaluate(e):
        m = mylib_model(sizes, weights)
        t, out = timed(lambda: m.evaluate(x, y, batch_size=b, verbose=0), e)
        return t, float(out[0])

    def keras_evaluate(e):
        m = keras_model(sizes, weights)
        if m is None:
            return None, None
        t, out = timed(lambda: m.evaluate(x, y, batch_size=b, verbose=0), e)
        return t, float(out[0])

    pred = compare(f"predict, digits MLP, batch {b} (loss column: sum of the outputs)",
                   len(x), [
                       ("jitted forward loop (hand-written)",
                        lambda e: run_jax_predict(x, weights, b, e)),
                       ("mylib Model.predict", mylib_predict),
                       ("Keras 3 (JAX) Model.predict", keras_predict),
                   ], args.passes, args.repeats)
    ev = compare(f"evaluate, digits MLP, batch {b} (loss column: mean loss)", len(x), [
        ("jitted loss/accuracy loop (hand-written)",
         lambda e: run_jax_evaluate(x, y, weights, b, e)),
        ("mylib Model.evaluate", mylib_evaluate),
        ("Keras 3 (JAX) Model.evaluate", keras_evaluate),
    ], args.passes, args.repeats)
    return pred, ev


if __name__ == "__main__":
    main()
