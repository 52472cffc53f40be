"""Numeric preprocessing layers of Keras 3: `Rescaling`, `Normalization` (with
`adapt`) and `CategoryEncoding`. They are graph ops, so they run inside a model (and
in XLA) as well as on arrays (eagerly) and in `Dataset.map`.

The lookup, hashing and text layers, which work on the host, are in
`mylib.layers.lookup`.
"""

from __future__ import annotations

import itertools

import numpy as np

from mylib.core.ops import array_ops, cast_ops, constant_ops, indexing_ops, math_ops, \
    reduction_ops
from mylib.layers.base import Layer, flatten

_EPSILON = 1e-7  # Keras's backend.epsilon()


class Rescaling(Layer):
    """``inputs * scale + offset``, in the layer's compute dtype (Keras 3's `Rescaling`),
    e.g. ``Rescaling(1 / 255)`` maps [0, 255] pixels to [0, 1], ``Rescaling(1 / 127.5,
    offset=-1)`` to [-1, 1].

    Args:
      scale: float, or an array broadcast against the inputs (e.g. per channel).
      offset: float or array, added after scaling (default 0).

    Input: any shape and numeric dtype; output: the same shape, float32 (the layer's
    dtype). The mask passes through.
    """

    supports_masking = True

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def call(self, inputs):
        dt = self.compute_dtype
        x = cast_ops.cast(inputs, dt) if inputs.dtype != dt else inputs
        scale = constant_ops.constant(np.asarray(self.scale, dt.np), dtype=dt)
        offset = constant_ops.constant(np.asarray(self.offset, dt.np), dtype=dt)
        return x * scale + offset

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        def plain(v):
            return np.asarray(v).tolist() if isinstance(v, (np.ndarray, list, tuple)) else v

        return {**super().get_config(), "scale": plain(self.scale),
                "offset": plain(self.offset)}


def _first_of_tuple(batch):
    # Datasets of (x, y) pairs: adapt reads x, as Keras's `_extract_batch` does.
    if isinstance(batch, tuple) and not hasattr(batch, "_fields"):
        return batch[0]
    return batch


