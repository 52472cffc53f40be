"""TensorFlow 1 streaming metrics over classes: `mean_iou`, `mean_per_class_accuracy`,
`precision_at_k`, `recall_at_k`, streamed over two batches fed through placeholders of
unknown batch size, against numpy references written from their definitions."""

import numpy as np
import pytest

import mylib as tf

RNG = np.random.default_rng(7)


def _stream(value, update, feeds_list):
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        ups = [s.run(update, f) for f in feeds_list]
        return s.run(value), ups


def test_mean_iou_and_per_class_accuracy():
    lab = tf.placeholder(tf.int32, [None])
    pred = tf.placeholder(tf.int32, [None])
    w = tf.placeholder(tf.float32, [None])
    n = 4
    batches = [(RNG.integers(0, 3, 9), RNG.integers(0, 3, 9), RNG.uniform(0, 2, 9))
               for _ in range(2)]
    iou, iou_up = tf.metrics.mean_iou(lab, pred, n, weights=w)
    acc, acc_up = tf.metrics.mean_per_class_accuracy(lab, pred, n, weights=w)
    feeds = [{lab: a, pred: b, w: c} for a, b, c in batches]
    v_iou, ups = _stream(iou, iou_up, feeds)
    la, pa, wa = (np.concatenate(x) for x in zip(*batches))
    cm = np.zeros((n, n))
    np.add.at(cm, (la, pa), wa)
    np.testing.assert_allclose(ups[-1], cm, rtol=1e-6)       # TF's update_op: the matrix
    den = cm.sum(0) + cm.sum(1) - np.diag(cm)
    ok = den > 0                                              # class 3 never occurs
    assert not ok[3]
    np.testing.assert_allclose(v_iou, (np.diag(cm)[ok] / den[ok]).mean(), rtol=1e-5)
    v_acc, ups = _stream(acc, acc_up, feeds)
    tot = np.bincount(la, wa, n)
    cnt = np.bincount(la, wa * (la == pa), n)
    per = np.divide(cnt, tot, out=np.zeros(n), where=tot > 0)
    np.testing.assert_allclose(ups[-1], per, rtol=1e-5)
    np.testing.assert_allclose(v_acc, per.mean(), rtol=1e-5)


def _at_k_ref(labels, scores, k, class_id=None, weights=None):
    tp = fp = fn = 0.0
    for i in range(len(scores)):
        top = list(np.argsort(-scores[i], kind="stable")[:k])
        labs = set(labels[i].tolist())
        wi = 1.0 if weights is None else weights[i]
        if class_id is None:
            t = len(set(top) & labs)
            tp += wi * t
            fp += wi * (k - t)
            fn += wi * len(labs - set(top))
        else:
            tp += wi * (class_id in top and class_id in labs)
            fp += wi * (class_id in top and class_id not in labs)
            fn += wi * (class_id in labs and class_id not in top)
    return tp / (tp + fp), tp / (tp + fn)


@pytest.mark.parametrize("class_id", [None, 2])
def test_precision_recall_at_k(class_id):
    c = 6
    scores = tf.placeholder(tf.float32, [None, c])
    labels = tf.placeholder(tf.int64, [None, 3])
    w = tf.placeholder(tf.float32, [None])
    batches = []
    for _ in range(2):
        s = RNG.normal(size=(7, c)).astype(np.float32)
        lab = RNG.integers(0, c, (7, 3))
        lab[0, 2] = lab[0, 1]                    # a repeated label counts once
        lab[1, 2] = -1                           # padding: never a match
        batches.append((s, lab, RNG.uniform(0.5, 2.0, 7).astype(np.float32)))
    p, p_up = tf.metrics.precision_at_k(labels, scores, 3, class_id=class_id, weights=w)
    r, r_up = tf.metrics.recall_at_k(labels, scores, 3, class_id=class_id, weights=w)
    feeds = [{scores: a, labels: b, w: cw} for a, b, cw in batches]
    pv, pups = _stream(p, p_up, feeds)
    rv, rups = _stream(r, r_up, feeds)
    s_all, l_all, w_all = (np.concatenate(x) for x in zip(*batches))
    pref, rref = _at_k_ref(l_all, s_all, 3, class_id, w_all)
    assert pv.dtype == np.float64
    np.testing.assert_allclose(pv, pref, rtol=1e-6)
    np.testing.assert_allclose(rv, rref, rtol=1e-6)
    np.testing.assert_allclose(pups[0], _at_k_ref(*batches[0][1::-1], 3, class_id,
                                                  batches[0][2])[0], rtol=1e-6)


def test_at_k_sparse_single_label_and_nan_before_data():
    scores = tf.constant([[0.1, 0.5, 0.4], [0.8, 0.15, 0.05]])
    p, p_up = tf.metrics.precision_at_k(tf.constant([1, 2], tf.int64), scores, 1)
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        assert np.isnan(s.run(p))
        assert s.run(p_up) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="k must be"):
        tf.metrics.recall_at_k(tf.constant([1], tf.int64), scores, 0)
    with pytest.raises(ValueError, match="num_classes"):
        tf.metrics.mean_iou(tf.constant([1]), tf.constant([1]), None)
