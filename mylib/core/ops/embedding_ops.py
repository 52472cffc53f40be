"""Embeddings, candidate sampling and sampled losses (TensorFlow's `tf.nn`).

- `embedding_lookup`: rows of one table, or of a table sharded by rows over several
  tensors or variables ("mod" or "div" partitioning, as TensorFlow's).
- `log_uniform_candidate_sampler`, `uniform_candidate_sampler`: random candidate classes
  and their expected counts, as TensorFlow's candidate-sampler ops.
- `sampled_softmax_loss` (Jean et al., 2015) and `nce_loss` (Gutmann & Hyvärinen, 2010;
  Mikolov et al., 2013): training losses over the true classes and a sample of the rest.

Only the samplers are new primitives (random, not differentiable). Everything else is
built from existing graph ops, so its gradients are theirs: a lookup into a `Variable`
reads through `Variable.sparse_read` (a `ResourceGather` on the variable's handle), whose
gradient is an `IndexedSlices` naming only the rows that were looked up.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.graph import Tensor, name_scope
from mylib.core.op_registry import NotDifferentiable, OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops import (array_ops, clip_ops, constant_ops, indexing_ops, math_ops, nn_ops,
                            random_ops, reduction_ops)
from mylib.core.tensor_shape import TensorShape
from mylib.core.variables import Variable

__all__ = ["embedding_lookup", "log_uniform_candidate_sampler", "uniform_candidate_sampler",
           "sampled_softmax_loss", "nce_loss"]

# TensorFlow masks accidental hits by adding -FLT_MAX (float32's), whatever the dtype.
_ACCIDENTAL_HIT_LOGIT = -float(np.finfo(np.float32).max)


# ---------------------------------------------------------------- embedding_lookup
def _is_sharded_variable(params):
    if isinstance(params, (Tensor, Variable)) or params is None:
        return False
    vs = getattr(params, "variables", None)
    return isinstance(vs, (list, tuple)) and bool(vs) and all(
        isinstance(v, Variable) for v in vs)


def _as_shards(params, partition_strategy):
    """The list of shards and the partition strategy that applies to them."""
    if isinstance(params, (list, tuple)):
        shards = list(params)
    elif _is_sharded_variable(params):
        # A sharded variable (TF's ShardedVariable): its shards are always "div".
        shards, partition_strategy = list(params.variables), "div"
    elif params is None:
        shards = []
    else:
        shards = [params]
    if not shards:
        raise ValueError("`params` must be a Tensor, a Variable, or a non-empty list of "
                         f"them. Received: params={params!r}")
    if partition_strategy not in ("mod", "div"):
        raise ValueError("`partition_strategy` must be 'mod' or 'div'. "
                         f"Received: partition_strategy={partition_strategy!r}")
    shards = [s if isinstance(s, Variable) or hasattr(s, "sparse_read")
              else convert_to_tensor(s) for s in shards]
    dts = {s.dtype for s in shards}
    if len(dts) > 1:
        raise ValueError("All shards of `params` must have one dtype. Received: "
                         f"{sorted(d.name for d in dts)}")
    return shards, partition_strategy


def _gather_rows(shard, ids):
    # A variable shard is read where it lives, and only the rows named leave it; its
    # gradient is an IndexedSlices of those rows (ResourceGather's gradient).
    if isinstance(shard, Variable) or hasattr(shard, "sparse_read"):
        return shard.sparse_read(ids)
    return indexing_ops.gather(shard, ids)


def _shard_shape(shard):
    s = shard.shape
    return s if isinstance(s, TensorShape) else TensorShape(s)


def _row_rank(shards):
    for s in shards:
        r = _shard_shape(s).rank
        if r is not None:
            if r == 0:
                raise ValueError("`params` shards must have rank >= 1 (rows along axis 0). "
                                 f"Received a shard of shape {_shard_shape(s)}")
            return r
    raise ValueError("`params` must have a known rank to be partitioned or clipped "
                     "(max_norm).")


def _div_layout(shards):
    """(rows per shard, number of shards holding one row more) for "div", checking that
    the shards are laid out as TensorFlow's rule expects."""
    sizes = [_shard_shape(s)[0] if _shard_shape(s).rank else None for s in shards]
    if any(d is None for d in sizes):
        raise ValueError("partition_strategy='div' needs every shard's first dimension to "
                         f"be known when the graph is built. Received: {sizes}")
    n, total = len(sizes), sum(sizes)
    per, extras = divmod(total, n)
    expected = [per + 1 if p < extras else per for p in range(n)]
    if sizes != expected:
        raise ValueError(
            f"partition_strategy='div' over {n} shards of {total} rows in all expects "
            f"shard sizes {expected} (the first {extras} one row larger). Received: {sizes}")
    return per, extras


