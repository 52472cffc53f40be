"""Weight and activity regularizers add exactly to the loss; constraints hold after a
step; the noise layers act in training only; initializers by name and object, seeded."""

import numpy as np
import pytest
from layer_battery import layer_test, run

import mylib as ml
from mylib import layers as L
from mylib.layers import backend, constraints, initializers, regularizers

R = np.random.RandomState(0)


def test_kernel_bias_and_activity_regularizers_add_exactly_to_the_loss():
    inp = L.Input(shape=(4,))
    conv_in = L.Reshape((2, 2, 1))(inp)
    c = L.Conv2D(2, 2, kernel_regularizer=regularizers.l1_l2(0.01, 0.02),
                 bias_regularizer="l2", bias_initializer="ones",
                 activity_regularizer=regularizers.L1L2(l1=0.05))(conv_in)
    h = L.Flatten()(c)
    out = L.Dense(1, kernel_regularizer=regularizers.l2(0.1))(h)
    model = ml.Model(inp, out)
    model.compile(ml.optimizers.SGD(0.0), "mse")
    x = R.randn(6, 4).astype(np.float32)
    y = R.randn(6, 1).astype(np.float32)
    hist = model.fit(x, y, batch_size=6, epochs=1, verbose=0)
    k, b, k2, b2 = model.get_weights()
    act = (x @ k.reshape(4, 2) + b)  # the 2x2 "valid" conv is a matmul
    pred = act @ k2 + b2
    want = (np.mean((pred - y) ** 2) + 0.01 * np.abs(k).sum() + 0.02 * (k ** 2).sum()
            + 0.01 * (b ** 2).sum() + 0.1 * (k2 ** 2).sum() + 0.05 * np.abs(act).sum() / 6)
    np.testing.assert_allclose(hist.history["loss"][0], want, rtol=1e-5)
    # evaluate includes them too (the activity term from the inference graph)
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), want, rtol=1e-5)


def test_activity_regularization_layer_and_gradient():
    inp = L.Input(shape=(3,))
    d = L.Dense(3, use_bias=False, kernel_initializer="ones")
    out = L.ActivityRegularization(l2=0.5)(d(inp))
    model = ml.Model(inp, out)
    model.compile(ml.optimizers.SGD(0.0), "mse")
    x = R.randn(4, 3).astype(np.float32)
    y = np.zeros((4, 3), np.float32)
    hist = model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    k = d.get_weights()[0]
    a = x @ k
    np.testing.assert_allclose(hist.history["loss"][0],
                               np.mean(a ** 2) + 0.5 * (a ** 2).sum() / 4, rtol=1e-5)


@pytest.mark.parametrize("constraint,check", [
    (constraints.NonNeg(), lambda k: (k >= 0).all()),
    ("non_neg", lambda k: (k >= 0).all()),
    (constraints.MaxNorm(0.5), lambda k: (np.linalg.norm(k, axis=0) <= 0.5 + 1e-5).all()),
    (constraints.UnitNorm(), lambda k: np.allclose(np.linalg.norm(k, axis=0), 1, atol=1e-5)),
    (constraints.MinMaxNorm(0.2, 0.3), lambda k: (
        (np.linalg.norm(k, axis=0) >= 0.2 - 1e-5) & (np.linalg.norm(k, axis=0) <= 0.3 + 1e-5))
     .all()),
])
def test_constraints_hold_after_a_step(constraint, check):
    inp = L.Input(shape=(5,))
    d = L.Dense(4, kernel_initializer=initializers.RandomNormal(stddev=2.0, seed=1),
                kernel_constraint=constraint)
    model = ml.Model(inp, d(inp))
    model.compile(ml.optimizers.SGD(0.1), "mse")
    backend.ensure_initialized(model.weights)
    assert not check(d.get_weights()[0])  # the initial kernel violates it
    model.fit(R.randn(8, 5).astype(np.float32), R.randn(8, 4).astype(np.float32),
              batch_size=8, epochs=1, verbose=0)
    assert check(d.get_weights()[0])


def test_conv_kernel_max_norm_over_the_receptive_field():
    inp = L.Input(shape=(4, 4, 2))
    conv = L.Conv2D(3, 2, kernel_constraint=constraints.max_norm(0.1, axis=[0, 1, 2]))
    model = ml.Model(inp, L.Flatten()(conv(inp)))
    model.compile(ml.optimizers.SGD(0.1), "mse")
    model.fit(R.randn(4, 4, 4, 2).astype(np.float32), R.randn(4, 27).astype(np.float32),
              batch_size=4, verbose=0)
    k = conv.get_weights()[0]
    assert (np.sqrt((k ** 2).sum((0, 1, 2))) <= 0.1 + 1e-5).all()


