"""TensorFlow 1 `tf.image` names added for real programs: `sobel_edges`,
`total_variation`, `psnr`, `ssim`, `crop_and_resize`, `non_max_suppression`, against
numpy/scipy references written here from TensorFlow's definitions; gradients of
`crop_and_resize` and `total_variation` against finite differences."""

import numpy as np
import pytest
import scipy.ndimage

import mylib as tf


def _run(fetches, feeds=None):
    with tf.Session() as s:
        return s.run(fetches, feeds)


def test_sobel_total_variation_psnr():
    x = tf.placeholder(tf.float32, [None, 5, 6, 2])
    rng = np.random.default_rng(0)
    xv = rng.uniform(size=(3, 5, 6, 2)).astype(np.float32)
    yv = np.clip(xv + rng.normal(scale=0.05, size=xv.shape), 0, 1).astype(np.float32)
    y = tf.placeholder(tf.float32, [None, 5, 6, 2])
    sob, tv, tv3, p = _run([tf.image.sobel_edges(x), tf.image.total_variation(x),
                            tf.image.total_variation(x[0]), tf.image.psnr(x, y, 1.0)],
                           {x: xv, y: yv})
    assert sob.shape == (3, 5, 6, 2, 2)
    # TF's kernels, correlated over numpy's "reflect" padding (TF's REFLECT).
    ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float64)
    xp = np.pad(xv.astype(np.float64), [(0, 0), (1, 1), (1, 1), (0, 0)], mode="reflect")
    for k, kern in ((0, ky), (1, ky.T)):
        ref = sum(kern[i, j] * xp[:, i:i + 5, j:j + 6, :] for i in range(3) for j in range(3))
        np.testing.assert_allclose(sob[..., k], ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sob[..., 0], scipy.ndimage.correlate(
        xv.astype(np.float64), ky[None, :, :, None], mode="mirror"), rtol=1e-5, atol=1e-5)
    tv_ref = (np.abs(np.diff(xv, axis=1)).sum((1, 2, 3)) + np.abs(np.diff(xv, axis=2))
              .sum((1, 2, 3)))
    np.testing.assert_allclose(tv, tv_ref, rtol=1e-5)
    np.testing.assert_allclose(tv3, tv_ref[0], rtol=1e-5)
    mse = ((xv.astype(np.float64) - yv) ** 2).mean((1, 2, 3))
    np.testing.assert_allclose(p, 10 * np.log10(1.0 / mse), rtol=1e-4)
    u8 = (xv * 255).astype(np.uint8)
    p8 = _run(tf.image.psnr(tf.constant(u8), tf.constant(u8 // 2), 255))
    mse8 = ((u8.astype(np.float64) - u8 // 2) ** 2).mean((1, 2, 3))
    np.testing.assert_allclose(p8, 10 * np.log10(255.0 ** 2 / mse8), rtol=1e-4)


def _ssim_ref(a, b, max_val, size=11, sigma=1.5, k1=0.01, k2=0.03):
    """Wang et al.'s SSIM with TensorFlow's choices: a normalized Gaussian window,
    VALID filtering, mean over the image, then over the channels."""
    coords = np.arange(size) - (size - 1) / 2.0
    g1 = np.exp(-coords ** 2 / (2 * sigma ** 2))
    win = np.outer(g1, g1)
    win /= win.sum()
    h, w = a.shape[1] - size + 1, a.shape[2] - size + 1

    def filt(x):  # [n, H, W, c] -> [n, h, w, c], valid correlation
        out = np.zeros((x.shape[0], h, w, x.shape[3]))
        for i in range(size):
            for j in range(size):
                out += win[i, j] * x[:, i:i + h, j:j + w, :]
        return out

    a, b = a.astype(np.float64), b.astype(np.float64)
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    ma, mb = filt(a), filt(b)
    va, vb, cov = filt(a * a) - ma ** 2, filt(b * b) - mb ** 2, filt(a * b) - ma * mb
    s = ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma ** 2 + mb ** 2 + c1) * (va + vb + c2))
    return s.mean((1, 2)).mean(-1)


def test_ssim_against_reference():
    rng = np.random.default_rng(1)
    a = rng.uniform(size=(2, 16, 14, 3)).astype(np.float32)
    b = np.clip(a + rng.normal(scale=0.1, size=a.shape), 0, 1).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 16, 14, 3])
    got, same = _run([tf.image.ssim(x, tf.constant(b), 1.0), tf.image.ssim(x, x, 1.0)], {x: a})
    np.testing.assert_allclose(got, _ssim_ref(a, b, 1.0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(same, [1.0, 1.0], rtol=1e-5)
    got7 = _run(tf.image.ssim(tf.constant(a), tf.constant(b), 2.0, filter_size=7,
                              filter_sigma=1.0))
    np.testing.assert_allclose(got7, _ssim_ref(a, b, 2.0, 7, 1.0), rtol=1e-4, atol=1e-5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="smaller than the filter"):
        tf.image.ssim(tf.zeros([1, 8, 8, 1]), tf.zeros([1, 8, 8, 1]), 1.0)


def _crop_ref(img, boxes, ind, ch, cw, method, extrap):
    """TensorFlow's CropAndResize loop (crop_and_resize_op.cc)."""
    _, h, w, d = img.shape
    out = np.zeros((len(boxes), ch, cw, d))
    for b, (y1, x1, y2, x2) in enumerate(boxes):
        hs = (y2 - y1) * (h - 1) / (ch - 1) if ch > 1 else 0
        ws = (x2 - x1) * (w - 1) / (cw - 1) if cw > 1 else 0
        for i in range(ch):
            y = y1 * (h - 1) + i * hs if ch > 1 else 0.5 * (y1 + y2) * (h - 1)
            for j in range(cw):
                x = x1 * (w - 1) + j * ws if cw > 1 else 0.5 * (x1 + x2) * (w - 1)
                if y < 0 or y > h - 1 or x < 0 or x > w - 1:
                    out[b, i, j] = extrap
                    continue
                im = img[ind[b]].astype(np.float64)
                if method == "nearest":
                    out[b, i, j] = im[int(np.floor(y + 0.5)), int(np.floor(x + 0.5))]  # roundf
                    continue
                t, bt = int(np.floor(y)), int(np.ceil(y))
                left, r = int(np.floor(x)), int(np.ceil(x))
                dy, dx = y - t, x - left
                top = im[t, left] + (im[t, r] - im[t, left]) * dx
                bot = im[bt, left] + (im[bt, r] - im[bt, left]) * dx
                out[b, i, j] = top + (bot - top) * dy
    return out


def test_crop_and_resize_values_and_gradients():
    rng = np.random.default_rng(2)
    img = rng.normal(size=(2, 6, 7, 2)).astype(np.float32)
    # No sample falls on a pixel row or column (where the bilinear weights' slope jumps):
    # a flipped box, one reaching outside the image, two inside.
    boxes = np.array([[0.13, 0.21, 0.77, 0.93], [0.9, 0.71, 0.05, 0.1],
                      [-0.23, 0.3, 0.6, 1.3], [0.31, 0.33, 0.62, 0.61]], np.float32)
    ind = np.array([0, 1, 1, 0], np.int32)
    x = tf.placeholder(tf.float32, [None, 6, 7, 2])
    bx = tf.placeholder(tf.float32, [None, 4])
    bi = tf.placeholder(tf.int32, [None])
    bil = tf.image.crop_and_resize(x, bx, bi, [3, 4], extrapolation_value=-1.0)
    near = tf.image.crop_and_resize(x, bx, bi, [4, 1], method="nearest")
    u8 = tf.image.crop_and_resize(tf.constant((np.abs(img) * 40).astype(np.uint8)),
                                  bx, bi, [2, 2])
    assert bil.shape.as_list() == [None, 3, 4, 2] and u8.dtype == tf.float32
    cot = rng.uniform(0.5, 1.5, size=(4, 3, 4, 2)).astype(np.float32)
    loss = tf.reduce_sum(bil * cot)
    gi, gb = tf.gradients(loss, [x, bx])
    feeds = {x: img, bx: boxes, bi: ind}
    got = _run([bil, near, u8, gi, gb, loss], feeds)
    np.testing.assert_allclose(got[0], _crop_ref(img, boxes, ind, 3, 4, "bilinear", -1.0),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], _crop_ref(img, boxes, ind, 4, 1, "nearest", 0.0),
                               rtol=1e-6)
    np.testing.assert_allclose(got[2], _crop_ref((np.abs(img) * 40).astype(np.uint8), boxes,
                                                 ind, 2, 2, "bilinear", 0.0), rtol=1e-5)

    def f(im, bo):
        return float((_crop_ref(im, bo, ind, 3, 4, "bilinear", -1.0) * cot).sum())

    eps = 1e-3
    for idx in [(0, 2, 3, 1), (1, 0, 6, 0), (1, 4, 1, 1)]:
        e = np.zeros_like(img, np.float64)
        e[idx] = eps
        fd = (f(img + e, boxes) - f(img - e, boxes)) / (2 * eps)
        np.testing.assert_allclose(got[3][idx], fd, rtol=1e-3, atol=1e-3)
    for idx in [(0, 0), (0, 3), (1, 1), (3, 2)]:
        e = np.zeros_like(boxes, np.float64)
        e[idx] = 1e-4
        fd = (f(img, boxes + e) - f(img, boxes - e)) / 2e-4
        np.testing.assert_allclose(got[4][idx], fd, rtol=2e-2, atol=2e-2)


def _nms_ref(boxes, scores, k, thr, sthr):
    def iou(a, b):
        ya, yb = sorted([a[0], a[2]]), sorted([b[0], b[2]])
        xa, xb = sorted([a[1], a[3]]), sorted([b[1], b[3]])
        inter = max(0, min(ya[1], yb[1]) - max(ya[0], yb[0])) * max(
            0, min(xa[1], xb[1]) - max(xa[0], xb[0]))
        union = (ya[1] - ya[0]) * (xa[1] - xa[0]) + (yb[1] - yb[0]) * (xb[1] - xb[0]) - inter
        return inter / union if union > 0 else 0

    keep = []
    for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i)):
        if scores[i] > sthr and len(keep) < k and all(iou(boxes[i], boxes[j]) <= thr
                                                       for j in keep):
            keep.append(i)
    return keep


