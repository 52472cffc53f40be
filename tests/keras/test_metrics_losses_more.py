"""Keras 3's remaining metrics and losses against Keras 3 itself (JAX backend): the
probabilistic, hinge, correlation, regression, IoU and rate-at-constraint metrics, the
metric functions of `keras.metrics`, and the focal / Dice / Tversky / Circle /
generalized cross-entropy / CTC losses. Same inputs on both sides, sample weights
included; metrics see three `update_state` calls before `result`.

For speed every mylib metric (and every loss) of the tables is built in one graph and
run by one Session (three compiled plans in all); each case is still its own test."""

import warnings

import keras
import numpy as np
import pytest

import mylib as ml
import mylib.keras as mk
from mylib import losses as mlosses
from mylib import metrics as mmetrics

from keras_compare import _close  # noqa: E402



@pytest.fixture(autouse=True)
def fresh_graph():
    """Overrides the directory's fixture: the eager cases use metrics and losses with no
    graph open (Keras 3's style); the others build graphs of their own."""
    yield None


RS = np.random.RandomState(7)
N, C = 24, 4
THIRDS = [slice(0, 8), slice(8, 16), slice(16, 24)]

ONEHOT = np.eye(C, dtype=np.float32)[RS.randint(0, C, N)]
PROBS = np.clip(ONEHOT * 0.3 + RS.dirichlet(np.ones(C), N), 0, 1).astype(np.float32)
LOGITS = RS.randn(N, C).astype(np.float32)
SPARSE = ONEHOT.argmax(-1).astype(np.int32)
SPARSE_IGN = np.where(RS.rand(N) < 0.25, -1, SPARSE).astype(np.int32)
BT = (RS.rand(N, 3) > 0.5).astype(np.float32)
BP = np.clip(BT * 0.25 + RS.rand(N, 3) * 0.75, 0, 1).astype(np.float32)
RT = RS.randn(N, 3).astype(np.float32)
RP = (RT + 0.7 * RS.randn(N, 3)).astype(np.float32)
RT3 = RS.randn(N, 3, 2).astype(np.float32)
RP3 = (RT3 + RS.randn(N, 3, 2)).astype(np.float32)
POS = RS.uniform(0.1, 3.0, (N, 3)).astype(np.float32)
CLIP_T = np.tile(np.array([1, 1, 1, 0, 0, 0], np.float32), 4)[:, None]
CLIP_P = np.tile(np.array([2.0, 0.9, 0.8, 0.95, 0.3, -0.5], np.float32), 4)[:, None]
SW = RS.uniform(0.0, 2.0, N).astype(np.float32)
SW_INT = RS.randint(0, 4, N).astype(np.float32)
IDS_T = RS.randint(0, C, N).astype(np.int32)
IDS_P = np.where(RS.rand(N) < 0.5, IDS_T, RS.randint(0, C, N)).astype(np.int32)

