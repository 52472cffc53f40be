"""mylib against Keras 3 itself (JAX backend, a test dependency; tests/conftest.py sets
KERAS_BACKEND). Both sides hold the same weights (numpy arrays through get_weights /
set_weights) and see the same data: layer outputs, losses with sample weights, metrics,
optimizer steps on the same gradients, one `fit` epoch, `evaluate` and `predict`.

docs/keras_reference.md lists each compared name with its Keras counterpart."""

import jax.numpy as jnp
import keras
import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib import losses as mlosses
from mylib import metrics as mmetrics
from mylib import optimizers as mopt

from keras_compare import _close, _randomized, _same_layer  # noqa: E402,F401

RS = np.random.RandomState(1234)


def test_keras_is_keras_3_on_jax():
    # `tests/keras` must not shadow the real package, and Keras must run on JAX.
    assert int(keras.__version__.split(".")[0]) >= 3
    assert keras.backend.backend() == "jax"


# ------------------------------------------------------------ layers
X2 = RS.randn(6, 5).astype(np.float32)
X3 = RS.randn(4, 7, 3).astype(np.float32)
X4 = RS.randn(3, 9, 8, 2).astype(np.float32)


@pytest.mark.parametrize("kw", [dict(units=4), dict(units=3, activation="relu"),
                                dict(units=2, use_bias=False, activation="sigmoid")])
def test_dense(kw):
    _same_layer(L.Dense(**kw), keras.layers.Dense(**kw), X2)


@pytest.mark.parametrize("kw", [dict(filters=4, kernel_size=3),
                                dict(filters=2, kernel_size=2, strides=2, padding="same"),
                                dict(filters=3, kernel_size=3, padding="causal"),
                                dict(filters=3, kernel_size=2, dilation_rate=2,
                                     activation="relu")])
def test_conv1d(kw):
    _same_layer(L.Conv1D(**kw), keras.layers.Conv1D(**kw), X3)


@pytest.mark.parametrize("kw", [dict(filters=4, kernel_size=3),
                                dict(filters=2, kernel_size=(2, 3), strides=2, padding="same"),
                                dict(filters=3, kernel_size=3, strides=(2, 1), padding="same"),
                                dict(filters=3, kernel_size=2, dilation_rate=2,
                                     activation="tanh", use_bias=False)])
def test_conv2d(kw):
    _same_layer(L.Conv2D(**kw), keras.layers.Conv2D(**kw), X4)


RNN_KW = [dict(), dict(return_sequences=True), dict(go_backwards=True),
          dict(return_sequences=True, return_state=True)]


def _same_rnn(ours, theirs, x, kw):
    got, want = None, None
    theirs(x)
    theirs.set_weights(_randomized([(v.path, np.asarray(v)) for v in theirs.weights]))
    ours(x)
    ours.set_weights(theirs.get_weights())
    want = theirs(x)
    got = ours(x)
    if kw.get("return_state"):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            _close(a, np.asarray(b), 1e-4, 1e-5)
    else:
        _close(got, np.asarray(want), 1e-4, 1e-5)


@pytest.mark.parametrize("kw", RNN_KW)
def test_lstm(kw):
    _same_rnn(L.LSTM(3, **kw), keras.layers.LSTM(3, **kw), X3, kw)


@pytest.mark.parametrize("kw", RNN_KW + [dict(reset_after=False)])
def test_gru(kw):
    _same_rnn(L.GRU(3, **kw), keras.layers.GRU(3, **kw), X3, kw)


@pytest.mark.parametrize("kw", RNN_KW)
def test_simple_rnn(kw):
    _same_rnn(L.SimpleRNN(3, **kw), keras.layers.SimpleRNN(3, **kw), X3, kw)


