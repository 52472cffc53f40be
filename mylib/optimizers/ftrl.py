"""Ftrl."""

from __future__ import annotations

from mylib.optimizers.optimizer import Optimizer


class Ftrl(Optimizer):
    """FTRL-Proximal (McMahan et al., 2013, "Ad Click Prediction: a View from the
    Trenches", Algorithm 1), as Keras 3 writes it, with its L2 shrinkage and `beta`.

    optax has no FTRL (neither in ``optax`` nor ``optax.contrib``); mylib writes Keras's
    rule as an optax transformation (`mylib.core.ops.training_ops`). With
    ``k = -learning_rate_power`` (1/2: the paper's per-coordinate rates):

        g_s = g + 2 * l2_shrinkage_regularization_strength * p
        n_new = n + g**2
        z += g_s - (n_new**k - n**k) / lr * p
        p = (clip(z, -l1, l1) - z) / (n_new**k / lr + 2 * (l2 + beta / (2 * lr)))
        n = n_new

    so ``p = 0`` wherever ``|z| <= l1``: L1 gives exact zeros (sparse models). Only the
    raw gradient enters ``n`` (the shrinkage does not), as Keras. Slots per variable:
    ``accumulator`` (``n``, from `initial_accumulator_value`) and ``linear`` (``z``).
    The parameter is computed in closed form; the op applies it as the update
    ``new - p``, exact to float rounding.

    Args:
      learning_rate: float or schedule, > 0 (default 0.001).
      learning_rate_power: float <= 0 (default -0.5); 0 gives a fixed rate.
      initial_accumulator_value: starting value of ``n``, >= 0 (default 0.1).
      l1_regularization_strength: >= 0 (default 0).
      l2_regularization_strength: >= 0 (default 0); stabilizes, no shrinkage in the
        loss.
      l2_shrinkage_regularization_strength: >= 0 (default 0); the magnitude penalty,
        applied through the gradient.
      beta: float (default 0); adds ``beta / (2 * lr)`` to the L2 strength.
      **kwargs: the base `Optimizer` arguments (name, clipnorm, weight_decay, ...).

    Raises:
      ValueError: a negative strength or accumulator value, or a positive
        `learning_rate_power` (Keras's checks and messages).
    """

    _kind = "ftrl"

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, l2_shrinkage_regularization_strength=0.0,
                 beta=0.0, name="Ftrl", **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        if initial_accumulator_value < 0.0:
            raise ValueError("`initial_accumulator_value` needs to be positive or zero. "
                             f"Received: initial_accumulator_value={initial_accumulator_value}.")
        if learning_rate_power > 0.0:
            raise ValueError("`learning_rate_power` needs to be negative or zero. "
                             f"Received: learning_rate_power={learning_rate_power}.")
        for nm, v in (("l1_regularization_strength", l1_regularization_strength),
                      ("l2_regularization_strength", l2_regularization_strength),
                      ("l2_shrinkage_regularization_strength",
                       l2_shrinkage_regularization_strength)):
            if v < 0.0:
                raise ValueError(f"`{nm}` needs to be positive or zero. Received: {nm}={v}.")
        self.learning_rate_power = float(learning_rate_power)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.l1_regularization_strength = float(l1_regularization_strength)
        self.l2_regularization_strength = float(l2_regularization_strength)
        self.l2_shrinkage_regularization_strength = float(l2_shrinkage_regularization_strength)
        self.beta = float(beta)

    def _hparams(self):
        return (("learning_rate_power", self.learning_rate_power),
                ("initial_accumulator_value", self.initial_accumulator_value),
                ("l1_regularization_strength", self.l1_regularization_strength),
                ("l2_regularization_strength", self.l2_regularization_strength),
                ("l2_shrinkage_regularization_strength",
                 self.l2_shrinkage_regularization_strength),
                ("beta", self.beta))
