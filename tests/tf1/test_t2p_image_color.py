"""tf.image colour ops (rgb_to_hsv, hsv_to_rgb, adjust_hue/saturation/gamma and the
random ones) against Python's colorsys, which uses the same HSV definition."""

import colorsys

import numpy as np
import pytest

import mylib.compat.v1 as tf

RNG = np.random.RandomState(0)
IMG = RNG.rand(4, 5, 3).astype(np.float32)
IMG[0, 0] = [0.3, 0.3, 0.3]  # grey: hue 0, saturation 0
IMG[0, 1] = 0.0  # black


def _map(fn, img):
    return np.apply_along_axis(lambda p: np.array(fn(*p)), -1, img.astype(np.float64))


def _run(t, feed=None):
    with tf.Session() as s:
        return s.run(t, feed)


def test_rgb_to_hsv_and_back_match_colorsys():
    tf.reset_default_graph()
    hsv = tf.image.rgb_to_hsv(tf.constant(IMG))
    back = tf.image.hsv_to_rgb(hsv)
    h, b = _run([hsv, back])
    np.testing.assert_allclose(h, _map(colorsys.rgb_to_hsv, IMG), atol=1e-6)
    np.testing.assert_allclose(b, IMG, atol=1e-6)
    np.testing.assert_allclose(_run(tf.image.hsv_to_rgb(tf.constant(h))),
                               _map(colorsys.hsv_to_rgb, h), atol=1e-6)


@pytest.mark.parametrize("delta", [0.2, -0.45])
def test_adjust_hue(delta):
    tf.reset_default_graph()
    got = _run(tf.image.adjust_hue(tf.constant(IMG), delta))

    def ref(r, g, b):
        h, s, v = colorsys.rgb_to_hsv(r, g, b)
        return colorsys.hsv_to_rgb((h + delta) % 1.0, s, v)

    np.testing.assert_allclose(got, _map(ref, IMG), atol=1e-5)


def test_adjust_saturation_and_gamma():
    tf.reset_default_graph()
    sat, gam = _run([tf.image.adjust_saturation(tf.constant(IMG), 1.7),
                     tf.image.adjust_gamma(tf.constant(IMG), 2.2, 0.9)])

    def ref(r, g, b):
        h, s, v = colorsys.rgb_to_hsv(r, g, b)
        return colorsys.hsv_to_rgb(h, min(s * 1.7, 1.0), v)

    np.testing.assert_allclose(sat, _map(ref, IMG), atol=1e-5)
    np.testing.assert_allclose(gam, 0.9 * IMG.astype(np.float64) ** 2.2, rtol=1e-5)


def test_uint8_images_go_through_float():
    tf.reset_default_graph()
    img = (IMG * 255).astype(np.uint8)
    got = _run(tf.image.adjust_saturation(tf.constant(img), 0.0))
    assert got.dtype == np.uint8
    grey = img.max(-1)  # saturation 0: every channel takes the value (max)
    np.testing.assert_allclose(got, np.repeat(grey[..., None], 3, -1), atol=1)


def test_random_hue_and_saturation_stay_in_range_and_vary():
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, None, 3])
    out = tf.image.random_saturation(tf.image.random_hue(x, 0.1), 0.5, 1.5)
    with tf.Session() as s:
        a, b = s.run(out, {x: IMG}), s.run(out, {x: IMG})
    assert a.shape == IMG.shape and not np.allclose(a, b)
    assert a.min() >= -1e-6 and a.max() <= 1 + 1e-6
    with pytest.raises(ValueError, match="max_delta"):
        tf.image.random_hue(x, 0.7)
    with pytest.raises(ValueError, match="last dimension"):
        tf.image.rgb_to_hsv(tf.zeros([2, 4]))
