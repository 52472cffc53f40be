"""Array, selection, segment and scatter ops TF1 programs use: forward values against
numpy/jnp, gradients of the differentiable ones against jax.grad of the reference."""

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
SEG = np.array([0, 2, 0, 1, 2, 2], np.int32)
IDX = np.array([[0, 1], [2, 0], [0, 1]], np.int32)   # duplicate row on purpose


def _distinct(rng, shapes, dt):
    return [(rng.permutation(int(np.prod(s))).reshape(s) / 3.0 - 1).astype(dt) for s in shapes]


def _ref_seg(kind, n):
    fn = {"sum": jax.ops.segment_sum, "max": jax.ops.segment_max}.get(kind)

    def ref(d):
        if kind == "mean":
            s = jax.ops.segment_sum(d, SEG, n)
            c = jax.ops.segment_sum(jnp.ones(SEG.shape, d.dtype), SEG, n)
            return s / jnp.maximum(c, 1).reshape((-1,) + (1,) * (d.ndim - 1))
        if kind == "prod":  # a loop over segments (jax's segment_prod has no VJP here)
            return jnp.stack([jnp.prod(jnp.where(SEG == j, d, 1)) for j in range(n)])
        return fn(d, SEG, n)
    return ref


ROWS = [
    Row("reverse", lambda x: tf.reverse(x, [1]), lambda x: jnp.flip(x, 1), [((3, 4),)]),
    Row("reverse_two_axes", lambda x: tf.reverse(x, [0, -1]), lambda x: jnp.flip(x, (0, 2)),
        [((2, 3, 4),)]),
    Row("reverse_sequence",
        lambda x: tf.reverse_sequence(x, tf.constant([2, 4, 0]), seq_axis=1, batch_axis=0),
        lambda x: jnp.stack([jnp.concatenate([x[0, :2][::-1], x[0, 2:]]), x[1, ::-1], x[2]]),
        [((3, 4, 2),)]),
    Row("reverse_sequence_time_major",
        lambda x: tf.reverse_sequence(x, tf.constant([1, 3]), seq_dim=0, batch_dim=1),
        lambda x: jnp.stack([x[:, 0], x[::-1, 1]], 1), [((3, 2),)]),
    Row("top_k_values", lambda x: tf.nn.top_k(x, 3)[0],
        lambda x: jax.lax.top_k(x, 3)[0], [((4, 6),)], (F32, F64), inputs=_distinct),
    Row("unsorted_segment_sum", lambda d: tf.unsorted_segment_sum(d, SEG, 4),
        _ref_seg("sum", 4), [((6,),), ((6, 3),)], (F32, F64)),
    Row("unsorted_segment_mean", lambda d: tf.math.unsorted_segment_mean(d, SEG, 4),
        _ref_seg("mean", 4), [((6, 2),)]),
    Row("unsorted_segment_max", lambda d: tf.math.unsorted_segment_max(d, SEG, 3),
        _ref_seg("max", 3), [((6, 2),)], inputs=_distinct),
    Row("unsorted_segment_prod", lambda d: tf.math.unsorted_segment_prod(d, SEG, 3),
        _ref_seg("prod", 3), [((6,),)]),
    Row("segment_sum_const_ids", lambda d: tf.segment_sum(d, np.sort(SEG)),
        lambda d: jax.ops.segment_sum(d, np.sort(SEG), 3), [((6, 2),)]),
    Row("scatter_nd", lambda u: tf.scatter_nd(IDX, u, [3, 2, 4]),
        lambda u: jnp.zeros((3, 2, 4), u.dtype).at[IDX[:, 0], IDX[:, 1]].add(u),
        [((3, 4),)], (F32, F64)),
    Row("tensor_scatter_nd_add", lambda t, u: tf.tensor_scatter_nd_add(t, IDX, u),
        lambda t, u: t.at[IDX[:, 0], IDX[:, 1]].add(u), [((3, 2), (3,))]),
    Row("tensor_scatter_nd_sub", lambda t, u: tf.tensor_scatter_nd_sub(t, IDX[:2], u),
        lambda t, u: t.at[IDX[:2, 0], IDX[:2, 1]].add(-u), [((3, 2, 2), (2, 2))]),
    Row("tensor_scatter_nd_update", lambda t, u: tf.tensor_scatter_nd_update(t, IDX[:2], u),
        lambda t, u: t.at[IDX[:2, 0], IDX[:2, 1]].set(u), [((3, 2), (2,))]),
    Row("linspace", lambda a, b: tf.linspace(a, b, 5),
        lambda a, b: jnp.linspace(a, b, 5), [((), ())], (F32, F64)),
    Row("atan2", tf.atan2, jnp.arctan2, [((3, 4), (4,))], (F32, F64)),
    Row("div_no_nan", lambda x, y: tf.div_no_nan(x, y * tf.cast(y > 0, y.dtype)),
        lambda x, y: jnp.where(y > 0, x / jnp.where(y > 0, y, 1), 0), [((3, 4), (3, 4))],
        grad=False),
    Row("count_nonzero", lambda x: tf.count_nonzero(tf.nn.relu(x), axis=1),
        lambda x: jnp.sum(x > 0, 1).astype(jnp.int64), [((3, 5),)], grad=False),
    Row("is_nan_is_inf", lambda x: tf.cast(tf.is_nan(tf.log(x)), tf.float32) * 2 +
        tf.cast(tf.is_inf(1.0 / x), tf.float32),
        lambda x: jnp.isnan(jnp.log(x)) * 2.0 + jnp.isinf(1.0 / x),
        [((8,),)], inputs=lambda rng, s, dt: [np.array([-1, 0, 1, 2, -0.5, 0, 3, 4], dt)],
        grad=False),
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


def test_top_k_indices_ties_and_gradient_target():
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 3.0, 3.0, 0.0], [5.0, 4.0, 6.0, 6.0]])
        v, i = tf.math.top_k(x, k=2)
        g, = tf.gradients(tf.reduce_sum(v), x)
        vv, ii, gg = _run([v, i, g])
    np.testing.assert_array_equal(vv, [[3, 3], [6, 6]])
    np.testing.assert_array_equal(ii, [[1, 2], [2, 3]])  # ties: lower index first
    assert ii.dtype == np.int32
    np.testing.assert_array_equal(gg, [[0, 1, 1, 0], [0, 0, 1, 1]])


