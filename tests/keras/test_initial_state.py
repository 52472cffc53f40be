"""Tensors passed in a layer call's keyword arguments (an RNN's ``initial_state=``) are
inputs of the functional graph: the layers that make them belong to the model, which
replays, trains, serializes and reloads them. Compared with Keras 3 on the same
weights."""

import keras
import numpy as np
import pytest

import mylib as ml
from tests.keras.keras_compare import _close, _same_weights

_rng = np.random.RandomState(0)
XE = _rng.randn(6, 5, 3).astype("float32")
XD = _rng.randn(6, 4, 2).astype("float32")
Y = _rng.randn(6, 4, 1).astype("float32")
A = _rng.randn(6, 3, 4).astype("float32")


def _seq2seq(L, Model, Input):
    ei = Input((5, 3), name="enc_in")
    _, h, c = L.LSTM(4, return_state=True, name="enc")(ei)
    di = Input((4, 2), name="dec_in")
    d = L.LSTM(4, return_sequences=True, name="dec")(di, initial_state=[h, c])
    return Model([ei, di], L.Dense(1, name="out")(d))


def _gru_state_from_dense(L, Model, Input):
    i = Input((3, 4), name="x")
    s = L.Dense(4, name="s")(L.Flatten(name="f")(i))
    return Model(i, L.GRU(4, name="rnn")(L.Dense(4, name="h")(i), initial_state=s))


def _simple_rnn_state_list(L, Model, Input):
    i = Input((3, 4), name="x")
    s = L.Dense(4, name="s")(L.Flatten(name="f")(i))
    return Model(i, L.SimpleRNN(4, name="rnn")(i, initial_state=[s]))


def _bidirectional_states(L, Model, Input):
    i = Input((3, 4), name="x")
    flat = L.Flatten(name="f")(i)
    s1, s2 = L.Dense(3, name="s1")(flat), L.Dense(3, name="s2")(flat)
    return Model(i, L.Bidirectional(L.LSTM(3), name="bi")(i, initial_state=[s1, s2, s1, s2]))


CASES = [(_seq2seq, [XE, XD]), (_gru_state_from_dense, A), (_simple_rnn_state_list, A),
         (_bidirectional_states, A)]


def _both(build):
    km = build(keras.layers, keras.Model, keras.Input)
    mm = build(ml.layers, ml.Model, ml.layers.Input)
    _same_weights(mm, km)
    return km, mm


@pytest.mark.parametrize("build,x", CASES, ids=[c[0].__name__ for c in CASES])
def test_layers_weights_and_predictions_equal_keras(build, x):
    km, mm = _both(build)
    assert [l.name for l in mm.layers if not isinstance(l, ml.layers.InputLayer)] == \
        [l.name for l in km.layers if not isinstance(l, keras.layers.InputLayer)]
    assert [tuple(w.shape) for w in mm.weights] == [tuple(w.shape) for w in km.weights]
    _close(mm.predict(x, verbose=0), km.predict(x, verbose=0), rtol=1e-4)


def test_seq2seq_fit_trains_the_encoder_as_keras():
    km, mm = _both(_seq2seq)
    assert len(mm.trainable_weights) == len(km.trainable_weights) == 8
    km.compile(keras.optimizers.SGD(0.1), "mse")
    mm.compile(ml.optimizers.SGD(0.1), "mse")
    hk = km.fit([XE, XD], Y, epochs=2, batch_size=3, shuffle=False, verbose=0)
    hm = mm.fit([XE, XD], Y, epochs=2, batch_size=3, shuffle=False, verbose=0)
    _close(hm.history["loss"], hk.history["loss"], rtol=1e-4)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        _close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("build,x", CASES[:1] + CASES[3:],
                         ids=[c[0].__name__ for c in CASES[:1] + CASES[3:]])
def test_save_load_and_config_round_trips(build, x, tmp_path):
    km, mm = _both(build)
    want = km.predict(x, verbose=0)
    mm.save(tmp_path / "m.mylib")
    loaded = ml.models.load_model(tmp_path / "m.mylib")
    _close(loaded.predict(x, verbose=0), want, rtol=1e-4)
    clone = ml.Model.from_config(mm.get_config())
    assert len(clone.weights) == len(km.weights)
    clone.set_weights(mm.get_weights())
    _close(clone.predict(x, verbose=0), want, rtol=1e-4)


def test_initial_state_of_the_wrong_shape_is_refused():
    i = ml.layers.Input((3, 4))
    s = ml.layers.Dense(4)(i)  # [batch, 3, 4]: not a state
    with pytest.raises(ValueError, match=r"initial state 0 must have shape \(batch, 4\)"):
        ml.layers.SimpleRNN(4)(i, initial_state=[s])
