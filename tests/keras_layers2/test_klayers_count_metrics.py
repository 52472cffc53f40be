"""TruePositives / FalsePositives / TrueNegatives / FalseNegatives against Keras 3 (jax
backend) and numpy: one or several thresholds, sample weights, several batches, the
even-grid clipping, configs, and use in compile/fit."""

import numpy as np
import pytest

import mylib as ml
from mylib import metrics

keras = pytest.importorskip("keras")

rs = np.random.RandomState(3)
NAMES = ["TruePositives", "FalsePositives", "TrueNegatives", "FalseNegatives"]


def _run(metrics_, batches):
    """Feeds the batches to every metric of `metrics_` in one graph; their results."""
    g = ml.Graph()
    with g.as_default():
        ups = [[m.update_state(t, p, sample_weight=w) for m in metrics_]
               for t, p, w in batches]
        res = [m.result() for m in metrics_]
        reset = [m.reset_state() for m in metrics_]
    with ml.Session(graph=g) as s:
        s.run(reset)
        for u in ups:
            s.run(u)
        return s.run(res)


def _keras(name, batches, **kw):
    m = getattr(keras.metrics, name)(**kw)
    for t, p, w in batches:
        m.update_state(t, p, sample_weight=w)
    return np.asarray(m.result())


def _numpy(name, yt, yp, w, thresholds):
    w = np.ones(yp.size) if w is None else np.broadcast_to(w, yt.shape).ravel()
    yt, yp = yt.ravel() != 0, yp.ravel()
    out = []
    for t in np.atleast_1d(thresholds):
        pos = yp > t
        cond = {"TruePositives": yt & pos, "FalsePositives": ~yt & pos,
                "TrueNegatives": ~yt & ~pos, "FalseNegatives": yt & ~pos}[name]
        out.append((w * cond).sum())
    return np.asarray(out) if np.ndim(thresholds) else out[0]


@pytest.mark.parametrize("thresholds", [None, 0.3, [0.1, 0.5, 0.8], [0.0, 0.5, 1.0]])
@pytest.mark.parametrize("weighted", [False, True])
def test_counts_match_keras_and_numpy(thresholds, weighted):
    yt = rs.randint(0, 2, (40, 3)).astype(np.float32)
    yp = rs.uniform(-0.2, 1.2, (40, 3)).astype(np.float32)  # outside [0, 1]: clipping
    w = rs.rand(40).astype(np.float32) if weighted else None
    batches = [(yt[:15], yp[:15], None if w is None else w[:15]),
               (yt[15:], yp[15:], None if w is None else w[15:])]
    kw = {} if thresholds is None else {"thresholds": thresholds}
    results = _run([getattr(metrics, name)(**kw) for name in NAMES], batches)
    for name, got in zip(NAMES, results):
        want = _keras(name, batches, **kw)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
        assert np.shape(got) == np.shape(want)
        ref_w = None if w is None else w[:, None]
        np.testing.assert_allclose(got, _numpy(name, yt, np.clip(yp, 0, 1) if
                                               thresholds == [0.0, 0.5, 1.0] else yp, ref_w,
                                               0.5 if thresholds is None else thresholds),
                                   rtol=1e-5, atol=1e-4)


def test_config_names_and_errors():
    for name in NAMES:
        m = getattr(metrics, name)(thresholds=[0.2, 0.7], name="c")
        cfg = m.get_config()
        assert cfg["thresholds"] == [0.2, 0.7] and cfg["name"] == "c"
        assert type(m).from_config(cfg).get_config() == cfg
        assert getattr(keras.metrics, name)().name.startswith(getattr(metrics, name)().name)
        assert isinstance(metrics.get(name), getattr(metrics, name))
    with pytest.raises(ValueError, match="Threshold"):
        metrics.TruePositives(thresholds=1.5)


def test_counts_in_fit_and_evaluate():
    x = rs.randn(200, 4).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = ml.Sequential([ml.layers.Input((4,)), ml.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer=ml.optimizers.Adam(0.05), loss="binary_crossentropy",
                  metrics=[metrics.TruePositives(), metrics.FalsePositives(),
                           metrics.TrueNegatives(), metrics.FalseNegatives()])
    model.fit(x, y, epochs=40, batch_size=50, verbose=0)
    res = model.evaluate(x, y, verbose=0, return_dict=True)
    p = model.predict(x, verbose=0) > 0.5
    t = y > 0.5
    assert res["true_positives"] == (p & t).sum()
    assert res["false_positives"] == (p & ~t).sum()
    assert res["true_negatives"] == (~p & ~t).sum()
    assert res["false_negatives"] == (~p & t).sum()
    assert res["true_positives"] + res["true_negatives"] > 170
