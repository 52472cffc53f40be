"""TensorFlow 1's deprecated spellings: ``reduction_indices`` / ``keep_dims`` of the
reductions, ``dimension`` of argmax, and the aliases of `mylib._tf1_aliases`."""

import numpy as np
import pytest

import mylib as tf

A = np.array([[1.0, 5.0, 2.0], [4.0, 0.0, 6.0]], np.float32)


@pytest.mark.parametrize("fn,ref", [("reduce_sum", np.sum), ("reduce_mean", np.mean),
                                    ("reduce_max", np.max), ("reduce_min", np.min),
                                    ("reduce_prod", np.prod)])
def test_reduction_indices_and_keep_dims(fn, ref):
    with tf.Graph().as_default():
        a = tf.constant(A)
        r1 = getattr(tf, fn)(a, reduction_indices=[1])
        r2 = getattr(tf, fn)(a, reduction_indices=0, keep_dims=True)
        with tf.Session() as s:
            v1, v2 = s.run([r1, r2])
        np.testing.assert_allclose(v1, ref(A, axis=1), rtol=1e-6)
        np.testing.assert_allclose(v2, ref(A, axis=0, keepdims=True), rtol=1e-6)
        with pytest.raises(ValueError, match="both 'axis' and 'reduction_indices'"):
            getattr(tf, fn)(a, axis=0, reduction_indices=0)


def test_argmax_dimension_and_aliases():
    with tf.Graph().as_default():
        a = tf.constant(A)
        v = tf.Variable(3.0)
        i = tf.constant([7, -7])
        out = [tf.argmax(a, dimension=1), tf.argmin(a, dimension=0), tf.to_float(i),
               tf.to_int64(tf.constant(2.7)), tf.div(i, 2), tf.div(tf.to_double(i), 2),
               tf.mul(a, 2.0), tf.sub(a, 1.0), tf.neg(a)]
        with tf.Session() as s:
            s.run(tf.initialize_all_variables())
            assert s.run(tf.assign_add(v, 2.0)) == 5.0
            assert s.run(tf.assign_sub(v, 1.0)) == 4.0
            assert s.run(tf.assign(v, 9.0)) == 9.0
            vals = s.run(out)
        assert tf.all_variables() == [v]
    np.testing.assert_array_equal(vals[0], [1, 2])
    np.testing.assert_array_equal(vals[1], [0, 1, 0])
    assert vals[2].dtype == np.float32 and vals[3] == 2 and vals[3].dtype == np.int64
    np.testing.assert_array_equal(vals[4], [3, -4])  # floor division for integers
    np.testing.assert_array_equal(vals[5], [3.5, -3.5])
    np.testing.assert_array_equal(vals[6], A * 2)
    np.testing.assert_array_equal(vals[7], A - 1)
    np.testing.assert_array_equal(vals[8], -A)
    with pytest.raises(TypeError, match="must be a Variable"):
        tf.assign(tf.constant(1.0), 2.0)


def test_checkpoint_reader_and_missing_train_names(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="v")
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(s, str(tmp_path / "m"))
    reader = tf.train.NewCheckpointReader(path)
    np.testing.assert_array_equal(reader.get_tensor("v"), np.arange(6).reshape(2, 3))
    assert reader.get_variable_to_shape_map() == {"v": [2, 3]}
    assert reader.has_tensor("v") and not reader.has_tensor("w")
    with pytest.raises(tf.errors.NotFoundError, match="w"):
        reader.get_tensor("w")
    with pytest.raises(AttributeError, match="MonitoredTrainingSession"):
        tf.train.Supervisor
    with pytest.raises(AttributeError, match="placeholders"):
        tf.train.Example
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        tf.train.nothing_here


def test_top_level_eager_switches_and_missing_names():
    assert tf.executing_eagerly() is False
    tf.disable_eager_execution()
    with pytest.raises(NotImplementedError, match="Session"):
        tf.enable_eager_execution()
    with pytest.raises(AttributeError, match="MonitoredTrainingSession"):
        tf.estimator
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        tf.not_a_name
