"""Functional models take data one rank off an input whose shape ends in 1, as Keras 3
(keras-io's siamese contrastive example fits (n, 28, 28) images to Input((28, 28, 1))),
checked against Keras 3 on the same weights."""

import keras
import numpy as np
import pytest

from mylib import keras as mk

from keras_compare import _close, _same_weights

RS = np.random.RandomState(4)


def _pair(lib, in_shape):
    inp = lib.Input(in_shape)
    x = lib.layers.Flatten()(inp)
    out = lib.layers.Dense(3)(x)
    return lib.Model(inp, out)


@pytest.mark.parametrize("in_shape,data_shape", [((4, 4, 1), (6, 4, 4)),
                                                 ((5,), (6, 5, 1))])
def test_predict_fit_evaluate_and_call_adjust_rank_as_keras(in_shape, data_shape):
    mm, km = _pair(mk, in_shape), _pair(keras, in_shape)
    _same_weights(mm, km)
    x = RS.randn(*data_shape).astype(np.float32)
    y = RS.randn(6, 3).astype(np.float32)
    _close(mm.predict(x, verbose=0), km.predict(x, verbose=0))
    _close(mm(x), km(x))
    for m in (mm, km):
        m.compile("sgd", "mse")
    _close(mm.evaluate(x, y, verbose=0), km.evaluate(x, y, verbose=0))
    mm.fit(x, y, epochs=1, batch_size=6, verbose=0, shuffle=False)
    km.fit(x, y, epochs=1, batch_size=6, verbose=0, shuffle=False)
    _close(mm.predict(x, verbose=0), km.predict(x, verbose=0))


def test_other_rank_mismatches_still_raise_with_shapes():
    mm = _pair(mk, (4, 4, 2))
    with pytest.raises(ValueError, match=r"\(None, 4, 4, 2\).*\(6, 4, 4\)"):
        mm.predict(np.zeros((6, 4, 4), np.float32), verbose=0)
    mm = _pair(mk, (4, 4, 1))
    with pytest.raises(ValueError, match=r"\(None, 4, 4, 1\).*\(6, 16\)"):
        mm.predict(np.zeros((6, 16), np.float32), verbose=0)
