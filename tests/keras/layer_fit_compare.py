"""One layer in a small model on both sides (mylib and Keras 3, JAX backend): the same
weights, then predictions, two epochs of SGD (losses and final weights) and a
model.save / load_model round trip compared."""

import keras
import numpy as np

import mylib as ml
from mylib import optimizers as mopt

from keras_compare import _close, _same_weights


def fit_like_keras(make_ours, make_theirs, x, y, loss="mse", rtol=1e-4, atol=1e-5,
                   tmp_path=None, head=True):
    """`make_ours()` / `make_theirs()` build the layer under test; each side's model is
    ``Input -> layer [-> Flatten -> Dense(y's width)]`` (no head when `head` is False).
    Returns the mylib model."""
    def build(lib, layer):
        inp = lib.layers.Input(shape=x.shape[1:])
        out = layer(inp)
        if head:
            out = lib.layers.Dense(y.shape[-1])(lib.layers.Flatten()(out))
        return lib.Model(inp, out)

    km, mm = build(keras, make_theirs()), build(ml, make_ours())
    assert [w.shape for w in mm.get_weights()] == [w.shape for w in km.get_weights()]
    _same_weights(mm, km)
    _close(mm.predict(x, verbose=0), km.predict(x, verbose=0), rtol, atol)
    km.compile(keras.optimizers.SGD(0.05), loss)
    mm.compile(mopt.SGD(0.05), loss)
    kw = dict(batch_size=4, epochs=2, shuffle=False, verbose=0)
    kh, mh = km.fit(x, y, **kw).history, mm.fit(x, y, **kw).history
    _close(mh["loss"], kh["loss"], rtol, atol)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        _close(a, b, rtol, atol)
    if tmp_path is not None:
        path = tmp_path / "m.mylib"
        mm.save(path)
        m2 = ml.models.load_model(path)
        np.testing.assert_array_equal(m2.predict(x, verbose=0), mm.predict(x, verbose=0))
    return mm
