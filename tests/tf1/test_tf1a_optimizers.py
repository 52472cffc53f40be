"""`ml.train.*Optimizer` against numpy transcriptions of TensorFlow 1's update rules
(tensorflow/python/training/*.py and core/kernels/training_ops.cc), dense and sparse,
over several steps."""

import numpy as np
import pytest

import mylib as tf

W0 = np.array([[0.5, -1.0], [2.0, 0.3], [-0.7, 1.5]], np.float64)
C = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.25]], np.float64)


def _grad(w):
    # loss = sum(C * w^3 / 3) + sum(w) -> grad = C * w^2 + 1 (changes every step)
    return C * w * w + 1.0


def _np_run(rule, steps, init_slots, sparse_rows=None):
    """Runs `rule(w, slots, g, t) -> (w, slots)` for `steps` with numpy."""
    w = W0.copy()
    slots = [np.full_like(w, s) for s in init_slots]
    for t in range(1, steps + 1):
        g = _grad(w)
        if sparse_rows is None:
            w, slots = rule(w, slots, g, t)
        else:
            rows = sorted(set(sparse_rows))
            counts = np.array([sparse_rows.count(r) for r in rows])[:, None]
            sub_w, sub_s = rule(w[rows], [s[rows] for s in slots], g[rows] * counts, t)
            w = w.copy()
            w[rows] = sub_w
            for s, new in zip(slots, sub_s):
                s[rows] = new
    return w


def _mylib_run(make_opt, steps, sparse_rows=None, dtype=np.float64, lr_tensor=False):
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(W0.astype(dtype), name="w")
        c = tf.constant(C.astype(dtype))
        if sparse_rows is None:
            wv = w.value()
            loss = tf.reduce_sum(c * wv * wv * wv / 3.0) + tf.reduce_sum(wv)
        else:
            idx = tf.constant(np.array(sparse_rows, np.int32))
            rows = tf.gather(w, idx)
            crows = tf.gather(c, idx)
            loss = tf.reduce_sum(crows * rows * rows * rows / 3.0) + tf.reduce_sum(rows)
        opt = make_opt()
        gv = opt.compute_gradients(loss, [w])
        if sparse_rows is not None:
            assert isinstance(gv[0][0], tf.IndexedSlices)
        step = opt.apply_gradients(gv)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(steps):
                s.run(step)
            return s.run(w)


def _sgd(lr):
    return lambda w, s, g, t: (w - lr * g, s)


def _momentum(lr, mu, nesterov=False):
    def rule(w, s, g, t):
        (a,) = s
        a = a * mu + g
        w = w - (g * lr + a * mu * lr) if nesterov else w - lr * a
        return w, [a]
    return rule


def _adam(lr, b1=0.9, b2=0.999, eps=1e-8):
    def rule(w, s, g, t):
        m, v = s
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        return w - lr_t * m / (np.sqrt(v) + eps), [m, v]
    return rule


def _adagrad(lr):
    def rule(w, s, g, t):
        (a,) = s
        a = a + g * g
        return w - lr * g / np.sqrt(a), [a]
    return rule


def _rmsprop(lr, rho=0.9, mu=0.0, eps=1e-10, centered=False):
    def rule(w, s, g, t):
        ms, mom, mg = s
        ms = rho * ms + (1 - rho) * g * g
        if centered:
            mg = rho * mg + (1 - rho) * g
            denom = ms - mg * mg + eps
        else:
            denom = ms + eps
        mom = mu * mom + lr * g / np.sqrt(denom)
        return w - mom, [ms, mom, mg]
    return rule


def _ftrl(lr, lr_power=-0.5, l1=0.0, l2=0.0, shrink=0.0):
    def rule(w, s, g, t):
        acc, lin = s
        gs = g + 2 * shrink * w
        new_acc = acc + g * g
        lin = lin + gs - (new_acc ** -lr_power - acc ** -lr_power) / lr * w
        quad = new_acc ** -lr_power / lr + 2 * l2
        w = np.where(np.abs(lin) > l1, (l1 * np.sign(lin) - lin) / quad, 0.0)
        return w, [new_acc, lin]
    return rule


def _adadelta(lr, rho=0.95, eps=1e-8):
    def rule(w, s, g, t):
        a, au = s
        a = a * rho + g * g * (1 - rho)
        upd = np.sqrt(au + eps) / np.sqrt(a + eps) * g
        au = au * rho + upd * upd * (1 - rho)
        return w - upd * lr, [a, au]
    return rule


def _proximal(lr, l1, l2, adagrad=False):
    def rule(w, s, g, t):
        if adagrad:
            (a,) = s
            a = a + g * g
            lr_t = lr / np.sqrt(a)
            s = [a]
        else:
            lr_t = lr
        v = w - lr_t * g
        return np.sign(v) / (1 + lr_t * l2) * np.maximum(np.abs(v) - lr_t * l1, 0), s
    return rule


