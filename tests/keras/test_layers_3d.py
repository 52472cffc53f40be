"""Volumetric layers (Conv3D, Conv3DTranspose, 3-D pooling, UpSampling3D,
SpatialDropout3D), Conv1DTranspose, RMSNormalization and AlphaDropout against Keras 3 (JAX backend) on the same
weights: one call, two epochs of SGD (losses and weights), model files; the tf.nn ops
against Keras's ops, their gradients against jax.grad of Keras's ops."""

import jax
import jax.numpy as jnp
import keras
import numpy as np
import pytest
from keras import ops as kops

import mylib as ml
from mylib import layers as L

from keras_compare import _same_layer
from layer_fit_compare import fit_like_keras

RS = np.random.RandomState(11)
V = RS.randn(2, 5, 6, 7, 3).astype(np.float32)        # [batch, d, h, w, c]
S = RS.randn(3, 7, 4).astype(np.float32)               # [batch, steps, c]


def _pair(name, kw):
    return getattr(L, name)(**kw), getattr(keras.layers, name)(**kw)


# ---------------------------------------------------------------- one call
CONV3D = [dict(filters=4, kernel_size=3),
          dict(filters=2, kernel_size=(2, 3, 2), strides=2, padding="same"),
          dict(filters=3, kernel_size=2, strides=(1, 2, 3), activation="relu"),
          dict(filters=2, kernel_size=2, dilation_rate=(2, 1, 2), use_bias=False),
          dict(filters=4, kernel_size=3, padding="same", groups=3 // 3),
          dict(filters=2, kernel_size=2, data_format="channels_first")]


@pytest.mark.parametrize("kw", CONV3D)
def test_conv3d(kw):
    _same_layer(*_pair("Conv3D", kw), V, 1e-4, 1e-5)


def test_conv3d_groups():
    x = RS.randn(2, 4, 4, 4, 4).astype(np.float32)
    _same_layer(*_pair("Conv3D", dict(filters=6, kernel_size=2, groups=2)), x, 1e-4, 1e-5)


CONV1DT = [dict(filters=3, kernel_size=3),
           dict(filters=2, kernel_size=3, strides=2),
           dict(filters=2, kernel_size=4, strides=3, padding="same"),
           dict(filters=2, kernel_size=3, strides=2, output_padding=1),
           dict(filters=2, kernel_size=3, strides=3, padding="same", output_padding=2),
           dict(filters=2, kernel_size=3, dilation_rate=2),
           dict(filters=2, kernel_size=2, dilation_rate=2, padding="same"),
           dict(filters=2, kernel_size=3, strides=2, data_format="channels_first",
                use_bias=False)]


@pytest.mark.parametrize("kw", CONV1DT)
def test_conv1d_transpose(kw):
    ours, theirs = _pair("Conv1DTranspose", kw)
    got, _ = _same_layer(ours, theirs, S, 1e-4, 1e-5)
    shape = (None,) + S.shape[1:]
    assert tuple(ours.compute_output_shape(shape)) == tuple(theirs.compute_output_shape(shape))


CONV3DT = [dict(filters=2, kernel_size=3),
           dict(filters=2, kernel_size=(2, 3, 2), strides=2, padding="same"),
           dict(filters=3, kernel_size=2, strides=(1, 2, 3), output_padding=(0, 1, 2)),
           dict(filters=2, kernel_size=2, dilation_rate=(1, 2, 1))]


@pytest.mark.parametrize("kw", CONV3DT)
def test_conv3d_transpose(kw):
    _same_layer(*_pair("Conv3DTranspose", kw), V, 1e-4, 1e-5)


@pytest.mark.parametrize("kw", [dict(filters=2, kernel_size=3, strides=2, output_padding=1),
                                dict(filters=2, kernel_size=3, dilation_rate=2)])
def test_conv2d_transpose_output_padding_and_dilation(kw):
    x = RS.randn(2, 5, 6, 3).astype(np.float32)
    _same_layer(*_pair("Conv2DTranspose", kw), x, 1e-4, 1e-5)


POOL3D = [dict(pool_size=2), dict(pool_size=3, strides=2), dict(pool_size=(2, 3, 2), padding="same"),
          dict(pool_size=2, strides=(1, 2, 3), padding="same"),
          dict(pool_size=2, data_format="channels_first")]


@pytest.mark.parametrize("name", ["MaxPooling3D", "AveragePooling3D"])
@pytest.mark.parametrize("kw", POOL3D)
def test_pooling3d(name, kw):
    _same_layer(*_pair(name, kw), V)


@pytest.mark.parametrize("name", ["GlobalMaxPooling3D", "GlobalAveragePooling3D"])
@pytest.mark.parametrize("kw", [dict(), dict(keepdims=True),
                                dict(data_format="channels_first")])
def test_global_pooling3d(name, kw):
    _same_layer(*_pair(name, kw), V)


@pytest.mark.parametrize("kw", [dict(), dict(size=(1, 2, 3)),
                                dict(size=2, data_format="channels_first")])
def test_upsampling3d(kw):
    ours, theirs = _pair("UpSampling3D", kw)
    _same_layer(ours, theirs, V)
    shape = (None,) + V.shape[1:]
    assert tuple(ours.compute_output_shape(shape)) == tuple(theirs.compute_output_shape(shape))


def test_aliases():
    assert L.Convolution3D is L.Conv3D and L.Convolution1DTranspose is L.Conv1DTranspose
    assert L.Convolution2DTranspose is L.Conv2DTranspose
    assert L.MaxPool3D is L.MaxPooling3D and L.AvgPool3D is L.AveragePooling3D
    assert L.GlobalMaxPool3D is L.GlobalMaxPooling3D
    assert L.GlobalAvgPool3D is L.GlobalAveragePooling3D
    for n in ("Conv3D", "Convolution3D", "Conv1DTranspose", "Convolution1DTranspose",
              "Convolution2DTranspose", "Conv3DTranspose", "MaxPool3D", "AvgPool3D",
              "GlobalMaxPool3D", "GlobalAvgPool3D", "UpSampling3D", "SpatialDropout3D"):
        assert getattr(ml.keras.layers, n) is getattr(L, n)


# ---------------------------------------------------------------- fit and save
FIT = {
    "conv3d": (lambda lib: lib.layers.Conv3D(3, 2, strides=(1, 2, 2), activation="relu"), V),
    "conv3d_transpose": (lambda lib: lib.layers.Conv3DTranspose(2, 2, strides=2,
                                                                padding="same"), V[:, :3, :3, :3]),
    "conv1d_transpose": (lambda lib: lib.layers.Conv1DTranspose(3, 3, strides=2,
                                                                output_padding=1), S),
    "max_pool3d": (lambda lib: lib.layers.MaxPooling3D(2, padding="same"), V),
    "avg_pool3d": (lambda lib: lib.layers.AveragePooling3D((2, 3, 2), strides=2), V),
    "global_max3d": (lambda lib: lib.layers.GlobalMaxPooling3D(), V),
    "global_avg3d": (lambda lib: lib.layers.GlobalAveragePooling3D(keepdims=True), V),
    "upsampling3d": (lambda lib: lib.layers.UpSampling3D((1, 2, 1)), V[:, :3, :3, :3]),
}


@pytest.mark.parametrize("name", sorted(FIT))
def test_fit_two_epochs_and_save_like_keras(name, tmp_path):
    make, x = FIT[name]
    x = np.concatenate([x, x[::-1] * 0.5, x * -1.5, x + 0.1])  # 8 samples
    y = np.random.RandomState(1).randn(len(x), 2).astype(np.float32)
    fit_like_keras(lambda: make(ml), lambda: make(keras), x, y, tmp_path=tmp_path)


def test_configs_round_trip():
    for layer in (L.Conv3D(2, 3, strides=2, padding="same", groups=1),
                  L.Conv1DTranspose(2, 3, output_padding=0),
                  L.Conv3DTranspose(2, 3, strides=2, output_padding=1),
                  L.MaxPooling3D(3, 2, "same"), L.GlobalAveragePooling3D(keepdims=True),
                  L.UpSampling3D(3), L.SpatialDropout3D(0.2, seed=3)):
        cfg = layer.get_config()
        clone = type(layer).from_config(cfg)
        assert clone.get_config() == cfg


# ---------------------------------------------------------------- SpatialDropout3D
def test_spatial_dropout3d_drops_whole_channels():
    layer = L.SpatialDropout3D(0.4, seed=5)
    x = np.ones((64, 2, 3, 2, 8), np.float32)
    assert np.array_equal(np.asarray(layer(x)), x)  # inference: the identity
    y = np.asarray(layer(x, training=True))
    per_map = y.reshape(64, 12, 8)
    # each (sample, channel) map is all dropped or all kept, kept ones scaled
    assert np.all(per_map.min(1) == per_map.max(1))
    np.testing.assert_allclose(per_map[per_map > 0], 1 / 0.6, rtol=1e-6)
    kept = (per_map[:, 0] > 0).mean()
    assert abs(kept - 0.6) < 4 * np.sqrt(0.24 / 512)
    cf = np.asarray(L.SpatialDropout3D(0.5, data_format="channels_first", seed=1)(
        np.ones((16, 4, 2, 2, 3), np.float32), training=True)).reshape(16, 4, 12)
    assert np.all(cf.min(2) == cf.max(2))


# ---------------------------------------------------------------- tf.nn ops
def _run(*ts):
    with ml.Session() as s:
        return s.run(list(ts))


def _grads_match(ours, ref, args, rtol=1e-4, atol=1e-5):
    """Forward values and d sum(out**2) / d args against `ref` (jax functions)."""
    ph = [ml.constant(a) for a in args]
    y = ours(*ph)
    gs = ml.gradients(ml.reduce_sum(ml.square(y)), ph)
    got = _run(y, *gs)
    want = ref(*args)
    np.testing.assert_allclose(got[0], want, rtol=rtol, atol=atol)
    wg = jax.grad(lambda *a: jnp.sum(jnp.square(ref(*a))), argnums=tuple(range(len(args))))(
        *args)
    for g, w in zip(got[1:], wg):  # float32 sums of ~1e2 terms: atol relative to the scale
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * max(1.0, np.abs(w).max()))


