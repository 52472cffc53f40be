"""Convolution, pooling and reshaping layers and their ops: values against an
independent numpy implementation, gradients against jax.grad, shapes with an unknown
batch, and a small CNN that learns scikit-learn's digits."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from layer_battery import layer_test, run

import mylib as ml
from mylib import layers as L
from mylib import nn

R = np.random.RandomState(0)


# ---------------------------------------------------------------- numpy references
def _same_pads(size, k, s, d):
    eff = (k - 1) * d + 1
    out = -(-size // s)
    total = max((out - 1) * s + eff - size, 0)
    return total // 2, total - total // 2


def np_conv2d(x, w, strides=(1, 1), padding="valid", dilation=(1, 1), groups=1):
    """Direct loops over output positions; x NHWC, w [kh, kw, C / groups, O]."""
    kh, kw, ci, co = w.shape
    if padding == "same":
        (t, b), (l, r) = (_same_pads(x.shape[1], kh, strides[0], dilation[0]),
                          _same_pads(x.shape[2], kw, strides[1], dilation[1]))
    else:
        (t, b), (l, r) = padding if isinstance(padding, tuple) else ((0, 0), (0, 0))
    xp = np.pad(x, ((0, 0), (t, b), (l, r), (0, 0)))
    eh, ew = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    oh = (xp.shape[1] - eh) // strides[0] + 1
    ow = (xp.shape[2] - ew) // strides[1] + 1
    wg = w.reshape(kh, kw, ci, groups, co // groups)
    out = np.zeros((x.shape[0], oh, ow, co), np.float64)
    for i in range(oh):
        for j in range(ow):
            p = xp[:, i * strides[0]:i * strides[0] + eh:dilation[0],
                   j * strides[1]:j * strides[1] + ew:dilation[1], :]
            p = p.reshape(x.shape[0], kh, kw, groups, ci)
            out[:, i, j] = np.einsum("nabgc,abcgo->ngo", p, wg).reshape(x.shape[0], co)
    return out


def np_pool2d(x, k, s, padding, mode):
    if padding == "same":
        (t, b), (l, r) = _same_pads(x.shape[1], k[0], s[0], 1), _same_pads(x.shape[2], k[1],
                                                                          s[1], 1)
    else:
        t = b = l = r = 0
    fill = -np.inf if mode == "max" else np.nan
    xp = np.pad(x, ((0, 0), (t, b), (l, r), (0, 0)), constant_values=fill)
    oh, ow = (xp.shape[1] - k[0]) // s[0] + 1, (xp.shape[2] - k[1]) // s[1] + 1
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1], :]
            out[:, i, j] = win.max((1, 2)) if mode == "max" else np.nanmean(win, (1, 2))
    return out


def _bias_act(y, ws, act=None):
    if len(ws) > 1:
        y = y + ws[1]
    return act(y) if act else y


# ---------------------------------------------------------------- Conv2D / Conv1D
@pytest.mark.parametrize("kw,in_shape,out_shape", [
    (dict(filters=4, kernel_size=3), (7, 6, 3), (5, 4, 4)),
    (dict(filters=4, kernel_size=3, padding="same"), (7, 6, 3), (7, 6, 4)),
    (dict(filters=2, kernel_size=(3, 2), strides=2, padding="same"), (7, 6, 3), (4, 3, 2)),
    (dict(filters=2, kernel_size=(3, 2), strides=(2, 3)), (7, 8, 3), (3, 3, 2)),
    (dict(filters=3, kernel_size=3, dilation_rate=2, padding="same"), (7, 6, 2), (7, 6, 3)),
    (dict(filters=3, kernel_size=2, dilation_rate=(2, 1)), (7, 6, 2), (5, 5, 3)),
    (dict(filters=6, kernel_size=3, groups=2, padding="same", activation="relu"), (5, 5, 4),
     (5, 5, 6)),
    (dict(filters=2, kernel_size=1, use_bias=False), (4, 4, 3), (4, 4, 2)),
])
def test_conv2d_battery(kw, in_shape, out_shape):
    act = (lambda v: np.maximum(v, 0)) if kw.get("activation") == "relu" else None

    def ref(x, ws):
        y = np_conv2d(x, ws[0], L.Conv2D(**kw).strides, kw.get("padding", "valid"),
                      L.Conv2D(**kw).dilation_rate, kw.get("groups", 1))
        return _bias_act(y, ws, act)

    layer, _, _ = layer_test(L.Conv2D, dict(kw, bias_initializer="glorot_uniform"), in_shape,
                             out_shape, reference=ref, num_weights=1 if kw.get("use_bias") is
                             False else 2)
    c = in_shape[-1]
    assert layer.kernel.shape.as_list() == list(layer.kernel_size) + [
        c // kw.get("groups", 1), kw["filters"]]


def test_conv2d_channels_first_equals_transposed_channels_last():
    x = L.Input(shape=(3, 6, 5))
    layer = L.Conv2D(4, 3, padding="same", data_format="channels_first")
    y = layer(x)
    assert y.shape.as_list() == [None, 4, 6, 5]
    ml.layers.backend.ensure_initialized(layer.weights)
    xv = R.randn(2, 3, 6, 5).astype(np.float32)
    k, b = layer.get_weights()
    want = np_conv2d(xv.transpose(0, 2, 3, 1), k, padding="same") + b
    np.testing.assert_allclose(run(y, {x: xv}), want.transpose(0, 3, 1, 2), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("kw,out_shape", [
    (dict(filters=3, kernel_size=3), (8, 3)),
    (dict(filters=3, kernel_size=3, strides=2, padding="same"), (5, 3)),
    (dict(filters=3, kernel_size=3, padding="causal", dilation_rate=2), (10, 3)),
    (dict(filters=4, kernel_size=2, groups=2), (9, 4)),
])
def test_conv1d_battery(kw, out_shape):
    def ref(x, ws):
        k = ws[0][None]  # [1, k, c, o]: a conv over a height of 1
        pad = kw.get("padding", "valid")
        if pad == "causal":
            left = (kw["kernel_size"] - 1) * kw.get("dilation_rate", 1)
            pad = ((0, 0), (left, 0))
        y = np_conv2d(x[:, None], k, (1, kw.get("strides", 1)), pad,
                      (1, kw.get("dilation_rate", 1)), kw.get("groups", 1))[:, 0]
        return _bias_act(y, ws)

    layer_test(L.Conv1D, dict(kw, bias_initializer="ones"), (10, 4), out_shape, reference=ref)


def test_causal_conv1d_output_ignores_the_future():
    x = L.Input(shape=(6, 1))
    layer = L.Conv1D(1, 3, padding="causal")
    y = layer(x)
    ml.layers.backend.ensure_initialized(layer.weights)
    a = R.randn(1, 6, 1).astype(np.float32)
    b = a.copy()
    b[0, 4:] += 10.0
    ya, yb = run(y, {x: a}), run(y, {x: b})
    np.testing.assert_allclose(ya[0, :4], yb[0, :4], rtol=1e-6)
    assert not np.allclose(ya[0, 4:], yb[0, 4:])


@pytest.mark.parametrize("kw,out_shape", [
    (dict(kernel_size=3), (5, 4, 3)),
    (dict(kernel_size=3, depth_multiplier=2, padding="same", strides=2), (4, 3, 6)),
    (dict(kernel_size=2, dilation_rate=2), (5, 4, 3)),
])
def test_depthwise_conv2d_battery(kw, out_shape):
    def ref(x, ws):
        k = ws[0]  # [kh, kw, C, M] -> grouped conv with C groups: [kh, kw, 1, C * M]
        kh, kw_, c, m = k.shape
        layer = L.DepthwiseConv2D(**kw)
        y = np_conv2d(x, k.reshape(kh, kw_, 1, c * m), layer.strides,
                      kw.get("padding", "valid"), layer.dilation_rate, groups=c)
        return _bias_act(y, ws)

    layer, _, _ = layer_test(L.DepthwiseConv2D, dict(kw, bias_initializer="ones"), (7, 6, 3),
                             out_shape, reference=ref)
    assert layer.kernel.shape.as_list() == list(layer.kernel_size) + [
        3, kw.get("depth_multiplier", 1)]


@pytest.mark.parametrize("kw,in_shape,out_shape", [
    (dict(filters=2, kernel_size=3, strides=2, padding="same"), (4, 5, 3), (8, 10, 2)),
    (dict(filters=2, kernel_size=3, strides=2), (4, 5, 3), (9, 11, 2)),
    (dict(filters=2, kernel_size=2, strides=3), (4, 5, 3), (12, 15, 2)),
    (dict(filters=2, kernel_size=3, strides=2, padding="same", output_padding=0), (4, 5, 3),
     (7, 9, 2)),
    (dict(filters=2, kernel_size=3, dilation_rate=2, padding="same"), (4, 5, 3), (4, 5, 2)),
])
def test_conv2d_transpose_is_the_gradient_of_conv2d(kw, in_shape, out_shape):
    def ref(x, ws):
        layer = L.Conv2DTranspose(**kw)
        w = jnp.asarray(ws[0])  # [kh, kw, filters, in]: the forward conv's filter
        pad = "SAME" if layer.padding == "same" else "VALID"

        def fwd(z):
            return lax.conv_general_dilated(z, w, layer.strides, pad,
                                            rhs_dilation=layer.dilation_rate,
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))

        z0 = jnp.zeros((x.shape[0],) + out_shape, jnp.float32)
        y, vjp = jax.vjp(fwd, z0)
        assert y.shape == x.shape
        return np.asarray(vjp(jnp.asarray(x))[0]) + ws[1]

    layer_test(L.Conv2DTranspose, dict(kw, bias_initializer="ones"), in_shape, out_shape,
               reference=ref)


def test_conv_argument_errors_say_what_was_received():
    with pytest.raises(ValueError, match="filters=0"):
        L.Conv2D(0, 3)
    with pytest.raises(ValueError, match="groups=4, filters=6"):
        L.Conv2D(6, 3, groups=4)
    with pytest.raises(ValueError, match="kernel_size"):
        L.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="padding"):
        L.Conv2D(2, 3, padding="causal")
    with pytest.raises(ValueError, match="divisible by the number of groups"):
        L.Conv2D(4, 3, groups=2)(L.Input(shape=(5, 5, 3)))
    with pytest.raises(ValueError, match="expected ndim=4"):
        layer = L.Conv2D(2, 3)
        layer(L.Input(shape=(5, 5, 3)))
        layer(L.Input(shape=(5, 3)))


# ---------------------------------------------------------------- op gradients vs jax.grad
def _grad_check(ml_fn, jax_fn, shapes):
    vals = [R.randn(*s).astype(np.float32) for s in shapes]
    phs = [ml.constant(v) for v in vals]
    y = ml_fn(*phs)
    c = R.randn(*y.shape.as_list()).astype(np.float32)
    loss = ml.reduce_sum(y * c)
    got = run(ml.gradients(loss, phs))
    want = jax.grad(lambda *a: jnp.sum(jax_fn(*a) * c), argnums=tuple(range(len(vals))))(
        *[jnp.asarray(v) for v in vals])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run(y), jax_fn(*vals), rtol=1e-4, atol=1e-4)


DN = ("NHWC", "HWIO", "NHWC")


def test_grouped_conv2d_gradients_match_jax():
    _grad_check(lambda x, w: nn.conv2d(x, w, strides=2, padding="SAME", groups=2),
                lambda x, w: lax.conv_general_dilated(x, w, (2, 2), "SAME",
                                                      dimension_numbers=DN,
                                                      feature_group_count=2),
                [(2, 6, 5, 4), (3, 3, 2, 6)])


def test_depthwise_conv2d_gradients_match_jax():
    def ref(x, w):
        return lax.conv_general_dilated(x, w.reshape(3, 3, 1, 6), (1, 1), "VALID",
                                        rhs_dilation=(2, 1), dimension_numbers=DN,
                                        feature_group_count=3)
    _grad_check(lambda x, w: nn.depthwise_conv2d(x, w, dilations=[2, 1]), ref,
                [(2, 7, 6, 3), (3, 3, 3, 2)])


def test_conv2d_transpose_gradients_match_jax():
    def ref(x, w):
        return lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=DN,
                                  transpose_kernel=True)
    _grad_check(lambda x, w: nn.conv2d_transpose(x, w, strides=2, padding="SAME"), ref,
                [(2, 4, 4, 3), (4, 4, 5, 3)])


def test_conv1d_and_pool1d_gradients_match_jax():
    def ref(x, w):
        y = lax.conv_general_dilated(x, w, (2,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"))
        return lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 1), (1, 2, 1), "VALID")
    _grad_check(lambda x, w: nn.max_pool1d(nn.conv1d(x, w, stride=2, padding="SAME"), 2, 2,
                                           "VALID"), ref, [(2, 9, 3), (3, 3, 4)])


def test_resize_and_batch_normalization_gradients_match_jax():
    _grad_check(lambda x: nn.resize_images(x, (6, 8)),
                lambda x: jax.image.resize(x, (2, 6, 8, 2), "bilinear", antialias=False),
                [(2, 3, 4, 2)])

    def ref(x, m, v, b, g):
        return (x - m) * g / jnp.sqrt(jnp.abs(v) + 1e-3) + b
    _grad_check(lambda x, m, v, b, g: nn.batch_normalization(x, m, ml.abs(v), b, g, 1e-3), ref,
                [(4, 3), (3,), (3,), (3,), (3,)])


# ---------------------------------------------------------------- pooling
@pytest.mark.parametrize("cls,kw,out_shape", [
    (L.MaxPooling2D, {}, (3, 3, 2)),
    (L.MaxPooling2D, dict(pool_size=3, strides=2, padding="same"), (4, 4, 2)),
    (L.AveragePooling2D, dict(pool_size=(2, 3), strides=1), (6, 5, 2)),
    (L.AveragePooling2D, dict(pool_size=3, strides=2, padding="same"), (4, 4, 2)),
])
def test_pooling2d_battery(cls, kw, out_shape):
    mode = "max" if cls is L.MaxPooling2D else "avg"

    def ref(x, ws):
        layer = cls(**kw)
        return np_pool2d(x, layer.pool_size, layer.strides, layer.padding, mode)

    layer_test(cls, kw, (7, 7, 2), out_shape, reference=ref, num_weights=0)


@pytest.mark.parametrize("cls,kw,out_shape", [
    (L.MaxPooling1D, {}, (4, 3)),
    (L.AveragePooling1D, dict(pool_size=3, strides=2, padding="same"), (5, 3)),
])
def test_pooling1d_battery(cls, kw, out_shape):
    mode = "max" if cls is L.MaxPooling1D else "avg"

    def ref(x, ws):
        layer = cls(**kw)
        return np_pool2d(x[:, None], (1,) + layer.pool_size, (1,) + layer.strides,
                         layer.padding, mode)[:, 0]

    layer_test(cls, kw, (9, 3), out_shape, reference=ref)


@pytest.mark.parametrize("cls,kw,in_shape,out_shape,fn", [
    (L.GlobalAveragePooling2D, {}, (4, 5, 3), (3,), lambda x: x.mean((1, 2))),
    (L.GlobalMaxPooling2D, {}, (4, 5, 3), (3,), lambda x: x.max((1, 2))),
    (L.GlobalMaxPooling2D, dict(keepdims=True), (4, 5, 3), (1, 1, 3),
     lambda x: x.max((1, 2), keepdims=True)),
    (L.GlobalAveragePooling2D, dict(data_format="channels_first"), (3, 4, 5), (3,),
     lambda x: x.mean((2, 3))),
    (L.GlobalAveragePooling1D, {}, (6, 3), (3,), lambda x: x.mean(1)),
    (L.GlobalMaxPooling1D, dict(keepdims=True), (6, 3), (1, 3), lambda x: x.max(1, keepdims=True)),
])
def test_global_pooling_battery(cls, kw, in_shape, out_shape, fn):
    layer_test(cls, kw, in_shape, out_shape, reference=lambda x, ws: fn(x))


# ---------------------------------------------------------------- reshaping
@pytest.mark.parametrize("cls,kw,in_shape,out_shape,fn", [
    (L.ZeroPadding2D, {}, (3, 4, 2), (5, 6, 2),
     lambda x: np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))),
    (L.ZeroPadding2D, dict(padding=((1, 2), (0, 3))), (3, 4, 2), (6, 7, 2),
     lambda x: np.pad(x, ((0, 0), (1, 2), (0, 3), (0, 0)))),
    (L.Cropping2D, dict(cropping=((1, 0), (2, 1))), (5, 6, 2), (4, 3, 2),
     lambda x: x[:, 1:, 2:-1]),
    (L.Cropping2D, dict(cropping=1, data_format="channels_first"), (2, 5, 6), (2, 3, 4),
     lambda x: x[:, :, 1:-1, 1:-1]),
    (L.UpSampling2D, dict(size=(2, 3)), (3, 4, 2), (6, 12, 2),
     lambda x: x.repeat(2, 1).repeat(3, 2)),
    (L.UpSampling2D, dict(interpolation="bilinear"), (3, 4, 2), (6, 8, 2),
     lambda x: np.asarray(jax.image.resize(x, (3, 6, 8, 2), "bilinear"))),
    (L.ZeroPadding1D, dict(padding=(1, 2)), (4, 3), (7, 3),
     lambda x: np.pad(x, ((0, 0), (1, 2), (0, 0)))),
    (L.Cropping1D, dict(cropping=(1, 2)), (6, 3), (3, 3), lambda x: x[:, 1:-2]),
    (L.UpSampling1D, dict(size=3), (4, 2), (12, 2), lambda x: x.repeat(3, 1)),
])
def test_reshaping_battery(cls, kw, in_shape, out_shape, fn):
    layer_test(cls, kw, in_shape, out_shape, reference=lambda x, ws: fn(x), num_weights=0)


def test_bilinear_upsampling_interpolates_between_pixels():
    x = L.Input(shape=(1, 2, 1))
    y = L.UpSampling2D(size=(1, 2), interpolation="bilinear")(x)
    out = run(y, {x: np.array([0.0, 4.0], np.float32).reshape(1, 1, 2, 1)})
    np.testing.assert_allclose(out.ravel(), [0, 1, 3, 4])  # half-pixel centres


def test_cropping_more_than_the_input_is_an_error():
    with pytest.raises(ValueError, match="leaves nothing"):
        L.Cropping2D(((2, 2), (0, 0)))(L.Input(shape=(4, 4, 1)))


# ---------------------------------------------------------------- end to end
def test_small_cnn_learns_digits():
    from sklearn.datasets import load_digits

    ml.set_random_seed(0)
    np.random.seed(0)
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[..., None]
    y = d.target.astype(np.int32)
    idx = np.random.RandomState(0).permutation(len(x))
    x, y = x[idx], y[idx]
    xtr, ytr, xte, yte = x[:1400], y[:1400], x[1400:], y[1400:]
    model = ml.Sequential([
        L.Input(shape=(8, 8, 1)),
        L.Conv2D(16, 3, padding="same", use_bias=False),
        # momentum 0.9: the moving statistics settle within the ~200 steps of this test
        # (with Keras's 0.99 they would still be ~10% initial values).
        L.BatchNormalization(momentum=0.9),
        L.Activation("relu"),
        L.MaxPooling2D(),
        L.Conv2D(32, 3, padding="same", activation="relu"),
        L.GlobalAveragePooling2D(),
        L.Dropout(0.2),
        L.Dense(10, activation="softmax"),
    ])
    model.compile(ml.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(xtr, ytr, batch_size=32, epochs=5, verbose=0)
    loss, acc = model.evaluate(xte, yte, verbose=0)
    assert acc > 0.9, acc
    bn = model.layers[1] if isinstance(model.layers[1], L.BatchNormalization) else \
        [l for l in model.layers if isinstance(l, L.BatchNormalization)][0]
    mm, mv = bn.get_weights()[2:]
    assert np.abs(mm).sum() > 0 and not np.allclose(mv, 1.0)  # moving stats were updated