def test_embedding():
    ids = RS.randint(0, 10, size=(4, 6)).astype(np.int32)
    _same_layer(L.Embedding(10, 3), keras.layers.Embedding(10, 3), ids)


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("x,axis", [(X2, -1), (X4, -1), (X4, 1)])
def test_batch_normalization(training, x, axis):
    kw = dict(axis=axis, momentum=0.8, epsilon=1e-3)
    ours, theirs = L.BatchNormalization(**kw), keras.layers.BatchNormalization(**kw)
    _same_layer(ours, theirs, x, rtol=1e-4, atol=1e-4, training=training)
    # the moving statistics moved (training) or stayed (inference) alike
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        _close(a, b, 1e-5, 1e-6)


@pytest.mark.parametrize("x,kw", [(X2, dict()), (X3, dict(axis=-1)),
                                  (X4, dict(axis=[1, 2, 3], epsilon=1e-5)),
                                  (X3, dict(center=False)), (X3, dict(scale=False))])
def test_layer_normalization(x, kw):
    _same_layer(L.LayerNormalization(**kw), keras.layers.LayerNormalization(**kw), x,
                rtol=1e-4, atol=1e-5)


def test_dropout_inference_is_identity():
    _same_layer(L.Dropout(0.4), keras.layers.Dropout(0.4), X3, training=False)
    _same_layer(L.Dropout(0.4), keras.layers.Dropout(0.4), X3)


POOL_CASES = [
    ("MaxPooling1D", X3, dict()), ("MaxPooling1D", X3, dict(pool_size=3, strides=2,
                                                             padding="same")),
    ("AveragePooling1D", X3, dict(pool_size=2)), ("AveragePooling1D", X3, dict(pool_size=3,
                                                                     padding="same")),
    ("MaxPooling2D", X4, dict()), ("MaxPooling2D", X4, dict(pool_size=3, strides=2,
                                                             padding="same")),
    ("AveragePooling2D", X4, dict(pool_size=2)), ("AveragePooling2D", X4, dict(pool_size=(3, 2),
                                                                     padding="same")),
    ("GlobalMaxPooling1D", X3, dict()), ("GlobalAveragePooling1D", X3, dict()),
    ("GlobalMaxPooling2D", X4, dict()), ("GlobalAveragePooling2D", X4, dict()),
    ("GlobalAveragePooling2D", X4, dict(keepdims=True)),
]


@pytest.mark.parametrize("name,x,kw", POOL_CASES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(POOL_CASES)])
def test_pooling(name, x, kw):
    _same_layer(getattr(L, name)(**kw), getattr(keras.layers, name)(**kw), x)


def test_flatten_reshape():
    _same_layer(L.Flatten(), keras.layers.Flatten(), X4)
    _same_layer(L.Reshape((9, 16)), keras.layers.Reshape((9, 16)), X4)
    _same_layer(L.Reshape((-1, 4)), keras.layers.Reshape((-1, 4)), X4)


def test_concatenate_add():
    a, b = RS.randn(4, 3, 2).astype(np.float32), RS.randn(4, 3, 5).astype(np.float32)
    _same_layer(L.Concatenate(), keras.layers.Concatenate(), [a, b])
    c = RS.randn(4, 2, 5).astype(np.float32)
    _same_layer(L.Concatenate(axis=1), keras.layers.Concatenate(axis=1), [b, c])
    _same_layer(L.Add(), keras.layers.Add(), [b, b * 2, -b])


# ------------------------------------------------------------ losses
def _eval(fn):
    g = ml.Graph()
    with g.as_default():
        out = fn()
    with ml.Session(graph=g) as s:
        return s.run(out)


N, K = 8, 4
PROBS = RS.dirichlet(np.ones(K), size=N).astype(np.float32)
LOGITS = (RS.randn(N, K) * 2).astype(np.float32)
ONEHOT = np.eye(K, dtype=np.float32)[RS.randint(0, K, N)]
SPARSE = ONEHOT.argmax(-1).astype(np.int32)
BIN_T = (RS.rand(N, 3) > 0.5).astype(np.float32)
BIN_P = RS.uniform(0.02, 0.98, (N, 3)).astype(np.float32)
REG_T = RS.randn(N, 3).astype(np.float32)
REG_P = RS.randn(N, 3).astype(np.float32) * 2
POS_P = RS.uniform(0.1, 3.0, (N, 3)).astype(np.float32)
SIGNED_T = np.where(BIN_T > 0, 1.0, -1.0).astype(np.float32)
SW = RS.uniform(0.0, 2.0, N).astype(np.float32)

