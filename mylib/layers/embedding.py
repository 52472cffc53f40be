"""`Embedding`: rows of a trainable table looked up by integer ids."""

from __future__ import annotations

import numpy as np

from mylib.core.compat_args import warn_ignored
from mylib.core.ops import math_ops
from mylib.core.ops import constant_ops
from mylib.layers import constraints, initializers, regularizers
from mylib.layers.base import Layer
from mylib.layers.core import refuse_lora_and_quantization
from mylib.core.ops.embedding_ops import embedding_lookup


class Embedding(Layer):
    """Maps integer ids ``[batch, ...]`` to vectors ``[batch, ..., output_dim]``.

    The lookup is one ``GatherV2`` on the ``embeddings`` variable, so the gradient
    with respect to the table is an `IndexedSlices` (only the looked-up rows), kept
    sparse until the optimizer applies it.

    An id outside ``[0, input_dim)`` never yields a real row (``-1`` is not the last
    one): fed ids (``predict``/``fit``/``evaluate`` data) give rows of NaN, so the
    outputs and the loss are NaN; constant ids raise `InvalidArgumentError` naming the
    op, the bad id and the range when run (see `ml.nn.embedding_lookup`).

    Args:
      input_dim: vocabulary size (ids are in ``[0, input_dim)``).
      output_dim: size of each vector.
      embeddings_initializer: default ``"uniform"`` (uniform in [-0.05, 0.05]).
      embeddings_regularizer, embeddings_constraint: as Keras.
      mask_zero: id 0 is padding: the layer outputs a mask ``ids != 0`` that recurrent
        layers (and other mask-aware layers) consume.
      input_length: accepted for Keras 2 compatibility and ignored (warns once, as
        Keras 3 does): the sequence length comes from the inputs' shape.
    """

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None, mask_zero=False,
                 input_length=None, lora_rank=None, lora_alpha=None, quantization_config=None,
                 **kwargs):
        super().__init__(**kwargs)
        refuse_lora_and_quantization(self, lora_rank, quantization_config)
        if input_length is not None:
            warn_ignored("Embedding", "input_length",
                         "the sequence length comes from the inputs' shape; remove it.")
        for what, v in (("input_dim", input_dim), ("output_dim", output_dim)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"Both `input_dim` and `output_dim` should be positive, "
                                 f"Received {what}={v!r}")
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.mask_zero = bool(mask_zero)
        self.input_length = input_length

    def build(self, input_shape):
        self.embeddings = self.add_weight(
            "embeddings", [self.input_dim, self.output_dim], self.embeddings_initializer,
            regularizer=self.embeddings_regularizer, constraint=self.embeddings_constraint)

    def call(self, inputs):
        ids = inputs if inputs.dtype.is_integer else math_ops.cast(inputs, "int32")
        # A lookup on the variable itself (`ResourceGather`): where the table lives on
        # a parameter server (or is sharded over several), only the rows the batch
        # needs are read there.

        return embedding_lookup(self.embeddings, ids)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return math_ops.not_equal(inputs, constant_ops.zeros_like(inputs))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.output_dim,)

    def get_config(self):
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                "embeddings_regularizer": regularizers.serialize(self.embeddings_regularizer),
                "embeddings_constraint": constraints.serialize(self.embeddings_constraint),
                "mask_zero": self.mask_zero}