@pytest.mark.parametrize("strides,padding,dil", [(1, "VALID", 1), (2, "SAME", 1),
                                                 ((1, 2, 1), "VALID", (2, 1, 1))])
def test_nn_conv3d(strides, padding, dil):
    w = RS.randn(2, 3, 2, 3, 4).astype(np.float32)
    _grads_match(lambda x, k: ml.nn.conv3d(x, k, strides=strides, padding=padding,
                                           dilations=dil),
                 lambda x, k: kops.conv(x, k, strides, padding.lower(), dilation_rate=dil),
                 [V, w])


def test_nn_conv3d_tf_forms():
    w = RS.randn(2, 2, 2, 3, 2).astype(np.float32)
    a = ml.nn.conv3d(V, filter=w, strides=[1, 2, 2, 2, 1], padding="SAME")
    b = ml.nn.conv3d(np.transpose(V, (0, 4, 1, 2, 3)), w, strides=2, padding="SAME",
                     data_format="NCDHW")
    ga, gb = _run(a, b)
    np.testing.assert_allclose(ga, np.asarray(kops.conv(V, w, 2, "same")), 1e-4, 1e-5)
    np.testing.assert_allclose(np.transpose(gb, (0, 2, 3, 4, 1)), ga, 1e-4, 1e-5)
    assert a.shape.as_list() == [2, 3, 3, 4, 2]


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("k,s,padding", [(2, 2, "VALID"), (3, 2, "SAME"),
                                         ((2, 3, 1), (1, 2, 2), "SAME")])
