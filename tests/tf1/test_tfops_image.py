"""tf.image against numpy: resize (a numpy bilinear with half-pixel centres), flips,
crops and pads, standardization, dtype conversion, colour; gradients through resize and
standardization against jax.grad of the numpy-formula reference."""

import os
import sys

import jax.numpy as jnp
import numpy as np
import pytest

import mylib as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core"))
from op_testing import Row, check_case, run_table  # noqa: E402


def _bilinear_np(img, oh, ow, mode="half"):
    """Bilinear sampling of [n, h, w, c]: at pixel centres ("half", TensorFlow 2), or
    TensorFlow 1's kernel ("legacy": source ``j * in / out``; "align": ``j * (in - 1) /
    (out - 1)``), clamped at the borders."""
    n, h, w, c = img.shape

    def axis(o, i):
        if mode == "half":
            src = np.clip((np.arange(o) + 0.5) * i / o - 0.5, 0, i - 1)
        else:
            scale = (i - 1) / (o - 1) if mode == "align" and o > 1 else i / o
            src = np.arange(o) * scale
        lo = np.floor(src).astype(int)
        hi = np.minimum(np.ceil(src).astype(int), i - 1)
        return lo, hi, src - lo

    y0, y1, wy = axis(oh, h)
    x0, x1, wx = axis(ow, w)
    wy = wy[None, :, None, None]
    wx = wx[None, None, :, None]
    top = img[:, y0][:, :, x0] * (1 - wx) + img[:, y0][:, :, x1] * wx
    bot = img[:, y1][:, :, x0] * (1 - wx) + img[:, y1][:, :, x1] * wx
    return top * (1 - wy) + bot * wy


def _std_ref(x):
    n = np.prod(x.shape[-3:])
    m = jnp.mean(x, (-3, -2, -1), keepdims=True)
    s = jnp.sqrt(jnp.mean((x - m) ** 2, (-3, -2, -1), keepdims=True))
    return (x - m) / jnp.maximum(s, 1 / np.sqrt(n))


ROWS = [
    Row("per_image_standardization", tf.image.per_image_standardization, _std_ref,
        [((2, 3, 4, 3),), ((3, 3, 2),)], (np.float32, np.float64)),
    Row("adjust_contrast", lambda x: tf.image.adjust_contrast(x, 1.7),
        lambda x: (x - x.mean((1, 2), keepdims=True)) * 1.7 + x.mean((1, 2), keepdims=True),
        [((2, 3, 4, 3),)]),
    Row("rgb_to_grayscale", tf.image.rgb_to_grayscale,
        lambda x: jnp.sum(x * jnp.array([0.2989, 0.5870, 0.1140], x.dtype), -1,
                          keepdims=True), [((2, 3, 3),)]),
    Row("flip_left_right", tf.image.flip_left_right, lambda x: x[:, ::-1], [((3, 4, 2),)]),
    Row("flip_up_down_batch", tf.image.flip_up_down, lambda x: x[:, ::-1],
        [((2, 3, 4, 2),)]),
]

CASES = [cid for row in ROWS for cid, _, _ in row.cases()]


@pytest.fixture(scope="module")
def table():
    return run_table(ROWS)


@pytest.mark.parametrize("case", CASES)
def test_op(table, case):
    check_case(table[case])


def _run(fetches, feeds=None):
    with tf.Session() as sess:
        return sess.run(fetches, feeds)


@pytest.mark.parametrize("size", [(8, 10), (3, 2), (5, 5), (1, 7)])
def test_resize_bilinear_matches_numpy_and_gradient_sums(size):
    """TensorFlow 1's `resize_images` / `resize_bilinear` sample at ``j * in / out``
    (or corner to corner with `align_corners`); `tf.image.resize` and
    ``half_pixel_centers=True`` at pixel centres."""
    rng = np.random.default_rng(0)
    xv = rng.uniform(size=(2, 5, 4, 3)).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.constant(xv)
        y = tf.image.resize_images(x, size)                           # TF1 default
        ya = tf.image.resize_bilinear(x, size, align_corners=True)
        yh = tf.image.resize_bilinear(x, size, half_pixel_centers=True)
        y2 = tf.image.resize(x[0], size, method="bilinear")           # 3-D image, TF2
        g, = tf.gradients(tf.reduce_sum(y), x)
        yv, yav, yhv, y2v, gv = _run([y, ya, yh, y2, g])
    x64 = xv.astype(np.float64)
    np.testing.assert_allclose(yv, _bilinear_np(x64, *size, "legacy"), atol=1e-5)
    np.testing.assert_allclose(yav, _bilinear_np(x64, *size, "align"), atol=1e-5)
    np.testing.assert_allclose(yhv, _bilinear_np(x64, *size), atol=1e-5)
    np.testing.assert_allclose(y2v, _bilinear_np(x64, *size)[0], atol=1e-5)
    # bilinear weights of each output pixel sum to 1
    assert gv.sum() == pytest.approx(2 * size[0] * size[1] * 3, rel=1e-5)


def test_resize_legacy_values_and_gradient_against_finite_differences():
    """A ramp 0..3 upsampled to 8 reads 0, .5, 1, ..., 3, 3 (TensorFlow 1's values);
    the gradient of a weighted sum equals finite differences."""
    ramp = np.arange(4, dtype=np.float32).reshape(1, 1, 4, 1)
    rng = np.random.default_rng(2)
    xv = rng.standard_normal((1, 3, 5, 2))
    wv = rng.standard_normal((1, 4, 7, 2))
    with tf.Graph().as_default():
        up = tf.image.resize_images(tf.constant(ramp), [1, 8])
        x = tf.placeholder(tf.float64, [1, 3, 5, 2])
        loss = tf.reduce_sum(tf.image.resize_images(x, [4, 7]) * wv)
        g, = tf.gradients(loss, x)
        with tf.Session() as sess:
            upv, gv = sess.run([up, g], {x: xv})
            fd = np.zeros_like(xv)
            for i in np.ndindex(*xv.shape):
                d = np.zeros_like(xv)
                d[i] = 1e-6
                fd[i] = (sess.run(loss, {x: xv + d}) - sess.run(loss, {x: xv - d})) / 2e-6
    np.testing.assert_allclose(upv[0, 0, :, 0], [0, .5, 1, 1.5, 2, 2.5, 3, 3])
    np.testing.assert_allclose(gv, fd, rtol=1e-6, atol=1e-8)


