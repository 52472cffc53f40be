"""Optimizers against hand-written numpy (Keras's formulas) and direct optax loops."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import mylib as ml

# References are computed with jax in float64 (see conftest.jax_x64).
pytestmark = pytest.mark.usefixtures("jax_x64")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(8, 3)).astype(np.float32)
Y = RNG.normal(size=(8,)).astype(np.float32)
W0 = np.array([0.5, -1.0, 2.0], np.float32)
B0 = np.float32(0.3)


def _np_grads(w, b):
    # loss = mean((X w + b - Y)^2)
    r = X @ w + b - Y
    return 2.0 * X.T @ r / len(Y), np.float32(2.0 * r.mean())


def _build(opt, **var_kw):
    g = ml.Graph()
    with g.as_default():
        w = ml.Variable(W0, name="w", **var_kw)
        b = ml.Variable(B0, name="b")
        pred = ml.reshape(ml.matmul(ml.constant(X), ml.reshape(w, [3, 1])), [8]) + b
        loss = ml.reduce_mean(ml.square(pred - ml.constant(Y)))
        train = opt.minimize(loss)
        init = ml.global_variables_initializer()
    sess = ml.Session(graph=g)
    sess.run(init)
    return g, sess, w, b, train, loss, init


def _run(opt, steps=5):
    g, sess, w, b, train, *_ = _build(opt)
    for _ in range(steps):
        sess.run(train)
    return sess.run([w.value(), b.value()])


def _numpy_loop(update, steps=5):
    """`update(i, name, p, g, state) -> p` with per-variable dict state."""
    params = {"w": W0.astype(np.float64), "b": np.float64(B0)}
    states = {"w": {}, "b": {}}
    for i in range(steps):
        gw, gb = _np_grads(params["w"], params["b"])
        params["w"] = update(i, params["w"], gw, states["w"])
        params["b"] = update(i, params["b"], gb, states["b"])
    return params["w"], params["b"]


def _optax_loop(tx, steps=5):
    p = {"w": jnp.asarray(W0), "b": jnp.asarray(B0)}
    st = tx.init(p)

    def loss(p):
        return jnp.mean((jnp.asarray(X) @ p["w"] + p["b"] - jnp.asarray(Y)) ** 2)

    for _ in range(steps):
        u, st = tx.update(jax.grad(loss)(p), st, p)
        p = optax.apply_updates(p, u)
    return np.asarray(p["w"]), np.asarray(p["b"])


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=rtol, atol=atol)


# ------------------------------------------------------------ numbers per optimizer
def test_sgd_plain():
    def upd(i, p, g, s):
        return p - 0.1 * g

    w, b = _run(ml.optimizers.SGD(0.1))
    rw, rb = _numpy_loop(upd)
    _close(w, rw), _close(b, rb)


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_momentum_keras_formula(nesterov):
    lr, mom = 0.05, 0.9

    def upd(i, p, g, s):
        m = s.get("m", np.zeros_like(p))
        m = mom * m - lr * g
        s["m"] = m
        return p + mom * m - lr * g if nesterov else p + m

    w, b = _run(ml.optimizers.SGD(lr, momentum=mom, nesterov=nesterov))
    rw, rb = _numpy_loop(upd)
    _close(w, rw), _close(b, rb)


def _keras_adam(lr, b1=0.9, b2=0.999, eps=1e-7, wd=None):
    """Keras 3's (and TF1's) Adam in numpy: epsilon on the raw sqrt(v), the bias
    correction folded into the step size; decoupled decay first, as Keras 3."""

    def upd(i, p, g, s):
        t = i + 1
        if wd is not None:
            p = p - p * wd * lr
        m = s["m"] = s.get("m", 0.0) + (g - s.get("m", 0.0)) * (1 - b1)
        v = s["v"] = s.get("v", 0.0) + (g * g - s.get("v", 0.0)) * (1 - b2)
        alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        return p - m * alpha / (np.sqrt(v) + eps)

    return upd


def test_adam_keras_formula():
    w, b = _run(ml.optimizers.Adam(0.05))
    rw, rb = _numpy_loop(_keras_adam(0.05))
    _close(w, rw, rtol=3e-5, atol=1e-6), _close(b, rb, rtol=3e-5, atol=1e-6)
    # optax.adam puts epsilon on the bias-corrected root: a different rule.
    with jax.enable_x64(False):
        ow, ob = _optax_loop(optax.adam(0.05, b1=0.9, b2=0.999, eps=1e-7))
    assert not np.allclose(b, ob, rtol=2e-6, atol=0)


def test_adam_slots_hold_moments():
    opt = ml.optimizers.Adam(0.05)
    g, sess, w, b, train, *_ = _build(opt)
    assert opt.get_slot_names(w) == ["count", "mu", "nu"]
    mu_w = np.zeros(3)
    nu_w = np.zeros(3)
    wv, bv = W0.astype(np.float64), np.float64(B0)
    for _ in range(3):
        gw, gb = _np_grads(wv, bv)
        mu_w = 0.9 * mu_w + 0.1 * gw
        nu_w = 0.999 * nu_w + 0.001 * gw ** 2
        sess.run(train)
        wv, bv = sess.run([w.value(), b.value()])
    mu, nu, count = sess.run([opt.get_slot(w, "mu").value(), opt.get_slot(w, "nu").value(),
                              opt.get_slot(w, "count").value()])
    _close(mu, mu_w), _close(nu, nu_w, rtol=1e-4)
    assert count == 3


def test_adamw_keras_formula():
    w, b = _run(ml.optimizers.AdamW(0.05, weight_decay=0.1))
    rw, rb = _numpy_loop(_keras_adam(0.05, wd=0.1))
    _close(w, rw, rtol=3e-5, atol=1e-6), _close(b, rb, rtol=3e-5, atol=1e-6)


def test_adagrad_keras_formula():
    lr = 0.1

    def upd(i, p, g, s):
        acc = s.get("acc", np.full_like(p, 0.1)) + g * g
        s["acc"] = acc
        return p - lr * g / np.sqrt(acc + 1e-7)

    w, b = _run(ml.optimizers.Adagrad(lr))
    rw, rb = _numpy_loop(upd)
    _close(w, rw), _close(b, rb)


@pytest.mark.parametrize("centered,momentum", [(False, 0.0), (True, 0.0), (False, 0.5),
                                               (True, 0.5)])
def test_rmsprop_keras_formula(centered, momentum):
    lr, rho, eps = 0.01, 0.9, 1e-7

    def upd(i, p, g, s):
        v = rho * s.get("v", np.zeros_like(p)) + (1 - rho) * g * g
        s["v"] = v
        if centered:
            a = rho * s.get("a", np.zeros_like(p)) + (1 - rho) * g
            s["a"] = a
            denom = v - a * a + eps
        else:
            denom = v + eps
        inc = lr * g / np.sqrt(denom)
        if momentum:
            m = momentum * s.get("m", np.zeros_like(p)) + inc
            s["m"] = m
            return p - m
        return p - inc

    w, b = _run(ml.optimizers.RMSprop(lr, momentum=momentum, centered=centered))
    rw, rb = _numpy_loop(upd)
    _close(w, rw, rtol=2e-5), _close(b, rb, rtol=2e-5)


# ------------------------------------------------------------ semantics
def test_iterations_advance_once_per_apply():
    opt = ml.optimizers.SGD(0.1)
    g, sess, w, b, train, *_ = _build(opt)
    it = opt.iterations
    assert it.dtype == ml.int64 and not it.trainable
    assert sess.run(it.value()) == 0
    for k in range(1, 4):
        sess.run(train)
        assert sess.run(it.value()) == k


def test_global_step_and_var_list_subset():
    g = ml.Graph()
    with g.as_default():
        w = ml.Variable(W0, name="w")
        b = ml.Variable(B0, name="b")
        step = ml.Variable(0, dtype=ml.int64, trainable=False, name="global_step")
        pred = ml.reshape(ml.matmul(ml.constant(X), ml.reshape(w, [3, 1])), [8]) + b
        loss = ml.reduce_mean(ml.square(pred - ml.constant(Y)))
        train = ml.optimizers.SGD(0.1).minimize(loss, var_list=[w], global_step=step)
        init = ml.global_variables_initializer()
    with ml.Session(graph=g) as sess:
        sess.run(init)
        sess.run(train)
        sess.run(train)
        wv, bv, sv = sess.run([w.value(), b.value(), step.value()])
    assert bv == B0 and sv == 2
    rw = W0.astype(np.float64)
    for _ in range(2):
        rw = rw - 0.1 * _np_grads(rw, B0)[0]
    _close(wv, rw)


def test_none_gradient_variable_unchanged():
    g = ml.Graph()
    with g.as_default():
        w = ml.Variable(np.float32(2.0), name="w")
        unused = ml.Variable(np.float32(5.0), name="unused")
        loss = ml.square(w.value())
        opt = ml.optimizers.Adam(0.1)
        train = opt.minimize(loss)
        init = ml.global_variables_initializer()
    with ml.Session(graph=g) as sess:
        sess.run(init)
        sess.run(train)
        assert sess.run(unused.value()) == 5.0
        assert sess.run(w.value()) < 2.0
    assert opt.get_slot(unused, "mu") is None
    with g.as_default(), pytest.raises(ValueError, match="No gradients"):
        ml.optimizers.SGD().apply_gradients([(None, w)])


def test_learning_rate_schedule_uses_iterations():
    sched = optax.exponential_decay(0.1, transition_steps=1, decay_rate=0.5)

    def upd(i, p, g, s):
        return p - float(sched(i)) * g

    w, b = _run(ml.optimizers.SGD(sched), steps=4)
    rw, rb = _numpy_loop(upd, steps=4)
    _close(w, rw), _close(b, rb)
    w2, b2 = _run(ml.optimizers.Adam(sched), steps=4)
    rw2, rb2 = _optax_loop(optax.adam(sched, eps=1e-7), steps=4)
    _close(w2, rw2), _close(b2, rb2)


def test_learning_rate_variable_can_be_assigned():
    opt = ml.optimizers.SGD(0.1)
    g, sess, w, b, train, *_ = _build(opt)
    with g.as_default():  # Variable.load builds its assign in the default graph
        opt.learning_rate.load(0.0, sess)
    before = sess.run(w.value())
    sess.run(train)
    np.testing.assert_array_equal(sess.run(w.value()), before)


def test_clipnorm_per_gradient():
    c = 0.05

    def clip(g):
        n = np.sqrt(np.sum(g * g))
        return g * c / max(n, c)

    def upd(i, p, g, s):
        return p - 0.1 * clip(g)

    w, b = _run(ml.optimizers.SGD(0.1, clipnorm=c), steps=3)
    rw, rb = _numpy_loop(upd, steps=3)
    _close(w, rw), _close(b, rb)


def test_global_clipnorm():
    c = 0.05
    w, b = _run(ml.optimizers.SGD(0.1, global_clipnorm=c), steps=3)
    rw, rb = _optax_loop(optax.chain(optax.clip_by_global_norm(c), optax.sgd(0.1)), steps=3)
    _close(w, rw), _close(b, rb)
    with pytest.raises(ValueError, match="Only one of"):
        ml.optimizers.SGD(clipnorm=1.0, global_clipnorm=1.0)


def test_constraint_applied_after_update():
    opt = ml.optimizers.SGD(1.0)
    g, sess, w, b, train, *_ = _build(opt, constraint=lambda t: ml.maximum(t, 0.0))
    sess.run(train)
    gw, _ = _np_grads(W0.astype(np.float64), np.float64(B0))
    _close(sess.run(w.value()), np.maximum(W0 - gw, 0.0))


def test_slots_are_global_variables_reset_by_init():
    opt = ml.optimizers.Adam(0.1)
    g, sess, w, b, train, loss, init = _build(opt)
    slots = opt.variables()
    gv = set(g.get_collection(ml.GraphKeys.GLOBAL_VARIABLES))
    tv = set(g.get_collection(ml.GraphKeys.TRAINABLE_VARIABLES))
    assert all(s in gv and s not in tv for s in slots)
    # iterations, lr; (mu, nu) for w and b, and Adam's count shared by the group
    assert len(slots) == 2 + 2 * 2 + 1
    assert opt.get_slot(w, "count") is opt.get_slot(b, "count")
    sess.run(train)
    assert sess.run(opt.get_slot(w, "mu").value()).any()
    sess.run(init)
    mu, it = sess.run([opt.get_slot(w, "mu").value(), opt.iterations.value()])
    assert not mu.any() and it == 0


def test_sparse_gradient_from_gather():
    g = ml.Graph()
    with g.as_default():
        emb = ml.Variable(np.arange(8, dtype=np.float32).reshape(4, 2), name="emb")
        rows = ml.gather(emb, ml.constant([1, 3, 1]))
        loss = ml.reduce_sum(rows)
        train = ml.optimizers.SGD(0.5).minimize(loss)
        init = ml.global_variables_initializer()
    with ml.Session(graph=g) as sess:
        sess.run(init)
        sess.run(train)
        out = sess.run(emb.value())
    expect = np.arange(8, dtype=np.float32).reshape(4, 2)
    expect[1] -= 1.0  # gathered twice
    expect[3] -= 0.5
    np.testing.assert_allclose(out, expect)


def test_get_and_config_round_trip():
    for name, cls in [("sgd", ml.optimizers.SGD), ("ADAM", ml.optimizers.Adam),
                      ("adamw", ml.optimizers.AdamW), ("Adagrad", ml.optimizers.Adagrad),
                      ("rmsprop", ml.optimizers.RMSprop)]:
        assert type(ml.optimizers.get(name)) is cls
    opt = ml.optimizers.RMSprop(0.02, rho=0.8, centered=True, clipnorm=1.0)
    assert ml.optimizers.get(opt) is opt
    cfg = ml.optimizers.serialize(opt)
    back = ml.optimizers.get(cfg)
    assert type(back) is ml.optimizers.RMSprop and back.get_config() == opt.get_config()
    assert back.get_config()["learning_rate"] == 0.02 and back.rho == 0.8
    with pytest.raises(ValueError, match="Unknown optimizer"):
        ml.optimizers.get("adamax2")


def test_sgd_applies_indexed_slices_to_their_rows_only():
    import mylib as ml

    rng = np.random.default_rng(0)
    table = rng.normal(size=(6, 3)).astype(np.float32)
    g = ml.Graph()
    with g.as_default():
        v = ml.Variable(table)
        ids = ml.constant(np.array([4, 1, 4]))
        loss = ml.reduce_sum(ml.square(ml.nn.embedding_lookup(v, ids)))
        train = ml.optimizers.SGD(0.1).minimize(loss)
        assert [op.type for op in g.get_operations() if op.type == "ResourceScatterAdd"]
        with ml.Session() as sess:
            sess.run(ml.global_variables_initializer())
            sess.run(train)
            got = sess.run(v)
    want = table.copy()
    grad = np.zeros_like(table)
    for i in (4, 1, 4):
        grad[i] += 2 * table[i]
    np.testing.assert_allclose(got, want - 0.1 * grad, rtol=1e-6)
