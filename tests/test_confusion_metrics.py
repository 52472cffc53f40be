"""Precision / Recall with `top_k`, `class_id` and threshold lists, and AUC with
`multi_label` / `label_weights`: against numpy references written from Keras's
definitions, and against Keras 3 itself (jax backend, a test dependency)."""

import numpy as np
import pytest

import mylib as ml
from mylib import metrics

rng = np.random.RandomState(7)


def _run(metric, batches):
    """Feeds [(y_true, y_pred, sample_weight or None)] through update_state, one op per
    batch, in one session; returns the result."""
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


def _halves(*arrays):
    h = len(arrays[0]) // 2
    return [tuple(None if a is None else a[sl] for a in arrays)
            for sl in (slice(0, h), slice(h, None))]


def _keras():
    """Keras 3 (a test dependency) on its JAX backend (tests/conftest.py sets it)."""
    import keras

    assert hasattr(keras, "backend"), f"`import keras` found {keras!r}, not Keras 3"
    assert keras.backend.backend() == "jax", keras.backend.backend()
    return keras


def _keras_result(metric, yt, yp, w):
    metric.update_state(yt, yp, sample_weight=w)
    return np.asarray(metric.result())


# ------------------------------------------------------------ numpy references
def _np_top_k(yp, k):
    # Stable sort of the negated scores: ties go to the lower index, as lax.top_k.
    idx = np.argsort(-yp, axis=-1, kind="stable")[..., :k]
    keep = np.zeros(yp.shape, bool)
    np.put_along_axis(keep, idx, True, axis=-1)
    return np.where(keep, yp, -1e10)


def _np_pr(yt, yp, w=None, thresholds=None, top_k=None, class_id=None):
    """(precision, recall) per threshold, by Keras's definitions."""
    thr = np.atleast_1d(np.asarray(
        thresholds if thresholds is not None else (0.5 if top_k is None else -1e10),
        np.float64))
    w = np.ones(yp.shape) if w is None else np.broadcast_to(
        w.reshape(w.shape + (1,) * (yp.ndim - w.ndim)), yp.shape)
    if top_k is not None:
        yp = _np_top_k(yp, top_k)
    if class_id is not None:
        yt, yp, w = yt[..., class_id], yp[..., class_id], w[..., class_id]
    pos = yp.reshape(-1, 1) > thr[None, :]
    t = (yt.reshape(-1, 1) != 0)
    w = w.reshape(-1, 1)
    tp, fp, fn = ((w * (a & b)).sum(0) for a, b in ((t, pos), (~t, pos), (t, ~pos)))
    dv = lambda a, b: np.where(b == 0, 0.0, a / np.where(b == 0, 1, b))  # noqa: E731
    return dv(tp, tp + fp), dv(tp, tp + fn)


def _np_auc_1(yt, yp, w, n=200, curve="ROC", method="interpolation"):
    """One pooled AUC (Keras's thresholds, counts and sums)."""
    thr = np.array([-1e-7] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + 1e-7])
    yp = np.clip(yp, 0, 1)
    w = np.ones_like(yp, dtype=np.float64) if w is None else w
    pos = yp[:, None] > thr[None, :]
    t = (yt != 0)[:, None]
    tp, fp, tn, fn = ((w[:, None] * (a & b)).sum(0)
                      for a, b in ((t, pos), (~t, pos), (~t, ~pos), (t, ~pos)))
    dv = lambda a, b: np.where(b == 0, 0.0, a / np.where(b == 0, 1, b))  # noqa: E731
    if curve == "PR" and method == "interpolation":
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        slope = dv(dtp, np.maximum(p[:-1] - p[1:], 0))
        icpt = tp[1:] - slope * p[1:]
        ratio = np.where((p[:-1] > 0) & (p[1:] > 0), dv(p[:-1], np.maximum(p[1:], 0)), 1.0)
        return dv(slope * (dtp + icpt * np.log(ratio)), np.maximum(tp[1:] + fn[1:], 0)).sum()
    rec = dv(tp, tp + fn)
    x, y = (dv(fp, fp + tn), rec) if curve == "ROC" else (rec, dv(tp, tp + fp))
    h = {"interpolation": (y[:-1] + y[1:]) / 2, "minoring": np.minimum(y[:-1], y[1:]),
         "majoring": np.maximum(y[:-1], y[1:])}[method]
    return ((x[:-1] - x[1:]) * h).sum()


