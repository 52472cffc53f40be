"""fit/evaluate/predict options and input forms; determinism; bounded caches."""

import subprocess
import sys
import textwrap
import tracemalloc

import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml
from mylib.data import Dataset

rng = np.random.RandomState(0)
X = rng.rand(64, 4).astype(np.float32)
Y = (X.sum(1) > 2).astype(np.int32)


def _model(loss="sparse_categorical_crossentropy", out=2, act="softmax", **kw):
    inp = ml.layers.Input(shape=(4,), name="feat")
    m = ml.Model(inp, ml.layers.Dense(out, activation=act)(ml.layers.Dense(8, "relu")(inp)))
    m.compile("sgd", loss, **kw)
    return m


class _Count(ml.callbacks.Callback):
    def __init__(self):
        self.batches, self.epochs = 0, []

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1

    def on_epoch_begin(self, epoch, logs=None):
        self.epochs.append(epoch)


def test_validation_freq_initial_epoch_validation_batch_size():
    m = _model()
    h = m.fit(X, Y, epochs=5, batch_size=16, validation_data=(X[:20], Y[:20]),
              validation_freq=2, verbose=0)
    assert len(h.history["loss"]) == 5 and len(h.history["val_loss"]) == 2
    m = _model()
    cb = _Count()
    h = m.fit(X, Y, epochs=4, initial_epoch=2, validation_split=0.25, validation_freq=[1, 4],
              validation_batch_size=5, verbose=0, callbacks=[cb])
    assert cb.epochs == [2, 3] and len(h.history["val_loss"]) == 1


def test_steps_per_epoch_with_arrays_continues_through_data():
    m = _model()
    cb = _Count()
    m.fit(X, Y, epochs=3, batch_size=10, steps_per_epoch=4, shuffle=False, verbose=0,
          callbacks=[cb])
    assert cb.batches == 12  # 64 samples = 7 batches per pass: the stream wraps around
    with pytest.raises(ValueError, match="steps_per_epoch"):
        m.fit(X, Y, steps_per_epoch=0, verbose=0)


def test_validation_steps_limits_batches():
    m = _model()
    seen = []

    class C(ml.callbacks.Callback):
        def on_test_batch_end(self, batch, logs=None):
            seen.append(batch)

    m.fit(X, Y, epochs=1, batch_size=16, validation_data=(X, Y), validation_steps=2,
          verbose=0, callbacks=[C()])
    assert seen == [0, 1]


def test_shuffle_batch_keeps_chunks():
    from mylib.models.data_adapter import batch_order as _batch_order

    order = _batch_order(23, 5)
    assert sorted(order.tolist()) == list(range(23))
    chunks = [order[i:i + 5] for i in range(0, 23, 5)]
    assert all(c.max() - c.min() == len(c) - 1 for c in chunks)  # contiguous sets
    assert set(chunks[-1].tolist()) == {20, 21, 22}  # the short chunk stays last
    h = _model().fit(X, Y, epochs=2, batch_size=8, shuffle="batch", verbose=0)
    assert np.isfinite(h.history["loss"]).all()


def test_class_weight_sequence_targets_per_timestep():
    inp = ml.layers.Input(shape=(5, 3))
    out = ml.layers.Dense(4, activation="softmax")(inp)
    x = rng.rand(8, 5, 3).astype(np.float32)
    y = rng.randint(0, 4, (8, 5)).astype(np.int32)
    m = ml.Model(inp, out)
    m.compile("sgd", "sparse_categorical_crossentropy")
    p = m.predict(x, verbose=0)
    ce = -np.log(np.clip(np.take_along_axis(p, y[..., None], -1)[..., 0], 1e-7, 1))
    cw = {0: 0.0, 1: 2.0, 2: 1.0, 3: 0.5}
    w = np.vectorize(cw.get)(y)
    loss = m.evaluate(x, y, sample_weight=w, verbose=0, batch_size=8)
    np.testing.assert_allclose(loss, (ce * w).mean(), rtol=1e-5)
    # class_weight in train_on_batch gives the same per-timestep weighting (loss before
    # the update)
    got = m.train_on_batch(x, y, class_weight=cw)
    np.testing.assert_allclose(got, (ce * w).mean(), rtol=1e-5)


