"""The layer battery: outputs against numpy, shapes, weights, names, errors, config."""

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib.layers import backend


def run(t, feed=None):
    return backend.get_session(t.graph).run(t, feed)


def init(layer):
    backend.ensure_initialized(layer.weights)


def test_dense_matches_numpy_of_its_weights():
    x = L.Input(shape=(5,))
    d = L.Dense(3, activation="tanh")
    y = d(x)
    assert y.shape.as_list() == [None, 3]
    assert d.kernel.shape.as_list() == [5, 3] and d.bias.shape.as_list() == [3]
    assert [w.name for w in d.weights] == ["dense/kernel:0", "dense/bias:0"]
    init(d)
    k, b = d.get_weights()
    assert np.all(b == 0)  # bias_initializer="zeros"
    limit = np.sqrt(6.0 / (5 + 3))  # glorot_uniform
    assert np.all(np.abs(k) <= limit) and np.std(k) > 0
    xv = np.random.RandomState(0).randn(7, 5).astype(np.float32)
    np.testing.assert_allclose(run(y, {x: xv}), np.tanh(xv @ k + b), rtol=1e-5, atol=1e-6)


def test_dense_on_rank3_input_and_no_bias():
    x = L.Input(shape=(2, 4))
    d = L.Dense(6, use_bias=False, kernel_initializer="ones")
    y = d(x)
    assert y.shape.as_list() == [None, 2, 6]
    assert len(d.weights) == 1 and d.bias is None
    init(d)
    xv = np.arange(16, dtype=np.float32).reshape(2, 2, 4)
    np.testing.assert_allclose(run(y, {x: xv}), np.repeat(xv.sum(-1, keepdims=True), 6, -1))


def test_layer_names_are_unique_per_graph_keras_style():
    names = [L.Dense(1).name, L.Dense(1).name, L.Dropout(0.1).name, L.Dense(1).name]
    assert names == ["dense", "dense_1", "dropout", "dense_2"]
    with ml.Graph().as_default():
        assert L.Dense(1).name == "dense"
    assert L.Dense(1, name="head").name == "head"


def test_incompatible_input_shape_error_names_layer_and_shapes():
    d = L.Dense(2, name="classifier")
    d(L.Input(shape=(4,)))
    with pytest.raises(ValueError) as e:
        d(L.Input(shape=(3,)))
    msg = str(e.value)
    assert '"classifier"' in msg and "value 4" in msg and "(None, 3)" in msg
    with pytest.raises(ValueError, match=r'layer "dense".*min_ndim=2.*\(None,\)'):
        L.Dense(2)(L.Input(shape=()))


def test_trainable_flag_moves_weights():
    d = L.Dense(2)
    d(L.Input(shape=(3,)))
    assert len(d.trainable_weights) == 2 and d.non_trainable_weights == []
    d.trainable = False
    assert d.trainable_weights == [] and len(d.non_trainable_weights) == 2
    assert len(d.weights) == 2


def test_add_weight_non_trainable_and_count_params():
    class Scale(L.Layer):
        def build(self, input_shape):
            self.s = self.add_weight("s", [input_shape[-1]], "ones")
            self.c = self.add_weight("count", [], "zeros", trainable=False)

        def call(self, inputs):
            return inputs * self.s

    s = Scale()
    y = s(L.Input(shape=(3,)))
    assert [w.name for w in s.trainable_weights] == ["scale/s:0"]
    assert [w.name for w in s.non_trainable_weights] == ["scale/count:0"]
    assert s.count_params() == 4
    init(s)
    np.testing.assert_allclose(run(y, {y.op.inputs[0]: np.ones((2, 3))}), np.ones((2, 3)))


def test_dropout_identity_at_inference_inverted_scaling_in_training():
    x = L.Input(shape=(1000,))
    drop = L.Dropout(0.25, seed=3)
    y_inf = drop(x)
    y_tr = drop(x, training=True)
    xv = np.random.RandomState(1).rand(4, 1000).astype(np.float32) + 1.0
    np.testing.assert_array_equal(run(y_inf, {x: xv}), xv)
    out = run(y_tr, {x: xv})
    kept = out != 0
    np.testing.assert_allclose(out[kept], xv[kept] / 0.75, rtol=1e-6)
    assert 0.70 < kept.mean() < 0.80
    # No random op in the inference graph.
    types = {op.type for op in y_inf.graph.get_operations()}
    assert y_inf.op.type == "Identity" and y_inf.op.inputs[0] is x
    assert types  # sanity


def test_dropout_noise_shape_shares_mask():
    x = L.Input(shape=(6, 50))
    y = L.Dropout(0.5, noise_shape=(None, 1, 50), seed=1)(x, training=True)
    out = run(y, {x: np.ones((3, 6, 50), np.float32)})
    assert np.all(out == out[:, :1, :])  # same mask along axis 1
    with pytest.raises(ValueError, match="rate"):
        L.Dropout(1.5)


