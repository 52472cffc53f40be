"""Losses against independent numpy formulas (Keras semantics)."""

import numpy as np
import pytest

import mylib as ml
from mylib import losses

EPS = 1e-7


def _eval(fn):
    g = ml.Graph()
    with g.as_default():
        out = fn()
    with ml.Session(graph=g) as s:
        return s.run(out)


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=rtol, atol=atol)


YT = np.array([[0.0, 1.0], [1.0, 1.0], [0.5, 0.0]], np.float32)
YP = np.array([[0.2, 0.9], [0.7, 0.4], [0.5, 0.1]], np.float32)


def test_mse_mae_per_sample():
    _close(_eval(lambda: losses.mse(YT, YP)), ((YT - YP) ** 2).mean(-1))
    _close(_eval(lambda: losses.mean_absolute_error(YT, YP)), np.abs(YT - YP).mean(-1))
    # exact hand-worked values: row 0 -> (0.04 + 0.01) / 2
    _close(_eval(lambda: losses.mse(YT, YP))[0], 0.025)


def test_n_vs_n1_align_instead_of_broadcast():
    yt = np.array([1.0, 2.0, 3.0], np.float32)
    yp = np.array([[1.5], [2.0], [2.0]], np.float32)
    out = _eval(lambda: losses.mse(yt, yp))
    assert out.shape == (3,)
    _close(out, [0.25, 0.0, 1.0])
    out = _eval(lambda: losses.mse(yp, yt))  # and the other way round
    _close(out, [0.25, 0.0, 1.0])
    # scalar reduction: mean 0.41666, not the [3, 3] broadcast mean
    _close(_eval(lambda: losses.MeanSquaredError()(yt, yp)), 1.25 / 3)
    # binary crossentropy with [N] targets and [N, 1] sigmoid outputs
    bt = np.array([1.0, 0.0], np.float32)
    bp = np.array([[0.8], [0.3]], np.float32)
    _close(_eval(lambda: losses.binary_crossentropy(bt, bp)), [-np.log(0.8), -np.log(0.7)])


def test_binary_crossentropy_probs_and_logits():
    ref = -(YT * np.log(np.clip(YP, EPS, 1 - EPS))
            + (1 - YT) * np.log(1 - np.clip(YP, EPS, 1 - EPS))).mean(-1)
    _close(_eval(lambda: losses.binary_crossentropy(YT, YP)), ref)
    logits = np.array([[-50.0, 3.0], [100.0, -2.0], [0.0, 0.5]], np.float32)
    x = logits.astype(np.float64)
    ref = (np.maximum(x, 0) - x * YT + np.log1p(np.exp(-np.abs(x)))).mean(-1)
    out = _eval(lambda: losses.binary_crossentropy(YT, logits, from_logits=True))
    assert np.all(np.isfinite(out))
    _close(out, ref)
    # clipping: p = 0 with target 1 gives -log(1e-7), not inf
    _close(_eval(lambda: losses.binary_crossentropy([[1.0]], [[0.0]])), [-np.log(EPS)],
           rtol=1e-4)


def test_categorical_crossentropy():
    yt = np.array([[0, 1, 0], [1, 0, 0]], np.float32)
    yp = np.array([[0.1, 0.6, 0.3], [0.2, 0.2, 0.4]], np.float32)  # row 2 sums to 0.8
    p = yp / yp.sum(-1, keepdims=True)
    _close(_eval(lambda: losses.categorical_crossentropy(yt, yp)),
           -(yt * np.log(p)).sum(-1))
    _close(_eval(lambda: losses.categorical_crossentropy(yt, yp))[0], -np.log(0.6))
    logits = np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0]], np.float32)
    lse = np.log(np.exp(logits[0] - 3).sum()) + 3
    out = _eval(lambda: losses.categorical_crossentropy(yt, logits, from_logits=True))
    _close(out, [lse - 2.0, 0.0])
    s = 0.3
    yts = yt * (1 - s) + s / 3
    _close(_eval(lambda: losses.categorical_crossentropy(yt, yp, label_smoothing=s)),
           -(yts * np.log(p)).sum(-1))


