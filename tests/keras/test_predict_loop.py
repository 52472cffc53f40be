"""`predict` runs groups of full batches through the session's k-step loop (16 batches
a call by default once there are that many, `steps_per_execution` when set): the
outputs equal numpy's and one-batch-per-call prediction, for several outputs and
dicts, with a short last batch, and callbacks that hook every batch still see every
batch."""

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L

rs = np.random.RandomState(4)


def _two_output_model():
    inp = L.Input((5,), name="x")
    h = L.Dense(7, activation="relu", name="h")(inp)
    a = L.Dense(3, name="a")(h)
    b = L.Dense(2, activation="sigmoid", name="b")(L.Dropout(0.5)(h))
    return ml.Model(inp, [a, b])


def _numpy(model, x):
    w = {v.name: val for v, val in zip(model.weights, model.get_weights())}
    h = np.maximum(x @ w["h/kernel:0"] + w["h/bias:0"], 0)
    a = h @ w["a/kernel:0"] + w["a/bias:0"]
    b = 1 / (1 + np.exp(-(h @ w["b/kernel:0"] + w["b/bias:0"])))
    return a, b


@pytest.mark.parametrize("n", [16 * 8, 16 * 8 * 2 + 3, 16 * 8 * 3 - 1, 40])
def test_loop_predict_matches_numpy_and_single_batches(n):
    model = _two_output_model()
    x = rs.randn(n, 5).astype(np.float32)
    model.predict(x[:1], verbose=0)
    loop, calls = model._fns["predict_loop"], []

    def counting(*stacked):
        calls.append(len(stacked[0]))
        return loop(*stacked)

    counting.steps_are_pure = loop.steps_are_pure
    model._fns["predict_loop"] = counting
    got = model.predict(x, batch_size=8, verbose=0)
    full = n // 8
    groups = full // 16 if full >= 16 else 0
    left = full % 16 + (n % 8 > 0)  # the rest: one padded call when at least 8
    if groups and 2 * left >= 16:
        groups += 1
    assert calls == [16] * groups
    ref = _numpy(model, x)
    for g, r in zip(got, ref):
        assert g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)

    class Every(ml.callbacks.Callback):
        def __init__(self):
            self.seen = []

        def on_predict_batch_end(self, batch, logs=None):
            self.seen.append(batch)

    every = Every()
    single = model.predict(x, batch_size=8, verbose=0, callbacks=[every])
    assert every.seen == list(range(-(-n // 8)))  # hooked: one call per batch
    for g, s in zip(got, single):
        np.testing.assert_allclose(g, s, rtol=1e-6, atol=1e-7)


def test_steps_per_execution_and_dict_outputs():
    inp = L.Input((3,))
    h = L.Dense(4, name="d")(inp)
    model = ml.Model(inp, {"first": h, "second": L.Activation("tanh")(h)})
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=5)
    x = rs.randn(53, 3).astype(np.float32)
    out = model.predict(x, batch_size=4, verbose=0)
    k, b = model.get_weights()
    np.testing.assert_allclose(out["first"], x @ k + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["second"], np.tanh(x @ k + b), rtol=1e-5, atol=1e-6)


def test_loop_program_compiles_once_for_any_length():
    """Data lengths that differ only in the remainder reuse the same loop program."""
    model = ml.Sequential([L.Input((2,)), L.Dense(2)])
    model.predict(rs.randn(16 * 4 + 1, 2).astype(np.float32), batch_size=4, verbose=0)
    plans = len(model.session._plans)
    for n in (16 * 4 + 2, 16 * 4 * 2 + 3, 16 * 4 * 3):
        model.predict(rs.randn(n, 2).astype(np.float32), batch_size=4, verbose=0)
    # new: at most the power-of-two buckets of the short batch (2 and 4 rows -> 2, 4)
    assert len(model.session._plans) - plans <= 2


@pytest.mark.parametrize("weighted", [False, True])
def test_evaluate_loop_equals_one_batch_per_call(weighted):
    """`evaluate` on many batches (the loop) gives what one batch per call gives
    (a callback hooking every batch forces that), and what numpy gives."""
    model = ml.Sequential([L.Input((6,)), L.Dense(5, name="o")])
    model.compile(optimizer="sgd",
                  loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    n = 16 * 4 * 2 + 7
    x = rs.randn(n, 6).astype(np.float32)
    y = rs.randint(0, 5, n)
    sw = rs.rand(n).astype(np.float32) if weighted else None
    model.evaluate(x[:4], y[:4], sample_weight=None if sw is None else sw[:4], verbose=0)
    calls = []
    for key, fn in list(model._fns.items()):
        if isinstance(key, tuple) and key[0] == "test" and key[-1] == "loop":
            model._fns[key] = (lambda f: lambda *a: calls.append(len(a[0])) or f(*a))(fn)
    got = model.evaluate(x, y, sample_weight=sw, batch_size=4, verbose=0, return_dict=True)
    assert calls == [16, 16]  # 33 full batches and a short one: 2 loop calls, 2 single

    class Hook(ml.callbacks.Callback):
        def on_test_batch_end(self, batch, logs=None):
            pass

    single = model.evaluate(x, y, sample_weight=sw, batch_size=4, verbose=0,
                            return_dict=True, callbacks=[Hook()])
    k, b = model.get_weights()
    z = x @ k + b
    ce = np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1) - z[np.arange(n), y]
    w = np.ones(n) if sw is None else sw
    hit = (z.argmax(1) == y).astype(np.float64)
    assert got["loss"] == pytest.approx(single["loss"], rel=1e-6)
    assert got["accuracy"] == pytest.approx(single["accuracy"], rel=1e-6)
    # Keras's reduction: the weighted sum over the batch size (all n samples)
    assert got["loss"] == pytest.approx((w * ce).sum() / n, rel=1e-5)
    assert got["accuracy"] == pytest.approx(hit.mean(), rel=1e-5)  # `metrics`: unweighted


def test_loop_steps_are_pure_only_without_writes_or_random_draws():
    """Padding predict's last group with copies is allowed only for a loop whose steps
    write no variable and draw no random numbers."""
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder("float32", [4])
        v = ml.Variable(0.0)
        pure = x * 2.0
        writes = v.assign_add(ml.reduce_sum(x))
        noisy = x + ml.random.normal([4])
        with ml.Session() as sess:
            sess.run(v.initializer)
            stacked = np.ones((3, 4), np.float32)
            for fetch, want in ((pure, True), (writes, False), (noisy, False)):
                call = sess.make_device_loop_callable([fetch], [x])
                assert not call.steps_are_pure()  # nothing ran yet
                call(stacked)
                assert call.steps_are_pure() is want


def test_padded_last_group_matches_numpy():
    """The leftover full batches and the short one run as one padded loop call; the
    padding's outputs are dropped (every length from 9 to 16 batches of 8 rows)."""
    model = _two_output_model()
    for n in (16 * 8 + 9 * 8 - 3, 16 * 8 + 12 * 8, 16 * 8 + 15 * 8 + 1):
        x = rs.randn(n, 5).astype(np.float32)
        got = model.predict(x, batch_size=8, verbose=0)
        for gv, r in zip(got, _numpy(model, x)):
            assert gv.shape == r.shape
            np.testing.assert_allclose(gv, r, rtol=1e-5, atol=1e-6)


def _counting_loops(model, calls):
    """Wraps the model's test loops to record each call's number of batches (keeping
    what the loop tells of its steps)."""
    for key, fn in list(model._fns.items()):
        if isinstance(key, tuple) and key[0] == "test" and key[-1] == "loop":
            def wrapped(*a, f=fn):
                calls.append(len(a[0]))
                return f(*a)
            wrapped.step_effects = fn.step_effects
            model._fns[key] = wrapped


class _EveryBatch(ml.callbacks.Callback):
    def on_test_batch_end(self, batch, logs=None):
        pass


@pytest.mark.parametrize("weighted", [False, True])
def test_evaluate_pads_last_group_to_one_loop_call(weighted):
    """The batches after the last whole group of 16 (when at least 8, the short one
    padded to a full batch) run as one more loop call padded with steps of no real
    rows: loss and metrics equal one batch per call, for several lengths."""
    model = ml.Sequential([L.Input((6,)), L.Dense(5, name="o")])
    model.compile(optimizer="sgd",
                  loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy", ml.metrics.SparseTopKCategoricalAccuracy(k=2)],
                  weighted_metrics=["accuracy"])
    x0 = rs.randn(4, 6).astype(np.float32)
    model.evaluate(x0, np.zeros(4, np.int64), sample_weight=np.ones(4, np.float32)
                   if weighted else None, verbose=0)
    for nb, short in ((16 + 8, 0), (16 + 8, 3), (16 + 11, 1), (2 * 16 + 15, 2),
                      (16 + 6, 3)):
        n = nb * 4 + short
        x = rs.randn(n, 6).astype(np.float32)
        y = rs.randint(0, 5, n)
        sw = rs.rand(n).astype(np.float32) if weighted else None
        calls = []
        _counting_loops(model, calls)
        got = model.evaluate(x, y, sample_weight=sw, batch_size=4, verbose=0,
                             return_dict=True)
        left = nb % 16 + (short > 0)
        want = [16] * (nb // 16) + ([16] if 2 * left >= 16 else [])
        assert calls == want, (nb, short)
        single = model.evaluate(x, y, sample_weight=sw, batch_size=4, verbose=0,
                                return_dict=True, callbacks=[_EveryBatch()])
        assert got.keys() == single.keys()
        for key in got:
            assert got[key] == pytest.approx(single[key], rel=1e-6), (key, nb, short)
        kern, b = model.get_weights()
        z = x @ kern + b
        ce = (np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1)
              - z[np.arange(n), y])
        w = np.ones(n) if sw is None else sw
        assert got["loss"] == pytest.approx((w * ce).sum() / n, rel=1e-5)


def test_evaluate_padded_last_group_with_masked_output():
    """A masked sequence output: the padding steps (every row masked out and weighed
    0) leave the masked loss and metric as one batch per call gives them."""
    model = ml.Sequential([L.Input((7,), dtype="int32"),
                           L.Embedding(9, 4, mask_zero=True),
                           L.Dense(3, name="o")])
    model.compile(optimizer="sgd",
                  loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    n = (16 + 10) * 4 + 1
    x = rs.randint(0, 9, (n, 7)).astype(np.int32)
    x[:, 0] = 1  # every sample has a step
    y = rs.randint(0, 3, (n, 7))
    model.evaluate(x[:4], y[:4], verbose=0)
    calls = []
    got = model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
    _counting_loops(model, calls)
    got = model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
    assert calls == [16, 16]
    single = model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True,
                            callbacks=[_EveryBatch()])
    for key in got:
        assert got[key] == pytest.approx(single[key], rel=1e-6), key