# (class name, constructor kwargs, y_true, y_pred, keras-only kwargs)
F32 = dict(dtype="float32")  # Keras's IoU state is int32 by default (module note)
METRIC_CASES = [
    ("BinaryCrossentropy", {}, BT, BP, {}),
    ("BinaryCrossentropy", dict(from_logits=True, label_smoothing=0.1), BT, RT, {}),
    ("CategoricalCrossentropy", {}, ONEHOT, PROBS, {}),
    ("CategoricalCrossentropy", dict(from_logits=True, label_smoothing=0.2), ONEHOT, LOGITS,
     {}),
    ("SparseCategoricalCrossentropy", {}, SPARSE, PROBS, {}),
    ("SparseCategoricalCrossentropy", dict(from_logits=True), SPARSE[:, None], LOGITS, {}),
    ("SparseCategoricalCrossentropy", dict(ignore_class=-1), SPARSE_IGN, PROBS, {}),
    ("KLDivergence", {}, ONEHOT, PROBS, {}),
    ("Poisson", {}, POS, RP ** 2, {}),
    ("LogCoshError", {}, RT, RP, {}),
    ("Hinge", {}, BT, RT, {}),
    ("SquaredHinge", {}, BT * 2 - 1, RT, {}),
    ("CategoricalHinge", {}, ONEHOT, PROBS, {}),
    ("CosineSimilarity", {}, RT, RP, {}),
    ("CosineSimilarity", dict(axis=1), RT3, RP3, {}),
    ("R2Score", {}, RT, RP, {}),
    ("R2Score", dict(class_aggregation=None), RT, RP, {}),
    ("R2Score", dict(class_aggregation="variance_weighted_average"), RT, RP, {}),
    ("R2Score", dict(num_regressors=3), RT, RP, {}),
    ("R2Score", {}, RT[:, :1], RP[:, 0], {}),
    ("PearsonCorrelation", {}, RT, RP, {}),
    ("ConcordanceCorrelation", {}, RT, RP, {}),
    ("IoU", dict(num_classes=C, target_class_ids=[0, 2]), IDS_T, IDS_P, F32),
    ("IoU", dict(num_classes=C, target_class_ids=[1, 3], ignore_class=1), IDS_T, IDS_P, F32),
    ("IoU", dict(num_classes=C, target_class_ids=[0, 1, 2], sparse_y_pred=False), IDS_T,
     PROBS, F32),
    ("MeanIoU", dict(num_classes=C), IDS_T, IDS_P, F32),
    ("BinaryIoU", {}, BT[:, 0], BP[:, 0], F32),
    ("BinaryIoU", dict(target_class_ids=[1], threshold=0.3), BT[:, 0], BP[:, 0], F32),
    ("OneHotIoU", dict(num_classes=C, target_class_ids=[1, 3]), ONEHOT, PROBS, F32),
    ("OneHotMeanIoU", dict(num_classes=C), ONEHOT, PROBS, F32),
    ("OneHotMeanIoU", dict(num_classes=C, sparse_y_pred=True), ONEHOT, IDS_P, F32),
    ("PrecisionAtRecall", dict(recall=0.7), BT, BP, {}),
    ("PrecisionAtRecall", dict(recall=0.4, num_thresholds=7, class_id=1), BT, BP, {}),
    ("RecallAtPrecision", dict(precision=0.8), BT, BP, {}),
    ("RecallAtPrecision", dict(precision=0.6, num_thresholds=1), BT, BP, {}),
    ("SensitivityAtSpecificity", dict(specificity=0.7), BT, BP, {}),
    ("SensitivityAtSpecificity", dict(specificity=0.5, class_id=2), ONEHOT, PROBS, {}),
    ("SpecificityAtSensitivity", dict(sensitivity=0.8), BT, BP, {}),
    ("SpecificityAtSensitivity", dict(sensitivity=0.6, num_thresholds=25), BT, BP, {}),
    # Scores outside [0, 1] are clipped first (the thresholds are an even grid).
    # (unclipped, the score 2.0 alone would pass the threshold 1.0 with precision 1).
    ("PrecisionAtRecall", dict(recall=0.2, num_thresholds=5), CLIP_T, CLIP_P, {}),
]
METRIC_IDS = [f"{c[0]}-{i}" for i, c in enumerate(METRIC_CASES)]


def _thirds(yt, yp, sw):
    return [(yt[s], yp[s], None if sw is None else sw[s]) for s in THIRDS]


def _weights_for(name, yt, weighted):
    if not weighted:
        return None
    return SW if yt.ndim <= 2 or name != "BinaryIoU" else SW[:, None] * np.ones_like(yt)


def _keras_metric(name, kw, kw_keras, batches):
    m = getattr(keras.metrics, name)(**kw, **kw_keras)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t, p, w in batches:
            m.update_state(t, p, sample_weight=w)
        return np.asarray(m.result())


def _feeds(g, arrays):
    with g.as_default():
        return [None if a is None else ml.placeholder(ml.as_dtype(a.dtype), a.shape)
                for a in arrays]


