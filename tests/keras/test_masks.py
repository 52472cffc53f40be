"""Keras masks (Keras 3's rules) against numpy: masked global pooling, masks kept by
the layers that keep the time axis, and masked losses and metrics in fit/evaluate."""

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib.layers import backend
from mylib.layers.base import get_mask


def run(t, feed=None):
    return backend.get_session(ml.get_default_graph()).run(t, feed)


IDS = np.array([[1, 2, 0, 0], [3, 0, 0, 0], [4, 5, 6, 7], [0, 0, 0, 0]])


_last_embedding = []


def _embedded(init="random_normal", dim=3):
    ml.set_random_seed(0)
    inp = L.Input((None,), dtype="int32")
    emb = L.Embedding(10, dim, mask_zero=True, embeddings_initializer=init)
    _last_embedding[:] = [emb]
    return inp, emb(inp)


# ------------------------------------------------------------ global pooling
@pytest.mark.parametrize("keepdims", [False, True])
def test_global_average_pooling_1d_averages_only_unmasked_steps(keepdims):
    inp, x = _embedded()
    y = L.GlobalAveragePooling1D(keepdims=keepdims)(x)
    assert get_mask(y) is None
    m = ml.Model(inp, [y, x])
    yv, xv = m.predict(IDS, verbose=0)
    mask = IDS != 0
    n = mask.sum(1)[:, None]
    ref = (xv * mask[..., None]).sum(1) / np.maximum(n, 1)  # all padding: 0, not NaN
    np.testing.assert_allclose(yv.reshape(ref.shape), ref, rtol=1e-6, atol=1e-7)
    assert np.all(np.isfinite(yv))
    # The unmasked mean differs (the padding's embedding is not zero).
    assert not np.allclose(yv.reshape(ref.shape)[:2], xv.mean(1)[:2])


def test_global_max_pooling_1d_ignores_padding():
    # All embeddings negative: an unmasked max would pick a padded step's value only
    # if padding were larger; make padding the largest to be sure it is ignored.
    inp, x = _embedded(init=ml.initializers.RandomUniform(-2.0, -1.0))
    y = L.GlobalMaxPooling1D()(x)
    m = ml.Model(inp, [y, x])
    emb = m.layers[1]
    w = emb.get_weights()[0]
    w[0] = 5.0  # the padding id's row
    emb.set_weights([w])
    yv, xv = m.predict(IDS, verbose=0)
    mask = IDS != 0
    ref = np.where(mask[..., None], xv, -np.inf).max(1)
    ref[~mask.any(1)] = 0.0  # a sequence of padding only pools to 0
    np.testing.assert_allclose(yv, ref, rtol=1e-6)
    assert (yv[:3] < 0).all()


def test_global_average_pooling_1d_channels_first_with_mask():
    inp, x = _embedded()
    xt = L.Permute((2, 1))(x)  # [batch, channels, steps]; Permute drops the mask
    y = L.GlobalAveragePooling1D(data_format="channels_first")(xt, mask=get_mask(x))
    m = ml.Model(inp, [y, x])
    yv, xv = m.predict(IDS[:3], verbose=0)
    mask = IDS[:3] != 0
    ref = (xv * mask[..., None]).sum(1) / mask.sum(1)[:, None]
    np.testing.assert_allclose(yv, ref, rtol=1e-6)


# ------------------------------------------------------------ propagation
def test_time_axis_layers_keep_the_mask():
    inp, x = _embedded(dim=4)
    m0 = get_mask(x)
    y = x
    for layer in [L.Dense(3), L.Activation("relu"), L.Dropout(0.5), L.LayerNormalization(),
                  L.GaussianNoise(0.1), L.TimeDistributed(L.Dense(2)),
                  L.LSTM(3, return_sequences=True),
                  L.Bidirectional(L.GRU(2, return_sequences=True))]:
        y = layer(y)
        assert get_mask(y) is not None, layer
        np.testing.assert_array_equal(run(get_mask(y), {inp: IDS}), IDS != 0)
    assert get_mask(L.LSTM(3)(y)) is None
    assert get_mask(L.GlobalAveragePooling1D()(y)) is None
    assert m0 is not None


