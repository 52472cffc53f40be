"""The second batch of metrics against numpy formulas and scikit-learn, accumulated over
several updates with sample weights."""

import numpy as np
import pytest
from sklearn import metrics as skm

import mylib as ml
from mylib import metrics

rng = np.random.RandomState(1)


def _run(metric, batches):
    """Feeds `batches` [(y_true, y_pred, sample_weight or None)] through update_state in
    one session, one update op per batch; returns the result."""
    g = ml.Graph()
    with g.as_default():
        ups = [metric.update_state(t, p, sample_weight=w) for t, p, w in batches]
        res = metric.result()
        reset = metric.reset_state()
    with ml.Session(graph=g) as s:
        s.run(reset)
        for u in ups:
            s.run(u)
        return s.run(res)


def _split(*arrays):
    h = len(arrays[0]) // 2
    return [tuple(None if a is None else a[sl] for a in arrays)
            for sl in (slice(0, h), slice(h, None))]


N = 300
BT = (rng.rand(N) > 0.6).astype(np.float32)
BP = np.clip(BT * 0.3 + rng.rand(N) * 0.7, 0, 1).astype(np.float32)
SW = rng.rand(N).astype(np.float32)


@pytest.mark.parametrize("weighted", [False, True])
def test_precision_recall_against_sklearn(weighted):
    w = SW if weighted else None
    pred = (BP > 0.5).astype(int)
    p = _run(metrics.Precision(), _split(BT, BP, w))
    r = _run(metrics.Recall(), _split(BT, BP, w))
    np.testing.assert_allclose(p, skm.precision_score(BT, pred, sample_weight=w), rtol=1e-5)
    np.testing.assert_allclose(r, skm.recall_score(BT, pred, sample_weight=w), rtol=1e-5)
    ps = _run(metrics.Precision(thresholds=[0.3, 0.7]), _split(BT, BP, w))
    assert ps.shape == (2,)
    np.testing.assert_allclose(
        ps[1], skm.precision_score(BT, (BP > 0.7).astype(int), sample_weight=w), rtol=1e-5)


def test_precision_class_id_and_empty():
    yt = np.eye(3, dtype=np.float32)[rng.randint(0, 3, 50)]
    yp = rng.rand(50, 3).astype(np.float32)
    p = _run(metrics.Precision(class_id=1), [(yt, yp, None)])
    np.testing.assert_allclose(p, skm.precision_score(yt[:, 1], yp[:, 1] > 0.5), rtol=1e-5)
    assert _run(metrics.Recall(), [(np.zeros(4, np.float32), np.zeros(4, np.float32), None)]) == 0


def _keras_auc_np(yt, yp, w, n=200, curve="ROC"):
    thr = np.array([-1e-7] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + 1e-7])
    w = np.ones_like(yp) if w is None else w
    pos = (yp[:, None] > thr[None, :])
    t = (yt != 0)[:, None]
    tp = (w[:, None] * (t & pos)).sum(0)
    fp = (w[:, None] * (~t & pos)).sum(0)
    tn = (w[:, None] * (~t & ~pos)).sum(0)
    fn = (w[:, None] * (t & ~pos)).sum(0)
    dv = lambda a, b: np.where(b == 0, 0.0, a / np.where(b == 0, 1, b))
    if curve == "ROC":
        x, y = dv(fp, fp + tn), dv(tp, tp + fn)
        return ((x[:-1] - x[1:]) * (y[:-1] + y[1:]) / 2).sum()
    dtp = tp[:-1] - tp[1:]
    p = tp + fp
    dp = p[:-1] - p[1:]
    slope = dv(dtp, np.maximum(dp, 0))
    icpt = tp[1:] - slope * p[1:]
    ratio = np.where((p[:-1] > 0) & (p[1:] > 0), dv(p[:-1], np.maximum(p[1:], 0)), 1.0)
    return dv(slope * (dtp + icpt * np.log(ratio)), np.maximum(tp[1:] + fn[1:], 0)).sum()


@pytest.mark.parametrize("weighted", [False, True])
def test_auc_roc_and_pr(weighted):
    w = SW if weighted else None
    roc = _run(metrics.AUC(), _split(BT, BP, w))
    np.testing.assert_allclose(roc, _keras_auc_np(BT, BP, w), rtol=1e-4)
    np.testing.assert_allclose(roc, skm.roc_auc_score(BT, BP, sample_weight=w), atol=5e-3)
    pr = _run(metrics.AUC(curve="PR"), _split(BT, BP, w))
    np.testing.assert_allclose(pr, _keras_auc_np(BT, BP, w, curve="PR"), rtol=1e-4)
    np.testing.assert_allclose(pr, skm.average_precision_score(BT, BP, sample_weight=w),
                               atol=3e-2)
    logits = np.log(BP + 1e-6) - np.log(1 - BP + 1e-6)
    np.testing.assert_allclose(_run(metrics.AUC(from_logits=True), [(BT, logits, None)]),
                               _keras_auc_np(BT, BP, None), atol=2e-3)
    with pytest.raises(ValueError, match="curve"):
        metrics.AUC(curve="XY")


