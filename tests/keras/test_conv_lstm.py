"""ConvLSTM1D/2D/3D against Keras 3 (JAX backend): outputs and states with Keras's
weights (strides, dilation, padding, channels-first, masks, go_backwards), configs both
ways, and a few SGD steps of `fit` step for step."""

import keras
import numpy as np
import pytest

import mylib as ml
from mylib import keras as mk

CASES = [
    (2, (4, 7, 6, 3), {"padding": "same"}),
    (2, (4, 7, 6, 3), {"strides": 2, "go_backwards": True}),
    (1, (5, 9, 2), {"dilation_rate": 2, "padding": "same"}),
    (3, (3, 5, 4, 4, 2), {"unit_forget_bias": False}),
    (2, (4, 3, 7, 6), {"data_format": "channels_first", "padding": "same"}),
]


@pytest.mark.parametrize("rank,shape,kw", CASES)
@pytest.mark.parametrize("return_sequences", [False, True])
def test_outputs_and_states_match_keras(rank, shape, kw, return_sequences):
    rng = np.random.default_rng(rank)
    x = rng.standard_normal((2,) + shape).astype("float32")
    name = f"ConvLSTM{rank}D"
    ks = 2 if rank == 3 else 3
    k = getattr(keras.layers, name)(3, ks, return_sequences=return_sequences,
                                    return_state=True, **kw)
    m = getattr(ml.layers, name)(3, ks, return_sequences=return_sequences,
                                 return_state=True, **kw)
    want = [np.asarray(a) for a in k(x)]
    before = m(x)
    assert not np.allclose(np.asarray(before[0]), want[0])  # its own initial weights
    m.set_weights(k.get_weights())
    got = m(x)
    assert len(got) == 3
    for a, b in zip(got, want):
        assert np.asarray(a).shape == b.shape
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-5, atol=1e-5)
    assert [w.shape for w in m.get_weights()] == [w.shape for w in k.get_weights()]
    # a Keras config builds the same layer here, and ours builds Keras's
    kc = k.get_config()
    m2 = getattr(ml.layers, name).from_config(kc)
    assert (m2.filters, m2.kernel_size, m2.strides, m2.padding, m2.data_format) == \
        (3, (ks,) * rank, k.strides, k.padding, k.data_format)
    mc = m.get_config()
    k2 = getattr(keras.layers, name).from_config({**mc, "name": "copy"})
    assert k2.get_config()["dilation_rate"] == kc["dilation_rate"]


def test_masked_steps_keep_the_states():
    """A masked step leaves the states as they were: each sample's final output is
    Keras's on that sample's unmasked steps alone (Keras's own ConvLSTM fails on
    masks)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 4, 4, 2)).astype("float32")
    mask = np.array([[1, 1, 0, 1, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1]], bool)
    k = keras.layers.ConvLSTM2D(2, 3, padding="same")
    m = ml.layers.ConvLSTM2D(2, 3, padding="same")
    k(x)
    m(x)
    m.set_weights(k.get_weights())
    got = np.asarray(m(x, mask=mask))
    for i in range(3):
        want = np.asarray(k(x[i:i + 1, mask[i]]))
        np.testing.assert_allclose(got[i:i + 1], want, rtol=1e-5, atol=1e-5)


def test_fit_matches_keras_step_for_step():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 4, 6, 6, 1)).astype("float32")
    y = rng.standard_normal((8, 6, 6, 1)).astype("float32")

    def build(K):
        return K.Sequential([K.Input((4, 6, 6, 1)),
                             K.layers.ConvLSTM2D(3, 3, padding="same"),
                             K.layers.Conv2D(1, 1)])

    km, mm = build(keras), build(mk)
    mm.set_weights(km.get_weights())
    km.compile(keras.optimizers.SGD(0.05), "mse")
    mm.compile(ml.optimizers.SGD(0.05), "mse")
    kh = km.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    mh = mm.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(mh.history["loss"], kh.history["loss"], rtol=1e-4)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="dilation_rate"):
        ml.layers.ConvLSTM2D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match="static input shapes"):
        ml.layers.ConvLSTM2D(2, 3)(ml.layers.Input((4, None, 6, 1)))
    with pytest.raises(ValueError, match="ndim=5"):
        ml.layers.ConvLSTM2D(2, 3)(ml.layers.Input((4, 6, 1)))


def test_default_names_are_keras_names():
    import re

    for rank in (1, 2, 3):
        name = f"ConvLSTM{rank}D"
        pattern = rf"conv_lstm{rank}d(_\d+)?"
        assert re.fullmatch(pattern, getattr(keras.layers, name)(2, 3).name)
        assert re.fullmatch(pattern, getattr(ml.layers, name)(2, 3).name)