def test_merge_masks_follow_keras3():
    inp, x = _embedded(dim=2)
    inp2 = L.Input((None,), dtype="int32")
    x2 = L.Embedding(10, 2, mask_zero=True)(inp2)
    feed = {inp: IDS, inp2: IDS[::-1]}
    both = (IDS != 0) | (IDS[::-1] != 0)
    for layer in (L.Add(), L.Subtract(), L.Multiply(), L.Average(), L.Maximum(),
                  L.Minimum()):
        np.testing.assert_array_equal(run(get_mask(layer([x, x2])), feed), both)
    # Not every input masked: no mask (Keras 3).
    assert get_mask(L.Add()([x, L.Dense(2)(x)])) is not None  # Dense keeps x's mask
    assert get_mask(L.Add()([L.Dense(2)(L.Input((None, 2))), x])) is None
    # Concatenate on the features: the OR; on the time axis: the masks side by side.
    np.testing.assert_array_equal(run(get_mask(L.Concatenate()([x, x2])), feed), both)
    cat_t = L.Concatenate(axis=1)([x, x2])
    np.testing.assert_array_equal(run(get_mask(cat_t), feed),
                                  np.concatenate([IDS != 0, IDS[::-1] != 0], 1))
    np.testing.assert_array_equal(run(get_mask(L.Concatenate(axis=-2)([x, x2])), feed),
                                  np.concatenate([IDS != 0, IDS[::-1] != 0], 1))


def test_maximum_and_multiply_skip_masked_entries():
    inp, x = _embedded(dim=2)
    inp2 = L.Input((None,), dtype="int32")
    emb2 = L.Embedding(10, 2, mask_zero=True)
    x2 = emb2(inp2)
    feed = {inp: IDS, inp2: IDS[::-1]}
    backend.ensure_initialized(emb2.weights + _last_embedding[0].weights)
    outs = run([L.Maximum()([x, x2]), L.Multiply()([x, x2]), x, x2], feed)
    mx, mul, a, b = outs
    ma, mb = (IDS != 0)[..., None], (IDS[::-1] != 0)[..., None]
    # A masked entry takes the other's value (both masked: the first's).
    ref_max = np.where(ma & mb, np.maximum(a, b), np.where(mb, b, a))
    np.testing.assert_allclose(mx, ref_max, rtol=1e-6)
    ref_mul = np.where(ma, a, 1) * np.where(mb, b, 1) * (ma | mb)
    np.testing.assert_allclose(mul, ref_mul, rtol=1e-6)


def _seq_model():
    ml.set_random_seed(1)
    inp = L.Input((None,), dtype="int32")
    x = L.Embedding(10, 4, mask_zero=True)(inp)
    x = L.Bidirectional(L.LSTM(3, return_sequences=True))(x)
    x = L.TimeDistributed(L.Dense(2, activation="tanh"))(x)
    out = L.Dense(1)(L.GlobalAveragePooling1D()(x))
    return ml.Model(inp, out)