def _partition(flat_ids, shards, partition_strategy):
    """(shard index, row within the shard) of each id. Out-of-range ids land out of
    range of a shard, where the gather's own out-of-range rule applies."""
    n = len(shards)
    if partition_strategy == "mod":
        return math_ops.floormod(flat_ids, n), math_ops.floordiv(flat_ids, n)
    per, extras = _div_layout(shards)
    # TensorFlow's rule: the first `extras` shards hold per + 1 rows, the others per.
    assign = math_ops.floordiv(flat_ids, per + 1)
    if per > 0:
        assign = math_ops.maximum(assign, math_ops.floordiv(flat_ids - extras, per))
    assign = math_ops.minimum(math_ops.maximum(assign, 0), n - 1)
    local = flat_ids - (assign * per + math_ops.minimum(assign, extras))
    return assign, local


def _lookup_flat(shards, flat_ids, partition_strategy):
    """Rows for the 1-D `flat_ids`: [n] + row shape."""
    if len(shards) == 1:
        return _gather_rows(shards[0], flat_ids)
    rank = _row_rank(shards)
    assign, local = _partition(flat_ids, shards, partition_strategy)
    out = None
    for p, shard in enumerate(shards):
        member = math_ops.equal(assign, p)
        # Every shard gathers one row per id (shapes are static under XLA). Ids of other
        # shards read a row this shard already serves (row 0 if it serves none), so its
        # gradient names only looked-up rows; their values are discarded below.
        fill = math_ops.maximum(
            reduction_ops.reduce_max(array_ops.where(member, local, constant_ops.constant(
                -1, dtype=local.dtype))), 0)
        rows = _gather_rows(shard, array_ops.where(member, local, fill))
        if out is None:
            out = rows
            continue
        mask = member if rank == 1 else array_ops.reshape(member, [-1] + [1] * (rank - 1))
        out = array_ops.where(mask, rows, out)
    return out


def _clip_rows(rows, max_norm, rank):
    # Each row (everything after axis 0) is scaled to an L2 norm of at most max_norm.
    return clip_ops.clip_by_norm(rows, max_norm, axes=list(range(1, rank)))


def embedding_lookup(params, ids, partition_strategy="mod", name=None, max_norm=None):
    """Looks up rows `ids` of an embedding table (TensorFlow 1's `tf.nn.embedding_lookup`).

    The table may be split by rows into shards. With `n` shards, "mod" puts id `i` in
    shard `i % n` at row `i // n`; "div" gives each shard a contiguous range of ids,
    the first `total % n` shards holding one row more than the others (`total` is the
    sum of the shards' first dimensions). Every shard gathers one row per id (XLA needs
    static shapes) and the results are merged in the order of `ids`.

    Args:
      params: the table: a `Tensor` or `Variable` [rows, ...]; a list or tuple of them
        (shards of one table along axis 0, all of one dtype); or a sharded variable (an
        object whose `variables` attribute is a list of `Variable`s), always looked up
        with "div", as TensorFlow's `ShardedVariable`.
      ids: int32/int64 `Tensor` of any shape; ids in [0, total rows). An id outside
        that range never yields a real row (``-1`` is not the last one): ids known
        when the step is built (constants) make running it raise
        `InvalidArgumentError` naming the op, the bad id and the range, as
        TensorFlow on CPU; ids known only at run time (fed or computed) give NaN
        rows inside the compiled step (the most negative value for a signed integer
        table). With several shards the id and range named are those within a shard.
      partition_strategy: "mod" (default) or "div"; only used with several shards.
      name: optional name scope.
      max_norm: optional float; each looked-up row whose L2 norm exceeds it is scaled
        down to norm `max_norm`.
    Returns:
      `Tensor` `ids.shape + params.shape[1:]` of the table's dtype. Its gradient with
      respect to a `Variable` shard is an `IndexedSlices` whose indices are rows of that
      shard that were looked up (a shard that serves no id names its row 0, with zero
      values); for a `Tensor` shard, that of `gather`. Repeated ids give repeated
      entries, which sum.
    Raises:
      ValueError: if `params` is empty, shards differ in dtype, `partition_strategy` is
        not "mod" or "div", `ids` is not an integer tensor, or ("div") the shard sizes
        are not known or not laid out as above.
    """
    shards, strategy = _as_shards(params, partition_strategy)
    with name_scope(name, "embedding_lookup"):
        ids_t = convert_to_tensor(ids, dtype_hint=_dtypes.int32)
        if not ids_t.dtype.is_integer:
            raise ValueError("`ids` must be an int32 or int64 tensor. Received: ids of "
                             f"dtype {ids_t.dtype.name}")
        flat = ids_t if ids_t.shape.rank == 1 else array_ops.reshape(ids_t, [-1])
        rows = _lookup_flat(shards, flat, strategy)
        if max_norm is not None:
            rows = _clip_rows(rows, max_norm, _row_rank(shards))
        if flat is ids_t:
            return rows
        tail = TensorShape(None)
        for s in shards:
            sh = _shard_shape(s)
            if sh.rank is not None:
                tail = tail.merge_with(TensorShape(sh.as_list()[1:]))
        if ids_t.shape.is_fully_defined() and tail.is_fully_defined():
            # Static shapes: a constant target shape, which any step partition can
            # compile (a shape computed elsewhere would arrive as a run-time value).
            return array_ops.reshape(rows, ids_t.shape.as_list() + tail.as_list())
        out = array_ops.reshape(
            rows, array_ops.concat([array_ops.shape(ids_t), array_ops.shape(rows)[1:]], 0))
        if ids_t.shape.rank is not None and tail.rank is not None:
            out._shape = ids_t.shape.concatenate(tail).merge_with(out.shape)
        return out