@pytest.fixture(scope="module")
def mylib_metric_results():
    """{(case index, weighted): result array or the exception} from one graph."""
    g = ml.Graph()
    built, out = [], {}
    for i, (name, kw, yt, yp, _) in enumerate(METRIC_CASES):
        for weighted in (False, True):
            batches = _thirds(yt, yp, _weights_for(name, yt, weighted))
            try:
                phs = [_feeds(g, b) for b in batches]
                with g.as_default():
                    m = getattr(mmetrics, name)(**kw)
                    ups = [m.update_state(*p[:2], sample_weight=p[2]) for p in phs]
                    built.append(((i, weighted), m.reset_state(), ups, m.result(),
                                  [dict((k, v) for k, v in zip(p, b) if k is not None)
                                   for p, b in zip(phs, batches)]))
            except Exception as e:  # reported by the case's own test
                out[(i, weighted)] = e
    with ml.Session(graph=g) as s:
        s.run([b[1] for b in built])
        for step in range(3):
            feed = {}
            for b in built:
                feed.update(b[4][step])
            s.run([b[2][step] for b in built], feed_dict=feed)
        values = s.run([b[3] for b in built])
    out.update({b[0]: v for b, v in zip(built, values)})
    return out


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("case", range(len(METRIC_CASES)), ids=METRIC_IDS)
def test_metric_matches_keras(mylib_metric_results, case, weighted):
    name, kw, yt, yp, kw_keras = METRIC_CASES[case]
    got = mylib_metric_results[(case, weighted)]
    if isinstance(got, Exception):
        raise got
    want = _keras_metric(name, kw, kw_keras, _thirds(yt, yp, _weights_for(name, yt, weighted)))
    _close(got, want, 2e-5, 2e-6)


def test_iou_default_dtype_with_integer_weights():
    # Keras's default int32 matrix and mylib's float32 one agree on integer weights.
    for name, kw, yt, yp in (("MeanIoU", dict(num_classes=C), IDS_T, IDS_P),
                             ("OneHotIoU", dict(num_classes=C, target_class_ids=[0, 3]),
                              ONEHOT, PROBS)):
        batches = _thirds(yt, yp, SW_INT)
        m = getattr(mk.metrics, name)(**kw)
        for t, p, w in batches:
            m.update_state(t, p, sample_weight=w)
        _close(m.result(), _keras_metric(name, kw, {}, batches), 1e-6, 1e-7)


def test_eager_metrics_build_state_from_first_batch():
    # R2Score's state shape and the *At* counts come from the first update's arrays.
    for name, kw, yt, yp in (("R2Score", dict(class_aggregation=None), RT, RP),
                             ("PrecisionAtRecall", dict(recall=0.6), BT, BP)):
        batches = _thirds(yt, yp, SW)
        m = getattr(mk.metrics, name)(**kw)
        for t, p, w in batches:
            m.update_state(t, p, sample_weight=w)
        _close(m.result(), _keras_metric(name, kw, {}, batches), 1e-5, 1e-6)
        m.reset_state()
        m.update_state(*batches[0][:2], sample_weight=batches[0][2])
        _close(m.result(), _keras_metric(name, kw, {}, batches[:1]), 1e-5, 1e-6)


def test_r2_score_before_update_says_why():
    with pytest.raises(ValueError, match="update_state first"):
        mk.metrics.R2Score().result()
    with pytest.raises(ValueError, match="2D inputs"):
        mk.metrics.R2Score().update_state(RT[:, :, None], RP[:, :, None])


# ------------------------------------------------------------ functions and losses
FUNCTION_CASES = [
    ("binary_crossentropy", {}, BT, BP),
    ("binary_crossentropy", dict(from_logits=True, label_smoothing=0.1), BT, RT),
    ("categorical_crossentropy", dict(label_smoothing=0.1), ONEHOT, PROBS),
    ("sparse_categorical_crossentropy", dict(from_logits=True), SPARSE, LOGITS),
    ("binary_focal_crossentropy", dict(apply_class_balancing=True, gamma=1.5), BT, BP),
    ("categorical_focal_crossentropy", dict(alpha=0.3, gamma=1.0), ONEHOT, PROBS),
    ("kl_divergence", {}, ONEHOT, PROBS),
    ("poisson", {}, POS, RP ** 2),
    ("hinge", {}, BT, RT),
    ("squared_hinge", {}, BT, RT),
    ("categorical_hinge", {}, ONEHOT, PROBS),
    ("huber", dict(delta=0.5), RT, RP),
    ("log_cosh", {}, RT, RP),
    ("mean_absolute_percentage_error", {}, POS, RP),
    ("mean_squared_logarithmic_error", {}, POS, RP ** 2),
    ("pearson_correlation", {}, RT, RP),
    ("pearson_correlation", dict(axis=0), RT, RP),
    ("concordance_correlation", {}, RT, RP),
]