# (mylib class, Keras class, kwargs, y_true, y_pred)
LOSS_CASES = [
    ("MeanSquaredError", {}, REG_T, REG_P),
    ("MeanAbsoluteError", {}, REG_T, REG_P),
    ("BinaryCrossentropy", {}, BIN_T, BIN_P),
    ("BinaryCrossentropy", dict(from_logits=True), BIN_T, REG_P),
    ("BinaryCrossentropy", dict(label_smoothing=0.2), BIN_T, BIN_P),
    ("CategoricalCrossentropy", {}, ONEHOT, PROBS),
    ("CategoricalCrossentropy", dict(from_logits=True), ONEHOT, LOGITS),
    ("CategoricalCrossentropy", dict(from_logits=True, label_smoothing=0.1), ONEHOT, LOGITS),
    ("SparseCategoricalCrossentropy", {}, SPARSE, PROBS),
    ("SparseCategoricalCrossentropy", dict(from_logits=True), SPARSE, LOGITS),
    ("Huber", {}, REG_T, REG_P),
    ("Huber", dict(delta=0.5), REG_T, REG_P),
    ("LogCosh", {}, REG_T, REG_P),
    ("KLDivergence", {}, PROBS[::-1].copy(), PROBS),
    ("Poisson", {}, np.abs(REG_T), POS_P),
    ("CosineSimilarity", {}, REG_T, REG_P),
    ("Hinge", {}, BIN_T, REG_P),
    ("Hinge", {}, SIGNED_T, REG_P),
    ("SquaredHinge", {}, BIN_T, REG_P),
    ("CategoricalHinge", {}, ONEHOT, LOGITS),
    ("BinaryFocalCrossentropy", {}, BIN_T, BIN_P),
    ("BinaryFocalCrossentropy", dict(from_logits=True, gamma=1.5,
                                     apply_class_balancing=True, alpha=0.3), BIN_T, REG_P),
]


@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name,kw,yt,yp", LOSS_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(LOSS_CASES)])
def test_loss_classes(name, kw, yt, yp, reduction, weighted):
    sw = SW if weighted else None
    want = getattr(keras.losses, name)(reduction=reduction, **kw)(yt, yp, sample_weight=sw)
    got = _eval(lambda: getattr(mlosses, name)(reduction=reduction, **kw)(
        yt, yp, sample_weight=sw))
    _close(got, np.asarray(want), 1e-5, 1e-6)


FN_CASES = [("mean_squared_error", REG_T, REG_P), ("mse", REG_T, REG_P),
            ("mean_absolute_error", REG_T, REG_P), ("mae", REG_T, REG_P),
            ("binary_crossentropy", BIN_T, BIN_P), ("categorical_crossentropy", ONEHOT, PROBS),
            ("sparse_categorical_crossentropy", SPARSE, PROBS), ("huber", REG_T, REG_P),
            ("log_cosh", REG_T, REG_P), ("logcosh", REG_T, REG_P),
            ("kl_divergence", PROBS[::-1].copy(), PROBS),
            ("kld", PROBS[::-1].copy(), PROBS), ("poisson", np.abs(REG_T), POS_P),
            ("cosine_similarity", REG_T, REG_P), ("hinge", BIN_T, REG_P),
            ("squared_hinge", BIN_T, REG_P), ("categorical_hinge", ONEHOT, LOGITS),
            ("binary_focal_crossentropy", BIN_T, BIN_P)]


@pytest.mark.parametrize("name,yt,yp", FN_CASES, ids=[c[0] for c in FN_CASES])
def test_loss_functions(name, yt, yp):
    # the short names are aliases of Keras's `get`; `logcosh` (TF Keras 2) is not one.
    # Keras's per-sample functions are those of the Keras face (`mylib.losses` also holds
    # TF1's `tf.losses.mean_squared_error`), and `mylib.losses.get` of the name.
    want = keras.losses.get({"logcosh": "log_cosh"}.get(name, name))(yt, yp)
    _close(_eval(lambda: getattr(ml.keras.losses, name)(yt, yp)), np.asarray(want), 1e-5, 1e-6)
    _close(_eval(lambda: mlosses.get(name)(yt, yp)), np.asarray(want), 1e-5, 1e-6)


