"""FlaxLayer (linen and nnx modules as layers) and Lambda, checked against hand-written
optax loops on the same modules and against jax.grad."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import linen as nn
from flax import nnx

import mylib as ml
from mylib import layers as L
from mylib import errors


class LinenMLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(2)(nn.tanh(nn.Dense(8)(x)))


class NnxMLP(nnx.Module):
    def __init__(self, rngs):
        self.l1 = nnx.Linear(3, 8, rngs=rngs)
        self.l2 = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.l2(jnp.tanh(self.l1(x)))


def _data(n=48):
    rs = np.random.RandomState(0)
    X = rs.randn(n, 3).astype(np.float32)
    Y = np.stack([X[:, 0] * X[:, 1], np.sin(X[:, 2])], 1).astype(np.float32)
    return X, Y


def _optax_losses(loss_of_params, params, X, Y, batch, epochs, lr):
    """Adam over unshuffled batches; the per-epoch Keras loss (batch-size-weighted mean
    of the losses before each update) and the final params."""
    # A negligible epsilon: optax.adam adds it to the bias-corrected sqrt(v), Keras's
    # Adam (mylib's) to the raw one; the rules agree only as epsilon -> 0.
    tx = optax.adam(lr, eps=1e-12)
    st = tx.init(params)
    hist = []
    step = jax.jit(jax.value_and_grad(loss_of_params))
    for _ in range(epochs):
        tot = 0.0
        for lo in range(0, len(X), batch):
            xb, yb = X[lo:lo + batch], Y[lo:lo + batch]
            loss, g = step(params, xb, yb)
            tot += float(loss) * len(xb)
            up, st = tx.update(g, st, params)
            params = optax.apply_updates(params, up)
        hist.append(tot / len(X))
    return hist, params


def _fit(layer, X, Y, batch, epochs, lr):
    m = ml.Sequential([L.Input(shape=(3,)), layer])
    m.compile(ml.optimizers.Adam(learning_rate=lr, epsilon=1e-12), "mse")
    h = m.fit(X, Y, batch_size=batch, epochs=epochs, shuffle=False, verbose=0)
    return m, h.history["loss"]


def test_linen_mlp_fit_matches_optax_loop():
    X, Y = _data()
    layer = L.FlaxLayer(LinenMLP(), seed=3)
    m, hist = _fit(layer, X, Y, batch=16, epochs=3, lr=0.02)
    assert [w.name for w in layer.weights] == [
        "flax_layer/params/Dense_0/bias:0", "flax_layer/params/Dense_0/kernel:0",
        "flax_layer/params/Dense_1/bias:0", "flax_layer/params/Dense_1/kernel:0"]
    assert all(w.trainable for w in layer.weights) and len(m.trainable_weights) == 4
    v0 = LinenMLP().init(jax.random.key(3), jnp.zeros((1, 3)))
    ref_hist, ref = _optax_losses(
        lambda p, x, y: jnp.mean((LinenMLP().apply(p, x) - y) ** 2), v0, X, Y, 16, 3, 0.02)
    np.testing.assert_allclose(hist, ref_hist, rtol=1e-4)
    ref_leaves = jax.tree_util.tree_leaves(ref)
    for got, want in zip(m.get_weights(), ref_leaves):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(m.predict(X, verbose=0), LinenMLP().apply(ref, X),
                               rtol=1e-4, atol=1e-5)


def test_nnx_mlp_fit_matches_optax_loop():
    X, Y = _data()
    module = NnxMLP(nnx.Rngs(7))
    graphdef, params0, rest = nnx.split(module, nnx.Param, ...)
    layer = L.FlaxLayer(module)
    m, hist = _fit(layer, X, Y, batch=16, epochs=3, lr=0.02)
    assert [w.name for w in layer.weights] == [
        "flax_layer/l1/bias:0", "flax_layer/l1/kernel:0", "flax_layer/l2/bias:0",
        "flax_layer/l2/kernel:0"]

    def loss(p, x, y):
        return jnp.mean((nnx.merge(graphdef, p, rest)(x) - y) ** 2)

    ref_hist, ref = _optax_losses(loss, params0, X, Y, 16, 3, 0.02)
    np.testing.assert_allclose(hist, ref_hist, rtol=1e-4)
    for got, want in zip(m.get_weights(), jax.tree_util.tree_leaves(ref)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["linen", "nnx"])
def test_flax_gradients_match_jax_grad(kind):
    X, _ = _data(5)
    if kind == "linen":
        mod = LinenMLP()
        tree = mod.init(jax.random.key(0), jnp.zeros((1, 3)))

        def f(t, x):
            return jnp.sum(mod.apply(t, x) ** 3)
        layer = L.FlaxLayer(mod)
    else:
        mod = NnxMLP(nnx.Rngs(1))
        graphdef, tree, rest = nnx.split(mod, nnx.Param, ...)

        def f(t, x):
            return jnp.sum(nnx.merge(graphdef, t, rest)(x) ** 3)
        layer = L.FlaxLayer(mod)
    x = ml.placeholder("float32", [None, 3])
    y = layer(x)
    assert y.op.type == "FlaxCall" and y.shape.as_list() == [None, 2]
    loss = ml.reduce_sum(y ** 3)
    grads = ml.gradients(loss, layer.weights + [x])
    with ml.Session() as sess:
        sess.run(ml.global_variables_initializer())
        got = sess.run(grads, {x: X})
    want_p, want_x = jax.grad(f, argnums=(0, 1))(tree, X)
    for a, b in zip(got[:-1], jax.tree_util.tree_leaves(want_p)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[-1], want_x, rtol=1e-5, atol=1e-6)


def test_flax_layer_multiple_inputs_outputs_and_method():
    class Two(nn.Module):
        @nn.compact
        def __call__(self, a, b):
            h = nn.Dense(4)(jnp.concatenate([a, b], -1))
            return {"sum": h.sum(-1), "h": h}

        def first(self, a, b):
            return self(a, b)["h"] * 2

    a, b = L.Input(shape=(2,)), L.Input(shape=(3,))
    out = L.FlaxLayer(Two())([a, b])
    assert set(out) == {"sum", "h"} and out["h"].shape.as_list() == [None, 4]
    assert out["sum"].shape.as_list() == [None]
    layer = L.FlaxLayer(Two(), method="first")
    m = ml.Model([a, b], layer([a, b]))
    xa, xb = np.ones((2, 2), np.float32), np.ones((2, 3), np.float32)
    w = layer.get_weights()  # bias, kernel
    np.testing.assert_allclose(m.predict([xa, xb], verbose=0),
                               2 * (np.ones((2, 5)) @ w[1] + w[0]), rtol=1e-5)


def test_flax_layer_errors_and_process_local_graph():
    with pytest.raises(TypeError, match="flax.linen or flax.nnx"):
        L.FlaxLayer(lambda x: x)
    x = ml.placeholder("float32", [None, 3])
    layer = L.FlaxLayer(LinenMLP())
    y = layer(x)
    with pytest.raises(NotImplementedError, match="save_weights"):
        layer.get_config()
    # A graph imported elsewhere has the op but not the module.
    from mylib.layers import interop

    entry = interop._MODULES.pop(layer._module_id)
    try:
        with ml.Session() as sess:
            sess.run(ml.global_variables_initializer())
            with pytest.raises(errors.NotFoundError, match="process that built them"):
                sess.run(y, {x: np.ones((1, 3), np.float32)})
    finally:
        interop._MODULES[layer._module_id] = entry


# ---------------------------------------------------------------- Lambda
def test_lambda_builds_ops_and_trains():
    x = L.Input(shape=(3,))
    h = L.Lambda(lambda t: t * 2.0 + 1.0)(x)
    y = L.Dense(1)(L.Lambda(lambda t, scale: ml.tanh(t) * scale, arguments={"scale": 3.0})(h))
    m = ml.Model(x, y)
    X = np.random.RandomState(0).randn(32, 3).astype(np.float32)
    Y = X.sum(1, keepdims=True).astype(np.float32)
    k, b = m.get_weights()
    np.testing.assert_allclose(m.predict(X, verbose=0), np.tanh(X * 2 + 1) * 3 @ k + b,
                               rtol=1e-5, atol=1e-5)
    m.compile(ml.optimizers.Adam(0.05), "mse")
    h_ = m.fit(X, Y, epochs=5, batch_size=8, verbose=0).history["loss"]
    assert h_[-1] < h_[0]


def test_lambda_output_shape_and_config():
    lam = L.Lambda(lambda t: t[:, :2], output_shape=(2,))
    assert lam.compute_output_shape((None, 5)) == (None, 2)
    lam2 = L.Lambda(lambda t: t, output_shape=lambda s: s)
    assert lam2.compute_output_shape((4, 3)) == (4, 3)
    x = L.Input(shape=(5,))
    assert lam(x).shape.as_list() == [None, 2]
    clone = L.Lambda.from_config(lam.get_config())
    assert clone.function is lam.function and clone.compute_output_shape((1, 5)) == (1, 2)
    with pytest.raises(TypeError, match="callable"):
        L.Lambda(3)


def test_lambda_saving_needs_a_registered_function(tmp_path):
    def double(t):
        return t * 2.0

    x = L.Input(shape=(2,))
    m = ml.Model(x, L.Dense(1)(L.Lambda(double)(x)))
    with pytest.raises(ValueError, match="register"):
        m.save(tmp_path / "a.mylib")

    ml.saving.register_serializable(package="test_interop")(double)
    m.save(tmp_path / "b.mylib")
    m2 = ml.models.load_model(tmp_path / "b.mylib")
    X = np.ones((3, 2), np.float32)
    np.testing.assert_allclose(m2.predict(X, verbose=0), m.predict(X, verbose=0), rtol=1e-6)