def test_non_max_suppression():
    boxes = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                      [1, 10.1, 0, 11.1], [0, 100, 1, 101]], np.float32)
    scores = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)
    b = tf.placeholder(tf.float32, [None, 4])
    s = tf.placeholder(tf.float32, [None])
    k = tf.placeholder(tf.int32, [])
    sel = tf.image.non_max_suppression(b, s, k, iou_threshold=0.5)
    sel2 = tf.image.non_max_suppression(b, s, 10, iou_threshold=0.5, score_threshold=0.4)
    got = _run([sel, sel2], {b: boxes, s: scores, k: 3})
    np.testing.assert_array_equal(got[0], [3, 0, 5])        # TF's documented example
    np.testing.assert_array_equal(got[0], _nms_ref(boxes, scores, 3, 0.5, -np.inf))
    np.testing.assert_array_equal(got[1], _nms_ref(boxes, scores, 10, 0.5, 0.4))
    rng = np.random.default_rng(3)
    rb = rng.uniform(0, 1, (30, 4)).astype(np.float32)
    rs = rng.uniform(size=30).astype(np.float32)
    np.testing.assert_array_equal(_run(sel, {b: rb, s: rs, k: 8}),
                                  _nms_ref(rb, rs, 8, 0.5, -np.inf))
    with pytest.raises(tf.errors.InvalidArgumentError, match="iou_threshold"):
        _run(tf.image.non_max_suppression(b, s, 3, iou_threshold=1.5), {b: rb, s: rs})


def test_image_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="method"):
        tf.image.crop_and_resize(tf.zeros([1, 4, 4, 1]), tf.zeros([1, 4]), [0], [2, 2],
                                 method="bicubic")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"CropAndResize.*1 vs 2"):
        tf.image.crop_and_resize(tf.zeros([1, 4, 4, 1]), tf.zeros([1, 4]), [0, 0], [2, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtypes differ"):
        tf.image.psnr(tf.zeros([4, 4, 1]), tf.zeros([4, 4, 1], tf.float64), 1.0)
    with pytest.raises(ValueError, match="3-D or 4-D"):
        tf.image.total_variation(tf.zeros([4, 4]))
