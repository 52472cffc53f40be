"""Image preprocessing and augmentation layers against Keras 3 (JAX backend) and numpy.

Deterministic paths are compared value for value with Keras 3: `Resizing`, `CenterCrop`,
every inference-mode identity, and the random layers with their draws pinned by a
degenerate factor range (e.g. ``RandomRotation((0.25, 0.25))`` is exactly a quarter
turn, also checked against `np.rot90`). Random paths are checked for their statistics:
flip frequency, factor ranges, fresh draws per call, replay with a seed. The
`affine_transform` op is compared with `keras.ops.image.affine_transform`, and its
gradient with `jax.grad` of that function."""

import os

import jax
import jax.numpy as jnp
import keras
import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib.core.ops import image_ops

RS = np.random.RandomState(7)
X = RS.uniform(0, 255, (2, 9, 11, 3)).astype(np.float32)
K = keras.layers


def _close(got, want, atol=2e-4):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5,
                               atol=atol)


def _run(t):
    with ml.Session() as s:
        return s.run(t)


# ---------------------------------------------------------------- the affine op
_T = np.array([[0.93, 0.21, 0.47, -0.13, 1.07, -0.71, 0, 0],
               [1, 0, -2.37, 0, 1, 1.61, 0, 0]], np.float32)


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
@pytest.mark.parametrize("fill_mode", ["reflect", "wrap", "constant", "nearest"])
def test_affine_transform_matches_keras(interpolation, fill_mode):
    want = keras.ops.image.affine_transform(X, _T, interpolation, fill_mode, 7.5)
    got = _run(image_ops.affine_transform(X, _T, interpolation, fill_mode, 7.5))
    _close(got, want)
    # One transform row for a single image.
    got1 = _run(image_ops.affine_transform(X[1], _T[1], interpolation, fill_mode, 7.5))
    _close(got1, np.asarray(want)[1])


def test_affine_transform_gradient_is_jax_grad_of_keras():
    w = RS.randn(*X.shape).astype(np.float32)
    x = ml.constant(X)
    y = image_ops.affine_transform(x, _T, "bilinear", "reflect")
    (g,) = ml.gradients(ml.reduce_sum(y * w), [x])
    want = jax.grad(lambda a: jnp.sum(
        keras.ops.image.affine_transform(a, _T, "bilinear", "reflect") * w))(X)
    _close(_run(g), want, atol=1e-4)


def test_affine_transform_rejects_bad_arguments():
    with pytest.raises(ValueError, match="fill_mode"):
        image_ops.affine_transform(X, _T, fill_mode="mirror")
    with pytest.raises(ValueError, match="interpolation"):
        image_ops.affine_transform(X, _T, interpolation="bicubic")
    with pytest.raises(ml.errors.InvalidArgumentError, match="transforms"):
        image_ops.affine_transform(X, np.zeros((2, 6), np.float32))


# ---------------------------------------------------------------- Resizing, CenterCrop
@pytest.mark.parametrize("kw", [
    dict(height=5, width=7), dict(height=5, width=7, interpolation="nearest"),
    dict(height=14, width=16, interpolation="bicubic"),
    dict(height=4, width=4, interpolation="lanczos3"),
    dict(height=6, width=6, crop_to_aspect_ratio=True),
    dict(height=6, width=9, crop_to_aspect_ratio=True),
    dict(height=6, width=6, pad_to_aspect_ratio=True, fill_value=3.0),
    dict(height=4, width=12, pad_to_aspect_ratio=True),
])
def test_resizing_matches_keras(kw):
    want = K.Resizing(**kw)(X)
    _close(L.Resizing(**kw)(X), want)
    _close(L.Resizing(**kw)(X[0]), np.asarray(want)[0])  # unbatched


def test_resizing_keeps_integer_dtype_as_keras():
    x = RS.randint(0, 256, (2, 9, 11, 3)).astype(np.uint8)
    got = L.Resizing(5, 7)(x)
    _close(got, K.Resizing(5, 7)(x), atol=1)  # rounding of a float tie may differ
    assert got.dtype == np.uint8