class Normalization(Layer):
    """Feature-wise standardization ``(x - mean) / sqrt(variance)`` (Keras 3's
    `Normalization`); with ``invert=True``, ``mean + x * sqrt(variance)``. The square
    root is floored at 1e-7 (Keras's epsilon).

    `mean` and `variance` are either given, or computed by `adapt(data)`: per position
    along `axis`, over every other axis, the mean and the *population* variance (divisor
    N, as `np.var`), exactly as Keras 3 does; over batches they are combined with
    Keras's running-update formula. Adapted values live in the layer's non-trainable
    weights ``mean``, ``variance`` (and ``count``, kept at 0 as Keras 3 keeps it), so
    `save` / `load_model` and `get_weights` carry them.

    Args:
      axis: int, tuple of ints, or None: the axes that keep their own statistics
        (default -1: one mean per feature). None: one scalar mean and variance.
      mean, variance: optional fixed statistics (broadcast to the kept axes); both or
        neither.
      invert: apply the inverse transformation.

    Input: float ``[batch, ...]`` (the kept axes known); output: same shape, float32.
    The mask passes through.

    Raises:
      ValueError: only one of `mean` / `variance`, their shapes differing, an `axis`
        out of range or of unknown size, `adapt` data whose kept axes differ from the
        built shape.
    """

    supports_masking = True

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        elif isinstance(axis, (int, np.integer)):
            axis = (int(axis),)
        else:
            axis = tuple(int(a) for a in axis)
        self.axis, self.invert = axis, bool(invert)
        if (mean is not None) != (variance is not None):
            raise ValueError("When setting values directly, both `mean` and `variance` "
                             f"must be set. Received: mean={mean} and variance={variance}")
        if mean is not None:
            if np.shape(mean) != np.shape(variance):
                raise ValueError("When setting values directly, `mean` and `variance` must "
                                 f"have the same shape. Received: mean shape "
                                 f"{np.shape(mean)} and variance shape {np.shape(variance)}")
            if len(np.shape(mean)) > len(self.axis):
                raise ValueError("The rank of `mean` must be less than or equal to the "
                                 f"number of axes ({len(self.axis)}). Received: mean shape "
                                 f"{np.shape(mean)} for axis {self.axis}")
        self.input_mean, self.input_variance = mean, variance

    def build(self, input_shape):
        ndim = len(input_shape)
        if any(a < -ndim or a >= ndim for a in self.axis):
            raise ValueError("All `axis` values must be in the range [-ndim, ndim). Received "
                             f"inputs with ndim={ndim}, while axis={self.axis}")
        keep = tuple(sorted(a % ndim for a in self.axis))
        for d in keep:
            if input_shape[d] is None:
                raise ValueError(f"All `axis` values to be kept must have a known shape. "
                                 f"Received axis={self.axis}, inputs.shape={input_shape}, "
                                 f"with unknown axis at index {d}")
        self._keep_axis = keep
        self._reduce_axis = tuple(d for d in range(ndim) if d not in keep)
        self._broadcast_shape = [input_shape[d] if d in keep else 1 for d in range(ndim)]
        self._stats_shape = tuple(input_shape[d] for d in keep)
        self._build_input_shape = tuple(input_shape)
        if self.input_mean is None:
            self.adapt_mean = self.add_weight("mean", self._stats_shape, "zeros",
                                              trainable=False)
            self.adapt_variance = self.add_weight("variance", self._stats_shape, "ones",
                                                  trainable=False)
            self.count = self.add_weight("count", (), "zeros", trainable=False,
                                         dtype="int32")  # Keras 3's dtype "int"
        else:
            self._fixed = (self._broadcast_stat(self.input_mean),
                           self._broadcast_stat(self.input_variance))
        self.built = True

    def _broadcast_stat(self, value):
        v = np.asarray(value, np.float64)
        ndim = len(self._broadcast_shape)
        if v.ndim:
            shape = [1] * ndim
            for i in range(1, v.ndim + 1):
                shape[self._keep_axis[-i]] = v.shape[-i]
            v = v.reshape(shape)
        return np.broadcast_to(v, self._broadcast_shape).astype(self.compute_dtype.np)

    def _stats(self):
        dt = self.compute_dtype
        if self.input_mean is not None:
            return (constant_ops.constant(self._fixed[0], dtype=dt),
                    constant_ops.constant(self._fixed[1], dtype=dt))
        mean = array_ops.reshape(self.adapt_mean, self._broadcast_shape)
        var = array_ops.reshape(self.adapt_variance, self._broadcast_shape)
        return cast_ops.cast(mean, dt), cast_ops.cast(var, dt)

    def call(self, inputs):
        dt = self.compute_dtype
        x = cast_ops.cast(inputs, dt) if inputs.dtype != dt else inputs
        mean, var = self._stats()
        scale = math_ops.maximum(math_ops.sqrt(var), constant_ops.constant(_EPSILON, dtype=dt))
        if self.invert:
            return mean + x * scale
        return (x - mean) / scale

    def compute_output_shape(self, input_shape):
        return input_shape

    # --- adapt ---
    def adapt(self, data, steps=None):
        """Computes `mean` and `variance` from `data` (see the class doc).

        Args:
          data: a numpy (or JAX) array ``[N, ...]``, a `mylib.data.Dataset` of batches
            (or of ``(x, y)`` pairs of batches: x is used; a dataset of 1-D samples is
            batched first), or any iterable of batches (a list is a list of batches,
            as in Keras 3).
          steps: optional number of batches read from a dataset or iterable.
        Raises:
          ValueError: a layer made with fixed `mean` / `variance`, empty data, or data
            whose kept axes differ from the built shape.
        """
        if self.input_mean is not None:
            raise ValueError(f'Layer "{self.name}" was given `mean` and `variance`; '
                             "it cannot be adapted.")
        from mylib.data import Dataset

        if isinstance(data, Dataset):
            first = next(iter(data), None)
            if first is not None and np.ndim(_first_of_tuple(first)) == 1:
                data = data.batch(128)
        if isinstance(data, np.ndarray) or hasattr(data, "__array__"):
            batches = [np.asarray(data)]
        else:
            batches = (np.asarray(_first_of_tuple(b)) for b in data)
        if steps is not None:
            batches = itertools.islice(batches, int(steps))
        it = iter(batches)
        first = next(it, None)
        if first is None:
            raise ValueError(f'Layer "{self.name}": adapt() received no data.')
        self._ensure_built(first.shape)
        total_mean = total_var = None
        total_count = 0
        for batch in itertools.chain([first], it):
            batch = batch.astype(np.float64)
            for d in self._keep_axis:
                if batch.ndim != len(self._build_input_shape) or \
                        batch.shape[d] != self._build_input_shape[d]:
                    raise ValueError(f"The layer was built with input_shape="
                                     f"{self._build_input_shape}, but adapt() is being called "
                                     f"with data with an incompatible shape, "
                                     f"data.shape={batch.shape}")
            b_mean = batch.mean(axis=self._reduce_axis)
            b_var = batch.var(axis=self._reduce_axis)
            n = int(np.prod([batch.shape[d] for d in self._reduce_axis])) \
                if self._reduce_axis else 1
            if total_mean is None:
                total_mean, total_var, total_count = b_mean, b_var, n
                continue
            # Keras 3's combination of running statistics (pooled population variance).
            total_count += n
            w = n / total_count
            new_mean = total_mean * (1 - w) + b_mean * w
            total_var = (total_var + (total_mean - new_mean) ** 2) * (1 - w) + \
                (b_var + (b_mean - new_mean) ** 2) * w
            total_mean = new_mean
        from mylib.runtime import keras_session

        keras_session.set_values([self.adapt_mean, self.adapt_variance],
                                 [np.asarray(total_mean, np.float32).reshape(self._stats_shape),
                                  np.asarray(total_var, np.float32).reshape(self._stats_shape)],
                                 owner=f'Layer "{self.name}"')

    def _ensure_built(self, shape):
        if self.built:
            return
        from mylib.layers.array_call import _graph_of

        g = _graph_of(self)
        with g.as_default(), g.name_scope(self.name):
            self.build(tuple(shape))

    def get_config(self):
        def plain(v):
            return None if v is None else np.asarray(v).tolist()

        return {**super().get_config(), "axis": list(self.axis), "invert": self.invert,
                "mean": plain(self.input_mean), "variance": plain(self.input_variance)}


