"""Targets for only the outputs that have a loss (a dict of targets leaving the others
out), against Keras 3 on the same weights and data."""

import keras
import numpy as np
import pytest

import mylib as ml

rng = np.random.default_rng(0)
X = rng.standard_normal((64, 5)).astype("float32")
Y1 = rng.standard_normal((64, 2)).astype("float32")


def _build(L, Model, Input):
    i = Input((5,), name="x")
    h = L.Dense(4, name="h")(i)
    return Model(i, {"o1": L.Dense(2, name="o1")(h), "o2": L.Dense(3, name="o2")(h)})


def test_fit_and_evaluate_with_targets_for_the_trained_output_only():
    km = _build(keras.layers, keras.Model, keras.Input)
    mm = _build(ml.layers, ml.Model, ml.layers.Input)
    w = [(rng.standard_normal(a.shape) * 0.5).astype("float32") for a in km.get_weights()]
    km.set_weights(w)
    mm.set_weights(w)
    for m in (km, mm):
        m.compile(keras.optimizers.SGD(0.05) if m is km else ml.optimizers.SGD(0.05),
                  loss={"o1": "mse"})
    hk = km.fit(X, {"o1": Y1}, epochs=3, batch_size=16, shuffle=False, verbose=0)
    hm = mm.fit(X, {"o1": Y1}, epochs=3, batch_size=16, shuffle=False, verbose=0)
    np.testing.assert_allclose(hm.history["loss"], hk.history["loss"], rtol=1e-5)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    ek = km.evaluate(X, {"o1": Y1}, verbose=0, return_dict=True)
    em = mm.evaluate(X, {"o1": Y1}, verbose=0, return_dict=True)
    np.testing.assert_allclose(em["loss"], ek["loss"], rtol=1e-5)


def test_a_missing_target_that_a_loss_or_metric_reads_is_an_error():
    mm = _build(ml.layers, ml.Model, ml.layers.Input)
    mm.compile("sgd", loss={"o1": "mse", "o2": "mse"})
    with pytest.raises(ValueError, match=r"No data provided for output \['o2'\]"):
        mm.fit(X, {"o1": Y1}, verbose=0)
    mm = _build(ml.layers, ml.Model, ml.layers.Input)
    mm.compile("sgd", loss={"o1": "mse"}, metrics={"o2": ["mae"]})
    with pytest.raises(ValueError, match=r"No data provided for output \['o2'\]"):
        mm.evaluate(X, {"o1": Y1}, verbose=0)


def _build3(L, Model, Input):
    i = Input((5,), name="x")
    h = L.Dense(4, name="h")(i)
    return Model(i, [L.Dense(2, name="o1")(h), L.Dense(3, name="o2")(h),
                     L.Dense(2, name="o3")(h)])


@pytest.mark.parametrize("loss", [["mse", "mse", "mse"], ["mse", None, "mae"],
                                  ["mse", None, None], [None, None, "mae"]],
                         ids=["all", "two", "first", "last"])
def test_per_output_loss_logs_are_keras_s(loss):
    """`<output>_loss` entries where more than one output has a loss, for those
    outputs only; values equal Keras 3's."""
    Y2 = rng.standard_normal((64, 3)).astype("float32")
    Y3 = rng.standard_normal((64, 2)).astype("float32")
    km = _build3(keras.layers, keras.Model, keras.Input)
    mm = _build3(ml.layers, ml.Model, ml.layers.Input)
    w = [(rng.standard_normal(a.shape) * 0.5).astype("float32") for a in km.get_weights()]
    km.set_weights(w)
    mm.set_weights(w)
    km.compile(keras.optimizers.SGD(0.05), loss=loss)
    mm.compile(ml.optimizers.SGD(0.05), loss=loss)
    hk = km.fit(X, [Y1, Y2, Y3], epochs=2, batch_size=16, shuffle=False, verbose=0)
    hm = mm.fit(X, [Y1, Y2, Y3], epochs=2, batch_size=16, shuffle=False, verbose=0)
    assert sorted(hm.history) == sorted(hk.history)
    for key in hk.history:
        np.testing.assert_allclose(hm.history[key], hk.history[key], rtol=1e-5)
    ek = km.evaluate(X, [Y1, Y2, Y3], verbose=0, return_dict=True)
    em = mm.evaluate(X, [Y1, Y2, Y3], verbose=0, return_dict=True)
    assert sorted(em) == sorted(ek)
    for key in ek:
        np.testing.assert_allclose(em[key], ek[key], rtol=1e-5)
