"""`keras.ops.convert_to_numpy(variable)` reads a variable's current value (a layer
weight after `fit`, `optimizer.learning_rate` after assignment), as Keras 3 does."""

import numpy as np

from mylib import keras


def test_convert_to_numpy_reads_trained_variables():
    keras.utils.set_random_seed(0)
    opt = keras.optimizers.SGD(0.1)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(opt, "mse")
    kernel = model.layers[0].kernel
    before = keras.ops.convert_to_numpy(kernel)
    np.testing.assert_array_equal(before, model.get_weights()[0])
    x = np.ones((4, 2), "float32")
    y = np.ones((4, 1), "float32")
    bias = model.get_weights()[1]
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    # one SGD step on mse: kernel -= lr * 2 * mean(pred - y) * x
    residual = float((x @ before + bias - y).mean())
    after = keras.ops.convert_to_numpy(kernel)
    np.testing.assert_allclose(after, before - 0.1 * 2 * residual, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(opt.learning_rate), 0.1, rtol=1e-6)
    opt.learning_rate = 0.25
    np.testing.assert_allclose(keras.ops.convert_to_numpy(opt.learning_rate), 0.25, rtol=1e-6)


def test_variable_numpy_float_and_asarray_read_current_values():
    """`variable.numpy()`, `np.asarray(variable)`, `float(...)`/`int(...)` of Keras
    weights and optimizer variables read their current values, as in Keras 3."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    kernel = model.layers[0].kernel
    np.testing.assert_array_equal(kernel.numpy(), model.get_weights()[0])  # built only
    model.compile(keras.optimizers.SGD(0.1), "mse")
    before = kernel.numpy()
    x, y = np.ones((4, 2), "float32"), np.zeros((4, 1), "float32")
    model.fit(x, y, batch_size=2, epochs=1, verbose=0)
    assert not np.array_equal(kernel.numpy(), before)
    np.testing.assert_array_equal(np.asarray(kernel), model.get_weights()[0])
    assert np.asarray(kernel, dtype="float64").dtype == np.float64
    assert int(model.optimizer.iterations) == 2
    assert abs(float(model.optimizer.learning_rate) - 0.1) < 1e-7


def test_graph_variable_numpy_reads_the_default_session_or_raises():
    """A TensorFlow 1 variable reads from the default session holding its value; with
    none, a FailedPreconditionError says how to read it."""
    import pytest

    import mylib as ml

    g = ml.Graph()
    with g.as_default():
        v = ml.Variable([1.0, 2.0])
        with pytest.raises(ml.errors.FailedPreconditionError, match="no session holds it"):
            v.numpy()
        with ml.Session() as sess:
            sess.run(v.initializer)
            sess.run(v.assign([3.0, 4.0]))
            np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])
            np.testing.assert_array_equal(np.asarray(v), [3.0, 4.0])
        with pytest.raises(ml.errors.FailedPreconditionError):
            float(ml.Variable(1.0))