# ---------------------------------------------------------------- candidate samplers
def _log_prob(classes, kind, range_max, dtype=jnp.float64):
    """Log-probability of each class under the sampler's distribution."""
    if kind == "UniformCandidateSampler":
        return jnp.full(classes.shape, -np.log(range_max), dtype)
    k = classes.astype(dtype)
    # P(k) = (log(k + 2) - log(k + 1)) / log(range_max + 1)
    return jnp.log(jnp.log1p(1.0 / (k + 1.0))) - dtype(np.log(np.log(range_max + 1.0)))


def _expected_count(p, num_sampled, num_tries):
    # TensorFlow's ExpectedCountHelper: p * num_sampled when no draw was rejected, else
    # the probability that num_tries draws hit the class at least once.
    return jnp.where(num_tries == num_sampled, p * num_sampled,
                     -jnp.expm1(num_tries * jnp.log1p(-p)))


def _sample_with_replacement(key, kind, num_sampled, range_max):
    if kind == "UniformCandidateSampler":
        return jax.random.randint(key, (num_sampled,), 0, range_max, jnp.int64)
    # Inverse CDF of the log-uniform law, as TensorFlow's LogUniformSampler.
    u = jax.random.uniform(key, (num_sampled,), jnp.float64)
    v = jnp.floor(jnp.exp(u * np.log(range_max + 1.0))).astype(jnp.int64) - 1
    return jnp.mod(v, range_max)


def _sample_unique(key, kind, num_sampled, range_max):
    """`num_sampled` distinct classes in the order TensorFlow's rejection loop (draw with
    replacement, keep first occurrences) would produce them, and the number of draws
    that loop would have taken.

    The sequence of first occurrences is a draw without replacement, proportional to
    the probabilities: the top `num_sampled` of log-probability + Gumbel noise. Given
    it, the draws spent before the (j+1)-th new class are geometric in the mass q_j of
    the first j classes (each draw repeats one with probability q_j), independently,
    so num_tries = num_sampled + sum_j Geometric failures. This reproduces the joint
    law of (candidates, num_tries) of the sequential loop exactly, without a loop."""
    k_perm, k_tries = jax.random.split(key)
    logits = _log_prob(jnp.arange(range_max), kind, range_max, jnp.float32)
    scores = logits + jax.random.gumbel(k_perm, (range_max,), jnp.float32)
    _, picked = lax.top_k(scores, num_sampled)
    picked = picked.astype(jnp.int64)
    if num_sampled == 1:
        return picked, jnp.float64(1.0)
    p = jnp.exp(_log_prob(picked, kind, range_max))
    unseen = jnp.maximum(1.0 - jnp.cumsum(p)[:-1], 1e-300)  # mass still new, per step
    u = jax.random.uniform(k_tries, (num_sampled - 1,), jnp.float64,
                           minval=np.finfo(np.float64).tiny, maxval=1.0)
    fails = jnp.floor(jnp.log(u) / jnp.log1p(-unseen))
    return picked, num_sampled + jnp.sum(fails)


