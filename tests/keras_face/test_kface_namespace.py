"""The Keras 3 face's modules: names, utils, backend, config, random, schedules, saving,
datasets (offline), and the errors of names mylib lacks."""

import os

import numpy as np
import pytest

import mylib as ml
from mylib import keras


def test_one_module_three_ways():
    import mylib.keras as k2
    from mylib.keras import layers, ops  # noqa: F401

    assert k2 is keras is ml.keras
    assert keras.__version__.startswith("3.")
    for name in ("Input", "Model", "Sequential", "Layer", "Variable", "layers", "ops",
                 "losses", "metrics", "optimizers", "callbacks", "activations",
                 "initializers", "regularizers", "constraints", "models", "saving",
                 "mixed_precision", "utils", "backend", "random", "config", "datasets",
                 "preprocessing"):
        assert hasattr(keras, name), name
    assert keras.layers.Dense is ml.layers.Dense
    assert keras.Model is ml.Model and keras.models.Sequential is ml.Sequential
    assert keras.optimizers.Adam is ml.optimizers.Adam
    assert keras.metrics.Mean is ml.metrics.Mean
    assert keras.preprocessing.sequence.pad_sequences is keras.utils.pad_sequences


def test_layers_follow_mylib_layers(monkeypatch):
    # A layer added to mylib.layers later (by another module) shows in keras.layers.
    class Late(ml.layers.Layer):
        pass

    monkeypatch.setattr(ml.layers, "LateLayerForTest", Late, raising=False)
    assert keras.layers.LateLayerForTest is Late
    assert set(n for n in dir(ml.layers) if not n.startswith("_")) - {"backend"} <= set(
        dir(keras.layers))


@pytest.mark.parametrize("where, name, hint", [
    (lambda: keras.layers, "JaxLayer", "keras.layers.FlaxLayer"),
    (lambda: keras.layers, "TFSMLayer", "keras.saving.save_model"),
    (lambda: keras.layers, "NoSuchLayer", "custom keras.layers.Layer"),
    (lambda: keras.optimizers, "Muon", "keras.optimizers.Adam"),
    (lambda: keras, "applications", "keras.layers"),
    (lambda: keras, "distribution", "mylib.distribute"),
])
def test_missing_names_say_what_to_use(where, name, hint):
    with pytest.raises(AttributeError, match=name) as e:
        getattr(where(), name)
    assert hint in str(e.value)


def test_to_categorical_and_normalize():
    y = keras.utils.to_categorical([[1], [0], [2]], num_classes=4)
    np.testing.assert_array_equal(y, np.eye(4, dtype=np.float32)[[1, 0, 2]])
    assert y.dtype == np.float32
    assert keras.utils.to_categorical(np.array([[0, 1], [2, 2]])).shape == (2, 2, 3)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        keras.utils.to_categorical([0, 3], num_classes=3)
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(keras.utils.normalize(x), [[0.6, 0.8], [0.0, 0.0]])


def test_pad_sequences_matches_keras():
    kpad = pytest.importorskip("keras").utils.pad_sequences
    seqs = [[1, 2, 3], [4], [], [5, 6, 7, 8, 9]]
    for kw in ({}, {"maxlen": 3}, {"padding": "post"}, {"truncating": "post", "maxlen": 2},
               {"value": -1, "maxlen": 6, "padding": "post"}, {"dtype": "float32"}):
        ours = keras.utils.pad_sequences(seqs, **kw)
        theirs = kpad(seqs, **kw)
        np.testing.assert_array_equal(ours, theirs, err_msg=str(kw))
        assert ours.dtype == theirs.dtype
    with pytest.raises(ValueError, match="padding"):
        keras.utils.pad_sequences(seqs, padding="middle")


def test_get_file_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    url = "https://example.org/data/thing.npz"
    with pytest.raises(FileNotFoundError) as e:
        keras.utils.get_file("thing.npz", origin=url)
    want = os.path.join(str(tmp_path), "datasets", "thing.npz")
    assert url in str(e.value) and want in str(e.value)
    os.makedirs(os.path.dirname(want))
    np.savez(want, a=np.arange(3))
    assert keras.utils.get_file("thing.npz", origin=url) == want
    import hashlib

    digest = hashlib.sha256(open(want, "rb").read()).hexdigest()
    assert keras.utils.get_file("thing.npz", origin=url, file_hash=digest) == want
    with pytest.raises(ValueError, match="hash"):
        keras.utils.get_file("thing.npz", origin=url, file_hash="0" * 64)


