"""Mixed precision: dtype policies (float32 weights, low-precision activations, float32
losses) and dynamic loss scaling (LossScaleOptimizer) against its Keras semantics."""

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib.mixed_precision import LossScaleOptimizer, Policy


@pytest.fixture(autouse=True)
def reset_policy():
    yield
    ml.mixed_precision.set_global_policy(None)


def test_policy_fields_and_errors():
    p = Policy("mixed_bfloat16")
    assert (p.name, p.compute_dtype, p.variable_dtype) == ("mixed_bfloat16", "bfloat16",
                                                           "float32")
    assert Policy("mixed_float16").compute_dtype == "float16"
    assert Policy("float64").compute_dtype == Policy("float64").variable_dtype == "float64"
    with pytest.raises(ValueError, match="mixed_float16"):
        Policy("mixed_float8")
    with pytest.raises(ValueError, match="floating point"):
        ml.mixed_precision.set_global_policy("int32")
    assert ml.mixed_precision.global_policy().name == "float32"
    ml.mixed_precision.set_global_policy("mixed_bfloat16")
    assert ml.mixed_precision.global_policy() == p
    d = L.Dense(2)
    assert d.dtype_policy == p and d.variable_dtype == ml.float32
    assert d.dtype == d.compute_dtype == ml.bfloat16  # what `call` computes in
    assert d.get_config()["dtype"] == "mixed_bfloat16"
    assert L.Dense.from_config(d.get_config()).compute_dtype == ml.bfloat16
    assert L.Dense(2, dtype="float32").compute_dtype == ml.float32


@pytest.mark.parametrize("policy,low", [("mixed_bfloat16", ml.bfloat16),
                                        ("mixed_float16", ml.float16)])
def test_variables_float32_activations_low(policy, low):
    ml.mixed_precision.set_global_policy(policy)
    d1, d2 = L.Dense(4, activation="relu"), L.Dense(3)
    out = L.Activation("softmax", dtype="float32")
    m = ml.Sequential([L.Input(shape=(5,)), d1, d2, out])
    assert m.inputs[0].dtype == ml.float32
    assert all(w.dtype == ml.float32 for w in m.weights)
    assert d1.output.dtype == low and d2.output.dtype == low
    assert m.outputs[0].dtype == ml.float32
    # The kernel read inside Dense is cast: MatMul runs in the low type on both sides.
    g = m.graph
    matmuls = [op for op in g.get_operations() if op.type == "MatMul"]
    assert matmuls and all(op.inputs[0].dtype == low and op.inputs[1].dtype == low
                           for op in matmuls)
    # Gradients reach the float32 variables through the casts.
    grads = ml.gradients(ml.reduce_sum(m.outputs[0][:, 0]), m.trainable_weights)
    assert all(gr is not None and gr.dtype == ml.float32 for gr in grads)
    m.compile(ml.optimizers.SGD(0.1), "categorical_crossentropy")
    x = np.random.RandomState(0).randn(4, 5).astype(np.float32)
    p = m.predict(x, verbose=0)
    assert p.dtype == np.float32
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-5)
    # The same weights in float32: close to the low-precision result.
    ml.mixed_precision.set_global_policy(None)
    ref = ml.Sequential([L.Input(shape=(5,)), L.Dense(4, activation="relu"), L.Dense(3),
                         L.Activation("softmax")])
    ref.set_weights(m.get_weights())
    np.testing.assert_allclose(p, ref.predict(x, verbose=0), atol=2e-2)


def _blobs():
    rs = np.random.RandomState(0)
    centers = rs.randn(3, 10) * 0.6
    y = rs.randint(0, 3, 500)
    X = (centers[y] + rs.randn(500, 10)).astype(np.float32)
    return X, y.astype(np.int32)


