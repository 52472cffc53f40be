"""nn ops: one table row per op, plus stability of the cross-entropies with huge and
-inf logits, conv/pool against lax references, dropout, clipping."""

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
import pytest
from jax import lax

import mylib as ml
from op_testing import Row, check_case, run_table

F32, F64 = np.float32, np.float64
UN = [((3, 5),), ((2, 3, 4),)]


def _ref_log_softmax(x, axis=-1):
    return x - jnp.log(jnp.sum(jnp.exp(x), axis, keepdims=True))


def _ref_softmax(x, axis=-1):
    e = jnp.exp(x)
    return e / jnp.sum(e, axis, keepdims=True)


def _softmax_labels(rng, shapes, dt):
    logits = rng.normal(size=shapes[0]).astype(dt) * 2
    p = rng.uniform(size=shapes[1])
    return [(p / p.sum(-1, keepdims=True)).astype(dt), logits]


def _sparse_labels(rng, shapes, dt):
    logits = rng.normal(size=shapes[1]).astype(dt) * 2
    return [rng.integers(0, shapes[1][-1], size=shapes[0]).astype(np.int32), logits]


def _conv_ref(padding, strides=(1, 1), dil=(1, 1)):
    return lambda x, w: lax.conv_general_dilated(
        x, w, strides, padding, rhs_dilation=dil, dimension_numbers=("NHWC", "HWIO", "NHWC"),
        precision="highest")


def _pool_ref(kind, k, s, padding):
    def f(x):
        win, st = (1, *k, 1), (1, *s, 1)
        if kind == "max":
            return lax.reduce_window(x, -jnp.inf, lax.max, win, st, padding)
        tot = lax.reduce_window(x, 0.0, lax.add, win, st, padding)
        cnt = lax.reduce_window(jnp.ones_like(x), 0.0, lax.add, win, st, padding)
        return tot / cnt
    return f


def _distinct(rng, shapes, dt):
    return [(rng.permutation(int(np.prod(s))).reshape(s) / 7.0 - 1).astype(dt) for s in shapes]