def _sampler_lower(ctx, op, true_classes):
    a = op.attrs
    k, r = a["num_sampled"], a["range_max"]
    key = ctx.rng_key(op)
    if a["unique"]:
        sampled, num_tries = _sample_unique(key, op.type, k, r)
    else:
        sampled, num_tries = _sample_with_replacement(key, op.type, k, r), jnp.float64(k)
    p_true = jnp.exp(_log_prob(true_classes, op.type, r))
    p_sampled = jnp.exp(_log_prob(sampled, op.type, r))
    return (sampled,
            _expected_count(p_true, k, num_tries).astype(jnp.float32),
            _expected_count(p_sampled, k, num_tries).astype(jnp.float32))


def _sampler_shape(true_classes, *, num_true, num_sampled, unique, range_max, seed=0,
                   seed2=0):
    s = true_classes.shape
    if s.rank not in (None, 2) or (s.rank == 2 and s[1] not in (None, num_true)):
        raise errors.InvalidArgumentError(
            f"true_classes must be [batch_size, num_true={num_true}], got shape {s}")
    batch = None if s.rank is None else s[0]
    return [TensorSpec([num_sampled], _dtypes.int64),
            TensorSpec([batch, num_true], _dtypes.float32),
            TensorSpec([num_sampled], _dtypes.float32)]


LogUniformCandidateSampler = OpDef("LogUniformCandidateSampler", lower=_sampler_lower,
                                   stateful=True, shape_fn=_sampler_shape)
UniformCandidateSampler = OpDef("UniformCandidateSampler", lower=_sampler_lower,
                                stateful=True, shape_fn=_sampler_shape)
NotDifferentiable("LogUniformCandidateSampler")
NotDifferentiable("UniformCandidateSampler")


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"`{what}` must be a positive int. Received: {what}={value!r}")
    return int(value)


def _candidate_sampler(opdef, true_classes, num_true, num_sampled, unique, range_max, seed,
                       name):
    num_true = _positive_int(num_true, "num_true")
    num_sampled = _positive_int(num_sampled, "num_sampled")
    range_max = _positive_int(range_max, "range_max")
    if unique and num_sampled > range_max:
        raise ValueError("With unique=True, `num_sampled` must be <= `range_max`. "
                         f"Received: num_sampled={num_sampled}, range_max={range_max}")
    tc = convert_to_tensor(true_classes, dtype_hint=_dtypes.int64)
    if not tc.dtype.is_integer:
        raise ValueError("`true_classes` must be an integer tensor. Received: dtype "
                         f"{tc.dtype.name}")
    if tc.dtype != _dtypes.int64:
        tc = math_ops.cast(tc, _dtypes.int64)
    s1, s2 = random_ops.get_seed(seed)
    return opdef(tc, num_true=num_true, num_sampled=num_sampled, unique=bool(unique),
                 range_max=range_max, seed=0 if s1 is None else s1,
                 seed2=0 if s2 is None else s2, name=name)


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                  seed=None, name=None):
    """Samples classes from the log-uniform (Zipfian) distribution
    `P(k) = (log(k + 2) - log(k + 1)) / log(range_max + 1)` over [0, range_max), as
    TensorFlow's `tf.random.log_uniform_candidate_sampler`: suited to classes sorted by
    decreasing frequency (word ids by rank).

    Args:
      true_classes: int `Tensor` [batch_size, num_true] (cast to int64): the target
        classes, whose expected counts are returned.
      num_true: int, the number of target classes per example.
      num_sampled: int, the number of classes to sample.
      unique: bool; if True the `num_sampled` classes are distinct (as if drawn with
        replacement, skipping classes already drawn), else drawn independently.
      range_max: int, the number of classes: candidates are in [0, range_max).
      seed: op seed, combined with `ml.set_random_seed`'s graph seed as for every random
        op: each `Session.run` draws new candidates; a seed makes the runs reproducible.
      name: optional op name.
    Returns:
      `(sampled_candidates, true_expected_count, sampled_expected_count)`: int64
      [num_sampled], float32 [batch_size, num_true], float32 [num_sampled]. The expected
      count of a class estimates how often the sampler picks it. With unique=False it
      is `P(class) * num_sampled`. With unique=True it is TensorFlow's approximation
      `1 - (1 - P(class)) ** num_tries`, where num_tries is the number of draws with
      replacement this run took to find `num_sampled` distinct classes (it varies from
      run to run; `P(class) * num_sampled` when no draw repeated). The op has no
      gradient.
    Raises:
      ValueError: if a count is not a positive int, `unique` and
        `num_sampled > range_max`, or `true_classes` is not an integer tensor.
      InvalidArgumentError: if `true_classes` is not [batch_size, num_true].
    """
    return _candidate_sampler(LogUniformCandidateSampler, true_classes, num_true,
                              num_sampled, unique, range_max, seed, name)


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                              seed=None, name=None):
    """Samples classes uniformly from [0, range_max) (`P(k) = 1 / range_max`), as
    TensorFlow's `tf.random.uniform_candidate_sampler`.

    Args, Returns, Raises: as `log_uniform_candidate_sampler`, with this distribution:
    the expected count of every class is `num_sampled / range_max` when unique=False,
    and `1 - (1 - 1 / range_max) ** num_tries` when unique=True.
    """
    return _candidate_sampler(UniformCandidateSampler, true_classes, num_true, num_sampled,
                              unique, range_max, seed, name)


