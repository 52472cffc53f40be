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