def test_sequence_mask_meshgrid_eye_linspace():
    with tf.Graph().as_default():
        lens = tf.placeholder(tf.int32, [3])
        m = tf.sequence_mask(lens, 4)
        mf = tf.sequence_mask(tf.constant([[1, 3]]), dtype=tf.float32)
        xs, ys = tf.meshgrid(tf.constant([1, 2, 3]), tf.constant([10, 20]))
        xi, yi = tf.meshgrid(tf.constant([1, 2, 3]), tf.constant([10, 20]), indexing="ij")
        out = _run([m, mf, xs, ys, xi, yi], {lens: [0, 2, 4]})
    np.testing.assert_array_equal(out[0], np.arange(4)[None] < np.array([0, 2, 4])[:, None])
    np.testing.assert_array_equal(out[1], [[[1, 0, 0], [1, 1, 1]]])
    assert out[1].dtype == np.float32
    ref = np.meshgrid([1, 2, 3], [10, 20])
    np.testing.assert_array_equal(out[2], ref[0])
    np.testing.assert_array_equal(out[3], ref[1])
    refi = np.meshgrid([1, 2, 3], [10, 20], indexing="ij")
    np.testing.assert_array_equal(out[4], refi[0])
    np.testing.assert_array_equal(out[5], refi[1])


def test_sequence_mask_without_maxlen_needs_static_lengths():
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.UnimplementedError, match="maxlen"):
            tf.sequence_mask(tf.placeholder(tf.int32, [3]))


def test_boolean_mask_forward_and_gradient_on_host():
    rng = np.random.default_rng(1)
    xv = rng.normal(size=(4, 3, 2)).astype(np.float32)
    mv = np.array([[True, False, True], [False, False, False], [True, True, True],
                   [False, True, False]])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [4, 3, 2])
        m = tf.placeholder(tf.bool, [4, 3])
        y = tf.boolean_mask(x, m)
        assert y.shape.as_list() == [None, 2]
        w = tf.constant(np.arange(2, dtype=np.float32) + 1)
        loss = tf.reduce_sum(tf.square(y) * w)
        g, = tf.gradients(loss, x)
        yv, gv = _run([y, g], {x: xv, m: mv})
        # the mask's shape is checked when it runs too
        with pytest.raises(tf.errors.InvalidArgumentError):
            _run(tf.boolean_mask(x, tf.placeholder_with_default(np.ones((4, 2), bool),
                                                                [None, None])), {x: xv})
    np.testing.assert_array_equal(yv, xv[mv])
    ref = jax.grad(lambda a: jnp.sum(jnp.square(a[mv]) * (np.arange(2) + 1)))(xv)
    np.testing.assert_allclose(gv, ref, rtol=1e-6)


def test_unique_first_occurrence_order():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [None])
        y, idx = tf.unique(x)
        yv, iv = _run([y, idx], {x: [4, 1, 4, 7, 1, 1, 9]})
    np.testing.assert_array_equal(yv, [4, 1, 7, 9])
    np.testing.assert_array_equal(iv, [0, 1, 0, 2, 1, 1, 3])
    np.testing.assert_array_equal(yv[iv], [4, 1, 4, 7, 1, 1, 9])


