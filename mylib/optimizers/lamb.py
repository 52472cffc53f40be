"""Lamb."""

from __future__ import annotations

from mylib.optimizers.optimizer import Optimizer


class Lamb(Optimizer):
    """LAMB, layer-wise adaptive moments (You et al., 2020), as Keras 3's, through
    ``optax.scale_by_adam`` and ``optax.scale_by_trust_ratio``:

        u = m_hat / (sqrt(v_hat) + epsilon)          (Adam's bias-corrected direction)
        ratio = ||p|| / ||u||   (1 where either norm is 0), per variable
        p -= lr * ratio * u

    Slots per variable: ``mu``, ``nu`` and the shared ``count``.

    Epsilon is added to ``sqrt(v_hat)`` here and in Keras 3's Lamb (unlike Keras's
    `Adam`), so the two agree. With `weight_decay`, the decay is decoupled and applied
    before the update, outside the trust ratio, as Keras 3 does; ``optax.lamb`` (and the
    paper) put it inside the ratio instead.

    Args:
      learning_rate: float or schedule (default 0.001).
      beta_1, beta_2: moment decay rates (default 0.9, 0.999).
      epsilon: small constant for numerical stability (default 1e-7).
      **kwargs: the base `Optimizer` arguments (name, clipnorm, weight_decay, ...).
    """

    _kind = "lamb"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Lamb", **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon = float(epsilon)

    def _hparams(self):
        return (("beta_1", self.beta_1), ("beta_2", self.beta_2), ("epsilon", self.epsilon))
