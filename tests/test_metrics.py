"""Metrics: exact numbers across updates, reset, sample weights, label forms."""

import numpy as np
import pytest

import mylib as ml
from mylib import metrics


def _session(g):
    return ml.Session(graph=g)


def test_mean_weighted_over_several_updates_and_reset():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None])
        w = ml.placeholder(ml.float32, [None])
        m = metrics.Mean()
        upd = m.update_state(x)
        upd_w = m.update_state(x, sample_weight=w)
        res = m.result()
        reset = m.reset_state()
    with _session(g) as s:
        s.run(reset)
        assert s.run(res) == 0.0  # no NaN before any update
        s.run(upd, {x: [1.0, 2.0, 3.0]})
        assert s.run(res) == pytest.approx(2.0)
        s.run(upd_w, {x: [10.0, 20.0], w: [1.0, 3.0]})
        # (1 + 2 + 3 + 10 + 60) / (3 + 4)
        assert s.run(res) == pytest.approx(76.0 / 7.0)
        s.run(reset)
        assert s.run(res) == 0.0
        s.run(upd, {x: [4.0]})
        assert s.run(res) == pytest.approx(4.0)


def test_metric_variables_collections():
    g = ml.Graph()
    with g.as_default():
        m = metrics.Mean(name="loss_mean")
        m.update_state([1.0])
        vs = m.variables
        assert len(vs) == 2
        for v in vs:
            assert not v.trainable
            assert v in g.get_collection(ml.GraphKeys.LOCAL_VARIABLES)
            assert v in g.get_collection(ml.GraphKeys.METRIC_VARIABLES)
            assert v not in g.get_collection(ml.GraphKeys.GLOBAL_VARIABLES)
            assert v.name.startswith("loss_mean/")
        init = ml.local_variables_initializer()
        res = m.result()
    with _session(g) as s:
        s.run(init)
        assert s.run(res) == 0.0


def test_sum():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, 2])
        m = metrics.Sum()
        upd = m.update_state(x, sample_weight=[2.0, 0.5])
        res, reset = m.result(), m.reset_state()
    with _session(g) as s:
        s.run(reset)
        s.run(upd, {x: [[1.0, 2.0], [4.0, 8.0]]})
        s.run(upd, {x: [[1.0, 1.0], [0.0, 0.0]]})
        # 2*(1+2) + 0.5*(4+8) + 2*(1+1) = 16
        assert s.run(res) == pytest.approx(16.0)


def _run_metric(metric, batches, weights=None):
    g = ml.Graph()
    with g.as_default():
        ops = []
        for i, (yt, yp) in enumerate(batches):
            sw = None if weights is None else weights[i]
            ops.append(metric.update_state(np.asarray(yt), np.asarray(yp), sample_weight=sw))
        res, reset = metric.result(), metric.reset_state()
    with _session(g) as s:
        s.run(reset)
        out = []
        for op in ops:
            s.run(op)
            out.append(float(s.run(res)))
        return out


@pytest.mark.parametrize("labels", [[[2], [0], [1]], [2, 0, 1], [2.0, 0.0, 1.0],
                                    [[2.0], [0.0], [1.0]]])
def test_sparse_categorical_accuracy_label_forms(labels):
    yp1 = [[0.1, 0.2, 0.7], [0.3, 0.6, 0.1], [0.2, 0.5, 0.3]]  # argmax 2, 1, 1 -> 2 hits
    yp2 = [[0.9, 0.05, 0.05], [0.9, 0.05, 0.05], [0.1, 0.8, 0.1]]  # 0, 0, 1 -> 2 hits
    out = _run_metric(metrics.SparseCategoricalAccuracy(), [(labels, yp1), (labels, yp2)])
    assert out == pytest.approx([2 / 3, 4 / 6])
    out = _run_metric(metrics.SparseCategoricalAccuracy(), [(labels, yp1)],
                      weights=[[1.0, 2.0, 3.0]])
    assert out == pytest.approx([4 / 6])  # hits (rows 0, 2) weigh 1 + 3, the miss 2


