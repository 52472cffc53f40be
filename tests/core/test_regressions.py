"""Regressions found by probing the graph core as a TensorFlow 1 user would.

One test per bug; expected values are computed independently (numpy, or TF's
documented semantics)."""

import numpy as np
import pytest

import mylib as ml
from mylib import errors


@pytest.fixture
def sess():
    with ml.Graph().as_default():
        with ml.Session() as s:
            yield s


def test_reduce_max_min_of_empty_axis_give_identity(sess):
    # TF: max over an empty axis is -inf (the dtype's lowest for ints), min is +inf.
    p = ml.placeholder(ml.float32, [None, 3])
    pi = ml.placeholder(ml.int32, [None, 2])
    feed = {p: np.zeros((0, 3), np.float32), pi: np.zeros((0, 2), np.int32)}
    mx, mn, imx = sess.run([ml.reduce_max(p, 0), ml.reduce_min(p, 0), ml.reduce_max(pi, 0)],
                           feed)
    np.testing.assert_array_equal(mx, np.full(3, -np.inf, np.float32))
    np.testing.assert_array_equal(mn, np.full(3, np.inf, np.float32))
    np.testing.assert_array_equal(imx, np.full(2, np.iinfo(np.int32).min, np.int32))
    # Non-empty inputs are unaffected.
    assert sess.run(ml.reduce_max(p), {p: [[1, 5, 2]]}) == 5


def test_gather_nd_with_constant_params(sess):
    # A constant (numpy) params indexed inside the compiled step used to fail.
    x = ml.constant(np.arange(6.).reshape(2, 3))
    np.testing.assert_array_equal(sess.run(ml.gather_nd(x, [[1, 2], [0, 0]])), [5., 0.])
    idx = ml.placeholder(ml.int32, [None, 2])
    np.testing.assert_array_equal(sess.run(ml.gather_nd(x, idx), {idx: [[1, 1]]}), [4.])
    g = ml.convert_to_tensor(ml.gradients(ml.gather_nd(x, [[1, 2], [1, 2]]), x)[0])
    np.testing.assert_array_equal(sess.run(g), [[0., 0., 0.], [0., 0., 2.]])


def test_integer_sum_and_prod_keep_their_dtype(sess):
    # TF: reduce_sum of int32 is int32 (jnp widened it to int64 at run time, so the
    # fetched dtype disagreed with the tensor's static dtype).
    for dt in (ml.int8, ml.uint8, ml.int16, ml.int32):
        c = ml.constant([[1, 2], [3, 4]], dt)
        s, p = ml.reduce_sum(c), ml.reduce_prod(c, 0)
        vs, vp = sess.run([s, p])
        assert vs.dtype == dt.np and vs == 10
        assert vp.dtype == dt.np and list(vp) == [3, 8]
    correct = ml.cast(ml.equal(ml.constant([1, 2, 3]), ml.constant([1, 0, 3])), ml.int32)
    assert sess.run(ml.reduce_sum(correct)).dtype == np.int32


def test_where_dtype_error_names_x_and_y(sess):
    with pytest.raises(errors.InvalidArgumentError) as ei:
        ml.where(ml.constant([True]), ml.constant([1.0], ml.float64), ml.constant([2.0]))
    msg = str(ei.value)
    assert "x (input 1) has dtype float64 but y (input 2) has float32" in msg
    assert "test_regressions.py" in msg


def test_assign_error_names_inputs_and_user_line(sess):
    v = ml.Variable([1.0, 2.0], name="v")
    with pytest.raises(errors.InvalidArgumentError) as ei:
        v.assign([1.0, 2.0, 3.0])
    msg = str(ei.value)
    assert "(3,)" in msg and "(2,)" in msg and "'v'" in msg
    assert "test_regressions.py" in msg and "v.assign([1.0, 2.0, 3.0])" in msg


def test_grad_ys_must_match_ys(sess):
    x = ml.constant([1.0, 2.0, 3.0])
    y = x * 2.0
    with pytest.raises(errors.InvalidArgumentError, match=r"grad_ys\[0\].*shape \(2,\)"):
        ml.gradients(y, x, grad_ys=ml.constant([1.0, 2.0]))
    with pytest.raises(errors.InvalidArgumentError, match=r"grad_ys\[0\].*dtype int32"):
        ml.gradients(y, x, grad_ys=ml.constant([1, 2, 3]))
    # A matching grad_ys (a Python list converts to y's dtype) still works.
    np.testing.assert_array_equal(sess.run(ml.gradients(y, x, grad_ys=[[1.0, 2.0, 3.0]])[0]),
                                  [2.0, 4.0, 6.0])


