"""Nadam and Adamax, Adam's variants from Kingma & Ba (2015) and Dozat (2016)."""

from __future__ import annotations

from mylib.optimizers.optimizer import Optimizer


class Nadam(Optimizer):
    """Nadam: Adam with Nesterov momentum (Dozat, 2016), as Keras 3's `Nadam`.

    With the momentum schedule ``u_t = beta_1 * (1 - 0.5 * 0.96**t)`` and its running
    product ``U_t = u_1 * ... * u_t``, at step ``t = 1, 2, ...``:

        m = beta_1 * m + (1 - beta_1) * g;  v = beta_2 * v + (1 - beta_2) * g**2
        m_hat = u_{t+1} * m / (1 - U_{t+1}) + (1 - u_t) * g / (1 - U_t)
        v_hat = v / (1 - beta_2**t)
        p -= lr * m_hat / (sqrt(v_hat) + epsilon)

    Slots per variable: ``mu`` (first moment), ``nu`` (second moment), and the shared
    ``count`` and ``u_product``.

    Difference from optax: ``optax.nadam`` (``scale_by_adam(nesterov=True)``) is this
    rule with a constant ``u_t = beta_1``; its first steps are up to ~40% larger than
    Keras's (``u_1 = 0.468`` for ``beta_1 = 0.9``), so mylib runs Keras's rule, written
    as an optax transformation (`mylib.core.ops.training_ops`). Epsilon is added to
    ``sqrt(v_hat)`` in both, unlike Keras's `Adam`.

    Args:
      learning_rate: float or schedule (default 0.001).
      beta_1, beta_2: moment decay rates (default 0.9, 0.999).
      epsilon: small constant for numerical stability (default 1e-7).
      **kwargs: the base `Optimizer` arguments (name, clipnorm, weight_decay, ...).
    """

    _kind = "nadam"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Nadam", **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon = float(epsilon)

    def _hparams(self):
        return (("beta_1", self.beta_1), ("beta_2", self.beta_2), ("epsilon", self.epsilon))


class Adamax(Optimizer):
    """Adamax, Adam under the infinity norm (Kingma & Ba, 2015, section 7.1), as Keras
    3 computes it::

        m += (g - m) * (1 - beta_1);  u = max(beta_2 * u, |g|)
        p -= lr * m / ((1 - beta_1**t) * (u + epsilon))

    Slots per variable: ``mu`` (first moment), ``nu`` (the weighted infinity norm),
    ``count``. ``optax.scale_by_adamax`` keeps epsilon inside the max (``max(beta_2 *
    u, |g| + epsilon)``), which differs where gradients are near epsilon; mylib follows
    Keras with its own optax-style transformation.

    Args:
      learning_rate: float or schedule (default 0.001).
      beta_1: decay of the first moment (default 0.9).
      beta_2: decay of the infinity norm (default 0.999).
      epsilon: small constant for numerical stability (default 1e-7).
      **kwargs: the base `Optimizer` arguments (name, clipnorm, weight_decay, ...).
    """

    _kind = "adamax"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Adamax", **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon = float(epsilon)

    def _hparams(self):
        return (("beta_1", self.beta_1), ("beta_2", self.beta_2), ("epsilon", self.epsilon))
