"""Sample weights given per output (a dict by output name, or a list with one array per
output), against Keras 3 on the same weights and data, and against numpy."""

import keras
import numpy as np
import pytest

import mylib as ml

rng = np.random.default_rng(1)
N = 45  # batches of 16 leave a short last batch (evaluate pads it)
X = rng.standard_normal((N, 4)).astype("float32")
YA = rng.standard_normal((N, 2)).astype("float32")
YB = rng.integers(0, 3, size=(N,)).astype("int32")
WA = rng.uniform(size=N).astype("float32")
WB = rng.uniform(size=N).astype("float32")


def _dict_model(K, Model, Input):
    i = Input((4,), name="x")
    h = K.Dense(5, activation="tanh", name="h")(i)
    return Model(i, {"a": K.Dense(2, name="a")(h),
                     "b": K.Dense(3, activation="softmax", name="b")(h)})


def _compile(m, opt):
    m.compile(opt, loss={"a": "mse", "b": "sparse_categorical_crossentropy"},
              loss_weights={"a": 0.5, "b": 2.0},
              metrics={"b": ["sparse_categorical_accuracy"]},
              weighted_metrics={"a": ["mae"], "b": ["sparse_categorical_accuracy"]})


def _pair():
    km = _dict_model(keras.layers, keras.Model, keras.Input)
    mm = _dict_model(ml.layers, ml.Model, ml.layers.Input)
    mm.set_weights(km.get_weights())
    _compile(km, keras.optimizers.SGD(0.1))
    _compile(mm, ml.optimizers.SGD(0.1))
    return km, mm


def test_dict_of_weights_in_evaluate_and_fit_matches_keras():
    km, mm = _pair()
    y, sw = {"a": YA, "b": YB}, {"a": WA, "b": WB}
    kw = dict(sample_weight=sw, batch_size=16, verbose=0, return_dict=True)
    ek, em = km.evaluate(X, y, **kw), mm.evaluate(X, y, **kw)
    assert sorted(em) == sorted(ek)
    for k in ek:
        np.testing.assert_allclose(em[k], ek[k], rtol=1e-5, err_msg=k)
    fkw = dict(sample_weight=sw, epochs=2, batch_size=16, shuffle=False, verbose=0,
               validation_data=(X, y, sw))
    hk, hm = km.fit(X, y, **fkw).history, mm.fit(X, y, **fkw).history
    assert sorted(hm) == sorted(hk)
    for k in hk:
        np.testing.assert_allclose(hm[k], hk[k], rtol=1e-5, err_msg=k)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_each_output_is_weighted_by_its_own_weights():
    """Against numpy: output a's loss by WA, output b's by WB, weighted mae by WA."""
    _, mm = _pair()
    pa = mm.predict(X, verbose=0)["a"]
    res = mm.evaluate(X, {"a": YA, "b": YB}, sample_weight={"a": WA, "b": WB},
                      batch_size=N, verbose=0, return_dict=True)
    np.testing.assert_allclose(res["a_loss"], (((pa - YA) ** 2).mean(1) * WA).mean(),
                               rtol=1e-5)
    np.testing.assert_allclose(res["a_mae"], (np.abs(pa - YA).mean(1) * WA).sum() / WA.sum(),
                               rtol=1e-5)
    # Swapping the two outputs' weights changes both losses.
    swapped = mm.evaluate(X, {"a": YA, "b": YB}, sample_weight={"a": WB, "b": WA},
                          batch_size=N, verbose=0, return_dict=True)
    assert abs(swapped["a_loss"] - res["a_loss"]) > 1e-3


def _list_model(K, Model, Input):
    i = Input((4,))
    return Model(i, [K.Dense(2)(i), K.Dense(1)(i)])


def test_list_of_weights_in_train_on_batch_and_evaluate_matches_keras():
    km = _list_model(keras.layers, keras.Model, keras.Input)
    mm = _list_model(ml.layers, ml.Model, ml.layers.Input)
    mm.set_weights(km.get_weights())
    km.compile(keras.optimizers.SGD(0.1), loss=["mse", "mae"])
    mm.compile(ml.optimizers.SGD(0.1), loss=["mse", "mae"])
    yb = rng.standard_normal((N, 1)).astype("float32")
    for _ in range(2):
        np.testing.assert_allclose(mm.train_on_batch(X, [YA, yb], sample_weight=[WA, WB]),
                                   km.train_on_batch(X, [YA, yb], sample_weight=[WA, WB]),
                                   rtol=1e-5)
    np.testing.assert_allclose(
        mm.evaluate(X, [YA, yb], sample_weight=[WA, WB], batch_size=10, verbose=0),
        km.evaluate(X, [YA, yb], sample_weight=[WA, WB], batch_size=10, verbose=0),
        rtol=1e-5)


def test_an_output_left_out_weighs_one():
    _, mm = _pair()
    y = {"a": YA, "b": YB}
    left_out = mm.evaluate(X, y, sample_weight={"a": WA}, verbose=0, return_dict=True)
    ones = mm.evaluate(X, y, sample_weight={"a": WA, "b": np.ones(N, "float32")},
                       verbose=0, return_dict=True)
    for k in ones:
        np.testing.assert_allclose(left_out[k], ones[k], rtol=1e-6, err_msg=k)


@pytest.mark.parametrize("sw,match", [
    ({"a": WA, "c": WB}, "does not have"),
    ({"a": WA, "b": WB[:10]}, "lengths"),
    ({"a": np.ones((N, 3), "float32"), "b": WB}, "1-D"),
])
def test_bad_per_output_weights_are_clear_errors(sw, match):
    _, mm = _pair()
    before = [w.copy() for w in mm.get_weights()]
    with pytest.raises(ValueError, match=match):
        mm.fit(X, {"a": YA, "b": YB}, sample_weight=sw, epochs=1, verbose=0)
    for a, b in zip(mm.get_weights(), before):
        np.testing.assert_array_equal(a, b)