def test_bidirectional_and_time_distributed_results_ignore_padding():
    model = _seq_model()
    seqs = [[1, 2, 3], [4, 5], [6, 7, 8, 9]]
    padded = np.zeros((3, 7), np.int32)
    for i, s in enumerate(seqs):
        padded[i, :len(s)] = s
    got = model.predict(padded, verbose=0)
    for i, s in enumerate(seqs):
        alone = model.predict(np.array([s], np.int32), verbose=0)
        np.testing.assert_allclose(got[i], alone[0], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------ masked losses and metrics
def _zero_model(recurrent=False):
    """Predicts 0 at every step (zero weights), with the mask of `Embedding`."""
    ml.set_random_seed(0)
    inp = L.Input((None,), dtype="int32")
    x = L.Embedding(10, 2, mask_zero=True, embeddings_initializer="zeros")(inp)
    if recurrent:
        x = L.LSTM(3, return_sequences=True)(x)
    out = L.TimeDistributed(L.Dense(1, kernel_initializer="zeros"))(x)
    return ml.Model(inp, out)


def test_masked_mse_and_mae_in_evaluate():
    ids = np.array([[1, 2, 0], [3, 0, 0]])
    # Valid steps: targets 2, 0, 0 against predictions 0 -> MSE 4/3, MAE 2/3. The
    # padded steps' targets (9, 7, 7) must not count.
    y = np.array([[[2.0], [0.0], [9.0]], [[0.0], [7.0], [7.0]]], np.float32)
    model = _zero_model()
    model.compile("sgd", "mse", metrics=["mae"])
    loss, mae = model.evaluate(ids, y, batch_size=8, verbose=0)
    np.testing.assert_allclose([loss, mae], [4 / 3, 2 / 3], rtol=1e-6)
    out = model.evaluate(ids, y, batch_size=8, verbose=0, return_dict=True)
    np.testing.assert_allclose(out["mean_absolute_error" if "mean_absolute_error" in out
                                   else "mae"], 2 / 3, rtol=1e-6)


def test_masked_loss_and_metrics_match_numpy_on_predictions():
    rs = np.random.RandomState(0)
    ids = rs.randint(1, 10, size=(6, 5))
    for i, n in enumerate([5, 3, 1, 4, 2, 5]):
        ids[i, n:] = 0
    y = rs.randn(6, 5, 1).astype(np.float32)
    model = _zero_model(recurrent=True)
    model.layers[-1].layer.set_weights([rs.randn(3, 1).astype(np.float32),
                                        np.array([0.3], np.float32)])
    model.layers[1].set_weights([rs.randn(10, 2).astype(np.float32)])
    model.compile("sgd", "mse", metrics=["mae", ml.metrics.MeanSquaredError(name="m2")],
                  weighted_metrics=["mae"])
    p = model.predict(ids, verbose=0)
    mask = ids != 0
    err = (p - y)[..., 0]
    res = model.evaluate(ids, y, batch_size=6, verbose=0, return_dict=True)
    np.testing.assert_allclose(res["loss"], (err ** 2)[mask].mean(), rtol=1e-5)
    np.testing.assert_allclose(res["m2"], (err ** 2)[mask].mean(), rtol=1e-5)
    maes = [v for k, v in res.items() if "mae" in k or "absolute" in k]
    np.testing.assert_allclose(maes, np.abs(err)[mask].mean(), rtol=1e-5)
    # Sample weights: Keras 3 sums loss * weight * mask and divides by the unmasked
    # count; weighted metrics are the weight-and-mask-weighted mean.
    sw = rs.rand(6).astype(np.float32) + 0.5
    res = model.evaluate(ids, y, sample_weight=sw, batch_size=6, verbose=0,
                         return_dict=True)
    w = sw[:, None] * mask
    np.testing.assert_allclose(res["loss"], ((err ** 2) * w).sum() / mask.sum(), rtol=1e-5)
    np.testing.assert_allclose(res["weighted_mae"], (np.abs(err) * w).sum() / w.sum(),
                               rtol=1e-5)
    np.testing.assert_allclose(res["mae"], np.abs(err)[mask].mean(), rtol=1e-5)


def test_padded_targets_do_not_change_training():
    rs = np.random.RandomState(1)
    ids = rs.randint(1, 10, size=(8, 4))
    ids[:, 3:] = 0
    ids[:4, 2:] = 0
    y = rs.randn(8, 4, 1).astype(np.float32)
    y2 = y.copy()
    y2[ids == 0] = 100.0  # only padded steps differ
    hists, weights, init = [], [], None
    for target in (y, y2):
        model = _zero_model(recurrent=True)
        if init is None:
            model.layers[1].set_weights([rs.randn(10, 2).astype(np.float32)])
            init = model.get_weights()
        model.set_weights(init)  # the same start for both
        model.compile(ml.optimizers.SGD(0.1), "mse", metrics=["mae"])
        hists.append(model.fit(ids, target, batch_size=4, epochs=3, verbose=0,
                               shuffle=False).history)
        weights.append(model.get_weights())
    np.testing.assert_allclose(hists[0]["loss"], hists[1]["loss"], rtol=1e-5)
    np.testing.assert_allclose(hists[0]["mae"], hists[1]["mae"], rtol=1e-5)
    for a, b in zip(*weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert hists[0]["loss"][-1] < hists[0]["loss"][0]


# ------------------------------------------------------------ a masked text classifier
def test_masked_text_classifier_trains_and_ignores_extra_padding():
    rs = np.random.RandomState(0)
    n, T = 256, 10
    X = rs.randint(2, 20, size=(n, T))
    lengths = rs.randint(2, T + 1, size=n)
    X[np.arange(T)[None, :] >= lengths[:, None]] = 0
    y = (((X >= 2) & (X < 8)).sum(1) > ((X >= 8).sum(1))).astype(np.float32)
    ml.set_random_seed(0)
    model = ml.Sequential([L.Input((None,), dtype="int32"),
                           L.Embedding(20, 8, mask_zero=True),
                           L.GlobalAveragePooling1D(),
                           L.Dense(1, activation="sigmoid")])
    model.compile(ml.optimizers.Adam(0.05), "binary_crossentropy", metrics=["accuracy"])
    h = model.fit(X, y, batch_size=64, epochs=6, verbose=0)
    assert h.history["loss"][-1] < 0.7 * h.history["loss"][0]
    p = model.predict(X, verbose=0)
    more = np.concatenate([X, np.zeros((n, 7), X.dtype)], axis=1)
    np.testing.assert_allclose(model.predict(more, verbose=0), p, rtol=1e-5, atol=1e-6)


def test_masked_sparse_crossentropy_and_accuracy_per_step():
    rs = np.random.RandomState(0)
    ids = rs.randint(1, 10, size=(6, 5))
    for i, n in enumerate([5, 3, 1, 4, 2, 5]):
        ids[i, n:] = 0
    mask = ids != 0
    yc = rs.randint(0, 4, size=(6, 5))
    ml.set_random_seed(0)
    inp = L.Input((None,), dtype="int32")
    x = L.Embedding(10, 4, mask_zero=True)(inp)
    out = L.Dense(4, activation="softmax")(L.GRU(5, return_sequences=True)(x))
    model = ml.Model(inp, out)
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    p = model.predict(ids, verbose=0)
    ce = -np.log(np.take_along_axis(p, yc[..., None], -1)[..., 0])
    loss, acc = model.evaluate(ids, yc, batch_size=6, verbose=0)
    np.testing.assert_allclose(loss, ce[mask].mean(), rtol=1e-5)
    np.testing.assert_allclose(acc, (p.argmax(-1) == yc)[mask].mean(), rtol=1e-6)


def test_mask_as_long_as_a_2d_output_weighs_samples():
    # A [batch, T] output carrying a [batch, T] mask: per-sample losses and metrics
    # (MSE/MAE average the last axis); a sample counts when any of its steps does.
    rs = np.random.RandomState(0)
    ids = np.array([[1, 2, 0], [0, 0, 0], [3, 4, 5]])
    inp = L.Input((3,), dtype="int32")
    x = L.Embedding(10, 1, mask_zero=True)(inp)
    sq = L.Lambda(lambda t: ml.squeeze(t, -1), mask=lambda t, mk: mk)(x)
    assert get_mask(sq) is not None
    model = ml.Model(inp, sq)
    model.compile("sgd", "mse", metrics=["mae"])
    y = rs.randn(3, 3).astype(np.float32)
    p = model.predict(ids, verbose=0)
    loss, mae = model.evaluate(ids, y, batch_size=3, verbose=0)
    keep = np.array([True, False, True])
    np.testing.assert_allclose(loss, ((p - y) ** 2).mean(1)[keep].mean(), rtol=1e-5)
    np.testing.assert_allclose(mae, np.abs(p - y)[keep].mean(), rtol=1e-5)


def test_batch_normalization_statistics_skip_masked_steps():
    rs = np.random.RandomState(0)
    x = rs.randn(3, 4, 2).astype(np.float32) + 1.0
    m = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1]], bool)
    bn = L.BatchNormalization(momentum=0.0)
    y = bn(x, training=True, mask=m)
    mean, var = x[m].mean(0), x[m].var(0)
    np.testing.assert_allclose(bn.get_weights()[2], mean, rtol=1e-5)
    np.testing.assert_allclose(bn.get_weights()[3], var, rtol=1e-5)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-5, atol=1e-5)
    # In a model: Embedding(mask_zero) -> BatchNormalization keeps the mask.
    _, e = _embedded()
    assert get_mask(L.BatchNormalization()(e)) is not None
