"""SparseTensor and TensorFlow 1's sparse operations: feeding a sparse_placeholder with
a SparseTensorValue, fetching sparse values, to_dense, sparse x dense matmul (and its
gradient), reduce_sum, add, embedding_lookup_sparse and ctc_loss with sparse labels,
against numpy, jax.grad and optax."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import mylib as tf

RNG = np.random.default_rng(0)


def _random_sparse(shape, n):
    flat = np.sort(RNG.choice(int(np.prod(shape)), size=n, replace=False))
    idx = np.stack(np.unravel_index(flat, shape), 1).astype(np.int64)
    vals = RNG.standard_normal(n).astype(np.float32)
    dense = np.zeros(shape, np.float32)
    dense[tuple(idx.T)] = vals
    return tf.SparseTensorValue(idx, vals, np.array(shape, np.int64)), dense


def test_placeholder_feed_fetch_and_dense_forms():
    g = tf.Graph()
    with g.as_default():
        sp = tf.sparse_placeholder(tf.float32)
        dense = tf.sparse_tensor_to_dense(sp, default_value=-1.0)
        total = tf.sparse.reduce_sum(sp, axis=1)
        x = tf.placeholder(tf.float32, [None, None])
        added = tf.sparse.add(sp, x)
        with tf.Session() as s:
            for shape, n in (((3, 4), 5), ((5, 2), 3), ((2, 3, 4), 6)):
                v, d = _random_sparse(shape, n)
                got = s.run(sp, {sp: v})
                assert isinstance(got, tf.SparseTensorValue)
                np.testing.assert_array_equal(got.indices, v.indices)
                want = np.where(d != 0, d, -1.0)
                np.testing.assert_allclose(s.run(dense, {sp: v}), want)
                np.testing.assert_allclose(s.run(total, {sp: v}), d.sum(1), rtol=1e-6)
                if len(shape) == 2:
                    xv = RNG.standard_normal(shape).astype(np.float32)
                    np.testing.assert_allclose(s.run(added, {sp: v, x: xv}), d + xv,
                                               rtol=1e-6)
            # a plain tuple feeds too
            v, d = _random_sparse((2, 2), 2)
            np.testing.assert_allclose(s.run(dense, {sp: tuple(v)}),
                                       np.where(d != 0, d, -1.0))
    with pytest.raises(TypeError, match="SparseTensorValue"):
        with g.as_default(), tf.Session() as s:
            s.run(dense, {sp: np.zeros((2, 2))})


def test_constant_sparse_tensor_and_sparse_to_dense():
    st = tf.SparseTensor(indices=[[0, 0], [1, 2]], values=[1.0, 2.0], dense_shape=[3, 4])
    assert st.shape.as_list() == [3, 4]
    old = tf.sparse_to_dense([1, 3], [5], 7.0, default_value=0.5)
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(tf.sparse.to_dense(st)),
                                   [[1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0]])
        np.testing.assert_allclose(s.run(old), [0.5, 7, 0.5, 7, 0.5])
        assert st.eval(session=s).dense_shape.tolist() == [3, 4]


@pytest.mark.parametrize("adjoint_a,adjoint_b", [(False, False), (True, False),
                                                 (False, True), (True, True)])
def test_sparse_dense_matmul_values_and_gradients(adjoint_a, adjoint_b):
    v, d = _random_sparse((4, 5), 7)
    a = d.T if adjoint_a else d
    bv = RNG.standard_normal((3, a.shape[1]) if adjoint_b else (a.shape[1], 3)).astype(
        np.float32)
    g = tf.Graph()
    with g.as_default():
        sp = tf.sparse_placeholder(tf.float32, shape=[4, 5])
        b = tf.placeholder(tf.float32, bv.shape)
        out = tf.sparse_tensor_dense_matmul(sp, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)
        assert out.shape.as_list() == [a.shape[0], 3]
        loss = tf.reduce_sum(tf.sin(out))
        gv, gb = (tf.convert_to_tensor(t) for t in tf.gradients(loss, [sp.values, b]))
        with tf.Session() as s:
            o, gvv, gbv = s.run([out, gv, gb], {sp: v, b: bv})

    def ref(vals, bb):
        dd = jnp.zeros((4, 5)).at[tuple(v.indices.T)].set(vals)
        aa = dd.T if adjoint_a else dd
        return jnp.sum(jnp.sin(aa @ (bb.T if adjoint_b else bb)))

    want = a @ (bv.T if adjoint_b else bv)
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-5)
    rv, rb = jax.grad(ref, argnums=(0, 1))(v.values, bv)
    np.testing.assert_allclose(gvv, rv, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gbv, rb, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_embedding_lookup_sparse(combiner):
    params = RNG.standard_normal((10, 3)).astype(np.float32)
    idx = np.array([[0, 0], [0, 1], [0, 2], [2, 0], [3, 1]], np.int64)
    ids = np.array([1, 3, 1, 9, 0], np.int64)
    w = np.array([1.0, 0.5, 2.0, 3.0, -1.0], np.float32)
    p = tf.Variable(params)
    sp_ids = tf.SparseTensor(idx, ids, [4, 3])
    sp_w = tf.SparseTensor(idx, w, [4, 3])
    out = tf.nn.embedding_lookup_sparse(p, sp_ids, sp_w, combiner=combiner)
    (grad,) = tf.gradients(tf.reduce_sum(out * out), [p])
    want = np.zeros((4, 3), np.float32)
    for r in range(4):
        sel = idx[:, 0] == r
        if not sel.any():
            continue
        tot = (params[ids[sel]] * w[sel, None]).sum(0)
        norm = {"sum": 1.0, "mean": w[sel].sum(), "sqrtn": np.sqrt((w[sel] ** 2).sum())}
        want[r] = tot / norm[combiner]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        got, gv = s.run([out, tf.convert_to_tensor(grad)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert np.abs(gv[[2, 4, 5, 6, 7, 8]]).max() == 0  # rows never looked up
    with pytest.raises(ValueError, match="combiner"):
        tf.nn.embedding_lookup_sparse(p, sp_ids, None, combiner="max")


def test_ctc_loss_with_sparse_labels_matches_optax():
    T, B, C = 6, 3, 5  # blank = C - 1
    logits = RNG.standard_normal((T, B, C)).astype(np.float32)
    labels = [[0, 1, 1], [2], [3, 0]]
    idx = np.array([[b, i] for b, lab in enumerate(labels) for i in range(len(lab))],
                   np.int64)
    vals = np.array([c for lab in labels for c in lab], np.int32)
    seq = np.array([6, 4, 5], np.int32)
    lab = tf.SparseTensor(idx, vals, [B, 3])
    x = tf.placeholder(tf.float32, [T, B, C])
    loss = tf.nn.ctc_loss(lab, x, seq)
    with tf.Session() as s:
        got = s.run(loss, {x: logits})
    dense = np.zeros((B, 3), np.int32)
    pad = np.ones((B, 3), np.float32)
    for b, l in enumerate(labels):
        dense[b, :len(l)] = l
        pad[b, :len(l)] = 0
    tpad = (np.arange(T)[None] >= seq[:, None]).astype(np.float32)
    want = optax.ctc_loss(np.transpose(logits, (1, 0, 2)), tpad, dense, pad,
                          blank_id=C - 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
