"""Identity, UnitNormalization, Attention, AdditiveAttention and SeparableConv2D
against Keras 3 (jax backend): outputs with the same weights, masks, causal masks,
configs, save/load."""

import os

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib.layers.base import get_mask

keras = pytest.importorskip("keras")

rs = np.random.RandomState(5)


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=tol, atol=tol)


def _same(ours, theirs, x, tol=1e-5, **kw):
    theirs(x, **kw)
    ws = [np.asarray(rs.randn(*np.shape(w)) * 0.5, np.float32) for w in theirs.get_weights()]
    theirs.set_weights(ws)
    ours(x, **kw)
    ours.set_weights(ws)
    got, want = ours(x, **kw), theirs(x, **kw)
    if isinstance(want, (tuple, list)):
        for g, w in zip(got, want):
            _close(g, w, tol)
    else:
        _close(got, want, tol)
    return got


def test_identity_and_unit_normalization_match_keras():
    x = rs.randn(3, 4, 5).astype(np.float32)
    _close(L.Identity()(x), x)
    for axis in (-1, 1, [1, 2]):
        _close(L.UnitNormalization(axis)(x), keras.layers.UnitNormalization(axis)(x))
    z = np.zeros((2, 3), np.float32)
    _close(L.UnitNormalization()(z), keras.layers.UnitNormalization()(z))
    with pytest.raises(TypeError, match="axis"):
        L.UnitNormalization(axis="x")


Q = rs.randn(2, 3, 4).astype(np.float32)
V = rs.randn(2, 5, 4).astype(np.float32)
K = rs.randn(2, 5, 4).astype(np.float32)
QM = np.array([[True, True, False], [True, False, True]])
VM = np.array([[True, True, True, False, False], [True, False, True, True, True]])


@pytest.mark.parametrize("cls,kw", [("Attention", {}), ("Attention", {"use_scale": True}),
                                    ("Attention", {"score_mode": "concat"}),
                                    ("Attention", {"score_mode": "concat", "use_scale": True}),
                                    ("AdditiveAttention", {}),
                                    ("AdditiveAttention", {"use_scale": False})])
@pytest.mark.parametrize("call", [{}, {"mask": [QM, VM]}, {"use_causal_mask": True},
                                  {"mask": [None, VM], "return_attention_scores": True}])
def test_attention_layers_match_keras(cls, kw, call):
    inputs = [Q, V, K]
    _same(getattr(L, cls)(**kw), getattr(keras.layers, cls)(**kw), inputs, **call)


def test_attention_takes_masks_from_its_inputs_and_passes_the_query_mask():
    ids_q = np.array([[1, 2, 0], [3, 0, 0]])
    ids_v = np.array([[4, 5, 6, 0], [1, 0, 0, 0]])
    qi, vi = L.Input((3,), dtype="int32"), L.Input((4,), dtype="int32")
    emb = L.Embedding(8, 4, mask_zero=True)
    att = L.Attention()([emb(qi), emb(vi)])
    assert get_mask(att) is not None
    model = ml.Model([qi, vi], att)
    kqi, kvi = keras.Input((3,), dtype="int32"), keras.Input((4,), dtype="int32")
    kemb = keras.layers.Embedding(8, 4, mask_zero=True)
    km = keras.Model([kqi, kvi], keras.layers.Attention()([kemb(kqi), kemb(kvi)]))
    km.set_weights([rs.randn(8, 4).astype(np.float32)])
    model.set_weights(km.get_weights())
    _close(model.predict([ids_q, ids_v], verbose=0), km.predict([ids_q, ids_v], verbose=0))