ROWS = [
    Row("relu", ml.nn.relu, lambda x: jnp.where(x > 0, x, 0), UN, (F32, F64)),
    Row("relu6", ml.nn.relu6, lambda x: jnp.clip(x, 0, 6), UN, domain=(-3, 9)),
    Row("elu", ml.nn.elu, lambda x: jnp.where(x > 0, x, jnp.expm1(x)), UN, (F32, F64),
        second_order=True),
    Row("selu", ml.nn.selu, lambda x: 1.0507009873554805 * jnp.where(
        x > 0, x, 1.6732632423543772 * jnp.expm1(x)), UN, (F32, F64)),
    Row("gelu", ml.nn.gelu, lambda x: 0.5 * x * (1 + jsp.erf(x / np.sqrt(2))), UN, (F32, F64)),
    Row("gelu_tanh", lambda x: ml.nn.gelu(x, approximate=True),
        lambda x: 0.5 * x * (1 + jnp.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), UN),
    Row("softplus", ml.nn.softplus, lambda x: jnp.log1p(jnp.exp(x)), UN, (F32, F64)),
    Row("softsign", ml.nn.softsign, lambda x: x / (1 + jnp.abs(x)), UN),
    Row("leaky_relu", lambda x: ml.nn.leaky_relu(x, 0.1), lambda x: jnp.where(x > 0, x, 0.1 * x),
        UN),
    Row("silu", ml.nn.silu, lambda x: x / (1 + jnp.exp(-x)), UN),
    Row("softmax", ml.nn.softmax, _ref_softmax, UN, (F32, F64), second_order=True),
    Row("softmax_axis0", lambda x: ml.nn.softmax(x, axis=0), lambda x: _ref_softmax(x, 0), UN),
    Row("log_softmax", ml.nn.log_softmax, _ref_log_softmax, UN, (F32, F64), second_order=True),
    Row("bias_add", ml.nn.bias_add, lambda x, b: x + b, [((3, 4), (4,)), ((2, 3, 3, 5), (5,))],
        (F32, F64)),
    Row("bias_add_nchw", lambda x, b: ml.nn.bias_add(x, b, data_format="NCHW"),
        lambda x, b: x + b[:, None, None], [((2, 3, 4, 4), (3,))]),
    Row("softmax_xent", lambda lb, lg: ml.nn.softmax_cross_entropy_with_logits(lb, lg),
        lambda lb, lg: -jnp.sum(lb * _ref_log_softmax(lg), -1),
        [((4, 5), (4, 5)), ((2, 3, 6), (2, 3, 6))], (F32, F64), inputs=_softmax_labels,
        second_order=True, diff=(1, 0)),
    Row("sparse_softmax_xent",
        lambda lb, lg: ml.nn.sparse_softmax_cross_entropy_with_logits(labels=lb, logits=lg),
        lambda lb, lg: -jnp.take_along_axis(_ref_log_softmax(lg), lb[..., None], -1)[..., 0],
        [((4,), (4, 5)), ((2, 3), (2, 3, 7))], (F32, F64), inputs=_sparse_labels,
        second_order=True, diff=(1,)),
    Row("sigmoid_xent", lambda z, x: ml.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
        lambda z, x: -(z * jnp.log(1 / (1 + jnp.exp(-x))) + (1 - z) * jnp.log(
            1 - 1 / (1 + jnp.exp(-x)))),
        [((4, 3), (4, 3))], (F32, F64), domain=(-3, 3),
        inputs=lambda rng, s, dt: [rng.uniform(0, 1, s[0]).astype(dt),
                                   rng.normal(size=s[1]).astype(dt)]),
    Row("l2_loss", ml.nn.l2_loss, lambda x: jnp.sum(x * x) / 2, UN, (F32, F64)),
    Row("l2_normalize", lambda x: ml.nn.l2_normalize(x, axis=-1),
        lambda x: x / jnp.sqrt(jnp.sum(x * x, -1, keepdims=True)), UN),
    Row("moments_mean", lambda x: ml.nn.moments(x, [0])[0], lambda x: jnp.mean(x, 0), UN),
    Row("moments_var", lambda x: ml.nn.moments(x, [0, 1])[1],
        lambda x: jnp.var(x, (0, 1)), [((3, 5, 2),)], grad=False),
    Row("conv2d_same", lambda x, w: ml.nn.conv2d(x, w, 1, "SAME"), _conv_ref("SAME"),
        [((2, 5, 5, 3), (3, 3, 3, 4))], (F32, F64), tol=1e-3),
    Row("conv2d_valid_s2", lambda x, w: ml.nn.conv2d(x, w, [1, 2, 2, 1], "VALID"),
        _conv_ref("VALID", (2, 2)), [((2, 7, 6, 2), (3, 2, 2, 3))], tol=1e-3),
    Row("conv2d_dilated", lambda x, w: ml.nn.conv2d(x, w, 1, "SAME", dilations=2),
        _conv_ref("SAME", dil=(2, 2)), [((1, 6, 6, 2), (3, 3, 2, 2))], tol=1e-3),
    Row("max_pool", lambda x: ml.nn.max_pool(x, 2, 2, "VALID"),
        _pool_ref("max", (2, 2), (2, 2), "VALID"), [((2, 4, 6, 3),)], inputs=_distinct),
    Row("max_pool_same", lambda x: ml.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
        _pool_ref("max", (3, 3), (2, 2), "SAME"), [((1, 5, 5, 2),)], inputs=_distinct),
    Row("avg_pool", lambda x: ml.nn.avg_pool(x, 2, 2, "VALID"),
        _pool_ref("avg", (2, 2), (2, 2), "VALID"), [((2, 4, 6, 3),)], (F32, F64)),
    Row("avg_pool_same", lambda x: ml.nn.avg_pool(x, 3, 2, "SAME"),
        _pool_ref("avg", (3, 3), (2, 2), "SAME"), [((1, 5, 5, 2),)]),
    Row("clip_by_value", lambda x: ml.clip_by_value(x, -0.5, 0.7),
        lambda x: jnp.clip(x, -0.5, 0.7), UN),
    Row("clip_by_norm", lambda x: ml.clip_by_norm(x, 1.0),
        lambda x: x * 1.0 / jnp.maximum(jnp.sqrt(jnp.sum(x * x)), 1.0), UN),
]

CASES = [cid for row in ROWS for cid, _, _ in row.cases()]


@pytest.fixture(scope="module")
def table():
    return run_table(ROWS, seed=1)


@pytest.mark.parametrize("case", CASES)
def test_op(table, case):
    check_case(table[case])


def test_xent_stable_with_huge_and_neg_inf_logits():
    g = ml.Graph()
    with g.as_default():
        logits = ml.constant([[1e30, 0.0, -np.inf], [-np.inf, 5.0, -1e30], [0.0, 1.0, 2.0]],
                             ml.float32)
        labels = ml.constant([0, 1, 2])
        soft = ml.one_hot(labels, 3)
        l1 = ml.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        l2 = ml.nn.softmax_cross_entropy_with_logits(labels=soft, logits=logits)
        ls = ml.nn.log_softmax(logits)
        sm = ml.nn.softmax(logits)
        g1, = ml.gradients(ml.reduce_sum(l1), [logits])
        g2, = ml.gradients(ml.reduce_sum(l2), [logits])
        with ml.Session(graph=g) as s:
            v = s.run({"l1": l1, "l2": l2, "g1": g1, "g2": g2, "ls": ls, "sm": sm})
    ref = -jax.nn.log_softmax(jnp.array([[0.0, 1.0, 2.0]]))[0, 2]
    for k in ("l1", "l2"):
        assert np.all(np.isfinite(v[k])), (k, v[k])
        np.testing.assert_allclose(v[k], [0, 0, ref], rtol=1e-5, atol=1e-6)
    for k in ("g1", "g2"):
        assert np.all(np.isfinite(v[k])), (k, v[k])
    np.testing.assert_allclose(v["g1"], v["g2"], atol=1e-6)
    assert np.isneginf(v["ls"][0, 2]) and np.all(np.isfinite(v["sm"]))
    np.testing.assert_allclose(v["sm"].sum(-1), 1, rtol=1e-6)


