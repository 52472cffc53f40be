"""SimpleRNN / LSTM / GRU / Bidirectional / TimeDistributed against numpy step equations
written from the Keras 3 definitions, with the layers' own weights."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib.layers import backend
from mylib.layers.base import get_mask


def run(t, feed=None):
    return backend.get_session(ml.get_default_graph()).run(t, feed)


def sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_step(kind, x_t, states, w, u, reset_after=True):
    k, rk, b = w
    if kind == "SimpleRNN":
        return [np.tanh(x_t @ k + states[0] @ rk + b)]
    if kind == "LSTM":
        h, c = states
        z = x_t @ k + h @ rk + b
        i, f, g, o = z[:, :u], z[:, u:2 * u], z[:, 2 * u:3 * u], z[:, 3 * u:]
        c = sig(f) * c + sig(i) * np.tanh(g)
        return [sig(o) * np.tanh(c), c]
    h = states[0]
    if reset_after:
        xi = x_t @ k + b[0]
        hi = h @ rk + b[1]
        z = sig(xi[:, :u] + hi[:, :u])
        r = sig(xi[:, u:2 * u] + hi[:, u:2 * u])
        hh = np.tanh(xi[:, 2 * u:] + r * hi[:, 2 * u:])
    else:
        xi = x_t @ k + b
        z = sig(xi[:, :u] + h @ rk[:, :u])
        r = sig(xi[:, u:2 * u] + h @ rk[:, u:2 * u])
        hh = np.tanh(xi[:, 2 * u:] + (r * h) @ rk[:, 2 * u:])
    return [z * h + (1 - z) * hh]


def np_rnn(kind, x, w, u, mask=None, go_backwards=False, zero_output=False, **kw):
    """Keras 3 semantics: returns (sequence in processing order, last output, states)."""
    B, T, _ = x.shape
    n_states = 2 if kind == "LSTM" else 1
    states = [np.zeros((B, u))] * n_states
    order = range(T - 1, -1, -1) if go_backwards else range(T)
    outs = []
    for t in order:
        new = np_step(kind, x[:, t], states, w, u, **kw)
        if mask is not None:
            m = mask[:, t][:, None]
            out = np.where(m, new[0], 0.0 if zero_output else states[0])
            new = [np.where(m, n, s) for n, s in zip(new, states)]
        else:
            out = new[0]
        states = new
        outs.append(out)
    seq = np.stack(outs, 1)
    return seq, seq[:, -1], states


KINDS = ["SimpleRNN", "LSTM", "GRU"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("go_backwards,masked", [(False, False), (True, True)])
def test_rnn_matches_numpy_steps(kind, go_backwards, masked):
    rs = np.random.RandomState(0)
    B, T, F, U = 3, 5, 4, 6
    x = L.Input(shape=(T, F))
    m = L.Input(shape=(T,), dtype="bool")
    layer = getattr(L, kind)(U, return_sequences=True, return_state=True,
                             go_backwards=go_backwards, bias_initializer="random_normal")
    outs = layer(x, mask=m) if masked else layer(x)
    assert outs[0].shape.as_list() == [None, T, U]
    assert all(s.shape.as_list() == [None, U] for s in outs[1:])
    backend.ensure_initialized(layer.weights)
    w = layer.get_weights()
    xv = rs.randn(B, T, F).astype(np.float32)
    mv = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1], [0, 0, 1, 1, 0]], bool)
    feed = {x: xv, m: mv} if masked else {x: xv}
    got = run(outs, feed)
    seq, last, states = np_rnn(kind, xv.astype(np.float64), w, U, mv if masked else None,
                               go_backwards)
    np.testing.assert_allclose(got[0], seq, rtol=1e-4, atol=1e-5)
    for g, s in zip(got[1:], states):
        np.testing.assert_allclose(g, s, rtol=1e-4, atol=1e-5)


def test_weights_shapes_gate_order_and_initializers():
    x = L.Input(shape=(7, 3))
    lstm, gru, gru0 = L.LSTM(5), L.GRU(4), L.GRU(4, reset_after=False)
    for l in (lstm, gru, gru0):
        assert l(x).shape.as_list() == [None, l.units]
    assert [tuple(w.shape.as_list()) for w in lstm.weights] == [(3, 20), (5, 20), (20,)]
    assert [tuple(w.shape.as_list()) for w in gru.weights] == [(3, 12), (4, 12), (2, 12)]
    assert tuple(gru0.bias.shape.as_list()) == (12,)
    assert [w.name for w in lstm.weights] == ["lstm/kernel:0", "lstm/recurrent_kernel:0",
                                              "lstm/bias:0"]
    backend.ensure_initialized(lstm.weights)
    _, rk, b = lstm.get_weights()
    np.testing.assert_allclose(b, np.r_[np.zeros(5), np.ones(5), np.zeros(10)])  # forget=1
    # orthogonal recurrent kernel: rows orthonormal ([5, 20])
    np.testing.assert_allclose(rk @ rk.T, np.eye(5), atol=1e-5)


def test_last_output_and_gru_reset_before():
    rs = np.random.RandomState(1)
    x = L.Input(shape=(4, 3))
    layer = L.GRU(5, reset_after=False, bias_initializer="random_normal")
    y = layer(x)
    assert y.shape.as_list() == [None, 5]
    backend.ensure_initialized(layer.weights)
    xv = rs.randn(2, 4, 3)
    _, last, _ = np_rnn("GRU", xv, layer.get_weights(), 5, reset_after=False)
    np.testing.assert_allclose(run(y, {x: xv}), last, rtol=1e-4, atol=1e-5)


def test_embedding_mask_zero_reaches_lstm_and_initial_state():
    ids = L.Input(shape=(4,), dtype="int32")
    emb = L.Embedding(10, 3, mask_zero=True)
    e = emb(ids)
    assert get_mask(e) is not None
    lstm = L.LSTM(4, return_sequences=True)
    y = lstm(e)
    assert get_mask(y) is get_mask(e)  # sequences keep the mask
    assert get_mask(L.LSTM(4)(e)) is None
    h0, c0 = L.Input(shape=(4,)), L.Input(shape=(4,))
    l2 = L.LSTM(4, return_state=True)
    out, h, c = l2(e, initial_state=[h0, c0])
    backend.ensure_initialized(emb.weights + lstm.weights + l2.weights)
    iv = np.array([[3, 1, 0, 0], [5, 0, 2, 7]])
    hv, cv = np.random.RandomState(2).randn(2, 2, 4)
    table = emb.get_weights()[0]
    xv = table[iv]
    got, got_o, got_h, got_c = run([y, out, h, c], {ids: iv, h0: hv, c0: cv})
    seq, _, _ = np_rnn("LSTM", xv, lstm.get_weights(), 4, mask=iv != 0)
    np.testing.assert_allclose(got, seq, rtol=1e-4, atol=1e-5)
    # with an initial state
    k, rk, b = l2.get_weights()
    states = [hv, cv]
    for t in range(4):
        new = np_step("LSTM", xv[:, t], states, (k, rk, b), 4)
        m = (iv[:, t] != 0)[:, None]
        states = [np.where(m, n, s) for n, s in zip(new, states)]
    np.testing.assert_allclose(got_h, states[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_c, states[1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_o, states[0], rtol=1e-4, atol=1e-5)


def test_lstm_gradients_match_jax_grad():
    rs = np.random.RandomState(3)
    B, T, F, U = 2, 4, 3, 5
    x = L.Input(shape=(T, F))
    layer = L.LSTM(U, return_sequences=True, bias_initializer="random_normal")
    y = layer(x)
    loss = ml.reduce_sum(y * y) + ml.reduce_sum(y)
    grads = ml.gradients(loss, [x] + layer.weights)
    backend.ensure_initialized(layer.weights)
    k, rk, b = layer.get_weights()
    xv = rs.randn(B, T, F).astype(np.float32)

    def ref(xx, k, rk, b):
        h = c = jnp.zeros((B, U))
        hs = []
        for t in range(T):
            z = xx[:, t] @ k + h @ rk + b
            i, f = jax.nn.sigmoid(z[:, :U]), jax.nn.sigmoid(z[:, U:2 * U])
            c = f * c + i * jnp.tanh(z[:, 2 * U:3 * U])
            h = jax.nn.sigmoid(z[:, 3 * U:]) * jnp.tanh(c)
            hs.append(h)
        ys = jnp.stack(hs, 1)
        return jnp.sum(ys * ys) + jnp.sum(ys)

    want = jax.grad(ref, argnums=(0, 1, 2, 3))(xv, k, rk, b)
    got = run(grads, {x: xv})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-4, atol=1e-5)


def test_dropout_only_in_training_and_errors():
    x = L.Input(shape=(3, 2))
    layer = L.SimpleRNN(4, dropout=0.5, recurrent_dropout=0.5, seed=1)
    y_inf, y_tr = layer(x), layer(x, training=True)
    backend.ensure_initialized(layer.weights)
    xv = np.ones((64, 3, 2), np.float32)
    a, b = run([y_inf, y_tr], {x: xv})
    assert np.allclose(a, a[0]) and not np.allclose(b, b[0])
    with pytest.raises(ValueError, match="units"):
        L.LSTM(0)
    with pytest.raises(ValueError, match="batch size must be static"):
        L.GRU(2, stateful=True)(L.Input(shape=(3, 2)))
    with pytest.raises(ValueError, match='"lstm_9".*ndim=3'):
        L.LSTM(2, name="lstm_9")(L.Input(shape=(3,)))


def test_bidirectional_concat_and_states_vs_numpy():
    rs = np.random.RandomState(4)
    T = 4
    x = L.Input(shape=(T, 3))
    m = L.Input(shape=(T,), dtype="bool")
    bi = L.Bidirectional(L.GRU(3, return_sequences=True, return_state=True))
    out, fh, bh = bi(x, mask=m)
    assert out.shape.as_list() == [None, T, 6]
    assert [w.name.split("/")[1] for w in bi.weights][:1] == ["forward_gru"]
    backend.ensure_initialized(bi.weights)
    xv, mv = rs.randn(2, T, 3), np.array([[1, 1, 1, 0], [1, 1, 0, 0]], bool)
    got = run([out, fh, bh], {x: xv, m: mv})
    fw = bi.forward_layer.get_weights()
    bw = bi.backward_layer.get_weights()
    fseq, _, fst = np_rnn("GRU", xv, fw, 3, mv, zero_output=True)
    bseq, _, bst = np_rnn("GRU", xv, bw, 3, mv, go_backwards=True, zero_output=True)
    np.testing.assert_allclose(got[0], np.concatenate([fseq, bseq[:, ::-1]], -1),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], fst[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[2], bst[0], rtol=1e-4, atol=1e-5)
    s = L.Bidirectional(L.SimpleRNN(2), merge_mode="sum")(x)
    assert s.shape.as_list() == [None, 2]
    with pytest.raises(ValueError, match="merge mode"):
        L.Bidirectional(L.LSTM(2), merge_mode="max")


def test_time_distributed_dense():
    x = L.Input(shape=(5, 3))
    td = L.TimeDistributed(L.Dense(2))
    y = td(x)
    assert y.shape.as_list() == [None, 5, 2]
    backend.ensure_initialized(td.weights)
    k, b = td.get_weights()
    xv = np.random.RandomState(5).randn(4, 5, 3)
    np.testing.assert_allclose(run(y, {x: xv}), xv @ k + b, rtol=1e-5, atol=1e-5)
    xd = L.Input(shape=(None, 3))  # unknown time: a runtime shape
    td2 = L.TimeDistributed(L.Dense(2))
    yd = td2(xd)
    backend.ensure_initialized(td2.weights)
    assert run(yd, {xd: xv[:, :2]}).shape == (4, 2, 2)


def test_sequence_model_learns_with_fit():
    # Label: does token 1 occur in the sequence (0 is padding, masked).
    rs = np.random.RandomState(0)
    n, T = 512, 8
    X = rs.randint(2, 6, size=(n, T))
    has = rs.rand(n) < 0.5
    X[has, rs.randint(0, T, size=has.sum())] = 1
    lengths = rs.randint(3, T + 1, size=n)
    X[np.arange(T)[None, :] >= lengths[:, None]] = 0
    y = (X == 1).any(1).astype(np.float32)
    ml.set_random_seed(0)
    model = ml.Sequential([L.Input(shape=(T,), dtype="int32"),
                           L.Embedding(8, 8, mask_zero=True), L.LSTM(16),
                           L.Dense(1, activation="sigmoid")])
    model.compile(ml.optimizers.Adam(learning_rate=0.02), "binary_crossentropy",
                  metrics=["accuracy"])
    h = model.fit(X, y, batch_size=64, epochs=8, verbose=0)
    assert h.history["loss"][-1] < 0.5 * h.history["loss"][0]
    assert h.history["accuracy"][-1] > 0.9