def test_nn_pool3d(mode, k, s, padding):
    ours = ml.nn.max_pool3d if mode == "max" else ml.nn.avg_pool3d
    ref = kops.max_pool if mode == "max" else kops.average_pool
    _grads_match(lambda x: ours(x, k, s, padding), lambda x: ref(x, k, s, padding.lower()),
                 [V])


def test_nn_conv_transposes():
    w3 = RS.randn(2, 3, 2, 4, 3).astype(np.float32)  # [kd, kh, kw, out, in]
    _grads_match(lambda x, k: ml.nn.conv3d_transpose(x, k, strides=2, padding="SAME"),
                 lambda x, k: kops.conv_transpose(x, k, 2, "same"), [V, w3])
    w1 = RS.randn(3, 2, 4).astype(np.float32)
    _grads_match(lambda x, k: ml.nn.conv1d_transpose(x, k, strides=2, padding="VALID"),
                 lambda x, k: kops.conv_transpose(x, k, 2, "valid"), [S, w1])
    y = ml.nn.conv1d_transpose(S, w1, output_shape=[3, 15, 2], strides=2, padding="VALID")
    np.testing.assert_allclose(_run(y)[0], np.asarray(
        kops.conv_transpose(S, w1, 2, "valid", output_padding=0)), 1e-4, 1e-5)


# ---------------------------------------------------------------- RMSNormalization
@pytest.mark.parametrize("kw", [dict(), dict(axis=-1, epsilon=1e-3), dict(axis=[1, 2])])
def test_rms_normalization(kw):
    x = (RS.randn(4, 3, 5) * 2 + 0.5).astype(np.float32)
    _same_layer(*_pair("RMSNormalization", kw), x)


