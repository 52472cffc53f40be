"""Variable assignments made in a layer's `call` (a step counter, a running mean) run
at every training step, as Keras 3 applies them; against Keras 3."""

import keras
import numpy as np

import mylib as ml


def _build(K, Input, Model, mean):
    class Tracker(K.layers.Layer):
        def build(self, shape):
            self.count = self.add_weight(shape=(), initializer="zeros", trainable=False,
                                         name="count")
            self.running = self.add_weight(shape=(shape[-1],), initializer="zeros",
                                           trainable=False, name="running")

        def call(self, x, training=None):
            if training:
                self.count.assign_add(1.0)
                self.running.assign(0.9 * self.running + 0.1 * mean(x))
            return x * 2.0

    i = Input((3,))
    return Model(i, K.layers.Dense(1)(Tracker()(i)))


def test_assignments_in_call_run_every_training_step():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 3)).astype("float32")
    y = rng.standard_normal((20, 1)).astype("float32")
    km = _build(keras, keras.Input, keras.Model, lambda t: keras.ops.mean(t, axis=0))
    mm = _build(ml, ml.layers.Input, ml.Model, lambda t: ml.reduce_mean(t, axis=0))
    mm.set_weights(km.get_weights())
    for m, opt in ((km, keras.optimizers.SGD(0.1)), (mm, ml.optimizers.SGD(0.1))):
        m.compile(opt, "mse")
        m.fit(x, y, epochs=2, batch_size=5, shuffle=False, verbose=0)
    kw, mw = km.get_weights(), mm.get_weights()
    assert mw[0] == kw[0] == 8.0  # 2 epochs of 4 steps
    for a, b in zip(mw, kw):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # inference leaves them alone
    mm.predict(x, verbose=0)
    assert mm.get_weights()[0] == 8.0


def test_inner_layers_built_in_call_keep_their_weights():
    """A wrapper that builds its inner layer in `call` (TimeDistributed) records the
    inner weights' initializers, which are no assignments of the call: neither array
    calls nor training steps redraw the weights."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6, 5)).astype("float32")
    td = ml.layers.TimeDistributed(ml.layers.Dense(3))
    outs = [np.asarray(td(x)) for _ in range(3)]
    w, b = td.get_weights()
    for o in outs:
        np.testing.assert_allclose(o, x @ w + b, rtol=1e-5, atol=1e-5)

    km = keras.Sequential([keras.Input((6, 5)),
                           keras.layers.TimeDistributed(keras.layers.Dense(2))])
    mm = ml.Sequential([ml.layers.Input((6, 5)),
                        ml.layers.TimeDistributed(ml.layers.Dense(2))])
    mm.set_weights(km.get_weights())
    y = rng.standard_normal((4, 6, 2)).astype("float32")
    for m, opt in ((km, keras.optimizers.SGD(0.1)), (mm, ml.optimizers.SGD(0.1))):
        m.compile(opt, "mse")
        m.fit(x, y, epochs=3, batch_size=2, shuffle=False, verbose=0)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