# ------------------------------------------------------------ data
N, C = 120, 5
YT = (rng.rand(N, C) > 0.6).astype(np.float32)
YP = np.clip(YT * 0.25 + rng.rand(N, C) * 0.75, 0, 1).astype(np.float32)
YP[:10, :2] = 0.5  # ties, broken by the lower index
W = rng.rand(N).astype(np.float32)


@pytest.mark.parametrize("top_k", [1, 2, 4])
@pytest.mark.parametrize("weighted", [False, True])
def test_precision_recall_top_k_against_numpy(top_k, weighted):
    w = W if weighted else None
    want_p, want_r = _np_pr(YT, YP, w, top_k=top_k)
    got_p = _run(metrics.Precision(top_k=top_k), _halves(YT, YP, w))
    got_r = _run(metrics.Recall(top_k=top_k), _halves(YT, YP, w))
    assert np.shape(got_p) == ()
    np.testing.assert_allclose(got_p, want_p[0], rtol=1e-5)
    np.testing.assert_allclose(got_r, want_r[0], rtol=1e-5)
    # top_k with thresholds: a top-k score must also exceed the threshold.
    want_p, want_r = _np_pr(YT, YP, w, thresholds=[0.3, 0.7], top_k=top_k)
    got_p = _run(metrics.Precision(thresholds=[0.3, 0.7], top_k=top_k), _halves(YT, YP, w))
    got_r = _run(metrics.Recall(thresholds=[0.3, 0.7], top_k=top_k), _halves(YT, YP, w))
    np.testing.assert_allclose(got_p, want_p, rtol=1e-5)
    np.testing.assert_allclose(got_r, want_r, rtol=1e-5)


def test_precision_recall_top_k_changes_the_counts():
    # Row 0's class 2 (0.8) is above 0.5 but not in the top 1.
    yt = np.array([[0, 0, 1], [1, 0, 0]], np.float32)
    yp = np.array([[0.1, 0.9, 0.8], [0.7, 0.2, 0.6]], np.float32)
    assert _run(metrics.Precision(), [(yt, yp, None)]) == pytest.approx(2 / 4)
    assert _run(metrics.Precision(top_k=1), [(yt, yp, None)]) == pytest.approx(1 / 2)
    assert _run(metrics.Recall(top_k=1), [(yt, yp, None)]) == pytest.approx(1 / 2)
    assert _run(metrics.Recall(top_k=2), [(yt, yp, None)]) == pytest.approx(1.0)


@pytest.mark.parametrize("top_k", [None, 2])
def test_precision_recall_class_id_against_numpy(top_k):
    for cid in (0, 3):
        want_p, want_r = _np_pr(YT, YP, W, top_k=top_k, class_id=cid)
        got_p = _run(metrics.Precision(top_k=top_k, class_id=cid), _halves(YT, YP, W))
        got_r = _run(metrics.Recall(top_k=top_k, class_id=cid), _halves(YT, YP, W))
        np.testing.assert_allclose(got_p, want_p[0], rtol=1e-5)
        np.testing.assert_allclose(got_r, want_r[0], rtol=1e-5)


@pytest.mark.parametrize("kw", [dict(top_k=2), dict(top_k=1, class_id=2),
                                dict(thresholds=[0.2, 0.5, 0.9], top_k=3),
                                dict(thresholds=[0.0, 0.5, 1.0]), dict(class_id=4),
                                dict(thresholds=[0.6])])
def test_precision_recall_match_keras(kw):
    keras = _keras()
    for ours, theirs in ((metrics.Precision, keras.metrics.Precision),
                         (metrics.Recall, keras.metrics.Recall)):
        got = _run(ours(**kw), [(YT, YP, W)])
        want = _keras_result(theirs(**kw), YT, YP, W)
        assert np.shape(got) == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_precision_recall_bad_arguments():
    with pytest.raises(ValueError, match="thresholds"):
        metrics.Precision(thresholds=[0.2, 1.5])
    with pytest.raises(ValueError, match="top_k"):
        metrics.Recall(top_k=0)
    with pytest.raises(ValueError, match="class_id"):
        metrics.Precision(class_id=-1)
    with pytest.raises(ValueError, match="top_k"):
        _run(metrics.Precision(top_k=6), [(YT, YP, None)])  # 5 classes
    with pytest.raises(ValueError, match="class_id"):
        _run(metrics.Recall(class_id=0), [(YT[:, 0], YP[:, 0], None)])
    with pytest.raises(ValueError, match="class_id"):
        _run(metrics.Recall(class_id=5), [(YT, YP, None)])
    cfg = metrics.Precision(top_k=3, class_id=1).get_config()
    assert (cfg["top_k"], cfg["class_id"]) == (3, 1)
    assert metrics.Precision.from_config(cfg).top_k == 3


