"""`MultiHeadAttention` (Vaswani et al. 2017), with Keras 3's weights and masks."""

from __future__ import annotations

import math

import numpy as np

from mylib.core.ops import array_ops, constant_ops, indexing_ops, math_ops, reduction_ops
from mylib.layers import constraints, initializers, regularizers
from mylib.layers.base import Layer, get_mask
from mylib import nn
from mylib.core.graph import get_default_graph


class MultiHeadAttention(Layer):
    """Multi-head scaled dot-product attention, as `keras.layers.MultiHeadAttention`.

    ``query [B, T, dim]``, ``value [B, S, dim_v]``, ``key [B, S, dim_k]`` (default
    `value`). Each head projects them (kernels ``query/kernel [dim, H, key_dim]``, ...),
    computes ``softmax(q k^T / sqrt(key_dim))`` over the S axis and the weighted sum of
    the values; ``attention_output/kernel [H, value_dim, out]`` projects the heads back
    to ``out`` (the query's last dim unless `output_shape` is given).

    Masks: ``attention_mask [B, T, S]`` (True / 1 = may attend), the Keras masks of
    query and value (e.g. from `Embedding(mask_zero=True)`), and ``use_causal_mask``
    (position t attends to s <= t) are combined with AND. Masked scores are set to the
    most negative finite value of the scores' dtype before the softmax, which runs in
    float32 under a mixed precision policy (so a float16 mask neither overflows nor
    gives NaN). A query row with every position masked (a padded query step) attends
    uniformly to all S positions, except with ``dropout > 0`` or
    ``return_attention_scores=True``, where its probabilities are all 0 (its output
    the output bias): Keras 3 takes its fused attention kernel only in the first case
    and its masked `Softmax` (masked entries 0) otherwise; TF-Keras 2 attends
    uniformly in both.

    Args:
      num_heads: number of heads H.
      key_dim: size of each head for query and key.
      value_dim: size of each head for value (default `key_dim`).
      dropout: dropout rate on the attention probabilities (training only).
      use_bias: biases in the four projections.
      output_shape: last dim of the output (default: the query's).
      kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
      kernel_constraint, bias_constraint: for the four projections.
      activity_regularizer: of the layer's output (as every layer's).
      use_gate: gate each head's output by ``sigmoid(query @ gate/kernel + gate/bias)``
        (kernel ``[dim, H, value_dim]``) before the output projection (gated attention,
        Qiu et al. 2025, as Keras 3).
      sliding_window: position t attends only to s with ``|t - s| < sliding_window``
        (ANDed with the other masks; with ``use_causal_mask`` the causal window).
      flash_attention: accepted for Keras compatibility; XLA chooses the kernel.
    Call arguments: ``query, value, key=None, attention_mask=None,
      return_attention_scores=False, training=None, use_causal_mask=False``.
    Returns:
      ``[B, T, out]``; with ``return_attention_scores=True`` also the probabilities
      ``[B, H, T, S]``.
    """

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 use_gate=False, sliding_window=None, flash_attention=None, seed=None,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if sliding_window is not None and (isinstance(sliding_window, bool) or not isinstance(
                sliding_window, int) or sliding_window <= 0):
            raise ValueError("`sliding_window` must be `None` or a positive integer. "
                             f"Received: sliding_window={sliding_window!r}")
        self.use_gate, self.sliding_window = bool(use_gate), sliding_window
        self.flash_attention = flash_attention  # a speed hint in Keras; XLA fuses here
        for what, v in (("num_heads", num_heads), ("key_dim", key_dim)):
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"`{what}` must be a positive int. Received: {what}={v!r}")
        if isinstance(attention_axes, int):
            attention_axes = (attention_axes,)
        if attention_axes is not None and tuple(attention_axes) not in ((1,), (-2,)):
            raise NotImplementedError("MultiHeadAttention: `attention_axes` other than the "
                                      "default (the time axis of rank-3 inputs) is not "
                                      "supported.")
        self.num_heads, self.key_dim = num_heads, key_dim
        self.value_dim = value_dim or key_dim
        self.dropout, self.use_bias, self.seed = float(dropout), bool(use_bias), seed
        if isinstance(output_shape, (list, tuple)):
            if len(output_shape) != 1:
                raise NotImplementedError("MultiHeadAttention: only a 1-D `output_shape` "
                                          f"is supported. Received: {output_shape}")
            output_shape = output_shape[0]
        self._output_dim = output_shape
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    # The node records [query, value(, key)] as its inputs, so a functional model
    # replays both branches (Layer.__call__ tracks only its first argument).
    def __call__(self, query, value=None, key=None, **kwargs):
        if value is None and isinstance(query, (list, tuple)):
            inputs = list(query)
        else:
            if value is None:
                raise ValueError(f'Layer "{self.name}": call it as `layer(query, value)` '
                                 f"(value is required).")
            inputs = [query, value] + ([key] if key is not None else [])
        return super().__call__(inputs, **kwargs)

    def _proj(self, name, shape):
        g = self.kernel_initializer
        with _scope(name):
            k = self.add_weight("kernel", shape, g, regularizer=self.kernel_regularizer,
                                constraint=self.kernel_constraint)
            b = None
            if self.use_bias:
                bshape = shape[1:] if name != "attention_output" else shape[-1:]
                b = self.add_weight("bias", bshape, self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint)
        return k, b

    def build(self, input_shape):
        shapes = [tuple(s) for s in input_shape]
        for s in shapes:
            if len(s) != 3 or s[-1] is None:
                raise ValueError(f'Layer "{self.name}": query, value and key must have shape '
                                 f"[batch, length, dim] with a known dim. Received shapes "
                                 f"{shapes}")
        q, v = shapes[0], shapes[1]
        k = shapes[2] if len(shapes) > 2 else v
        H, Hkv = self.num_heads, self._kv_heads()
        self.query_kernel, self.query_bias = self._proj("query", [q[-1], H, self.key_dim])
        self.key_kernel, self.key_bias = self._proj("key", [k[-1], Hkv, self.key_dim])
        if self.use_gate:  # Keras's order: query, key, gate, value, output
            self.gate_kernel, self.gate_bias = self._proj("gate", [q[-1], H, self.value_dim])
        self.value_kernel, self.value_bias = self._proj("value", [v[-1], Hkv, self.value_dim])
        out = self._output_dim or q[-1]
        self.output_kernel, self.output_bias = self._proj(
            "attention_output", [H, self.value_dim, out])

    def _heads(self, x, kernel, bias):
        """[B, L, D] -> [B, H, L, K]: one broadcast matmul with the [H, D, K] kernel."""
        w = array_ops.transpose(kernel, [1, 0, 2])
        y = math_ops.matmul(array_ops.expand_dims(x, 1), w)
        if bias is not None:
            y = y + array_ops.expand_dims(bias, 1)  # [H, 1, K]
        return y

    def _kv_heads(self):
        """The number of key and value heads (`GroupedQueryAttention` has fewer)."""
        return self.num_heads

    def _shared_heads(self, x):
        """The key or value heads ``[B, H_kv, S, K]`` each query head attends to (the
        same tensor here; `GroupedQueryAttention` repeats its fewer heads)."""
        return x

    def call(self, inputs, attention_mask=None, return_attention_scores=False,
             training=None, use_causal_mask=False, mask=None):
        query, value = inputs[0], inputs[1]
        key = inputs[2] if len(inputs) > 2 else value
        dt = self.dtype
        query, value, key = [t if t.dtype == dt else math_ops.cast(t, dt)
                             for t in (query, value, key)]
        q = self._heads(query, self.query_kernel, self.query_bias)
        k = self._shared_heads(self._heads(key, self.key_kernel, self.key_bias))
        v = self._shared_heads(self._heads(value, self.value_kernel, self.value_bias))
        q = q * (1.0 / math.sqrt(float(self.key_dim)))
        scores = math_ops.matmul(q, k, transpose_b=True)  # [B, H, T, S]
        if scores.dtype.name in ("float16", "bfloat16"):
            # Mixed precision: the masked softmax runs in float32, as Keras's.
            scores = math_ops.cast(scores, "float32")

        masks = mask if isinstance(mask, (list, tuple)) else [None, None, None]
        m = self._attention_mask(scores, masks, attention_mask, use_causal_mask)
        if m is not None:
            # Masked scores become the dtype's most negative finite value (a `where`,
            # not an added ``-1e9 * (1 - mask)``, which overflows in float16 to -inf,
            # and 0 * -inf is NaN). A fully masked row attends uniformly, as Keras.
            lowest = constant_ops.constant(np.finfo(scores.dtype.name).min,
                                           dtype=scores.dtype)
            scores = array_ops.where(m, scores, lowest)

        probs = nn.softmax(scores, axis=-1)
        if m is not None and (return_attention_scores or self.dropout > 0):
            # Keras 3's non-fused path: its masked Softmax zeroes the masked entries,
            # so a fully masked row attends to nothing (see the class docstring).
            probs = array_ops.where(m, probs, array_ops.zeros_like(probs))
        if probs.dtype != dt:
            probs = math_ops.cast(probs, dt)
        dropped = probs
        if training and self.dropout > 0:
            dropped = nn.dropout(probs, rate=self.dropout, seed=self.seed)
        heads = math_ops.matmul(dropped, v)  # [B, H, T, Dv]
        if self.use_gate:
            heads = heads * math_ops.sigmoid(
                self._heads(query, self.gate_kernel, self.gate_bias))
        out = reduction_ops.reduce_sum(math_ops.matmul(heads, self.output_kernel), axis=1)
        if self.output_bias is not None:
            out = out + self.output_bias
        if return_attention_scores:
            return out, probs
        return out

    def _attention_mask(self, scores, masks, attention_mask, use_causal_mask):
        """The bool mask [B or 1, 1, T, S] of allowed positions, or None."""
        qm = masks[0] if len(masks) > 0 else None
        vm = masks[1] if len(masks) > 1 else None
        km = masks[2] if len(masks) > 2 else None
        parts = []
        if qm is not None:
            parts.append(array_ops.expand_dims(math_ops.cast(qm, "bool"), -1))  # [B, T, 1]
        if vm is not None:
            parts.append(array_ops.expand_dims(math_ops.cast(vm, "bool"), 1))  # [B, 1, S]
        if km is not None:
            parts.append(array_ops.expand_dims(math_ops.cast(km, "bool"), 1))
        if attention_mask is not None:
            am = attention_mask
            parts.append(am if am.dtype.name == "bool" else math_ops.not_equal(
                am, constant_ops.zeros_like(am)))
        if use_causal_mask:
            ones = constant_ops.ones_like(scores[0, 0])  # [T, S]
            row = reduction_ops.cumsum(ones, axis=0)
            col = reduction_ops.cumsum(ones, axis=1)
            parts.append(array_ops.expand_dims(math_ops.greater_equal(row, col), 0))
        if self.sliding_window is not None:
            ones = constant_ops.ones_like(scores[0, 0])  # [T, S]
            dist = math_ops.abs(reduction_ops.cumsum(ones, axis=0) -
                                reduction_ops.cumsum(ones, axis=1))
            parts.append(array_ops.expand_dims(
                math_ops.less(dist, float(self.sliding_window)), 0))
        if not parts:
            return None
        m = parts[0]
        for p in parts[1:]:
            m = math_ops.logical_and(m, p)
        return array_ops.expand_dims(m, 1)  # broadcast over heads

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)) and mask and mask[0] is not None:
            return mask[0]
        return None

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout,
                "use_bias": self.use_bias, "output_shape": self._output_dim,
                "attention_axes": None,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint),
                "use_gate": self.use_gate, "sliding_window": self.sliding_window,
                "seed": self.seed}


