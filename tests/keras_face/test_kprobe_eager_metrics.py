"""Metrics used eagerly on arrays, as Keras 3 programs do (`m.update_state(y, p);
float(m.result())`, `reset_state`, `m(y, p)`): compared against Keras 3 (JAX backend);
a metric used on tensors still builds graph ops."""

import numpy as np
import pytest

import mylib as ml
from mylib import keras


def _data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 20)
    p = rng.normal(size=(20, 3)).astype("float32")
    w = rng.uniform(size=20).astype("float32")
    return y, p, w


@pytest.mark.parametrize("name", ["SparseCategoricalAccuracy", "Mean", "AUC", "Precision",
                                  "MeanSquaredError"])
def test_eager_metric_matches_keras(name):
    k3 = pytest.importorskip("keras")
    y, p, w = _data()
    binary = ((y > 0).astype("float32"), 1 / (1 + np.exp(-p[:, 0])))
    args = {"SparseCategoricalAccuracy": (y, p), "Mean": (p[:, 0],), "AUC": binary,
            "Precision": binary, "MeanSquaredError": (p, p * 0.5)}[name]
    ours, ref = getattr(keras.metrics, name)(), getattr(k3.metrics, name)()
    for m in (ours, ref):
        assert m.update_state(*args) is None
        m.update_state(*args, sample_weight=w)
    assert float(ours.result()) == pytest.approx(float(ref.result()), rel=1e-5)
    ours.reset_state()
    ref.reset_state()
    half = [a[:10] for a in args]
    assert float(ours(*half)) == pytest.approx(float(ref(*half)), rel=1e-5)
    ours.update_state(*args)
    ref.update_state(*args)
    assert float(ours.result()) == pytest.approx(float(ref.result()), rel=1e-5)


def test_metric_on_tensors_still_builds_ops():
    y, p, _ = _data()
    g = ml.Graph()
    m = keras.metrics.SparseCategoricalAccuracy()
    with g.as_default():
        op = m.update_state(ml.constant(y), ml.constant(p))
        res = m.result()
        assert isinstance(res, ml.Tensor)
    with ml.Session(graph=g) as s:
        s.run(ml.local_variables_initializer())
        s.run(op)
        assert s.run(res) == pytest.approx(np.mean(p.argmax(1) == y))