def test_loss_rank_alignment_and_per_timestep_weights():
    # [N] targets against [N, 1] predictions; [N, T] weights of a sequence loss
    yt, yp = REG_T[:, 0], REG_P[:, :1]
    for cls in ("MeanSquaredError", "Huber"):
        want = getattr(keras.losses, cls)()(yt, yp, sample_weight=SW)
        _close(_eval(lambda c=cls: getattr(mlosses, c)()(yt, yp, sample_weight=SW)),
               np.asarray(want), 1e-5, 1e-6)
    seq_t = RS.randint(0, K, (N, 5)).astype(np.int32)
    seq_p = RS.randn(N, 5, K).astype(np.float32)
    sw = RS.uniform(0, 1, (N, 5)).astype(np.float32)
    want = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
        seq_t, seq_p, sample_weight=sw)
    _close(_eval(lambda: mlosses.SparseCategoricalCrossentropy(from_logits=True)(
        seq_t, seq_p, sample_weight=sw)), np.asarray(want), 1e-5, 1e-6)


# ------------------------------------------------------------ metrics
def _run_metric(metric, batches):
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


def _keras_metric(metric, batches):
    for t, p, w in batches:
        metric.update_state(t, p, sample_weight=w)
    return np.asarray(metric.result())


M = 40
M_ONEHOT = np.eye(K, dtype=np.float32)[RS.randint(0, K, M)]
M_PROBS = np.clip(M_ONEHOT * 0.3 + RS.dirichlet(np.ones(K), M), 0, 1).astype(np.float32)
M_SPARSE = M_ONEHOT.argmax(-1).astype(np.int32)
M_BT = (RS.rand(M, 3) > 0.5).astype(np.float32)
M_BP = np.clip(M_BT * 0.3 + RS.rand(M, 3) * 0.7, 0, 1).astype(np.float32)
M_RT, M_RP = RS.randn(M, 3).astype(np.float32), RS.randn(M, 3).astype(np.float32)
M_SW = RS.uniform(0, 2, M).astype(np.float32)
M_CT = RS.randint(0, 3, M).astype(np.int32)
M_CP = RS.randint(0, 3, M).astype(np.int32)

METRIC_CASES = [
    ("Accuracy", {}, M_CT, M_CP),
    ("BinaryAccuracy", {}, M_BT, M_BP),
    ("BinaryAccuracy", dict(threshold=0.7), M_BT, M_BP),
    ("CategoricalAccuracy", {}, M_ONEHOT, M_PROBS),
    ("SparseCategoricalAccuracy", {}, M_SPARSE, M_PROBS),
    ("TopKCategoricalAccuracy", dict(k=2), M_ONEHOT, M_PROBS),
    ("SparseTopKCategoricalAccuracy", dict(k=2), M_SPARSE, M_PROBS),
    ("MeanSquaredError", {}, M_RT, M_RP),
    ("MeanAbsoluteError", {}, M_RT, M_RP),
    ("RootMeanSquaredError", {}, M_RT, M_RP),
    ("Precision", {}, M_BT, M_BP),
    ("Precision", dict(thresholds=[0.3, 0.6]), M_BT, M_BP),
    ("Recall", {}, M_BT, M_BP),
    ("Recall", dict(top_k=2), M_ONEHOT, M_PROBS),
    ("AUC", {}, M_BT, M_BP),
    ("AUC", dict(curve="PR", num_thresholds=50), M_BT, M_BP),
    # Keras's MeanIoU defaults to an int confusion matrix (float sample weights are
    # truncated, with a warning); mylib's is float. With dtype float32 they agree.
    ("MeanIoU", dict(num_classes=3, dtype="float32"), M_CT, M_CP),
    ("MeanIoU", dict(num_classes=3, ignore_class=0, dtype="float32"), M_CT, M_CP),
    ("FBetaScore", dict(beta=2.0, threshold=0.5), M_BT, M_BP),
    ("F1Score", dict(average="macro", threshold=0.5), M_BT, M_BP),
    ("F1Score", dict(average="micro"), M_ONEHOT, M_PROBS),
    ("F1Score", dict(average="weighted", threshold=0.4), M_BT, M_BP),
]


