"""tf.nn names of TensorFlow 1 programs: lrn, fused_batch_norm, xw_plus_b, zero_fraction,
atrous/separable convolutions, dropout(keep_prob), conv2d(filter=), against numpy/jax
references (gradients against jax.grad of the reference)."""

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core"))
from op_testing import Row, check_case, run_table  # noqa: E402

F32, F64 = np.float32, np.float64


def _lrn_ref(x, r=2, bias=1.0, alpha=0.1, beta=0.75):
    # the formula of TensorFlow's documentation, by an explicit loop over channels
    c = x.shape[-1]
    outs = []
    for k in range(c):
        lo, hi = max(0, k - r), min(c, k + r + 1)
        s = jnp.sum(x[..., lo:hi] ** 2, -1)
        outs.append(x[..., k] / (bias + alpha * s) ** beta)
    return jnp.stack(outs, -1)


def _conv(x, w, dil=1, stride=1, padding="SAME", groups=1):
    return jax.lax.conv_general_dilated(x, w, (stride, stride), padding,
                                        rhs_dilation=(dil, dil),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                        feature_group_count=groups)


def _sep_ref(x, dw, pw):
    c = x.shape[-1]
    m = dw.shape[-1]
    y = _conv(x, dw.reshape(dw.shape[0], dw.shape[1], 1, c * m), groups=c)
    return _conv(y, pw, padding="VALID")


def _bn_train_ref(x, scale, offset):
    m = x.mean((0, 1, 2))
    v = x.var((0, 1, 2))
    return (x - m) / jnp.sqrt(v + 1e-3) * scale + offset


ROWS = [
    Row("lrn", lambda x: tf.nn.lrn(x, depth_radius=2, bias=1.0, alpha=0.1, beta=0.75),
        _lrn_ref, [((2, 3, 3, 6),)], (F32, F64)),
    Row("local_response_normalization_defaults", tf.nn.local_response_normalization,
        lambda x: _lrn_ref(x, 5, 1.0, 1.0, 0.5), [((1, 2, 2, 8),)]),
    Row("xw_plus_b", tf.nn.xw_plus_b, lambda x, w, b: x @ w + b, [((4, 3), (3, 5), (5,))]),
    Row("atrous_conv2d", lambda x, w: tf.nn.atrous_conv2d(x, w, rate=2, padding="SAME"),
        lambda x, w: _conv(x, w, dil=2), [((2, 7, 7, 3), (3, 3, 3, 4))], tol=1e-3),
    Row("separable_conv2d",
        lambda x, d, p: tf.nn.separable_conv2d(x, d, p, [1, 1, 1, 1], "SAME"),
        _sep_ref, [((1, 5, 5, 2), (3, 3, 2, 2), (1, 1, 4, 3))], tol=1e-3),
    Row("conv2d_tf1_filter_kw",
        lambda x, w: tf.nn.conv2d(x, filter=w, strides=[1, 2, 2, 1], padding="SAME",
                                  use_cudnn_on_gpu=True),
        lambda x, w: _conv(x, w, stride=2), [((2, 6, 6, 3), (3, 3, 3, 2))], tol=1e-3),
    Row("fused_batch_norm_train",
        lambda x, s, o: tf.nn.fused_batch_norm(x, s, o)[0], _bn_train_ref,
        [((4, 3, 3, 2), (2,), (2,))], tol=1e-3),
    Row("fused_batch_norm_infer",
        lambda x, s, o, m, v: tf.nn.fused_batch_norm(x, s, o, m, v, is_training=False,
                                                     epsilon=0.01)[0],
        lambda x, s, o, m, v: (x - m) / jnp.sqrt(v + 0.01) * s + o,
        [((2, 2, 2, 3), (3,), (3,), (3,), (3,))],
        inputs=lambda rng, ss, dt: [rng.normal(size=s).astype(dt) if i != 4 else
                                    rng.uniform(0.5, 2, size=s).astype(dt)
                                    for i, s in enumerate(ss)]),
    Row("crelu", tf.nn.crelu, lambda x: jnp.concatenate([jax.nn.relu(x), jax.nn.relu(-x)], -1),
        [((3, 4),)]),
]

CASES = [cid for row in ROWS for cid, _, _ in row.cases()]


@pytest.fixture(scope="module")
def table():
    return run_table(ROWS)


@pytest.mark.parametrize("case", CASES)
def test_op(table, case):
    check_case(table[case])