CASES = [
    ("sgd", lambda: tf.train.GradientDescentOptimizer(0.05), _sgd(0.05), []),
    ("momentum", lambda: tf.train.MomentumOptimizer(0.05, 0.9), _momentum(0.05, 0.9), [0.0]),
    ("nesterov", lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
     _momentum(0.05, 0.9, True), [0.0]),
    ("adam", lambda: tf.train.AdamOptimizer(0.1), _adam(0.1), [0.0, 0.0]),
    ("adam_eps", lambda: tf.train.AdamOptimizer(0.1, 0.8, 0.9, epsilon=0.5),
     _adam(0.1, 0.8, 0.9, 0.5), [0.0, 0.0]),
    ("adagrad", lambda: tf.train.AdagradOptimizer(0.3), _adagrad(0.3), [0.1]),
    ("rmsprop", lambda: tf.train.RMSPropOptimizer(0.01), _rmsprop(0.01), [1.0, 0.0, 0.0]),
    ("rmsprop_mom", lambda: tf.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5,
                                                        epsilon=1e-3),
     _rmsprop(0.01, 0.8, 0.5, 1e-3), [1.0, 0.0, 0.0]),
    ("rmsprop_centered", lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5,
                                                             centered=True),
     _rmsprop(0.01, 0.9, 0.5, 1e-10, True), [1.0, 0.0, 0.0]),
    ("ftrl", lambda: tf.train.FtrlOptimizer(0.5), _ftrl(0.5), [0.1, 0.0]),
    ("ftrl_l1l2", lambda: tf.train.FtrlOptimizer(
        0.5, learning_rate_power=-0.7, l1_regularization_strength=0.05,
        l2_regularization_strength=0.1, l2_shrinkage_regularization_strength=0.02),
     _ftrl(0.5, -0.7, 0.05, 0.1, 0.02), [0.1, 0.0]),
    ("adadelta", lambda: tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-3),
     _adadelta(1.0, 0.9, 1e-3), [0.0, 0.0]),
    ("proximal_gd", lambda: tf.train.ProximalGradientDescentOptimizer(
        0.05, l1_regularization_strength=0.3, l2_regularization_strength=0.2),
     _proximal(0.05, 0.3, 0.2), []),
    ("proximal_adagrad", lambda: tf.train.ProximalAdagradOptimizer(
        0.3, l1_regularization_strength=0.1, l2_regularization_strength=0.05),
     _proximal(0.3, 0.1, 0.05, adagrad=True), [0.1]),
]


@pytest.mark.parametrize("name,make,rule,slots", CASES, ids=[c[0] for c in CASES])
def test_dense_matches_tf1_rule(name, make, rule, slots):
    got = _mylib_run(make, 4)
    want = _np_run(rule, 4, slots)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert not np.allclose(got, W0)


@pytest.mark.parametrize("name,make,rule,slots", CASES, ids=[c[0] for c in CASES])
def test_sparse_matches_tf1_rule(name, make, rule, slots):
    rows = [2, 0, 2]  # row 1 untouched, row 2 twice
    got = _mylib_run(make, 3, sparse_rows=rows)
    if name.startswith("adam"):
        # TF1's Adam applies an IndexedSlices as its dense equivalent: every row's
        # moments decay and row 1 moves once it has momentum (it has none here: g=0).
        def dense_rule(w, s, g, t, _rule=rule):
            return _rule(w, s, g, t)
        w = W0.copy()
        sl = [np.zeros_like(w), np.zeros_like(w)]
        for t in range(1, 4):
            gfull = np.zeros_like(w)
            for r in rows:
                gfull[r] += _grad(w)[r]
            w, sl = dense_rule(w, sl, gfull, t)
        want = w
    else:
        want = _np_run(rule, 3, slots, sparse_rows=rows)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(got[1], W0[1])


def test_float32_adam_and_tensor_learning_rate():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(W0.astype(np.float32), name="w")
        lr = tf.placeholder(tf.float32, [])
        loss = tf.reduce_sum(tf.constant(C.astype(np.float32)) * w * w * w / 3.0) + \
            tf.reduce_sum(w)
        step = tf.train.AdamOptimizer(lr).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for lr_v in (0.1, 0.05, 0.2):
                s.run(step, {lr: lr_v})
            got = s.run(w)
    w, sl = W0.copy(), [np.zeros_like(W0)] * 2
    for t, lr_v in enumerate((0.1, 0.05, 0.2), 1):
        w, sl = _adam(lr_v)(w, sl, _grad(w), t)
    np.testing.assert_allclose(got, w, rtol=2e-5, atol=1e-6)


