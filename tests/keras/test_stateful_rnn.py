"""Stateful recurrent layers (``stateful=True``): each batch starts from the previous
batch's final states, in predict, evaluate and fit; `reset_states` zeroes them.

References: Keras 3 (JAX backend) layers with the same weights, fed the previous final
states through ``initial_state`` (Keras 3 on JAX drops a stateful layer's writes, so its
own stateful mode is no reference), and a training loop written with `jax.grad` over
Keras's `stateless_call`.
"""

import jax
import keras
import numpy as np
import pytest

import mylib as ml

B, T, F, U = 4, 5, 3, 2


def _data(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, T, F)).astype("float32")


def _keras_chain(layer_cls, weights, batches, **kw):
    """Keras outputs of each batch, each started from the previous one's states."""
    k = getattr(keras.layers, layer_cls)(U, return_sequences=True, return_state=True, **kw)
    k(batches[0])
    k.set_weights(weights)
    outs, states = [], None
    for xb in batches:
        r = k(xb, initial_state=states) if states is not None else k(xb)
        outs.append(np.asarray(r[0]))
        states = list(r[1:])
    return outs, [np.asarray(s) for s in states]


@pytest.mark.parametrize("layer_cls", ["LSTM", "GRU", "SimpleRNN"])
def test_predict_continues_each_sample_from_the_previous_batch(layer_cls):
    x = _data()
    layer = getattr(ml.layers, layer_cls)(U, stateful=True, return_sequences=True)
    m = ml.Sequential([ml.layers.Input((T, F), batch_size=B), layer])
    got = m.predict(x, batch_size=B, verbose=0)  # two batches: the second continues
    want, final = _keras_chain(layer_cls, layer.get_weights(), [x[:B], x[B:]])
    np.testing.assert_allclose(got, np.concatenate(want), rtol=1e-5, atol=1e-6)
    for v, s in zip(layer.states, final):
        np.testing.assert_allclose(ml.layers.backend.get_values([v])[0], s,
                                   rtol=1e-5, atol=1e-6)
    # a third call goes on from there; reset_states starts over
    again = m.predict(x[:B], verbose=0)
    want3, _ = _keras_chain(layer_cls, layer.get_weights(), [x[:B], x[B:], x[:B]])
    np.testing.assert_allclose(again, want3[2], rtol=1e-5, atol=1e-6)
    m.reset_states()
    np.testing.assert_allclose(m.predict(x[:B], verbose=0), want[0], rtol=1e-5, atol=1e-6)
    assert len(m.get_weights()) == len(layer.get_weights())  # states are not weights


