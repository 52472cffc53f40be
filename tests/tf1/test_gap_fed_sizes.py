"""Sizes from fed values, as TF1 programs compute them: `zeros([n])`, `range(n)`,
`reshape(x, [batch, -1])`, `random_normal([n, 3])`, `ones(stack([n, 2]))`, `fill`,
`tile(x, [n, 1])`, `one_hot(i, n)`, slices, where `n` is a fed int placeholder (or
computed from one). The step compiles for each value (kept in a bounded cache). Values
are checked against numpy, gradients against `jax.grad`."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as tf
from mylib.runtime import compile as _compile

XV = (np.arange(24, dtype=np.float32).reshape(6, 4) - 10.0) / 7.0


@pytest.fixture
def ph():
    n = tf.placeholder(tf.int32, [], name="n")
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    return n, x


CASES = [
    ("zeros", lambda n, x: tf.zeros([n]), lambda n, x: np.zeros(n, np.float32)),
    ("range", lambda n, x: tf.range(n), lambda n, x: np.arange(n)),
    ("range2", lambda n, x: tf.range(1, 2 * n, 2), lambda n, x: np.arange(1, 2 * n, 2)),
    ("reshape", lambda n, x: tf.reshape(x, [n, -1]), lambda n, x: x.reshape(n, -1)),
    ("ones_stack", lambda n, x: tf.ones(tf.stack([n, 2])), lambda n, x: np.ones((n, 2))),
    ("fill", lambda n, x: tf.fill([n, 2], 3.5), lambda n, x: np.full((n, 2), 3.5)),
    ("tile", lambda n, x: tf.tile(x, [n, 1]), lambda n, x: np.tile(x, (n, 1))),
    ("one_hot", lambda n, x: tf.one_hot([0, 2, 5], n),  # 5 is out of range: a zero row
     lambda n, x: (np.arange(n)[None, :] == np.array([0, 2, 5])[:, None]).astype(float)),
    ("slice", lambda n, x: tf.slice(x, [1, 0], [n, -1]), lambda n, x: x[1:1 + n]),
    ("getitem", lambda n, x: x[:n, 1:], lambda n, x: x[:n, 1:]),
    ("strided", lambda n, x: tf.strided_slice(x, [0, 0], tf.stack([n, 4])),
     lambda n, x: x[:n]),
    ("arith", lambda n, x: tf.zeros(tf.stack([n * 2 - 1])), lambda n, x: np.zeros(2 * n - 1)),
    ("mixed", lambda n, x: tf.reshape(x, [tf.shape(x)[0] // n, n, -1]),
     lambda n, x: x.reshape(6 // n, n, -1)),
    ("sequence_mask", lambda n, x: tf.sequence_mask([1, 3], n),
     lambda n, x: np.arange(n)[None, :] < np.array([1, 3])[:, None]),
]


@pytest.mark.parametrize("name,build,ref", CASES, ids=[c[0] for c in CASES])
def test_size_from_a_fed_int(ph, name, build, ref):
    n, x = ph
    y = build(n, x)
    with tf.Session() as s:
        for nv in (2, 3, 2):  # a second value compiles again; the first is cached
            got = s.run(y, {n: nv, x: XV})
            np.testing.assert_allclose(got, ref(nv, XV), rtol=1e-6)


def test_random_normal_of_a_fed_size(ph):
    n, _ = ph
    r = tf.random_normal(tf.stack([n, 3]), seed=1)
    with tf.Session() as s:
        a, b = s.run(r, {n: 2}), s.run(r, {n: 5})
    assert a.shape == (2, 3) and b.shape == (5, 3)
    assert np.all(np.isfinite(b)) and b.std() > 0.1


def test_gradients_through_fed_sizes(ph):
    n, x = ph
    y = tf.reduce_sum(tf.sin(tf.reshape(x, [n, -1])) * tf.range(tf.cast(n, tf.float32))[:, None]) \
        + tf.reduce_sum(tf.tile(x, [n, 1]) ** 2) + tf.reduce_sum(x[:n] * 3.0)
    g = tf.gradients(y, x)[0]

    def f(a, nv):
        w = jnp.arange(nv, dtype=jnp.float32)[:, None]
        return jnp.sum(jnp.sin(a.reshape(nv, -1)) * w) + jnp.sum(jnp.tile(a, (nv, 1)) ** 2) \
            + jnp.sum(a[:nv] * 3.0)

    with tf.Session() as s:
        for nv in (2, 3):
            np.testing.assert_allclose(s.run(g, {n: nv, x: XV}), jax.grad(f)(XV, nv),
                                       rtol=1e-5, atol=1e-5)


def test_size_from_a_fed_vector_and_reduce_max():
    x = tf.placeholder(tf.float32, [None, None])
    lengths = tf.placeholder(tf.int32, [None])
    y = x[:, :tf.reduce_max(lengths)]
    dims = tf.placeholder(tf.int32, [2])
    z = tf.zeros(dims) + 1.0
    xv = np.arange(12, dtype=np.float32).reshape(3, 4)
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(y, {x: xv, lengths: [1, 2, 2]}), xv[:, :2])
        np.testing.assert_allclose(s.run(y, {x: xv, lengths: [3, 1, 1]}), xv[:, :3])
        np.testing.assert_allclose(s.run(z, {dims: [2, 5]}), np.ones((2, 5)))


def test_make_callable_and_a_training_step_with_a_fed_batch():
    # A TF1 pattern: the batch size fed separately, reshaping flat inputs.
    n = tf.placeholder(tf.int32, [])
    flat = tf.placeholder(tf.float32, [None])
    w = tf.Variable(np.ones((4, 1), np.float32))
    x = tf.reshape(flat, tf.stack([n, 4]))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    wv = np.ones((4, 1), np.float32)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        step = s.make_callable([loss, train], [n, flat])
        for nv in (2, 3, 2):
            xb = XV[:nv]
            lv, _ = step(nv, xb.reshape(-1))
            np.testing.assert_allclose(lv, np.mean((xb @ wv) ** 2), rtol=1e-5)
            wv = wv - 0.1 * (2 * xb.T @ (xb @ wv) / nv)
        np.testing.assert_allclose(s.run(w), wv, rtol=1e-5)


def test_a_fed_size_that_does_not_fit_raises_and_changes_nothing(ph):
    n, x = ph
    v = tf.Variable(1.0)
    with tf.control_dependencies([tf.assign_add(v, 1.0)]):
        y = tf.reshape(x, [n, -1])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(y, {n: 3, x: XV})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Reshape"):
            s.run(y, {n: 5, x: XV})  # 24 elements into 5 rows
        with pytest.raises(tf.errors.InvalidArgumentError):
            s.run(tf.zeros([n]), {n: -1})
        assert s.run(v) == 2.0


def test_programs_per_step_are_bounded(ph, monkeypatch):
    monkeypatch.setattr(_compile, "MAX_SPECIALIZATIONS", 2)
    n, _ = ph
    y = tf.range(n) * 2
    with tf.Session() as s:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for nv in (1, 2, 3, 4, 1):
                np.testing.assert_array_equal(s.run(y, {n: nv}), np.arange(nv) * 2)
        assert any("distinct values" in str(m.message) for m in w)


def test_a_float_feed_is_never_baked_in(ph):
    # Only integer (size-like) feeds become constants: a float value used as a size
    # stays an error, naming the op.
    f = tf.placeholder(tf.float32, [])
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Fill"):
            s.run(tf.zeros(tf.stack([tf.cast(f, tf.int32)])), {f: 3.0})
