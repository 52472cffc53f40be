"""tf.strided_slice as TF1 programs call it: masks, and bounds computed at run time
(TensorFlow's PTB reader slices `data[:, i*n:(i+1)*n]` with `i` dequeued), checked
against numpy slicing and the numpy gradient."""

import numpy as np
import pytest

import mylib.compat.v1 as tf
from mylib import errors

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


@pytest.mark.parametrize("args, ref", [
    (dict(begin=[0, 1, 0], end=[3, 3, 5]), X[0:3, 1:3, 0:5]),
    (dict(begin=[1, 0, 4], end=[-1, 4, 0], strides=[1, 2, -2]), X[1:-1, 0:4:2, 4:0:-2]),
    (dict(begin=[0, 2], end=[0, 0], begin_mask=1, end_mask=1, shrink_axis_mask=2),
     X[:, 2]),
    (dict(begin=[0, 1], end=[0, 3], ellipsis_mask=1), X[..., 1:3]),
    (dict(begin=[0, 0, 1], end=[0, 0, 2], new_axis_mask=2, begin_mask=1, end_mask=1),
     X[:, None, 1:2]),
])
def test_strided_slice_masks_match_numpy(args, ref):
    tf.reset_default_graph()
    y = tf.strided_slice(tf.constant(X), **args)
    assert y.shape.as_list() == list(ref.shape)
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(y), ref)


def test_run_time_bounds_with_set_shape_slice_and_differentiate():
    tf.reset_default_graph()
    x = tf.constant(X)
    i = tf.placeholder(tf.int32, [])
    y = tf.strided_slice(x, [0, 0, i * 2], [3, 4, (i + 1) * 2])
    assert y.shape.as_list() == [3, 4, None]
    y.set_shape([3, 4, 2])
    w = tf.constant(np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 4, 2))
    (g,) = tf.gradients(tf.reduce_sum(y * w), [x])
    with tf.Session() as s:
        for k in (0, 1):
            yv, gv = s.run([y, g], {i: k})
            np.testing.assert_array_equal(yv, X[:, :, 2 * k:2 * k + 2])
            ref = np.zeros_like(X)
            ref[:, :, 2 * k:2 * k + 2] = s.run(w)
            np.testing.assert_allclose(gv, ref)


def test_run_time_bounds_of_a_queue_index():
    # the PTB reader's producer: range_input_producer gives i, the slice has set_shape
    tf.reset_default_graph()
    data = tf.constant(np.arange(2 * 21, dtype=np.int32).reshape(2, 21))
    i = tf.train.range_input_producer(4, shuffle=False).dequeue()
    x = tf.strided_slice(data, [0, i * 5], [2, (i + 1) * 5])
    x.set_shape([2, 5])
    t = tf.strided_slice(data, [0, i * 5 + 1], [2, (i + 1) * 5 + 1])
    t.set_shape([2, 5])
    ref = np.arange(42).reshape(2, 21)
    with tf.Session() as s:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(s, coord)
        for k in [0, 1, 2, 3, 0]:
            xv, tv = s.run([x, t])
            np.testing.assert_array_equal(xv, ref[:, 5 * k:5 * k + 5])
            np.testing.assert_array_equal(tv, ref[:, 5 * k + 1:5 * k + 6])
        coord.request_stop()
        coord.join(threads)


def test_run_time_bounds_without_a_static_size_compile_per_fed_value():
    """No static size: the fed bound is a constant of the step compiled for it (the
    step compiler's sizes from fed values), so the slice is TensorFlow's."""
    tf.reset_default_graph()
    i = tf.placeholder(tf.int32, [])
    y = tf.strided_slice(tf.constant(X), [0, i], [3, i + 2])
    with tf.Session() as s:
        for v in (1, 0, 2):
            np.testing.assert_array_equal(s.run(y, {i: v}), X[0:3, v:v + 2])


def test_unequal_lengths_raise():
    with pytest.raises(errors.InvalidArgumentError, match="one length"):
        tf.strided_slice(tf.constant(X), [0, 0], [1, 1, 1])
