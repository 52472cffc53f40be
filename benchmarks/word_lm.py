"""Training throughput of a word-level LSTM language model (issue 13's workload): mylib
`fit` against a hand-written `jax.jit` + optax loop, Keras 3 on JAX (where installed)
and Keras 3 on TensorFlow (where a Python with TensorFlow is given or this one has it),
in one run (Keras on TensorFlow in a process of its own per repeat).

    python benchmarks/word_lm.py [--epochs 3] [--repeats 3] [--windows 1024]
                                 [--tf-python PATH]

Model: Embedding(5,001, 128) -> LSTM(256, return_sequences=True) -> Dense(5,001) over
every step, predicting the next word at each of 20 steps; sparse softmax cross-entropy
from logits, Adam 1e-3, batch 32. Data: the word-level text of the Python documentation
(`pydoc_data.topics`), the 5,000 most frequent words plus one out-of-vocabulary id;
`--windows` windows of 20 words.

The hand-written baseline is a pure JAX LSTM (`lax.scan` over time, the input
projection of every step as one matmul before the loop, Keras' gate order and
initializers) with optax Adam, parameters and optimizer state donated; a second
hand-written row projects each step inside the loop (faster on XLA:CPU).
"""

import argparse
import collections
import functools
import os
import re

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

import mylib as ml  # noqa: E402
from _harness import (EpochTimer, compare, hand_loop, keras_jax,  # noqa: E402
                      keras_tf_runner, keras_timer_callback, mylib_timer_callback,
                      tf_python)

VOCAB, EMB, UNITS, SEQ, BATCH, LR = 5001, 128, 256, 20, 32, 1e-3


def data(windows):
    """(x, y): int32 [windows, SEQ] word ids and the next word at every step."""
    import pydoc_data.topics as topics

    text = " ".join(topics.topics[k] for k in sorted(topics.topics))
    words = re.findall(r"[A-Za-z_]+|[0-9]+|[^\sA-Za-z_0-9]", text.lower())
    common = [w for w, _ in collections.Counter(words).most_common(VOCAB - 1)]
    index = {w: i + 1 for i, w in enumerate(common)}  # 0: out of vocabulary
    ids = np.fromiter((index.get(w, 0) for w in words), np.int32)
    starts = np.arange(windows) * SEQ
    if starts[-1] + SEQ + 1 > len(ids):
        raise SystemExit(f"--windows at most {(len(ids) - 1) // SEQ}")
    x = np.stack([ids[s:s + SEQ] for s in starts])
    y = np.stack([ids[s + 1:s + SEQ + 1] for s in starts])
    return x, y


# ------------------------------------------------------------ hand-written JAX
def init_params(key):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    glorot = jax.nn.initializers.glorot_uniform()
    return {
        "emb": jax.random.uniform(k1, (VOCAB, EMB), jnp.float32, -0.05, 0.05),
        "w": glorot(k2, (EMB, 4 * UNITS), jnp.float32),
        "u": jax.nn.initializers.orthogonal()(k3, (UNITS, 4 * UNITS), jnp.float32),
        "b": jnp.zeros((4 * UNITS,), jnp.float32).at[UNITS:2 * UNITS].set(1.0),
        "wo": glorot(k4, (UNITS, VOCAB), jnp.float32),
        "bo": jnp.zeros((VOCAB,), jnp.float32),
    }


def forward(p, x, project_in_loop=False):
    e = p["emb"][x]                                   # [B, T, E]
    if project_in_loop:  # x_t @ w inside the scan body: faster on XLA:CPU
        xw = jnp.transpose(e, (1, 0, 2))              # [T, B, E]
    else:
        xw = jnp.einsum("bte,eg->tbg", e, p["w"]) + p["b"]  # [T, B, 4U]

    def cell(carry, xw_t):
        h, c = carry
        if project_in_loop:
            xw_t = xw_t @ p["w"] + p["b"]
        z = xw_t + h @ p["u"]
        i, f, g, o = jnp.split(z, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    zeros = jnp.zeros((x.shape[0], UNITS), jnp.float32)
    _, hs = jax.lax.scan(cell, (zeros, zeros), xw)    # [T, B, U]
    return jnp.einsum("tbu,uv->btv", hs, p["wo"]) + p["bo"]


def loss_fn(p, x, y, project_in_loop=False):
    return optax.softmax_cross_entropy_with_integer_labels(
        forward(p, x, project_in_loop), y).mean()


def run_jax(x, y, epochs, project_in_loop=False):
    params = init_params(jax.random.key(0))
    tx = optax.adam(LR, eps=1e-7)
    state = tx.init(params)

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def step(p, s, xb, yb):
        g = jax.grad(loss_fn)(p, xb, yb, project_in_loop)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    times, params = hand_loop(step, params, state, x, y, BATCH, epochs)
    return times, float(jax.jit(loss_fn)(params, x, y))


# ------------------------------------------------------------ mylib and Keras
def mylib_model():
    model = ml.Sequential([
        ml.layers.Input((SEQ,), dtype="int32"),
        ml.layers.Embedding(VOCAB, EMB),
        ml.layers.LSTM(UNITS, return_sequences=True),
        ml.layers.Dense(VOCAB),
    ])
    model.compile(optimizer=ml.optimizers.Adam(LR),
                  loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def run_mylib(x, y, epochs):
    timer = EpochTimer()
    h = mylib_model().fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0,
                          callbacks=[mylib_timer_callback(timer)])
    return timer.times, h.history["loss"][-1]


def run_keras(x, y, epochs, keras=None):
    keras = keras or keras_jax()
    if keras is None:
        return None, None
    timer = EpochTimer()
    L = keras.layers
    model = keras.Sequential([keras.Input((SEQ,), dtype="int32"), L.Embedding(VOCAB, EMB),
                              L.LSTM(UNITS, return_sequences=True), L.Dense(VOCAB)])
    model.compile(optimizer=keras.optimizers.Adam(LR),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    h = model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0,
                  callbacks=[keras_timer_callback(timer)])
    return timer.times, h.history["loss"][-1]


def keras_tf_row(keras, windows, epochs):
    """The Keras 3 on TensorFlow row (run by `_keras_tf_worker.py`)."""
    x, y = data(windows)
    return run_keras(x, y, epochs, keras=keras)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--windows", type=int, default=1024)
    p.add_argument("--tf-python", help="a Python with tensorflow and keras for the Keras "
                   "on TensorFlow row (default: this one if it has tensorflow)")
    args = p.parse_args(argv)
    x, y = data(args.windows)
    tf_py = tf_python(args.tf_python)
    print(f"jax {jax.__version__}, devices {jax.devices()}, vocab {VOCAB}, "
          f"{len(x)} windows of {SEQ} words; Keras on TensorFlow: "
          f"{tf_py or 'no Python with TensorFlow given'}")
    compare(f"word LSTM LM (emb {EMB}, LSTM {UNITS} all steps, Dense {VOCAB}, "
                   f"seq {SEQ}), batch {BATCH}", len(x), [
                       ("jax.jit + optax (hand-written)", lambda e: run_jax(x, y, e)),
                       ("  the same, projection in the loop",
                        lambda e: run_jax(x, y, e, project_in_loop=True)),
                       ("mylib Model.fit", lambda e: run_mylib(x, y, e)),
                       ("Keras 3 (JAX) Model.fit", lambda e: run_keras(x, y, e)),
                       ("Keras 3 (TensorFlow) Model.fit",
                        keras_tf_runner(tf_py, "word_lm", windows=args.windows)),
                   ], args.epochs, args.repeats)


if __name__ == "__main__":
    main()
