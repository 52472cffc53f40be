"""Stochastic gradient descent, with optional (Nesterov) momentum."""

from __future__ import annotations

from mylib.optimizers.optimizer import Optimizer


class SGD(Optimizer):
    """Gradient descent with momentum, as Keras's `SGD`.

    ``m = momentum * m - lr * g; p += m`` (Nesterov: ``p += momentum * m - lr * g``);
    without momentum ``p -= lr * g`` and no slot. In optax terms: the learning-rate
    scale followed by ``optax.trace(momentum, nesterov)`` — the rate sits inside the
    velocity as in Keras, so a changing rate behaves as Keras's (``optax.sgd`` scales
    after the trace, which only agrees for a constant rate).

    Args:
      learning_rate: float or schedule (default 0.01).
      momentum: float >= 0 (default 0).
      nesterov: use Nesterov momentum.
      **kwargs: the base `Optimizer` arguments (name, clipnorm, ...).
    """

    _kind = "sgd"

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        if not 0 <= momentum <= 1:
            raise ValueError(f"`momentum` must be in [0, 1]. Received: momentum={momentum}")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def _hparams(self):
        return (("momentum", self.momentum), ("nesterov", self.nesterov))

    def _sparse_rule(self, var):
        # Plain SGD with a constant-or-variable rate: p[rows] -= lr * g[rows] is the
        # whole update. Momentum, decay, clipping and constraints touch every row.
        return (self.momentum == 0 and self.weight_decay is None and self.clipnorm is None
                and self.clipvalue is None and self.global_clipnorm is None
                and self._lr_var is not None and getattr(var, "constraint", None) is None
                and var.dtype.is_floating)

    def _apply_sparse(self, grad, var):
        """``var[indices] -= lr * values`` as one `ResourceScatterAdd` (duplicate indices
        add up, as the dense gradient would)."""
        from mylib.core.gradients import IndexedSlices
        from mylib.core.ops import math_ops

        lr = math_ops.cast(self._lr_var.value(), var.dtype)
        values = math_ops.cast(grad.values, var.dtype)
        return var.scatter_add(IndexedSlices(-lr * values, grad.indices, grad.dense_shape))
