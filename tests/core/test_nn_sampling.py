"""Embedding lookups over sharded tables, candidate samplers and the sampled losses
(sampled softmax, NCE), against independent numpy / jax references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml

# References are computed with jax in float64 (see conftest.jax_x64).
pytestmark = pytest.mark.usefixtures("jax_x64")

FLT_MAX = float(np.finfo(np.float32).max)


# ---------------------------------------------------------------- references
def _split(full, n, strategy):
    """Shards of `full` as TensorFlow lays them out."""
    if strategy == "mod":
        return [full[p::n] for p in range(n)]
    per, extras = divmod(len(full), n)
    sizes = [per + (p < extras) for p in range(n)]
    return np.split(full, np.cumsum(sizes)[:-1])


def _join(shards, strategy):
    """The logical table from its shards (jnp, so jax.grad reaches every shard)."""
    if strategy == "div" or len(shards) == 1:
        return jnp.concatenate(shards, 0)
    n, total = len(shards), sum(s.shape[0] for s in shards)
    rows = [shards[i % n][i // n] for i in range(total)]
    return jnp.stack(rows)


def _dense(v):
    """Dense numpy value of a fetched IndexedSlicesValue."""
    out = np.zeros(tuple(v.dense_shape), v.values.dtype)
    np.add.at(out, v.indices, v.values)
    return out


# ---------------------------------------------------------------- embedding_lookup
def test_variable_sparse_read_is_a_resource_gather_with_sparse_gradient():
    table = np.arange(12.0).reshape(6, 2)
    g = ml.Graph()
    with g.as_default():
        v = ml.Variable(table)
        rows = v.sparse_read([[4, 1], [4, 4]])
        assert rows.op.type == "ResourceGather" and rows.shape.as_list() == [2, 2, 2]
        grad, = ml.gradients(ml.reduce_sum(rows * rows), [v])
        assert isinstance(grad, ml.IndexedSlices)
        with ml.Session() as sess:
            sess.run(v.initializer)
            r, gv = sess.run([rows, grad])
    np.testing.assert_array_equal(r, table[[[4, 1], [4, 4]]])
    assert sorted(set(gv.indices.tolist())) == [1, 4]
    ref = np.zeros_like(table)
    ref[[1, 4]] = [2 * table[1], 6 * table[4]]
    np.testing.assert_allclose(_dense(gv), ref)


def test_embedding_lookup_shards_values_and_sparse_gradients():
    rng = np.random.default_rng(0)
    full = rng.normal(size=(11, 3))
    ids = np.array([[0, 10, 3, 3], [7, 1, 10, 4], [5, 5, 5, 9]])  # repeats, rank 2
    upstream = rng.normal(size=ids.shape + (3,))
    cases = [(n, s) for n in (1, 2, 3) for s in ("mod", "div")]
    g = ml.Graph()
    with g.as_default():
        built = []
        for n, strategy in cases:
            shards = [ml.Variable(s) for s in _split(full, n, strategy)]
            out = ml.nn.embedding_lookup(shards, ids, partition_strategy=strategy)
            assert out.shape.as_list() == [3, 4, 3]
            grads = ml.gradients(ml.reduce_sum(out * upstream), shards)
            assert all(isinstance(gr, ml.IndexedSlices) for gr in grads)
            built.append((out, grads))
        # Tensor shards (gather) and ids of rank 0 and 1.
        const_shards = [ml.constant(s) for s in _split(full, 2, "div")]
        t_out = ml.nn.embedding_lookup(const_shards, ml.constant(ids, ml.int64),
                                       partition_strategy="div")
        t_grads = ml.gradients(ml.reduce_sum(t_out * upstream), const_shards)
        scalar = ml.nn.embedding_lookup(const_shards, 7, partition_strategy="div")
        vec = ml.nn.embedding_lookup(ml.Variable(full), [2, 2, 0])
        with ml.Session() as sess:
            sess.run(ml.global_variables_initializer())
            got = sess.run(built)
            t_got, t_g, sc, vc = sess.run([t_out, t_grads, scalar, vec])

    for (n, strategy), (out, grads) in zip(cases, got):
        np.testing.assert_allclose(out, full[ids], rtol=1e-12)
        parts = _split(full, n, strategy)

        def loss(*shards):
            return jnp.sum(_join(shards, strategy)[ids] * upstream)

        ref = jax.grad(loss, argnums=tuple(range(n)))(*parts)
        for p, (gv, r) in enumerate(zip(grads, ref)):
            np.testing.assert_allclose(_dense(gv), r, rtol=1e-12, atol=1e-12)
            # Only rows of this shard that were looked up are named.
            mine = [i for i in ids.ravel() if _owner(i, n, strategy, len(full)) == p]
            local = {_local(i, n, strategy, len(full)) for i in mine}
            assert set(gv.indices.tolist()) <= (local or {0}), (n, strategy, p)
    np.testing.assert_allclose(t_got, full[ids])
    for gv, r in zip(t_g, jax.grad(lambda a, b: jnp.sum(jnp.concatenate([a, b])[ids] * upstream),
                                   argnums=(0, 1))(*_split(full, 2, "div"))):
        np.testing.assert_allclose(_dense(gv), r, rtol=1e-12)
    np.testing.assert_allclose(sc, full[7])
    np.testing.assert_allclose(vc, full[[2, 2, 0]])


def _owner(i, n, strategy, total):
    if strategy == "mod":
        return i % n
    per, extras = divmod(total, n)
    return i // (per + 1) if i < extras * (per + 1) else extras + (i - extras * (per + 1)) // per


def _local(i, n, strategy, total):
    if strategy == "mod":
        return i // n
    per, extras = divmod(total, n)
    p = _owner(i, n, strategy, total)
    return i - (p * per + min(p, extras))


class _ShardedVariable:
    """Stands in for a sharded variable: anything with a `variables` list."""

    def __init__(self, variables):
        self.variables = variables


def test_sharded_variable_is_div_and_max_norm_clips_rows():
    rng = np.random.default_rng(1)
    full = rng.normal(size=(7, 4)) * np.array([[0.1], [3], [0.2], [5], [1], [0.3], [2]])
    ids = np.array([[1, 0], [3, 6], [3, 2]])
    up = rng.normal(size=(3, 2, 4))
    g = ml.Graph()
    with g.as_default():
        sv = _ShardedVariable([ml.Variable(s) for s in _split(full, 3, "div")])
        # partition_strategy is ignored for a sharded variable: always "div".
        out = ml.nn.embedding_lookup(sv, ids, partition_strategy="mod")
        clipped = ml.nn.embedding_lookup(sv, ids, max_norm=1.5)
        one = ml.Variable(full)
        clipped1 = ml.nn.embedding_lookup(one, ids, max_norm=1.5)
        grads = ml.gradients(ml.reduce_sum(clipped * up), sv.variables)
        with ml.Session() as sess:
            sess.run(ml.global_variables_initializer())
            o, c, c1, gs = sess.run([out, clipped, clipped1, grads])
    np.testing.assert_allclose(o, full[ids])
    rows = full[ids]
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    ref = rows * np.minimum(1.0, 1.5 / norms)
    np.testing.assert_allclose(c, ref, rtol=1e-12)
    np.testing.assert_allclose(c1, ref, rtol=1e-12)
    assert np.all(np.linalg.norm(c, axis=-1) <= 1.5 + 1e-12)

    def loss(a, b, d):
        r = jnp.concatenate([a, b, d])[ids]
        n = jnp.linalg.norm(r, axis=-1, keepdims=True)
        return jnp.sum(r * 1.5 / jnp.maximum(n, 1.5) * up)

    for gv, r in zip(gs, jax.grad(loss, argnums=(0, 1, 2))(*_split(full, 3, "div"))):
        np.testing.assert_allclose(_dense(gv), r, rtol=1e-10, atol=1e-12)


def test_embedding_lookup_errors():
    g = ml.Graph()
    with g.as_default():
        v = ml.Variable(np.zeros((4, 2), np.float32))
        with pytest.raises(ValueError, match="params"):
            ml.nn.embedding_lookup([], [0])
        with pytest.raises(ValueError, match="partition_strategy"):
            ml.nn.embedding_lookup([v, v], [0], partition_strategy="modulo")
        with pytest.raises(ValueError, match="ids"):
            ml.nn.embedding_lookup(v, ml.constant([0.0, 1.0]))
        with pytest.raises(ValueError, match="shard sizes"):  # "div" wants [4, 3]
            ml.nn.embedding_lookup([ml.Variable(np.zeros((3, 2))), ml.Variable(np.zeros((4, 2)))],
                                   [0], partition_strategy="div")
        with pytest.raises(ValueError, match="dtype"):
            ml.nn.embedding_lookup([v, ml.Variable(np.zeros((4, 2)))], [0])


# ---------------------------------------------------------------- sampled losses
def _np_sampled_logits(w, b, labels, x, sampled, tec, sec, remove):
    num_true = labels.shape[1]
    true_logits = np.einsum("bd,btd->bt", x, w[labels]) + b[labels] - np.log(tec)
    s_logits = x @ w[sampled].T + b[sampled]
    if remove:
        hits = (labels[:, :, None] == sampled[None, None, :]).any(1)
        s_logits = s_logits + np.where(hits, -FLT_MAX, 0.0)
    s_logits = s_logits - np.log(sec)
    logits = np.concatenate([true_logits, s_logits], 1)
    targets = np.concatenate([np.full(true_logits.shape, 1.0 / num_true),
                              np.zeros(s_logits.shape)], 1)
    return logits, targets


def _np_softmax_loss(logits, targets):
    m = logits.max(1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(1, keepdims=True))
    return -(targets * logp).sum(1)


def _np_nce_loss(logits, targets):
    return (np.maximum(logits, 0) - logits * targets + np.log1p(np.exp(-np.abs(logits)))).sum(1)


def _jnp_losses(w, b, x, labels, sampled, tec, sec, remove, kind):
    true_logits = jnp.einsum("bd,btd->bt", x, w[labels]) + b[labels] - jnp.log(tec)
    s_logits = x @ w[sampled].T + b[sampled]
    if remove:
        hits = (labels[:, :, None] == sampled[None, None, :]).any(1)
        s_logits = s_logits + jnp.where(hits, -FLT_MAX, 0.0)
    s_logits = s_logits - jnp.log(sec)
    logits = jnp.concatenate([true_logits, s_logits], 1)
    targets = jnp.concatenate([jnp.full(true_logits.shape, 1.0 / labels.shape[1]),
                               jnp.zeros(s_logits.shape)], 1)
    if kind == "softmax":
        return -jnp.sum(targets * jax.nn.log_softmax(logits), 1)
    return jnp.sum(jnp.maximum(logits, 0) - logits * targets +
                   jnp.log1p(jnp.exp(-jnp.abs(logits))), 1)


def test_sampled_losses_with_fixed_candidates_match_tf_formula_and_jax_grad():
    rng = np.random.default_rng(2)
    num_classes, dim, batch, num_true = 9, 4, 3, 2
    w = rng.normal(size=(num_classes, dim))
    b = rng.normal(size=num_classes)
    x = rng.normal(size=(batch, dim))
    labels = np.array([[1, 4], [2, 2], [8, 0]])
    sampled = np.array([4, 5, 0, 7])  # 4 and 0 are accidental hits of rows 0 and 2
    tec = rng.uniform(0.1, 0.9, size=(batch, num_true))
    sec = rng.uniform(0.1, 0.9, size=4)
    cases = [("softmax", True), ("softmax", False), ("nce", False), ("nce", True)]
    g = ml.Graph()
    with g.as_default():
        shards = [ml.Variable(s) for s in _split(w, 2, "mod")]
        bv = ml.Variable(b)
        xv = ml.Variable(x)
        sv = (ml.constant(sampled, ml.int64), ml.constant(tec, ml.float32),
              ml.constant(sec, ml.float32))
        fetch = []
        for kind, remove in cases:
            fn = ml.nn.sampled_softmax_loss if kind == "softmax" else ml.nn.nce_loss
            loss = fn(shards, bv, labels, xv, num_sampled=4, num_classes=num_classes,
                      num_true=num_true, sampled_values=sv, remove_accidental_hits=remove)
            assert loss.shape.as_list() == [batch]
            grads = ml.gradients(ml.reduce_sum(loss), shards + [bv, xv])
            assert all(isinstance(gr, ml.IndexedSlices) for gr in grads[:3])
            fetch.append((loss, grads))
        with ml.Session() as sess:
            sess.run(ml.global_variables_initializer())
            got = sess.run(fetch)
    # The expected counts pass through float32, as TensorFlow's sampler outputs.
    tec32, sec32 = tec.astype(np.float32).astype(np.float64), sec.astype(np.float32)
    for (kind, remove), (loss, grads) in zip(cases, got):
        logits, targets = _np_sampled_logits(w, b, labels, x, sampled, tec32,
                                             sec32.astype(np.float64), remove)
        ref = _np_softmax_loss(logits, targets) if kind == "softmax" else \
            _np_nce_loss(logits, targets)
        np.testing.assert_allclose(loss, ref, rtol=1e-10)

        def f(s0, s1, b_, x_):
            return jnp.sum(_jnp_losses(_join([s0, s1], "mod"), b_, x_, labels, sampled,
                                       tec32, sec32.astype(np.float64), remove, kind))

        ref_g = jax.grad(f, argnums=(0, 1, 2, 3))(*_split(w, 2, "mod"), b, x)
        dense = [_dense(grads[0]), _dense(grads[1]), _dense(grads[2]), grads[3]]
        for a, r in zip(dense, ref_g):
            np.testing.assert_allclose(a, r, rtol=1e-9, atol=1e-12)


def test_sampled_softmax_approaches_full_softmax():
    rng = np.random.default_rng(3)
    num_classes, dim, batch, k, runs = 12, 3, 5, 10, 200
    w = rng.normal(size=(num_classes, dim))
    b = rng.normal(size=num_classes)
    x = rng.normal(size=(batch, dim))
    labels = rng.integers(0, num_classes, size=(batch, 1))
    logits = x @ w.T + b
    full = -(logits[np.arange(batch), labels[:, 0]] - np.log(np.exp(logits).sum(1)))
    g = ml.Graph()
    with g.as_default():
        ml.set_random_seed(5)
        # Every class sampled once, uniformly: all logits shift by the same log(q),
        # which the softmax ignores, so the loss is the full softmax loss exactly.
        uni = ml.nn.uniform_candidate_sampler(labels, 1, num_classes, True, num_classes)
        exact = ml.nn.sampled_softmax_loss(w, b, labels, x, num_classes, num_classes,
                                           sampled_values=uni)
        # The default sampler (log-uniform, unique), most classes sampled.
        xt = ml.constant(x)
        loss = ml.nn.sampled_softmax_loss(w, b, labels, xt, k, num_classes)
        gx, = ml.gradients(ml.reduce_sum(loss), [xt])
        with ml.Session() as sess:
            e, gxv = sess.run([exact, gx])
            ls = np.array([sess.run(loss) for _ in range(runs)])
    np.testing.assert_allclose(e, full, rtol=1e-5)
    assert np.all(np.isfinite(gxv))
    # Against a numpy Monte-Carlo of TensorFlow's pipeline (rejection sampler, expected
    # counts, corrected logits), within 5 standard errors ...
    p = _log_uniform_p(num_classes)
    inc, tries = _np_rejection_sampler(p, k, 4000, np.random.default_rng(1), draws=160)
    ref = []
    for included, t in zip(inc, tries):
        cand = np.nonzero(included)[0]
        q = p * k if t == k else -np.expm1(t * np.log1p(-p))
        lg, tg = _np_sampled_logits(w, b, labels, x, cand, q[labels], q[cand], True)
        ref.append(_np_softmax_loss(lg, tg))
    ref = np.array(ref)
    se = np.sqrt(ls.var(0) / runs + ref.var(0) / len(ref))
    assert np.all(np.abs(ls.mean(0) - ref.mean(0)) < 5 * se + 1e-6)
    # ... and near the full softmax loss (sampled softmax is biased low: loose).
    np.testing.assert_allclose(ls.mean(0), full, rtol=0.3)


def test_sampled_loss_errors():
    g = ml.Graph()
    with g.as_default():
        w, b, x = np.zeros((5, 2)), np.zeros(5), np.zeros((3, 2))
        with pytest.raises(ValueError, match="labels"):
            ml.nn.sampled_softmax_loss(w, b, np.zeros(3, np.int64), x, 2, 5)
        with pytest.raises(ValueError, match="labels"):
            ml.nn.nce_loss(w, b, np.zeros((3, 1)), x, 2, 5)
        with pytest.raises(ValueError, match="num_sampled"):
            ml.nn.log_uniform_candidate_sampler(np.zeros((3, 1), np.int64), 1, 6, True, 5)
        with pytest.raises(ValueError, match="true_classes"):
            ml.nn.uniform_candidate_sampler(np.zeros((3, 1)), 1, 2, True, 5)
        with pytest.raises(ml.errors.InvalidArgumentError, match="num_true"):
            ml.nn.uniform_candidate_sampler(np.zeros((3, 2), np.int64), 1, 2, True, 5)


# ---------------------------------------------------------------- samplers
def _log_uniform_p(r):
    k = np.arange(r)
    return (np.log(k + 2) - np.log(k + 1)) / np.log(r + 1)


def test_samplers_with_replacement_follow_their_distributions():
    r, k, runs = 20, 4000, 6
    g = ml.Graph()
    with g.as_default():
        ml.set_random_seed(7)
        tc = ml.constant(np.arange(r).reshape(r, 1), ml.int64)
        lu = ml.nn.log_uniform_candidate_sampler(tc, 1, k, False, r)
        un = ml.random.uniform_candidate_sampler(tc, 1, k, False, r)
        assert lu[0].shape.as_list() == [k] and lu[1].shape.as_list() == [r, 1]
        with ml.Session() as sess:
            draws = [sess.run([lu, un]) for _ in range(runs)]
    for which, p in ((0, _log_uniform_p(r)), (1, np.full(r, 1.0 / r))):
        samples = np.concatenate([d[which][0] for d in draws])
        assert samples.dtype == np.int64 and samples.min() >= 0 and samples.max() < r
        counts = np.bincount(samples, minlength=r)
        expected = p * len(samples)
        chi2 = np.sum((counts - expected) ** 2 / expected)
        assert chi2 < 60.0, chi2  # chi-square, 19 dof: P(chi2 > 60) < 1e-5
        _, tec, sec = draws[0][which]
        assert tec.dtype == np.float32 and sec.dtype == np.float32
        np.testing.assert_allclose(tec[:, 0], p * k, rtol=1e-5)
        np.testing.assert_allclose(sec, p[draws[0][which][0]] * k, rtol=1e-5)
    # Every run draws anew.
    assert not np.array_equal(draws[0][0][0], draws[1][0][0])


def _np_rejection_sampler(p, k, trials, rng, draws=96):
    """TensorFlow's unique sampling loop, vectorized over trials: draw with replacement,
    keep first occurrences until k are found. Returns (included [trials, R] bool,
    num_tries [trials])."""
    r = len(p)
    d = np.minimum(np.searchsorted(np.cumsum(p), rng.random((trials, draws)), side="right"),
                   r - 1)
    hot = d[:, :, None] == np.arange(r)
    first = hot & (np.cumsum(hot, axis=1) == 1)
    found = np.cumsum(first.any(-1), axis=1)
    assert np.all(found[:, -1] >= k)
    tries = np.argmax(found >= k, axis=1) + 1
    included = (first & (np.arange(draws)[None, :, None] < tries[:, None, None])).any(1)
    return included, tries


def test_unique_samplers_match_tf_rejection_loop():
    r, k, ops_per_run, runs = 12, 4, 4, 150
    p_of = {"log_uniform": _log_uniform_p(r), "uniform": np.full(r, 1.0 / r)}
    g = ml.Graph()
    with g.as_default():
        ml.set_random_seed(11)
        tc = ml.constant(np.arange(r).reshape(r, 1), ml.int64)
        ops = {"log_uniform": [ml.nn.log_uniform_candidate_sampler(tc, 1, k, True, r)
                               for _ in range(ops_per_run)],
               "uniform": [ml.nn.uniform_candidate_sampler(tc, 1, k, True, r)
                           for _ in range(ops_per_run)]}
        with ml.Session() as sess:
            out = [sess.run(ops) for _ in range(runs)]
    rng = np.random.default_rng(0)
    for name, p in p_of.items():
        results = [s for run in out for s in run[name]]
        n = len(results)
        included = np.zeros((n, r), bool)
        counts = np.zeros((n, r))
        for i, (cand, tec, sec) in enumerate(results):
            assert len(set(cand.tolist())) == k and cand.min() >= 0 and cand.max() < r
            included[i, cand] = True
            counts[i] = tec[:, 0]
            np.testing.assert_allclose(sec, tec[cand, 0])
            # One num_tries >= k explains every class's expected count.
            tries = k if np.allclose(tec[:, 0], p * k, rtol=1e-5) else \
                np.log1p(-tec[:, 0].astype(np.float64)) / np.log1p(-p)
            assert np.allclose(tries, np.round(np.mean(tries)), rtol=1e-3)
            assert np.mean(tries) >= k - 1e-6
        ref_inc, ref_tries = _np_rejection_sampler(p, k, 20000, rng)
        ref_counts = np.where(ref_tries[:, None] == k, p * k,
                              -np.expm1(ref_tries[:, None] * np.log1p(-p)))
        # Inclusion frequencies and mean expected counts, within 5 standard errors.
        for got, ref in ((included.astype(float), ref_inc.astype(float)), (counts, ref_counts)):
            se = np.sqrt(ref.var(0) / n + ref.var(0) / len(ref)) + 1e-9
            z = np.abs(got.mean(0) - ref.mean(0)) / se
            assert np.all(z < 5), (name, z)


def test_sampler_seeds_replay_in_fresh_sessions():
    def build():
        g = ml.Graph()
        with g.as_default():
            s = ml.nn.log_uniform_candidate_sampler(
                ml.constant([[1]], ml.int64), 1, 8, True, 1000, seed=4)
        return g, s

    def two(g, s):
        with ml.Session(graph=g) as sess:
            return sess.run(s), sess.run(s)

    a1, a2 = two(*build())
    b1, b2 = two(*build())
    for a, b in ((a1, b1), (a2, b2)):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a1[0], a2[0])
