"""`tf.metrics.*` (TF1 streaming metrics) over several batches against numpy, with
weights; AUC against TF1's thresholded trapezoid (exact) and sklearn (approximately)."""

import numpy as np
import pytest

import mylib as tf

RNG = np.random.RandomState(0)
N, BATCHES = 240, 4
Y = RNG.randint(0, 2, N)
P = np.clip(0.35 * Y + 0.65 * RNG.rand(N), 0, 1).astype(np.float32)
W = (RNG.rand(N) * (RNG.rand(N) > 0.2)).astype(np.float32)
V = RNG.randn(N).astype(np.float32)


def _stream(build, feeds_of):
    """Builds (value, update) with placeholders, runs the updates per batch, returns
    the streamed value and the update's last return."""
    g = tf.Graph()
    with g.as_default():
        phs, value, update = build()
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            assert s.run(value) == 0.0  # nothing seen yet
            for b in range(BATCHES):
                sl = slice(b * N // BATCHES, (b + 1) * N // BATCHES)
                last = s.run(update, {ph: arr[sl] for ph, arr in zip(phs, feeds_of())})
            return s.run(value), last


def _ph(dtype=tf.float32):
    return tf.placeholder(dtype, [None])


@pytest.mark.parametrize("weighted", [False, True])
def test_accuracy_mean_mse_mae_precision_recall(weighted):
    pred = (P > 0.5).astype(np.int64)
    w = W if weighted else np.ones(N, np.float32)

    def mk(fn):
        def build():
            l, p, ww = _ph(tf.int64), _ph(tf.int64), _ph()
            value, update = fn(l, p, ww if weighted else None)
            return (l, p, ww), value, update
        return build

    def feeds():
        return Y, pred, W

    acc, last = _stream(mk(lambda l, p, w_: tf.metrics.accuracy(l, p, weights=w_)), feeds)
    want = ((pred == Y) * w).sum() / w.sum()
    np.testing.assert_allclose([acc, last], [want, want], rtol=1e-5)
    prec, _ = _stream(mk(lambda l, p, w_: tf.metrics.precision(l, p, weights=w_)), feeds)
    np.testing.assert_allclose(prec, (w * (pred == 1) * (Y == 1)).sum() /
                               (w * (pred == 1)).sum(), rtol=1e-5)
    rec, _ = _stream(mk(lambda l, p, w_: tf.metrics.recall(l, p, weights=w_)), feeds)
    np.testing.assert_allclose(rec, (w * (pred == 1) * (Y == 1)).sum() /
                               (w * (Y == 1)).sum(), rtol=1e-5)

    def mkf(fn):
        def build():
            l, p, ww = _ph(), _ph(), _ph()
            value, update = fn(l, p, ww if weighted else None)
            return (l, p, ww), value, update
        return build

    mse, _ = _stream(mkf(lambda l, p, w_: tf.metrics.mean_squared_error(l, p, weights=w_)),
                     lambda: (Y.astype(np.float32), P, W))
    np.testing.assert_allclose(mse, (w * (P - Y) ** 2).sum() / w.sum(), rtol=1e-5)
    mae, _ = _stream(mkf(lambda l, p, w_: tf.metrics.mean_absolute_error(l, p, weights=w_)),
                     lambda: (Y.astype(np.float32), P, W))
    np.testing.assert_allclose(mae, (w * np.abs(P - Y)).sum() / w.sum(), rtol=1e-5)
    mean, _ = _stream(mkf(lambda l, p, w_: tf.metrics.mean(p, weights=w_)),
                      lambda: (Y.astype(np.float32), V, W))
    np.testing.assert_allclose(mean, (w * V).sum() / w.sum(), rtol=1e-4)


def _tf1_auc(y, p, w, num_thresholds=200, curve="ROC"):
    eps = 1e-7
    thr = [0.0 - eps] + [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)] \
        + [1.0 + eps]
    thr = np.asarray(thr, np.float32)[:, None]
    above = p[None, :] > thr
    pos = (y == 1)[None, :]
    tp = (w * (above & pos)).sum(1)
    fn = (w * (~above & pos)).sum(1)
    tn = (w * (~above & ~pos)).sum(1)
    fp = (w * (above & ~pos)).sum(1)
    tpr = (tp + eps) / (tp + fn + eps)
    if curve == "ROC":
        x, yy = fp / (fp + tn + eps), tpr
    else:
        x, yy = tpr, (tp + eps) / (tp + fp + eps)
    return np.sum((x[:-1] - x[1:]) * (yy[:-1] + yy[1:]) / 2)


@pytest.mark.parametrize("curve", ["ROC", "PR"])
def test_auc_streams_tf1_approximation(curve):
    from sklearn.metrics import average_precision_score, roc_auc_score

    def build():
        l, p, w = _ph(tf.int64), _ph(), _ph()
        value, update = tf.metrics.auc(l, p, weights=w, curve=curve)
        return (l, p, w), value, update

    got, last = _stream(build, lambda: (Y, P, W))
    np.testing.assert_allclose([got, last], [_tf1_auc(Y, P, W, curve=curve)] * 2, rtol=1e-4)
    ref = roc_auc_score(Y, P, sample_weight=W) if curve == "ROC" else \
        average_precision_score(Y, P, sample_weight=W)
    np.testing.assert_allclose(got, ref, atol=0.02)  # 200 thresholds approximate the curve


def test_local_variables_names_collections_and_reset():
    with tf.Graph().as_default():
        l, p = _ph(tf.int64), _ph(tf.int64)
        acc, up = tf.metrics.accuracy(l, p)
        acc2, up2 = tf.metrics.accuracy(l, p, name="val_acc")
        _, _ = tf.metrics.auc(l, tf.cast(p, tf.float32))
        names = [v.name for v in tf.local_variables()]
        assert names[:4] == ["accuracy/total:0", "accuracy/count:0", "val_acc/total:0",
                             "val_acc/count:0"]
        assert [v.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)] == names
        assert tf.global_variables() == [] and tf.trainable_variables() == []
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            s.run(up, {l: [1, 0], p: [1, 1]})
            assert s.run(acc) == 0.5
            s.run(tf.local_variables_initializer())  # resets the stream
            s.run(up, {l: [1], p: [1]})
            assert s.run(acc) == 1.0
        del acc2, up2


def test_keras_metric_lookups_keep_their_meaning():
    import mylib.metrics as M

    assert isinstance(M.get(M.accuracy), M.Accuracy)
    with pytest.raises(ValueError, match="curve"):
        tf.metrics.auc([1], [0.5], curve="XY")
    with pytest.raises(ValueError, match="careful_interpolation"):
        tf.metrics.auc([1], [0.5], summation_method="careful_interpolation")
