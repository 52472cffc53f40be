"""Cases from public TensorFlow / Keras bug reports of silently wrong numbers (masks in
subclassed and nested models, custom masking layers, sample / class weights in metrics,
clipping options, loss reductions, callbacks, explicit `training=`, `add_loss`), each
run on Keras 3 (JAX backend) and on mylib with the same weights and data, and
compared. Each case is one function ``case(K, weights) -> (results, weights)``: built
first with ``K = keras`` (whose weights are redrawn at random), then with mylib's face
given those weights."""

import keras
import numpy as np
import pytest

from mylib import keras as mk
from tests.keras.keras_compare import _close, _randomized

_rng = np.random.RandomState(0)
X = (_rng.randn(32, 4) * 2 + 1).astype("float32")
YR = _rng.randn(32, 1).astype("float32")
YB = (_rng.rand(32, 1) > 0.5).astype("float32")
YC = _rng.randint(0, 3, 32)
SW = _rng.uniform(0.1, 2.0, 32).astype("float32")
IDS = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 0, 0], [4, 5, 6, 7, 8], [2, 0, 0, 0, 0]],
               "int32")
IDS2 = np.array([[1, 0, 0], [3, 4, 0], [4, 5, 6], [2, 0, 0]], "int32")
XF = _rng.randn(4, 5, 4).astype("float32")


def _weights(model, weights):
    if weights is None:
        weights = _randomized([(v.path, np.asarray(v)) for v in model.weights])
    model.set_weights(weights)
    return weights


def _emb(K, i):
    return K.layers.Embedding(10, 4, mask_zero=True)(i)


def _predict(build, *inputs):
    def case(K, w):
        m = build(K)
        w = _weights(m, w)
        return m.predict(list(inputs) if len(inputs) > 1 else inputs[0], verbose=0), w
    return case


# ------------------------------------------------------------------ masks
def _subclassed_manual_mask(K):
    class M(K.Model):
        def __init__(self):
            super().__init__()
            self.e = K.layers.Embedding(10, 4, mask_zero=True)
            self.rnn = K.layers.LSTM(3, return_sequences=True)
            self.pool = K.layers.GlobalAveragePooling1D()
            self.d = K.layers.Dense(1)

        def call(self, x):
            h = self.e(x)
            mask = self.e.compute_mask(x)
            return self.d(self.pool(self.rnn(h, mask=mask), mask=mask))

    m = M()
    m(IDS[:2])
    return m


def _subclassed_implicit_mask(K):
    class M(K.Model):
        def __init__(self):
            super().__init__()
            self.e = K.layers.Embedding(10, 4, mask_zero=True)
            self.rnn = K.layers.GRU(3)
            self.d = K.layers.Dense(1)

        def call(self, x):
            return self.d(self.rnn(self.e(x)))

    m = M()
    m(IDS[:2])
    return m


