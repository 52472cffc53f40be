"""The second batch of Keras losses against numpy formulas, and the reductions."""

import numpy as np
import pytest

import mylib as ml
from mylib import losses

EPS = 1e-7
rng = np.random.RandomState(0)
YT = rng.rand(5, 4).astype(np.float32)
YP = rng.rand(5, 4).astype(np.float32) * 2 - 0.5
LAB = (rng.rand(5, 4) > 0.5).astype(np.float32)
ONEHOT = np.eye(4, dtype=np.float32)[rng.randint(0, 4, 5)]
PROB = rng.dirichlet(np.ones(4), 5).astype(np.float32)
PPOS = (rng.rand(5, 4) + 0.1).astype(np.float32)
SW = np.array([1.0, 0.0, 2.0, 0.5, 1.0], np.float32)


def _eval(fn):
    g = ml.Graph()
    with g.as_default():
        out = fn()
    with ml.Session(graph=g) as s:
        return s.run(out)


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=rtol, atol=atol)


def _huber(t, p, d=1.0):
    e = np.abs(p - t)
    return np.where(e <= d, 0.5 * e ** 2, d * e - 0.5 * d * d).mean(-1)


def _hinge_t(t):
    return 2 * t - 1 if np.all((t == 0) | (t == 1)) else t


def _focal(t, p, gamma=2.0, alpha=0.25, balance=False):
    pc = np.clip(p, EPS, 1 - EPS)
    bce = -(t * np.log(pc) + (1 - t) * np.log(1 - pc))
    pt = t * p + (1 - t) * (1 - p)
    f = (1 - pt) ** gamma * bce
    if balance:
        f = (t * alpha + (1 - t) * (1 - alpha)) * f
    return f.mean(-1)


def _cos(t, p):
    tn = t / np.sqrt(np.maximum((t * t).sum(-1, keepdims=True), 1e-12))
    pn = p / np.sqrt(np.maximum((p * p).sum(-1, keepdims=True), 1e-12))
    return -(tn * pn).sum(-1)


CASES = [
    # (name, function, class, y_true, y_pred, numpy reference, kwargs)
    ("huber", losses.huber, losses.Huber, YT, YP, _huber, {}),
    ("huber_delta", losses.huber, losses.Huber, YT, 3 * YP, lambda t, p: _huber(t, p, 0.3),
     {"delta": 0.3}),
    ("log_cosh", losses.log_cosh, losses.LogCosh, YT, 10 * YP,
     lambda t, p: np.log(np.cosh((p - t).astype(np.float64))).mean(-1), {}),
    ("kld", losses.kl_divergence, losses.KLDivergence, PROB, np.roll(PROB, 1, 0),
     lambda t, p: (np.clip(t, EPS, 1) * np.log(np.clip(t, EPS, 1) / np.clip(p, EPS, 1))).sum(-1),
     {}),
    ("poisson", losses.poisson, losses.Poisson, YT, PPOS,
     lambda t, p: (p - t * np.log(p + EPS)).mean(-1), {}),
    ("cosine", losses.cosine_similarity, losses.CosineSimilarity, YT, YP, _cos, {}),
    ("hinge01", losses.hinge, losses.Hinge, LAB, YP,
     lambda t, p: np.maximum(1 - _hinge_t(t) * p, 0).mean(-1), {}),
    ("hinge_pm", losses.hinge, losses.Hinge, 2 * LAB - 1, YP,
     lambda t, p: np.maximum(1 - t * p, 0).mean(-1), {}),
    ("squared_hinge", losses.squared_hinge, losses.SquaredHinge, LAB, YP,
     lambda t, p: (np.maximum(1 - _hinge_t(t) * p, 0) ** 2).mean(-1), {}),
    ("categorical_hinge", losses.categorical_hinge, losses.CategoricalHinge, ONEHOT, YP,
     lambda t, p: np.maximum(((1 - t) * p).max(-1) - (t * p).sum(-1) + 1, 0), {}),
    ("focal", losses.binary_focal_crossentropy, losses.BinaryFocalCrossentropy, LAB, PROB,
     _focal, {}),
    ("focal_balanced", losses.binary_focal_crossentropy, losses.BinaryFocalCrossentropy, LAB,
     PROB, lambda t, p: _focal(t, p, 3.0, 0.4, True),
     {"apply_class_balancing": True, "alpha": 0.4, "gamma": 3.0}),
    ("focal_logits", losses.binary_focal_crossentropy, losses.BinaryFocalCrossentropy, LAB,
     3 * YP, lambda t, p: _focal(t, 1 / (1 + np.exp(-p))), {"from_logits": True}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_function_and_class_against_numpy(case):
    _, fn, cls, yt, yp, ref, kw = case
    want = ref(yt.astype(np.float64), yp.astype(np.float64))
    _close(_eval(lambda: fn(yt, yp, **kw)), want, rtol=1e-4, atol=1e-5)
    obj = cls(**kw)
    _close(_eval(lambda: obj(yt, yp)), want.mean(), rtol=1e-4, atol=1e-5)
    _close(_eval(lambda: cls(reduction="sum", **kw)(yt, yp, sample_weight=SW)),
           (want * SW).sum(), rtol=1e-4, atol=1e-5)
    _close(_eval(lambda: cls(reduction="mean", **kw)(yt, yp, sample_weight=SW)),
           (want * SW).mean(), rtol=1e-4, atol=1e-5)
    _close(_eval(lambda: cls(reduction=None, **kw)(yt, yp, sample_weight=SW)), want * SW,
           rtol=1e-4, atol=1e-5)
    _close(_eval(lambda: cls(reduction="none", **kw)(yt, yp)), want, rtol=1e-4, atol=1e-5)
    # serialization round trip through get()
    again = losses.get(losses.serialize(obj))
    assert type(again) is cls and again.get_config() == obj.get_config()


def test_reduction_mean_with_sample_weight_and_bad_reduction():
    want = _huber(YT, YP)
    _close(_eval(lambda: losses.Huber(reduction="mean_with_sample_weight")(YT, YP, SW)),
           (want * SW).sum() / SW.sum(), rtol=1e-5)
    with pytest.raises(ValueError, match="reduction"):
        losses.Huber(reduction="avg")


def test_get_by_name():
    for name in ["huber", "log_cosh", "logcosh", "kld", "kl_divergence", "poisson",
                 "cosine_similarity", "hinge", "squared_hinge", "categorical_hinge",
                 "binary_focal_crossentropy"]:
        assert callable(losses.get(name))
    assert isinstance(losses.get("Huber"), losses.Huber)


def test_log_cosh_large_values_finite():
    big = np.array([[100.0, -200.0]], np.float32)
    out = _eval(lambda: losses.log_cosh(np.zeros_like(big), big))
    _close(out, [(100 - np.log(2) + 200 - np.log(2)) / 2], rtol=1e-5)


def test_new_losses_train_in_fit():
    x = rng.rand(64, 3).astype(np.float32)
    y = (x.sum(1, keepdims=True) > 1.5).astype(np.float32)
    for loss in ["huber", losses.BinaryFocalCrossentropy(), "hinge", "log_cosh"]:
        inp = ml.layers.Input(shape=(3,))
        out = ml.layers.Dense(1, activation="sigmoid")(inp)
        m = ml.Model(inp, out)
        m.compile("sgd", loss)
        h = m.fit(x, y, epochs=2, batch_size=16, verbose=0)
        assert np.isfinite(h.history["loss"]).all()
