"""TF1 RNN cells and `dynamic_rnn`: TF1's formulas (a jax reference of each cell),
variable names, `sequence_length` semantics, and gradients against `jax.grad`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as tf

B, T, D, H = 3, 5, 4, 6
LENS = np.array([5, 2, 3])


def _sig(x):
    return 1 / (1 + jnp.exp(-x))


def basic_lstm(p, x, c, h, forget_bias=1.0):
    k, b = p
    i, j, f, o = jnp.split(jnp.concatenate([x, h], 1) @ k + b, 4, axis=1)
    c = c * _sig(f + forget_bias) + _sig(i) * jnp.tanh(j)
    h = jnp.tanh(c) * _sig(o)
    return h, (c, h)


def peephole_proj_lstm(p, x, c, m, clip, proj_clip):
    k, b, wf, wi, wo, proj = p
    i, j, f, o = jnp.split(jnp.concatenate([x, m], 1) @ k + b, 4, axis=1)
    c = _sig(f + 1.0 + wf * c) * c + _sig(i + wi * c) * jnp.tanh(j)
    c = jnp.clip(c, -clip, clip)
    m = _sig(o + wo * c) * jnp.tanh(c)
    m = jnp.clip(m @ proj, -proj_clip, proj_clip)
    return m, (c, m)


def gru(p, x, h):
    gk, gb, ck, cb = p
    r, u = jnp.split(_sig(jnp.concatenate([x, h], 1) @ gk + gb), 2, axis=1)
    cand = jnp.tanh(jnp.concatenate([x, r * h], 1) @ ck + cb)
    h = u * h + (1 - u) * cand
    return h, (h,)


def run_ref(step, params, xs, state, lens):
    """Reference dynamic_rnn: zero outputs past each length, state frozen there."""
    outs = []
    for t in range(xs.shape[1]):
        out, new = step(params, xs[:, t], *state)
        alive = (t < lens)[:, None]
        outs.append(jnp.where(alive, out, 0.0))
        state = tuple(jnp.where(alive, n, o) for n, o in zip(new, state))
    return jnp.stack(outs, 1), state


@pytest.fixture
def g():
    graph = tf.Graph()
    with graph.as_default():
        yield graph


def _data():
    rng = np.random.RandomState(0)
    return rng.randn(B, T, D).astype(np.float32)


def _check(graph, cell, outputs, state_leaves, ref_fn, n_state, xv, feed_lens=True):
    """Values and the gradient of sum(outputs) + sum(final states) against jax."""
    x, lens = graph.get_tensor_by_name("x:0"), graph.get_tensor_by_name("lens:0")
    tvars = tf.trainable_variables()
    loss = tf.reduce_sum(outputs) + tf.add_n([tf.reduce_sum(s) for s in state_leaves])
    grads = tf.gradients(loss, tvars)
    with tf.Session(graph=graph) as s:
        s.run(tf.global_variables_initializer())
        params = s.run(tvars)
        out, st, gr = s.run([outputs, state_leaves, grads], {x: xv, lens: LENS})

    def ref_loss(params):
        zeros = tuple(jnp.zeros((B, n)) for n in n_state)
        o, sf = run_ref(ref_fn, params, jnp.asarray(xv), zeros, LENS)
        return jnp.sum(o) + sum(jnp.sum(a) for a in sf), (o, sf)

    (_, (ro, rs)), rg = jax.value_and_grad(ref_loss, has_aux=True)(tuple(params))
    np.testing.assert_allclose(out, ro, rtol=1e-4, atol=1e-5)
    for a, b in zip(st, rs):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    for a, b in zip(gr, rg):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
    return out


def test_basic_lstm_dynamic_rnn_with_sequence_length(g):
    x = tf.placeholder(tf.float32, [None, T, D], name="x")
    lens = tf.placeholder(tf.int32, [None], name="lens")
    cell = tf.nn.rnn_cell.BasicLSTMCell(H)
    assert cell.state_size == (H, H) and cell.output_size == H
    outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lens, dtype=tf.float32)
    assert isinstance(state, tf.nn.rnn_cell.LSTMStateTuple)
    assert [v.name for v in tf.global_variables()] == ["rnn/basic_lstm_cell/kernel:0",
                                                       "rnn/basic_lstm_cell/bias:0"]
    assert tf.global_variables()[0].shape.as_list() == [D + H, 4 * H]
    out = _check(g, cell, outputs, [state.c, state.h], basic_lstm, (H, H), _data())
    assert (out[1, 2:] == 0).all() and (out[2, 3:] == 0).all()


def test_lstm_cell_peepholes_projection_clips(g):
    x = tf.placeholder(tf.float32, [None, T, D], name="x")
    lens = tf.placeholder(tf.int32, [None], name="lens")
    cell = tf.nn.rnn_cell.LSTMCell(H, use_peepholes=True, cell_clip=0.5, num_proj=3,
                                   proj_clip=0.3)
    outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lens, dtype=tf.float32)
    names = [v.name for v in tf.trainable_variables()]
    assert names == ["rnn/lstm_cell/kernel:0", "rnn/lstm_cell/bias:0",
                     "rnn/lstm_cell/w_f_diag:0", "rnn/lstm_cell/w_i_diag:0",
                     "rnn/lstm_cell/w_o_diag:0", "rnn/lstm_cell/projection/kernel:0"]
    assert outputs.shape.as_list() == [None, T, 3]

    def ref(p, x, c, m):
        return peephole_proj_lstm(p, x, c, m, 0.5, 0.3)

    _check(g, cell, outputs, [state.c, state.h], ref, (H, 3), _data())


def test_gru_dynamic_rnn(g):
    x = tf.placeholder(tf.float32, [None, T, D], name="x")
    lens = tf.placeholder(tf.int32, [None], name="lens")
    cell = tf.contrib.rnn.GRUCell(H)
    outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lens, dtype=tf.float32)
    assert [v.name for v in tf.trainable_variables()] == [
        "rnn/gru_cell/gates/kernel:0", "rnn/gru_cell/gates/bias:0",
        "rnn/gru_cell/candidate/kernel:0", "rnn/gru_cell/candidate/bias:0"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(s.run(tf.trainable_variables()[1]), np.ones(2 * H))
    _check(g, cell, outputs, [state], lambda p, x, h: gru(p, x, h), (H,), _data())


def test_multi_rnn_cell_time_major_and_initial_state(g):
    x = tf.placeholder(tf.float32, [T, None, D], name="x")
    cells = [tf.nn.rnn_cell.BasicRNNCell(H), tf.nn.rnn_cell.BasicRNNCell(2)]
    multi = tf.nn.rnn_cell.MultiRNNCell(cells)
    init = multi.zero_state(B, tf.float32)
    outputs, state = tf.nn.dynamic_rnn(multi, x, initial_state=init, time_major=True)
    assert [v.name for v in tf.trainable_variables()] == [
        "rnn/multi_rnn_cell/cell_0/basic_rnn_cell/kernel:0",
        "rnn/multi_rnn_cell/cell_0/basic_rnn_cell/bias:0",
        "rnn/multi_rnn_cell/cell_1/basic_rnn_cell/kernel:0",
        "rnn/multi_rnn_cell/cell_1/basic_rnn_cell/bias:0"]
    xv = np.random.RandomState(3).randn(T, B, D).astype(np.float32)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        k0, b0, k1, b1 = s.run(tf.trainable_variables())
        out, st = s.run([outputs, state], {x: xv})
    h0, h1 = np.zeros((B, H)), np.zeros((B, 2))
    for t in range(T):
        h0 = np.tanh(np.concatenate([xv[t], h0], 1) @ k0 + b0)
        h1 = np.tanh(np.concatenate([h0, h1], 1) @ k1 + b1)
        np.testing.assert_allclose(out[t], h1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(st[0], h0, rtol=1e-4, atol=1e-5)


def test_bidirectional_dynamic_rnn_reverses_within_length(g):
    x = tf.placeholder(tf.float32, [None, T, D], name="x")
    lens = tf.placeholder(tf.int32, [None], name="lens")
    fw, bw = tf.nn.rnn_cell.BasicRNNCell(H), tf.nn.rnn_cell.BasicRNNCell(H)
    (of, ob), (sf, sb) = tf.nn.bidirectional_dynamic_rnn(fw, bw, x, sequence_length=lens,
                                                         dtype=tf.float32)
    names = [v.name for v in tf.trainable_variables()]
    assert names == ["bidirectional_rnn/fw/basic_rnn_cell/kernel:0",
                     "bidirectional_rnn/fw/basic_rnn_cell/bias:0",
                     "bidirectional_rnn/bw/basic_rnn_cell/kernel:0",
                     "bidirectional_rnn/bw/basic_rnn_cell/bias:0"]
    xv = _data()
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        _, _, kb, bb = s.run(tf.trainable_variables())
        obv, sbv = s.run([ob, sb], {x: xv, lens: LENS})
    for n in range(B):
        h = np.zeros(H)
        for t in reversed(range(LENS[n])):
            h = np.tanh(np.concatenate([xv[n, t], h]) @ kb + bb)
            np.testing.assert_allclose(obv[n, t], h, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(sbv[n], h, rtol=1e-4, atol=1e-5)
        assert (obv[n, LENS[n]:] == 0).all()


def test_static_rnn_matches_dynamic_rnn(g):
    x = tf.placeholder(tf.float32, [B, T, D])
    cell = tf.nn.rnn_cell.BasicLSTMCell(H)
    dyn, dst = tf.nn.dynamic_rnn(cell, x, sequence_length=LENS, dtype=tf.float32)
    with tf.variable_scope("rnn", reuse=True):
        pass
    st_out, st_state = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), sequence_length=LENS,
                                        dtype=tf.float32)
    assert len(tf.trainable_variables()) == 2  # the cell keeps its weights
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        a, b, c, d = s.run([dyn, tf.stack(st_out, 1), dst.h, st_state.h], {x: _data()})
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, d, rtol=1e-5, atol=1e-6)


def test_dropout_wrapper_in_loop_is_differentiable(g):
    x = tf.placeholder(tf.float32, [None, T, D])
    keep = tf.placeholder_with_default(1.0, [])
    cells = [tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicLSTMCell(H),
                                           output_keep_prob=keep, state_keep_prob=keep,
                                           input_keep_prob=keep) for _ in range(2)]
    outputs, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.MultiRNNCell(cells), x, dtype=tf.float32)
    loss = tf.reduce_sum(outputs)
    grads = tf.gradients(loss, tf.trainable_variables())
    assert all(gr is not None for gr in grads)
    xv = _data()
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        full1 = s.run(outputs, {x: xv})
        full2 = s.run(outputs, {x: xv})
        dropped = s.run(outputs, {x: xv, keep: 0.5})
        s.run(grads, {x: xv, keep: 0.5})
    np.testing.assert_array_equal(full1, full2)  # keep 1.0: deterministic
    frac = (dropped == 0).mean()
    assert 0.3 < frac < 0.7  # the last cell's outputs are dropped with p = 0.5


def test_errors_name_the_alternative():
    with pytest.raises(ValueError, match="state_is_tuple=False is not supported"):
        tf.nn.rnn_cell.BasicLSTMCell(3, state_is_tuple=False)
    with pytest.raises(AttributeError, match="use LSTMCell"):
        tf.contrib.rnn.LSTMBlockCell
    with pytest.raises(ValueError, match="between 0 and 1"):
        tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(2), output_keep_prob=1.5)


def test_static_bidirectional_rnn_matches_dynamic(g):
    x = tf.placeholder(tf.float32, [B, T, D])
    fw, bw = tf.nn.rnn_cell.GRUCell(H), tf.nn.rnn_cell.GRUCell(H)
    (of, ob), _ = tf.nn.bidirectional_dynamic_rnn(fw, bw, x, sequence_length=LENS,
                                                  dtype=tf.float32)
    outs, sf, sb = tf.contrib.rnn.static_bidirectional_rnn(
        fw, bw, tf.unstack(x, axis=1), sequence_length=LENS, dtype=tf.float32)
    assert len(tf.trainable_variables()) == 8  # the cells keep their weights
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        dyn, st = s.run([tf.concat([of, ob], 2), tf.stack(outs, 1)], {x: _data()})
    np.testing.assert_allclose(dyn, st, rtol=1e-5, atol=1e-6)
    del sf, sb


def test_static_rnn_is_one_loop_with_the_unrolled_values():
    """static_rnn runs its cell in one scan: the graph does not grow with the number of
    steps, and the values are the step-by-step formula's (a jax reference)."""
    def build(steps):
        g = tf.Graph()
        with g.as_default():
            xs = [tf.placeholder(tf.float32, [B, D]) for _ in range(steps)]
            outs, st = tf.nn.static_rnn(tf.nn.rnn_cell.BasicLSTMCell(H), xs,
                                        dtype=tf.float32)
        return g, xs, outs, st

    g5, _, _, _ = build(5)
    g20, _, _, _ = build(20)
    n5 = len(g5.get_operations())
    assert len(g20.get_operations()) - n5 <= 3 * 15  # placeholders, stack, unstack only
    g, xs, outs, st = build(T)
    xv = _data()
    with g.as_default(), tf.Session(graph=g) as s:
        s.run(tf.global_variables_initializer())
        k, b = s.run(tf.trainable_variables())
        got, h = s.run([outs, st.h], {p: xv[:, t] for t, p in enumerate(xs)})
    c = hh = jnp.zeros((B, H))
    for t in range(T):
        o, (c, hh) = basic_lstm((k, b), xv[:, t], c, hh)
        np.testing.assert_allclose(got[t], o, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, hh, rtol=1e-5, atol=1e-6)