def test_constraint_and_regularizer_lookup():
    assert isinstance(constraints.get("max_norm"), constraints.MaxNorm)
    assert constraints.get(constraints.serialize(constraints.MaxNorm(3, axis=1))).axis == 1
    with pytest.raises(ValueError, match="Unknown constraint"):
        constraints.get("nope")
    r = regularizers.get(regularizers.serialize(regularizers.l1_l2(0.1, 0.2)))
    assert (r.l1, r.l2) == (0.1, 0.2)


# ---------------------------------------------------------------- noise layers
def test_spatial_dropout2d_drops_whole_channels_in_training_only():
    x = L.Input(shape=(4, 4, 16))
    layer = L.SpatialDropout2D(0.5, seed=3)
    y_tr, y_inf = layer(x, training=True), layer(x)
    xv = np.ones((8, 4, 4, 16), np.float32)
    out = run(y_tr, {x: xv})
    per_map = out.transpose(0, 3, 1, 2).reshape(8, 16, 16)
    for m in per_map.reshape(-1, 16):
        assert np.all(m == 0) or np.all(m == 2.0)
    assert 0.2 < np.mean(out == 0) < 0.8
    np.testing.assert_array_equal(run(y_inf, {x: xv}), xv)
    layer_test(L.SpatialDropout2D, dict(rate=0.3, data_format="channels_first"), (3, 4, 4),
               (3, 4, 4), training=True)
    layer_test(L.SpatialDropout1D, dict(rate=0.3), (5, 3), (5, 3), training=True)


def test_gaussian_noise_and_dropout_in_training_only():
    x = L.Input(shape=(1000,))
    noise = L.GaussianNoise(0.5, seed=1)
    gd = L.GaussianDropout(0.2, seed=2)
    xv = np.full((4, 1000), 3.0, np.float32)
    n_tr, g_tr = run([noise(x, training=True), gd(x, training=True)], {x: xv})
    assert abs(n_tr.std() - 0.5) < 0.05 and abs(n_tr.mean() - 3.0) < 0.05
    assert abs((g_tr / 3).std() - np.sqrt(0.2 / 0.8)) < 0.05
    np.testing.assert_array_equal(run(noise(x), {x: xv}), xv)
    np.testing.assert_array_equal(run(gd(x), {x: xv}), xv)
    layer_test(L.GaussianNoise, dict(stddev=0.1, seed=0), (3,), (3,))


# ---------------------------------------------------------------- initializers
@pytest.mark.parametrize("name,check", [
    ("zeros", lambda v, fi, fo: np.all(v == 0)),
    ("ones", lambda v, fi, fo: np.all(v == 1)),
    ("glorot_uniform", lambda v, fi, fo: np.abs(v).max() <= np.sqrt(6 / (fi + fo))),
    ("he_uniform", lambda v, fi, fo: np.abs(v).max() <= np.sqrt(6 / fi)),
    ("lecun_uniform", lambda v, fi, fo: np.abs(v).max() <= np.sqrt(3 / fi)),
    ("glorot_normal", lambda v, fi, fo: abs(v.std() - np.sqrt(2 / (fi + fo))) < 0.02),
    ("he_normal", lambda v, fi, fo: abs(v.std() - np.sqrt(2 / fi)) < 0.02),
    ("lecun_normal", lambda v, fi, fo: abs(v.std() - np.sqrt(1 / fi)) < 0.02),
    ("random_normal", lambda v, fi, fo: abs(v.std() - 0.05) < 0.005),
    ("random_uniform", lambda v, fi, fo: np.abs(v).max() <= 0.05),
    ("truncated_normal", lambda v, fi, fo: np.abs(v).max() <= 0.1 + 1e-6),
    ("orthogonal", lambda v, fi, fo: np.allclose(v.reshape(-1, 32).T @ v.reshape(-1, 32),
                                                 np.eye(32), atol=1e-4)),
])
def test_initializers_by_name_on_a_conv_kernel(name, check):
    layer = L.Conv2D(32, 3, kernel_initializer=name)
    layer(L.Input(shape=(8, 8, 16)))
    backend.ensure_initialized(layer.weights)
    k = layer.get_weights()[0]
    assert k.shape == (3, 3, 16, 32)
    assert check(k, 9 * 16, 9 * 32)


def test_seeded_initializer_objects_repeat_and_constant():
    ws = []
    for _ in range(2):
        with ml.Graph().as_default():
            d = L.Dense(5, kernel_initializer=initializers.HeNormal(seed=7),
                        bias_initializer=initializers.Constant(0.25))
            d(L.Input(shape=(4,)))
            backend.ensure_initialized(d.weights)
            ws.append(d.get_weights())
    np.testing.assert_array_equal(ws[0][0], ws[1][0])
    np.testing.assert_array_equal(ws[0][1], np.full(5, 0.25, np.float32))
