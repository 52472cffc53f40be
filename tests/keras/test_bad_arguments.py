"""fit / evaluate / predict refuse bad arguments and data with errors that name the
argument, what was expected and what was received, before any step changes a weight."""

import numpy as np
import pytest

import mylib as ml
from mylib import errors

X = np.random.RandomState(0).rand(20, 4).astype("float32")
Y = np.random.RandomState(1).randint(0, 3, 20)


def _model():
    m = ml.Sequential([ml.layers.Input((4,)), ml.layers.Dense(3)])
    m.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def _unchanged(m, before):
    for a, b in zip(m.get_weights(), before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("call, exc, pattern", [
    (lambda m: m.predict(X, batch_size=0), ValueError, r"`batch_size` must be >= 1.*=0"),
    (lambda m: m.evaluate(X, Y, batch_size=-3), ValueError, r"`batch_size` must be >= 1.*-3"),
    (lambda m: m.fit(X, Y, batch_size=2.5, verbose=0), TypeError,
     r"`batch_size` must be an integer.*2\.5 \(of type float\)"),
    (lambda m: m.fit(X, Y, epochs="2", verbose=0), TypeError,
     r"`epochs` must be an integer.*epochs='2' \(of type str\)"),
    (lambda m: m.fit(X, Y, epochs=-1, verbose=0), ValueError, r"`epochs` must be >= 0"),
    (lambda m: m.fit(X, Y, initial_epoch=-1, verbose=0), ValueError, "`initial_epoch`"),
    (lambda m: m.fit(X, Y, steps_per_epoch="a", verbose=0), TypeError, "`steps_per_epoch`"),
    (lambda m: m.fit(X, Y, steps_per_epoch=0, verbose=0), ValueError, "`steps_per_epoch`"),
    (lambda m: m.fit(X, Y, validation_split=1.5, verbose=0), ValueError,
     r"`validation_split` must be a float in \[0, 1\).*1\.5"),
    (lambda m: m.fit(X, Y, validation_split="0.2", verbose=0), ValueError,
     "`validation_split`"),
    (lambda m: m.fit(X, Y, validation_freq=0, verbose=0), ValueError, "`validation_freq`"),
    (lambda m: m.fit(X, Y, verbose="x"), ValueError, r'`verbose` must be "auto", 0, 1 or 2'),
    (lambda m: m.evaluate(X, Y, verbose=7), ValueError, "`verbose`"),
    (lambda m: m.fit(X, Y, shuffle="yes", verbose=0), ValueError, "`shuffle`"),
    (lambda m: m.evaluate(X, Y, steps=0), ValueError, r"`steps` must be >= 1"),
    (lambda m: m.predict(X, steps=-1), ValueError, r"`steps` must be >= 1"),
    (lambda m: m.fit(X, Y, class_weight={"a": 1}, verbose=0), ValueError,
     r"`class_weight` keys must be integer class ids.*'a'"),
    (lambda m: m.fit(X, Y, class_weight={0: "heavy"}, verbose=0), ValueError,
     r"`class_weight` values must be finite numbers.*'heavy'"),
    (lambda m: m.fit(X, Y, class_weight=[1, 2], verbose=0), TypeError,
     r"`class_weight` must be a dict.*list"),
    (lambda m: m.fit(X, np.array(["a"] * 20), verbose=0), TypeError,
     r"`y` must hold numbers.*dtype <U1"),
    (lambda m: m.fit(np.array([["a"] * 4] * 20), Y, verbose=0), TypeError,
     r"`x` must hold numbers.*dtype <U1"),
    (lambda m: m.predict([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0]]), ValueError,
     r"`x` must be a rectangular array.*ragged"),
    (lambda m: m.fit(X, np.full(20, np.nan), verbose=0), errors.InvalidArgumentError,
     r"label value of nan, which is not a class id"),
    (lambda m: m.evaluate(X, np.r_[Y[:19], np.inf]), errors.InvalidArgumentError,
     r"label value of inf"),
])
def test_bad_argument_is_refused_and_nothing_changes(call, exc, pattern):
    m = _model()
    before = m.get_weights()
    with pytest.raises(exc, match=pattern):
        call(m)
    _unchanged(m, before)


def test_good_arguments_of_numpy_types_are_accepted():
    m = _model()
    h = m.fit(X, Y, batch_size=np.int64(8), epochs=np.int32(2), verbose=0,
              class_weight={np.int64(0): 2.0, 1: 1}, validation_split=np.float32(0.25))
    assert len(h.history["loss"]) == 2
    assert m.predict(X, batch_size=np.int64(7), verbose=False).shape == (20, 3)