# ------------------------------------------------------------ AUC
ML_T = (rng.rand(200, 4) > np.array([0.3, 0.5, 0.7, 0.9])).astype(np.float32)
ML_P = np.clip(ML_T * rng.rand(4) * 0.5 + rng.rand(200, 4) * 0.7, 0, 1).astype(np.float32)
ML_W = rng.rand(200).astype(np.float32)
CASES = [(c, m) for c in ("ROC", "PR") for m in ("interpolation", "minoring", "majoring")]


@pytest.mark.parametrize("curve,method", CASES)
@pytest.mark.parametrize("label_weights", [None, [1.0, 0.0, 2.0, 0.5]])
def test_auc_multi_label_against_numpy(curve, method, label_weights):
    per = np.array([_np_auc_1(ML_T[:, j], ML_P[:, j], ML_W, curve=curve, method=method)
                    for j in range(4)])
    want = per.mean() if label_weights is None else (
        (per * label_weights).sum() / np.sum(label_weights))
    got = _run(metrics.AUC(curve=curve, summation_method=method, multi_label=True,
                           label_weights=label_weights), _halves(ML_T, ML_P, ML_W))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("curve,method", CASES)
@pytest.mark.parametrize("multi_label", [False, True])
def test_auc_matches_keras(curve, method, multi_label):
    keras = _keras()
    for lw, w in ((None, None), ([0.5, 1.0, 3.0, 0.0], ML_W)):
        kw = dict(curve=curve, summation_method=method, multi_label=multi_label,
                  label_weights=lw, num_thresholds=50)
        got = _run(metrics.AUC(**kw), _halves(ML_T, ML_P, w))
        want = _keras_result(keras.metrics.AUC(**kw), ML_T, ML_P, w)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_auc_multi_label_is_not_the_pooled_auc():
    pooled = _run(metrics.AUC(), [(ML_T, ML_P, None)])
    per = _run(metrics.AUC(multi_label=True, num_labels=4), [(ML_T, ML_P, None)])
    want = np.mean([_np_auc_1(ML_T[:, j], ML_P[:, j], None) for j in range(4)])
    np.testing.assert_allclose(per, want, rtol=1e-4)
    np.testing.assert_allclose(pooled, _np_auc_1(ML_T.ravel(), ML_P.ravel(), None), rtol=1e-4)
    assert abs(per - pooled) > 1e-3


def test_auc_multi_label_state_and_errors():
    m = metrics.AUC(multi_label=True, num_labels=3, num_thresholds=10)
    with ml.Graph().as_default():
        assert [v.shape.as_list() for v in m.variables] == [[10, 3]] * 4
    with pytest.raises(ValueError, match="num_labels"):
        metrics.AUC(num_labels=3)
    with pytest.raises(ValueError, match="label_weights"):
        metrics.AUC(multi_label=True, label_weights=[1.0, -1.0])
    with pytest.raises(ValueError, match="label_weights"):
        metrics.AUC(multi_label=True, num_labels=3, label_weights=[1.0, 1.0])
    with pytest.raises(ValueError, match="rank 2"):
        _run(metrics.AUC(multi_label=True), [(ML_T[:, 0], ML_P[:, 0], None)])
    with pytest.raises(ValueError, match="num_labels"):
        with ml.Graph().as_default():
            metrics.AUC(multi_label=True).result()
    with pytest.raises(ValueError, match="labels"):
        _run(metrics.AUC(multi_label=True, num_labels=3), [(ML_T, ML_P, None)])
    with pytest.raises(ValueError, match="summation_method"):
        metrics.AUC(summation_method="trapezoid")
    cfg = metrics.AUC(curve="PR", multi_label=True, label_weights=[1, 2],
                      thresholds=[0.25, 0.5, 0.75]).get_config()
    again = metrics.AUC.from_config(cfg)
    assert again.multi_label and again.label_weights.tolist() == [1.0, 2.0]
    assert again.thresholds == metrics.AUC(thresholds=[0.25, 0.5, 0.75]).thresholds