@pytest.mark.parametrize("labels", [np.array([1, 0, 2]), np.array([[1], [0], [2]]),
                                    np.array([1.0, 0.0, 2.0], np.float32),
                                    np.array([[1.0], [0.0], [2.0]], np.float32)])
def test_sparse_categorical_crossentropy_label_forms(labels):
    yp = np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25], [0.0, 0.0, 1.0]], np.float32)
    ref = [-np.log(0.6), -np.log(0.5), -np.log(1 - EPS)]
    out = _eval(lambda: losses.sparse_categorical_crossentropy(labels, yp))
    assert out.shape == (3,)
    _close(out, ref, atol=1e-6)
    logits = np.log(np.array([[1, 6, 3], [5, 2.5, 2.5], [1, 1, 8]], np.float32))
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    out = _eval(lambda: losses.sparse_categorical_crossentropy(labels, logits,
                                                               from_logits=True))
    _close(out, -np.log(p[np.arange(3), [1, 0, 2]]))
    out = _eval(lambda: losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits))
    _close(out, -np.log(p[np.arange(3), [1, 0, 2]]).mean())


def test_sparse_probability_clipped_at_zero():
    out = _eval(lambda: losses.sparse_categorical_crossentropy([0], [[0.0, 1.0]]))
    _close(out, [-np.log(EPS)], rtol=1e-4)


def test_sample_weight_and_reductions():
    yt = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    yp = np.array([[1.0], [3.0], [5.0], [4.0]], np.float32)  # per-sample 0, 1, 4, 0
    w = np.array([1.0, 2.0, 0.5, 3.0], np.float32)
    # sum_over_batch_size: sum(w * l) / 4 = (0 + 2 + 2 + 0) / 4
    _close(_eval(lambda: losses.MeanSquaredError()(yt, yp, sample_weight=w)), 1.0)
    _close(_eval(lambda: losses.MeanSquaredError()(yt, yp, sample_weight=w[:, None])), 1.0)
    _close(_eval(lambda: losses.MeanSquaredError(reduction="sum")(yt, yp, sample_weight=w)),
           4.0)
    _close(_eval(lambda: losses.MeanSquaredError(reduction="none")(yt, yp, sample_weight=w)),
           [0.0, 2.0, 2.0, 0.0])
    _close(_eval(lambda: losses.MeanAbsoluteError()(yt, yp)), 3.0 / 4)
    with pytest.raises(ValueError, match="reduction"):
        losses.MeanSquaredError(reduction="mean_of_stuff")


def test_loss_gradient_flows():
    g = ml.Graph()
    with g.as_default():
        logits = ml.Variable(np.array([[1.0, 2.0, 0.5]], np.float32))
        loss = losses.SparseCategoricalCrossentropy(from_logits=True)([1], logits)
        grad = ml.gradients(loss, logits)[0]
        init = ml.global_variables_initializer()
    with ml.Session(graph=g) as s:
        s.run(init)
        gv = s.run(grad)
    e = np.exp([1.0, 2.0, 0.5])
    _close(gv, [e / e.sum() - [0, 1, 0]])


def test_get_and_config():
    assert losses.get("mse") is losses.mse
    assert losses.get(losses.mean_squared_error) is losses.mse  # TF1's -> Keras's
    assert losses.get("MAE") is losses.mean_absolute_error
    assert losses.get("sparse_categorical_crossentropy") is \
        losses.sparse_categorical_crossentropy
    assert isinstance(losses.get("BinaryCrossentropy"), losses.BinaryCrossentropy)
    fn = lambda a, b: a  # noqa: E731
    assert losses.get(fn) is fn
    cce = losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)
    cfg = cce.get_config()
    assert cfg["from_logits"] is True and cfg["label_smoothing"] == 0.1
    back = losses.get(losses.serialize(cce))
    assert isinstance(back, losses.CategoricalCrossentropy) and back.get_config() == cfg
    assert losses.MeanSquaredError().get_config() == {"name": "mean_squared_error",
                                                      "reduction": "sum_over_batch_size"}
    with pytest.raises(ValueError, match="Unknown loss"):
        losses.get("hinge_of_doom")
