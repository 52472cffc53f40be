"""Sequential, functional and subclassed models: same predictions for the same weights,
multi-input/output, weights, predict batching, summary."""

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L


def numpy_mlp(x, w):
    h = np.maximum(x @ w[0] + w[1], 0)
    return h @ w[2] + w[3]


class MLP(ml.Model):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.hidden = L.Dense(8, activation="relu")
        self.drop = L.Dropout(0.5)
        self.out = L.Dense(2)

    def call(self, inputs, training=None):
        return self.out(self.drop(self.hidden(inputs), training=training))


def test_three_model_styles_agree_on_the_same_weights():
    rs = np.random.RandomState(0)
    X = rs.randn(11, 5).astype(np.float32)
    seq = ml.Sequential([L.Dense(8, activation="relu"), L.Dropout(0.5), L.Dense(2)])
    seq_in = ml.Sequential([L.Input(shape=(5,)), L.Dense(8, activation="relu"), L.Dense(2)])
    x = L.Input(shape=(5,))
    fun = ml.Model(x, L.Dense(2)(L.Dropout(0.5)(L.Dense(8, activation="relu")(x))))
    sub = MLP()
    assert sub.inputs is None and seq.inputs is None  # deferred until data
    p0 = seq.predict(X, batch_size=4)
    w = seq.get_weights()
    assert [a.shape for a in w] == [(5, 8), (8,), (8, 2), (2,)]
    np.testing.assert_allclose(p0, numpy_mlp(X, w), rtol=1e-5, atol=1e-5)
    sub.predict(X[:1])  # traced on the data's shape
    for m in (seq_in, fun, sub):
        m.set_weights(w)
        np.testing.assert_allclose(m.predict(X, batch_size=3), p0, rtol=1e-6, atol=1e-6)
    assert [l.name for l in sub.layers] == [sub.hidden.name, sub.drop.name, sub.out.name]
    assert len(sub.trainable_weights) == 4


def test_sequential_add_and_input_shape_kwarg_build_right_away():
    m = ml.Sequential()
    m.add(L.Dense(4, input_shape=(3,)))
    assert m.outputs is not None and m.outputs[0].shape.as_list() == [None, 4]
    m.add(L.Dense(1))
    assert m.outputs[0].shape.as_list() == [None, 1]
    assert [l.name for l in m.layers] == ["dense", "dense_1"]
    assert m.predict(np.ones((2, 3))).shape == (2, 1)
    with pytest.raises(ValueError, match="unique names"):
        m.add(L.Dense(1, name="dense"))


def test_functional_multi_input_output_lists_and_dicts():
    a = L.Input(shape=(3,), name="a")
    b = L.Input(shape=(2,), name="b")
    ha = L.Dense(4, name="ha")(a)
    hb = L.Dense(4, name="hb")(b)
    s = ha + hb  # ops between layers are nodes of the model, as in Keras 3
    both = ml.Model([a, b], [ha, hb, s])
    va, vb, vs = both.predict([np.ones((2, 3)), np.ones((2, 2))], verbose=0)
    np.testing.assert_allclose(vs, va + vb, rtol=1e-6)
    y1 = L.Dense(1, name="y1")(ha)
    y2 = L.Dense(2, name="y2")(hb)
    m = ml.Model(inputs={"a": a, "b": b}, outputs=[y1, y2])
    assert m.output_names == ["y1", "y2"]
    A, B = np.ones((5, 3), np.float32), np.full((5, 2), 2.0, np.float32)
    o1, o2 = m.predict({"a": A, "b": B}, batch_size=2)
    w = {v.name: val for v, val in zip(m.weights, m.get_weights())}
    np.testing.assert_allclose(o1, (A @ w["ha/kernel:0"] + w["ha/bias:0"]) @ w["y1/kernel:0"]
                               + w["y1/bias:0"], rtol=1e-5)
    np.testing.assert_allclose(o2, (B @ w["hb/kernel:0"] + w["hb/bias:0"]) @ w["y2/kernel:0"]
                               + w["y2/bias:0"], rtol=1e-5)
    m2 = ml.Model([a, b], {"first": y1, "second": y2})
    out = m2.predict([A, B])
    assert set(out) == {"first", "second"} and out["second"].shape == (5, 2)
    with pytest.raises(ValueError, match="Graph disconnected"):
        ml.Model(a, y2)


