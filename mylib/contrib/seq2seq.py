"""`tf.contrib.seq2seq`: `sequence_loss`, the weighted cross-entropy of a sequence of
logits that char-rnn and translation programs of the TF1 era train with. The decoders and
attention mechanisms of that module do not exist in mylib (see the AttributeError)."""

from mylib.core.graph import name_scope
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, nn_ops, reduction_ops
from mylib.core.ops.cast_ops import cast
from mylib.core.ops.sequence_ops import count_nonzero, div_no_nan

__all__ = ["sequence_loss"]


def sequence_loss(logits, targets, weights, average_across_timesteps=True,
                  average_across_batch=True, sum_over_timesteps=False, sum_over_batch=False,
                  softmax_loss_function=None, name=None):
    """Weighted cross-entropy of `logits` against `targets`, as TF1's.

    With ``l[b, t] = weights[b, t] * xent(logits[b, t], targets[b, t])``:

    - both averages (the default): ``sum(l) / sum(weights)`` (a scalar);
    - ``average_across_timesteps`` only: ``sum_t l / sum_t weights`` [batch];
    - ``average_across_batch`` only: ``sum_b l / sum_b weights`` [time];
    - ``sum_over_*`` instead: the same sums divided by the number of non-zero weights;
    - none: ``l`` [batch, time].

    Every division is 0 where the divisor is 0 (`div_no_nan`).

    Args:
      logits: float `Tensor` [batch, time, num_classes].
      targets: int32/int64 `Tensor` [batch, time].
      weights: float `Tensor` [batch, time] (a mask: 1 for real steps, 0 for padding).
      softmax_loss_function: optional ``fn(labels=, logits=)`` replacing the sparse
        softmax cross-entropy; it gets labels [batch * time] and logits
        [batch * time, num_classes].
      name: optional name scope (default ``sequence_loss``).
    Returns:
      float `Tensor`: a scalar, [batch], [time] or [batch, time] (see above).
    Raises:
      ValueError: a rank is not 3 / 2 / 2, or an average and a sum over the same axis
        are both asked for.
    """
    logits, targets = convert_to_tensor(logits), convert_to_tensor(targets)
    weights = convert_to_tensor(weights, dtype_hint=logits.dtype)
    for t, rank, what in ((logits, 3, "Logits must be a [batch_size x sequence_length x "
                                      "logits] tensor"),
                          (targets, 2, "Targets must be a [batch_size x sequence_length] "
                                       "tensor"),
                          (weights, 2, "Weights must be a [batch_size x sequence_length] "
                                       "tensor")):
        if t.shape.rank != rank:
            raise ValueError(f"{what}. Received shape {t.shape}.")
    if average_across_timesteps and sum_over_timesteps:
        raise ValueError("average_across_timesteps and sum_over_timesteps cannot be set "
                         "to True at same time.")
    if average_across_batch and sum_over_batch:
        raise ValueError("average_across_batch and sum_over_batch cannot be set to True at "
                         "same time.")
    with name_scope(name, "sequence_loss", [logits, targets, weights]):
        num_classes = array_ops.shape(logits)[2]
        logits_flat = array_ops.reshape(logits, array_ops.stack([-1, num_classes]))
        labels = array_ops.reshape(targets, [-1])
        if softmax_loss_function is None:
            crossent = nn_ops.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits_flat)
        else:
            crossent = softmax_loss_function(labels=labels, logits=logits_flat)
        crossent = crossent * array_ops.reshape(weights, [-1])
        if average_across_timesteps and average_across_batch:
            return div_no_nan(reduction_ops.reduce_sum(crossent),
                              reduction_ops.reduce_sum(weights))
        if sum_over_timesteps and sum_over_batch:
            return div_no_nan(reduction_ops.reduce_sum(crossent),
                              cast(count_nonzero(weights), crossent.dtype))
        crossent = array_ops.reshape(crossent, array_ops.shape(logits)[0:2])
        if average_across_timesteps or average_across_batch:
            axis = [0] if average_across_batch else [1]
            return div_no_nan(reduction_ops.reduce_sum(crossent, axis=axis),
                              reduction_ops.reduce_sum(weights, axis=axis))
        if sum_over_timesteps or sum_over_batch:
            axis = [0] if sum_over_batch else [1]
            count = cast(count_nonzero(weights, axis=axis), crossent.dtype)
            return div_no_nan(reduction_ops.reduce_sum(crossent, axis=axis), count)
        return crossent


_INSTEAD = ("BasicDecoder, dynamic_decode, the helpers and the attention mechanisms are not "
            "in mylib; unroll the decoder with tf.nn.dynamic_rnn or tf.while_loop")


def __getattr__(name):
    if name[:1].isupper() or name in ("dynamic_decode", "tile_batch", "gather_tree"):
        raise AttributeError(f"mylib.contrib.seq2seq has no {name}: {_INSTEAD}.")
    raise AttributeError(f"module 'mylib.contrib.seq2seq' has no attribute '{name}'")

