"""`tf.contrib.legacy_seq2seq`: the per-step sequence losses of the PTB language model
and char-rnn programs (`sequence_loss_by_example`, `sequence_loss`), over Python lists of
per-step tensors, as TF1's. The legacy seq2seq model builders (`embedding_rnn_seq2seq`,
...) are not in mylib."""

from mylib.core.graph import name_scope
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, math_ops, nn_ops, reduction_ops
from mylib.core.ops.cast_ops import cast

__all__ = ["sequence_loss_by_example", "sequence_loss"]


def sequence_loss_by_example(logits, targets, weights, average_across_timesteps=True,
                             softmax_loss_function=None, name=None):
    """Weighted cross-entropy per example, summed over the steps of a list of steps.

    ``log_perps = sum_t weights[t] * xent(logits[t], targets[t])``, divided by
    ``sum_t weights[t] + 1e-12`` when `average_across_timesteps` (TF1's guard against
    all-zero weights).

    Args:
      logits: list of float `Tensor`s [batch, num_classes], one per step.
      targets: list of int `Tensor`s [batch] (any shape holding batch elements is
        flattened).
      weights: list of float `Tensor`s [batch].
      softmax_loss_function: optional ``fn(labels=, logits=)`` replacing the sparse
        softmax cross-entropy.
    Returns:
      float `Tensor` [batch].
    Raises:
      ValueError: the three lists differ in length.
    """
    if len(targets) != len(logits) or len(weights) != len(logits):
        raise ValueError("Lengths of logits, weights, and targets must be the same "
                         f"{len(logits)}, {len(weights)}, {len(targets)}.")
    with name_scope(name, "sequence_loss_by_example",
                    list(logits) + list(targets) + list(weights)):
        log_perp_list = []
        for logit, target, weight in zip(logits, targets, weights):
            logit = convert_to_tensor(logit)
            weight = convert_to_tensor(weight, dtype_hint=logit.dtype)
            if softmax_loss_function is None:
                target = array_ops.reshape(convert_to_tensor(target), [-1])
                crossent = nn_ops.sparse_softmax_cross_entropy_with_logits(
                    labels=target, logits=logit)
            else:
                crossent = softmax_loss_function(labels=target, logits=logit)
            log_perp_list.append(crossent * weight)
        log_perps = math_ops.add_n(log_perp_list)
        if average_across_timesteps:
            total_size = math_ops.add_n([convert_to_tensor(w, dtype_hint=log_perps.dtype)
                                         for w in weights]) + 1e-12
            log_perps = log_perps / total_size
    return log_perps


def sequence_loss(logits, targets, weights, average_across_timesteps=True,
                  average_across_batch=True, softmax_loss_function=None, name=None):
    """The sum over the batch of `sequence_loss_by_example`, divided by the batch size
    when `average_across_batch` (the batch size of ``targets[0]``).

    Returns:
      float scalar `Tensor`.
    Raises:
      ValueError: the three lists differ in length.
    """
    with name_scope(name, "sequence_loss", list(logits) + list(targets) + list(weights)):
        cost = reduction_ops.reduce_sum(sequence_loss_by_example(
            logits, targets, weights, average_across_timesteps=average_across_timesteps,
            softmax_loss_function=softmax_loss_function))
        if average_across_batch:
            batch_size = array_ops.shape(convert_to_tensor(targets[0]))[0]
            return cost / cast(batch_size, cost.dtype)
        return cost
