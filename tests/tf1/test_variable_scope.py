"""TF1 `get_variable` / `variable_scope`: names, reuse, errors, initializers by their tf
names (statistics against their formulas), regularizers and partitioners."""

import numpy as np
import pytest

import mylib as tf


@pytest.fixture
def g():
    graph = tf.Graph()
    with graph.as_default():
        yield graph


def _run(graph, fetches, feed=None):
    with tf.Session(graph=graph) as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


def test_names_and_name_scopes(g):
    with tf.variable_scope("foo"):
        with tf.variable_scope("bar"):
            v = tf.get_variable("v", [1])
            x = tf.add(v, 1.0)
    assert v.name == "foo/bar/v:0"
    assert x.op.name.startswith("foo/bar/")
    assert tf.get_variable_scope().name == ""
    with tf.variable_scope("foo") as sc:
        assert sc.name == "foo"
        y = tf.constant(1.0)
    assert y.op.name.startswith("foo_1/")  # the name scope is made unique, as TF1


def test_reuse_true_auto_reuse_and_reuse_variables(g):
    with tf.variable_scope("s"):
        v = tf.get_variable("v", [2, 3])
    with tf.variable_scope("s", reuse=True):
        assert tf.get_variable("v", [2, 3]) is v
        with tf.variable_scope("inner"):  # reuse is inherited
            assert tf.get_variable_scope().reuse is True
    with tf.variable_scope("s") as sc:
        sc.reuse_variables()
        assert tf.get_variable("v") is v
    for _ in range(2):
        with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
            w = tf.get_variable("w", [3])
    assert [x.name for x in tf.global_variables()] == ["s/v:0", "auto/w:0"]
    with tf.variable_scope(sc, reuse=True):  # a captured scope object
        assert tf.get_variable("v", [2, 3]) is v
    del w


def test_errors_say_what_to_do(g):
    with tf.variable_scope("a"):
        tf.get_variable("v", [1])
    with pytest.raises(ValueError, match=r"Variable a/v already exists, disallowed. Did you "
                                         r"mean to set reuse=True"):
        with tf.variable_scope("a"):
            tf.get_variable("v", [1])
    with pytest.raises(ValueError, match=r"Variable a/w does not exist"):
        with tf.variable_scope("a", reuse=True):
            tf.get_variable("w", [1])
    with pytest.raises(ValueError, match=r"Trying to share variable a/v, but specified shape"):
        with tf.variable_scope("a", reuse=True):
            tf.get_variable("v", [2])
    with pytest.raises(ValueError, match="must be fully defined"):
        tf.get_variable("u", [None, 2])
    with pytest.raises(ValueError, match="name_or_scope is required"):
        with tf.variable_scope(None):
            pass


def test_default_names_are_unique(g):
    names = []
    for _ in range(3):
        with tf.variable_scope(None, default_name="layer") as sc:
            names.append(sc.name)
    assert names == ["layer", "layer_1", "layer_2"]


def test_variables_keyed_per_graph():
    for _ in range(2):
        with tf.Graph().as_default():
            with tf.variable_scope("x"):
                v = tf.get_variable("v", [1])  # no "already exists" across graphs
            assert v.name == "x/v:0"


def test_default_initializer_is_glorot_uniform_and_int_zeros(g):
    v = tf.get_variable("v", [300, 200])
    i = tf.get_variable("i", [4], dtype=tf.int32)
    vv, iv = _run(g, [v, i])
    limit = np.sqrt(6.0 / 500)
    assert np.abs(vv).max() <= limit and np.abs(vv).max() > 0.95 * limit
    np.testing.assert_allclose(vv.std(), limit / np.sqrt(3), rtol=0.03)
    np.testing.assert_array_equal(iv, np.zeros(4))