class GroupedQueryAttention(MultiHeadAttention):
    """Grouped-query attention (Ainslie et al. 2023), as Keras 3: `num_query_heads`
    query heads share `num_key_value_heads` key and value heads, each key/value head
    serving ``num_query_heads // num_key_value_heads`` consecutive query heads.

    Weights as Keras's: ``query/kernel [dim, num_query_heads, head_dim]``,
    ``key/kernel`` and ``value/kernel [dim_kv, num_key_value_heads, head_dim]``,
    ``attention_output/kernel [num_query_heads, head_dim, dim]`` (and biases; ``gate``
    with `use_gate`). Masks, `use_causal_mask`, `sliding_window`, `dropout`, `use_gate`
    and the call arguments as `MultiHeadAttention`; the output has the query's last dim.

    Raises:
      ValueError: `num_query_heads` is not a multiple of `num_key_value_heads`.
    """

    def __init__(self, head_dim, num_query_heads, num_key_value_heads, dropout=0.0,
                 use_bias=True, sliding_window=None, flash_attention=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None,
                 **kwargs):
        for what, v in (("num_query_heads", num_query_heads),
                        ("num_key_value_heads", num_key_value_heads)):
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"`{what}` must be a positive int. Received: {what}={v!r}")
        if num_query_heads % num_key_value_heads:
            raise ValueError("`num_query_heads` must be divisible by `num_key_value_heads`.")
        super().__init__(num_query_heads, head_dim, dropout=dropout, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         use_gate=use_gate, sliding_window=sliding_window,
                         flash_attention=flash_attention, seed=seed, **kwargs)
        self.head_dim = head_dim
        self.num_query_heads, self.num_key_value_heads = num_query_heads, num_key_value_heads
        self.num_repeats = num_query_heads // num_key_value_heads

    def _kv_heads(self):
        return self.num_key_value_heads

    def _shared_heads(self, x):
        if self.num_repeats == 1:
            return x
        # query head i reads key/value head i // num_repeats (Keras's `repeat`)
        heads = np.repeat(np.arange(self.num_key_value_heads), self.num_repeats)
        return indexing_ops.gather(x, heads.astype(np.int32), axis=1)

    def get_config(self):
        cfg = super().get_config()
        for k in ("num_heads", "key_dim", "value_dim", "output_shape", "attention_axes"):
            cfg.pop(k, None)
        return {**cfg, "head_dim": self.head_dim, "num_query_heads": self.num_query_heads,
                "num_key_value_heads": self.num_key_value_heads}


def _scope(name):

    return get_default_graph().name_scope(name)


__all__ = ["MultiHeadAttention", "get_mask"]