def _halves(*arrays):
    h = len(arrays[0]) // 2
    return [tuple(None if a is None else a[sl] for a in arrays)
            for sl in (slice(0, h), slice(h, None))]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name,kw,yt,yp", METRIC_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(METRIC_CASES)])
def test_metrics(name, kw, yt, yp, weighted):
    batches = _halves(yt, yp, M_SW if weighted else None)
    want = _keras_metric(getattr(keras.metrics, name)(**kw), batches)
    got = _run_metric(getattr(mmetrics, name)(**kw), batches)
    _close(got, want, 1e-5, 1e-6)


def test_mean_iou_default_dtype_unweighted():
    batches = _halves(M_CT, M_CP, None)
    _close(_run_metric(mmetrics.MeanIoU(3), batches),
           _keras_metric(keras.metrics.MeanIoU(3), batches), 1e-6, 1e-7)


def test_mean_and_sum_metrics():
    v, w = RS.randn(M).astype(np.float32), M_SW
    for name in ("Mean", "Sum"):
        km = getattr(keras.metrics, name)()
        for part in _halves(v, w):
            km.update_state(part[0], sample_weight=part[1])
        g = ml.Graph()
        with g.as_default():
            mm = getattr(mmetrics, name)()
            ups = [mm.update_state(a, sample_weight=b) for a, b in _halves(v, w)]
            res = mm.result()
            reset = mm.reset_state()
        with ml.Session(graph=g) as s:
            s.run(reset)
            for u in ups:
                s.run(u)
            _close(s.run(res), np.asarray(km.result()), 1e-5, 1e-6)


# ------------------------------------------------------------ optimizers
OPT_W0 = [RS.randn(3, 2).astype(np.float32), RS.randn(2).astype(np.float32)]
OPT_GRADS = [[RS.randn(3, 2).astype(np.float32) * s, RS.randn(2).astype(np.float32) * s]
             for s in (1.0, 0.1, 3.0, 0.5, 1.0, 2.0, 0.01)]

OPT_CASES = [
    ("SGD", dict(learning_rate=0.1)),
    ("SGD", dict(learning_rate=0.1, momentum=0.9)),
    ("SGD", dict(learning_rate=0.05, momentum=0.8, nesterov=True)),
    ("Adam", dict(learning_rate=0.01)),
    ("Adam", dict(learning_rate=0.02, beta_1=0.8, beta_2=0.99)),
    ("Adam", dict(learning_rate=0.02, amsgrad=True)),
    ("Adam", dict(learning_rate=0.01, epsilon=1e-3)),
    ("AdamW", dict(learning_rate=0.01, weight_decay=0.1)),
    ("RMSprop", dict(learning_rate=0.01)),
    ("RMSprop", dict(learning_rate=0.01, rho=0.8, momentum=0.5, centered=True)),
    ("Adagrad", dict(learning_rate=0.1)),
    ("Adagrad", dict(learning_rate=0.1, initial_accumulator_value=0.5, epsilon=1e-4)),
    ("SGD", dict(learning_rate=0.1, momentum=0.9, clipnorm=1.0)),
    ("Adam", dict(learning_rate=0.01, clipvalue=0.5)),
    ("RMSprop", dict(learning_rate=0.01, global_clipnorm=1.5)),
]


@pytest.mark.parametrize("name,kw", OPT_CASES,
                         ids=[f"{getattr(c, 'values', c)[0]}-{i}" for i, c in enumerate(OPT_CASES)])