def test_datasets_read_the_cache_or_name_the_path(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    for mod in (keras.datasets.mnist, keras.datasets.imdb, keras.datasets.reuters,
                keras.datasets.boston_housing, keras.datasets.cifar10,
                keras.datasets.fashion_mnist):
        with pytest.raises(FileNotFoundError) as e:
            mod.load_data()
        assert str(tmp_path) in str(e.value) and "does not download" in str(e.value)
    d = tmp_path / "datasets"
    d.mkdir()
    rng = np.random.default_rng(0)
    arrs = {"x_train": rng.integers(0, 255, (6, 28, 28), dtype=np.uint8),
            "y_train": np.arange(6, dtype=np.uint8), "x_test": np.zeros((2, 28, 28), np.uint8),
            "y_test": np.arange(2, dtype=np.uint8)}
    np.savez(d / "mnist.npz", **arrs)
    (xtr, ytr), (xte, yte) = keras.datasets.mnist.load_data()
    np.testing.assert_array_equal(xtr, arrs["x_train"])
    np.testing.assert_array_equal(yte, arrs["y_test"])
    x = rng.normal(size=(10, 13))
    y = rng.normal(size=10)
    np.savez(d / "boston_housing.npz", x=x, y=y)
    (bx, by), (tx, ty) = keras.datasets.boston_housing.load_data()
    idx = np.arange(10)
    np.random.RandomState(113).shuffle(idx)
    np.testing.assert_allclose(bx, x[idx[:8]])
    np.testing.assert_allclose(ty, y[idx[8:]])


def test_imdb_and_reuters_processing_match_keras(tmp_path, monkeypatch):
    kd = pytest.importorskip("keras").datasets
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    d = tmp_path / "datasets"
    d.mkdir()
    rng = np.random.default_rng(1)

    def seqs(n):
        out = np.empty(n, dtype=object)
        out[:] = [[int(v) for v in rng.integers(1, 30, rng.integers(2, 12))]
                  for _ in range(n)]
        return out

    np.savez(d / "imdb.npz", x_train=seqs(20), y_train=rng.integers(0, 2, 20),
             x_test=seqs(10), y_test=rng.integers(0, 2, 10))
    np.savez(d / "reuters.npz", x=seqs(25), y=rng.integers(0, 46, 25))
    import importlib

    for ours_mod, theirs_mod in ((keras.datasets.imdb, kd.imdb),
                                 (keras.datasets.reuters, kd.reuters)):
        short = ours_mod.__name__.rsplit(".")[-1]
        # Keras's loader reads the same file (its download step pointed at it).
        src = importlib.import_module(f"keras.src.datasets.{short}")
        monkeypatch.setattr(src, "get_file", lambda *a, _p=str(d / f"{short}.npz"), **k: _p)
        for kw in ({}, {"num_words": 10, "maxlen": 9}, {"skip_top": 3, "oov_char": None}):
            ours = ours_mod.load_data(**kw)
            theirs = theirs_mod.load_data(**kw)
            for a, b in zip(ours, theirs):
                assert [list(s) for s in a[0]] == [list(s) for s in b[0]], kw
                np.testing.assert_array_equal(a[1], b[1])


def test_backend_and_config():
    assert keras.backend.epsilon() == pytest.approx(1e-7)
    assert keras.backend.floatx() == "float32"
    assert keras.backend.image_data_format() == "channels_last"
    assert keras.backend.backend() == "mylib" == keras.config.backend()
    old = keras.backend.epsilon()
    try:
        keras.backend.set_epsilon(1e-4)
        assert keras.config.epsilon() == 1e-4
        # the ops cross-entropies clip by it
        got = float(keras.ops.binary_crossentropy(np.float32(1.0), np.float32(0.0)))
        assert got == pytest.approx(-np.log(1e-4), rel=1e-4)
    finally:
        keras.backend.set_epsilon(old)
    with pytest.raises(ValueError, match="channels_last"):
        keras.backend.set_image_data_format("channels_first")
    try:
        keras.backend.set_floatx("float64")
        assert keras.backend.floatx() == "float64"
        layer = keras.layers.Dense(2)
        layer.build((None, 3))
        assert layer.kernel.dtype == ml.float64
    finally:
        keras.backend.set_floatx("float32")
    with pytest.raises(ValueError):
        keras.backend.set_floatx("int8")
    keras.config.enable_unsafe_deserialization()
    assert keras.config.is_unsafe_deserialization_enabled()


def test_clear_session_gives_a_fresh_graph():
    g0 = ml.get_default_graph()
    keras.backend.clear_session()
    assert ml.get_default_graph() is not g0


def test_set_session_shares_the_programs_session():
    """TensorFlow 1 programs hand their own session to Keras: models run in it (the
    variables a model initializes live there)."""
    with ml.Graph().as_default() as g:
        sess = ml.Session(graph=g)
        keras.backend.set_session(sess)
        m = keras.Sequential([keras.layers.Input((2,)), keras.layers.Dense(1)])
        out = m.predict(np.ones((3, 2), np.float32), verbose=0)
        assert keras.backend.get_session() is sess
        np.testing.assert_allclose(sess.run(m.outputs[0], {m.inputs[0]: np.ones((3, 2))}),
                                   out, rtol=1e-6)
        sess.close()


def test_random_on_arrays_and_in_graphs():
    a = keras.random.normal((1000,), mean=2.0, stddev=0.5, seed=3)
    assert abs(float(a.mean()) - 2.0) < 0.1 and abs(float(a.std()) - 0.5) < 0.05
    np.testing.assert_array_equal(a, keras.random.normal((1000,), mean=2.0, stddev=0.5,
                                                         seed=3))
    sg = keras.random.SeedGenerator(7)
    u1, u2 = keras.random.uniform((5,), seed=sg), keras.random.uniform((5,), seed=sg)
    assert not np.allclose(u1, u2)
    r = keras.random.randint((200,), 0, 5, seed=1)
    assert r.min() >= 0 and r.max() <= 4 and r.dtype == np.int32
    d = keras.random.dropout(np.ones(1000, np.float32), 0.5, seed=2)
    assert set(np.unique(np.asarray(d))) <= {0.0, 2.0} and 400 < int((d > 0).sum()) < 600
    s = keras.random.shuffle(np.arange(10), seed=0)
    assert sorted(np.asarray(s).tolist()) == list(range(10))
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, (None, 3))
        n = keras.random.normal((keras.ops.shape(x)[0], 2), seed=sg)
        fixed = keras.random.uniform((4,))  # inside a graph build: a random op
    assert isinstance(n, ml.Tensor) and isinstance(fixed, ml.Tensor)
    with ml.Session(graph=g) as sess:
        v1, f1 = sess.run([n, fixed], {x: np.zeros((6, 3), np.float32)})
        v2, f2 = sess.run([n, fixed], {x: np.zeros((6, 3), np.float32)})
    assert v1.shape == (6, 2) and not np.allclose(v1, v2) and not np.allclose(f1, f2)


