"""Nadam, Adamax, Adadelta, Ftrl, Lion, Lamb and Adafactor against Keras 3: the same fed
gradients step by step, fit of a small Dense model from string names, configs,
saving and loading of their slots, and Keras's argument checks."""

import jax.numpy as jnp
import keras
import numpy as np
import optax
import pytest

import mylib as ml
from mylib import layers as L
from mylib import optimizers as mopt

RS = np.random.RandomState(7)
# A matrix, a vector and a rank-3 array (Adafactor factors rank >= 2 arrays).
W0 = [RS.randn(3, 2).astype(np.float32), RS.randn(2).astype(np.float32),
      RS.randn(2, 3, 4).astype(np.float32)]
# Gradients of several scales, down to 0.01 (Adamax's epsilon sits near them only
# below ~1e-5).
GRADS = [[RS.randn(*w.shape).astype(np.float32) * s for w in W0]
         for s in (1.0, 0.1, 3.0, 0.5, 1.0, 2.0, 0.01)]

CASES = [
    ("Nadam", dict(learning_rate=0.01)),
    ("Nadam", dict(learning_rate=0.02, beta_1=0.8, beta_2=0.99, epsilon=1e-3)),
    ("Adamax", dict(learning_rate=0.01)),
    ("Adamax", dict(learning_rate=0.05, beta_1=0.5, beta_2=0.9)),
    ("Adadelta", dict()),
    ("Adadelta", dict(learning_rate=1.0, rho=0.9, epsilon=1e-4)),
    ("Ftrl", dict(learning_rate=0.1)),
    ("Ftrl", dict(learning_rate=0.1, learning_rate_power=-0.7, initial_accumulator_value=0.3,
                  l1_regularization_strength=0.1, l2_regularization_strength=0.05,
                  l2_shrinkage_regularization_strength=0.02, beta=0.3)),
    ("Ftrl", dict(learning_rate=0.2, learning_rate_power=0.0, l1_regularization_strength=1.0)),
    ("Lion", dict(learning_rate=0.01)),
    ("Lion", dict(learning_rate=0.01, beta_1=0.5, beta_2=0.9)),
    ("Lamb", dict(learning_rate=0.01)),
    ("Lamb", dict(learning_rate=0.01, weight_decay=0.1)),
    ("Adafactor", dict(learning_rate=0.1)),
    ("Adafactor", dict(learning_rate=0.5, beta_2_decay=-0.5, epsilon_2=0.01,
                       clip_threshold=0.5, weight_decay=0.1)),
    ("Nadam", dict(learning_rate=0.01, weight_decay=0.1, clipnorm=1.0)),
    ("Adamax", dict(learning_rate=0.01, clipvalue=0.5)),
    ("Lion", dict(learning_rate=0.01, global_clipnorm=1.5)),
    ("Ftrl", dict(learning_rate=0.1, weight_decay=0.05, l1_regularization_strength=0.01)),
]


def _steps(name, kw, w0=W0, grads=GRADS):
    """Runs both optimizers on the same fed gradients; yields (ours, Keras's) per step."""
    kvars = [keras.Variable(w) for w in w0]
    kopt = getattr(keras.optimizers, name)(**kw)
    g = ml.Graph()
    with g.as_default():
        mvars = [ml.Variable(w, name=f"v{i}") for i, w in enumerate(w0)]
        phs = [ml.placeholder(ml.float32, w.shape) for w in w0]
        train = getattr(mopt, name)(**kw).apply_gradients(list(zip(phs, mvars)))
        init = ml.global_variables_initializer()
    with ml.Session(graph=g) as s:
        s.run(init)
        for gs in grads:
            kopt.apply_gradients(list(zip([jnp.asarray(x) for x in gs], kvars)))
            s.run(train, feed_dict=dict(zip(phs, gs)))
            yield s.run([v.value() for v in mvars]), [np.asarray(v) for v in kvars]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_steps_match_keras(name, kw):
    for ours, theirs in _steps(name, kw):
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_ftrl_l1_gives_exact_zeros():
    """A strong L1 keeps every coordinate whose |z| <= l1 at exactly 0, as Keras."""
    kw = dict(learning_rate=0.5, l1_regularization_strength=4.0)
    ours, theirs = list(_steps("Ftrl", kw))[-1]
    assert any((a == 0).any() for a in ours) and not all((a == 0).all() for a in ours)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a == 0, b == 0)


@pytest.mark.xfail(strict=True, reason=(
    "documented (Adafactor docstring): optax factors the two largest axes of a rank >= 3 "
    "array, Keras 3 the last two; for [5, 2, 3] those differ"))
def test_adafactor_rank3_leading_axis_largest():
    w0 = [RS.randn(5, 2, 3).astype(np.float32)]
    grads = [[RS.randn(5, 2, 3).astype(np.float32)] for _ in range(3)]
    for ours, theirs in _steps("Adafactor", dict(learning_rate=0.1), w0, grads):
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)


def test_nadam_is_keras_rule_not_optax_nadam():
    """Why Nadam does not run optax.nadam: its first steps differ from Keras's by tens of
    percent (no momentum schedule), while ours follow Keras (test above)."""
    w0, grads = [W0[1]], [[g[1]] for g in GRADS[:2]]
    ours = [o[0] for o, _ in _steps("Nadam", dict(learning_rate=0.01), w0, grads)]
    tx, p = optax.nadam(0.01, eps=1e-7), jnp.asarray(w0[0])
    st = tx.init(p)
    u, st = tx.update(jnp.asarray(grads[0][0]), st, p)
    step_optax = np.asarray(u)
    step_ours = ours[0] - w0[0]
    assert np.abs(step_optax / step_ours - 1).max() > 0.2


