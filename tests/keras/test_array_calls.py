"""Layers and models called on numpy / JAX arrays (Keras 3's eager-style calls): the
layer's own graph and weights, `training` / `mask` / every argument honoured, state
updates applied, one compiled step per signature in a bounded cache. Each result is
checked against an independent numpy reference."""

import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib.core.graph import GraphKeys
from mylib.layers import array_call


def _x(n=16, d=3, seed=0):
    return np.random.RandomState(seed).randn(n, d).astype("float32")


def test_dense_on_numpy_and_jax_arrays_equals_numpy_reference():
    x = _x()
    d = L.Dense(4, activation="relu")
    y = d(x)  # builds the layer from the array's shape
    assert d.built and isinstance(y, np.ndarray) and y.shape == (16, 4)
    w, b = d.get_weights()
    ref = np.maximum(x @ w + b, 0)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d(jnp.asarray(x)), ref, rtol=1e-5, atol=1e-6)
    # float64 inputs are cast to the layer's compute dtype (as Keras 3)
    y64 = d(x.astype("float64"))
    assert y64.dtype == np.float32
    np.testing.assert_allclose(y64, ref, rtol=1e-5, atol=1e-6)
    # new weights are seen by the next call (same Variables)
    d.set_weights([w * 2, b])
    np.testing.assert_allclose(d(x), np.maximum(x @ (2 * w) + b, 0), rtol=1e-5, atol=1e-6)


def test_batch_normalization_training_moves_moving_statistics():
    x = _x(32, 3) * 2 + 1
    bn = L.BatchNormalization(momentum=0.9, epsilon=1e-3)
    y = bn(x, training=True)
    gamma, beta, mm, mv = bn.get_weights()
    ref = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3) * 1.0 + 0.0
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mm, 0.9 * 0 + 0.1 * x.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv, 0.9 * 1 + 0.1 * x.var(0), rtol=1e-5, atol=1e-6)
    # a second training call moves them again (momentum rule)
    x2 = _x(32, 3, seed=1)
    bn(x2, training=True)
    mm2, mv2 = bn.get_weights()[2:]
    np.testing.assert_allclose(mm2, 0.9 * mm + 0.1 * x2.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv2, 0.9 * mv + 0.1 * x2.var(0), rtol=1e-5, atol=1e-6)
    # training=False (and no training argument) use the moving statistics, move nothing
    for kw in ({"training": False}, {}):
        y_inf = bn(x, **kw)
        np.testing.assert_allclose(y_inf, (x - mm2) / np.sqrt(mv2 + 1e-3), rtol=1e-4,
                                   atol=1e-4)
        np.testing.assert_allclose(bn.get_weights()[2], mm2)
    # the array calls' updates are not left in the graph's UPDATE_OPS
    assert not bn.weights[0].graph.get_collection(GraphKeys.UPDATE_OPS)


def test_dropout_training_drops_and_scales():
    rate = 0.3
    x = np.ones((200, 100), "float32")
    dr = L.Dropout(rate)
    y = dr(x, training=True)
    zero = y == 0
    assert abs(zero.mean() - rate) < 0.02
    np.testing.assert_allclose(y[~zero], 1 / (1 - rate), rtol=1e-6)
    y2 = dr(x, training=True)
    assert not np.array_equal(y, y2)  # a fresh mask each call
    np.testing.assert_array_equal(dr(x, training=False), x)
    np.testing.assert_array_equal(dr(x), x)


def _dropout_models():
    seq = ml.Sequential([L.Input(shape=(3,)), L.Dense(8), L.Dropout(0.5), L.Dense(2)])
    inp = L.Input(shape=(3,))
    fun = ml.Model(inp, L.Dense(2)(L.Dropout(0.5)(L.Dense(8)(inp))))
    deferred = ml.Sequential([L.Dense(8), L.Dropout(0.5), L.Dense(2)])
    return [seq, fun, deferred]