def test_sigmoid_xent_huge_logits_finite():
    g = ml.Graph()
    with g.as_default():
        x = ml.constant([1e30, -1e30, 100.0, -100.0])
        z = ml.constant([1.0, 0.0, 0.0, 1.0])
        loss = ml.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)
        gx, = ml.gradients(ml.reduce_sum(loss), [x])
        lv, gv = ml.Session(graph=g).run([loss, gx])
    np.testing.assert_allclose(lv, [0, 0, 100, 100], rtol=1e-6)
    np.testing.assert_allclose(gv, [0, 0, 1, -1], atol=1e-6)


def test_sparse_xent_errors():
    g = ml.Graph()
    with g.as_default():
        with pytest.raises(ml.errors.InvalidArgumentError) as ei:
            ml.nn.sparse_softmax_cross_entropy_with_logits(labels=ml.zeros([3], ml.int32),
                                                           logits=ml.zeros([4, 5]))
        msg = str(ei.value)
        assert "SparseSoftmaxCrossEntropyWithLogits" in msg and "(4, 5)" in msg
        assert "(3,)" in msg and "test_nn_ops.py" in msg
        with pytest.raises(ml.errors.InvalidArgumentError, match="int32 or int64"):
            ml.nn.sparse_softmax_cross_entropy_with_logits(labels=ml.zeros([4]),
                                                           logits=ml.zeros([4, 5]))


def test_conv2d_channel_mismatch_error():
    g = ml.Graph()
    with g.as_default():
        with pytest.raises(ml.errors.InvalidArgumentError, match="Conv2D.*channels"):
            ml.nn.conv2d(ml.zeros([1, 4, 4, 3]), ml.zeros([3, 3, 2, 1]), padding="SAME")
        y = ml.nn.conv2d(ml.placeholder(ml.float32, [None, 9, 9, 3]), ml.zeros([3, 3, 3, 8]),
                         strides=2, padding="SAME")
        assert y.shape.as_list() == [None, 5, 5, 8]
        p = ml.nn.max_pool(ml.placeholder(ml.float32, [None, 9, 9, 3]), 2, 2, "VALID")
        assert p.shape.as_list() == [None, 4, 4, 3]


def test_dropout():
    g = ml.Graph()
    with g.as_default():
        x = ml.ones([200, 100])
        y = ml.nn.dropout(x, rate=0.3, seed=3)
        ys = ml.nn.dropout(x, rate=0.5, noise_shape=[200, 1], seed=4)
        gx, = ml.gradients(ml.reduce_sum(y), [x])
        with ml.Session(graph=g) as s:
            a, b, c = s.run([y, ys, gx])
            a2 = s.run(y)
    vals = np.unique(a)
    np.testing.assert_allclose(vals, [0, 1 / 0.7], rtol=1e-6)
    assert abs((a == 0).mean() - 0.3) < 0.02 and abs(a.mean() - 1) < 0.03
    assert np.all((b == b[:, :1]))  # the mask is shared along axis 1
    np.testing.assert_array_equal(c, a)  # gradient is the mask times the scale
    assert not np.array_equal(a, a2)
    with pytest.raises(ValueError, match="rate"):
        ml.nn.dropout(ml.ones([2]), rate=1.0)


def test_clip_by_global_norm():
    g = ml.Graph()
    with g.as_default():
        a, b = ml.constant([3.0, 4.0]), ml.constant([[0.0, 12.0]])
        (ca, cb, none), norm = ml.clip_by_global_norm([a, b, None], 6.5)
        assert none is None
        (ua, _), _ = ml.clip_by_global_norm([a, b], 100.0)
        va, vb, vn, vua = ml.Session(graph=g).run([ca, cb, norm, ua])
    np.testing.assert_allclose(vn, 13.0, rtol=1e-6)
    np.testing.assert_allclose(va, [1.5, 2.0], rtol=1e-6)
    np.testing.assert_allclose(vb, [[0, 6.0]], rtol=1e-6)
    np.testing.assert_allclose(vua, [3, 4], rtol=1e-6)