# ------------------------------------------------------------ names, fit, configs
NAMES = ["nadam", "adamax", "adadelta", "ftrl", "lion", "lamb", "adafactor"]
RX = np.random.RandomState(1)
X = RX.randn(32, 4).astype(np.float32)
Y = RX.randn(32, 2).astype(np.float32)


@pytest.mark.parametrize("name", NAMES)
def test_compile_by_name_fits_as_keras(name):
    keras.utils.set_random_seed(0)
    km = keras.Sequential([keras.Input((4,)), keras.layers.Dense(5, activation="tanh"),
                           keras.layers.Dense(2)])
    mm = ml.Sequential([L.Input((4,)), L.Dense(5, activation="tanh"), L.Dense(2)])
    mm.set_weights(km.get_weights())
    # Keras 3's `optimizers.get` has no "lamb" (Lamb is missing from its ALL_OBJECTS);
    # mylib takes every class name.
    km.compile(keras.optimizers.Lamb() if name == "lamb" else name, "mse")
    mm.compile(name, "mse")
    assert type(mm.optimizer).__name__ == type(km.optimizer).__name__
    km.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    mm.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


KW = {"Nadam": dict(beta_1=0.8, epsilon=1e-5), "Adamax": dict(beta_2=0.9),
      "Adadelta": dict(rho=0.9), "Ftrl": dict(l1_regularization_strength=0.1, beta=0.2),
      "Lion": dict(beta_1=0.7), "Lamb": dict(beta_2=0.99),
      "Adafactor": dict(epsilon_2=0.01, relative_step=False)}


@pytest.mark.parametrize("cls_name", sorted(KW))
def test_config_round_trip_and_keras_keys(cls_name):
    kw = dict(KW[cls_name], learning_rate=0.02, clipnorm=1.0)
    opt = getattr(ml.optimizers, cls_name)(**kw)
    cfg = opt.get_config()
    again = type(opt).from_config(cfg)
    assert again.get_config() == cfg
    back = ml.optimizers.deserialize(ml.optimizers.serialize(opt))
    assert type(back) is type(opt) and back.get_config() == cfg
    # Every key and value we report is Keras's for the same arguments.
    kcfg = getattr(keras.optimizers, cls_name)(**kw).get_config()
    for k, v in cfg.items():
        if k == "name":
            assert v == cls_name
            continue
        assert k in kcfg, k
        assert v == pytest.approx(kcfg[k]), (k, v, kcfg[k])
    assert getattr(ml.keras.optimizers, cls_name) is type(opt)
    assert type(ml.optimizers.get(cls_name.upper())) is type(opt)


def test_slot_names():
    v = ml.Variable(np.zeros((3, 2), np.float32))
    got = {n: getattr(mopt, n)().get_slot_names(v) for n in
           ("Nadam", "Adamax", "Adadelta", "Ftrl", "Lion", "Lamb", "Adafactor")}
    assert got["Ftrl"] == ["accumulator", "linear"]
    assert got["Adadelta"] == ["e_g", "e_x"]
    assert set(got["Nadam"]) == {"count", "u_product", "mu", "nu"}
    assert set(got["Adafactor"]) == {"count", "v_row", "v_col", "v", "step"}
    assert "mu" in got["Lion"] and "nu" in got["Adamax"] and "nu" in got["Lamb"]


@pytest.mark.parametrize("name", NAMES)
def test_save_load_restores_slots_and_continues_exactly(tmp_path, name):
    m = ml.Sequential([L.Input((4,)), L.Dense(5, activation="tanh"), L.Dense(2)])
    m.compile(name, "mse")
    m.fit(X, Y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    m.save(tmp_path / "m.mylib")
    m2 = ml.models.load_model(tmp_path / "m.mylib")
    assert type(m2.optimizer) is type(m.optimizer)
    get = ml.layers.backend.get_values
    for w, w2 in zip(m.weights, m2.weights):
        for s, s2 in zip(m.optimizer._slots[w._key], m2.optimizer._slots[w2._key]):
            np.testing.assert_array_equal(*get([s]), *get([s2]))
    m.fit(X, Y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    m2.fit(X, Y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(m.get_weights(), m2.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("cls_name,kw,match", [
    ("Ftrl", dict(initial_accumulator_value=-1.0), "initial_accumulator_value"),
    ("Ftrl", dict(learning_rate_power=0.5), "learning_rate_power"),
    ("Ftrl", dict(l1_regularization_strength=-0.1), "l1_regularization_strength"),
    ("Ftrl", dict(l2_shrinkage_regularization_strength=-1.0), "l2_shrinkage"),
    ("Lion", dict(beta_1=0.0), "beta_1"),
    ("Nadam", dict(amsgrad=True), "amsgrad"),
])
def test_bad_arguments_raise_as_keras(cls_name, kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        getattr(ml.optimizers, cls_name)(**kw)
    with pytest.raises((ValueError, TypeError), match=match):
        getattr(keras.optimizers, cls_name)(**kw)
