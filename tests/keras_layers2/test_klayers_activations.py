"""Activation layers (ReLU, LeakyReLU, PReLU, ELU, Softmax) and Masking against Keras 3
(jax backend): outputs, masks, configs, save/load, and PReLU's alpha gradient against
jax.grad."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib.layers.base import get_mask

keras = pytest.importorskip("keras")

rs = np.random.RandomState(0)
X = (rs.randn(4, 5, 6) * 3).astype(np.float32)


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("kw", [
    {}, {"max_value": 6.0}, {"max_value": 2.5}, {"negative_slope": 0.1},
    {"threshold": 1.0}, {"negative_slope": 0.2, "threshold": 0.5},
    {"negative_slope": 0.3, "max_value": 4.0, "threshold": 1.5},
    {"max_value": 6.0, "negative_slope": 0.1}])
def test_relu_matches_keras(kw):
    _close(L.ReLU(**kw)(X), keras.layers.ReLU(**kw)(X))


@pytest.mark.parametrize("layer,kw", [("LeakyReLU", {}), ("LeakyReLU", {"negative_slope": 0.05}),
                                      ("ELU", {}), ("ELU", {"alpha": 0.5}),
                                      ("Softmax", {}), ("Softmax", {"axis": 1}),
                                      ("Softmax", {"axis": (1, 2)})])
def test_elementwise_layers_match_keras(layer, kw):
    _close(getattr(L, layer)(**kw)(X), getattr(keras.layers, layer)(**kw)(X))


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="max_value"):
        L.ReLU(max_value=-1.0)
    with pytest.raises(ValueError, match="negative_slope"):
        L.ReLU(negative_slope=-0.1)
    with pytest.raises(ValueError, match="threshold"):
        L.ReLU(threshold=None)
    with pytest.raises(ValueError, match="negative_slope"):
        L.LeakyReLU(negative_slope=-1)


def test_softmax_with_explicit_mask_matches_keras():
    mask = rs.rand(4, 5, 6) > 0.4
    got = L.Softmax()(X, mask=mask)
    want = keras.layers.Softmax()(X, mask=mask)
    _close(got, want)
    assert np.all(got[~mask] == 0)
    # A float mask counts where > 0.5; a broadcast [5, 6] mask too.
    _close(L.Softmax(axis=1)(X, mask=mask[0].astype(np.float32)),
           keras.layers.Softmax(axis=1)(X, mask=mask[0].astype(np.float32)))
    with pytest.raises(ValueError, match="broadcastable"):
        L.Softmax()(X, mask=np.ones((4, 5, 3), bool))


def test_masking_matches_keras_and_its_mask_reaches_softmax():
    x = X.copy()
    x[0, 3:] = 0.0
    x[2, :2] = 0.0
    # Masking: zeroed timesteps and the [batch, time] mask, as Keras.
    _close(L.Masking(0.0)(x), keras.layers.Masking(0.0)(x))
    inp = L.Input((5, 6), batch_size=4)
    m = L.Masking(0.0)(inp)
    got = ml.layers.backend.get_session(inp.graph).run(get_mask(m), {inp: x})
    np.testing.assert_array_equal(got, np.asarray(keras.layers.Masking(0.0).compute_mask(x)))
    # The propagated mask reaches Softmax, which broadcasts it from the right as Keras 3
    # does: a [batch, time] mask fits [..., batch, time] scores ...
    scores = L.Permute((2, 1))(L.Dense(4)(m))  # [4, 4, 5]
    out = L.Softmax()(scores, mask=get_mask(m))
    assert get_mask(out) is get_mask(m) or get_mask(out) is not None
    sess = ml.layers.backend.get_session(inp.graph)
    k_scores = rs.randn(4, 4, 5).astype(np.float32)
    got = sess.run(out, {scores: k_scores, inp: x})
    _close(got, keras.layers.Softmax()(k_scores, mask=np.asarray(
        keras.layers.Masking(0.0).compute_mask(x))))
    # ... and one that does not broadcast is refused by both.
    with pytest.raises(ValueError, match="broadcastable"):
        L.Softmax()(L.Dense(3)(L.Masking(0.0)(L.Input((5, 6), batch_size=4))))
    ki = keras.Input((5, 6), batch_size=4)
    km = keras.Model(ki, keras.layers.Softmax()(keras.layers.Dense(3)(
        keras.layers.Masking(0.0)(ki))))
    with pytest.raises(ValueError, match="broadcastable"):  # Keras: when it runs
        km.predict(x, verbose=0)


@pytest.mark.parametrize("shared_axes", [None, [1], [1, 2]])
def test_prelu_matches_keras_and_its_alpha_gradient_matches_jax(shared_axes):
    ours, theirs = L.PReLU(shared_axes=shared_axes), keras.layers.PReLU(shared_axes=shared_axes)
    theirs(X)
    alpha = rs.uniform(0.05, 0.5, theirs.weights[0].shape).astype(np.float32)
    theirs.set_weights([alpha])
    ours(X)
    ours.set_weights([alpha])
    _close(ours(X), theirs(X))
    assert [w.name.split("/")[-1].split(":")[0] for w in ours.trainable_weights] == ["alpha"]

    # d/d alpha of sum(prelu(x) * c), in the graph, against jax.grad of the definition.
    c = rs.randn(*X.shape).astype(np.float32)
    g = ml.Graph()
    with g.as_default():
        layer = L.PReLU(alpha_initializer=L.initializers.Constant(alpha),
                        shared_axes=shared_axes)
        xp = ml.placeholder(ml.float32, X.shape)
        loss = ml.reduce_sum(layer(xp) * c)
        (grad,) = ml.gradients(loss, [layer.alpha])
        init = ml.global_variables_initializer()
    with ml.Session(graph=g) as s:
        s.run(init)
        got = s.run(grad, {xp: X})

    def f(a):
        return jnp.sum((jnp.maximum(X, 0) - a * jnp.maximum(-X, 0)) * c)

    _close(got, jax.grad(f)(jnp.asarray(alpha)), 1e-4)


def test_prelu_trains_its_alpha_in_fit():
    x = rs.randn(256, 3).astype(np.float32)
    y = np.where(x > 0, x, 0.25 * x).astype(np.float32)  # a leaky target: alpha -> 0.25
    model = ml.Sequential([L.Input((3,)), L.PReLU()])
    model.compile(optimizer=ml.optimizers.SGD(0.5), loss="mse")
    model.fit(x, y, epochs=30, batch_size=64, verbose=0)
    _close(model.layers[-1].get_weights()[0], np.full((3,), 0.25), 1e-2)


@pytest.mark.parametrize("make", [
    lambda: L.ReLU(max_value=3.0, negative_slope=0.1, threshold=0.5),
    lambda: L.LeakyReLU(0.2), lambda: L.PReLU(alpha_regularizer="l2", shared_axes=[1]),
    lambda: L.ELU(0.7), lambda: L.Softmax(axis=(1, 2)), lambda: L.Masking(1.5)])
def test_config_round_trip(make):
    layer = make()
    cfg = layer.get_config()
    again = type(layer).from_config(cfg)
    assert again.get_config() == {**cfg, "name": again.name}
    # Keras 3 takes the same arguments and computes the same function.
    keep = {k: v for k, v in cfg.items() if k not in ("name", "trainable", "dtype",
                                                     "alpha_regularizer")}
    if "axis" in keep and isinstance(keep["axis"], list):
        keep["axis"] = tuple(keep["axis"])
    kl = getattr(keras.layers, type(layer).__name__)(**keep)
    if type(layer).__name__ != "PReLU":  # PReLU's alpha: compared above
        _close(again(X), kl(X))


def test_save_and_load_model_round_trip(tmp_path):
    inp = L.Input((5, 6))
    h = L.PReLU(alpha_initializer="ones", shared_axes=[1])(inp)
    h = L.ReLU(max_value=2.0, negative_slope=0.05)(h)
    h = L.LeakyReLU(0.1)(L.ELU(0.5)(h))
    out = L.Softmax(axis=1)(h)
    model = ml.Model(inp, out)
    model.layers[1].set_weights([rs.uniform(0.1, 0.9, (1, 6)).astype(np.float32)])
    want = model.predict(X, verbose=0)
    path = os.path.join(tmp_path, "m.mylib")
    model.save(path)
    with ml.Graph().as_default():
        again = ml.models.load_model(path)
        _close(again.predict(X, verbose=0), want)
        assert [type(l).__name__ for l in again.layers[1:]] == \
            ["PReLU", "ReLU", "ELU", "LeakyReLU", "Softmax"]