def test_feed_key_op_name_is_a_helpful_type_error(sess):
    x = ml.placeholder(ml.float32, [None], name="x")
    with pytest.raises(TypeError, match=r"'x' refers to an Operation.*'x:0'"):
        sess.run(x * 2.0, {"x": [1.0]})
    np.testing.assert_array_equal(sess.run(x * 2.0, {"x:0": [1.0]}), [2.0])


def test_global_norm_of_all_none_is_zero(sess):
    clipped, norm = ml.clip_by_global_norm([None, None], 1.0)
    assert clipped == [None, None]
    assert sess.run(norm) == 0.0


def test_clip_by_global_norm_with_inf_norm_gives_nan(sess):
    # TF: a non-finite global norm makes every clipped tensor NaN (not silently zero).
    a = ml.constant([3.0, 4.0], ml.float64)
    out, _ = ml.clip_by_global_norm([a], 1.0, use_norm=ml.constant(np.inf, ml.float64))
    assert np.isnan(sess.run(out[0])).all()
    out, norm = ml.clip_by_global_norm([a], 1.0)
    np.testing.assert_allclose(sess.run(out[0]), [0.6, 0.8])
    assert sess.run(norm) == 5.0


def test_one_hot_accepts_tensor_on_off_values(sess):
    on = ml.placeholder(ml.float32, [])
    t = ml.one_hot([0, 2, -1], 3, on_value=on, off_value=ml.constant(-1.0))
    assert t.dtype == ml.float32
    np.testing.assert_array_equal(sess.run(t, {on: 5.0}),
                                  [[5, -1, -1], [-1, -1, 5], [-1, -1, -1]])
    t = ml.one_hot([1], 2, on_value=ml.constant(7), off_value=ml.constant(1))
    assert t.dtype == ml.int32
    np.testing.assert_array_equal(sess.run(t), [[1, 7]])


def test_lists_mixing_tensors_and_numbers_auto_pack(sess):
    # TF1 idiom: ml.zeros([ml.shape(x)[0], 3]) (convert_to_tensor auto-packs lists).
    p = ml.placeholder(ml.float32, [None, 4])
    feed = {p: np.ones((2, 4), np.float32)}
    assert sess.run(ml.ones([ml.shape(p)[0], 3]), feed).shape == (2, 3)
    assert sess.run(ml.reshape(p, [ml.shape(p)[0], 2, 2]), feed).shape == (2, 2, 2)
    a = ml.constant(2.0)
    t = ml.convert_to_tensor([[a, 1.0], [3, a]])
    assert t.dtype == ml.float32 and t.shape.as_list() == [2, 2]
    np.testing.assert_array_equal(sess.run(t), [[2.0, 1.0], [3.0, 2.0]])
    assert sess.run(ml.gradients(ml.reduce_sum(ml.convert_to_tensor([a, a * 2.0])), a)[0]) == 3.0
    # Static attrs accept packed constants; parts from a shape are known at run time.
    assert sess.run(ml.tile(ml.constant([[1.0]]), [2, ml.constant(3)])).shape == (2, 3)
    assert sess.run(ml.tile(p, [ml.shape(p)[0], 1]), feed).shape == (4, 4)


def test_numpy_operands_adopt_the_tensor_dtype(sess):
    # TF1: `x / np.sqrt(d)` with a float32 x stays float32 (np.float64 used to fail).
    x = ml.constant([1.0, 4.0])
    y = x / np.sqrt(4.0)
    assert y.dtype == ml.float32
    np.testing.assert_array_equal(sess.run(y), [0.5, 2.0])
    np.testing.assert_array_equal(sess.run(np.array([1.0, 2.0]) + x), [2.0, 6.0])
    i = ml.constant([1, 2])
    np.testing.assert_array_equal(sess.run(i + np.int64(3)), [4, 5])
    with pytest.raises(TypeError, match="out of range"):
        i + np.int64(2 ** 40)
    with pytest.raises(errors.InvalidArgumentError, match="dtype"):
        i * np.float64(1.5)  # float into int is never silent