def test_tuple_gates_on_all_inputs_and_segment_errors():
    with tf.Graph().as_default():
        v = tf.Variable(0.0)
        inc = tf.assign_add(v, 1.0)
        a, b = tf.tuple([tf.constant(1.0), tf.constant(2.0)], control_inputs=[inc])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run([a, b]) == [1.0, 2.0]
            assert sess.run(v) == 1.0
        with pytest.raises(tf.errors.UnimplementedError, match="unsorted_segment_sum"):
            tf.segment_sum(tf.ones([3]), tf.placeholder(tf.int32, [3]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="prefix"):
            tf.unsorted_segment_sum(tf.ones([3, 2]), tf.constant([0, 1]), 2)
        with pytest.raises(tf.errors.InvalidArgumentError, match="updates"):
            tf.scatter_nd(tf.constant([[0], [1]]), tf.ones([3]), [4])
        with pytest.raises(tf.errors.InvalidArgumentError, match="at least k=5"):
            tf.nn.top_k(tf.ones([2, 3]), 5)


def test_missing_names_say_what_to_use():
    for name, hint in [("estimator", "MonitoredTrainingSession"),
                       ("Supervisor", "MonitoredTrainingSession")]:
        with pytest.raises(AttributeError, match=hint):
            getattr(tf, name)


def test_where_with_condition_only_gives_coordinates():
    cv = np.array([[True, False, True], [False, False, True]])
    with tf.Graph().as_default():
        c = tf.placeholder(tf.bool, [2, 3])
        w = tf.where(c)
        assert w.shape.as_list() == [None, 2] and w.dtype == tf.int64
        picked = tf.gather_nd(tf.constant(np.arange(6).reshape(2, 3)), w)
        wv, pv = _run([w, picked], {c: cv})
        with pytest.raises(ValueError, match="neither"):
            tf.where(c, tf.ones([2, 3]))
    np.testing.assert_array_equal(wv, np.argwhere(cv))
    np.testing.assert_array_equal(pv, [0, 2, 5])


def test_confusion_matrix_and_tf1_scatter_names():
    from sklearn.metrics import confusion_matrix as sk_cm
    rng = np.random.default_rng(4)
    lv = rng.integers(0, 4, 50)
    pv = rng.integers(0, 4, 50)
    wv = rng.uniform(size=50).astype(np.float32)
    with tf.Graph().as_default():
        lab = tf.placeholder(tf.int64, [None])
        pred = tf.placeholder(tf.int32, [None])
        cm = tf.confusion_matrix(lab, pred, num_classes=4)
        cmw = tf.math.confusion_matrix(lab, pred, 4, weights=wv[:, None][:, 0],
                                       dtype=tf.float32)
        cm_const = tf.confusion_matrix([0, 2, 2], [0, 1, 2])
        upd = tf.tensor_scatter_update(tf.zeros([3]), [[1]], [5.0])
        out = _run([cm, cmw, cm_const, upd], {lab: lv, pred: pv})
        with pytest.raises(tf.errors.UnimplementedError, match="num_classes"):
            tf.confusion_matrix(lab, pred)
    np.testing.assert_array_equal(out[0], sk_cm(lv, pv, labels=range(4)))
    np.testing.assert_allclose(out[1], sk_cm(lv, pv, labels=range(4), sample_weight=wv),
                               rtol=1e-5)
    np.testing.assert_array_equal(out[2], [[1, 0, 0], [0, 0, 0], [0, 1, 1]])
    np.testing.assert_array_equal(out[3], [0, 5, 0])


def test_pool_and_conv_transpose_tf1_keywords():
    rng = np.random.default_rng(5)
    xv = rng.normal(size=(1, 4, 4, 2)).astype(np.float32)
    wv = rng.normal(size=(3, 3, 3, 2)).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.constant(xv)
        mp = tf.nn.max_pool(value=x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
        ct = tf.nn.conv2d_transpose(value=x, filter=wv, output_shape=[1, 8, 8, 3],
                                    strides=[1, 2, 2, 1], padding="SAME")
        g, = tf.gradients(tf.reduce_sum(ct * ct), x)
        mpv, ctv, gv = _run([mp, ct, g])
        with pytest.raises(TypeError, match="ksize"):
            tf.nn.max_pool(x, strides=[1, 1, 1, 1], padding="SAME")
    np.testing.assert_allclose(mpv, xv.reshape(1, 2, 2, 2, 2, 2).max((2, 4)))
    # conv2d_transpose is the adjoint of conv2d: <ct(x), y> == <x, conv2d(y)>
    yv = rng.normal(size=(1, 8, 8, 3)).astype(np.float32)
    conv = jax.lax.conv_general_dilated(yv, wv, (2, 2), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    assert np.sum(ctv * yv) == pytest.approx(float(np.sum(xv * np.asarray(conv))), rel=1e-4)
    assert gv.shape == xv.shape
