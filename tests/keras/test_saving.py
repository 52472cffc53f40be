"""Model files: save/load_model round trips (predictions and continued training),
configs, JSON, clone_model, weights files, the class registry, and corrupt files."""

import io
import json
import zipfile

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L

RS = np.random.RandomState(0)
X = RS.randn(48, 5).astype(np.float32)
Y = RS.randn(48, 2).astype(np.float32)


def seq_model():
    return ml.Sequential([L.Input(shape=(5,)), L.Dense(8, activation="relu"), L.Dense(2)])


def functional_model():
    a = L.Input(shape=(5,), name="a")
    b = L.Input(shape=(3,), name="b")
    h = L.Dense(6, activation="tanh", name="ha")(a)
    c = L.Concatenate(name="cat")([h, b])
    shared = L.Dense(4, name="shared")
    out1 = L.Dense(2, name="out1")(shared(c))
    out2 = L.Dense(1, activation="sigmoid", name="out2")(L.Dense(4, name="hb")(b))
    return ml.Model({"a": a, "b": b}, [out1, out2])


def fit(m, x, y, epochs):
    m.fit(x, y, epochs=epochs, batch_size=16, shuffle=False, verbose=0)


@pytest.mark.parametrize("build", [seq_model, lambda: ml.Sequential([L.Dense(8), L.Dense(2)])],
                         ids=["sequential", "deferred_sequential"])
