"""RMSprop."""

from __future__ import annotations

from mylib.optimizers.optimizer import Optimizer


class RMSprop(Optimizer):
    """RMSprop (Hinton, 2012), as Keras's, through ``optax.scale_by_rms`` (or
    ``scale_by_stddev`` when centered) with ``eps_in_sqrt=True``:

        v = rho * v + (1 - rho) * g**2
        (centered: a = rho * a + (1 - rho) * g; v_eff = v - a**2)
        increment = lr * g / sqrt(v_eff + epsilon)
        momentum: m = momentum * m + increment; p -= m     else: p -= increment

    Slots per variable: ``nu`` (and ``mu`` when centered; ``trace`` with momentum).

    Args:
      learning_rate: float or schedule (default 0.001).
      rho: discount of the squared-gradient average.
      momentum: float >= 0.
      epsilon: small constant for numerical stability.
      centered: normalize by the estimated variance instead of the second moment.
    """

    _kind = "rmsprop"

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, name="RMSprop", **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.rho, self.momentum = float(rho), float(momentum)
        self.epsilon, self.centered = float(epsilon), bool(centered)

    def _hparams(self):
        return (("rho", self.rho), ("momentum", self.momentum), ("epsilon", self.epsilon),
                ("centered", self.centered))