def test_schedules_match_keras():
    ks = pytest.importorskip("keras").optimizers.schedules
    ours = keras.optimizers.schedules
    cases = [
        ("ExponentialDecay", dict(initial_learning_rate=0.1, decay_steps=10, decay_rate=0.5)),
        ("ExponentialDecay", dict(initial_learning_rate=0.1, decay_steps=10, decay_rate=0.5,
                                  staircase=True)),
        ("InverseTimeDecay", dict(initial_learning_rate=0.1, decay_steps=5, decay_rate=0.3)),
        ("PiecewiseConstantDecay", dict(boundaries=[5, 20], values=[1.0, 0.5, 0.1])),
        ("PolynomialDecay", dict(initial_learning_rate=0.1, decay_steps=30, power=2.0)),
        ("PolynomialDecay", dict(initial_learning_rate=0.1, decay_steps=7, cycle=True)),
        ("CosineDecay", dict(initial_learning_rate=0.1, decay_steps=30, alpha=0.1)),
        ("CosineDecay", dict(initial_learning_rate=0.0, decay_steps=30, warmup_target=0.2,
                             warmup_steps=10)),
        ("CosineDecayRestarts", dict(initial_learning_rate=0.1, first_decay_steps=8)),
    ]
    for name, kw in cases:
        a, b = getattr(ours, name)(**kw), getattr(ks, name)(**kw)
        for step in (0, 1, 5, 6, 12, 25, 40):
            assert float(a(step)) == pytest.approx(float(b(step)), rel=1e-5, abs=1e-7), \
                (name, kw, step)


