"""Shared timing harness for the fit benchmarks: each system trains the same model on
the same data for some epochs; samples/s is the median over epochs after the first
(which includes compilation, reported separately); repeats rotate the order of the
systems so none always runs first. The loss column is the last epoch's mean training
loss (for the hand-written loops: the mean loss over the training data after training),
a check that every system trained the same model, not a speed figure."""

from __future__ import annotations

import statistics
import time


class EpochTimer:
    """Collects per-epoch wall times through a Keras-style callback's hooks."""

    def __init__(self):
        self.times = []

    def begin(self):
        self.t0 = time.perf_counter()

    def end(self):
        self.times.append(time.perf_counter() - self.t0)


def mylib_timer_callback(timer):
    import mylib as ml

    class _CB(ml.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            timer.begin()

        def on_epoch_end(self, epoch, logs=None):
            timer.end()

    return _CB()


def keras_timer_callback(timer):
    import keras

    class _CB(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            timer.begin()

        def on_epoch_end(self, epoch, logs=None):
            timer.end()

    return _CB()


def keras_jax():
    """The keras module if Keras 3 with the JAX backend is installed, else None."""
    try:
        import keras
    except ImportError:
        return None
    return keras if keras.backend.backend() == "jax" else None


def compare(title, n_samples, runners, epochs, repeats):
    """Runs each `(name, fn)` in `runners` (`fn(epochs) -> (epoch_times, last_loss)`,
    or `(None, None)` when unavailable) `repeats` times and prints the table; the first
    runner is the baseline of the ratio column."""
    times = {name: [] for name, _ in runners}
    compile_s, losses = {}, {}
    for r in range(repeats):
        for k in range(len(runners)):
            name, fn = runners[(k + r) % len(runners)]
            t, loss = fn(epochs)
            if t is None:
                continue
            med = statistics.median(t[1:])
            compile_s.setdefault(name, max(t[0] - med, 0.0))
            times[name].extend(t[1:])
            losses[name] = loss
    base = n_samples / statistics.median(times[runners[0][0]])
    print(f"\n{title}: {n_samples} samples, {repeats} repeats x {epochs} epochs")
    print(f"  {'system':34s} {'samples/s':>11s} {'ratio':>6s} {'compile s':>10s} "
          f"{'loss':>10s}")
    rows = {}
    for name, _ in runners:
        if not times[name]:
            print(f"  {name:34s} {'(not installed)':>11s}")
            continue
        sps = n_samples / statistics.median(times[name])
        rows[name] = sps / base
        print(f"  {name:34s} {sps:11.0f} {sps / base:6.2f} {compile_s[name]:10.2f} "
              f"{losses[name]:10.4f}")
    return rows


def hand_loop(step, params, state, x, y, batch, epochs, seed=0):
    """The hand-written baseline's epochs: a numpy permutation per epoch, contiguous
    batch slices, one jitted `step(params, state, xb, yb) -> (params, state)` each.
    Returns (epoch times, final params)."""
    import jax
    import numpy as np

    rng = np.random.default_rng(seed)
    times = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        perm = rng.permutation(len(x))
        xs, ys = x[perm], y[perm]
        for i in range(0, len(x), batch):
            params, state = step(params, state, xs[i:i + batch], ys[i:i + batch])
        jax.block_until_ready(params)
        times.append(time.perf_counter() - t0)
    return times, params


def run_flax_classifier(model, example, x, y, batch, epochs, lr):
    """The hand-written flax + optax baseline: Adam on softmax cross-entropy with
    integer labels, parameters and state donated. Returns (epoch times, final mean
    loss over the data)."""
    import functools

    import jax
    import optax

    params = model.init(jax.random.key(0), example)
    tx = optax.adam(lr, eps=1e-7)
    state = tx.init(params)

    def loss_fn(p, xb, yb):
        return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, xb), yb).mean()

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def step(p, s, xb, yb):
        g = jax.grad(loss_fn)(p, xb, yb)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    times, params = hand_loop(step, params, state, x, y, batch, epochs)
    return times, float(jax.jit(loss_fn)(params, x, y))


def tf_python(path=None):
    """The Python that runs the Keras 3 on TensorFlow rows: `path` (a benchmark's
    ``--tf-python``), else this interpreter when it can import tensorflow, else None.
    That Python needs tensorflow, keras and this project's benchmark dependencies."""
    import importlib.util
    import sys

    if path:
        return path
    return sys.executable if importlib.util.find_spec("tensorflow") else None


def keras_tf_runner(python, module, **kwargs):
    """A `compare` runner for a Keras 3 on TensorFlow row: each call runs
    ``module.keras_tf_row(keras, epochs=..., **kwargs)`` in a new process of `python`
    (`_keras_tf_worker.py`), so the first epoch includes TensorFlow's tracing as the
    other rows' first epoch includes compilation. Returns (None, None) without a
    TensorFlow Python; a failing worker raises with its stderr's last lines."""
    import json
    import os
    import subprocess

    def run(epochs):
        if python is None:
            return None, None
        worker = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "_keras_tf_worker.py")
        p = subprocess.run([python, worker, module, json.dumps(dict(kwargs, epochs=epochs))],
                           capture_output=True, text=True, timeout=3600)
        if p.returncode:
            raise RuntimeError(f"Keras on TensorFlow worker failed ({p.returncode}):\n"
                               + "\n".join(p.stderr.splitlines()[-15:]))
        out = json.loads(p.stdout.strip().splitlines()[-1])
        return out["times"], out["loss"]

    return run