def test_resize_nearest_and_uint8():
    img = np.arange(2 * 2 * 1, dtype=np.uint8).reshape(1, 2, 2, 1) * 50
    with tf.Graph().as_default():
        up = tf.image.resize_images(tf.constant(img), [4, 4],
                                    method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
        bl = tf.image.resize_images(tf.constant(img), [4, 4])
        upv, blv = _run([up, bl])
    np.testing.assert_array_equal(upv[0, :, :, 0], np.repeat(np.repeat(img[0, :, :, 0], 2, 0),
                                                              2, 1))
    assert upv.dtype == np.uint8 and blv.dtype == np.float32
    row = np.array([10, 20, 30], np.int32).reshape(1, 1, 3, 1)
    with tf.Graph().as_default():
        fl = tf.image.resize_nearest_neighbor(tf.constant(row), [1, 7])
        al = tf.image.resize_nearest_neighbor(tf.constant(row), [1, 7], align_corners=True)
        flv, alv = _run([fl, al])
    # TensorFlow 1: floor(j * 3 / 7); with align_corners round(j * 2 / 6)
    np.testing.assert_array_equal(flv.ravel(), [10, 10, 10, 20, 20, 30, 30])
    np.testing.assert_array_equal(alv.ravel(), [10, 10, 20, 20, 20, 30, 30])


def test_crops_pads_and_dtype_conversion():
    rng = np.random.default_rng(1)
    xv = rng.uniform(size=(6, 8, 3)).astype(np.float32)
    u8 = (rng.uniform(size=(2, 2, 1)) * 255).astype(np.uint8)
    with tf.Graph().as_default():
        x = tf.constant(xv)
        out = _run({
            "central": tf.image.central_crop(x, 0.5),
            "crop": tf.image.crop_to_bounding_box(x, 1, 2, 3, 4),
            "pad": tf.image.pad_to_bounding_box(x, 1, 2, 9, 11),
            "crop_or_pad": tf.image.resize_image_with_crop_or_pad(x, 4, 10),
            "to_float": tf.image.convert_image_dtype(tf.constant(u8), tf.float32),
            "to_u8": tf.image.convert_image_dtype(tf.constant([0.0, 0.5, 1.0, 1.5]), tf.uint8),
            "bright": tf.image.adjust_brightness(x, 0.25),
        })
    # TensorFlow's rounding: start int((6 - 3) / 2) = 1, size 6 - 2 = 4 rows; 8 -> 4 cols
    np.testing.assert_array_equal(out["central"], xv[1:5, 2:6])
    np.testing.assert_array_equal(out["crop"], xv[1:4, 2:6])
    ref = np.zeros((9, 11, 3), np.float32)
    ref[1:7, 2:10] = xv
    np.testing.assert_array_equal(out["pad"], ref)
    ref = np.zeros((4, 10, 3), np.float32)
    ref[:, 1:9] = xv[1:5]
    np.testing.assert_array_equal(out["crop_or_pad"], ref)
    np.testing.assert_allclose(out["to_float"], u8 / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(out["to_u8"], [0, 127, 255, 255])
    np.testing.assert_allclose(out["bright"], xv + 0.25, rtol=1e-6)


def test_random_flip_and_crop_draw_valid_results():
    rng = np.random.default_rng(2)
    xv = rng.uniform(size=(6, 7, 2)).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.constant(xv)
        f = tf.image.random_flip_left_right(x, seed=1)
        fb = tf.image.random_flip_up_down(tf.stack([x] * 16), seed=2)
        c = tf.random_crop(x, [3, 4, 2], seed=3)
        with tf.Session() as sess:
            flips = [sess.run(f) for _ in range(20)]
            fbv = sess.run(fb)
            crops = [sess.run(c) for _ in range(20)]
    seen = set()
    for v in flips:
        if np.array_equal(v, xv):
            seen.add("same")
        else:
            np.testing.assert_array_equal(v, xv[:, ::-1])
            seen.add("flipped")
    assert seen == {"same", "flipped"}
    kinds = {np.array_equal(v, xv) for v in fbv}
    assert kinds == {True, False}  # each image of the batch draws its own coin
    for v in fbv:
        assert np.array_equal(v, xv) or np.array_equal(v, xv[::-1])
    offsets = set()
    for v in crops:
        hits = [(i, j) for i in range(4) for j in range(4)
                if np.array_equal(xv[i:i + 3, j:j + 4], v)]
        assert hits, "a crop is not a window of the image"
        offsets.add(hits[0])
    assert len(offsets) > 3


def test_image_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="3-D"):
            tf.image.resize_images(tf.zeros([4, 4]), [2, 2])
        with pytest.raises(ValueError, match="method"):
            tf.image.resize_images(tf.zeros([1, 4, 4, 1]), [2, 2], method=3)
        with pytest.raises(ValueError, match="does not fit"):
            tf.image.crop_to_bounding_box(tf.zeros([4, 4, 1]), 2, 2, 3, 3)
        with pytest.raises(ValueError, match="fit"):
            tf.random_crop(tf.zeros([4, 4]), [5, 2])