def test_save_load_predicts_identically_and_continues_training_exactly(tmp_path, build):
    m = build()
    m.compile(ml.optimizers.Adam(0.01), "mse", metrics=["mae"])
    fit(m, X, Y, 2)
    path = tmp_path / "model.mylib"
    m.save(path)
    m2 = ml.models.load_model(path)
    assert type(m2) is ml.Sequential and m2.compiled
    np.testing.assert_array_equal(m.predict(X, verbose=0), m2.predict(X, verbose=0))
    assert int(ml.layers.backend.get_values([m2.optimizer.iterations])[0]) == 6
    fit(m, X, Y, 3)
    fit(m2, X, Y, 3)
    for a, b in zip(m.get_weights(), m2.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert m2.evaluate(X, Y, verbose=0) == m.evaluate(X, Y, verbose=0)


def test_functional_multi_io_round_trip(tmp_path):
    m = functional_model()
    xb = RS.randn(48, 3).astype(np.float32)
    y2 = (RS.rand(48, 1) > 0.5).astype(np.float32)
    m.compile("adam", loss=["mse", "binary_crossentropy"], loss_weights=[1.0, 0.5],
              metrics=[["mae"], ["accuracy"]])
    fit(m, {"a": X, "b": xb}, [Y, y2], 1)
    m.save(tmp_path / "f.mylib")
    m2 = ml.models.load_model(tmp_path / "f.mylib")
    assert [l.name for l in m2.layers] == [l.name for l in m.layers]
    for p, q in zip(m.predict({"a": X, "b": xb}, verbose=0), m2.predict({"a": X, "b": xb},
                                                                       verbose=0)):
        np.testing.assert_array_equal(p, q)
    fit(m, {"a": X, "b": xb}, [Y, y2], 1)
    fit(m2, {"a": X, "b": xb}, [Y, y2], 1)
    for a, b in zip(m.get_weights(), m2.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert m2.metrics_names == m.metrics_names


def test_file_is_a_zip_of_json_and_plain_arrays(tmp_path):
    m = seq_model()
    m.compile("adam", "mse")
    fit(m, X, Y, 1)
    m.save(tmp_path / "m.mylib")
    with zipfile.ZipFile(tmp_path / "m.mylib") as z:
        names = set(z.namelist())
        assert names == {"metadata.json", "config.json", "model.weights.npz", "optimizer.npz"}
        meta = json.loads(z.read("metadata.json"))
        assert meta["format"] == "mylib.model" and meta["format_version"] == 1
        cfg = json.loads(z.read("config.json"))
        assert cfg["class_name"] == "Sequential"
        assert [l["class_name"] for l in cfg["config"]["layers"]] == ["InputLayer", "Dense",
                                                                      "Dense"]
        assert cfg["compile_config"]["optimizer"]["class_name"] == "Adam"
        for member in ("model.weights.npz", "optimizer.npz"):
            with np.load(io.BytesIO(z.read(member)), allow_pickle=False) as arrs:
                assert all(arrs[k].dtype != object for k in arrs.files)


def test_config_json_clone_and_weights_files(tmp_path):
    m = functional_model()
    m2 = ml.Model.from_config(m.get_config())
    assert [w.shape.as_list() for w in m2.weights] == [w.shape.as_list() for w in m.weights]
    m3 = ml.models.model_from_json(m.to_json())
    c = ml.models.clone_model(m)
    assert [l.name for l in m3.layers] == [l.name for l in m.layers]
    w, wc = m.get_weights(), c.get_weights()
    assert any(not np.array_equal(a, b) for a, b in zip(w, wc) if a.size > 1)  # new weights
    m.save_weights(tmp_path / "w.weights")
    c.load_weights(tmp_path / "w.weights")
    for a, b in zip(m.get_weights(), c.get_weights()):
        np.testing.assert_array_equal(a, b)
    s = seq_model()
    s2 = ml.Sequential.from_config(s.get_config())
    assert [type(l).__name__ for l in s2.layers] == ["Dense", "Dense"]
    assert s2.layers[0].activation is s.layers[0].activation


def test_load_weights_checks_every_shape_first(tmp_path):
    m = seq_model()
    m.save_weights(tmp_path / "w")
    other = ml.Sequential([L.Input(shape=(5,)), L.Dense(8), L.Dense(3)])
    before = other.get_weights()
    with pytest.raises(ValueError, match=r"shape mismatch.*\(8, 3\).*\(8, 2\)"):
        other.load_weights(tmp_path / "w")
    for a, b in zip(before, other.get_weights()):
        np.testing.assert_array_equal(a, b)
    fewer = ml.Sequential([L.Input(shape=(5,)), L.Dense(8)])
    with pytest.raises(ValueError, match="holds 4 weights"):
        fewer.load_weights(tmp_path / "w")


@ml.saving.register_serializable(package="tests")
class Scale(L.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.w = self.add_weight("w", [input_shape[-1]], "ones")

    def call(self, x):
        return x * self.w * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class Unregistered(Scale):
    pass


def test_registered_custom_layer_and_unknown_class_errors(tmp_path):
    m = ml.Sequential([L.Input(shape=(5,)), Scale(3.0), L.Dense(2)])
    m.save(tmp_path / "c.mylib")
    m2 = ml.models.load_model(tmp_path / "c.mylib")
    assert isinstance(m2.layers[0], Scale) and m2.layers[0].factor == 3.0
    np.testing.assert_array_equal(m.predict(X, verbose=0), m2.predict(X, verbose=0))

    u = ml.Sequential([L.Input(shape=(5,)), Unregistered(1.5)])
    u.save(tmp_path / "u.mylib")
    with pytest.raises(ValueError, match=r"Unknown layer class 'Unregistered'.*"
                                         r"register_serializable"):
        ml.models.load_model(tmp_path / "u.mylib")
    u2 = ml.models.load_model(tmp_path / "u.mylib", custom_objects={"Unregistered": Unregistered})
    assert u2.layers[0].factor == 1.5


def rewrite(src, dst, member, fn):
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members[member] = fn(members[member])
    with zipfile.ZipFile(dst, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)


def test_tampered_and_truncated_files_give_clear_errors(tmp_path):
    m = seq_model()
    m.compile("adam", "mse")
    path = tmp_path / "m.mylib"
    m.save(path)
    data = path.read_bytes()
    (tmp_path / "trunc.mylib").write_bytes(data[: len(data) // 2])
    with pytest.raises(ml.errors.DataLossError, match="truncated or corrupted"):
        ml.models.load_model(tmp_path / "trunc.mylib")
    # A class name that is not a registered layer is never imported.
    rewrite(path, tmp_path / "evil.mylib", "config.json",
            lambda b: b.replace(b'"class_name": "Dense"', b'"class_name": "os.system"', 1))
    with pytest.raises(ValueError, match="Unknown layer class 'os.system'"):
        ml.models.load_model(tmp_path / "evil.mylib")
    # Architecture and weights that disagree.
    rewrite(path, tmp_path / "shape.mylib", "config.json",
            lambda b: b.replace(b'"units": 8', b'"units": 7', 1))
    with pytest.raises(ValueError, match="shape mismatch"):
        ml.models.load_model(tmp_path / "shape.mylib")

    # A pickled (object) array is refused.
    def objects(_):
        buf = io.BytesIO()
        np.savez(buf, w0000=np.array([object()], dtype=object))
        return buf.getvalue()

    rewrite(path, tmp_path / "pickle.mylib", "model.weights.npz", objects)
    # (refused from its .npy header, before any data is read).
    with pytest.raises(ml.errors.DataLossError, match="holds object"):
        ml.models.load_model(tmp_path / "pickle.mylib")
    (tmp_path / "foreign.mylib").write_bytes(b"hello")
    with pytest.raises(ml.errors.DataLossError):
        ml.models.load_model(tmp_path / "foreign.mylib")


class Sub(ml.Model):
    def __init__(self, units=3, **kw):
        super().__init__(**kw)
        self.units = units
        self.d1 = L.Dense(6, activation="relu")
        self.d2 = L.Dense(units)

    def call(self, x):
        return self.d2(self.d1(x))

    def get_config(self):
        return {**super().get_config(), "units": self.units}


RegisteredSub = ml.saving.register_serializable(package="tests", name="RegisteredSub")(
    type("RegisteredSub", (Sub,), {}))


def test_subclassed_models_weights_only_unless_registered(tmp_path):
    m = Sub()
    m.predict(X[:2], verbose=0)
    with pytest.raises(ValueError, match="save_weights"):
        m.save(tmp_path / "s.mylib")
    m.save_weights(tmp_path / "s.weights")
    fresh = Sub()
    with pytest.raises(ValueError, match="not been built"):
        fresh.load_weights(tmp_path / "s.weights")
    fresh.build((None, 5))
    fresh.load_weights(tmp_path / "s.weights")
    np.testing.assert_array_equal(m.predict(X, verbose=0), fresh.predict(X, verbose=0))

    r = RegisteredSub(units=2)
    r.compile("adam", "mse")
    fit(r, X, Y, 1)
    r.save(tmp_path / "r.mylib")
    r2 = ml.models.load_model(tmp_path / "r.mylib")
    assert type(r2) is RegisteredSub and r2.units == 2
    np.testing.assert_array_equal(r.predict(X, verbose=0), r2.predict(X, verbose=0))


def test_summary_of_a_built_subclassed_model_shows_shapes():
    m = Sub()
    m.predict(X[:2], verbose=0)
    lines = []
    m.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "(None, 6)" in text and "(None, 3)" in text and "Total params: 57" in text
