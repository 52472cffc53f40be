"""Keras 3's `Attention` (dot-product, Luong-style) and `AdditiveAttention`
(Bahdanau-style) layers; `MultiHeadAttention` is in `mylib.layers.attention`."""

from __future__ import annotations

import numpy as np

from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops
from mylib.layers.base import Layer
from mylib import nn


class Attention(Layer):
    """Dot-product attention (Luong et al., 2015), as Keras 3's `Attention`.

    Called on ``[query, value]`` or ``[query, value, key]`` (key defaults to value):
    ``query [batch, Tq, dim]``, ``value [batch, Tv, dim_v]``, ``key [batch, Tv, dim]``.
    Scores ``[batch, Tq, Tv]`` are ``query @ key^T`` (times the trainable scalar
    ``scale`` when `use_scale`), or with ``score_mode="concat"``
    ``concat_score_weight * sum(tanh(scale * (q + k)), -1)``; positions where the value
    mask is False (and, with ``use_causal_mask=True``, future positions) get
    ``score - 1e9`` (65504 for float16); the softmax over Tv (dropout on it in training)
    weights `value`. Output ``[batch, Tq, dim_v]``, zero where the query mask is False.

    Args:
      use_scale: learn a scalar scale of the scores (initialized to 1).
      score_mode: ``"dot"`` or ``"concat"``.
      dropout: fraction of attention weights dropped in training.
      seed: op seed of the dropout.

    Call arguments: ``mask=[query_mask, value_mask]`` (taken from the inputs' Keras
    masks when not given), ``training``, ``return_attention_scores`` (also return the
    ``[batch, Tq, Tv]`` weights), ``use_causal_mask``.

    Raises:
      ValueError: an unknown `score_mode`; inputs not a list of 2 or 3 tensors; a mask
        that is not a list of 2 or 3.
    """

    supports_masking = True

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError("Invalid value for argument score_mode. Expected one of "
                             f"{{'dot', 'concat'}}. Received: score_mode={score_mode}")
        self.use_scale, self.score_mode = bool(use_scale), score_mode
        self.dropout, self.seed = float(dropout), seed

    def _validate(self, inputs, mask=None):
        name = type(self).__name__
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{name} layer must be called on a list of inputs, namely "
                             f"[query, value] or [query, value, key]. Received: "
                             f"inputs={inputs}.")
        if not 2 <= len(inputs) <= 3:
            raise ValueError(f"{name} layer accepts inputs list of length 2 or 3, namely "
                             f"[query, value] or [query, value, key]. Received length: "
                             f"{len(inputs)}.")
        if mask is not None and (not isinstance(mask, (list, tuple)) or
                                 not 2 <= len(mask) <= 3):
            raise ValueError(f"{name} layer mask must be a list of length 2 or 3, namely "
                             f"[query_mask, value_mask]. Received: mask={mask}.")

    def build(self, input_shape):
        self._validate(input_shape)
        self.scale = self.add_weight("scale", (), "ones") if self.use_scale else None
        self.concat_score_weight = self.add_weight("concat_score_weight", (), "ones") \
            if self.score_mode == "concat" else None

    def _scores(self, q, k):
        if self.score_mode == "dot":
            s = math_ops.matmul(q, k, transpose_b=True)
            return s * self.scale if self.scale is not None else s
        qk = array_ops.expand_dims(q, -2) + array_ops.expand_dims(k, -3)
        if self.scale is not None:
            qk = self.scale * qk
        return self.concat_score_weight * reduction_ops.reduce_sum(math_ops.tanh(qk), axis=-1)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False,
             use_causal_mask=False):
        self._validate(inputs, mask)
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        q_mask = mask[0] if mask else None
        v_mask = mask[1] if mask else None
        scores = self._scores(q, k)
        keep = None
        if v_mask is not None:
            keep = array_ops.expand_dims(math_ops.cast(v_mask, "bool"), -2)  # [b, 1, Tv]
        if use_causal_mask:
            # position i of the query sees positions j <= i of the value (Keras 3's
            # cumsum construction, rows >= cols)
            tq, tv = scores.shape.as_list()[-2:]
            if tq is not None and tv is not None:
                causal = constant_ops.constant(np.tril(np.ones((1, tq, tv), bool)))
            else:
                ones = constant_ops.ones_like(scores[:1], dtype="int32")
                causal = math_ops.greater_equal(reduction_ops.cumsum(ones, axis=-2),
                                                reduction_ops.cumsum(ones, axis=-1))
            keep = causal if keep is None else math_ops.logical_and(keep, causal)
        if keep is not None:
            big = 65504.0 if scores.dtype.name == "float16" else 1.0e9
            scores = array_ops.where(keep, scores, scores - big)
        weights = nn.softmax(scores, axis=-1)
        if training and self.dropout > 0:
            weights = nn.dropout(weights, rate=self.dropout, seed=self.seed)
        out = math_ops.matmul(weights, v)
        if q_mask is not None:
            out = array_ops.where(array_ops.expand_dims(math_ops.cast(q_mask, "bool"), -1),
                                  out, 0.0)
        return (out, weights) if return_attention_scores else out

    def compute_mask(self, inputs, mask=None):
        if mask is None or not isinstance(mask, (list, tuple)) or mask[0] is None:
            return None
        return mask[0]

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0][:-1]) + (input_shape[1][-1],)

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode, "dropout": self.dropout, "seed": self.seed}


class AdditiveAttention(Attention):
    """Additive attention (Bahdanau et al., 2015), as Keras 3's `AdditiveAttention`:
    scores ``sum(scale * tanh(q[:, :, None] + k[:, None]), -1)`` with a trainable
    ``scale [dim]`` (glorot-uniform initialized) when `use_scale` (default True);
    masks, dropout and call arguments as `Attention`."""

    def __init__(self, use_scale=True, dropout=0.0, **kwargs):
        super().__init__(use_scale=use_scale, dropout=dropout, **kwargs)

    def build(self, input_shape):
        self._validate(input_shape)
        dim = input_shape[0][-1]
        self.scale = self.add_weight("scale", [dim], "glorot_uniform") \
            if self.use_scale else None
        self.concat_score_weight = None

    def _scores(self, q, k):
        t = math_ops.tanh(array_ops.expand_dims(q, -2) + array_ops.expand_dims(k, -3))
        if self.scale is not None:
            t = self.scale * t
        return reduction_ops.reduce_sum(t, axis=-1)

    def get_config(self):
        cfg = super().get_config()
        cfg.pop("score_mode")
        return cfg
