"""Training throughput of `Model.fit` against a hand-written `jax.jit` + optax loop and
Keras 3 on JAX (where installed), in one process run.

    python benchmarks/fit_mlp.py [--epochs 6] [--only digits|large]

Two workloads: the digits MLP of the main job (64-128-10, batch 32, scikit-learn's
digits) and a larger MLP (784-1024-1024-10, batch 128, random data). Each system trains
the same model with Adam on the same batches; samples/s is the median over epochs after
the first (which includes compilation, reported separately). Ratios are against the
hand-written loop, which does the least work possible per step: slice a numpy batch,
call one jitted function that updates parameters and optimizer state.
`benchmarks/fit_steps_per_execution.py` compares ``compile(steps_per_execution=k)``.
"""

from __future__ import annotations

import argparse
import functools
import os
import time

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

import mylib as ml  # noqa: E402
from _harness import (EpochTimer, compare, keras_jax, keras_timer_callback,  # noqa: E402
                      mylib_timer_callback)


def digits_data():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x = ((x - x.mean(0)) / (x.std(0) + 1e-6)).astype(np.float32)
    return x, y.astype(np.int64), [64, 128, 10], 32


def large_data(n=8192, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 784)).astype(np.float32)
    y = rng.integers(0, 10, n).astype(np.int64)
    return x, y, [784, 1024, 1024, 10], 128


# ---------------------------------------------------------------- hand-written JAX
def jax_epochs(x, y, sizes, batch, lr=1e-3, seed=0):
    """The hand-written loop as ``(epoch, mean_loss)``: `epoch()` trains one shuffled
    pass and returns its wall time (seconds); `mean_loss()` is the loss over all of
    the data."""
    rng = np.random.default_rng(seed)
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        lim = np.sqrt(6.0 / (a + b))
        params.append((jnp.asarray(rng.uniform(-lim, lim, (a, b)), jnp.float32),
                       jnp.zeros((b,), jnp.float32)))
    tx = optax.adam(lr, eps=1e-7)
    state = [params, tx.init(params)]

    def loss_fn(p, xb, yb):
        h = xb
        for i, (w, b) in enumerate(p):
            h = h @ w + b
            if i < len(p) - 1:
                h = jax.nn.relu(h)
        return optax.softmax_cross_entropy_with_integer_labels(h, yb).mean()

    # Parameters and optimizer state are donated, as a well-written loop does (and as
    # mylib's compiled step does for the variables it updates).
    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def step(p, s, xb, yb):
        loss, g = jax.value_and_grad(loss_fn)(p, xb, yb)
        upd, s = tx.update(g, s, p)
        return optax.apply_updates(p, upd), s, loss

    n = len(x)

    def epoch():
        t0 = time.perf_counter()
        perm = rng.permutation(n)
        xs, ys = x[perm], y[perm]
        params, opt_state = state
        for i in range(0, n, batch):
            params, opt_state, _ = step(params, opt_state, xs[i:i + batch],
                                        ys[i:i + batch])
        jax.block_until_ready(params)
        state[:] = [params, opt_state]
        return time.perf_counter() - t0

    return epoch, lambda: float(jax.jit(loss_fn)(state[0], x, y))


def run_jax(x, y, sizes, batch, epochs, lr=1e-3, seed=0):
    epoch, mean_loss = jax_epochs(x, y, sizes, batch, lr, seed)
    times = [epoch() for _ in range(epochs)]
    # Mean loss over the training data after training (outside the timed epochs).
    return times, mean_loss()


def run_mylib(x, y, sizes, batch, epochs, lr=1e-3, steps_per_execution=None, callbacks=()):
    """mylib's `fit`; `steps_per_execution` None is compile's default (one step per
    call, grouped by fit itself on long enough fits), an int is passed as given."""
    timer = EpochTimer()
    layers = [ml.layers.Input((sizes[0],))]
    for s in sizes[1:-1]:
        layers.append(ml.layers.Dense(s, activation="relu"))
    layers.append(ml.layers.Dense(sizes[-1]))
    model = ml.Sequential(layers)
    kw = {} if steps_per_execution is None else {"steps_per_execution": steps_per_execution}
    model.compile(optimizer=ml.optimizers.Adam(lr),
                  loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True), **kw)
    hist = model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0,
                     callbacks=[mylib_timer_callback(timer), *callbacks])
    return timer.times, hist.history["loss"][-1]


# ---------------------------------------------------------------- Keras 3 on JAX
def run_keras(x, y, sizes, batch, epochs, lr=1e-3):
    keras = keras_jax()
    if keras is None:
        return None, None
    timer = EpochTimer()
    model = keras.Sequential([keras.Input((sizes[0],))] +
                             [keras.layers.Dense(s, activation="relu") for s in sizes[1:-1]] +
                             [keras.layers.Dense(sizes[-1])])
    model.compile(optimizer=keras.optimizers.Adam(lr),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0,
                     callbacks=[keras_timer_callback(timer)])
    return timer.times, hist.history["loss"][-1]


def main(argv=None):
    p = argparse.ArgumentParser(description="fit throughput: mylib vs jax.jit loop vs Keras 3")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--only", choices=["digits", "large"], default=None)
    p.add_argument("--repeats", type=int, default=3, help="rotations of the three systems")
    args = p.parse_args(argv)
    workloads = [("digits MLP 64-128-10, batch 32", digits_data),
                 ("MLP 784-1024-1024-10, batch 128", large_data)]
    if args.only:
        workloads = [w for w in workloads if w[0].startswith("digits") == (args.only == "digits")]
    print(f"jax {jax.__version__}, devices {jax.devices()}, epochs {args.epochs}")
    for title, make in workloads:
        x, y, sizes, batch = make()
        compare(title, len(x), [
            ("jax.jit + optax (hand-written)", lambda e: run_jax(x, y, sizes, batch, e)),
            ("mylib Model.fit", lambda e: run_mylib(x, y, sizes, batch, e)),
            ("Keras 3 (JAX) Model.fit", lambda e: run_keras(x, y, sizes, batch, e)),
        ], args.epochs, args.repeats)

if __name__ == "__main__":
    main()