SEG_T = (RS.rand(6, 5, 5, 1) > 0.5).astype(np.float32)
SEG_P = RS.rand(6, 5, 5, 1).astype(np.float32)
SEG_SW = RS.uniform(0, 2, 6).astype(np.float32)
EMB = RS.randn(10, 5).astype(np.float32)
EMB /= np.linalg.norm(EMB, axis=1, keepdims=True)
EMB_LAB = RS.randint(0, 3, 10).astype(np.int32)
EMB_SW = RS.uniform(0, 2, 10).astype(np.float32)
CTC_T = np.array([[1, 2, 2, 0], [3, 1, 0, 0], [2, 0, 0, 0]], np.int32)
CTC_P = RS.randn(3, 7, 5).astype(np.float32)
CTC_SW = np.array([1.0, 0.5, 2.0], np.float32)

# (class name, kwargs, y_true, y_pred, sample_weight)
LOSS_CASES = [
    ("CategoricalFocalCrossentropy", {}, ONEHOT, PROBS, SW),
    ("CategoricalFocalCrossentropy", dict(alpha=0.4, gamma=1.5, from_logits=True,
                                          label_smoothing=0.1, reduction="sum"),
     ONEHOT, LOGITS, SW),
    ("CategoricalFocalCrossentropy", dict(reduction="none"), ONEHOT, PROBS, None),
    ("Dice", {}, SEG_T, SEG_P, None),
    ("Dice", dict(axis=(1, 2, 3)), SEG_T, SEG_P, SEG_SW),
    ("Tversky", dict(alpha=0.3, beta=0.7), SEG_T, SEG_P, None),
    ("Tversky", dict(alpha=0.8, beta=0.2, axis=(1, 2), reduction="none"), SEG_T, SEG_P, None),
    ("Circle", {}, EMB_LAB, EMB, None),
    ("Circle", dict(gamma=10.0, margin=0.25), EMB_LAB, EMB, EMB_SW),
    ("Circle", dict(remove_diagonal=False, reduction="none"), EMB_LAB, EMB, None),
    # Labels 3 and 4 have no positive pair: loss 0, left out of the mean (Keras's mask).
    ("Circle", {}, np.array([0, 0, 1, 1, 2, 2, 2, 3, 4, 0], np.int32), EMB, EMB_SW),
    ("CategoricalGeneralizedCrossEntropy", {}, SPARSE, PROBS, SW),
    ("CategoricalGeneralizedCrossEntropy", dict(q=0.2), SPARSE[:, None].astype(np.float32),
     PROBS, None),
    ("CTC", {}, CTC_T, CTC_P, None),
    ("CTC", dict(reduction="none"), CTC_T, CTC_P, None),
    ("CTC", dict(reduction="sum"), CTC_T, CTC_P, CTC_SW),
]


@pytest.fixture(scope="module")
def mylib_loss_results():
    """{("fn"|"loss", index): value or exception}, all built in one graph."""
    g = ml.Graph()
    built, out = [], {}
    cases = [("fn", i, c) for i, c in enumerate(FUNCTION_CASES)] + \
        [("loss", i, c) for i, c in enumerate(LOSS_CASES)]
    for kind, i, case in cases:
        try:
            if kind == "fn":
                name, kw, yt, yp = case
                arrays = [yt, yp]
                phs = _feeds(g, arrays)
                with g.as_default():
                    t = getattr(mk.metrics, name)(*phs, **kw)
            else:
                name, kw, yt, yp, sw = case
                arrays = [yt, yp, sw]
                phs = _feeds(g, arrays)
                with g.as_default():
                    t = getattr(mk.losses, name)(**kw)(*phs)
            built.append(((kind, i), t, {p: a for p, a in zip(phs, arrays) if p is not None}))
        except Exception as e:
            out[(kind, i)] = e
    feed = {}
    for b in built:
        feed.update(b[2])
    with ml.Session(graph=g) as s:
        values = s.run([b[1] for b in built], feed_dict=feed)
    out.update({b[0]: v for b, v in zip(built, values)})
    return out


@pytest.mark.parametrize("case", range(len(FUNCTION_CASES)),
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(FUNCTION_CASES)])
def test_metric_function_matches_keras(mylib_loss_results, case):
    name, kw, yt, yp = FUNCTION_CASES[case]
    got = mylib_loss_results[("fn", case)]
    if isinstance(got, Exception):
        raise got
    _close(got, np.asarray(getattr(keras.metrics, name)(yt, yp, **kw)), 2e-5, 2e-6)