def test_categorical_accuracy():
    yt = [[0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 1, 0]]
    yp = [[0.1, 0.2, 0.7], [0.3, 0.6, 0.1], [0.2, 0.5, 0.3], [0.9, 0.05, 0.05]]
    assert _run_metric(metrics.CategoricalAccuracy(), [(yt, yp)]) == pytest.approx([0.5])


def test_binary_accuracy_shapes_and_threshold():
    yt = [1.0, 0.0, 1.0, 0.0]
    yp = [[0.7], [0.2], [0.4], [0.6]]  # [N] vs [N, 1]: 2 of 4
    assert _run_metric(metrics.BinaryAccuracy(), [(yt, yp)]) == pytest.approx([0.5])
    assert _run_metric(metrics.BinaryAccuracy(threshold=0.3), [(yt, yp)]) == \
        pytest.approx([0.75])
    yt2 = [[1.0], [1.0]]
    yp2 = [[0.9], [0.1]]
    assert _run_metric(metrics.BinaryAccuracy(), [(yt, yp), (yt2, yp2)]) == \
        pytest.approx([0.5, 3 / 6])


def test_accuracy_and_mse_metric():
    assert _run_metric(metrics.Accuracy(), [([1, 2, 3, 4], [1, 2, 0, 4])]) == \
        pytest.approx([0.75])
    out = _run_metric(metrics.MeanSquaredError(),
                      [([1.0, 2.0], [[1.5], [2.0]]), ([[0.0]], [[3.0]])])
    assert out == pytest.approx([0.125, (0.25 + 0 + 9) / 3])


def test_resolve_accuracy():
    def pick(yt, yp, loss=None):
        return type(metrics.resolve_accuracy(yt, yp, loss))

    assert pick((None,), (None, 10)) is metrics.SparseCategoricalAccuracy
    assert pick((None, 1), (None, 10)) is metrics.SparseCategoricalAccuracy
    assert pick((None, 10), (None, 10)) is metrics.CategoricalAccuracy
    assert pick((None, 1), (None, 1)) is metrics.BinaryAccuracy
    assert pick((None,), (None, 1)) is metrics.BinaryAccuracy
    assert pick((None,), (None,)) is metrics.BinaryAccuracy
    assert pick((None, None), (None, None), "sparse_categorical_crossentropy") is \
        metrics.SparseCategoricalAccuracy
    assert pick((None, None), (None, None), ml.losses.BinaryCrossentropy()) is \
        metrics.BinaryAccuracy
    g = ml.Graph()
    with g.as_default():
        yt = ml.placeholder(ml.int64, [None])
        yp = ml.placeholder(ml.float32, [None, 10])
        m = metrics.resolve_accuracy(yt, yp, "sparse_categorical_crossentropy")
    assert isinstance(m, metrics.SparseCategoricalAccuracy) and m.name == "accuracy"


def test_get_and_config():
    assert isinstance(metrics.get("accuracy"), metrics.Accuracy)
    assert isinstance(metrics.get("acc"), metrics.Accuracy)
    assert isinstance(metrics.get("sparse_categorical_accuracy"),
                      metrics.SparseCategoricalAccuracy)
    assert isinstance(metrics.get("mse"), metrics.MeanSquaredError)
    m = metrics.get("binary_crossentropy")
    assert isinstance(m, metrics.MeanMetricWrapper) and m.name == "binary_crossentropy"
    b = metrics.BinaryAccuracy(threshold=0.7)
    assert metrics.get(b) is b
    assert b.get_config() == {"name": "binary_accuracy", "dtype": "float32", "threshold": 0.7}
    back = metrics.get({"class_name": "BinaryAccuracy", "config": b.get_config()})
    assert back.threshold == 0.7
    with pytest.raises(ValueError, match="Unknown metric"):
        metrics.get("nonsense_metric")
