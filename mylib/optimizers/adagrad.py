"""Adagrad."""

from __future__ import annotations

from mylib.optimizers.optimizer import Optimizer


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011) through ``optax.scale_by_rss``:
    ``acc += g**2; p -= lr * g / sqrt(acc + epsilon)`` — as Keras 3 (epsilon inside
    the root). Slot per variable: ``sum_of_squares``.

    Args:
      learning_rate: float or schedule (default 0.001).
      initial_accumulator_value: starting value of the accumulators (> 0).
      epsilon: small constant for numerical stability.
    """

    _kind = "adagrad"

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 name="Adagrad", **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        if initial_accumulator_value < 0:
            raise ValueError("`initial_accumulator_value` must be >= 0. Received: "
                             f"initial_accumulator_value={initial_accumulator_value}")
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)

    def _hparams(self):
        return (("initial_accumulator_value", self.initial_accumulator_value),
                ("epsilon", self.epsilon))
