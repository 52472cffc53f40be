"""`tf.losses.*` (TF1): each loss against numpy of TF1's formula, with weights and every
`Reduction`; the LOSSES collection and the totals."""

import numpy as np
import pytest

import mylib as tf

R = tf.losses.Reduction
RNG = np.random.RandomState(0)
LOGITS = RNG.randn(6, 4).astype(np.float32)
SPARSE = np.array([0, 3, 1, 1, 2, 0])
ONEHOT = np.eye(4, dtype=np.float32)[SPARSE]
PRED = RNG.rand(6, 3).astype(np.float32)
LABEL = (RNG.rand(6, 3) > 0.5).astype(np.float32)
W_BATCH = np.array([1.0, 0.0, 2.0, 0.5, 0.0, 1.0], np.float32)
W_ELEM = (RNG.rand(6, 3) * (RNG.rand(6, 3) > 0.3)).astype(np.float32)


def _reduce(losses, weights, reduction):
    w = np.broadcast_to(np.asarray(weights, np.float64), losses.shape)
    weighted = losses * w
    if reduction == R.NONE:
        return weighted
    total = weighted.sum()
    den = {R.SUM: 1.0, R.MEAN: w.sum(), R.SUM_OVER_BATCH_SIZE: losses.size,
           R.SUM_BY_NONZERO_WEIGHTS: (w != 0).sum()}[reduction]
    return 0.0 if den == 0 else total / den


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _sigmoid_xent(z, x):
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


