"""BatchNormalization (batch statistics in training, moving statistics at inference,
moving averages updated inside fit's step, trainable=False freezes), LayerNormalization
and GroupNormalization against numpy."""

import numpy as np
import pytest
from layer_battery import layer_test, run

import mylib as ml
from mylib import layers as L
from mylib.layers import backend

R = np.random.RandomState(0)


def np_norm(x, axes, eps, gamma=1.0, beta=0.0):
    m = x.mean(axes, keepdims=True)
    v = x.var(axes, keepdims=True)  # biased, as Keras 3
    return (x - m) / np.sqrt(v + eps) * gamma + beta


def _set_affine(layer, gamma, beta):
    ws = layer.get_weights()
    ws[0], ws[1] = gamma, beta
    layer.set_weights(ws)


def test_batchnorm_training_uses_batch_stats_and_inference_moving_stats():
    x = L.Input(shape=(4, 3))
    bn = L.BatchNormalization()
    y_inf = bn(x)
    y_train = bn(x, training=True)
    assert [w.name.split("/")[-1] for w in bn.weights] == [
        "gamma:0", "beta:0", "moving_mean:0", "moving_variance:0"]
    assert len(bn.trainable_weights) == 2 and len(bn.non_trainable_weights) == 2
    backend.ensure_initialized(bn.weights)
    g, b = R.rand(3).astype(np.float32) + 0.5, R.randn(3).astype(np.float32)
    mm, mv = R.randn(3).astype(np.float32), R.rand(3).astype(np.float32) + 0.5
    bn.set_weights([g, b, mm, mv])
    xv = (R.randn(5, 4, 3) * 3 + 1).astype(np.float32)
    np.testing.assert_allclose(run(y_train, {x: xv}), np_norm(xv, (0, 1), 1e-3, g, b),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run(y_inf, {x: xv}), (xv - mm) / np.sqrt(mv + 1e-3) * g + b,
                               rtol=1e-4, atol=1e-4)


def test_batchnorm_channels_first_axis():
    def ref(x, ws):
        g, b, mm, mv = ws
        sh = (1, -1, 1, 1)
        return (x - mm.reshape(sh)) / np.sqrt(mv.reshape(sh) + 1e-3) * g.reshape(sh) + \
            b.reshape(sh)
    layer_test(L.BatchNormalization, dict(axis=1, moving_mean_initializer="random_normal",
                                          gamma_initializer="random_uniform"),
               (3, 4, 5), (3, 4, 5), reference=ref, num_weights=4, num_trainable=2,
               rtol=1e-4, atol=1e-4)
    layer, xv, out = layer_test(L.BatchNormalization, dict(axis=1, center=False), (3, 4, 5),
                                (3, 4, 5), training=True, num_weights=3)
    np.testing.assert_allclose(out, np_norm(xv, (0, 2, 3), 1e-3), rtol=1e-4, atol=1e-4)


def _bn_model(momentum=0.9, trainable=True):
    inp = L.Input(shape=(3,))
    bn = L.BatchNormalization(momentum=momentum, trainable=trainable)
    out = L.Dense(1, kernel_initializer="ones")(bn(inp))
    model = ml.Model(inp, out)
    model.compile(ml.optimizers.SGD(0.01), "mse")
    return model, bn


def test_moving_stats_after_fit_steps_match_numpy():
    model, bn = _bn_model(momentum=0.9)
    x = (R.randn(40, 3) * [1, 2, 3] + [1, -2, 5]).astype(np.float32)
    y = R.randn(40, 1).astype(np.float32)
    model.fit(x, y, batch_size=10, epochs=2, shuffle=False, verbose=0)
    mm, mv = np.zeros(3), np.ones(3)
    for _ in range(2):
        for i in range(4):
            xb = x[i * 10:(i + 1) * 10].astype(np.float64)
            mm = mm * 0.9 + xb.mean(0) * 0.1
            mv = mv * 0.9 + xb.var(0) * 0.1  # biased batch variance (Keras 3)
    got_mm, got_mv = bn.get_weights()[2:]
    np.testing.assert_allclose(got_mm, mm, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_mv, mv, rtol=1e-5, atol=1e-5)
    # gamma and beta were trained, and predict uses the moving statistics.
    g, b = bn.get_weights()[:2]
    assert not np.allclose(g, 1) and not np.allclose(b, 0)
    k, c = model.layers[-1].get_weights()
    want = ((x - got_mm) / np.sqrt(got_mv + 1e-3) * g + b) @ k + c
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-4, atol=1e-4)
    # evaluate runs no updates
    before = bn.get_weights()
    model.evaluate(x, y, verbose=0)
    for a, b_ in zip(before, bn.get_weights()):
        np.testing.assert_array_equal(a, b_)
    assert len(ml.get_default_graph().get_collection("update_ops")) == 2


