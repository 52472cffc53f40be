"""Helpers shared by the Keras 3 comparison tests: the same (redrawn) weights on both
sides, one call compared."""

import numpy as np


def _close(got, want, rtol=1e-5, atol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                               rtol=rtol, atol=atol)


def _randomized(weights, seed=0):
    """Keras's weights with every array redrawn (so zero biases, unit gammas and zero
    moving means are not what is compared), positive where a variance is."""
    rs = np.random.RandomState(seed)
    return [rs.uniform(0.5, 1.5, w.shape).astype(w.dtype) if "var" in name
            else (rs.randn(*w.shape) * 0.5).astype(w.dtype)
            for name, w in weights]


def _same_layer(ours, theirs, x, rtol=1e-5, atol=1e-5, **call_kw):
    """Builds both layers on `x` (an array or a list of arrays), gives ours Keras's
    (redrawn) weights, and compares one call."""
    theirs(x)
    ws = [(v.path, np.asarray(v)) for v in theirs.weights]
    if ws:
        theirs.set_weights(_randomized(ws))
    ours(x)
    ours.set_weights(theirs.get_weights())
    want = np.asarray(theirs(x, **call_kw))
    got = ours(x, **call_kw)
    _close(got, want, rtol, atol)
    return got, want


def _same_weights(mm, km, seed=3):
    """Redraws Keras model `km`'s weights and gives mylib model `mm` the same."""
    km.set_weights(_randomized([(v.path, np.asarray(v)) for v in km.weights], seed=seed))
    mm.set_weights(km.get_weights())
