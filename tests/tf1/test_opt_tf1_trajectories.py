"""`tf.train.*Optimizer` over 25 steps of fed gradients (tiny, unit and large) against
numpy transcriptions of TensorFlow 1.15's kernels (core/kernels/training_ops.cc) and
optimizers (python/training/*.py), dense and sparse (repeated rows summed; only the
touched rows move, except Adam, whose sparse path decays every row's moments)."""

import numpy as np
import pytest

import mylib as tf

STEPS = 25
W0 = np.random.RandomState(3).randn(6, 3)
ROWS = np.array([4, 1, 4, 0])  # rows 2, 3, 5 untouched; row 4 twice


def _grads(scale, sparse=False):
    r = np.random.RandomState(9)
    shape = (len(ROWS), 3) if sparse else W0.shape
    return [r.randn(*shape) * scale * (1 + 0.5 * np.sin(i)) for i in range(STEPS)]


# ------------------------------------------------------------ TF 1.15 rules, numpy
def _momentum(lr, mu, nesterov):
    def rule(w, s, g, t):
        a = s[0] * mu + g
        return (w - (g * lr + a * mu * lr) if nesterov else w - lr * a), [a]
    return rule, [0.0]


def _adam(lr, b1, b2, eps):
    def rule(w, s, g, t):
        m, v = s
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        return w - m * lr_t / (np.sqrt(v) + eps), [m, v]
    return rule, [0.0, 0.0]


def _adagrad(lr, init):
    def rule(w, s, g, t):
        a = s[0] + g * g
        return w - lr * g / np.sqrt(a), [a]
    return rule, [init]


def _rmsprop(lr, rho, mu, eps, centered):
    def rule(w, s, g, t):
        ms, mom, mg = s
        ms = ms + (g * g - ms) * (1 - rho)
        mg = mg + (g - mg) * (1 - rho) if centered else mg
        denom = ms - mg * mg + eps if centered else ms + eps
        mom = mom * mu + lr * g / np.sqrt(denom)
        return w - mom, [ms, mom, mg]
    return rule, [1.0, 0.0, 0.0]  # TF1's mean square starts at ONE


def _adadelta(lr, rho, eps):
    def rule(w, s, g, t):
        a, au = s
        a = a * rho + g * g * (1 - rho)
        upd = np.sqrt(au + eps) / np.sqrt(a + eps) * g
        au = au * rho + upd * upd * (1 - rho)
        return w - upd * lr, [a, au]
    return rule, [0.0, 0.0]


def _ftrl(lr, power, init, l1, l2, shrink):
    def rule(w, s, g, t):
        acc, lin = s
        new_acc = acc + g * g
        lin = lin + g + 2 * shrink * w - (new_acc ** -power - acc ** -power) / lr * w
        quad = new_acc ** -power / lr + 2 * l2
        w = np.where(np.abs(lin) > l1, (l1 * np.sign(lin) - lin) / quad, 0.0)
        return w, [new_acc, lin]
    return rule, [init, 0.0]


def _proximal_adagrad(lr, init, l1, l2):
    def rule(w, s, g, t):
        a = s[0] + g * g
        lr_t = lr / np.sqrt(a)
        v = w - lr_t * g
        return np.sign(v) * np.maximum(np.abs(v) - lr_t * l1, 0) / (1 + lr_t * l2), [a]
    return rule, [init]


CASES = [
    ("momentum_nesterov", lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
     _momentum(0.05, 0.9, True)),
    ("adam", lambda: tf.train.AdamOptimizer(0.01), _adam(0.01, 0.9, 0.999, 1e-8)),
    ("adam_eps", lambda: tf.train.AdamOptimizer(0.05, 0.8, 0.99, epsilon=1e-3),
     _adam(0.05, 0.8, 0.99, 1e-3)),
    ("adagrad", lambda: tf.train.AdagradOptimizer(0.1), _adagrad(0.1, 0.1)),
    ("adagrad_init", lambda: tf.train.AdagradOptimizer(0.1, initial_accumulator_value=1e-6),
     _adagrad(0.1, 1e-6)),
    ("rmsprop", lambda: tf.train.RMSPropOptimizer(0.01), _rmsprop(0.01, 0.9, 0.0, 1e-10, False)),
    ("rmsprop_centered", lambda: tf.train.RMSPropOptimizer(
        0.01, decay=0.8, momentum=0.9, epsilon=1e-4, centered=True),
     _rmsprop(0.01, 0.8, 0.9, 1e-4, True)),
    ("adadelta", lambda: tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6),
     _adadelta(1.0, 0.9, 1e-6)),
    ("ftrl", lambda: tf.train.FtrlOptimizer(
        0.2, learning_rate_power=-0.6, l1_regularization_strength=1e-3,
        l2_regularization_strength=0.01, l2_shrinkage_regularization_strength=0.05),
     _ftrl(0.2, -0.6, 0.1, 1e-3, 0.01, 0.05)),
    ("proximal_adagrad", lambda: tf.train.ProximalAdagradOptimizer(
        0.1, l1_regularization_strength=1e-3, l2_regularization_strength=0.01),
     _proximal_adagrad(0.1, 0.1, 1e-3, 0.01)),
]


