"""Lion."""

from __future__ import annotations

from mylib.optimizers.optimizer import Optimizer


class Lion(Optimizer):
    """Lion, EvoLved Sign Momentum (Chen et al., 2023), as Keras 3's, through
    ``optax.scale_by_lion``:

        p -= lr * sign(beta_1 * m + (1 - beta_1) * g)
        m = beta_2 * m + (1 - beta_2) * g

    Every element moves by exactly ``lr`` (or 0), so Lion wants a rate 3-10x smaller
    than Adam's. Slots per variable: ``mu`` (the momentum) and the shared ``count``.

    Args:
      learning_rate: float or schedule (default 0.001).
      beta_1: weight of the momentum in the step's sign, in (0, 1] (default 0.9).
      beta_2: decay of the momentum (default 0.99).
      **kwargs: the base `Optimizer` arguments (name, clipnorm, weight_decay, ...).

    Raises:
      ValueError: `beta_1` outside (0, 1] (Lion would be sign SGD).
    """

    _kind = "lion"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99, name="Lion", **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        if not 0 < beta_1 <= 1:
            raise ValueError("Argument `beta_1` must be in the (0, 1] range. Otherwise, the "
                             f"optimizer degenerates to SignSGD. Received: beta_1={beta_1}.")
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)

    def _hparams(self):
        return (("beta_1", self.beta_1), ("beta_2", self.beta_2))
