"""TF1 learning-rate schedules on the global step and `ExponentialMovingAverage`,
against numpy transcriptions of TensorFlow 1's formulas."""

import math

import numpy as np
import pytest

import mylib as tf


def _values(make, steps):
    g = tf.Graph()
    with g.as_default():
        gs = tf.train.get_or_create_global_step()
        lr = make(gs)
        inc = tf.assign_add(gs, 1) if hasattr(tf, "assign_add") else gs.assign_add(1)
        out = []
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(steps):
                out.append(s.run(lr))
                s.run(inc)
    return np.array(out, np.float64)


STEPS = 25
CASES = [
    ("exp", lambda gs: tf.train.exponential_decay(0.1, gs, 7, 0.5),
     lambda t: 0.1 * 0.5 ** (t / 7)),
    ("exp_stair", lambda gs: tf.train.exponential_decay(0.1, gs, 7, 0.5, staircase=True),
     lambda t: 0.1 * 0.5 ** (t // 7)),
    ("piecewise", lambda gs: tf.train.piecewise_constant(gs, [5, 12], [1.0, 0.5, 0.1]),
     lambda t: 1.0 if t <= 5 else (0.5 if t <= 12 else 0.1)),
    ("poly", lambda gs: tf.train.polynomial_decay(0.1, gs, 10, 0.01, power=2.0),
     lambda t: (0.1 - 0.01) * (1 - min(t, 10) / 10) ** 2 + 0.01),
    ("poly_cycle", lambda gs: tf.train.polynomial_decay(0.1, gs, 10, 0.01, cycle=True),
     lambda t: (0.1 - 0.01) * (1 - t / (10 * max(1, math.ceil(t / 10)))) + 0.01),
    ("inverse", lambda gs: tf.train.inverse_time_decay(0.1, gs, 5, 0.5),
     lambda t: 0.1 / (1 + 0.5 * t / 5)),
    ("inverse_stair", lambda gs: tf.train.inverse_time_decay(0.1, gs, 5, 0.5, staircase=True),
     lambda t: 0.1 / (1 + 0.5 * (t // 5))),
    ("natural", lambda gs: tf.train.natural_exp_decay(0.1, gs, 5, 0.3),
     lambda t: 0.1 * math.exp(-0.3 * t / 5)),
    ("cosine", lambda gs: tf.train.cosine_decay(0.1, gs, 20, alpha=0.1),
     lambda t: 0.1 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(t, 20) / 20)) + 0.1)),
]


@pytest.mark.parametrize("name,make,ref", CASES, ids=[c[0] for c in CASES])
def test_schedule_matches_tf1_formula(name, make, ref):
    got = _values(make, STEPS)
    want = np.array([ref(t) for t in range(STEPS)])
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-8)


def test_schedule_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="global_step is required"):
            tf.train.exponential_decay(0.1, None, 10, 0.9)
        with pytest.raises(ValueError, match="boundaries"):
            tf.train.piecewise_constant(tf.constant(1), [1, 2], [0.1, 0.2])


def test_schedule_drives_optimizer():
    """GradientDescent with an exponential_decay rate: w -= lr(t) * 2w."""
    with tf.Graph().as_default():
        gs = tf.train.get_or_create_global_step()
        w = tf.Variable(1.0, name="w")
        lr = tf.train.exponential_decay(0.2, gs, 2, 0.5, staircase=True)
        step = tf.train.GradientDescentOptimizer(lr).minimize(w * w, global_step=gs)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(5):
                s.run(step)
            got = s.run(w)
    want = 1.0
    for t in range(5):
        want -= 0.2 * 0.5 ** (t // 2) * 2 * want
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_ema_variables_tensors_num_updates_and_restore(tmp_path):
    g = tf.Graph()
    with g.as_default():
        gs = tf.train.get_or_create_global_step()
        w = tf.Variable(np.array([1.0, 2.0], np.float32), name="w")
        x = tf.placeholder(tf.float32, [2])
        t = tf.reduce_sum(x) * tf.constant([1.0, 1.0])
        ema = tf.train.ExponentialMovingAverage(0.9, num_updates=gs)
        upd = ema.apply([w, t])
        assert ema.average_name(w) == "w/ExponentialMovingAverage"
        assert ema.average(w).name == "w/ExponentialMovingAverage:0"
        assert tf.get_collection(tf.GraphKeys.MOVING_AVERAGE_VARIABLES) == [w]
        with pytest.raises(ValueError, match="already computed"):
            ema.apply([w])
        bump = w.assign(w.value() + 1.0)
        inc = gs.assign_add(1)
        xs = [np.array([1.0, 0.0]), np.array([2.0, 1.0]), np.array([0.0, 0.5])]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for xv in xs:
                s.run(bump)
                s.run(upd, {x: xv})
                s.run(inc)
            got_w, got_t = s.run([ema.average(w), ema.average(t)])
            saver = tf.train.Saver()
            path = saver.save(s, str(tmp_path / "m"))
        sw, st, wv = np.array([1.0, 2.0]), np.zeros(2), np.array([1.0, 2.0])
        for n, xv in enumerate(xs):
            wv = wv + 1.0
            d = min(0.9, (1 + n) / (10 + n))
            sw = sw - (sw - wv) * (1 - d)
            st = st - (st - xv.sum()) * (1 - d)
        np.testing.assert_allclose(got_w, sw, rtol=1e-6)
        np.testing.assert_allclose(got_t, st, rtol=1e-6)
        names = ema.variables_to_restore()
        assert names["w/ExponentialMovingAverage"] is w
        assert names["global_step"] is gs
        with tf.Session() as s:
            tf.train.Saver(names).restore(s, path)
            np.testing.assert_allclose(s.run(w), sw, rtol=1e-6)


def test_ema_zero_debias_tensor():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        t = x * 1.0
        ema = tf.train.ExponentialMovingAverage(0.8, zero_debias=True)
        upd = ema.apply([t])
        xs = [2.0, 4.0, 1.0]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = []
            for xv in xs:
                s.run(upd, {x: xv})
                got.append(s.run(ema.average(t)))
    biased, want = 0.0, []
    for n, xv in enumerate(xs, 1):
        biased = biased - (biased - xv) * 0.2
        want.append(biased / (1 - 0.8 ** n))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got[0] == pytest.approx(2.0)  # no pull towards the zero start


def test_ema_errors():
    with tf.Graph().as_default():
        i = tf.Variable(1, name="i")
        with pytest.raises(TypeError, match="half, float, or double"):
            tf.train.ExponentialMovingAverage(0.9).apply([i])