@pytest.mark.parametrize("i", [0, 1, 2])
def test_model_call_honours_training(i):
    model = _dropout_models()[i]
    x = _x(64, 3)
    inf = model(x)
    inf_f = model(x, training=False)
    np.testing.assert_allclose(inf, inf_f, rtol=1e-6)
    np.testing.assert_allclose(inf, model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    tr = model(x, training=True)
    assert np.abs(tr - inf).max() > 1e-3
    # numpy reference of the inference pass
    w0, b0, w1, b1 = model.get_weights()
    np.testing.assert_allclose(inf, (x @ w0 + b0) @ w1 + b1, rtol=1e-4, atol=1e-5)


def test_fit_trains_the_weights_the_array_call_used():
    model = ml.Sequential([L.Dense(4, activation="relu"), L.Dense(1)])
    x = _x(64, 3)
    y = (x.sum(1, keepdims=True) > 0).astype("float32")
    before = model(x)
    w = model.get_weights()
    np.testing.assert_allclose(before, np.maximum(x @ w[0] + w[1], 0) @ w[2] + w[3],
                               rtol=1e-4, atol=1e-5)
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    w2 = model.get_weights()
    assert any(np.abs(a - b).max() > 0 for a, b in zip(w, w2))
    after = model(x)
    np.testing.assert_allclose(after, np.maximum(x @ w2[0] + w2[1], 0) @ w2[2] + w2[3],
                               rtol=1e-4, atol=1e-5)
    # and set_weights is seen by array calls
    model.set_weights(w)
    np.testing.assert_allclose(model(x), before, rtol=1e-5, atol=1e-6)


def test_custom_loop_loss_matches_evaluate():
    model = ml.Sequential([L.Input(shape=(3,)), L.Dense(4, activation="tanh"), L.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = _x(32, 3)
    y = np.random.RandomState(5).randn(32, 1).astype("float32")
    pred = model(x, training=True)  # no dropout/BN: same as inference
    loss = float(np.mean((pred - y) ** 2))
    np.testing.assert_allclose(loss, model.evaluate(x, y, batch_size=32, verbose=0),
                               rtol=1e-5)


def test_batchnorm_in_model_training_call_updates_and_fit_sees_it():
    model = ml.Sequential([L.Input(shape=(3,)), L.BatchNormalization(momentum=0.5)])
    x = _x(32, 3) * 3 + 2
    model(x, training=True)
    bn = model.layers[-1]
    mm, mv = bn.get_weights()[2:]
    np.testing.assert_allclose(mm, 0.5 * x.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv, 0.5 + 0.5 * x.var(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.predict(x, verbose=0), (x - mm) / np.sqrt(mv + 1e-3),
                               rtol=1e-4, atol=1e-4)


def test_cache_is_bounded():
    d = L.Dense(2)
    for n in range(1, 41):  # batch sizes share one traced signature
        assert d(_x(n, 3)).shape == (n, 2)
    assert array_call.cache_entries(d) == 1
    act = L.Activation("relu")
    for k in range(1, 41):  # 40 distinct signatures
        x = _x(2, k)
        np.testing.assert_array_equal(act(x), np.maximum(x, 0))
    assert array_call.cache_entries(act) == array_call.CACHE_SIZE
    # evicted signatures free their compiled plans in the session
    from mylib.runtime import keras_session

    sess = keras_session.get_session(ml.get_default_graph())
    assert len(sess._plans) <= sess.plan_cache_size  # the session's LRU (feed shapes)
    act_plans = [k for k in sess._plans
                 if getattr(k[0][0], "op", k[0][0]).name.startswith(act.name)]
    assert 0 < len(act_plans) <= array_call.CACHE_SIZE
    # an evicted signature still works (traced again)
    x = _x(2, 1)
    np.testing.assert_array_equal(act(x), np.maximum(x, 0))
    assert array_call.cache_entries(act) <= array_call.CACHE_SIZE
    # non-array arguments are part of the signature
    dr = L.Dropout(0.5)
    dr(_x(4, 3), training=True)
    dr(_x(4, 3), training=False)
    assert array_call.cache_entries(dr) == 2


def test_mask_is_passed_to_lstm():
    rs = np.random.RandomState(0)
    lstm = L.LSTM(5)
    short = rs.randn(2, 3, 4).astype("float32")
    padded = np.concatenate([short, rs.randn(2, 2, 4).astype("float32") * 10], axis=1)
    mask = np.array([[True] * 3 + [False] * 2] * 2)
    ref = lstm(short)
    out = lstm(padded, mask=mask)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert np.abs(lstm(padded) - ref).max() > 1e-3  # without the mask it differs


def test_embedding_mask_reaches_lstm_in_model_call():
    inp = L.Input(shape=(None,), dtype="int32")
    model = ml.Model(inp, L.LSTM(3)(L.Embedding(10, 4, mask_zero=True)(inp)))
    short = np.array([[1, 2, 3], [4, 5, 6]], "int32")
    padded = np.concatenate([short, np.zeros((2, 2), "int32")], axis=1)
    np.testing.assert_allclose(model(padded), model(short), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(model(padded), model.predict(padded, verbose=0), rtol=1e-5,
                               atol=1e-6)


def test_non_array_inputs_still_raise():
    with pytest.raises(TypeError, match=r'Layer "dense" must be called on symbolic'):
        L.Dense(2)("not an array")


def test_subclassed_model_gets_every_call_argument():
    class Scaled(ml.Model):
        def __init__(self):
            super().__init__()
            self.dense = L.Dense(2, kernel_initializer="ones", bias_initializer="zeros")
            self.drop = L.Dropout(0.5)

        def call(self, inputs, training=None, scale=1.0):
            return self.drop(self.dense(inputs), training=training) * scale

    model = Scaled()
    x = _x(64, 3)
    ref = np.repeat(x.sum(1, keepdims=True), 2, axis=1)
    np.testing.assert_allclose(model(x), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(model(x, scale=3.0), 3 * ref, rtol=1e-5, atol=1e-5)
    tr = model(x, training=True, scale=3.0)
    kept = tr != 0
    assert 0.3 < 1 - kept.mean() < 0.7
    np.testing.assert_allclose(tr[kept], (6 * ref)[kept], rtol=1e-5, atol=1e-5)


def test_array_keyword_arguments_are_fed():
    # initial_state= arrays: running a sequence in two halves, carrying the state,
    # equals running it whole.
    rs = np.random.RandomState(2)
    lstm = L.LSTM(4, return_sequences=True, return_state=True)
    x = rs.randn(3, 6, 2).astype("float32")
    whole, h, c = lstm(x)
    first, h1, c1 = lstm(x[:, :3])
    second, h2, c2 = lstm(x[:, 3:], initial_state=[h1, jnp.asarray(c1)])
    np.testing.assert_allclose(np.concatenate([first, second], 1), whole, rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(h2, h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c2, c, rtol=1e-5, atol=1e-5)
