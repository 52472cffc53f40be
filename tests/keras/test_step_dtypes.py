"""No 64-bit work in the compiled training step of a 32-bit model (the LSTM language
model): the HLO XLA compiles holds no float64 value and no int64 one but the
optimizer's int64 `iterations` counter (TensorFlow's dtype) and its increment, no
int64 loop counters or index arithmetic. 64-bit tensors a graph asks for stay 64-bit."""

import re

import jax
import numpy as np
import pytest

import mylib as ml


def _lm(vocab=50):
    model = ml.Sequential([
        ml.layers.Input((7,), dtype="int32"),
        ml.layers.Embedding(vocab, 8),
        ml.layers.LSTM(16, return_sequences=True),
        ml.layers.Dense(vocab),
    ])
    model.compile(optimizer=ml.optimizers.Adam(1e-3),
                  loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _s64_opcodes(text):
    ops = set()
    for line in text.splitlines():
        m = re.match(r"\s*(?:ROOT )?%\S+ = s64\[[^\]]*\]\S* (\S+?)\(", line)
        if m:
            ops.add(m.group(1))
    return ops


def test_lstm_lm_training_step_has_no_64_bit_work(compiled_steps):
    calls, hlo = compiled_steps
    rng = np.random.default_rng(0)
    x = rng.integers(0, 50, (8, 7)).astype(np.int32)
    y = rng.integers(0, 50, (8, 7)).astype(np.int32)
    model = _lm()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    train = [i for i, (_, args, _) in enumerate(calls) if len(args) > 10]
    assert train, "no training step was compiled"
    text = hlo(train[-1])
    assert "while" in text  # the LSTM's time loop is in this program
    assert not re.search(r"\bf64\[", text)
    # int64 only for `iterations` (an argument, the constant 1, their sum): no int64
    # loop counter, comparison or index.
    assert _s64_opcodes(text) <= {"parameter", "constant", "add", "fusion", "copy"}, \
        _s64_opcodes(text)
    for line in text.splitlines():
        if re.search(r"\bs64\[", line):
            assert "while" not in line and not re.search(r"s64\[\d", line), line
    assert model.optimizer.iterations.dtype.name == "int64"


def test_64_bit_tensors_stay_64_bit_in_a_loop(compiled_steps):
    """A graph that asks for int64 and float64 inside a loop keeps them (run in the
    64-bit scope)."""
    calls, hlo = compiled_steps
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder("float64", [3])
        n = ml.constant(np.int64(2 ** 40))
        out = ml.while_loop(lambda i, a, c: i < 3,
                            lambda i, a, c: (i + 1, a * 1.5, c + n),
                            [ml.constant(0), x, ml.constant(np.int64(0))])
        with ml.Session(graph=g) as s:
            i, a, c = s.run(out, {x: np.array([1.0, 2.0, 1e-300])})
    assert a.dtype == np.float64 and c.dtype == np.int64
    np.testing.assert_array_equal(a, np.array([1.0, 2.0, 1e-300]) * 1.5 ** 3)
    assert c == 3 * 2 ** 40
    assert calls[-1][2]  # called inside the 64-bit scope
    assert re.search(r"\bf64\[", hlo(len(calls) - 1))