def test_generator_and_dataset_inputs_match_arrays():
    def gen():
        while True:
            for i in range(0, 64, 16):
                yield X[i:i + 16], Y[i:i + 16]

    ref = _model()
    w0 = ref.get_weights()
    ref.fit(X, Y, epochs=2, batch_size=16, shuffle=False, verbose=0)
    for data, kw in [(gen(), {"steps_per_epoch": 4}),
                     (Dataset.from_tensor_slices((X, Y)).batch(16), {}),
                     (Dataset.from_tensor_slices((X, Y)).batch(16).repeat().prefetch(2),
                      {"steps_per_epoch": 4})]:
        m = _model()
        m.set_weights(w0)
        m.fit(data, epochs=2, verbose=0, **kw)
        for a, b in zip(m.get_weights(), ref.get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    ds = Dataset.from_tensor_slices((X, Y)).batch(16)
    np.testing.assert_allclose(m.evaluate(ds, verbose=0), m.evaluate(X, Y, verbose=0),
                               rtol=1e-5)
    np.testing.assert_allclose(m.predict(ds.map(lambda x, y: x)), m.predict(X, verbose=0),
                               rtol=1e-6)
    # validation from a dataset; sample weights inside batches
    sw = np.ones(64, np.float32)
    h = m.fit(Dataset.from_tensor_slices((X, Y, sw)).batch(32), epochs=1, verbose=0,
              validation_data=ds)
    assert "val_loss" in h.history


def test_dataset_errors_before_training():
    m = _model()
    w0 = m.get_weights()
    with pytest.raises(ValueError, match="infinite"):
        m.fit(Dataset.from_tensor_slices((X, Y)).batch(8).repeat(), epochs=1, verbose=0)
    with pytest.raises(ValueError, match="expects data of shape"):
        m.fit(Dataset.from_tensor_slices((X[:, :3], Y)).batch(8), verbose=0)
    with pytest.raises(ValueError, match="without targets|no y"):
        m.fit(Dataset.from_tensor_slices(X).batch(8), verbose=0)
    with pytest.raises(ValueError, match="cardinality"):
        m.fit(X, Y[:10], verbose=0)
    with pytest.raises(ValueError, match="`y` must not be given"):
        m.fit(Dataset.from_tensor_slices((X, Y)).batch(8), Y, verbose=0)
    for a, b in zip(m.get_weights(), w0):
        np.testing.assert_array_equal(a, b)


def test_jax_arrays_dicts_and_numpy_call():
    m = _model()
    h = m.fit({"feat": jnp.asarray(X)}, jnp.asarray(Y), epochs=1, verbose=0)
    assert np.isfinite(h.history["loss"][0])
    out = m(X[:3])
    assert isinstance(out, np.ndarray) and out.shape == (3, 2)
    assert isinstance(m.predict_on_batch(X[:5]), np.ndarray)
    logs = m.test_on_batch(X, Y, return_dict=True)
    assert set(logs) == {"loss"}
    with pytest.raises(ValueError, match="No data provided"):
        m.fit({"other": X}, Y, verbose=0)


def test_compile_options_loss_weights_weighted_metrics():
    inp = ml.layers.Input(shape=(4,))
    a = ml.layers.Dense(1, name="a")(inp)
    b = ml.layers.Dense(1, name="b")(inp)
    m = ml.Model(inp, [a, b])
    m.compile("sgd", ["mse", "mae"], loss_weights=[2.0, 0.5], weighted_metrics=["mae"],
              jit_compile=True)
    ya, yb = X[:, :1], X[:, 1:2]
    pa, pb = m.predict(X, verbose=0)
    sw = rng.rand(64).astype(np.float32)
    logs = m.evaluate(X, [ya, yb], sample_weight=sw, verbose=0, return_dict=True,
                      batch_size=64)
    mse = ((pa - ya) ** 2)[:, 0]
    mae = np.abs(pb - yb)[:, 0]
    np.testing.assert_allclose(logs["loss"], 2 * (mse * sw).mean() + 0.5 * (mae * sw).mean(),
                               rtol=1e-5)
    np.testing.assert_allclose(logs["a_mae"],
                               (np.abs(pa - ya)[:, 0] * sw).sum() / sw.sum(), rtol=1e-5)


def test_run_eagerly_matches_compiled():
    m1, m2 = _model(), _model(run_eagerly=True)
    m2.set_weights(m1.get_weights())
    m1.fit(X[:16], Y[:16], epochs=1, batch_size=8, shuffle=False, verbose=0)
    m2.fit(X[:16], Y[:16], epochs=1, batch_size=8, shuffle=False, verbose=0)
    for a, b in zip(m1.get_weights(), m2.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_repeated_calls_do_not_grow_caches_or_memory():
    m = _model(metrics=["accuracy"])
    m.fit(X, Y, epochs=1, verbose=0)
    m.evaluate(X, Y, verbose=0)
    m.predict(X, verbose=0)
    # Each new feed shape is a plan of its own (the session's LRU bounds them): the
    # loop below repeats these shapes.
    m.predict(X[:8], verbose=0)
    m.evaluate(X[:8], Y[:8], verbose=0)
    m.fit(X[:16], Y[:16], epochs=1, verbose=0)
    sess = m.session
    n_plans, n_fns = len(sess._plans), len(m._fns)
    n_ops = len(m.graph.get_operations())
    tracemalloc.start()
    for i in range(100):
        m.predict(X[:8], verbose=0)
        m.evaluate(X[:8], Y[:8], verbose=0)
        if i == 10:
            base = tracemalloc.get_traced_memory()[0]
    for i in range(20):
        m.fit(X[:16], Y[:16], epochs=1, verbose=0)
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert len(sess._plans) == n_plans and len(m._fns) == n_fns
    assert len(m.graph.get_operations()) == n_ops
    assert grown < 2_000_000, grown


_DET_SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    import mylib as ml
    ml.config.enable_op_determinism()
    ml.utils.set_random_seed(1234)
    x = np.random.rand(96, 6).astype(np.float32)
    y = (x[:, 0] > 0.5).astype(np.int32)
    inp = ml.layers.Input(shape=(6,))
    h = ml.layers.Dropout(0.3)(ml.layers.Dense(16, "relu")(inp))
    m = ml.Model(inp, ml.layers.Dense(2, activation="softmax")(h))
    m.compile("adam", "sparse_categorical_crossentropy")
    ds = ml.data.Dataset.from_tensor_slices((x, y)).shuffle(96).batch(16)
    m.fit(x, y, epochs=2, batch_size=16, verbose=0)
    m.fit(ds, epochs=1, verbose=0)
    np.savez(sys.argv[1], *m.get_weights())
""")


def test_determinism_bit_identical_across_processes(tmp_path):
    script = tmp_path / "det.py"
    script.write_text(_DET_SCRIPT)
    outs = []
    for i in range(2):
        f = tmp_path / f"w{i}.npz"
        subprocess.run([sys.executable, str(script), str(f)], check=True, timeout=120)
        outs.append(np.load(f))
    assert len(outs[0].files) == 4
    for k in outs[0].files:
        assert outs[0][k].tobytes() == outs[1][k].tobytes()


def test_set_random_seed_fixes_initial_weights_whatever_was_built_before():
    """After `set_random_seed(s)` the same model starts from the same weights, however
    many random ops the process created before (as Keras 3 and TensorFlow 2 do)."""
    def build():
        m = ml.Sequential([ml.layers.Input((4,)), ml.layers.Dense(8, "relu"),
                           ml.layers.Dropout(0.5), ml.layers.Dense(3)])
        return m.get_weights()

    ml.config.set_random_seed(5)
    first = build()
    for _ in range(3):  # other models and random ops in between
        ml.Sequential([ml.layers.Input((2,)), ml.layers.Dense(5)]).get_weights()
        ml.random.uniform([2])
    ml.config.set_random_seed(5)
    second = build()
    ml.config.set_random_seed(6)
    third = build()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], third[0])
