"""`keras.random` (Keras 3): random draws and `SeedGenerator`.

Outside graph building a draw is computed at once with `jax.random` and returns a JAX
array. With a tensor in its shape (``ops.shape(x)[0]``), or while a graph is being
built (inside a layer's `call` or a custom `train_step`, i.e. under
``graph.as_default()``), it adds mylib's random ops instead, which draw fresh values
at every run of the step.

Seeds: an int seed gives the same values on every call (as Keras 3); ``None`` draws
fresh values; a `SeedGenerator` advances its state at each call.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.graph import Tensor
from mylib.core.ops import random_ops
from mylib.keras.ops._dispatch import any_symbolic

__all__ = ["SeedGenerator", "normal", "uniform", "randint", "truncated_normal",
           "dropout", "shuffle", "categorical", "gamma", "binomial", "beta"]


class SeedGenerator:
    """A stream of seeds (Keras 3's `keras.random.SeedGenerator`): each draw that takes
    it uses, and advances, its state.

    Args:
      seed: the initial seed (an int; None picks one from numpy's global generator,
        which `keras.utils.set_random_seed` seeds).
    """

    def __init__(self, seed=None, name=None, **kwargs):
        if seed is None:
            seed = int(np.random.randint(0, 2 ** 31 - 1))
        if not isinstance(seed, (int, np.integer)):
            raise ValueError(f"`seed` must be an int or None. Received: seed={seed!r}")
        self.name = name or "seed_generator"
        self._initial = int(seed)
        self._count = 0

    def next(self, ordered=True):
        """A fresh int seed (the next in this generator's stream)."""
        s = int(np.random.SeedSequence([self._initial, self._count]).generate_state(1)[0])
        self._count += 1
        return s % (2 ** 31 - 1)

    @property
    def state(self):
        return np.asarray([self._initial, self._count], dtype=np.int64)

    def get_config(self):
        return {"seed": self._initial, "name": self.name}


def _symbolic(shape):
    """Whether the draw must be a graph op: a tensor in `shape`, or a graph being built
    (inside a layer's call or a train step, where a constant would repeat every step)."""
    from mylib.core.graph import _default_stack

    return any_symbolic(shape) or isinstance(shape, Tensor) or bool(_default_stack())


def _int_seed(seed):
    if isinstance(seed, SeedGenerator):
        return seed.next()
    if seed is None:
        return None
    if isinstance(seed, (int, np.integer)):
        return int(seed)
    raise ValueError(f"`seed` must be an int, a SeedGenerator or None. Received: "
                     f"seed={seed!r}")


def _key(seed):
    s = _int_seed(seed)
    if s is None:
        s = int(np.random.randint(0, 2 ** 31 - 1))
    return jax.random.key(s)


def _dt(dtype, default="float32"):
    if dtype is None:
        return default
    return dtype.name if isinstance(dtype, _dtypes.DType) else str(np.dtype(dtype))


def _shape_list(shape):
    return list(shape) if isinstance(shape, (list, tuple)) else shape


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal draws of `shape`."""
    if _symbolic(shape):
        return random_ops.random_normal(_shape_list(shape), mean, stddev, dtype=_dt(dtype),
                                        seed=_int_seed(seed))
    return mean + stddev * jax.random.normal(_key(seed), tuple(shape), _dt(dtype))


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Uniform draws in ``[minval, maxval)``."""
    if _symbolic(shape):
        return random_ops.random_uniform(_shape_list(shape), minval, maxval,
                                         dtype=_dt(dtype), seed=_int_seed(seed))
    return jax.random.uniform(_key(seed), tuple(shape), _dt(dtype), minval, maxval)


def randint(shape, minval, maxval, dtype="int32", seed=None):
    """Integers in ``[minval, maxval)``."""
    if _symbolic(shape):
        return random_ops.random_uniform(_shape_list(shape), minval, maxval,
                                         dtype=_dt(dtype, "int32"), seed=_int_seed(seed))
    return jax.random.randint(_key(seed), tuple(shape), minval, maxval, _dt(dtype, "int32"))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal draws re-drawn beyond two standard deviations."""
    if _symbolic(shape):
        return random_ops.truncated_normal(_shape_list(shape), mean, stddev,
                                           dtype=_dt(dtype), seed=_int_seed(seed))
    return mean + stddev * jax.random.truncated_normal(_key(seed), -2.0, 2.0, tuple(shape),
                                                       _dt(dtype))


def dropout(inputs, rate, noise_shape=None, seed=None):
    """`inputs` with each entry zeroed with probability `rate` and the rest scaled by
    ``1 / (1 - rate)``."""
    if any_symbolic(inputs) or any_symbolic(noise_shape) or _symbolic(()):
        from mylib.core.ops.nn_ops import dropout as _dropout

        return _dropout(inputs, rate=rate, noise_shape=noise_shape, seed=_int_seed(seed))
    x = jnp.asarray(inputs)
    shape = x.shape if noise_shape is None else tuple(
        x.shape[i] if d is None else d for i, d in enumerate(noise_shape))
    keep = jax.random.bernoulli(_key(seed), 1.0 - rate, shape)
    return jnp.where(keep, x / (1.0 - rate), 0).astype(x.dtype)


def shuffle(x, axis=0, seed=None):
    """`x` permuted along `axis`."""
    if any_symbolic(x):
        if axis != 0:
            raise ValueError("shuffle: only axis=0 on symbolic tensors. "
                             f"Received: axis={axis}")
        return random_ops.random_shuffle(x, seed=_int_seed(seed))
    return jax.random.permutation(_key(seed), jnp.asarray(x), axis=axis, independent=False)


def categorical(logits, num_samples, dtype="int32", seed=None):
    """Class ids drawn from the rows of `logits` ``[batch, classes]``:
    ``[batch, num_samples]``."""
    if any_symbolic(logits):
        from mylib.core.ops.math_ops import cast

        return cast(random_ops.categorical(logits, num_samples, seed=_int_seed(seed)),
                    _dt(dtype, "int32"))
    lg = jnp.asarray(logits)
    out = jax.random.categorical(_key(seed), lg[:, None, :], axis=-1,
                                 shape=(lg.shape[0], num_samples))
    return out.astype(_dt(dtype, "int32"))


def gamma(shape, alpha, dtype=None, seed=None):
    return jax.random.gamma(_key(seed), alpha, tuple(shape), _dt(dtype))


def binomial(shape, counts, probabilities, dtype=None, seed=None):
    return jax.random.binomial(_key(seed), counts, probabilities, tuple(shape),
                               _dt(dtype))


def beta(shape, alpha, beta, dtype=None, seed=None):
    return jax.random.beta(_key(seed), alpha, beta, tuple(shape), _dt(dtype))