@pytest.mark.parametrize("size", [(5, 6), (9, 11), (1, 1), (12, 6), (4, 20)])
def test_center_crop_matches_keras(size):
    want = K.CenterCrop(*size)(X)
    _close(L.CenterCrop(*size)(X), want)
    _close(L.CenterCrop(*size)(X[1]), np.asarray(want)[1])
    if size[0] <= 9 and size[1] <= 11:
        top, left = (9 - size[0]) // 2, (11 - size[1]) // 2
        np.testing.assert_array_equal(L.CenterCrop(*size)(X),
                                      X[:, top:top + size[0], left:left + size[1]])


def test_resize_and_crop_in_a_model_with_unknown_batch():
    inp = L.Input((9, 11, 3))
    out = L.CenterCrop(6, 8)(L.Resizing(8, 10, interpolation="nearest")(inp))
    assert out.shape.as_list() == [None, 6, 8, 3]
    m = ml.Model(inp, out)
    want = K.CenterCrop(6, 8)(K.Resizing(8, 10, interpolation="nearest")(X))
    _close(m.predict(X, verbose=0), want)


# ---------------------------------------------------------------- inference identities
_RANDOM = [
    (L.RandomFlip, K.RandomFlip, {}),
    (L.RandomRotation, K.RandomRotation, dict(factor=0.2)),
    (L.RandomZoom, K.RandomZoom, dict(height_factor=0.2)),
    (L.RandomTranslation, K.RandomTranslation, dict(height_factor=0.2, width_factor=0.1)),
    (L.RandomContrast, K.RandomContrast, dict(factor=0.3)),
    (L.RandomBrightness, K.RandomBrightness, dict(factor=0.3)),
]


@pytest.mark.parametrize("ours, theirs, kw", _RANDOM, ids=lambda v: getattr(v, "__name__", ""))
def test_random_layers_are_the_identity_at_inference(ours, theirs, kw):
    _close(ours(**kw)(X, training=False), theirs(**kw)(X, training=False))
    _close(ours(**kw)(X), X)  # no training argument: inference (Keras would augment)
    inp = L.Input((9, 11, 3))
    m = ml.Model(inp, ours(**kw)(inp))
    _close(m.predict(X, verbose=0), X)


def test_random_crop_at_inference_is_a_centred_aspect_crop_and_resize():
    # Keras's `smart_resize`, i.e. Resizing(crop_to_aspect_ratio=True).
    for size in [(6, 8), (9, 5), (12, 12)]:
        want = K.Resizing(*size, crop_to_aspect_ratio=True)(X)
        _close(L.RandomCrop(*size)(X, training=False), want)
        _close(L.RandomCrop(*size)(X[0]), np.asarray(want)[0])


# ---------------------------------------------------------------- pinned draws vs Keras
def test_quarter_turn_rotation_is_rot90_and_keras():
    x = RS.rand(3, 8, 8, 2).astype(np.float32)
    got = L.RandomRotation((0.25, 0.25))(x, training=True)
    _close(got, K.RandomRotation((0.25, 0.25))(x, training=True))
    np.testing.assert_allclose(got, np.rot90(x, 1, axes=(1, 2)), atol=1e-5)  # counter-clockwise
    got = L.RandomRotation((-0.5, -0.5), interpolation="nearest")(x, training=True)
    np.testing.assert_allclose(got, np.rot90(x, 2, axes=(1, 2)), atol=1e-5)