def test_fused_batch_norm_statistics_and_moments_helpers():
    rng = np.random.default_rng(0)
    xv = rng.normal(size=(4, 3, 3, 2)).astype(np.float64)
    with tf.Graph().as_default():
        x = tf.constant(xv)
        _, m, v = tf.nn.fused_batch_norm(x, tf.ones([2], tf.float64), tf.zeros([2], tf.float64))
        cnt, ms, vs, _ = tf.nn.sufficient_statistics(x, [0, 1, 2])
        mm, vv = tf.nn.normalize_moments(cnt, ms, vs, None)
        zf = tf.nn.zero_fraction(tf.nn.relu(x))
        with tf.Session() as sess:
            m_, v_, mm_, vv_, zf_ = sess.run([m, v, mm, vv, zf])
    np.testing.assert_allclose(m_, xv.mean((0, 1, 2)))
    np.testing.assert_allclose(v_, xv.var((0, 1, 2), ddof=1))   # Bessel-corrected
    np.testing.assert_allclose(mm_, xv.mean((0, 1, 2)))
    np.testing.assert_allclose(vv_, xv.var((0, 1, 2)))
    assert zf_ == pytest.approx(np.mean(xv <= 0))


def test_dropout_keep_prob_positional_and_rate():
    with tf.Graph().as_default():
        keep = tf.placeholder(tf.float32, [])
        x = tf.ones([4000])
        y = tf.nn.dropout(x, keep)                # TF1 tutorial form: keep_prob positional
        z = tf.nn.dropout(x, rate=0.25, seed=1)
        with tf.Session() as sess:
            y_half = sess.run(y, {keep: 0.5})
            y_all = sess.run(y, {keep: 1.0})
            z_ = sess.run(z)
        with pytest.raises(ValueError, match="exactly one"):
            tf.nn.dropout(x, 0.5, rate=0.5)
        with pytest.raises(ValueError, match="keep_prob"):
            tf.nn.dropout(x, keep_prob=0.0)
    assert set(np.unique(y_half)) <= {0.0, 2.0} and 0.4 < np.mean(y_half == 0) < 0.6
    np.testing.assert_array_equal(y_all, 1.0)
    kept = z_[z_ != 0]
    np.testing.assert_allclose(kept, 1 / 0.75, rtol=1e-6)
    assert 0.2 < np.mean(z_ == 0) < 0.3


def test_lrn_rejects_non_4d():
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="4-D"):
            tf.nn.lrn(tf.zeros([2, 3]))


def test_tf1_keyword_spellings():
    rng = np.random.default_rng(3)
    xv = rng.normal(size=(2, 3, 4)).astype(np.float32)
    lab = np.eye(3, dtype=np.float32)[[0, 2]]
    img = rng.normal(size=(1, 5, 5, 2)).astype(np.float32)
    dw = rng.normal(size=(3, 3, 2, 1)).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.constant(xv)
        out = {
            "softmax": tf.nn.softmax(x, dim=1),
            "log_softmax": tf.nn.log_softmax(x, dim=1),
            "l2n": tf.nn.l2_normalize(x, dim=2),
            "mom": tf.nn.moments(x, [0, 1], keep_dims=True)[0],
            "xent": tf.nn.softmax_cross_entropy_with_logits(labels=lab, logits=x[:, :, 0],
                                                             dim=-1),
            "exp": tf.expand_dims(x, dim=1),
            "sq": tf.squeeze(tf.expand_dims(x, 0), squeeze_dims=[0]),
            "dw": tf.nn.depthwise_conv2d(tf.constant(img), dw, [1, 1, 1, 1], "SAME",
                                         rate=[2, 2]),
        }
        with tf.Session() as sess:
            v = sess.run(out)
        with pytest.raises(ValueError, match="both"):
            tf.nn.softmax(x, axis=1, dim=1)
    e = np.exp(xv - xv.max(1, keepdims=True))
    np.testing.assert_allclose(v["softmax"], e / e.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(v["log_softmax"], np.log(e / e.sum(1, keepdims=True)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v["l2n"], xv / np.linalg.norm(xv, axis=2, keepdims=True),
                               rtol=1e-5)
    np.testing.assert_allclose(v["mom"], xv.mean((0, 1), keepdims=True), rtol=1e-5)
    lg = xv[:, :, 0]
    ref = -np.sum(lab * (lg - np.log(np.exp(lg).sum(-1, keepdims=True))), -1)
    np.testing.assert_allclose(v["xent"], ref, rtol=1e-5)
    assert v["exp"].shape == (2, 1, 3, 4) and v["sq"].shape == (2, 3, 4)
    ref_dw = np.asarray(_conv(img, dw.reshape(3, 3, 1, 2), dil=2, groups=2))
    np.testing.assert_allclose(v["dw"], ref_dw, rtol=1e-4, atol=1e-5)


def test_bias_add_gradient_with_unknown_rank():
    rng = np.random.default_rng(6)
    xv = rng.normal(size=(3, 2, 4)).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)          # no shape at all, as TF1 programs write
        b = tf.constant(np.arange(4, dtype=np.float32))
        y = tf.nn.bias_add(x, b)
        gb, = tf.gradients(tf.reduce_sum(y * y), b)
        gbv = _run_one(gb, {x: xv})
    np.testing.assert_allclose(gbv, np.sum(2 * (xv + np.arange(4)), (0, 1)), rtol=1e-5)


def _run_one(t, feed):
    with tf.Session() as sess:
        return sess.run(t, feed)
