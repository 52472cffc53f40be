"""Connectionist temporal classification: `CTCLossDense`, the CTC loss of dense,
padded label batches (TensorFlow 2's ``tf.nn.ctc_loss`` with dense labels and
``logits_time_major=False``), computed by `optax.ctc_loss`.

No gradient is registered: the generic VJP op differentiates the kernel (`jax.vjp` of
optax's forward-backward recursion) with respect to the logits.
"""

from __future__ import annotations

import jax.numpy as jnp
import optax

from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops import math_ops

__all__ = ["ctc_loss_dense"]


def _ctc_kernel(labels, logits, label_length, logit_length, *, blank_index):
    # optax marks padding with 1.0: label position n >= length, output step t >= length.
    label_pad = (jnp.arange(labels.shape[1])[None, :] >= label_length[:, None])
    logit_pad = (jnp.arange(logits.shape[1])[None, :] >= logit_length[:, None])
    return optax.ctc_loss(logits, logit_pad.astype(logits.dtype), labels,
                          label_pad.astype(logits.dtype), blank_id=blank_index)


CTCLossDense = OpDef("CTCLossDense", kernel=_ctc_kernel)


@CTCLossDense.shape_fn
def _ctc_shape(labels, logits, label_length, logit_length, *, blank_index):
    if labels.shape.rank not in (None, 2) or logits.shape.rank not in (None, 3):
        raise ValueError(f"labels must be [batch, max_label_length] and logits [batch, "
                         f"max_time, num_classes]; received {labels.shape} and {logits.shape}")
    batch = logits.shape.as_list()[0] if logits.shape.rank else None
    return TensorSpec([batch], logits.dtype)


def ctc_loss_dense(labels, logits, label_length, logit_length, blank_index=0, name=None):
    """CTC loss (Graves et al., 2006) of padded dense labels against unnormalized scores.

    Args:
      labels: int `Tensor` ``[batch, max_label_length]``; entries past each label's
        length are padding (ignored).
      logits: float `Tensor` ``[batch, max_time, num_classes]``, unnormalized (a
        log-softmax over the classes is applied inside).
      label_length: int `Tensor` ``[batch]``, each label's length.
      logit_length: int `Tensor` ``[batch]``, each sequence's number of valid steps.
      blank_index: the blank class id (an int in ``[0, num_classes)``).
      name: optional op name.
    Returns:
      `Tensor` ``[batch]`` of the logits' dtype: ``-log p(labels | logits)``.
    """
    logits = convert_to_tensor(logits, dtype_hint=_dtypes.float32)
    labels, label_length, logit_length = (
        math_ops.cast(convert_to_tensor(t), _dtypes.int32)
        for t in (labels, label_length, logit_length))
    return CTCLossDense(labels, logits, label_length, logit_length,
                        blank_index=int(blank_index), name=name)