@pytest.mark.parametrize("fill_mode", ["reflect", "wrap", "constant", "nearest"])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_pinned_affine_layers_match_keras(fill_mode, interpolation):
    common = dict(fill_mode=fill_mode, interpolation=interpolation, fill_value=5.0)
    for name, kw in [("RandomRotation", dict(factor=(0.113, 0.113))),
                     ("RandomZoom", dict(height_factor=(0.31, 0.31),
                                         width_factor=(-0.23, -0.23))),
                     ("RandomZoom", dict(height_factor=(-0.27, -0.27))),
                     ("RandomTranslation", dict(height_factor=(0.21, 0.21),
                                                width_factor=(-0.33, -0.33)))]:
        want = getattr(K, name)(**kw, **common)(X, training=True)
        _close(getattr(L, name)(**kw, **common)(X, training=True), want)
        _close(getattr(L, name)(**kw, **common)(X[0], training=True), np.asarray(want)[0])


def test_whole_pixel_translation_is_np_roll_with_wrap():
    x = RS.rand(2, 8, 10, 3).astype(np.float32)
    got = L.RandomTranslation((0.25, 0.25), (-0.3, -0.3), fill_mode="wrap")(x, training=True)
    np.testing.assert_allclose(got, np.roll(x, (2, -3), axis=(1, 2)), atol=1e-5)
    got = L.RandomTranslation((0.25, 0.25), (0, 0), fill_mode="constant",
                              fill_value=-1.0)(x, training=True)
    want = np.concatenate([np.full((2, 2, 10, 3), -1.0, np.float32), x[:, :6]], axis=1)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_zero_factors_are_the_identity_in_training():
    for layer in [L.RandomRotation(0.0), L.RandomZoom(0.0), L.RandomTranslation(0.0, 0.0),
                  L.RandomContrast(0.0), L.RandomBrightness(0.0)]:
        np.testing.assert_allclose(layer(X, training=True), X, atol=1e-3)


def test_pinned_brightness_matches_keras():
    for kw in [dict(factor=(0.1, 0.1)), dict(factor=(-0.2, -0.2), value_range=(0, 1))]:
        x = X / 255.0 if kw.get("value_range") == (0, 1) else X
        _close(L.RandomBrightness(**kw)(x, training=True),
               K.RandomBrightness(**kw)(x, training=True))


def test_random_crop_fallback_for_small_images_matches_keras():
    # Not larger than the window on both sides: Keras's deterministic training path.
    for size in [(9, 8), (10, 12), (4, 11)]:
        _close(L.RandomCrop(*size)(X, training=True), K.RandomCrop(*size)(X, training=True))


# ---------------------------------------------------------------- statistics of the draws
def test_random_crop_takes_one_window_of_the_input_per_batch():
    x = RS.rand(4, 9, 11, 2).astype(np.float32)
    layer = L.RandomCrop(5, 6, seed=3)
    seen = set()
    for _ in range(40):
        y = layer(x, training=True)
        hits = [(i, j) for i in range(5) for j in range(6)
                if np.array_equal(y, x[:, i:i + 5, j:j + 6])]
        assert len(hits) == 1
        seen.add(hits[0])
    assert len(seen) > 10  # offsets spread over the 5 x 6 possible windows
    assert L.RandomCrop(5, 6)(x[0], training=True).shape == (5, 6, 2)


@pytest.mark.parametrize("mode, flip", [
    ("horizontal", lambda x: x[:, ::-1]), ("vertical", lambda x: x[::-1]),
    ("horizontal_and_vertical", lambda x: x[::-1, ::-1])])
def test_random_flip_flips_about_half_the_images(mode, flip):
    x = RS.rand(400, 3, 4, 1).astype(np.float32)
    y = L.RandomFlip(mode, seed=11)(x, training=True)
    flipped = np.array([np.array_equal(b, flip(a)) for a, b in zip(x, y)])
    same = np.array([np.array_equal(b, a) for a, b in zip(x, y)])
    assert np.all(flipped ^ same)  # each image is either kept or flipped
    assert abs(flipped.mean() - 0.5) < 0.1  # 400 fair coins: 4 standard deviations
    single = L.RandomFlip(mode)(x[0], training=True)
    assert np.array_equal(single, x[0]) or np.array_equal(single, flip(x[0]))