def test_schedule_drives_the_optimizer():
    sched = keras.optimizers.schedules.PiecewiseConstantDecay([2], [0.25, 0.0])
    inp = keras.Input(shape=(1,))
    model = keras.Model(inp, keras.layers.Dense(1, use_bias=False,
                                                kernel_initializer="zeros")(inp))
    model.compile(optimizer=keras.optimizers.SGD(sched), loss="mse")
    x, y = np.ones((1, 1), np.float32), np.ones((1, 1), np.float32)
    model.fit(x, y, epochs=5, batch_size=1, verbose=0)
    # loss (w - 1)^2: each step at rate 0.25 halves w - 1; steps 0, 1, 2 have rate 0.25
    # (step <= boundary 2), steps 3, 4 rate 0.
    assert model.get_weights()[0].item() == pytest.approx(1 - 0.5 ** 3, abs=1e-6)


def test_serialize_keras_object_round_trip():
    s = keras.saving
    for obj in (keras.losses.MeanSquaredError(), keras.optimizers.Adam(0.003),
                keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9),
                keras.regularizers.L2(0.01), keras.initializers.Constant(0.5)):
        cfg = s.serialize_keras_object(obj)
        back = s.deserialize_keras_object(cfg)
        assert type(back) is type(obj)
        assert back.get_config() == obj.get_config()
    layer = keras.layers.Dense(3, activation="relu")
    back = s.deserialize_keras_object(s.serialize_keras_object(layer))
    assert isinstance(back, keras.layers.Dense) and back.units == 3
    assert s.deserialize_keras_object("relu") is keras.activations.relu
    with pytest.raises(ValueError, match="Unknown"):
        s.deserialize_keras_object({"class_name": "NoSuchThing", "config": {}})


def test_plot_model_or_a_clear_message(tmp_path):
    inp = keras.Input(shape=(3,))
    model = keras.Model(inp, keras.layers.Dense(2)(keras.layers.Dense(4)(inp)))
    try:
        import pydot  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pydot"):
            keras.utils.plot_model(model, str(tmp_path / "m.png"))
        return
    dot = keras.utils.model_to_dot(model, show_shapes=True)
    import keras as keras3

    kin = keras3.Input(shape=(3,))
    kdot = keras3.utils.model_to_dot(keras3.Model(
        kin, keras3.layers.Dense(2)(keras3.layers.Dense(4)(kin))), show_shapes=True)
    # the input, two Dense layers and pydot's node-defaults entry; an edge per call
    assert len(dot.get_nodes()) == len(kdot.get_nodes()) == 4
    assert len(dot.get_edges()) == len(kdot.get_edges()) == 2
    keras.utils.plot_model(model, str(tmp_path / "m.dot"))
    assert (tmp_path / "m.dot").read_text().startswith("digraph")


def test_optimizer_variables_property_and_call():
    opt = keras.optimizers.Adam(0.01)
    inp = keras.Input(shape=(2,))
    model = keras.Model(inp, keras.layers.Dense(1)(inp))
    model.compile(optimizer=opt, loss="mse")
    model.fit(np.ones((4, 2), np.float32), np.ones((4, 1), np.float32), verbose=0)
    vs = opt.variables
    assert isinstance(vs, list) and vs == opt.variables() and len(vs) >= 3
    assert any(v.name.startswith(opt.name + "/iterations") for v in vs)


def test_dataset_pickles_cannot_run_code(tmp_path, monkeypatch):
    import pickle

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    d = tmp_path / "datasets"
    d.mkdir()
    bad = np.empty(1, dtype=object)
    bad[0] = Evil()
    np.savez(d / "reuters.npz", x=bad, y=np.zeros(1))
    with pytest.raises(pickle.UnpicklingError, match="posix.system|os.system|Refusing"):
        keras.datasets.reuters.load_data()


