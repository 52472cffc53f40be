"""Random ops (TF1 semantics): `random_normal`, `random_uniform`, `truncated_normal`,
`random_shuffle`, `categorical`.

Seeds follow TensorFlow's `get_seed(op_seed)`: a graph-level seed (`ml.set_random_seed`)
and an op seed pick the op's (seed, seed2) attrs. With both unset the op draws from the
session's own random base (different per session); with either set, a fresh session
replays the same sequence. Every `Session.run` draws new values (the key folds in the
run counter). Random ops are stateful: never pruned as common, never constant-folded.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.graph import get_default_graph
from mylib.core.op_registry import NotDifferentiable, OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops import constant_ops
from mylib.core.tensor_shape import TensorShape

__all__ = ["get_seed", "random_normal", "random_uniform", "truncated_normal", "normal",
           "uniform", "random_shuffle", "shuffle", "categorical", "multinomial"]

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2 ** 31 - 1


def get_seed(op_seed):
    """The (seed, seed2) pair for an op, as TensorFlow's `random_seed.get_seed`.

    Args:
      op_seed: the op's own seed, or None.
    Returns:
      `(seed, seed2)`; `(None, None)` when neither a graph seed nor `op_seed` is set.
    """
    g = get_default_graph()
    graph_seed = g.seed
    if graph_seed is not None:
        if op_seed is None:
            op_seed = g._next_op_seed()
        seeds = (int(graph_seed), int(op_seed))
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, int(op_seed))
    else:
        seeds = (None, None)
    if seeds == (0, 0):  # (0, 0) means "unseeded" to the kernel: avoid it, as TF does
        seeds = (0, _MAXINT32)
    return seeds


def _seed_attrs(seed):
    s1, s2 = get_seed(seed)
    return {"seed": 0 if s1 is None else s1, "seed2": 0 if s2 is None else s2}


def _static_shape_of(t):
    """Static `TensorShape` described by the 1-D shape tensor `t`, as far as known."""
    return constant_ops.constant_value_as_shape(t)


def _shape_input(shape):
    return convert_to_tensor(shape, dtype_hint=_dtypes.int32)


def _random_shape(shape, *_, dtype, **__):
    if shape.shape.rank != 1:
        raise errors.InvalidArgumentError(f"shape must be a vector, got shape {shape.shape}")
    n = shape.shape[0]
    return TensorSpec(TensorShape(None) if n is None else [None] * n, dtype)


def _dims(shape):
    return constant_ops._static_ints(shape, "a random op's shape")


# ---------------------------------------------------------------- normal
def _normal_lower(ctx, op, shape):
    dt = _dtypes.as_dtype(op.attrs["dtype"]).np
    return jax.random.normal(ctx.rng_key(op), _dims(shape), dt)


RandomStandardNormal = OpDef("RandomStandardNormal", lower=_normal_lower, stateful=True,
                             shape_fn=_random_shape)
NotDifferentiable("RandomStandardNormal")


def _finish(out, shape_t):
    out._shape = _static_shape_of(shape_t).merge_with(out.shape)
    return out


def _float_dtype(dtype):
    dt = _dtypes.as_dtype(dtype)
    if not dt.is_floating:
        raise ValueError(f"dtype must be a floating type. Received: dtype={dt.name}")
    return dt


def random_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    """Samples from a normal distribution.

    Args:
      shape: 1-D int list or tensor (known when the step is compiled, e.g. `ml.shape(x)`).
      mean, stddev: scalars or tensors broadcastable to `shape`.
      dtype: a floating dtype.
      seed: op seed; see `get_seed` and `ml.set_random_seed`.
    Returns:
      `Tensor` of `shape` and `dtype`.
    """
    dt = _float_dtype(dtype)
    s = _shape_input(shape)
    z = _finish(RandomStandardNormal(s, dtype=dt.name, name=name or "random_normal",
                                     **_seed_attrs(seed)), s)
    if not (isinstance(stddev, (int, float)) and stddev == 1):
        z = z * convert_to_tensor(stddev, dtype=dt) if hasattr(stddev, "op") else z * stddev
    if not (isinstance(mean, (int, float)) and mean == 0):
        z = z + mean
    return z


normal = random_normal


# ---------------------------------------------------------------- uniform
def _uniform_lower(ctx, op, shape):
    dt = _dtypes.as_dtype(op.attrs["dtype"]).np
    return jax.random.uniform(ctx.rng_key(op), _dims(shape), dt)


RandomUniform = OpDef("RandomUniform", lower=_uniform_lower, stateful=True,
                      shape_fn=_random_shape)
NotDifferentiable("RandomUniform")


def _uniform_int_lower(ctx, op, shape, minval, maxval):
    dt = _dtypes.as_dtype(op.attrs["dtype"]).np
    return jax.random.randint(ctx.rng_key(op), _dims(shape), minval, maxval, dt)


RandomUniformInt = OpDef("RandomUniformInt", lower=_uniform_int_lower, stateful=True,
                         shape_fn=_random_shape)
NotDifferentiable("RandomUniformInt")


def random_uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32, seed=None, name=None):
    """Samples uniformly from `[minval, maxval)`.

    Args:
      shape: 1-D int list or tensor.
      minval, maxval: bounds; `maxval` defaults to 1 for floats and is required for
        integer dtypes.
      dtype: float or int dtype.
    Returns:
      `Tensor` of `shape` and `dtype`.
    Raises:
      ValueError: for an integer dtype without `maxval`.
    """
    dt = _dtypes.as_dtype(dtype)
    s = _shape_input(shape)
    name = name or "random_uniform"
    if dt.is_integer:
        if maxval is None:
            raise ValueError("Must specify maxval for integer dtype "
                             f"{dt.name}. Received: maxval=None")
        lo = convert_to_tensor(minval, dtype=dt)
        hi = convert_to_tensor(maxval, dtype=dt)
        return _finish(RandomUniformInt(s, lo, hi, dtype=dt.name, name=name,
                                        **_seed_attrs(seed)), s)
    dt = _float_dtype(dt)
    u = _finish(RandomUniform(s, dtype=dt.name, name=name, **_seed_attrs(seed)), s)
    maxval = 1 if maxval is None else maxval
    if isinstance(minval, (int, float)) and isinstance(maxval, (int, float)):
        if (minval, maxval) == (0, 1):
            return u
        return u * float(maxval - minval) + float(minval)
    lo = convert_to_tensor(minval, dtype_hint=dt)
    hi = convert_to_tensor(maxval, dtype_hint=dt)
    return u * (hi - lo) + lo


uniform = random_uniform


# ---------------------------------------------------------------- truncated normal
def _truncated_lower(ctx, op, shape):
    dt = _dtypes.as_dtype(op.attrs["dtype"]).np
    return jax.random.truncated_normal(ctx.rng_key(op), -2.0, 2.0, _dims(shape), dt)


TruncatedNormal = OpDef("TruncatedNormal", lower=_truncated_lower, stateful=True,
                        shape_fn=_random_shape)
NotDifferentiable("TruncatedNormal")


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None,
                     name=None):
    """Samples from a normal distribution cut at 2 standard deviations (values further
    out are redrawn, as TensorFlow's), then scaled by `stddev` and shifted by `mean`.

    Returns:
      `Tensor` of `shape` and `dtype`; all values in `mean ± 2 * stddev`.
    """
    dt = _float_dtype(dtype)
    s = _shape_input(shape)
    z = _finish(TruncatedNormal(s, dtype=dt.name, name=name or "truncated_normal",
                                **_seed_attrs(seed)), s)
    if not (isinstance(stddev, (int, float)) and stddev == 1):
        z = z * stddev
    if not (isinstance(mean, (int, float)) and mean == 0):
        z = z + mean
    return z


# ---------------------------------------------------------------- shuffle, categorical
def _shuffle_lower(ctx, op, x):
    return jax.random.permutation(ctx.rng_key(op), x, axis=0)


RandomShuffle = OpDef("RandomShuffle", lower=_shuffle_lower, stateful=True,
                      shape_fn=lambda x, **_: TensorSpec(x.shape, x.dtype))
NotDifferentiable("RandomShuffle")


def random_shuffle(value, seed=None, name=None):
    """Shuffles `value` along its first axis."""
    return RandomShuffle(convert_to_tensor(value), name=name, **_seed_attrs(seed))


shuffle = random_shuffle


def _categorical_lower(ctx, op, logits):
    n = op.attrs["num_samples"]
    dt = _dtypes.as_dtype(op.attrs["output_dtype"]).np
    out = jax.random.categorical(ctx.rng_key(op), logits[:, None, :], axis=-1,
                                 shape=(logits.shape[0], n))
    return out.astype(dt)


Multinomial = OpDef("Multinomial", lower=_categorical_lower, stateful=True)
NotDifferentiable("Multinomial")


@Multinomial.shape_fn
def _categorical_shape(logits, *, num_samples, output_dtype, **_):
    if logits.shape.rank not in (None, 2):
        raise errors.InvalidArgumentError(f"logits must be [batch, classes], got {logits.shape}")
    b = None if logits.shape.rank is None else logits.shape[0]
    return TensorSpec([b, num_samples], output_dtype)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """Draws `num_samples` class indices per row from unnormalized log-probabilities.

    Args:
      logits: `Tensor` [batch, num_classes].
    Returns:
      int64 (or `dtype`) `Tensor` [batch, num_samples].
    """
    dt = _dtypes.as_dtype(dtype or _dtypes.int64)
    return Multinomial(convert_to_tensor(logits), num_samples=int(num_samples),
                       output_dtype=dt.name, name=name, **_seed_attrs(seed))


multinomial = categorical


def _orthogonalize_kernel(a, *, shape, gain):
    q, r = jnp.linalg.qr(a)
    q = q * jnp.sign(jnp.diagonal(r))  # makes the decomposition unique (uniform over O(n))
    rows = int(np.prod(shape[:-1]))
    if rows < shape[-1]:
        q = q.T
    return (gain * q.reshape(shape)).astype(a.dtype)


# The op that turns a normal matrix into an orthogonal one: a graph op, so the values
# are drawn when the variable's initializer runs (seeded like the other initializers).
Orthogonalize = OpDef("Orthogonalize", kernel=_orthogonalize_kernel)
NotDifferentiable("Orthogonalize")




def orthogonalize(a, shape, gain=1.0, name=None):
    """The orthogonal factor of the QR decomposition of matrix `a` (signs fixed so the
    result is uniform over the orthogonal group when `a` is normal), transposed when
    the target has fewer rows than columns, reshaped to `shape` and scaled by `gain`
    (Saxe et al. 2014; Keras's `Orthogonal` initializer).

    Args:
      a: `Tensor` [max(rows, cols), min(rows, cols)], floating; rows = prod(shape[:-1]).
      shape: the output shape (tuple of ints), cols = shape[-1].
      gain: float multiplier.
    Returns:
      `Tensor` of `shape`, dtype of `a`.
    """
    return Orthogonalize(a, shape=tuple(shape), gain=float(gain), name=name)
