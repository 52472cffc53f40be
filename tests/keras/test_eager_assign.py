"""Keras variables (layer weights, an optimizer's `iterations` and `learning_rate`)
assigned outside a step being built take effect at once, as in Keras 3; inside a layer's
`call` the same methods stay graph ops run by every step. Compared with Keras 3 (JAX
backend) on the same weights."""

import keras
import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib import optimizers as mopt

RS = np.random.RandomState(7)
X = RS.randn(16, 4).astype(np.float32)
Y = RS.randn(16, 1).astype(np.float32)


def _pair(units=2):
    km = keras.Sequential([keras.Input((4,)), keras.layers.Dense(units)])
    mm = ml.Sequential([L.Input(shape=(4,)), L.Dense(units)])
    mm.set_weights(km.get_weights())
    return km, mm


def test_weight_assign_add_sub_take_effect_at_once():
    km, mm = _pair()
    k = RS.randn(4, 2).astype(np.float32)
    for m in (km, mm):
        m.layers[0].kernel.assign(k)
        m.layers[0].bias.assign_add(np.ones(2, np.float32))
        m.layers[0].bias.assign_sub(np.full(2, 0.25, np.float32))
    np.testing.assert_allclose(mm.predict(X, verbose=0), km.predict(X, verbose=0), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(mm.layers[0].bias), [0.75, 0.75])


def test_assign_from_another_weight_copies_its_value():
    km, mm = _pair()
    _, other = _pair()
    other.layers[0].kernel.assign(np.full((4, 2), 3.0, np.float32))
    mm.layers[0].kernel.assign(other.layers[0].kernel)
    np.testing.assert_array_equal(np.asarray(mm.layers[0].kernel), np.full((4, 2), 3.0))


def test_assign_wrong_shape_raises_and_changes_nothing():
    _, mm = _pair()
    before = np.asarray(mm.layers[0].kernel)
    with pytest.raises(ValueError, match="must match"):
        mm.layers[0].kernel.assign(np.zeros((2, 4), np.float32))
    np.testing.assert_array_equal(np.asarray(mm.layers[0].kernel), before)


def test_optimizer_iterations_and_learning_rate_assign():
    got = {}
    for lib, m in zip(("keras", "mylib"), _pair()):
        opt = (keras.optimizers if lib == "keras" else mopt).SGD(0.1)
        m.compile(opt, "mse")
        opt.build(m.trainable_variables)
        opt.learning_rate.assign(0.5)
        opt.iterations.assign(7)
        got[lib] = (float(np.asarray(opt.learning_rate)), int(np.asarray(opt.iterations)))
    assert got["mylib"] == got["keras"] == (0.5, 7)


def _fit_with_lr_callback(lib):
    k = lib == "keras"
    mod = keras if k else ml
    m = (keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, kernel_initializer="zeros")])
         if k else ml.Sequential([L.Input(shape=(4,)), L.Dense(1, kernel_initializer="zeros")]))
    m.compile((keras.optimizers if k else mopt).SGD(0.1), "mse")
    seen = []

    class C(mod.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 1:
                self.model.optimizer.learning_rate.assign(0.0)
            if epoch == 2:
                self.model.optimizer.learning_rate.assign(0.05)

        def on_epoch_end(self, epoch, logs=None):
            seen.append(float(np.asarray(self.model.optimizer.learning_rate)))

    h = m.fit(X, Y, epochs=3, batch_size=4, shuffle=False, verbose=0, callbacks=[C()])
    return seen, h.history["loss"], m.get_weights()


def test_learning_rate_assigned_in_a_callback_during_fit():
    ks, kl, kw = _fit_with_lr_callback("keras")
    ms, ml_, mw = _fit_with_lr_callback("mylib")
    np.testing.assert_allclose(ms, ks, rtol=1e-6)
    np.testing.assert_allclose(ml_, kl, rtol=1e-5)
    for a, b in zip(mw, kw):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_assign_inside_call_stays_a_graph_op_run_each_step():
    def make(lib):
        k = lib == "keras"
        base = keras.layers.Layer if k else L.Layer

        class Counting(base):
            def build(self, shape):
                self.count = self.add_weight(shape=(), initializer="zeros", trainable=False,
                                             name="count")
                self.total = self.add_weight(shape=(), initializer="zeros", trainable=False,
                                             name="total")

            def call(self, x):
                ops = [self.count.assign_add(1.0),
                       self.total.assign_add((keras.ops if k else ml.keras.ops).sum(x))]
                if not k:
                    # A graph op (not done at once while the step is built): its update
                    # runs with each step through `add_update`.
                    assert all(isinstance(t, ml.Tensor) for t in ops)
                    for t in ops:
                        self.add_update(t)
                return x

        layer = Counting()
        mod = keras if k else ml
        inp = (keras.Input((4,)) if k else L.Input(shape=(4,)))
        dense = (keras.layers.Dense(1) if k else L.Dense(1))
        m = (keras.Model if k else ml.Model)(inp, dense(layer(inp)))
        m.compile((keras.optimizers if k else mopt).SGD(0.01), "mse")
        return mod, m, layer

    _, km, kl = make("keras")
    _, mm, ml_layer = make("mylib")
    mm.set_weights(km.get_weights())
    km.fit(X, Y, epochs=1, batch_size=4, shuffle=False, verbose=0)
    mm.fit(X, Y, epochs=1, batch_size=4, shuffle=False, verbose=0)
    assert float(np.asarray(ml_layer.count)) == float(np.asarray(kl.count)) == 4.0
    np.testing.assert_allclose(float(np.asarray(ml_layer.total)), float(np.asarray(kl.total)),
                               rtol=1e-5)


def test_plain_variable_assign_is_still_a_graph_op():
    v = ml.Variable(1.0)
    t = v.assign(2.0)
    assert isinstance(t, ml.Tensor)
    with ml.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(t) == 2.0