def test_top_k_accuracies():
    yp = rng.rand(40, 6).astype(np.float32)
    lab = rng.randint(0, 6, 40)
    ranks = (yp > yp[np.arange(40), lab][:, None]).sum(1)
    for k in (1, 3, 5):
        want = (ranks < k).mean()
        got = _run(metrics.SparseTopKCategoricalAccuracy(k=k), _split(lab, yp, None))
        np.testing.assert_allclose(got, want, rtol=1e-6)
        got = _run(metrics.TopKCategoricalAccuracy(k=k),
                   _split(np.eye(6, dtype=np.float32)[lab], yp, None))
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # [N, 1] labels and sample weights
    want = ((ranks < 2) * SW[:40]).sum() / SW[:40].sum()
    got = _run(metrics.SparseTopKCategoricalAccuracy(k=2), _split(lab[:, None], yp, SW[:40]))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_regression_metrics():
    yt = rng.randn(30, 4).astype(np.float32)
    yp = rng.randn(30, 4).astype(np.float32)
    w = SW[:30]
    e2 = ((yp - yt) ** 2).mean(1)
    np.testing.assert_allclose(_run(metrics.MeanSquaredError(), _split(yt, yp, w)),
                               (e2 * w).sum() / w.sum(), rtol=1e-5)
    e1 = np.abs(yp - yt).mean(1)
    np.testing.assert_allclose(_run(metrics.MeanAbsoluteError(), _split(yt, yp, w)),
                               (e1 * w).sum() / w.sum(), rtol=1e-5)
    np.testing.assert_allclose(_run(metrics.RootMeanSquaredError(), _split(yt, yp, w)),
                               np.sqrt((e2 * w).sum() / w.sum()), rtol=1e-5)
    np.testing.assert_allclose(_run(metrics.RootMeanSquaredError(), _split(yt, yp, None)),
                               np.sqrt(e2.mean()), rtol=1e-5)


def _miou_np(t, p, c, w=None, ignore=None):
    w = np.ones(len(t)) if w is None else w
    if ignore is not None:
        w = w * (t != ignore)
    cm = np.zeros((c, c))
    np.add.at(cm, (t, p), w)
    tp = np.diag(cm)
    den = cm.sum(0) + cm.sum(1) - tp
    return (tp[den > 0] / den[den > 0]).mean()


def test_mean_iou():
    t = rng.randint(0, 4, (10, 8))
    p = np.where(rng.rand(10, 8) < 0.6, t, rng.randint(0, 4, (10, 8)))
    got = _run(metrics.MeanIoU(num_classes=4), _split(t, p, None))
    np.testing.assert_allclose(got, _miou_np(t.ravel(), p.ravel(), 4), rtol=1e-5)
    np.testing.assert_allclose(got, skm.jaccard_score(t.ravel(), p.ravel(), average="macro"),
                               rtol=1e-5)
    w = SW[:10]
    got = _run(metrics.MeanIoU(num_classes=4, ignore_class=0), _split(t, p, w))
    np.testing.assert_allclose(got, _miou_np(t.ravel(), p.ravel(), 4,
                                             np.repeat(w, 8), ignore=0), rtol=1e-5)
    scores = np.eye(4, dtype=np.float32)[p] + 0.01
    got = _run(metrics.MeanIoU(num_classes=4, sparse_y_pred=False), [(t, scores, None)])
    np.testing.assert_allclose(got, _miou_np(t.ravel(), p.ravel(), 4), rtol=1e-5)


@pytest.mark.parametrize("average", [None, "micro", "macro", "weighted"])
def test_f1_score_against_sklearn(average):
    lab = rng.randint(0, 4, 80)
    yt = np.eye(4, dtype=np.float32)[lab]
    yp = rng.rand(80, 4).astype(np.float32) + yt * 0.5
    got = _run(metrics.F1Score(average=average), _split(yt, yp, None))
    want = skm.f1_score(lab, yp.argmax(1), average=average)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # multi-label with a threshold, weighted samples
    ml_t = (rng.rand(80, 4) > 0.5).astype(np.float32)
    ml_p = rng.rand(80, 4).astype(np.float32)
    w = SW[:80]
    got = _run(metrics.F1Score(average=average, threshold=0.5), _split(ml_t, ml_p, w))
    want = skm.f1_score(ml_t, ml_p > 0.5, average=average, sample_weight=w)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_metrics_in_compile_and_by_name():
    x = rng.rand(64, 3).astype(np.float32)
    y = (x[:, 0] > 0.5).astype(np.float32)
    inp = ml.layers.Input(shape=(3,))
    m = ml.Model(inp, ml.layers.Dense(1, activation="sigmoid")(inp))
    m.compile("adam", "binary_crossentropy",
              metrics=["precision", "recall", "auc", metrics.AUC(curve="PR", name="prauc"),
                       "rmse"])
    m.fit(x, y, epochs=1, batch_size=16, verbose=0)
    logs = m.evaluate(x, y, verbose=0, return_dict=True)
    assert set(logs) == {"loss", "precision", "recall", "auc", "prauc", "rmse"}
    p = m.predict(x, verbose=0)[:, 0]
    np.testing.assert_allclose(logs["auc"], _keras_auc_np(y, p, None), atol=1e-4)
    np.testing.assert_allclose(logs["rmse"], np.sqrt(((p - y) ** 2).mean()), rtol=1e-4)
    assert isinstance(metrics.get("auc"), metrics.AUC)
    again = metrics.get({"class_name": "AUC", "config": metrics.AUC(curve="PR").get_config()})
    assert again.curve == "PR"