def encode_categorical(indices, output_mode, depth, dtype, count_weights=None):
    """Keras's `encode_categorical_inputs` in graph ops: int `indices` -> one-hot,
    multi-hot or counts of `depth` slots (indices outside ``[0, depth)`` give no slot,
    as jax's `one_hot`). Rank-0 indices are taken as ``[1]``; multi_hot and count reduce
    the last axis (a rank-1 input is one sample: output ``[depth]``); one_hot of an
    input ending in 1 replaces that axis."""
    x = indices
    if x.shape.rank == 0:
        x = array_ops.reshape(x, [1])
    if not x.dtype.is_integer:
        x = cast_ops.cast(x, "int32")
    shape = x.shape.as_list()
    if output_mode == "one_hot":
        if len(shape) > 1 and shape[-1] == 1:
            x = array_ops.squeeze(x, axis=[-1])
        return indexing_ops.one_hot(x, depth, dtype=dtype)
    hot = indexing_ops.one_hot(x, depth, dtype=dtype)
    if output_mode == "multi_hot":
        return reduction_ops.reduce_max(hot, axis=-2)
    if count_weights is not None:
        w = cast_ops.cast(count_weights, dtype) if count_weights.dtype != dtype \
            else count_weights
        hot = hot * array_ops.expand_dims(w, -1)
    return reduction_ops.reduce_sum(hot, axis=-2)


class CategoryEncoding(Layer):
    """Encodes integer category ids as one-hot, multi-hot or count vectors (Keras 3's
    `CategoryEncoding`).

    Args:
      num_tokens: int >= 1, the number of categories; ids must be in
        ``[0, num_tokens)`` (ids outside give all-zero slots, as Keras 3 on JAX).
      output_mode: ``"multi_hot"`` (default; ``"binary"`` is an alias), ``"one_hot"`` or
        ``"count"``.
      sparse: accepted for compatibility; must be False (outputs are dense).

    Call: ``layer(ids, count_weights=None)``; `count_weights` (same shape as `ids`)
    weights each id in ``"count"`` mode.

    Shapes: ``one_hot``: ``[..., n] -> [..., n, num_tokens]`` (``[..., 1] -> [...,
    num_tokens]``); ``multi_hot`` / ``count``: ``[..., n] -> [..., num_tokens]``
    (a rank-1 input ``[n]`` is one sample -> ``[num_tokens]``, as Keras). float32 out.

    Raises:
      ValueError: `num_tokens` None or < 1, an unknown `output_mode`, `sparse=True`,
        `count_weights` outside ``"count"`` mode.
    """

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        if output_mode == "binary":
            output_mode = "multi_hot"
        if output_mode not in ("count", "one_hot", "multi_hot"):
            raise ValueError(f"Unknown arg for output_mode: {output_mode}")
        if num_tokens is None:
            raise ValueError("num_tokens must be set to use this layer. If the number of "
                             "tokens is not known beforehand, use the IntegerLookup layer "
                             "instead.")
        if num_tokens < 1:
            raise ValueError(f"`num_tokens` must be >= 1. Received: num_tokens={num_tokens}.")
        if sparse:
            raise ValueError("CategoryEncoding(sparse=True) is not supported: mylib's "
                             "outputs are dense. Received: sparse=True")
        self.num_tokens, self.output_mode, self.sparse = int(num_tokens), output_mode, False

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, (list, tuple, int)) and not any(
                hasattr(t, "op") for t in flatten(inputs)):
            inputs = np.asarray(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, count_weights=None):
        if count_weights is not None and self.output_mode != "count":
            raise ValueError("`count_weights` is not used when `output_mode` is not "
                             f"`'count'`. Received `count_weights={count_weights}`.")
        return encode_categorical(inputs, self.output_mode, self.num_tokens,
                                  self.compute_dtype, count_weights)

    def compute_output_shape(self, input_shape):
        if len(input_shape) == 0:
            return (self.num_tokens,)
        if self.output_mode == "one_hot" and (input_shape[-1] != 1 or len(input_shape) == 1):
            return tuple(input_shape) + (self.num_tokens,)
        return tuple(input_shape[:-1]) + (self.num_tokens,)

    def get_config(self):
        return {**super().get_config(), "num_tokens": self.num_tokens,
                "output_mode": self.output_mode}