def test_optimizer_steps(name, kw):
    """N `apply_gradients` steps on the same (fed) gradients give Keras's variables."""
    kvars = [keras.Variable(w) for w in OPT_W0]
    kopt = getattr(keras.optimizers, name)(**kw)
    g = ml.Graph()
    with g.as_default():
        mvars = [ml.Variable(w, name=f"v{i}") for i, w in enumerate(OPT_W0)]
        phs = [ml.placeholder(ml.float32, w.shape) for w in OPT_W0]
        train = getattr(mopt, name)(**kw).apply_gradients(list(zip(phs, mvars)))
        init = ml.global_variables_initializer()
    with ml.Session(graph=g) as s:
        s.run(init)
        for step, grads in enumerate(OPT_GRADS):
            kopt.apply_gradients(list(zip([jnp.asarray(x) for x in grads], kvars)))
            s.run(train, feed_dict=dict(zip(phs, grads)))
            for got, want in zip(s.run([v.value() for v in mvars]), kvars):
                _close(got, np.asarray(want), 1e-5, 1e-6)


# ------------------------------------------------------------ fit / evaluate / predict
FIT_N = 10  # batch size 4: batches of 4, 4 and a short last one of 2
FIT_X = RS.randn(FIT_N, 4).astype(np.float32)
FIT_SW = RS.uniform(0.2, 2.0, FIT_N).astype(np.float32)
FIT_TARGETS = {
    "mse": (RS.randn(FIT_N, 2).astype(np.float32), None),
    "sparse_categorical_crossentropy": (RS.randint(0, 3, FIT_N).astype(np.int32),
                                        "softmax"),
    "binary_crossentropy": ((RS.rand(FIT_N, 1) > 0.5).astype(np.float32), "sigmoid"),
}


def _model_pair(loss):
    y, act = FIT_TARGETS[loss]
    units = {"mse": 2, "sparse_categorical_crossentropy": 3, "binary_crossentropy": 1}[loss]
    keras.utils.set_random_seed(0)
    km = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(5, activation="tanh"),
                           keras.layers.Dense(units, activation=act)])
    mm = ml.Sequential([L.Input(shape=(4,)), L.Dense(5, activation="tanh"),
                        L.Dense(units, activation=act)])
    km.set_weights(_randomized([(v.path, np.asarray(v)) for v in km.weights], seed=3))
    mm.set_weights(km.get_weights())
    return mm, km, y


def _compile_both(mm, km, opt_name, opt_kw, loss, metrics, weighted_metrics):
    mm.compile(getattr(mopt, opt_name)(**opt_kw), loss, metrics=metrics,
               weighted_metrics=weighted_metrics)
    km.compile(getattr(keras.optimizers, opt_name)(**opt_kw), loss, metrics=metrics,
               weighted_metrics=weighted_metrics)


FIT_CASES = [
    ("mse", "SGD", dict(learning_rate=0.1, momentum=0.9), ["mae"], None),
    ("sparse_categorical_crossentropy", "Adam", dict(learning_rate=0.05, epsilon=1e-12),
     ["accuracy"], None),
    # the default epsilon with gradients ~1e-4: Keras's epsilon on the raw sqrt(v)
    ("sparse_categorical_crossentropy", "Adam", dict(learning_rate=0.05), ["accuracy"], None),
    ("binary_crossentropy", "RMSprop", dict(learning_rate=0.01), None, ["accuracy"]),
    ("mse", "Adagrad", dict(learning_rate=0.2), None, None),
]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("loss,opt,opt_kw,metrics,wmetrics", FIT_CASES,
                         ids=[c[0] for c in FIT_CASES[:2]] + ["adam-default-epsilon"]
                         + [c[0] for c in FIT_CASES[3:]])
def test_fit_two_epochs(loss, opt, opt_kw, metrics, wmetrics, weighted):
    mm, km, y = _model_pair(loss)
    _compile_both(mm, km, opt, opt_kw, loss, metrics, wmetrics)
    sw = FIT_SW if weighted else None
    kw = dict(batch_size=4, epochs=2, shuffle=False, sample_weight=sw, verbose=0)
    kh = km.fit(FIT_X, y, **kw).history
    mh = mm.fit(FIT_X, y, **kw).history
    assert sorted(mh) == sorted(kh)
    for key in kh:
        _close(mh[key], kh[key], 1e-4, 1e-5)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        _close(a, b, 1e-4, 1e-5)