CASES = {
    "sparse_softmax_cross_entropy": (
        lambda w, r: tf.losses.sparse_softmax_cross_entropy(SPARSE, LOGITS, weights=w,
                                                            reduction=r),
        -_log_softmax(LOGITS.astype(np.float64))[np.arange(6), SPARSE], W_BATCH),
    "softmax_cross_entropy": (
        lambda w, r: tf.losses.softmax_cross_entropy(ONEHOT, LOGITS, weights=w, reduction=r),
        -(ONEHOT * _log_softmax(LOGITS.astype(np.float64))).sum(-1), W_BATCH),
    "softmax_cross_entropy_smoothed": (
        lambda w, r: tf.losses.softmax_cross_entropy(ONEHOT, LOGITS, weights=w,
                                                     label_smoothing=0.2, reduction=r),
        -((ONEHOT * 0.8 + 0.05) * _log_softmax(LOGITS.astype(np.float64))).sum(-1), W_BATCH),
    "sigmoid_cross_entropy": (
        lambda w, r: tf.losses.sigmoid_cross_entropy(LABEL, PRED * 4 - 2, weights=w,
                                                     reduction=r),
        _sigmoid_xent(LABEL, PRED * 4.0 - 2), W_ELEM),
    "sigmoid_cross_entropy_smoothed": (
        lambda w, r: tf.losses.sigmoid_cross_entropy(LABEL, PRED * 4 - 2, weights=w,
                                                     label_smoothing=0.1, reduction=r),
        _sigmoid_xent(LABEL * 0.9 + 0.05, PRED * 4.0 - 2), W_ELEM),
    "mean_squared_error": (
        lambda w, r: tf.losses.mean_squared_error(LABEL, PRED, weights=w, reduction=r),
        (PRED - LABEL).astype(np.float64) ** 2, W_ELEM),
    "absolute_difference": (
        lambda w, r: tf.losses.absolute_difference(LABEL, PRED, weights=w, reduction=r),
        np.abs(PRED - LABEL).astype(np.float64), W_ELEM),
    "huber_loss": (
        lambda w, r: tf.losses.huber_loss(LABEL, PRED * 3, weights=w, delta=0.7, reduction=r),
        np.where(np.abs(PRED * 3.0 - LABEL) <= 0.7, 0.5 * (PRED * 3.0 - LABEL) ** 2,
                 0.7 * (np.abs(PRED * 3.0 - LABEL) - 0.35)), W_ELEM),
    "log_loss": (
        lambda w, r: tf.losses.log_loss(LABEL, PRED, weights=w, reduction=r),
        -LABEL * np.log(PRED + 1e-7) - (1 - LABEL) * np.log(1 - PRED + 1e-7), W_ELEM),
    "hinge_loss": (
        lambda w, r: tf.losses.hinge_loss(LABEL, PRED * 4 - 2, weights=w, reduction=r),
        np.maximum(0, 1 - (2 * LABEL - 1) * (PRED * 4.0 - 2)), W_ELEM),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_matches_tf1_formula_for_every_reduction(name):
    make, per_elem, weights = CASES[name]
    with tf.Graph().as_default():
        fetch = {}
        for r in sorted(set(R.all())):
            fetch[(r, "w")] = make(weights, r)
            fetch[(r, 1)] = make(1.0, r)
        assert len(tf.get_collection(tf.GraphKeys.LOSSES)) == len(fetch)
        with tf.Session() as s:
            got = s.run(fetch)
    for (r, wkind), value in got.items():
        want = _reduce(per_elem, weights if wkind == "w" else 1.0, r)
        np.testing.assert_allclose(value, want, rtol=2e-5, atol=1e-6, err_msg=f"{name} {r}")


def test_default_reduction_is_sum_by_nonzero_weights_and_scalar():
    with tf.Graph().as_default():
        loss = tf.losses.sparse_softmax_cross_entropy(SPARSE, LOGITS, weights=W_BATCH)
        assert loss.shape.as_list() == []
        with tf.Session() as s:
            v = s.run(loss)
    per = -_log_softmax(LOGITS.astype(np.float64))[np.arange(6), SPARSE]
    np.testing.assert_allclose(v, (per * W_BATCH).sum() / 4, rtol=1e-5)


def test_cosine_distance_and_pairwise():
    a = PRED / np.linalg.norm(PRED, axis=1, keepdims=True)
    b = LABEL + 0.1
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    with tf.Graph().as_default():
        cd = tf.losses.cosine_distance(b, a, axis=1)
        mp = tf.losses.mean_pairwise_squared_error(LABEL, PRED)
        with tf.Session() as s:
            cdv, mpv = s.run([cd, mp])
    np.testing.assert_allclose(cdv, (1 - (a * b).sum(1)).mean(), rtol=1e-5)
    d = (PRED - LABEL).astype(np.float64)
    pair = [np.mean([(d[n, i] - d[n, j]) ** 2 for i in range(3) for j in range(3) if i != j])
            for n in range(6)]
    np.testing.assert_allclose(mpv, np.mean(pair), rtol=1e-5)
    with pytest.raises(ValueError, match="axis"):
        tf.losses.cosine_distance(b, a)


def test_collections_total_loss_and_regularization():
    with tf.Graph().as_default():
        with tf.variable_scope("m", regularizer=tf.contrib.layers.l2_regularizer(0.5)):
            w = tf.get_variable("w", initializer=np.array([1.0, 2.0], np.float32))
        a = tf.losses.mean_squared_error([1.0, 1.0], w)
        b = tf.losses.absolute_difference([0.0, 0.0], w, loss_collection=None)
        tf.losses.add_loss(tf.constant(3.0))
        assert len(tf.losses.get_losses()) == 2 and b not in tf.losses.get_losses()
        total = tf.losses.get_total_loss()
        no_reg = tf.losses.get_total_loss(add_regularization_losses=False)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            tv, nv, rv = s.run([total, no_reg, tf.losses.get_regularization_loss()])
    np.testing.assert_allclose(nv, 0.5 + 3.0)
    np.testing.assert_allclose(rv, 0.5 * 5 / 2)
    np.testing.assert_allclose(tv, 0.5 + 3.0 + 1.25)
    del a
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="No losses"):
            tf.losses.get_total_loss()
        with tf.Session() as s:
            assert s.run(tf.losses.get_regularization_loss()) == 0.0


def test_bad_weights_and_reduction_raise():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="weights can not be broadcast"):
            tf.losses.mean_squared_error(LABEL, PRED, weights=np.ones((6, 2)))
        with pytest.raises(ValueError, match="Invalid Reduction"):
            tf.losses.mean_squared_error(LABEL, PRED, reduction="avg")
        with pytest.raises(ValueError, match="incompatible"):
            tf.losses.mean_squared_error(LABEL, PRED[:, :2])


def test_keras_losses_keep_their_meaning():
    import mylib.losses as L

    assert L.get(L.mean_squared_error) is L.mse
    assert L.get("mean_squared_error") is L.mse
    with tf.Graph().as_default():
        per = L.mse(LABEL, PRED)
        cls = L.MeanSquaredError()(LABEL, PRED)
        with tf.Session() as s:
            pv, cv = s.run([per, cls])
    np.testing.assert_allclose(pv, ((PRED - LABEL) ** 2).mean(-1), rtol=1e-5)
    np.testing.assert_allclose(cv, ((PRED - LABEL) ** 2).mean(), rtol=1e-5)