def test_pydataset_feeds_fit_evaluate_predict():
    x = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [2.0], [-1.0]], np.float32))

    class Batches(keras.utils.PyDataset):
        def __init__(self, with_y=True):
            super().__init__()
            self.with_y, self.epochs_seen = with_y, 0

        def __len__(self):
            return 4

        def __getitem__(self, i):
            sl = slice(10 * i, 10 * i + 10)
            return (x[sl], y[sl]) if self.with_y else x[sl]

        def on_epoch_end(self):
            self.epochs_seen += 1

    inp = keras.Input(shape=(3,))
    model = keras.Model(inp, keras.layers.Dense(1)(inp))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    data = Batches()
    h = model.fit(data, epochs=5, verbose=0)
    assert data.epochs_seen == 5 and h.history["loss"][-1] < 0.2 * h.history["loss"][0]
    assert model.evaluate(Batches(), verbose=0) == pytest.approx(
        float(np.mean((model.predict(x, verbose=0) - y) ** 2)), rel=1e-5)
    assert model.predict(Batches(with_y=False), verbose=0).shape == (40, 1)


def test_keras_ops_coverage_and_missing_names():
    kops = pytest.importorskip("keras").ops
    names = [n for n in dir(kops) if not n.startswith("_") and callable(getattr(kops, n))]
    have, missing = [], []
    for n in names:
        try:
            getattr(keras.ops, n)
            have.append(n)
        except AttributeError as e:
            assert "mylib does not provide it" in str(e) and "use" in str(e), n
            missing.append(n)
    assert len(have) >= 290, missing
    for n in ("mean", "einsum", "conv", "cond", "scan", "top_k", "segment_sum", "softmax"):
        assert n in have


def test_cifar10_and_fashion_mnist_read_keras_files(tmp_path, monkeypatch):
    import gzip
    import pickle

    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    d = tmp_path / "datasets" / "cifar-10-batches-py"
    d.mkdir(parents=True)
    rng = np.random.default_rng(0)
    batches = []
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 255, (4, 3072), dtype=np.uint8)
        labels = [int(v) for v in rng.integers(0, 10, 4)]
        with open(d / name, "wb") as f:  # the CIFAR archive's format: a dict of bytes keys
            pickle.dump({b"data": data, b"labels": labels}, f)
        batches.append((data, labels))
    (xtr, ytr), (xte, yte) = keras.datasets.cifar10.load_data()
    assert xtr.shape == (20, 32, 32, 3) and ytr.shape == (20, 1) and xte.shape == (4, 32, 32, 3)
    np.testing.assert_array_equal(xtr[0], batches[0][0][0].reshape(3, 32, 32).transpose(1, 2, 0))
    np.testing.assert_array_equal(yte[:, 0], batches[5][1])

    f = tmp_path / "datasets" / "fashion-mnist"
    f.mkdir()
    imgs = {n: rng.integers(0, 255, (n, 28, 28), dtype=np.uint8) for n in (5, 3)}
    for prefix, n in (("train", 5), ("t10k", 3)):
        with gzip.open(f / f"{prefix}-labels-idx1-ubyte.gz", "wb") as g:
            g.write(b"\0" * 8 + np.arange(n, dtype=np.uint8).tobytes())
        with gzip.open(f / f"{prefix}-images-idx3-ubyte.gz", "wb") as g:
            g.write(b"\0" * 16 + imgs[n].tobytes())
    (a, b), (c, e) = keras.datasets.fashion_mnist.load_data()
    np.testing.assert_array_equal(a, imgs[5])
    np.testing.assert_array_equal(c, imgs[3])
    np.testing.assert_array_equal(e, np.arange(3))


def test_timeseries_dataset_from_array_windows_and_fit():
    data = np.arange(20, dtype=np.float32)[:, None]
    ds = keras.utils.timeseries_dataset_from_array(data, data[:, 0] * 10, sequence_length=4,
                                                   sequence_stride=3, sampling_rate=2,
                                                   batch_size=2)
    batches = list(ds)
    xs = np.concatenate([np.asarray(b[0]) for b in batches])
    ys = np.concatenate([np.asarray(b[1]) for b in batches])
    starts = np.arange(0, 20 - 6, 3)  # windows of 4 samples, 2 apart, every 3 steps
    np.testing.assert_array_equal(xs[:, :, 0], starts[:, None] + np.arange(0, 8, 2))
    np.testing.assert_array_equal(ys, starts * 10)
    assert [len(np.asarray(b[0])) for b in batches] == [2, 2, 1]
    inp = keras.Input(shape=(4, 1))
    model = keras.Model(inp, keras.layers.Dense(1)(keras.layers.Flatten()(inp)))
    model.compile(optimizer="sgd", loss="mse")
    model.fit(ds, epochs=1, verbose=0)
