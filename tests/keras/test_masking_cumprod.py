"""`layers.Masking` (Keras 3) against numpy, and `ml.cumprod` with a finite gradient at
zeros (against jax.grad of jnp.cumprod and finite differences)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib.layers.base import get_mask

X = np.array([[[1., 2.], [0., 0.], [3., 0.], [0., 0.]],
              [[0., 0.], [5., 5.], [5., 6.], [5., 5.]]], np.float32)


@pytest.mark.parametrize("mask_value", [0.0, 5.0])
def test_masking_outputs_and_mask_match_numpy(mask_value):
    x = L.Input(shape=(4, 2))
    layer = L.Masking(mask_value=mask_value)
    y = layer(x)
    m = get_mask(y)
    assert m is not None and layer.supports_masking
    keep = np.any(X != mask_value, axis=-1)
    with ml.Session() as s:
        yv, mv = s.run([y, m], {x: X})
    np.testing.assert_array_equal(mv, keep)
    np.testing.assert_array_equal(yv, X * keep[..., None])
    model = ml.Model(x, y)
    np.testing.assert_array_equal(model.predict(X, verbose=0), X * keep[..., None])
    assert L.Masking.from_config(layer.get_config()).mask_value == mask_value


def test_masking_feeds_recurrent_layers():
    rs = np.random.RandomState(0)
    seq = rs.randn(2, 5, 3).astype(np.float32)
    padded = seq.copy()
    padded[0, 3:] = 0.0  # sample 0 has 3 steps
    x = L.Input(shape=(5, 3))
    lstm = L.LSTM(4)
    model = ml.Model(x, lstm(L.Masking()(x)))
    short = ml.Sequential([L.Input(shape=(3, 3)), L.LSTM(4)])
    short.set_weights(model.get_weights())
    out = model.predict(padded, verbose=0)
    np.testing.assert_allclose(out[0], short.predict(seq[:1, :3], verbose=0)[0], rtol=1e-5,
                               atol=1e-6)


XC = np.array([[2., 0., 3., 0.5, -1.], [1.5, -1., 0., 0., 2.]])
W = np.arange(10.).reshape(2, 5) + 1


def _np_cumprod(x, exclusive, reverse):
    a = x[:, ::-1] if reverse else x
    if exclusive:
        a = np.concatenate([np.ones_like(a[:, :1]), a[:, :-1]], axis=1)
    out = np.cumprod(a, axis=1)
    return out[:, ::-1] if reverse else out


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumprod_values_and_gradient_at_zeros(exclusive, reverse):
    t = ml.constant(XC)
    y = ml.cumprod(t, axis=-1, exclusive=exclusive, reverse=reverse)
    g = ml.gradients(ml.reduce_sum(y * W), t)[0]
    with ml.Session() as s:
        yv, gv = s.run([y, g])
    np.testing.assert_allclose(yv, _np_cumprod(XC, exclusive, reverse))
    assert np.isfinite(gv).all()

    def f(a):
        return np.sum(_np_cumprod(a, exclusive, reverse) * W)

    # finite differences (the loss is a polynomial, so central differences are exact
    # up to rounding)
    eps, fd = 1e-4, np.zeros_like(XC)
    for idx in np.ndindex(XC.shape):
        d = np.zeros_like(XC)
        d[idx] = eps
        fd[idx] = (f(XC + d) - f(XC - d)) / (2 * eps)
    np.testing.assert_allclose(gv, fd, rtol=1e-6, atol=1e-6)
    if not exclusive and not reverse:
        with jax.enable_x64(True):
            jg = jax.grad(lambda a: jnp.sum(jnp.cumprod(a, axis=1) * W))(jnp.asarray(XC))
        np.testing.assert_allclose(gv, np.asarray(jg), rtol=1e-12)


def test_cumprod_axis0_and_float32():
    x = np.array([[1., 2.], [0., 3.], [4., 0.]], np.float32)
    with ml.Session() as s:
        np.testing.assert_allclose(s.run(ml.cumprod(x)), np.cumprod(x, axis=0))