def _custom_masking_layers(K):
    class Scale(K.layers.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.supports_masking = True

        def call(self, x):
            return x * 2.0

    class DropFirstStep(K.layers.Layer):
        def call(self, x, mask=None):
            return x[:, 1:]

        def compute_mask(self, x, mask=None):
            return None if mask is None else mask[:, 1:]

    class MaskedMean(K.layers.Layer):
        def call(self, x, mask=None):
            m = K.ops.cast(K.ops.expand_dims(mask, -1), x.dtype)
            return K.ops.sum(x * m, axis=1) / K.ops.maximum(K.ops.sum(m, axis=1), 1.0)

        def compute_mask(self, x, mask=None):
            return None

    i = K.Input((None,), dtype="int32")
    x = _emb(K, i)
    a = MaskedMean()(DropFirstStep()(Scale()(x)))
    b = K.layers.LSTM(2)(DropFirstStep()(x))
    return K.Model(i, K.layers.Concatenate()([a, b]))


def _lambda_keeps_mask(K):
    i = K.Input((None,), dtype="int32")
    return K.Model(i, K.layers.LSTM(3)(K.layers.Lambda(lambda t: t * 2.0)(_emb(K, i))))


def _concat_masked_and_unmasked(K):
    i, f = K.Input((5,), dtype="int32"), K.Input((5, 4))
    pooled = K.layers.GlobalAveragePooling1D()(K.layers.Concatenate()([_emb(K, i), f]))
    summed = K.layers.LSTM(2)(K.layers.Add()([_emb(K, i), f]))
    return K.Model([i, f], [pooled, summed])


def _mha_query_and_value_masks(K):
    q, v = K.Input((None,), dtype="int32"), K.Input((None,), dtype="int32")
    e = K.layers.Embedding(10, 4, mask_zero=True)
    return K.Model([q, v], K.layers.MultiHeadAttention(2, 3)(e(q), e(v)))


def _nested_models_keep_mask(K):
    ii = K.Input((None, 4))
    inner = K.Model(ii, K.layers.Dense(4)(ii))
    seq = K.Sequential([K.layers.Dense(4), K.layers.LSTM(3)])
    td_in = K.Input((4,))
    td_model = K.Model(td_in, K.layers.Dense(2)(td_in))
    i = K.Input((None,), dtype="int32")
    x = _emb(K, i)
    return K.Model(i, [K.layers.LSTM(3)(inner(x)), seq(x),
                       K.layers.GRU(2)(K.layers.TimeDistributed(td_model)(x))])


# ------------------------------------------------------------------ fit / evaluate
def _fit(build, compile_kw, fit_kw, y=YR, evaluate_kw=None):
    def case(K, w):
        m = build(K)
        w = _weights(m, w)
        m.compile(**compile_kw(K))
        h = m.fit(X, y, batch_size=8, shuffle=False, verbose=0, **fit_kw)
        out = {"history": h.history, "weights": m.get_weights()}
        if evaluate_kw is not None:
            out["evaluate"] = m.evaluate(X, y, batch_size=8, verbose=0, return_dict=True,
                                         **evaluate_kw)
        return out, w
    return case


def _mlp(K, out=1, activation=None):
    i = K.Input((4,))
    return K.Model(i, K.layers.Dense(out, activation=activation)(
        K.layers.Dense(6, activation="relu")(i)))


def _subclass_base_inference(K):
    class M(K.Model):
        def __init__(self):
            super().__init__()
            self.base = K.Sequential([K.layers.Dense(5), K.layers.BatchNormalization(),
                                      K.layers.Dropout(0.5)])
            self.head = K.layers.Dense(1)

        def call(self, x, training=None):
            return self.head(self.base(x, training=False))

    m = M()
    m(X[:2])
    return m


def _model_add_loss(K):
    class M(K.Model):
        def __init__(self):
            super().__init__()
            self.d = K.layers.Dense(1)

        def call(self, x):
            y = self.d(x)
            self.add_loss(0.1 * K.ops.sum(K.ops.square(self.d.kernel)))
            return y

    m = M()
    m(X[:2])
    return m


def _custom_loss_and_metric(K):
    class TripleMAE(K.losses.Loss):
        def call(self, y_true, y_pred):
            return 3.0 * K.ops.mean(K.ops.abs(y_true - y_pred), axis=-1)

    max_err = K.metrics.MeanMetricWrapper(
        lambda a, b: K.ops.max(K.ops.abs(a - b), axis=-1), name="max_err")
    return dict(optimizer=K.optimizers.SGD(0.05), loss=TripleMAE(reduction="sum"),
                metrics=[max_err])


def _on_batch(K, w):
    m = K.Sequential([K.Input((4,)), K.layers.Dense(1)])
    w = _weights(m, w)
    m.compile(K.optimizers.SGD(0.01), "mse", metrics=["mae"])
    # Each call reports its own batch's metrics (Keras 3 resets them per call).
    return [m.train_on_batch(X[:8], YR[:8], return_dict=True),
            m.train_on_batch(X[8:], YR[8:], return_dict=True),
            m.test_on_batch(X[:8], YR[:8], return_dict=True),
            m.test_on_batch(X[8:], YR[8:], sample_weight=SW[8:], return_dict=True),
            m.train_on_batch(X[:8], YR[:8], sample_weight=SW[:8], return_dict=True)], w


def _frozen_bn_called_in_training(K, w):
    m = K.Sequential([K.Input((4,)), K.layers.Dense(3),
                      K.layers.BatchNormalization(momentum=0.5)])
    w = _weights(m, w)
    m.layers[1].trainable = False
    return {"y": np.asarray(m(X, training=True)), "weights": m.get_weights()}, w


def _callbacks(cbs, lr=0.02, epochs=6):
    def case(K, w):
        m = _mlp(K)
        w = _weights(m, w)
        m.compile(K.optimizers.SGD(lr), "mse")
        h = m.fit(X, YR, validation_data=(X[:12], YR[:12] * 0.5), epochs=epochs,
                  batch_size=8, shuffle=False, verbose=0, callbacks=cbs(K))
        return {"history": h.history, "epochs": h.epoch, "weights": m.get_weights()}, w
    return case


CASES = {
    # masks
    "subclassed_model_passes_mask_by_hand": _predict(_subclassed_manual_mask, IDS),
    "subclassed_model_propagates_mask": _predict(_subclassed_implicit_mask, IDS),
    "custom_layers_supports_masking_and_compute_mask": _predict(_custom_masking_layers,
                                                                IDS),
    "lambda_layer_keeps_mask": _predict(_lambda_keeps_mask, IDS),
    "concatenate_and_add_masked_with_unmasked": _predict(_concat_masked_and_unmasked,
                                                         IDS, XF),
    "multi_head_attention_query_and_value_masks": _predict(_mha_query_and_value_masks,
                                                           IDS, IDS2),
    "nested_functional_sequential_time_distributed_masks": _predict(
        _nested_models_keep_mask, IDS),
    # sample / class weights and metrics
    "sample_weight_metrics_vs_weighted_metrics": _fit(
        _mlp, lambda K: dict(optimizer=K.optimizers.SGD(0.1), loss="mse", metrics=["mae"],
                             weighted_metrics=["mse"]),
        dict(epochs=2, sample_weight=SW), evaluate_kw=dict(sample_weight=SW)),
    "class_weight_accuracy_weighted_and_not": _fit(
        lambda K: _mlp(K, 3, "softmax"),
        lambda K: dict(optimizer=K.optimizers.SGD(0.1),
                       loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                       weighted_metrics=["accuracy"]),
        dict(epochs=2, class_weight={0: 1.0, 1: 3.0, 2: 0.5}), y=YC, evaluate_kw={}),
    "validation_data_with_sample_weights": _fit(
        _mlp, lambda K: dict(optimizer=K.optimizers.SGD(0.1), loss="mse", metrics=["mae"],
                             weighted_metrics=["mae"]),
        dict(epochs=2, validation_data=(X[:10], YR[:10], SW[:10]))),
    "bce_from_logits_threshold_0_and_auc_from_logits": _fit(
        _mlp, lambda K: dict(optimizer=K.optimizers.SGD(0.1),
                             loss=K.losses.BinaryCrossentropy(from_logits=True),
                             metrics=[K.metrics.BinaryAccuracy(threshold=0.0),
                                      K.metrics.AUC(from_logits=True, name="auc")]),
        dict(epochs=2), y=YB),
    # reductions, custom losses, clipping
    "loss_reduction_sum_with_sample_weight": _fit(
        _mlp, lambda K: dict(optimizer=K.optimizers.SGD(0.01),
                             loss=K.losses.MeanSquaredError(reduction="sum")),
        dict(epochs=2, sample_weight=SW)),
    "custom_loss_class_reduction_sum_and_metric_wrapper": _fit(
        lambda K: _mlp(K, 2), _custom_loss_and_metric,
        dict(epochs=2, sample_weight=SW), y=np.concatenate([YR, -YR], 1)),
    "clipnorm_per_variable": _fit(
        _mlp, lambda K: dict(optimizer=K.optimizers.SGD(0.5, clipnorm=0.1), loss="mse"),
        dict(epochs=2)),
    "global_clipnorm": _fit(
        _mlp, lambda K: dict(optimizer=K.optimizers.RMSprop(0.05, global_clipnorm=0.1),
                             loss="mse"), dict(epochs=2)),
    "clipvalue": _fit(
        _mlp, lambda K: dict(optimizer=K.optimizers.SGD(0.05, clipvalue=0.01),
                             loss="mse"), dict(epochs=2)),
    # training= and losses added by the model
    "subclassed_base_called_with_training_false": _fit(
        _subclass_base_inference,
        lambda K: dict(optimizer=K.optimizers.SGD(0.05), loss="mse"), dict(epochs=2)),
    "frozen_batchnorm_called_with_training_true": _frozen_bn_called_in_training,
    "add_loss_in_subclassed_model_call": _fit(
        _model_add_loss, lambda K: dict(optimizer=K.optimizers.SGD(0.05), loss="mse"),
        dict(epochs=2), evaluate_kw={}),
    "train_and_test_on_batch_reset_metrics": _on_batch,
    # callbacks
    "early_stopping_start_from_epoch_min_delta_restore": _callbacks(
        lambda K: [K.callbacks.EarlyStopping(monitor="loss", patience=0, min_delta=0.05,
                                             start_from_epoch=2,
                                             restore_best_weights=True)]),
    "early_stopping_baseline_restore": _callbacks(
        lambda K: [K.callbacks.EarlyStopping(monitor="val_loss", patience=1, baseline=0.2,
                                             restore_best_weights=True)]),
    "reduce_lr_on_plateau_min_delta_min_lr": _callbacks(
        lambda K: [K.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5,
                                                 patience=0, min_lr=0.005,
                                                 min_delta=0.01)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_keras(name):
    case = CASES[name]
    want, weights = case(keras, None)
    got, _ = case(mk, weights)
    _compare(got, want, name)


def _compare(got, want, where):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), (where, sorted(got), sorted(want))
        for k in want:
            _compare(got[k], want[k], f"{where}[{k}]")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, f"{where}[{i}]")
    else:
        _close(got, want, rtol=1e-4, atol=1e-5)
