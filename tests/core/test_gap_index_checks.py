"""Indices out of range fail the step, as TensorFlow on CPU: `gather`, `gather_nd`,
`embedding_lookup`, `scatter_update` / `_add` / `_sub`, `scatter_nd_update` / `_add`,
`scatter_nd`, `tensor_scatter_nd_update` raise InvalidArgumentError naming the op and
the index (``indices[3] = 7 is not in [0, 5)``), and the failed step changes no
variable. Good indices give numpy's values."""

import numpy as np
import pytest

import mylib as tf

T0 = np.arange(15, dtype=np.float32).reshape(5, 3)


def _ones(i):
    return tf.ones(tf.stack([tf.shape(i)[0], 3]))


# (name, op type in the message, build(var, const, idx), numpy reference(table, idx))
CASES = [
    ("gather", "GatherV2", lambda v, c, i: tf.gather(c, i), lambda t, i: t[i]),
    ("gather_var", "GatherV2", lambda v, c, i: tf.gather(v, i), lambda t, i: t[i]),
    ("embedding_lookup", "ResourceGather", lambda v, c, i: tf.nn.embedding_lookup(v, i),
     lambda t, i: t[i]),
    ("gather_nd", "GatherNd", lambda v, c, i: tf.gather_nd(c, i[:, None]),
     lambda t, i: t[i]),
    ("scatter_update", "ResourceScatterUpdate",
     lambda v, c, i: tf.scatter_update(v, i, _ones(i)), lambda t, i: _set(t, i, 1.0)),
    ("scatter_add", "ResourceScatterAdd",
     lambda v, c, i: tf.scatter_add(v, i, _ones(i)), lambda t, i: _add(t, i, 1.0)),
    ("scatter_sub", "ResourceScatterSub",
     lambda v, c, i: tf.scatter_sub(v, i, _ones(i)), lambda t, i: _add(t, i, -1.0)),
    ("scatter_nd_update", "ResourceScatterNdUpdate",
     lambda v, c, i: tf.scatter_nd_update(v, i[:, None], _ones(i)),
     lambda t, i: _set(t, i, 1.0)),
    ("scatter_nd_add", "ResourceScatterNdAdd",
     lambda v, c, i: tf.scatter_nd_add(v, i[:, None], _ones(i)),
     lambda t, i: _add(t, i, 1.0)),
    ("scatter_nd", "ScatterNd", lambda v, c, i: tf.scatter_nd(i[:, None], _ones(i), [5, 3]),
     lambda t, i: _add(np.zeros_like(t), i, 1.0)),
    ("tensor_scatter_nd_update", "TensorScatter",
     lambda v, c, i: tf.tensor_scatter_nd_update(c, i[:, None], _ones(i)),
     lambda t, i: _set(t, i, 1.0)),
]


def _set(t, i, x):
    t = t.copy()
    t[i] = x
    return t


def _add(t, i, x):
    t = t.copy()
    np.add.at(t, i, x)
    return t


@pytest.mark.parametrize("computed", [False, True], ids=["fed", "computed"])
@pytest.mark.parametrize("name,op_type,build,ref", CASES, ids=[c[0] for c in CASES])
def test_out_of_range_index_raises_and_changes_nothing(name, op_type, build, ref, computed):
    # Fed indices are checked on the host before the step; indices computed in the
    # step are checked inside it, and the step then writes every variable back.
    v = tf.Variable(T0)
    other = tf.Variable(0.0)
    i = tf.placeholder(tf.int32, [None])
    y = build(v, tf.constant(T0), i * tf.constant(1) if computed else i)
    fetch = y.op if isinstance(y, tf.Operation) else y
    with tf.control_dependencies([fetch]):
        bump = tf.assign_add(other, 1.0)  # another write of the same step
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for bad, where in (([0, 1, 2, 7], "indices[3] = "), ([4, -1], "indices[1] = ")):
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                s.run([y, bump], {i: bad})
            msg = str(e.value)
            assert op_type in msg and where in msg, msg
            assert ("is not in [0, 5)" in msg) or ("does not index into shape [5]" in msg)
            np.testing.assert_array_equal(s.run(v), T0)  # a failed step loses nothing
            assert s.run(other) == 0.0
        good = np.array([4, 0, 2], np.int32)
        got, _ = s.run([y, bump], {i: good})
        np.testing.assert_allclose(got, ref(T0, good))
        assert s.run(other) == 1.0


def test_multi_dim_indices_name_the_position():
    p = tf.constant(T0)
    i = tf.placeholder(tf.int32, [2, 2])
    flat = tf.placeholder(tf.int32, [4])
    with tf.Session() as s:
        for g, feed in ((tf.gather(p, i), {i: [[0, 1], [9, 2]]}),
                        (tf.gather(p, i + 0), {i: [[0, 1], [9, 2]]}),
                        (tf.gather(p, tf.reshape(flat, [2, 2])), {flat: [0, 1, 9, 2]})):
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"indices\[1,0\] = 9 is not in \[0, 5\)"):
                s.run(g, feed)
        np.testing.assert_allclose(s.run(tf.gather(p, i), {i: [[0, 1], [4, 2]]}),
                                   T0[[[0, 1], [4, 2]]])


@pytest.mark.parametrize("computed", [False, True], ids=["fed", "computed"])
def test_a_training_step_with_a_bad_id_keeps_every_variable(computed):
    # Computed ids: the sparse Adam rows of the embedding are gated by the check
    # (gate_rows), the dense variables by a select.
    ids = tf.placeholder(tf.int32, [None])
    y = tf.placeholder(tf.float32, [None])
    emb = tf.Variable(np.linspace(-1, 1, 20, dtype=np.float32).reshape(10, 2))
    w = tf.Variable(np.ones((2, 1), np.float32))
    gs = tf.train.get_or_create_global_step()
    looked = ids * tf.constant(1) if computed else ids
    pred = tf.squeeze(tf.matmul(tf.nn.embedding_lookup(emb, looked), w), 1)
    loss = tf.reduce_mean((pred - y) ** 2)
    train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=gs)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(train, {ids: [1, 2, 3], y: [0.0, 1.0, 2.0]})
        before = s.run(tf.global_variables())
        with pytest.raises(tf.errors.InvalidArgumentError, match="embedding_lookup"):
            s.run(train, {ids: [1, 10, 3], y: [0.0, 1.0, 2.0]})
        for a, b in zip(before, s.run(tf.global_variables())):
            np.testing.assert_array_equal(a, b)
        row4 = s.run(emb)[4]
        s.run(train, {ids: [4, 5], y: [1.0, 1.0]})  # training goes on
        assert s.run(gs) == 2
        assert not np.array_equal(s.run(emb)[4], row4)  # row 4 did train


def test_a_segmented_step_puts_earlier_writes_back():
    # A host op splits the step: the first cluster writes `v`, the gather after the
    # host op fails; v keeps its value.
    v = tf.Variable(1.0)
    i = tf.placeholder(tf.int32, [None])
    bump = tf.assign_add(v, 5.0)
    j = tf.py_func(lambda a: a, [i], tf.int32)
    with tf.control_dependencies([bump]):
        g = tf.gather(tf.constant(T0), j)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match="GatherV2"):
            s.run(g, {i: [0, 5]})
        assert s.run(v) == 1.0
        np.testing.assert_allclose(s.run(g, {i: [0, 4]}), T0[[0, 4]])
        assert s.run(v) == 6.0