def test_trainable_false_freezes_and_runs_in_inference_mode():
    model, bn = _bn_model(trainable=False)
    backend.ensure_initialized(bn.weights)
    assert bn.trainable_weights == [] and len(bn.non_trainable_weights) == 4
    x = (R.randn(20, 3) * 2 + 3).astype(np.float32)
    y = R.randn(20, 1).astype(np.float32)
    before = [w.copy() for w in model.get_weights()]
    model.fit(x, y, batch_size=10, epochs=1, verbose=0)
    after = model.get_weights()
    for a, b in zip(before[:4], after[:4]):  # gamma, beta, moving mean/var frozen
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(before[4], after[4])  # the Dense kernel trained
    # Its training loss used the moving stats: equal to the inference-mode loss.
    model.compile(ml.optimizers.SGD(0.0), "mse")
    hist = model.fit(x, y, batch_size=20, epochs=1, verbose=0, shuffle=False)
    np.testing.assert_allclose(hist.history["loss"][0], model.evaluate(x, y, verbose=0),
                               rtol=1e-5)


def test_unfreezing_rebuilds_the_step_with_batch_stats():
    model, bn = _bn_model()
    x = (R.randn(20, 3) + 4).astype(np.float32)
    y = R.randn(20, 1).astype(np.float32)
    bn.trainable = False
    model.fit(x, y, batch_size=20, epochs=1, verbose=0)
    np.testing.assert_array_equal(bn.get_weights()[2], 0)
    bn.trainable = True
    model.fit(x, y, batch_size=20, epochs=1, verbose=0)
    np.testing.assert_allclose(bn.get_weights()[2], 0.1 * x.mean(0), rtol=1e-5)  # momentum .9


@pytest.mark.parametrize("kw,axes", [({}, (-1,)), (dict(axis=[1, 2]), (1, 2)),
                                     (dict(axis=1, center=False, epsilon=1e-5), (1,))])
def test_layer_normalization_battery(kw, axes):
    def ref(x, ws):
        shape = [x.shape[a] if a in [a_ % 3 for a_ in axes] else 1 for a in range(3)]
        g = ws[0].reshape(shape)
        b = ws[1].reshape(shape) if len(ws) > 1 else 0.0
        return np_norm(x, axes, kw.get("epsilon", 1e-3), g, b)
    layer_test(L.LayerNormalization, dict(kw, gamma_initializer="random_normal",
                                          beta_initializer="random_normal"),
               (4, 5), (4, 5), reference=ref, rtol=1e-4, atol=1e-4)


def test_rms_layer_normalization():
    layer_test(L.LayerNormalization, dict(rms_scaling=True), (6,), (6,),
               reference=lambda x, ws: x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-3)
               * ws[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("groups,axis,shape", [(2, -1, (3, 4, 6)), (3, -1, (5, 3)),
                                               (6, -1, (2, 2, 6)), (2, 1, (4, 3, 3))])
def test_group_normalization_battery(groups, axis, shape):
    def ref(x, ws):
        xc = np.moveaxis(x, axis, -1)
        n, c = xc.shape[0], xc.shape[-1]
        xg = xc.reshape(n, -1, groups, c // groups)
        out = np_norm(xg, (1, 3), 1e-3).reshape(xc.shape) * ws[0] + ws[1]
        return np.moveaxis(out, -1, axis)
    layer_test(L.GroupNormalization, dict(groups=groups, axis=axis,
                                          gamma_initializer="random_normal",
                                          beta_initializer="random_normal"),
               shape, shape, reference=ref, rtol=1e-4, atol=1e-4)


def test_group_normalization_rejects_non_divisor():
    with pytest.raises(ValueError, match=r"number of groups \(4\).*channels \(6\)"):
        L.GroupNormalization(4)(L.Input(shape=(3, 6)))