def test_minimize_global_step_slots_and_variables():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(np.ones(3, np.float32), name="w")
        b = tf.Variable(np.zeros(3, np.float32), name="b")
        gs = tf.train.get_or_create_global_step()
        opt = tf.train.AdamOptimizer(0.01)
        train = opt.minimize(tf.reduce_sum(w * w) + tf.reduce_sum(b * w), global_step=gs)
        assert isinstance(train, tf.Operation)
        assert opt.get_slot_names() == ["m", "v"]
        assert opt.get_slot(w, "m").name == "w/Adam:0"
        assert opt.get_slot(w, "v").name == "w/Adam_1:0"
        assert opt.get_slot(w, "nope") is None
        assert [v.name for v in opt.variables()] == [
            "b/Adam:0", "b/Adam_1:0", "beta1_power:0", "beta2_power:0", "w/Adam:0",
            "w/Adam_1:0"]
        b1p, _ = opt._get_beta_accumulators()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(3):
                s.run(train)
            assert s.run(gs) == 3
            np.testing.assert_allclose(s.run(b1p), 0.9 ** 4, rtol=1e-6)
        mom = tf.train.MomentumOptimizer(0.1, 0.9)
        mom.minimize(tf.reduce_sum(w * w), var_list=[w])
        assert mom.get_slot(w, "momentum").name == "w/Momentum:0"
        assert mom.get_slot(b, "momentum") is None


def test_clip_by_global_norm_flow_and_none_gradient():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(np.array([3.0, 4.0], np.float32), name="w")
        unused = tf.Variable(np.float32(1.0), name="unused")
        loss = 10.0 * tf.reduce_sum(w * w)
        opt = tf.train.GradientDescentOptimizer(0.1)
        gv = opt.compute_gradients(loss)
        assert gv[1][0] is None and gv[1][1] is unused
        grads, norm = tf.clip_by_global_norm([gv[0][0]], 1.0)
        step = opt.apply_gradients(list(zip(grads, [w])) + [(None, unused)])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            n, _ = s.run([norm, step])
            got = s.run(w)
    gw = 20.0 * np.array([3.0, 4.0])
    np.testing.assert_allclose(n, np.linalg.norm(gw), rtol=1e-6)
    np.testing.assert_allclose(got, [3.0, 4.0] - 0.1 * gw / np.linalg.norm(gw), rtol=1e-6)


def test_bad_inputs():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(1.0, name="w")
        c = tf.constant(2.0)
        opt = tf.train.GradientDescentOptimizer(0.1)
        with pytest.raises(ValueError, match="No gradients provided"):
            opt.minimize(c * 3.0, var_list=[w])
        with pytest.raises(ValueError, match="No variables provided"):
            opt.apply_gradients([])
        with pytest.raises(TypeError, match="not a Variable"):
            opt.apply_gradients([(c, c)])
        with pytest.raises(ValueError, match="initial_accumulator_value"):
            tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
        with pytest.raises(ValueError, match="learning_rate_power"):
            tf.train.FtrlOptimizer(0.1, learning_rate_power=0.5)


def test_failed_step_leaves_variables():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(np.ones(2, np.float32), name="w")
        x = tf.placeholder(tf.float32, [2])
        step = tf.train.MomentumOptimizer(0.1, 0.9).minimize(tf.reduce_sum(w * x))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            with pytest.raises(Exception):
                s.run(step, {x: np.ones(3, np.float32)})
            np.testing.assert_array_equal(s.run(w), [1.0, 1.0])


class _PowerSign(tf.train.Optimizer):
    """A user optimizer in TensorFlow 1's subclass protocol: PowerSign (Bello et al.,
    2017), ``m = beta m + (1 - beta) g``; ``var -= lr * exp(sign(g) * sign(m)) * g``."""

    def __init__(self, learning_rate=0.1, beta=0.9, use_locking=False, name="PowerSign"):
        super().__init__(use_locking, name)
        self._lr, self._beta = learning_rate, beta

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "m", self._name)

    def _prepare(self):
        self._lr_t = tf.convert_to_tensor(self._call_if_callable(self._lr), name="lr")
        self._beta_t = tf.convert_to_tensor(self._beta, name="beta")

    def _apply_dense(self, grad, var):
        lr_t = tf.cast(self._lr_t, var.dtype)
        beta_t = tf.cast(self._beta_t, var.dtype)
        m = self.get_slot(var, "m")
        m_t = tf.assign(m, beta_t * m + (1.0 - beta_t) * grad)
        update = lr_t * tf.exp(tf.sign(grad) * tf.sign(m_t)) * grad
        var_update = tf.assign_sub(var, update)
        return tf.group(*[var_update, m_t])


def test_user_optimizer_subclass_in_tf1_protocol():
    got = _mylib_run(lambda: _PowerSign(0.05, 0.8), 4)

    def rule(w, s, g, t):
        (m,) = s
        m = 0.8 * m + 0.2 * g
        return w - 0.05 * np.exp(np.sign(g) * np.sign(m)) * g, [m]

    # The hyperparameters are float32 tensors cast to float64, as in TensorFlow 1.
    np.testing.assert_allclose(got, _np_run(rule, 4, [0.0]), rtol=1e-6)
    got_sparse = _mylib_run(lambda: _PowerSign(0.05, 0.8), 3, sparse_rows=[2, 0, 2])
    w, m = W0.copy(), np.zeros_like(W0)
    for t in range(3):  # made dense: every row's m decays
        g = np.zeros_like(w)
        for r in [2, 0, 2]:
            g[r] += _grad(w)[r]
        w, (m,) = rule(w, [m], g, t)
    np.testing.assert_allclose(got_sparse, w, rtol=1e-6)
