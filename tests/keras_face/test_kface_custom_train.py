"""Keras 3's custom training on mylib: overridden train_step / test_step / predict_step
built once on symbolic batches; numbers checked against numpy and against mylib's
built-in step."""

import numpy as np
import pytest

import mylib as ml
from mylib import keras
from mylib.keras import layers, ops

R = np.random.default_rng(0)
X = R.normal(size=(64, 3)).astype(np.float32)
W_TRUE = np.array([[1.0], [-2.0], [0.5]], np.float32)
Y = X @ W_TRUE + 0.3


def linear(cls=keras.Model):
    inp = keras.Input(shape=(3,))
    out = layers.Dense(1, kernel_initializer="zeros", bias_initializer="zeros")(inp)
    return cls(inp, out)


class TapeFree(keras.Model):
    """The keras-io "customizing fit" model, with ml.gradients for the tape."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")

    def train_step(self, data):
        x, y = data
        y_pred = self(x, training=True)
        loss = ops.mean(ops.square(y - y_pred))
        grads = ml.gradients(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        self.loss_tracker.update_state(loss)
        self.mae_metric.update_state(y, y_pred)
        return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

    @property
    def metrics(self):
        return [self.loss_tracker, self.mae_metric]


def numpy_sgd(x, y, lr, batch, epochs):
    w, b = np.zeros((3, 1)), np.zeros(1)
    for _ in range(epochs):
        for lo in range(0, len(x), batch):
            xb, yb = x[lo:lo + batch], y[lo:lo + batch]
            err = xb @ w + b - yb
            w -= lr * 2 * xb.T @ err / len(xb)
            b -= lr * 2 * err.mean(0)
    return w, b


def test_custom_train_step_weights_and_logs_match_numpy():
    model = linear(TapeFree)
    model.compile(optimizer=keras.optimizers.SGD(0.05))
    hist = model.fit(X, Y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    w, b = numpy_sgd(X, Y, 0.05, 16, 3)
    np.testing.assert_allclose(model.get_weights()[0], w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.get_weights()[1], b, rtol=1e-5, atol=1e-6)
    # the logged loss of epoch 3: the mean of its 4 batch losses, each before its update
    w2, b2 = numpy_sgd(X, Y, 0.05, 16, 2)
    losses = []
    for lo in range(0, 64, 16):
        xb, yb = X[lo:lo + 16], Y[lo:lo + 16]
        losses.append(np.mean((xb @ w2 + b2 - yb) ** 2))
        err = xb @ w2 + b2 - yb
        w2, b2 = w2 - 0.05 * 2 * xb.T @ err / 16, b2 - 0.05 * 2 * err.mean(0)
    assert hist.history["loss"][2] == pytest.approx(np.mean(losses), rel=1e-5)
    assert set(hist.history) == {"loss", "mae"}
    assert hist.history["loss"][2] < hist.history["loss"][0]


def test_super_train_step_equals_builtin_fit():
    class Plain(keras.Model):
        def train_step(self, data):
            return super().train_step(data)

    sw = R.uniform(0.5, 2.0, size=64).astype(np.float32)
    results = []
    for cls in (keras.Model, Plain):
        m = linear(cls)
        m.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse", metrics=["mae"],
                  weighted_metrics=["mse"])
        h = m.fit(X, Y, sample_weight=sw, batch_size=16, epochs=2, shuffle=False, verbose=0)
        ev = m.evaluate(X, Y, verbose=0, return_dict=True)
        results.append((m.get_weights(), h.history, ev))
    (w0, h0, e0), (w1, h1, e1) = results
    for a, b in zip(w0, w1):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for k in ("loss", "mae", "mse"):
        np.testing.assert_allclose(h0[k], h1[k], rtol=1e-5)
        assert e0[k] == pytest.approx(e1[k], rel=1e-5)


def test_keras3_compute_loss_and_metrics_loop():
    class K3(keras.Model):
        def train_step(self, data):
            x, y, sw = data
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred, sample_weight=sw)
            tv = self.trainable_variables
            self.optimizer.apply_gradients(zip(ml.gradients(loss, tv), tv))
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred, sample_weight=sw)
            return {m.name: m.result() for m in self.metrics}

    inp = keras.Input(shape=(3,))
    model = K3(inp, layers.Dense(3, activation="softmax")(inp))
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    labels = np.argmax(X, axis=1).astype(np.int32)
    sw = np.ones(64, np.float32)
    sw[:32] = 3.0
    hist = model.fit(X, labels, sample_weight=sw, batch_size=64, epochs=1, verbose=0)
    probs = model.predict(X, verbose=0)
    per = -np.log(probs[np.arange(64), labels])
    assert hist.history["loss"][0] == pytest.approx((per * sw).sum() / 64, rel=1e-5)
    # compile metrics are not weighted (the container passes no weights to them)
    acc = np.mean(np.argmax(probs, 1) == labels)
    assert hist.history["accuracy"][0] == pytest.approx(acc, abs=1e-6)
    assert [m.name for m in model.metrics] == ["loss", "compile_metrics"]


def test_test_step_and_predict_step_overrides():
    class Custom(keras.Model):
        def test_step(self, data):
            x, y = data
            y_pred = self(x, training=False)
            err = ops.mean(ops.abs(y - y_pred))
            self.err_tracker.update_state(err)
            return {"abs_err": self.err_tracker.result()}

        def predict_step(self, data):
            return {"double": self(data, training=False) * 2.0}

    model = linear(Custom)
    model.err_tracker = keras.metrics.Mean(name="abs_err")
    model.compile(optimizer="sgd", loss="mse")
    model.set_weights([W_TRUE, np.zeros(1, np.float32)])
    logs = model.evaluate(X, Y, batch_size=64, verbose=0, return_dict=True)
    assert logs == {"abs_err": pytest.approx(0.3, rel=1e-5)}
    out = model.predict(X[:5], verbose=0)
    np.testing.assert_allclose(out["double"], 2 * X[:5] @ W_TRUE, rtol=1e-5)


def test_effects_run_in_the_order_written_and_unsupervised_fit():
    class AE(keras.Model):
        def __init__(self):
            super().__init__()
            self.enc = layers.Dense(2)
            self.dec = layers.Dense(3)
            self.before = keras.metrics.Mean(name="w_before")
            self.after = keras.metrics.Mean(name="w_after")

        def call(self, x):
            return self.dec(self.enc(x))

        def train_step(self, x):
            self.before.update_state(ops.sum(self.dec.kernel))
            loss = ops.mean(ops.square(self(x, training=True) - x))
            grads = ml.gradients(loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            self.after.update_state(ops.sum(self.dec.kernel))  # reads the updated weights
            return {"loss": loss, "w_before": self.before.result(),
                    "w_after": self.after.result()}

    model = AE()
    model.compile(optimizer=keras.optimizers.SGD(0.1))
    h = model.fit(X, batch_size=64, epochs=3, verbose=0)  # no y
    assert h.history["w_after"][0] == pytest.approx(h.history["w_before"][1], rel=1e-6)
    assert h.history["w_before"][0] != pytest.approx(h.history["w_after"][0])
    assert h.history["loss"][2] < h.history["loss"][0]


def test_gan_pattern_two_optimizers():
    keras.utils.set_random_seed(0)
    latent = 2
    gen = keras.Sequential([keras.Input(shape=(latent,)), layers.Dense(8, activation="relu"),
                            layers.Dense(2)])
    disc = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(8, activation="relu"),
                             layers.Dense(1)])

    class GAN(keras.Model):
        def __init__(self, discriminator, generator):
            super().__init__()
            self.discriminator, self.generator = discriminator, generator
            self.seed_generator = keras.random.SeedGenerator(1)

        def compile(self, d_optimizer, g_optimizer, loss_fn):
            super().compile()
            self.d_optimizer, self.g_optimizer, self.loss_fn = d_optimizer, g_optimizer, \
                loss_fn
            self.d_loss_metric = keras.metrics.Mean(name="d_loss")
            self.g_loss_metric = keras.metrics.Mean(name="g_loss")

        @property
        def metrics(self):
            return [self.d_loss_metric, self.g_loss_metric]

        def train_step(self, real):
            bs = ops.shape(real)[0]
            z = keras.random.normal((bs, latent), seed=self.seed_generator)
            comb = ops.concatenate([self.generator(z), real], axis=0)
            labels = ops.concatenate([ops.ones((bs, 1)), ops.zeros((bs, 1))], axis=0)
            d_loss = self.loss_fn(labels, self.discriminator(comb))
            dw = self.discriminator.trainable_weights
            self.d_optimizer.apply_gradients(zip(ml.gradients(d_loss, dw), dw))
            z = keras.random.normal((bs, latent), seed=self.seed_generator)
            g_loss = self.loss_fn(ops.zeros((bs, 1)), self.discriminator(self.generator(z)))
            gw = self.generator.trainable_weights
            self.g_optimizer.apply_gradients(zip(ml.gradients(g_loss, gw), gw))
            self.d_loss_metric.update_state(d_loss)
            self.g_loss_metric.update_state(g_loss)
            return {"d_loss": self.d_loss_metric.result(),
                    "g_loss": self.g_loss_metric.result()}

    real = (R.normal(size=(512, 2)) * 0.3 + np.array([2.0, -1.0])).astype(np.float32)
    gan = GAN(disc, gen)
    d_opt, g_opt = keras.optimizers.Adam(0.01), keras.optimizers.Adam(0.01)
    gan.compile(d_opt, g_opt, keras.losses.BinaryCrossentropy(from_logits=True))
    g0, d0 = gen.get_weights(), disc.get_weights()
    h = gan.fit(real, batch_size=64, epochs=5, verbose=0)
    assert set(h.history) == {"d_loss", "g_loss"}
    assert all(np.isfinite(h.history["d_loss"] + h.history["g_loss"]))
    sess = ml.keras.backend.get_session(gen.graph)
    assert int(sess.run(d_opt.iterations)) == 40 and int(sess.run(g_opt.iterations)) == 40
    # each optimizer holds slots for (and so updated) only its own network's weights
    for w in disc.trainable_weights:
        assert d_opt.get_slot(w, "mu") is not None and g_opt.get_slot(w, "mu") is None
    for w in gen.trainable_weights:
        assert g_opt.get_slot(w, "mu") is not None and d_opt.get_slot(w, "mu") is None
    assert all(not np.allclose(a, b) for a, b in zip(g0, gen.get_weights()))
    assert all(not np.allclose(a, b) for a, b in zip(d0, disc.get_weights()))


def test_steps_per_execution_and_dataset_with_custom_step():
    model = linear(TapeFree)
    model.compile(optimizer=keras.optimizers.SGD(0.05), steps_per_execution=2)
    model.fit(X, Y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    w, b = numpy_sgd(X, Y, 0.05, 16, 3)
    np.testing.assert_allclose(model.get_weights()[0], w, rtol=1e-5, atol=1e-6)
    m2 = linear(TapeFree)
    m2.compile(optimizer=keras.optimizers.SGD(0.05))
    ds = ml.data.Dataset.from_tensor_slices((X, Y)).batch(16)
    m2.fit(ds, epochs=3, verbose=0)
    np.testing.assert_allclose(m2.get_weights()[0], w, rtol=1e-5, atol=1e-6)


def test_bad_step_results_are_clear():
    class Bad(keras.Model):
        def train_step(self, data):
            x, y = data
            loss = ops.mean(ops.square(self(x) - y))
            tv = self.trainable_variables
            self.optimizer.apply(ml.gradients(loss, tv), tv)
            return [loss]

    m = linear(Bad)
    m.compile(optimizer="sgd")
    with pytest.raises(TypeError, match="dict of logs"):
        m.fit(X, Y, verbose=0)
    opt = keras.optimizers.SGD(0.1)
    with pytest.raises(ValueError, match="trainable_variables"):
        opt.apply([None])


def test_custom_model_with_call_and_build_saves_weights(tmp_path):
    class MLP(keras.Model):
        def __init__(self, units=8, **kw):
            super().__init__(**kw)
            self.units = units
            self.hidden = layers.Dense(units, activation="relu")
            self.out = layers.Dense(1)

        def build(self, input_shape):
            super().build(input_shape)

        def call(self, x, training=None):
            return self.out(self.hidden(x))

    m = MLP()
    m.build((None, 3))
    m.compile(optimizer="adam", loss="mse")
    m.fit(X, Y, epochs=2, verbose=0)
    path = str(tmp_path / "w.weights.h5")
    m.save_weights(path)
    m2 = MLP()
    m2.build((None, 3))
    m2.load_weights(path)
    np.testing.assert_allclose(m2.predict(X, verbose=0), m.predict(X, verbose=0), rtol=1e-6)


def test_add_weight_in_keras3_positional_order():
    class Affine(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight((input_shape[-1], 2), "ones")
            self.b = self.add_weight(shape=(2,), initializer="zeros", aggregation="mean")

        def call(self, x):
            return ops.matmul(x, self.w) + self.b

    layer = Affine()
    out = layer(np.ones((1, 3), np.float32))
    np.testing.assert_array_equal(out, [[3.0, 3.0]])
    assert [tuple(w.shape.as_list()) for w in layer.weights] == [(3, 2), (2,)]


def test_learning_rate_can_be_set_between_fits():
    model = linear()
    opt = keras.optimizers.SGD(0.05)
    model.compile(optimizer=opt, loss="mse")
    model.fit(X, Y, batch_size=64, epochs=1, shuffle=False, verbose=0)
    opt.learning_rate = 0.0
    w = model.get_weights()
    model.fit(X, Y, batch_size=64, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(w, model.get_weights()):
        np.testing.assert_array_equal(a, b)  # rate 0: nothing moves
    assert float(ml.keras.backend.get_session(model.graph).run(opt.learning_rate)) == 0.0
    with pytest.raises(ValueError, match="schedule"):
        opt.learning_rate = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)


def test_custom_train_step_finds_its_updates_while_dropped_models_are_freed():
    """Ops of a dropped model leave the graph's op list when Python frees them, which
    may happen while a custom `train_step` is being built: the step still finds every
    op it created (an optimizer update missed that way left the weights unchanged)."""
    import gc
    import warnings

    dropped = [keras.Sequential([keras.Input((3,)), layers.Dense(4), layers.Dense(2)])]
    dropped[0].predict(np.ones((2, 3), np.float32), verbose=0)

    class Model(keras.Model):
        def train_step(self, data):
            x, y = data
            loss = ops.mean(ops.square(self(x, training=True) - y))
            dropped.clear()  # the other model's ops go while this step is built
            gc.collect()
            tv = self.trainable_variables
            self.optimizer.apply(ml.gradients(loss, tv), tv)
            return {"loss": loss}

    inp = keras.Input((3,))
    model = Model(inp, layers.Dense(1)(inp))
    model.compile(optimizer=keras.optimizers.SGD(0.1))
    x = R.normal(size=(32, 3)).astype(np.float32)
    y = x.sum(1, keepdims=True)
    w0 = model.get_weights()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # "built no optimizer update"
        model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    sess = ml.keras.backend.get_session(model.graph)
    assert int(sess.run(model.optimizer.iterations)) == 8
    assert not np.allclose(w0[0], model.get_weights()[0])
