"""Adadelta."""

from __future__ import annotations

from mylib.optimizers.optimizer import Optimizer


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012), as Keras 3's, through ``optax.scale_by_adadelta``:

        E[g2] = rho * E[g2] + (1 - rho) * g**2
        d = -sqrt(E[dx2] + epsilon) / sqrt(E[g2] + epsilon) * g
        E[dx2] = rho * E[dx2] + (1 - rho) * d**2
        p += lr * d

    The same arithmetic as Keras (the rate scales the step, not the accumulated
    ``E[dx2]``; the paper's rule is ``lr = 1``). Slots per variable: ``e_g`` (squared
    gradients), ``e_x`` (squared steps).

    Args:
      learning_rate: float or schedule (default 0.001, Keras's; 1.0 is the paper's).
      rho: decay of both running averages (default 0.95).
      epsilon: small constant inside both roots (default 1e-7).
      **kwargs: the base `Optimizer` arguments (name, clipnorm, weight_decay, ...).
    """

    _kind = "adadelta"

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name="Adadelta",
                 **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.rho, self.epsilon = float(rho), float(epsilon)

    def _hparams(self):
        return (("rho", self.rho), ("epsilon", self.epsilon))
