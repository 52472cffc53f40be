"""Rescaling, Normalization (adapt on arrays, batches and mylib Datasets) and
CategoryEncoding against Keras 3 (jax backend): outputs, adapt statistics, configs, use
inside a model graph and in Dataset.map, save/load."""

import os

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L

keras = pytest.importorskip("keras")

rs = np.random.RandomState(1)
X = (rs.randn(64, 3, 4) * [[1.0, 2.0, 5.0, 0.5]] + [[3.0, -1.0, 0.0, 10.0]]).astype(np.float32)


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("scale,offset", [(1 / 255, 0.0), (1 / 127.5, -1.0),
                                          ([1.0, 2.0, 3.0, 4.0], [0.5, 0.0, -1.0, 2.0])])
def test_rescaling_matches_keras(scale, offset):
    x = rs.randint(0, 256, (5, 3, 4)).astype(np.uint8)
    _close(L.Rescaling(scale, offset)(x), keras.layers.Rescaling(scale, offset)(x))
    cfg = L.Rescaling(scale, offset).get_config()
    _close(L.Rescaling.from_config(cfg)(x), keras.layers.Rescaling(scale, offset)(x))


@pytest.mark.parametrize("axis", [-1, None, (1, 2), 1])
def test_normalization_adapt_matches_keras(axis):
    ours, theirs = L.Normalization(axis=axis), keras.layers.Normalization(axis=axis)
    ours.adapt(X)
    theirs.adapt(X)
    _close(ours(X), theirs(X), 1e-4)
    got = ours.get_weights()
    want = theirs.get_weights()
    assert [(w.shape, w.dtype) for w in got] == [(w.shape, w.dtype) for w in want]
    _close(got[0], want[0], 1e-5)  # mean
    _close(got[1], want[1], 1e-4)  # population variance
    _close(got[1], X.var(axis=tuple(d for d in range(3) if d not in
                                      ((2,) if axis == -1 else () if axis is None else
                                       (axis,) if isinstance(axis, int) else axis))).ravel()
           .reshape(got[1].shape), 1e-4)


def test_normalization_adapt_over_batches_and_datasets():
    # Keras 3 combines batches with a running formula whose result is the mean and the
    # population variance of all the data (its batch path needs TensorFlow, so the
    # reference here is numpy over the whole array).
    batches = [X[:10], X[10:37], X[37:]]
    want_mean, want_var = X.reshape(-1, 4).mean(0), X.reshape(-1, 4).var(0)
    for data in (batches, iter(batches), ml.data.Dataset.from_tensor_slices(X).batch(10),
                 ml.data.Dataset.from_tensor_slices((X, np.zeros(64))).batch(7)):
        ours = L.Normalization()
        ours.adapt(data)
        _close(ours.get_weights()[0], want_mean, 1e-5)
        _close(ours.get_weights()[1], want_var, 1e-4)
    # A dataset of single samples (1-D elements) is batched first, as Keras does.
    ours = L.Normalization()
    ours.adapt(ml.data.Dataset.from_tensor_slices(X.reshape(-1, 4)))
    _close(ours.get_weights()[1], want_var, 1e-4)
    ours = L.Normalization()
    ours.adapt(ml.data.Dataset.from_tensor_slices(X).batch(10), steps=2)
    _close(ours.get_weights()[0], X[:20].reshape(-1, 4).mean(0), 1e-5)


def test_normalization_given_stats_and_invert_match_keras():
    mean, var = [1.0, 2.0, 3.0, 4.0], [4.0, 1.0, 0.25, 9.0]
    for invert in (False, True):
        _close(L.Normalization(mean=mean, variance=var, invert=invert)(X),
               keras.layers.Normalization(mean=mean, variance=var, invert=invert)(X))
    _close(L.Normalization(axis=None, mean=2.0, variance=3.0)(X),
           keras.layers.Normalization(axis=None, mean=2.0, variance=3.0)(X))
    ours = L.Normalization(invert=True)
    ours.adapt(X)
    theirs = keras.layers.Normalization(invert=True)
    theirs.adapt(X)
    _close(ours(X[:3]), theirs(X[:3]), 1e-4)