@pytest.mark.parametrize("case", range(len(LOSS_CASES)),
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(LOSS_CASES)])
def test_loss_matches_keras(mylib_loss_results, case):
    name, kw, yt, yp, sw = LOSS_CASES[case]
    got = mylib_loss_results[("loss", case)]
    if isinstance(got, Exception):
        raise got
    want = getattr(keras.losses, name)(**kw)(yt, yp, sample_weight=sw)
    _close(got, np.asarray(want), 2e-5, 2e-6)


def test_loss_functions_on_arrays_and_keras_function_names():
    # The functions are Keras's names in both namespaces, and the very loss functions.
    for name in ("categorical_focal_crossentropy", "dice", "tversky", "circle",
                 "categorical_generalized_cross_entropy", "ctc"):
        assert getattr(mk.losses, name) is getattr(mlosses, name)
    for name in ("binary_crossentropy", "hinge", "kl_divergence", "log_cosh", "huber",
                 "categorical_focal_crossentropy"):
        assert getattr(mk.metrics, name) is getattr(mlosses, name)
    # Eager class call on arrays: a JAX array, as Keras 3.
    got = mk.losses.Dice(axis=-1)(SEG_T[..., 0], SEG_P[..., 0])
    _close(got, np.asarray(keras.losses.Dice(axis=-1)(SEG_T[..., 0], SEG_P[..., 0])),
           1e-6, 1e-7)


# ------------------------------------------------------------ configs and names
CONFIG_CASES = [
    ("metrics", "BinaryCrossentropy", dict(from_logits=True, label_smoothing=0.1)),
    ("metrics", "CategoricalCrossentropy", dict(axis=-1, label_smoothing=0.2)),
    ("metrics", "SparseCategoricalCrossentropy", dict(ignore_class=3)),
    ("metrics", "KLDivergence", {}), ("metrics", "Poisson", {}),
    ("metrics", "LogCoshError", {}), ("metrics", "Hinge", {}),
    ("metrics", "SquaredHinge", {}), ("metrics", "CategoricalHinge", {}),
    ("metrics", "CosineSimilarity", dict(axis=1)),
    ("metrics", "R2Score", dict(class_aggregation=None, num_regressors=2)),
    ("metrics", "PearsonCorrelation", dict(axis=0)),
    ("metrics", "ConcordanceCorrelation", {}),
    ("metrics", "IoU", dict(num_classes=3, target_class_ids=[0, 2], ignore_class=1,
                            dtype="float32")),
    ("metrics", "BinaryIoU", dict(target_class_ids=[1], threshold=0.3, dtype="float32")),
    ("metrics", "MeanIoU", dict(num_classes=3, dtype="float32")),
    ("metrics", "OneHotIoU", dict(num_classes=3, target_class_ids=[1], dtype="float32")),
    ("metrics", "OneHotMeanIoU", dict(num_classes=3, sparse_y_pred=True, dtype="float32")),
    ("metrics", "PrecisionAtRecall", dict(recall=0.3, num_thresholds=50, class_id=1)),
    ("metrics", "RecallAtPrecision", dict(precision=0.9)),
    ("metrics", "SensitivityAtSpecificity", dict(specificity=0.4)),
    ("metrics", "SpecificityAtSensitivity", dict(sensitivity=0.4, num_thresholds=1)),
    ("losses", "CategoricalFocalCrossentropy", dict(alpha=0.5, gamma=3.0, axis=-1)),
    ("losses", "Dice", dict(axis=(1, 2), reduction="sum")),
    ("losses", "Tversky", dict(alpha=0.2, beta=0.8)),
    ("losses", "Circle", dict(gamma=30.0, margin=0.2, remove_diagonal=False)),
    ("losses", "CategoricalGeneralizedCrossEntropy", dict(q=0.3)),
    ("losses", "CTC", dict(reduction="none")),
]


@pytest.mark.parametrize("module,name,kw", CONFIG_CASES, ids=[c[1] for c in CONFIG_CASES])
def test_config_as_keras_and_round_trip(module, name, kw):
    kw = dict(kw, name="the_name")
    want = getattr(getattr(keras, module), name)(**kw).get_config()
    ours = getattr(getattr(mk, module), name)(**kw)
    got = ours.get_config()
    assert got == want
    again = type(ours).from_config(got)
    assert type(again) is type(ours) and again.get_config() == got


