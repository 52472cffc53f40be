"""tf.image on images whose height and width are known only at run time (a placeholder
[None, None, 3], as after decode_jpeg): TF1's resize kernels and
per_image_standardization, against numpy written from TensorFlow's definitions."""

import numpy as np
import pytest

import mylib.compat.v1 as tf


def _np_resize_tf1(img, oh, ow, method, align_corners):
    h, w = img.shape[:2]

    def src(n_in, n_out):
        scale = (n_in - 1) / (n_out - 1) if align_corners and n_out > 1 else n_in / n_out
        return np.arange(n_out) * scale

    ys, xs = src(h, oh), src(w, ow)
    out = np.zeros((oh, ow, img.shape[2]))
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            if method == "nearest":
                r = np.round if align_corners else np.floor
                out[i, j] = img[min(int(r(y)), h - 1), min(int(r(x)), w - 1)]
            else:
                y0, x0 = min(int(np.floor(y)), h - 1), min(int(np.floor(x)), w - 1)
                y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
                dy, dx = y - y0, x - x0
                top = img[y0, x0] + (img[y0, x1] - img[y0, x0]) * dx
                bot = img[y1, x0] + (img[y1, x1] - img[y1, x0]) * dx
                out[i, j] = top + (bot - top) * dy
    return out


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_resize_of_a_run_time_sized_image_matches_tf1(method, align_corners):
    tf.reset_default_graph()
    im = tf.placeholder(tf.float32, [None, None, 3])
    fn = tf.image.resize_bilinear if method == "bilinear" else tf.image.resize_nearest_neighbor
    out = fn(im[None], [5, 4], align_corners=align_corners)[0]
    assert out.shape.as_list() == [5, 4, 3]
    (g,) = tf.gradients(tf.reduce_sum(out * out), [im])
    rng = np.random.RandomState(1)
    with tf.Session() as s:
        for shape in [(7, 6, 3), (3, 9, 3)]:  # two sizes, one graph
            img = rng.rand(*shape).astype(np.float32)
            got, gv = s.run([out, g], {im: img})
            np.testing.assert_allclose(got, _np_resize_tf1(img, 5, 4, method, align_corners),
                                       rtol=1e-5, atol=1e-6)
            assert gv.shape == shape
            # the resize is linear in the image: d sum(R(x)^2)/dx = 2 R^T R(x), and
            # <grad, x> = 2 sum(R(x)^2)
            np.testing.assert_allclose((gv * img).sum(), 2 * (got ** 2).sum(), rtol=1e-4)


def test_resize_images_uint8_run_time_size():
    tf.reset_default_graph()
    im = tf.placeholder(tf.uint8, [None, None, 3])
    out = tf.image.resize_images(im, [4, 4])
    img = np.random.RandomState(0).randint(0, 255, (8, 6, 3)).astype(np.uint8)
    with tf.Session() as s:
        got = s.run(out, {im: img})
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _np_resize_tf1(img.astype(np.float64), 4, 4, "bilinear",
                                                   False), rtol=1e-5)


def test_per_image_standardization_of_a_run_time_sized_image():
    tf.reset_default_graph()
    im = tf.placeholder(tf.float32, [None, None, 3])
    out = tf.image.per_image_standardization(im)
    rng = np.random.RandomState(2)
    with tf.Session() as s:
        for img in [rng.rand(5, 4, 3).astype(np.float32), np.full((2, 3, 3), 0.5, np.float32)]:
            n = img.size
            ref = (img - img.mean()) / max(img.std(), 1 / np.sqrt(n))
            np.testing.assert_allclose(s.run(out, {im: img}), ref, rtol=1e-5, atol=1e-6)