def test_normalization_errors():
    with pytest.raises(ValueError, match="both `mean` and `variance`"):
        L.Normalization(mean=1.0)
    with pytest.raises(ValueError, match="same shape"):
        L.Normalization(mean=[1.0, 2.0], variance=[1.0])
    n = L.Normalization()
    n.adapt(X)
    with pytest.raises(ValueError, match="incompatible shape"):
        n.adapt(rs.randn(5, 3, 7))
    before = n.get_weights()
    with pytest.raises(ValueError, match="cannot be adapted"):
        L.Normalization(mean=1.0, variance=1.0).adapt(X)
    _close(n.get_weights()[0], before[0], 0)


@pytest.mark.parametrize("mode", ["one_hot", "multi_hot", "count"])
@pytest.mark.parametrize("shape", [(6,), (6, 1), (6, 3), (2, 3, 4)])
def test_category_encoding_matches_keras(mode, shape):
    ids = rs.randint(0, 5, shape)
    got = L.CategoryEncoding(5, output_mode=mode)(ids)
    if len(shape) <= 2 or mode == "one_hot":
        _close(got, keras.layers.CategoryEncoding(5, output_mode=mode)(ids))
    # numpy reference: multi_hot / count reduce the last axis (for rank > 2 Keras 3 on
    # JAX reduces axis 1 instead, against its own compute_output_shape; see the docs).
    hot = (ids[..., None] == np.arange(5)).astype(np.float32)
    if mode == "one_hot":
        want = hot[..., 0, :] if len(shape) > 1 and shape[-1] == 1 else hot
    else:
        want = hot.max(-2) if mode == "multi_hot" else hot.sum(-2)
    _close(got, want)


def test_category_encoding_count_weights_and_errors():
    ids = rs.randint(0, 4, (5, 3))
    w = rs.rand(5, 3).astype(np.float32)
    _close(L.CategoryEncoding(4, "count")(ids, count_weights=w),
           keras.layers.CategoryEncoding(4, "count")(ids, count_weights=w))
    with pytest.raises(ValueError, match="count_weights"):
        L.CategoryEncoding(4, "multi_hot")(ids, count_weights=w)
    with pytest.raises(ValueError, match="num_tokens"):
        L.CategoryEncoding()
    with pytest.raises(ValueError, match="output_mode"):
        L.CategoryEncoding(3, output_mode="nope")
    # a Python list works as in Keras
    _close(L.CategoryEncoding(4)([[0, 1], [3, 3]]),
           keras.layers.CategoryEncoding(4)(np.array([[0, 1], [3, 3]])))


def test_numeric_preprocessing_inside_a_model_trains_and_round_trips(tmp_path):
    n = 512
    num = (rs.randn(n, 2) * [50.0, 0.01] + [1000.0, 0.0]).astype(np.float32)
    cat = rs.randint(0, 4, (n, 1))
    y = (((num[:, :1] - 1000.0) / 50.0 + (cat == 2)) > 0.5).astype(np.float32)
    norm = L.Normalization()
    norm.adapt(num)
    a, b = L.Input((2,)), L.Input((1,), dtype="int32")
    h = L.Concatenate()([norm(a), L.CategoryEncoding(4, "one_hot")(b)])
    out = L.Dense(1, activation="sigmoid")(L.Dense(8, activation="relu")(h))
    model = ml.Model([a, b], out)
    model.compile(optimizer=ml.optimizers.Adam(0.02), loss="binary_crossentropy",
                  metrics=["accuracy"])
    hist = model.fit([num, cat], y, epochs=20, batch_size=64, verbose=0)
    assert hist.history["accuracy"][-1] > 0.9
    # The adapted statistics are weights: fit leaves them alone, save/load carries them.
    _close(norm.get_weights()[0], num.mean(0), 1e-3)
    want = model.predict([num[:8], cat[:8]], verbose=0)
    path = os.path.join(tmp_path, "m.mylib")
    model.save(path)
    with ml.Graph().as_default():
        again = ml.models.load_model(path)
        _close(again.predict([num[:8], cat[:8]], verbose=0), want)


def test_preprocessing_in_dataset_map():
    norm = L.Normalization()
    norm.adapt(X)
    resc = L.Rescaling(2.0, 1.0)
    ds = ml.data.Dataset.from_tensor_slices(X).batch(16).map(lambda x: resc(norm(x)))
    got = np.concatenate(list(ds))
    theirs = keras.layers.Normalization()
    theirs.adapt(X)
    _close(got, np.asarray(theirs(X)) * 2.0 + 1.0, 1e-4)
