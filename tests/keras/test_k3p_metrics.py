"""A Keras 3 user metric as the "training & evaluation with the built-in methods"
guide writes it: state made in `__init__` with `add_variable(shape, initializer,
name)`, `update_state` and `reset_state` that assign and return nothing. Compared
with Keras 3 (JAX backend) on the same weights: per-epoch values in fit (reset at
each epoch), evaluate (reset first), and eager use."""

import keras
import numpy as np
import pytest

from mylib import keras as mk

from keras_compare import _same_weights

RS = np.random.RandomState(4)


@pytest.fixture(autouse=True)
def fresh_graph():
    """Overrides the directory's fixture: the metrics here are used as Keras 3 users
    use them, with no graph open (inside ``with graph.as_default():`` an eager call
    would build graph ops instead)."""
    yield
X = RS.randn(64, 8).astype(np.float32)
Y = RS.randint(0, 3, size=(64, 1))


def _true_positives_metric(K):
    class CategoricalTruePositives(K.metrics.Metric):
        def __init__(self, name="categorical_true_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.true_positives = self.add_variable(shape=(), name="ctp",
                                                    initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            y_pred = K.ops.reshape(K.ops.argmax(y_pred, axis=1), (-1, 1))
            values = K.ops.cast(K.ops.equal(K.ops.cast(y_true, "int32"),
                                            K.ops.cast(y_pred, "int32")), "float32")
            if sample_weight is not None:
                values = values * K.ops.reshape(K.ops.cast(sample_weight, "float32"),
                                                (-1, 1))
            self.true_positives.assign_add(K.ops.sum(values))

        def result(self):
            return self.true_positives * 1.0

        def reset_state(self):
            self.true_positives.assign(0.0)

    return CategoricalTruePositives()


def _model(K):
    inp = K.Input((8,))
    return K.Model(inp, K.layers.Dense(3)(K.layers.Dense(6, activation="relu")(inp)))


def test_user_metric_in_fit_and_evaluate_matches_keras():
    km, mm = _model(keras), _model(mk)
    _same_weights(mm, km)
    got = {}
    for name, m, K in (("keras", km, keras), ("mylib", mm, mk)):
        m.compile(optimizer=K.optimizers.Adam(0.01),
                  loss=K.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[_true_positives_metric(K)])
        h = m.fit(X, Y, batch_size=16, epochs=3, shuffle=False, verbose=0).history
        ev = m.evaluate(X, Y, batch_size=16, verbose=0, return_dict=True)
        got[name] = (h["categorical_true_positives"], h["loss"],
                     ev["categorical_true_positives"])
    assert got["mylib"][0] == got["keras"][0]
    np.testing.assert_allclose(got["mylib"][1], got["keras"][1], rtol=1e-5)
    assert got["mylib"][2] == got["keras"][2]


def test_user_metric_eagerly_update_result_reset_as_keras():
    y_pred = RS.randn(10, 3).astype(np.float32)
    y_true = RS.randint(0, 3, size=(10, 1))
    weights = RS.rand(10).astype(np.float32)
    vals = {}
    for name, K in (("keras", keras), ("mylib", mk)):
        m = _true_positives_metric(K)
        m.update_state(y_true, y_pred)
        first = float(m.result())
        m.update_state(y_true, y_pred, sample_weight=weights)
        second = float(m.result())
        m.reset_state()
        vals[name] = (first, second, float(m.result()))
    np.testing.assert_allclose(vals["mylib"], vals["keras"], rtol=1e-6)
    assert vals["mylib"][0] > 0


def test_add_variable_initializers_and_add_weight():
    class Counter(mk.metrics.Metric):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.a = self.add_variable(shape=(2,), initializer="ones", name="a")
            self.b = self.add_weight(shape=(), initializer=lambda shape, dtype: 3.0,
                                     name="b")

        def update_state(self, x):
            self.a.assign_add(mk.ops.sum(x, axis=0))

        def result(self):
            return self.a * self.b

    c = Counter()
    c.update_state(np.ones((4, 2), np.float32))
    np.testing.assert_allclose(c.result(), [15.0, 15.0])
    c.reset_state()  # the base class's reset: zeros, as Keras 3
    np.testing.assert_allclose(c.result(), [0.0, 0.0])