def test_attention_errors_and_config():
    with pytest.raises(ValueError, match="score_mode"):
        L.Attention(score_mode="bad")
    with pytest.raises(ValueError, match="list of inputs"):
        L.Attention()(Q)
    for layer in (L.Attention(use_scale=True, score_mode="concat", dropout=0.1, seed=3),
                  L.AdditiveAttention(use_scale=False, dropout=0.2)):
        cfg = layer.get_config()
        again = type(layer).from_config(cfg)
        assert again.get_config() == {**cfg, "name": again.name}
        kcfg = {k: v for k, v in cfg.items() if k not in ("name", "trainable", "dtype")}
        assert getattr(keras.layers, type(layer).__name__)(**kcfg).get_config().keys() >= \
            kcfg.keys()


@pytest.mark.parametrize("kw", [{"filters": 5, "kernel_size": 3},
                                {"filters": 4, "kernel_size": (3, 2), "strides": 2,
                                 "padding": "same", "depth_multiplier": 2,
                                 "activation": "relu"},
                                {"filters": 3, "kernel_size": 2, "dilation_rate": 2,
                                 "use_bias": False, "data_format": "channels_first"}])
def test_separable_conv2d_matches_keras(kw):
    x = rs.randn(2, 7, 6, 3).astype(np.float32)
    _same(L.SeparableConv2D(**kw), keras.layers.SeparableConv2D(**kw), x, 1e-4)
    ours = L.SeparableConv2D(**kw)
    theirs = keras.layers.SeparableConv2D(**kw)
    assert ours.compute_output_shape((2, 7, 6, 3)) == theirs.compute_output_shape((2, 7, 6, 3))


def test_save_and_load_round_trip(tmp_path):
    img = L.Input((4, 4, 3))
    h = L.SeparableConv2D(4, 3, padding="same", activation="relu")(img)
    h = L.Reshape((16, 4))(h)
    h = L.Attention(use_scale=True)([h, h])
    h = L.AdditiveAttention()([h, h])
    out = L.UnitNormalization()(L.Identity()(L.GlobalAveragePooling1D()(h)))
    model = ml.Model(img, out)
    x = rs.randn(2, 4, 4, 3).astype(np.float32)
    want = model.predict(x, verbose=0)
    path = os.path.join(tmp_path, "m.mylib")
    model.save(path)
    with ml.Graph().as_default():
        again = ml.models.load_model(path)
        _close(again.predict(x, verbose=0), want)


@pytest.mark.parametrize("cls,kw", [
    ("SeparableConv1D", {"filters": 4, "kernel_size": 3}),
    ("SeparableConv1D", {"filters": 3, "kernel_size": 2, "strides": 2, "padding": "same",
                         "depth_multiplier": 2, "dilation_rate": 1, "activation": "tanh"}),
    ("DepthwiseConv1D", {"kernel_size": 3, "depth_multiplier": 2}),
    ("DepthwiseConv1D", {"kernel_size": 2, "dilation_rate": 2, "padding": "same",
                         "use_bias": False, "data_format": "channels_first"})])
def test_1d_separable_and_depthwise_conv_match_keras(cls, kw):
    x = rs.randn(2, 9, 3).astype(np.float32)
    _same(getattr(L, cls)(**kw), getattr(keras.layers, cls)(**kw), x, 1e-4)
    assert getattr(L, cls)(**kw).compute_output_shape((2, 9, 3)) == \
        getattr(keras.layers, cls)(**kw).compute_output_shape((2, 9, 3))


@pytest.mark.parametrize("cls,arg", [("ZeroPadding3D", {}), ("ZeroPadding3D", {"padding": 2}),
                                     ("ZeroPadding3D", {"padding": ((1, 0), (0, 2), (1, 1)),
                                                        "data_format": "channels_first"}),
                                     ("Cropping3D", {}), ("Cropping3D", {"cropping": (1, 0, 2)}),
                                     ("Cropping3D", {"cropping": ((0, 1), (1, 1), (2, 0)),
                                                     "data_format": "channels_first"})])
def test_3d_padding_and_cropping_match_keras(cls, arg):
    x = rs.randn(2, 5, 6, 7, 3).astype(np.float32)
    _close(getattr(L, cls)(**arg)(x), getattr(keras.layers, cls)(**arg)(x))