# ---------------------------------------------------------------- sampled losses
def _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                            num_true, sampled_values, subtract_log_q, remove_accidental_hits,
                            partition_strategy, seed):
    """Logits [batch, num_true + num_sampled] of the true then the sampled classes, and
    their target probabilities (1 / num_true for the true classes, 0 for the sampled)."""
    num_true = _positive_int(num_true, "num_true")
    x = convert_to_tensor(inputs)
    lab = convert_to_tensor(labels, dtype_hint=_dtypes.int64)
    if not lab.dtype.is_integer:
        raise ValueError(f"`labels` must be an integer tensor. Received: dtype {lab.dtype.name}")
    if lab.dtype != _dtypes.int64:
        lab = math_ops.cast(lab, _dtypes.int64)
    if lab.shape.rank not in (None, 2) or (lab.shape.rank == 2 and
                                           lab.shape[1] not in (None, num_true)):
        raise ValueError(f"`labels` must be [batch_size, num_true={num_true}]. Received: "
                         f"shape {lab.shape} (reshape class ids to [-1, {num_true}])")
    if x.shape.rank not in (None, 2):
        raise ValueError(f"`inputs` must be [batch_size, dim]. Received: shape {x.shape}")
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(
            lab, num_true, num_sampled, True, num_classes, seed=seed)
    if len(sampled_values) != 3:
        raise ValueError("`sampled_values` must be (sampled_candidates, true_expected_count, "
                         f"sampled_expected_count). Received {len(sampled_values)} values")
    sampled, true_ec, sampled_ec = (array_ops.stop_gradient(convert_to_tensor(v))
                                    for v in sampled_values)
    if sampled.dtype != _dtypes.int64:
        sampled = math_ops.cast(sampled, _dtypes.int64)

    def lookup(table, ids):
        v = embedding_lookup(table, ids, partition_strategy=partition_strategy)
        return v if v.dtype == x.dtype else math_ops.cast(v, x.dtype)

    true_w = lookup(weights, lab)            # [batch, num_true, dim]
    sampled_w = lookup(weights, sampled)     # [num_sampled, dim]
    true_b = lookup(biases, lab)             # [batch, num_true]
    sampled_b = lookup(biases, sampled)      # [num_sampled]
    true_logits = reduction_ops.reduce_sum(array_ops.expand_dims(x, 1) * true_w, 2) + true_b
    sampled_logits = math_ops.matmul(x, sampled_w, transpose_b=True) + sampled_b
    if remove_accidental_hits:
        # A sampled class equal to one of the example's true classes is not a negative.
        hits = reduction_ops.reduce_any(math_ops.equal(array_ops.expand_dims(lab, 2),
                                                  array_ops.reshape(sampled, [1, 1, -1])), 1)
        big = constant_ops.constant(_ACCIDENTAL_HIT_LOGIT, dtype=x.dtype)
        sampled_logits = sampled_logits + array_ops.where(
            hits, big, constant_ops.zeros_like(sampled_logits))
    if subtract_log_q:
        # Correct for the sampling: logit - log(expected count) (Jean et al., 2015).
        true_logits = true_logits - math_ops.log(math_ops.cast(true_ec, x.dtype))
        sampled_logits = sampled_logits - math_ops.log(math_ops.cast(sampled_ec, x.dtype))
    logits = array_ops.concat([true_logits, sampled_logits], 1)
    targets = array_ops.concat([constant_ops.ones_like(true_logits) / float(num_true),
                                constant_ops.zeros_like(sampled_logits)], 1)
    return logits, array_ops.stop_gradient(targets)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
                         sampled_values=None, remove_accidental_hits=True,
                         partition_strategy="mod", name="sampled_softmax_loss", seed=None):
    """Sampled softmax loss (Jean et al., 2015, "On Using Very Large Target Vocabulary
    for Neural Machine Translation"), as TensorFlow's `tf.nn.sampled_softmax_loss`.

    A softmax cross-entropy over the true classes and `num_sampled` sampled classes
    only, each logit `inputs . w_c + b_c` corrected by subtracting `log(expected count
    of c)`: a fast training estimate of the full softmax loss over `num_classes`
    classes (evaluate with the full softmax). With `num_true > 1` each true class has
    target probability `1 / num_true`.

    Args:
      weights: the output embedding table [num_classes, dim]: a `Tensor` or `Variable`,
        a list of shards along axis 0, or a sharded variable, read with
        `embedding_lookup` (so its gradient is an `IndexedSlices` of the rows used).
      biases: [num_classes] biases: a `Tensor`, `Variable` or shards, likewise.
      labels: int `Tensor` [batch_size, num_true] of target classes (cast to int64).
      inputs: float `Tensor` [batch_size, dim], the network's output activations.
      num_sampled: int, classes sampled per batch (shared by all its examples).
      num_classes: int, the number of classes.
      num_true: int, target classes per example.
      sampled_values: optional `(sampled_candidates, true_expected_count,
        sampled_expected_count)` from a candidate sampler; default
        `log_uniform_candidate_sampler(labels, num_true, num_sampled, unique=True,
        range_max=num_classes, seed=seed)`. No gradient flows into them.
      remove_accidental_hits: if True (default), a sampled class that is one of the
        example's true classes gets -FLT_MAX added to its logit for that example.
      partition_strategy: "mod" or "div", for sharded `weights` and `biases`.
      name: name scope.
      seed: op seed of the default sampler.
    Returns:
      `Tensor` [batch_size] of per-example losses, in `inputs`' dtype.
    Raises:
      ValueError: if `labels` is not an integer [batch_size, num_true] tensor, `inputs`
        is not 2-D, `sampled_values` does not hold three values, or as
        `embedding_lookup` and the samplers raise.
    """
    with name_scope(name, "sampled_softmax_loss"):
        logits, targets = _compute_sampled_logits(
            weights, biases, labels, inputs, num_sampled, num_classes, num_true,
            sampled_values, True, remove_accidental_hits, partition_strategy, seed)
        return nn_ops.softmax_cross_entropy_with_logits(labels=targets, logits=logits)


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, partition_strategy="mod",
             name="nce_loss", seed=None):
    """Noise-contrastive estimation loss (Gutmann & Hyvärinen, 2010; for word embeddings,
    Mikolov et al., 2013), as TensorFlow's `tf.nn.nce_loss`.

    A logistic regression telling the true classes (target `1 / num_true`) from
    `num_sampled` noise classes (target 0), each logit `inputs . w_c + b_c - log(expected
    count of c)`; the sigmoid cross-entropies of an example's `num_true + num_sampled`
    logits are summed.

    Args: as `sampled_softmax_loss`, except that `remove_accidental_hits` defaults to
      False, as TensorFlow's.
    Returns:
      `Tensor` [batch_size] of per-example losses, in `inputs`' dtype.
    Raises:
      ValueError: as `sampled_softmax_loss`.
    """
    with name_scope(name, "nce_loss"):
        logits, targets = _compute_sampled_logits(
            weights, biases, labels, inputs, num_sampled, num_classes, num_true,
            sampled_values, True, remove_accidental_hits, partition_strategy, seed)
        losses = nn_ops.sigmoid_cross_entropy_with_logits(labels=targets, logits=logits)
        return reduction_ops.reduce_sum(losses, 1)