def _contrast_factors(x, y):
    """Per image: the least-squares f of ``y - m = f (x - m)`` and the largest misfit."""
    m = x.mean(axis=(1, 2), keepdims=True)
    dx, dy = (x - m).reshape(len(x), -1), (y - m).reshape(len(x), -1)
    f = (dx * dy).sum(1) / (dx * dx).sum(1)
    return f, np.abs(dy - f[:, None] * dx).max()


def test_random_contrast_factors_lie_in_keras_ranges():
    x = RS.uniform(50, 150, (300, 4, 4, 3)).astype(np.float32)
    f, misfit = _contrast_factors(x, L.RandomContrast((0.3, 0.2), seed=1)(x, training=True))
    assert misfit < 1e-3  # one factor per image, for all its pixels and channels
    assert f.min() >= 0.8 - 1e-4 and f.max() <= 1.3 + 1e-4  # (0.2, 0.3) sorted: [0.8, 1.3]
    assert f.min() < 0.85 and f.max() > 1.25
    # A single float is stored as (0, f), as Keras 3: factors in [1, 1 + f].
    assert L.RandomContrast(0.5).factor == K.RandomContrast(0.5).factor == (0, 0.5)
    f, _ = _contrast_factors(x, L.RandomContrast(0.5)(x, training=True))
    assert f.min() >= 1 - 1e-4 and f.max() <= 1.5 + 1e-4
    # Clipped to value_range.
    y = L.RandomContrast((0.9, 0.9), value_range=(60, 140))(x, training=True)
    assert y.min() >= 60 and y.max() <= 140


def test_random_brightness_deltas_lie_in_range_and_clip():
    x = RS.uniform(0.2, 0.8, (300, 3, 3, 1)).astype(np.float32)
    y = L.RandomBrightness(0.1, value_range=(0, 1), seed=2)(x, training=True)
    d = (y - x).reshape(300, -1)
    np.testing.assert_allclose(d, d[:, :1] * np.ones_like(d), atol=1e-6)
    assert d.min() >= -0.1 - 1e-6 and d.max() <= 0.1 + 1e-6 and d.std() > 0.03
    y = L.RandomBrightness((0.5, 0.5), value_range=(0, 1))(x, training=True)
    assert y.max() == 1.0 and y.min() >= 0.7 - 1e-6


@pytest.mark.parametrize("make", [
    lambda s: L.RandomFlip(seed=s), lambda s: L.RandomRotation(0.3, seed=s),
    lambda s: L.RandomZoom(0.3, 0.2, seed=s), lambda s: L.RandomTranslation(0.3, 0.3, seed=s),
    lambda s: L.RandomContrast(0.5, seed=s), lambda s: L.RandomBrightness(0.5, seed=s),
    lambda s: L.RandomCrop(5, 6, seed=s)])
def test_draws_differ_per_call_and_replay_with_a_seed(make):
    x = RS.uniform(0, 255, (8, 9, 11, 3)).astype(np.float32)
    layer = make(5)
    a, b = layer(x, training=True), layer(x, training=True)
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(make(5)(x, training=True), a)


# ---------------------------------------------------------------- configs, saving, fit
_CONFIGS = [
    ("Resizing", dict(height=5, width=7, interpolation="nearest", pad_to_aspect_ratio=True,
                      fill_value=2.0)),
    ("CenterCrop", dict(height=5, width=7)),
    ("RandomCrop", dict(height=5, width=7, seed=3)),
    ("RandomFlip", dict(mode="vertical", seed=1)),
    ("RandomRotation", dict(factor=(-0.2, 0.1), fill_mode="wrap", interpolation="nearest",
                            seed=2, fill_value=1.0)),
    ("RandomZoom", dict(height_factor=0.2, width_factor=(-0.1, 0.3), fill_mode="constant")),
    ("RandomTranslation", dict(height_factor=0.2, width_factor=(-0.1, 0.3), seed=4)),
    ("RandomContrast", dict(factor=0.2, value_range=(0, 1), seed=5)),
    ("RandomBrightness", dict(factor=(-0.2, 0.1), value_range=(1, 0))),
]