@pytest.mark.parametrize("loss,opt,opt_kw,metrics,wmetrics", FIT_CASES,
                         ids=[c[0] for c in FIT_CASES])
def test_evaluate_and_predict(loss, opt, opt_kw, metrics, wmetrics):
    mm, km, y = _model_pair(loss)
    _compile_both(mm, km, opt, opt_kw, loss, metrics, wmetrics)
    for sw in (None, FIT_SW):
        for bs in (4, 3, 10):
            kw = dict(batch_size=bs, sample_weight=sw, verbose=0, return_dict=True)
            want = km.evaluate(FIT_X, y, **kw)
            got = mm.evaluate(FIT_X, y, **kw)
            assert sorted(got) == sorted(want)
            for key in want:
                _close(got[key], want[key], 1e-5, 1e-6)
    for bs in (4, 3, 32):
        _close(mm.predict(FIT_X, batch_size=bs, verbose=0),
               km.predict(FIT_X, batch_size=bs, verbose=0), 1e-5, 1e-6)


def test_weighted_metric_names_as_keras_3():
    mm, km, y = _model_pair("binary_crossentropy")
    kw = dict(sample_weight=FIT_SW, verbose=0, return_dict=True)
    # Plain names unless an unweighted metric took the name; a name taken twice gets _1.
    for metrics, wmetrics in ((None, ["accuracy"]), (["accuracy"], ["accuracy"]),
                              (["mae", "mae"], ["mae", "mse"])):
        _compile_both(mm, km, "SGD", {}, "binary_crossentropy", metrics, wmetrics)
        assert sorted(mm.evaluate(FIT_X, y, **kw)) == sorted(km.evaluate(FIT_X, y, **kw))


@pytest.mark.parametrize("name", ["hard_sigmoid", "hard_silu", "hard_swish", "softsign",
                                  "exponential", "leaky_relu", "mish", "silu", "relu6"])
def test_activation_names_match_keras(name):
    """Activations by name: values (against Keras 3's, and numpy) and gradients (finite
    differences), on points either side of the kinks."""
    xv = np.linspace(-5, 5, 41, dtype=np.float32).reshape(1, 41) + np.float32(0.013)
    want = np.asarray(keras.activations.get(name)(xv))
    x = L.Input(shape=(41,))
    model = ml.Model(x, L.Activation(name)(x))
    _close(model.predict(xv, verbose=0), want, rtol=1e-5, atol=1e-6)
    ref = {"hard_sigmoid": lambda z: np.clip(z / 6 + 0.5, 0, 1),
           "softsign": lambda z: z / (np.abs(z) + 1),
           "leaky_relu": lambda z: np.where(z > 0, z, 0.2 * z),
           "mish": lambda z: z * np.tanh(np.log1p(np.exp(z)))}.get(name)
    if ref is not None:
        _close(want, ref(xv.astype(np.float64)), rtol=1e-5, atol=1e-6)
    with ml.Graph().as_default():  # elementwise: d sum(y) / dx_i is y's own slope at x_i
        xp = ml.placeholder(ml.float64, [41])
        y = L.activations.get(name)(xp)
        (dy,) = ml.gradients(ml.reduce_sum(y), [xp])
        x64, h = xv[0].astype(np.float64), 1e-6
        with ml.Session() as s:
            got = s.run(dy, {xp: x64})
            fd = (s.run(y, {xp: x64 + h}) - s.run(y, {xp: x64 - h})) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6)


def test_lstm_with_hard_sigmoid_recurrent_activation_matches_keras():
    xv = np.random.default_rng(0).standard_normal((3, 5, 4)).astype(np.float32)
    _same_layer(L.LSTM(6, recurrent_activation="hard_sigmoid", return_sequences=True),
                keras.layers.LSTM(6, recurrent_activation="hard_sigmoid",
                                  return_sequences=True), xv, rtol=1e-4, atol=1e-5)