def test_flatten_and_reshape():
    x = L.Input(shape=(2, 3, 4))
    f = L.Flatten()(x)
    r = L.Reshape((4, -1))(x)
    assert f.shape.as_list() == [None, 24] and r.shape.as_list() == [None, 4, 6]
    xv = np.arange(48, dtype=np.float32).reshape(2, 2, 3, 4)
    np.testing.assert_array_equal(run(f, {x: xv}), xv.reshape(2, 24))
    np.testing.assert_array_equal(run(r, {x: xv}), xv.reshape(2, 4, 6))
    with pytest.raises(ValueError, match="total size"):
        L.Reshape((5, 5))(x)


@pytest.mark.parametrize("name,fn", [
    ("relu", lambda z: np.maximum(z, 0)),
    ("sigmoid", lambda z: 1 / (1 + np.exp(-z))),
    ("tanh", np.tanh),
    ("linear", lambda z: z),
    ("softplus", lambda z: np.log1p(np.exp(z))),
    ("relu6", lambda z: np.clip(z, 0, 6)),
    ("elu", lambda z: np.where(z > 0, z, np.exp(z) - 1)),
    ("selu", lambda z: 1.0507009873554805 * np.where(z > 0, z, 1.6732632423543772 * (np.exp(z) - 1))),
    ("softmax", lambda z: np.exp(z) / np.exp(z).sum(-1, keepdims=True)),
])
def test_activation_layer_by_name(name, fn):
    x = L.Input(shape=(5,))
    y = L.Activation(name)(x)
    xv = np.linspace(-8, 8, 20, dtype=np.float32).reshape(4, 5)
    np.testing.assert_allclose(run(y, {x: xv}), fn(xv.astype(np.float64)), rtol=2e-5, atol=1e-6)


def test_gelu_matches_erf_form():
    from math import erf
    x = L.Input(shape=(3,))
    y = L.Activation("gelu")(x)
    xv = np.array([[-2.0, 0.5, 3.0]], np.float32)
    ref = np.array([[v * 0.5 * (1 + erf(v / np.sqrt(2))) for v in xv[0]]])
    np.testing.assert_allclose(run(y, {x: xv}), ref, rtol=1e-5)


def test_unknown_activation_and_initializer_names():
    with pytest.raises(ValueError, match="Unknown activation"):
        L.Dense(2, activation="relux")
    with pytest.raises(ValueError, match="Unknown initializer"):
        L.Dense(2, kernel_initializer="glorot")
    with pytest.raises(ValueError, match="units"):
        L.Dense(0)


def _init_values(init, shape, graph_seed=None):
    with ml.Graph().as_default() as g:
        if graph_seed is not None:
            ml.set_random_seed(graph_seed)
        v = ml.Variable(lambda: L.initializers.get(init)(shape, "float32"))
        backend.ensure_initialized([v])
        return backend.get_values([v])[0]


def test_initializer_seeds_are_deterministic_and_statistics_right():
    from mylib.layers import initializers as I
    a = _init_values(I.GlorotUniform(seed=7), (200, 100))
    b = _init_values(I.GlorotUniform(seed=7), (200, 100))
    np.testing.assert_array_equal(a, b)
    limit = np.sqrt(6 / 300)
    assert np.abs(a).max() <= limit and abs(a.std() - limit / np.sqrt(3)) < 0.02 * limit
    c = _init_values("he_normal", (400, 100), graph_seed=1)
    d = _init_values("he_normal", (400, 100), graph_seed=1)
    np.testing.assert_array_equal(c, d)
    assert abs(c.std() - np.sqrt(2 / 400)) < 0.05 * np.sqrt(2 / 400)
    assert np.abs(c).max() <= 2 * np.sqrt(2 / 400) / 0.87962566103423978 + 1e-6
    np.testing.assert_array_equal(_init_values(I.Constant(2.5), (2, 3)), np.full((2, 3), 2.5))
    np.testing.assert_array_equal(_init_values("ones", (3,)), np.ones(3))
    u = _init_values(I.RandomUniform(-1, 3, seed=2), (1000,))
    assert u.min() >= -1 and u.max() <= 3 and abs(u.mean() - 1) < 0.15


def test_dense_config_roundtrip():
    d = L.Dense(4, activation="relu", use_bias=False, name="d0",
                kernel_initializer=L.initializers.HeNormal(seed=3))
    cfg = d.get_config()
    assert cfg["units"] == 4 and cfg["activation"] == "relu" and cfg["name"] == "d0"
    d2 = L.Dense.from_config({**cfg, "name": "d1"})
    assert d2.units == 4 and d2.use_bias is False and d2.activation is L.activations.relu
    assert isinstance(d2.kernel_initializer, L.initializers.HeNormal)
    assert d2.kernel_initializer.seed == 3


def test_layer_called_on_numpy_runs_it():
    d = L.Dense(2)
    x = np.ones((2, 3), "float32")
    w, b = d(x), d.get_weights()
    np.testing.assert_allclose(w, x @ b[0] + b[1], rtol=1e-6)
    with pytest.raises(TypeError, match=r'Layer "dense" must be called on symbolic'):
        d("abc")


def test_regularizer_losses():
    d = L.Dense(2, kernel_initializer="ones", kernel_regularizer=L.regularizers.L2(0.1))
    d(L.Input(shape=(3,)))
    assert len(d.losses) == 1
    init(d)
    assert np.isclose(run(d.losses[0]), 0.1 * 6)