@pytest.mark.parametrize("name, kw", _CONFIGS, ids=[c[0] for c in _CONFIGS])
def test_config_round_trip_and_keras_keys(name, kw):
    layer = getattr(L, name)(**kw)
    cfg = layer.get_config()
    clone = type(layer).from_config(cfg)
    assert clone.get_config() == {**cfg, "name": clone.name}
    theirs = getattr(K, name)(**kw).get_config()
    for key in set(theirs) - {"name", "trainable", "dtype", "seed"}:
        assert cfg[key] == theirs[key], key
    assert getattr(ml.keras.layers, name) is type(layer)


def test_model_with_augmentation_fits_predicts_deterministically_and_saves(tmp_path):
    x = RS.uniform(0, 1, (16, 12, 12, 3)).astype(np.float32)
    y = RS.randint(0, 2, 16)
    inp = L.Input((12, 12, 3))
    h = L.RandomFlip("horizontal", seed=1)(inp)
    h = L.RandomRotation(0.1, seed=2)(h)
    h = L.RandomZoom(0.1, seed=3)(h)
    h = L.RandomTranslation(0.1, 0.1, seed=4)(h)
    h = L.RandomContrast(0.2, value_range=(0, 1), seed=5)(h)
    h = L.RandomBrightness(0.1, value_range=(0, 1), seed=6)(h)
    h = L.RandomCrop(10, 10, seed=7)(h)
    h = L.CenterCrop(8, 8)(L.Resizing(9, 9)(h))
    out = L.Dense(2, activation="softmax")(L.Flatten()(h))
    model = ml.Model(inp, out)
    model.compile("adam", "sparse_categorical_crossentropy")
    hist = model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    assert np.all(np.isfinite(hist.history["loss"]))
    p = model.predict(x, verbose=0)
    np.testing.assert_array_equal(model.predict(x, verbose=0), p)
    # Inference: the random layers pass through, RandomCrop resizes, the rest is Keras's.
    smart = np.asarray(K.Resizing(10, 10, crop_to_aspect_ratio=True)(x))
    feats = np.asarray(K.CenterCrop(8, 8)(K.Resizing(9, 9)(smart))).reshape(16, -1)
    k, b = model.layers[-1].get_weights()
    logits = feats @ k + b
    want = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(p, want, rtol=1e-4, atol=1e-5)
    path = os.path.join(tmp_path, "aug.keras")
    model.save(path)
    loaded = ml.models.load_model(path)
    assert [type(la).__name__ for la in loaded.layers] == \
        [type(la).__name__ for la in model.layers]
    np.testing.assert_allclose(loaded.predict(x, verbose=0), p, rtol=1e-6)


# ---------------------------------------------------------------- bad arguments
def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="channels_last"):
        L.RandomFlip(data_format="channels_first")
    with pytest.raises(ValueError, match="fill_mode"):
        L.RandomRotation(0.1, fill_mode="mirror")
    with pytest.raises(ValueError, match="interpolation"):
        L.RandomZoom(0.1, interpolation="bicubic")
    with pytest.raises(ValueError, match="factor"):
        L.RandomRotation(1.5)
    with pytest.raises(ValueError, match="height_factor"):
        L.RandomZoom(-1.0)
    with pytest.raises(ValueError, match="factor"):
        L.RandomContrast(-0.1)
    with pytest.raises(ValueError, match="mode"):
        L.RandomFlip("diagonal")
    with pytest.raises(ValueError, match="value_range"):
        L.RandomBrightness(0.1, value_range=5)
    with pytest.raises(ValueError, match="Only one of"):
        L.Resizing(4, 4, crop_to_aspect_ratio=True, pad_to_aspect_ratio=True)
    with pytest.raises(ValueError, match="rank 3"):
        L.RandomFlip()(L.Input((4,)))
