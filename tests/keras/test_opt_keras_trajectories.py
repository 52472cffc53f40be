"""Keras-style optimizers against Keras 3 (JAX backend), step for step over 25 steps of
fed gradients: tiny (1e-5), ordinary and large (x100) gradients, with clipping and
weight decay. Tiny gradients are where the epsilon placement shows: optax's Adam adds
epsilon to the bias-corrected ``sqrt(v_hat)``, Keras 3 (and TensorFlow 1) to the raw
``sqrt(v)``; optax's Adamax keeps it inside the max."""

import jax.numpy as jnp
import keras
import numpy as np
import optax
import pytest

import mylib as ml
from mylib import optimizers as mopt

RS = np.random.RandomState(11)
W0 = [RS.randn(3, 4).astype(np.float32), RS.randn(5).astype(np.float32)]
STEPS = 25


def _grads(scale):
    r = np.random.RandomState(5)
    # Gradient scale varies over the steps so the moments are not stationary.
    return [[(r.randn(*w.shape) * scale * (1 + 0.5 * np.sin(i))).astype(np.float32)
             for w in W0] for i in range(STEPS)]


def _trajectories(name, kw, grads):
    """Yields (mylib weights, Keras weights) after each step."""
    kvars = [keras.Variable(w) for w in W0]
    kopt = getattr(keras.optimizers, name)(**kw)
    g = ml.Graph()
    with g.as_default():
        mvars = [ml.Variable(w, name=f"v{i}") for i, w in enumerate(W0)]
        phs = [ml.placeholder(ml.float32, w.shape) for w in W0]
        train = getattr(mopt, name)(**kw).apply_gradients(list(zip(phs, mvars)))
        init = ml.global_variables_initializer()
    with ml.Session(graph=g) as s:
        s.run(init)
        for gs in grads:
            kopt.apply_gradients(list(zip([jnp.asarray(x) for x in gs], kvars)))
            s.run(train, feed_dict=dict(zip(phs, gs)))
            yield s.run([v.value() for v in mvars]), [np.asarray(v) for v in kvars]


def _assert_same_path(name, kw, scale, rtol):
    """Every step, each variable within `rtol` of the distance Keras moved it."""
    moved = False
    for ours, theirs in _trajectories(name, kw, _grads(scale)):
        for a, b, w0 in zip(ours, theirs, W0):
            dist = np.max(np.abs(b - w0))
            moved |= dist > 0
            np.testing.assert_allclose(a, b, rtol=0, atol=rtol * dist + 1e-30)
    assert moved


CASES = [
    ("Adam", dict()),
    ("Adam", dict(learning_rate=0.05, clipnorm=0.01)),
    ("Adam", dict(learning_rate=0.01, epsilon=0.1)),
    ("Adam", dict(learning_rate=0.02, amsgrad=True)),
    ("Adam", dict(learning_rate=0.01, global_clipnorm=0.01)),
    ("Adam", dict(learning_rate=0.01, clipvalue=1e-4)),
    ("AdamW", dict()),
    ("AdamW", dict(learning_rate=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adamax", dict()),
    ("Adamax", dict(learning_rate=0.01, epsilon=1e-3)),
    ("Nadam", dict(learning_rate=0.01, epsilon=1e-3)),
    ("RMSprop", dict(learning_rate=0.01, momentum=0.5, epsilon=1e-3)),
    ("RMSprop", dict(learning_rate=0.01, centered=True, momentum=0.9)),
    ("Adagrad", dict(learning_rate=0.1, initial_accumulator_value=0.0, epsilon=1e-3)),
    ("Adagrad", dict(learning_rate=0.1, weight_decay=0.01)),
    ("Adadelta", dict(learning_rate=1.0, epsilon=1e-3)),
    ("SGD", dict(learning_rate=0.01, momentum=0.9, nesterov=True, clipnorm=1.0)),
    ("Lion", dict(learning_rate=0.01, beta_1=0.5)),
    ("Ftrl", dict(learning_rate=0.1, l1_regularization_strength=1e-3)),
]


@pytest.mark.parametrize("scale", [1e-5, 1.0, 100.0], ids=["tiny", "unit", "large"])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_trajectory_matches_keras(name, kw, scale):
    # Nadam's 1 - beta_2**t is computed in float32 by both, in different op orders:
    # the rounding (~1e-4 of the step) is Keras's own distance from a float64 run.
    _assert_same_path(name, kw, scale, rtol=5e-4 if name == "Nadam" else 2e-5)


def test_adam_epsilon_on_raw_root_not_bias_corrected():
    """The bug report's case: with clipnorm=0.01 every gradient is tiny and the optax
    rule (epsilon on sqrt(v_hat)) moves the weights a different distance than Keras;
    mylib follows Keras."""
    kw = dict(learning_rate=0.05, clipnorm=0.01)
    *_, (ours, theirs) = _trajectories("Adam", kw, _grads(1e-5))
    p = [w.copy() for w in W0]
    tx = optax.adam(0.05, eps=1e-7)  # these gradients' norms are all below clipnorm
    st = tx.init(p)
    for gs in _grads(1e-5):
        u, st = tx.update([jnp.asarray(x) for x in gs], st, p)
        p = [np.asarray(x) for x in optax.apply_updates(p, u)]
    for a, b, c, w0 in zip(ours, theirs, p, W0):
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-5 * np.max(np.abs(b - w0)))
        assert np.max(np.abs(c - b)) > 0.1 * np.max(np.abs(b - w0))


def test_adam_slots_keep_optax_names_and_raw_moments():
    """The slots are still ``count``/``mu``/``nu`` (``nu_max`` with AMSGrad; checkpoints
    of earlier versions load), and hold the raw moments as Keras's."""
    g = ml.Graph()
    with g.as_default():
        v = ml.Variable(W0[1], name="v")
        ph = ml.placeholder(ml.float32, W0[1].shape)
        opt = mopt.Adam(0.01, amsgrad=True)
        train = opt.apply_gradients([(ph, v)])
        init = ml.global_variables_initializer()
    assert opt.get_slot_names(v) == ["count", "mu", "nu", "nu_max"]
    m = np.zeros(5)
    vv = np.zeros(5)
    vmax = np.zeros(5)
    with ml.Session(graph=g) as s:
        s.run(init)
        for gs in _grads(1.0)[:6]:
            s.run(train, {ph: gs[1]})
            m = 0.9 * m + 0.1 * gs[1]
            vv = 0.999 * vv + 0.001 * gs[1].astype(np.float64) ** 2
            vmax = np.maximum(vmax, vv)
        got = s.run([opt.get_slot(v, n).value() for n in ("count", "mu", "nu", "nu_max")])
    assert got[0] == 6
    np.testing.assert_allclose(got[1], m, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got[2], vv, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(got[3], vmax, rtol=1e-5, atol=1e-9)