def test_default_names_as_keras():
    for name, args in (("IoU", (3, [0])), ("BinaryIoU", ()), ("OneHotMeanIoU", (3,)),
                       ("R2Score", ()), ("LogCoshError", ()), ("PrecisionAtRecall", (0.5,)),
                       ("SpecificityAtSensitivity", (0.5,)), ("CosineSimilarity", ())):
        want = getattr(keras.metrics, name)(*args).name.rsplit("_", 1)
        got = getattr(mk.metrics, name)(*args).name
        assert got in ("_".join(want), want[0]), (got, want)
    for name in ("CategoricalFocalCrossentropy", "Dice", "Tversky", "Circle", "CTC",
                 "CategoricalGeneralizedCrossEntropy"):
        assert getattr(mk.losses, name)().name == getattr(keras.losses, name)().name


@pytest.mark.parametrize("ident", ["binary_crossentropy", "bce", "categorical_crossentropy",
                                   "sparse_categorical_crossentropy", "kl_divergence",
                                   "poisson", "hinge", "squared_hinge", "categorical_hinge",
                                   "cosine_similarity", "log_cosh_error", "r2_score",
                                   "pearson_correlation", "concordance_correlation",
                                   "BinaryIoU", "R2Score", "LogCoshError"])
def test_compile_metric_names_as_keras(ident):
    from keras.src.trainers.compile_utils import get_metric

    want = get_metric(ident, None, None)
    got = mmetrics.get(ident)
    assert type(got).__name__ == type(want).__name__
    assert got.name == want.name == ident


def test_loss_names():
    for name in ("categorical_focal_crossentropy", "dice", "tversky", "circle", "ctc",
                 "categorical_generalized_cross_entropy"):
        assert mlosses.get(name) is getattr(mlosses, name)
    for name in ("Dice", "CTC", "Tversky", "Circle", "CategoricalFocalCrossentropy",
                 "CategoricalGeneralizedCrossEntropy"):
        assert type(mlosses.get(name)) is getattr(mlosses, name)
    assert type(mlosses.get({"class_name": "Dice", "config": {"axis": [1, 2]}})) is mlosses.Dice


@pytest.mark.parametrize("make", [
    lambda m: m.metrics.R2Score(class_aggregation="median"),
    lambda m: m.metrics.R2Score(num_regressors=-1),
    lambda m: m.metrics.PrecisionAtRecall(1.5),
    lambda m: m.metrics.RecallAtPrecision(0.5, num_thresholds=0),
    lambda m: m.metrics.SensitivityAtSpecificity(-0.1),
    lambda m: m.metrics.IoU(3, [0, 3]),
    lambda m: m.losses.CategoricalGeneralizedCrossEntropy(q=1.0),
], ids=["r2-aggregation", "r2-regressors", "par-recall", "rap-thresholds", "sas-spec",
        "iou-target", "gce-q"])
def test_bad_arguments_raise_as_keras(make):
    with pytest.raises(ValueError):
        make(keras)
    with pytest.raises(ValueError):
        make(mk)


def test_names_are_no_longer_missing():
    for name in ("PrecisionAtRecall", "RecallAtPrecision", "SensitivityAtSpecificity",
                 "SpecificityAtSensitivity"):
        assert getattr(mk.metrics, name) is getattr(mmetrics, name)
    for name in ("CTC", "Dice", "Tversky"):
        assert getattr(mk.losses, name) is getattr(mlosses, name)


# ------------------------------------------------------------ compile / fit / evaluate
FIT_X = RS.randn(10, 4).astype(np.float32)
FIT_Y = np.eye(3, dtype=np.float32)[RS.randint(0, 3, 10)]
FIT_SW = RS.uniform(0.2, 2.0, 10).astype(np.float32)


def _pair(keras_loss, mylib_loss, metrics_pair):
    from keras_compare import _randomized

    keras.utils.set_random_seed(0)
    km = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(5, activation="tanh"),
                           keras.layers.Dense(3, activation="softmax")])
    mm = mk.Sequential([mk.Input(shape=(4,)), mk.layers.Dense(5, activation="tanh"),
                        mk.layers.Dense(3, activation="softmax")])
    km.set_weights(_randomized([(v.path, np.asarray(v)) for v in km.weights], seed=3))
    mm.set_weights(km.get_weights())
    km.compile(keras.optimizers.SGD(0.1), keras_loss, metrics=metrics_pair[0])
    mm.compile(mk.optimizers.SGD(0.1), mylib_loss, metrics=metrics_pair[1])
    return mm, km


def _both(make):
    return [make(keras), make(mk)]