def test_rms_normalization_inner_axis():
    # Keras 3 broadcasts the scale [3] against the last axis and fails here; mylib
    # reshapes it to [1, 3, 1]. Reference: the formula in numpy.
    x = (RS.randn(4, 3, 5) * 2 + 0.5).astype(np.float32)
    layer = L.RMSNormalization(axis=1)
    layer(x)
    scale = RS.randn(3).astype(np.float32)
    layer.set_weights([scale])
    want = x / np.sqrt((x ** 2).mean(1, keepdims=True) + 1e-6) * scale[:, None]
    np.testing.assert_allclose(np.asarray(layer(x)), want, rtol=1e-5, atol=1e-5)


def test_rms_normalization_fit_save_and_half_precision(tmp_path):
    x = RS.randn(8, 3, 5).astype(np.float32)
    y = RS.randn(8, 2).astype(np.float32)
    fit_like_keras(lambda: L.RMSNormalization(axis=[1, 2]),
                   lambda: keras.layers.RMSNormalization(axis=[1, 2]), x, y,
                   tmp_path=tmp_path)
    out = np.asarray(L.RMSNormalization(dtype="float16")(x.astype(np.float16)))
    assert out.dtype == np.float16
    x16 = x.astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(out.astype(np.float32),
                               x16 / np.sqrt((x16 ** 2).mean(-1, keepdims=True) + 1e-6),
                               2e-3, 2e-3)


# ---------------------------------------------------------------- AlphaDropout
def test_alpha_dropout_statistics():
    layer = L.AlphaDropout(0.2, seed=3)
    x = RS.randn(400, 500).astype(np.float32)  # zero mean, unit variance
    np.testing.assert_array_equal(np.asarray(layer(x)), x)  # inference: the identity
    y = np.asarray(layer(x, training=True))
    alpha_p = -1.6732632423543772 * 1.0507009873554805
    a = ((1 - 0.2) * (1 + 0.2 * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * 0.2
    dropped = np.isclose(y, a * alpha_p + b, atol=1e-6)
    np.testing.assert_allclose(y[~dropped], a * x[~dropped] + b, rtol=1e-5, atol=1e-5)
    n = x.size
    assert abs(dropped.mean() - 0.2) < 5 * np.sqrt(0.16 / n)
    # the point of alpha dropout: mean and variance are kept
    assert abs(y.mean()) < 0.02 and abs(y.var() - 1) < 0.02
    # noise_shape (None, 1): one draw per row, so a dropped row is constant
    ns = np.asarray(L.AlphaDropout(0.5, noise_shape=(None, 1), seed=1)(x, training=True))
    whole = np.isclose(ns, ns[:, :1], atol=1e-6).all(1)
    assert 0.4 < whole.mean() < 0.6


def test_alpha_dropout_config_and_keras_inference():
    layer = L.AlphaDropout(0.3, noise_shape=(None, 1), seed=2)
    cfg = layer.get_config()
    assert L.AlphaDropout.from_config(cfg).get_config() == cfg
    x = RS.randn(4, 6).astype(np.float32)
    _same_layer(layer, keras.layers.AlphaDropout(0.3), x)  # inference on both sides
    assert ml.keras.layers.AlphaDropout is L.AlphaDropout
    assert ml.keras.layers.RMSNormalization is L.RMSNormalization


# ---------------------------------------------------------------- tf.layers (TF1)
def test_tf_layers_conv3d_and_pools():
    g = ml.Graph()
    with g.as_default():
        x = ml.compat.v1.placeholder(ml.float32, [None, 5, 6, 7, 3])
        c = ml.layers.conv3d(x, 4, (2, 3, 2), strides=(1, 2, 1), padding="same",
                             activation="relu")
        c2 = ml.layers.conv3d(x, 2, 2, name="second")
        m = ml.layers.max_pooling3d(c, 2, 2)
        a = ml.layers.average_pooling3d(c, (2, 3, 2), 1, padding="same")
        names = [v.name for v in ml.compat.v1.global_variables()]
        assert names == ["conv3d/kernel:0", "conv3d/bias:0", "second/kernel:0",
                         "second/bias:0"]
        with ml.Session(graph=g) as s:
            s.run(ml.compat.v1.global_variables_initializer())
            k, b = s.run(ml.compat.v1.global_variables()[:2])
            cv, mv, av, c2v = s.run([c, m, a, c2], {x: V})
    ref = np.maximum(np.asarray(kops.conv(V, k, (1, 2, 1), "same")) + b, 0)
    np.testing.assert_allclose(cv, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mv, np.asarray(kops.max_pool(ref, 2, 2)), rtol=1e-5)
    np.testing.assert_allclose(av, np.asarray(kops.average_pool(ref, (2, 3, 2), 1, "same")),
                               rtol=1e-5, atol=1e-6)
    assert c2v.shape == (2, 4, 5, 6, 2)