def test_inputs_are_named_by_their_layers_when_the_graph_renamed_the_placeholder():
    """A dict of data is keyed by the names given to `Input`, as in Keras, even where the
    graph already held an op of that name (a model built earlier in the same program)."""
    g = ml.Graph()
    with g.as_default():
        ml.placeholder("float32", [None, 1], name="thal")
        thal = L.Input(shape=(1,), name="thal")
        age = L.Input(shape=(1,), name="age")
        assert thal.op.name == "thal_1"
        out = L.Dense(1, name="out")(L.Concatenate()([thal, age]))
        m = ml.Model([thal, age], out)
        assert m.input_names == ["thal", "age"]
        T, A = np.ones((4, 1), np.float32), np.full((4, 1), 3.0, np.float32)
        k, b = m.get_weights()
        got = m.predict({"thal": T, "age": A}, verbose=0)
        np.testing.assert_allclose(got, np.concatenate([T, A], 1) @ k + b, rtol=1e-5)


def test_nested_model_as_layer():
    inner = ml.Sequential([L.Input(shape=(3,)), L.Dense(2, name="inner_dense")])
    x = L.Input(shape=(3,))
    outer = ml.Model(x, L.Dense(1, name="head")(inner(x)))
    X = np.random.RandomState(1).rand(4, 3).astype(np.float32)
    wi = inner.get_weights()
    wo = outer.get_layer("head").get_weights()
    np.testing.assert_allclose(outer.predict(X), (X @ wi[0] + wi[1]) @ wo[0] + wo[1], rtol=1e-5)
    assert len(outer.weights) == 4


def test_get_set_weights_roundtrip_and_shape_error():
    m = ml.Sequential([L.Input(shape=(3,)), L.Dense(2)])
    w = [np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1.0, -1.0], np.float32)]
    m.set_weights(w)
    got = m.get_weights()
    for a, b in zip(got, w):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(m.predict(np.ones((1, 3))), [[7.0, 8.0]])
    with pytest.raises(ValueError, match=r"dense/kernel:0.*expected shape \(3, 2\).*\(2, 3\)"):
        m.set_weights([np.zeros((2, 3)), np.zeros(2)])
    with pytest.raises(ValueError, match="list of 1 arrays, but it has 2 weights"):
        m.set_weights([np.zeros((3, 2))])
    np.testing.assert_array_equal(m.get_weights()[0], w[0])  # nothing changed


def test_predict_batches_with_short_last_batch():
    m = ml.Sequential([L.Input(shape=(2,)), L.Dense(1, kernel_initializer="ones")])
    X = np.arange(14, dtype=np.float32).reshape(7, 2)
    for bs in (1, 3, 7, 32):
        np.testing.assert_allclose(m.predict(X, batch_size=bs)[:, 0], X.sum(1))
    assert m.predict(X[:0]).shape == (0, 1)


def test_predict_input_shape_error_is_clear():
    m = ml.Sequential([L.Input(shape=(4,)), L.Dense(1)])
    with pytest.raises(ValueError, match=r"expects data of shape \(None, 4\), but received an "
                                         r"array of shape \(3, 5\)"):
        m.predict(np.ones((3, 5)))


def test_model_called_on_symbolic_tensor_builds_ops():
    m = ml.Sequential([L.Input(shape=(2,)), L.Dense(3)])
    x2 = L.Input(shape=(2,))
    y2 = m(x2)
    assert y2.shape.as_list() == [None, 3]
    w = m.get_weights()
    sess = L.backend.get_session(y2.graph)
    np.testing.assert_allclose(sess.run(y2, {x2: np.ones((1, 2))}), np.ones((1, 2)) @ w[0] + w[1],
                               rtol=1e-6)


def test_summary_lists_layers_shapes_and_param_counts(capsys):
    m = ml.Sequential([L.Input(shape=(4,)), L.Dense(8, activation="relu"), L.Dense(3)],
                      name="clf")
    m.layers[0].trainable = False
    m.summary()
    out = capsys.readouterr().out
    assert 'Model: "clf"' in out
    assert "dense (Dense)" in out and "(None, 8)" in out and "40" in out
    assert "dense_1 (Dense)" in out and "(None, 3)" in out and "27" in out
    assert "Total params: 67" in out
    assert "Trainable params: 27" in out and "Non-trainable params: 40" in out
    with pytest.raises(ValueError, match="not yet been built"):
        ml.Sequential([L.Dense(2)]).summary()