def test_fit_and_evaluate_log_metrics_as_keras():
    with ml.Graph().as_default():
        _fit_and_evaluate_log_metrics_as_keras()


def _fit_and_evaluate_log_metrics_as_keras():
    metrics = _both(lambda m: ["categorical_crossentropy", "kl_divergence", "categorical_hinge",
                               "r2_score", m.metrics.PrecisionAtRecall(0.5, name="p_at_r"),
                               m.metrics.OneHotMeanIoU(3, name="miou")])
    losses = _both(lambda m: m.losses.CategoricalFocalCrossentropy(gamma=1.0))
    mm, km = _pair(*losses, metrics)
    kw = dict(batch_size=4, epochs=1, shuffle=False, sample_weight=FIT_SW, verbose=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kh = km.fit(FIT_X, FIT_Y, **kw).history
        mh = mm.fit(FIT_X, FIT_Y, **kw).history
        assert sorted(mh) == sorted(kh)
        for key in kh:
            _close(mh[key], kh[key], 1e-4, 1e-5)
        ev = dict(batch_size=3, verbose=0, return_dict=True)
        want, got = km.evaluate(FIT_X, FIT_Y, **ev), mm.evaluate(FIT_X, FIT_Y, **ev)
    assert sorted(got) == sorted(want)
    for key in want:
        _close(got[key], want[key], 1e-5, 1e-6)


def test_evaluate_with_generalized_cross_entropy_as_keras():
    # Class-id targets [N] against [N, 3] outputs are accepted, as by Keras.
    ids = FIT_Y.argmax(-1).astype(np.int32)
    with ml.Graph().as_default():
        mm, km = _pair(keras.losses.CategoricalGeneralizedCrossEntropy(q=0.3),
                       mk.losses.CategoricalGeneralizedCrossEntropy(q=0.3), [None, None])
        ev = dict(batch_size=4, sample_weight=FIT_SW, verbose=0, return_dict=True)
        _close(mm.evaluate(FIT_X, ids, **ev)["loss"], km.evaluate(FIT_X, ids, **ev)["loss"],
               1e-5, 1e-6)


def test_fit_with_ctc_loss_as_keras():
    with ml.Graph().as_default():
        _fit_with_ctc_loss_as_keras()


def _fit_with_ctc_loss_as_keras():
    # A per-step classifier trained with the CTC loss: the losses and the weights (so
    # the gradients through optax's recursion) agree.
    from keras_compare import _randomized

    x = RS.randn(6, 7, 3).astype(np.float32)
    y = np.array([[1, 2, 0], [3, 0, 0], [2, 2, 1], [1, 0, 0], [3, 1, 0], [2, 3, 0]], np.int32)
    keras.utils.set_random_seed(0)
    km = keras.Sequential([keras.Input(shape=(7, 3)), keras.layers.Dense(4)])
    mm = mk.Sequential([mk.Input(shape=(7, 3)), mk.layers.Dense(4)])
    km.set_weights(_randomized([(v.path, np.asarray(v)) for v in km.weights], seed=1))
    mm.set_weights(km.get_weights())
    km.compile(keras.optimizers.SGD(0.05), keras.losses.CTC())
    mm.compile(mk.optimizers.SGD(0.05), "ctc")
    kw = dict(batch_size=3, epochs=2, shuffle=False, verbose=0)
    kh, mh = km.fit(x, y, **kw).history, mm.fit(x, y, **kw).history
    _close(mh["loss"], kh["loss"], 1e-4, 1e-5)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        _close(a, b, 1e-4, 1e-5)


def test_ops_ctc_loss_and_its_gradient_as_keras():
    import jax

    tl, ol = np.array([3, 2, 1]), np.array([7, 5, 6])
    want = keras.ops.ctc_loss(CTC_T, CTC_P, tl, ol, mask_index=0)
    _close(mk.ops.ctc_loss(CTC_T, CTC_P, tl, ol), np.asarray(want), 1e-5, 1e-6)
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, CTC_P.shape)
        (grad,) = ml.gradients(ml.reduce_sum(mk.ops.ctc_loss(CTC_T, x, tl, ol)), [x])
    with ml.Session(graph=g) as s:
        got = s.run(grad, feed_dict={x: CTC_P})
    want = jax.grad(lambda p: keras.ops.ctc_loss(CTC_T, p, tl, ol).sum())(CTC_P)
    _close(got, np.asarray(want), 1e-5, 1e-6)