def _train(policy):
    ml.mixed_precision.set_global_policy(policy)
    g = ml.Graph()
    with g.as_default():
        m = ml.Sequential([L.Input(shape=(10,)), L.Dense(32, activation="relu"), L.Dense(3),
                           L.Activation("softmax", dtype="float32")])
        m.compile(ml.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
        X, y = _blobs()
        w0 = [np.random.RandomState(i).uniform(-0.3, 0.3, w.shape.as_list()).astype(np.float32)
              for i, w in enumerate(m.weights)]
        m.set_weights(w0)  # the same start for every policy
        hist = m.fit(X, y, batch_size=50, epochs=4, shuffle=False, verbose=0).history
    return m, hist["loss"][-1], hist["accuracy"][-1]


def test_mixed_training_reaches_float32_accuracy():
    _, loss32, acc32 = _train("float32")
    mb, loss_b, acc_b = _train("mixed_bfloat16")
    mf, loss_f, acc_f = _train("mixed_float16")
    assert 0.75 < acc32 < 1.0
    assert abs(acc_b - acc32) < 0.03 and abs(acc_f - acc32) < 0.03
    assert abs(loss_b - loss32) < 0.05 and abs(loss_f - loss32) < 0.02
    assert not isinstance(mb.optimizer, LossScaleOptimizer)
    assert isinstance(mf.optimizer, LossScaleOptimizer)
    # 40 finite steps: the scale is unchanged and the counter advanced.
    scale, count = mf.session.run([mf.optimizer.dynamic_scale.value(),
                                   mf.optimizer.step_counter.value()])
    assert scale == 2.0 ** 15 and count == 40
    assert int(mf.session.run(mf.optimizer.iterations.value())) == 40


def test_loss_scale_skips_non_finite_step_and_halves_scale():
    w = ml.Variable(np.array([1.0, 2.0], np.float32), name="w")
    x = ml.placeholder("float32", [2])
    opt = LossScaleOptimizer(ml.optimizers.Adam(0.1), initial_scale=8.0,
                             dynamic_growth_steps=2)
    loss = ml.reduce_sum(w * x)
    train = opt.minimize(loss, var_list=[w])
    m_slot = opt.get_slot(w, "mu")
    with ml.Session() as sess:
        sess.run(ml.global_variables_initializer())

        def state():
            return sess.run([w.value(), m_slot.value(), opt.iterations.value(),
                             opt.dynamic_scale.value(), opt.step_counter.value()])

        sess.run(train, {x: np.array([1.0, -1.0], np.float32)})
        w1, m1, it1, s1, c1 = state()
        assert it1 == 1 and s1 == 8.0 and c1 == 1
        # Adam's first moment sees the UNSCALED gradient [1, -1].
        np.testing.assert_allclose(m1, 0.1 * np.array([1.0, -1.0]), rtol=1e-6)
        sess.run(train, {x: np.array([np.inf, 1.0], np.float32)})  # injected inf gradient
        w2, m2, it2, s2, c2 = state()
        np.testing.assert_array_equal(w2, w1)
        np.testing.assert_array_equal(m2, m1)
        assert it2 == 1 and s2 == 4.0 and c2 == 0
        sess.run(train, {x: np.array([np.nan, 1.0], np.float32)})
        assert state()[3] == 2.0
        # Two finite steps in a row double the scale and reset the counter.
        sess.run(train, {x: np.array([1.0, 1.0], np.float32)})
        _, _, it3, s3, c3 = state()
        assert it3 == 2 and s3 == 2.0 and c3 == 1
        sess.run(train, {x: np.array([1.0, 1.0], np.float32)})
        _, _, it4, s4, c4 = state()
        assert it4 == 3 and s4 == 4.0 and c4 == 0


def test_loss_scale_gradients_are_scaled_then_unscaled():
    w = ml.Variable(np.array([1.0, -2.0], np.float32), name="w")
    w16 = ml.cast(w, "float16")
    loss = ml.reduce_sum(w16 * w16 * np.float16(0.25))
    plain = ml.gradients(loss, [w])[0]
    opt = LossScaleOptimizer(ml.optimizers.SGD(1.0))
    (scaled, _), = opt.compute_gradients(loss, [w])
    train = opt.apply_gradients([(scaled, w)])
    with ml.Session() as sess:
        sess.run(ml.global_variables_initializer())
        g_plain, g_scaled = sess.run([plain, scaled])
        np.testing.assert_allclose(g_plain, [0.5, -1.0])
        np.testing.assert_allclose(g_scaled, 2.0 ** 15 * g_plain)
        sess.run(train)
        np.testing.assert_allclose(sess.run(w.value()), [0.5, -1.0])  # w - 1.0 * unscaled


def test_loss_scale_optimizer_delegates_and_configs():
    inner = ml.optimizers.SGD(0.5)
    opt = LossScaleOptimizer(inner, initial_scale=4.0)
    assert opt.inner_optimizer is inner
    cfg = opt.get_config()
    assert cfg["initial_scale"] == 4.0 and cfg["dynamic_growth_steps"] == 2000
    again = LossScaleOptimizer.from_config(cfg)
    assert isinstance(again.inner_optimizer, ml.optimizers.SGD)
    with pytest.raises(ValueError, match="initial_scale"):
        LossScaleOptimizer(inner, initial_scale=0)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_batch_normalization_under_a_mixed_policy_matches_keras(policy):
    """BatchNormalization computes in float32 under a mixed policy (as Keras 3 does):
    fit and predict against Keras 3 with the same policy and weights."""
    import keras

    rs = np.random.RandomState(0)
    x = rs.randn(96, 6).astype(np.float32) * 3 + 1
    y = (x[:, 0] > 1).astype(np.int32)

    def build(lib, layers):
        return lib([layers.Input(shape=(6,)), layers.Dense(8, activation="relu"),
                    layers.BatchNormalization(), layers.Dense(2, activation="softmax",
                                                             dtype="float32")])

    keras.mixed_precision.set_global_policy(policy)
    try:
        km = build(keras.Sequential, keras.layers)
        km.compile(keras.optimizers.SGD(0.05), "sparse_categorical_crossentropy")
    finally:
        keras.mixed_precision.set_global_policy("float32")
    ml.mixed_precision.set_global_policy(policy)
    mm = build(ml.Sequential, L)
    mm.compile(ml.optimizers.SGD(0.05), "sparse_categorical_crossentropy")
    w = [np.asarray(v) for v in km.weights]
    w = [rs.uniform(0.5, 1.5, a.shape).astype(a.dtype) if "variance" in v.path else
         (rs.randn(*a.shape) * 0.5).astype(a.dtype) for v, a in zip(km.weights, w)]
    km.set_weights(w)
    mm.set_weights(w)
    bn = mm.layers[-2] if isinstance(mm.layers[-2], L.BatchNormalization) else mm.layers[1]
    assert all(v.dtype == ml.float32 for v in bn.weights)
    tol = 2e-2 if policy == "mixed_bfloat16" else 2e-3
    np.testing.assert_allclose(mm.predict(x, verbose=0), km.predict(x, verbose=0),
                               rtol=tol, atol=tol)
    hk = km.fit(x, y, epochs=2, batch_size=32, shuffle=False, verbose=0)
    hm = mm.fit(x, y, epochs=2, batch_size=32, shuffle=False, verbose=0)
    np.testing.assert_allclose(hm.history["loss"], hk.history["loss"], rtol=tol)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    np.testing.assert_allclose(mm.predict(x, verbose=0), km.predict(x, verbose=0),
                               rtol=tol, atol=tol)