def _np_run(rule, init, grads, sparse):
    w = W0.copy()
    slots = [np.full_like(w, s) for s in init]
    out = []
    for t, g in enumerate(grads, 1):
        if not sparse:
            w, slots = rule(w, slots, g, t)
        else:
            rows = np.unique(ROWS)
            summed = np.zeros((len(rows), 3))
            np.add.at(summed, np.searchsorted(rows, ROWS), g)
            new_w, new_s = rule(w[rows], [s[rows] for s in slots], summed, t)
            w = w.copy()
            w[rows] = new_w
            for s, n in zip(slots, new_s):
                s[rows] = n
        out.append(w)
    return out


def _mylib_run(make, grads, sparse):
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(W0, name="w")
        if sparse:
            vals = tf.placeholder(tf.float64, [len(ROWS), 3])
            grad = tf.IndexedSlices(vals, tf.constant(ROWS.astype(np.int32)),
                                    tf.constant(np.array(W0.shape, np.int32)))
        else:
            vals = grad = tf.placeholder(tf.float64, W0.shape)
        step = make().apply_gradients([(grad, w)])
        out = []
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for x in grads:
                s.run(step, {vals: x})
                out.append(s.run(w))
    return out


@pytest.mark.parametrize("scale", [1e-6, 1.0, 50.0], ids=["tiny", "unit", "large"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name,make,ref", CASES, ids=[c[0] for c in CASES])
def test_trajectory_matches_tf1_rule(name, make, ref, sparse, scale):
    rule, init = ref
    grads = _grads(scale, sparse)
    got = _mylib_run(make, grads, sparse)
    if sparse and name.startswith("adam"):
        # TF1's Adam._apply_sparse: m = beta1 m (every row), then scatter_add the rows'
        # (1 - beta1) g; the same for v; var -= lr_t m / (sqrt(v) + eps) on every row:
        # the dense rule on the scattered gradient.
        dense = []
        for x in grads:
            d = np.zeros_like(W0)
            np.add.at(d, ROWS, x)
            dense.append(d)
        want = _np_run(rule, init, dense, False)
    else:
        want = _np_run(rule, init, grads, sparse)
    for t, (a, b) in enumerate(zip(got, want)):
        dist = np.max(np.abs(b - W0))
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * dist + 1e-300,
                                   err_msg=f"step {t + 1}")
    if sparse and not name.startswith("adam"):
        untouched = np.setdiff1d(np.arange(len(W0)), ROWS)
        np.testing.assert_array_equal(got[-1][untouched], W0[untouched])
    assert np.max(np.abs(got[-1] - W0)) > 0


def test_adam_matches_keras_adam_with_tf1_epsilon():
    """TF1's AdamOptimizer and Keras 3's Adam are one rule (epsilon on the raw
    sqrt(v)): float32, tiny gradients, 25 steps, the same weights as mylib's Keras-style
    Adam given TF1's epsilon."""
    grads = [g.astype(np.float32) for g in _grads(1e-6)]
    outs = []
    for make in (lambda: tf.train.AdamOptimizer(0.01),
                 lambda: tf.optimizers.Adam(0.01, epsilon=1e-8)):
        g = tf.Graph()
        with g.as_default():
            w = tf.Variable(W0.astype(np.float32), name="w")
            ph = tf.placeholder(tf.float32, W0.shape)
            step = make().apply_gradients([(ph, w)])
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for x in grads:
                    s.run(step, {ph: x})
                outs.append(s.run(w))
    np.testing.assert_allclose(outs[0], outs[1], rtol=0,
                               atol=1e-5 * np.max(np.abs(outs[1] - W0)))