def test_rnn_layer_with_cell_and_reset_states_values():
    x = _data()
    layer = ml.layers.RNN(ml.layers.LSTMCell(U), stateful=True, return_sequences=True)
    m = ml.Sequential([ml.layers.Input((T, F), batch_size=B), layer])
    m.predict(x[:B], verbose=0)
    h0 = np.full((B, U), 0.5, np.float32)
    c0 = np.full((B, U), -0.25, np.float32)
    layer.reset_states([h0, c0])
    got = m.predict(x[B:], verbose=0)
    k = keras.layers.LSTM(U, return_sequences=True)
    k(x[:B])
    k.set_weights(layer.get_weights())
    np.testing.assert_allclose(got, np.asarray(k(x[B:], initial_state=[h0, c0])),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        layer.reset_states([h0[:2], c0])
    with pytest.raises(ValueError, match="2 state"):
        layer.reset_states([h0])


def test_fit_carries_states_between_training_steps():
    """Two epochs of three batches, SGD, no shuffling, no reset: weights and states
    against a hand-written JAX loop over Keras's stateless_call."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3 * B, T, F)).astype("float32")
    y = rng.standard_normal((3 * B, T, 1)).astype("float32")
    lr = 0.1
    m = ml.Sequential([ml.layers.Input((T, F), batch_size=B),
                       ml.layers.LSTM(U, stateful=True, return_sequences=True),
                       ml.layers.Dense(1)])
    w0 = m.get_weights()
    m.compile(ml.optimizers.SGD(lr), "mse")
    hist = m.fit(x, y, batch_size=B, epochs=2, shuffle=False, verbose=0)

    xi, hi, ci = keras.Input((T, F)), keras.Input((U,)), keras.Input((U,))
    seq, h, c = keras.layers.LSTM(U, return_sequences=True, return_state=True)(
        xi, initial_state=[hi, ci])
    km = keras.Model([xi, hi, ci], [keras.layers.Dense(1)(seq), h, c])
    km.set_weights(w0)
    tv = [v.value for v in km.trainable_variables]
    ntv = [v.value for v in km.non_trainable_variables]

    def loss_fn(tv, xb, yb, h0, c0):
        (out, h1, c1), _ = km.stateless_call(tv, ntv, [xb, h0, c0])
        return jax.numpy.mean((out - yb) ** 2), (h1, c1)

    grad = jax.jit(jax.value_and_grad(loss_fn, has_aux=True))
    state = (np.zeros((B, U), np.float32), np.zeros((B, U), np.float32))
    epoch_losses = []
    for _ in range(2):
        losses = []
        for i in range(3):
            sl = slice(i * B, (i + 1) * B)
            (lv, state), g = grad(tv, x[sl], y[sl], *state)
            tv = [w - lr * gw for w, gw in zip(tv, g)]
            losses.append(float(lv))
        epoch_losses.append(np.mean(losses))
    for a, b in zip(m.get_weights(), [np.asarray(w) for w in tv]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    states = ml.layers.backend.get_values(m.layers[0].states)
    for a, b in zip(states, state):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(hist.history["loss"], epoch_losses, rtol=1e-4)


def test_bidirectional_stateful_and_config():
    x = _data()
    bi = ml.layers.Bidirectional(ml.layers.GRU(U, stateful=True))
    m = ml.Sequential([ml.layers.Input((T, F), batch_size=B), bi])
    first = m.predict(x[:B], verbose=0)
    assert not np.allclose(m.predict(x[:B], verbose=0), first)  # went on from the states
    bi.reset_states()
    np.testing.assert_allclose(m.predict(x[:B], verbose=0), first, rtol=1e-6, atol=1e-7)
    assert len(bi.states) == 2
    assert bi.forward_layer.get_config()["stateful"] is True
    with pytest.raises(AttributeError, match="stateful"):
        ml.layers.Bidirectional(ml.layers.GRU(U)).reset_states()


def test_stateful_needs_a_static_batch_of_the_states_size():
    with pytest.raises(ValueError, match="batch size must be static"):
        ml.Sequential([ml.layers.Input((T, F)), ml.layers.LSTM(U, stateful=True)])
    m = ml.Sequential([ml.layers.Input((T, F), batch_size=B),
                       ml.layers.LSTM(U, stateful=True)])
    with pytest.raises(ml.errors.InvalidArgumentError, match=r"expected shape \[4,"):
        m.predict(_data(6), batch_size=3, verbose=0)
    cfg = m.layers[0].get_config()
    assert cfg["stateful"] is True
    clone = ml.layers.LSTM.from_config(cfg)
    assert clone.stateful


def test_array_calls_of_a_stateful_layer_go_on_from_their_states():
    x = _data()
    layer = ml.layers.SimpleRNN(U, stateful=True, return_sequences=True)
    first = np.asarray(layer(x[:B]))
    second = np.asarray(layer(x[B:]))
    want, _ = _keras_chain("SimpleRNN", layer.get_weights(), [x[:B], x[B:]])
    np.testing.assert_allclose(first, want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(second, want[1], rtol=1e-5, atol=1e-6)


def test_ensure_shape_checks_fed_shapes_when_the_step_compiles():
    x = ml.placeholder("float32", [None, 2])
    y = ml.ensure_shape(x, [3, None], name="checked")
    loss = ml.reduce_sum(y * y)
    (g,) = ml.gradients(loss, [x])
    with ml.Session() as s:
        a = np.arange(6, dtype=np.float32).reshape(3, 2)
        np.testing.assert_allclose(s.run(g, {x: a}), 2 * a)
        assert y.shape.as_list() == [3, 2]
        with pytest.raises(ml.errors.InvalidArgumentError, match=r"checked.*\[4,2\].*\[3,\?\]"):
            s.run(y, {x: np.zeros((4, 2), np.float32)})
