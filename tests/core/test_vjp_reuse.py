"""A step that holds an op and the generic VJP op of its gradient runs the op's forward
computation once (under `jax.vjp`) and hands the residuals to the VJP op: the compiled
training step of a `scan` holds one forward loop and one backward loop, not a second
forward loop. Values match `jax.grad` on every path: shared, forward outputs fed, the
gradient fetched without the forward op in the step."""

import re

import jax
import jax.numpy as jnp
import numpy as np

import mylib as ml

rs = np.random.RandomState(0)


def _rnn(w, u, x):
    """numpy-free reference: h_t = tanh(x_t w + h_{t-1} u), loss = sum of h_T and of
    all h_t squared."""
    def step(h, xt):
        h = jnp.tanh(xt @ w + h @ u)
        return h, h
    h, hs = jax.lax.scan(step, jnp.zeros((x.shape[1], u.shape[0]), x.dtype), x)
    return jnp.sum(h) + jnp.sum(hs ** 2)


def _graph(x_val, w_val, u_val):
    x = ml.placeholder("float32", x_val.shape, name="x")
    w = ml.Variable(w_val, name="w")
    u = ml.Variable(u_val, name="u")

    def step(h, xt):
        return ml.tanh(ml.matmul(xt, w) + ml.matmul(h, u))

    hs = ml.scan(step, x, initializer=ml.zeros([x_val.shape[1], u_val.shape[0]]))
    loss = ml.reduce_sum(hs[-1]) + ml.reduce_sum(ml.square(hs))
    return x, w, u, hs, loss


def _values():
    return (rs.randn(6, 3, 4).astype(np.float32), rs.randn(4, 5).astype(np.float32) * 0.5,
            rs.randn(5, 5).astype(np.float32) * 0.5)


def test_scan_gradient_step_runs_the_forward_loop_once(compiled_steps):
    xv, wv, uv = _values()
    g = ml.Graph()
    with g.as_default():
        x, w, u, hs, loss = _graph(xv, wv, uv)
        grads = ml.gradients(loss, [w, u, x])
        with ml.Session() as s:
            s.run(ml.global_variables_initializer())
            got = s.run([loss] + grads, {x: xv})
    ref_loss = _rnn(wv, uv, xv)
    ref = jax.grad(_rnn, argnums=(0, 1, 2))(wv, uv, xv)
    np.testing.assert_allclose(got[0], ref_loss, rtol=1e-5)
    for a, b in zip(got[1:], ref):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    calls, hlo = compiled_steps
    step_text = hlo(len(calls) - 1)
    loops = re.findall(r"\S\) while\(", step_text)
    assert len(loops) == 2, f"expected one forward and one backward loop, got {len(loops)}"


def test_fed_forward_outputs_and_gradient_alone_still_match_jax():
    xv, wv, uv = _values()
    ref = jax.grad(_rnn, argnums=(0, 1))(wv, uv, xv)
    g = ml.Graph()
    with g.as_default():
        x, w, u, hs, loss = _graph(xv, wv, uv)
        # The gradient of sum(hs^2) through a fed `hs` uses the fed value for the
        # cotangent 2*hs but the VJP op still differentiates the loop at x, w, u.
        gw, gu = ml.gradients(loss, [w, u])
        with ml.Session() as s:
            s.run(ml.global_variables_initializer())
            hs_val = s.run(hs, {x: xv})
            fed = s.run([gw, gu], {x: xv, hs: hs_val})
            alone = s.run([gw, gu], {x: xv})
    for got in (fed, alone):
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_lstm_training_step_has_two_loops(compiled_steps):
    model = ml.Sequential([ml.layers.Input((7,), dtype="int32"), ml.layers.Embedding(20, 4),
                           ml.layers.LSTM(8), ml.layers.Dense(20)])
    model.compile(optimizer="adam",
                  loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = rs.randint(0, 20, (16, 7)).astype(np.int32)
    y = rs.randint(0, 20, 16)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    calls, hlo = compiled_steps
    train = [t for t in (hlo(i) for i in range(len(calls))) if "transpose(jvp" in t]
    assert train, "no training step was compiled"
    assert len(re.findall(r"\S\) while\(", train[-1])) == 2