def test_scope_initializer_and_tf1_initializers(g):
    with tf.variable_scope("s", initializer=tf.constant_initializer(3.0)):
        a = tf.get_variable("a", [2, 2])
        b = tf.get_variable("b", [2], initializer=tf.ones_initializer())
    c = tf.get_variable("c", [5], initializer=tf.constant_initializer([1, 2, 3]))
    d = tf.get_variable("d", [200, 100], initializer=tf.random_normal_initializer(0.5, 2.0))
    e = tf.get_variable("e", [200, 100], initializer=tf.truncated_normal_initializer(stddev=1.0))
    f = tf.get_variable("f", [20000], initializer=tf.random_uniform_initializer(-1.0, 3.0))
    h = tf.get_variable("h", [400, 100], initializer=tf.variance_scaling_initializer(
        2.0, mode="fan_in", distribution="uniform"))
    k = tf.get_variable("k", [3, 3, 16, 32],
                        initializer=tf.contrib.layers.xavier_initializer(uniform=False))
    z = tf.get_variable("z", [3], initializer=tf.zeros_initializer())
    t = tf.get_variable("t", initializer=np.arange(6.0, dtype=np.float32).reshape(2, 3))
    av, bv, cv, dv, ev, fv, hv, kv, zv, tv = _run(g, [a, b, c, d, e, f, h, k, z, t])
    np.testing.assert_array_equal(av, np.full((2, 2), 3.0))
    np.testing.assert_array_equal(bv, np.ones(2))
    np.testing.assert_array_equal(cv, [1, 2, 3, 3, 3])  # TF1 fills with the last value
    np.testing.assert_allclose([dv.mean(), dv.std()], [0.5, 2.0], atol=0.06)
    assert np.abs(ev).max() <= 2.0 and 0.8 < ev.std() < 0.9  # truncated at 2 stddevs
    assert fv.min() >= -1.0 and fv.max() < 3.0
    np.testing.assert_allclose(fv.mean(), 1.0, atol=0.04)
    limit = np.sqrt(3 * 2.0 / 400)
    assert np.abs(hv).max() <= limit and np.abs(hv).max() > 0.95 * limit
    # xavier normal: truncated normal with variance 1 / fan_avg (fans 144, 288).
    np.testing.assert_allclose(kv.std(), np.sqrt(1 / 216.0), rtol=0.06)
    np.testing.assert_array_equal(zv, np.zeros(3))
    np.testing.assert_array_equal(tv, np.arange(6.0).reshape(2, 3))
    assert t.shape.as_list() == [2, 3]


def test_regularizers_collect_and_sum(g):
    w0 = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    with tf.variable_scope("net", regularizer=tf.contrib.layers.l2_regularizer(0.1)):
        w = tf.get_variable("w", initializer=w0)
        b = tf.get_variable("b", initializer=np.array([4.0], np.float32),
                            regularizer=tf.contrib.layers.l1_regularizer(0.5))
    regs = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(regs) == 2
    total = tf.losses.get_regularization_loss()
    got = _run(g, total)
    np.testing.assert_allclose(got, 0.1 * (w0 ** 2).sum() / 2 + 0.5 * 4.0, rtol=1e-6)
    del b


def test_partitioned_variable_acts_as_one(g):
    parts = tf.fixed_size_partitioner(3)
    with tf.variable_scope("emb", partitioner=parts):
        p = tf.get_variable("table", [10, 4], initializer=tf.random_normal_initializer())
    assert isinstance(p, tf.PartitionedVariable)
    assert [v.name for v in p] == [f"emb/table/part_{i}:0" for i in range(3)]
    assert [v.shape.as_list() for v in p] == [[4, 4], [3, 4], [3, 4]]
    assert tf.trainable_variables() == list(p)
    ids = tf.constant([0, 5, 9])
    rows = tf.nn.embedding_lookup(p, ids)
    y = tf.reduce_sum(tf.matmul(p, tf.ones([4, 1])) * 2.0)
    grads = tf.gradients(y, list(p))
    pv, rv, gv = _run(g, [p, rows, grads])
    np.testing.assert_array_equal(pv[[0, 5, 9]], rv)
    for gg, v in zip(gv, p):
        np.testing.assert_array_equal(gg, np.full(v.shape.as_list(), 2.0))
    with tf.variable_scope("emb", reuse=True):
        assert tf.get_variable("table", [10, 4]) is p


def test_partitioners_choose_counts():
    f = tf.variable_axis_size_partitioner(max_shard_bytes=64)
    assert f(shape=tf.TensorShape([10, 4]), dtype=tf.float32) == [3, 1]  # 16 B rows, 4/shard
    m = tf.min_max_variable_partitioner(max_partitions=4, min_slice_size=100)
    assert m(shape=tf.TensorShape([100, 2]), dtype=tf.float32) == [4, 1]
    assert m(shape=tf.TensorShape([10, 2]), dtype=tf.float32) == [1, 1]
    with pytest.raises(ValueError, match="num_shards"):
        tf.fixed_size_partitioner(0)


def test_custom_getter_wraps_creation(g):
    seen = []

    def getter(next_getter, name, *args, **kwargs):
        seen.append(name)
        return next_getter(name, *args, **kwargs)

    with tf.variable_scope("c", custom_getter=getter):
        tf.get_variable("v", [1])
    assert seen == ["c/v"]
