"""Training throughput of a character-level LSTM language model: mylib `fit` against a
hand-written `jax.jit` + flax + optax loop and Keras 3 on JAX (where installed).

    python benchmarks/fit_lstm.py [--epochs 4] [--repeats 2]

Model: Embedding(vocab, 32) -> LSTM(128) -> Dense(vocab) predicting the next character
of 32-character windows of the Python documentation text (`pydoc_data.topics`); 8,192
windows, batch 128, Adam 3e-3.
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

SEQ, BATCH, N, UNITS, EMB = 32, 128, 8192, 128, 32


def data():
    import pydoc_data.topics as topics

    text = "".join(topics.topics[k] for k in sorted(topics.topics))
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = np.fromiter((index[c] for c in text[:N * 3 + SEQ + 1]), np.int32)
    starts = np.arange(N) * 3
    x = np.stack([ids[s:s + SEQ] for s in starts])
    y = ids[starts + SEQ].astype(np.int64)
    return x, y, len(chars)


class FlaxLM(nn.Module):
    vocab: int

    @nn.compact
    def __call__(self, x):
        h = nn.Embed(self.vocab, EMB)(x)
        h = nn.RNN(nn.OptimizedLSTMCell(UNITS))(h)[:, -1]
        return nn.Dense(self.vocab)(h)


def run_flax(x, y, vocab, epochs):
    return run_flax_classifier(FlaxLM(vocab), jnp.zeros((1, SEQ), jnp.int32), x, y, BATCH,
                               epochs, 3e-3)


def run_mylib(x, y, vocab, epochs):
    timer = EpochTimer()
    model = ml.Sequential([
        ml.layers.Input((SEQ,), dtype="int32"),
        ml.layers.Embedding(vocab, EMB),
        ml.layers.LSTM(UNITS),
        ml.layers.Dense(vocab),
    ])
    model.compile(optimizer=ml.optimizers.Adam(3e-3),
                  loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True))
    h = model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0,
                  callbacks=[mylib_timer_callback(timer)])
    return timer.times, h.history["loss"][-1]


def run_keras(x, y, vocab, epochs):
    keras = keras_jax()
    if keras is None:
        return None, None
    timer = EpochTimer()
    L = keras.layers
    model = keras.Sequential([keras.Input((SEQ,), dtype="int32"), L.Embedding(vocab, EMB),
                              L.LSTM(UNITS), L.Dense(vocab)])
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    h = model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0,
                  callbacks=[keras_timer_callback(timer)])
    return timer.times, h.history["loss"][-1]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args(argv)
    x, y, vocab = data()
    print(f"jax {jax.__version__}, devices {jax.devices()}, vocab {vocab}")
    compare(f"char LSTM LM (emb {EMB}, LSTM {UNITS}, seq {SEQ}), batch {BATCH}", len(x), [
        ("jax.jit + flax + optax (hand-written)", lambda e: run_flax(x, y, vocab, e)),
        ("mylib Model.fit", lambda e: run_mylib(x, y, vocab, e)),
        ("Keras 3 (JAX) Model.fit", lambda e: run_keras(x, y, vocab, e)),
    ], args.epochs, args.repeats)


if __name__ == "__main__":
    main()
