"""Adam and AdamW."""

from __future__ import annotations

from mylib.optimizers.optimizer import Optimizer


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015) through ``optax.scale_by_adam`` (``scale_by_amsgrad``
    with ``amsgrad=True``).

    Slots per variable: ``mu`` (first moment), ``nu`` (second moment), ``count``.

    Difference from Keras: optax adds `epsilon` to ``sqrt(v_hat)`` (the bias-corrected
    second moment, as in the paper), Keras adds it to ``sqrt(v)`` (an effective epsilon
    of ``epsilon / sqrt(1 - beta_2**t)``, ~3e-6 in the first steps for the default
    ``1e-7``); the updates agree closely unless gradients are tiny (~1e-4) or epsilon is
    large. With ``amsgrad=True`` optax keeps the max of the bias-corrected second moment,
    Keras the max of the raw one (see docs/keras_reference.md).

    Args:
      learning_rate: float or schedule (default 0.001).
      beta_1, beta_2: moment decay rates.
      epsilon: small constant for numerical stability.
      amsgrad: use the AMSGrad variant.
      **kwargs: the base `Optimizer` arguments (name, clipnorm, weight_decay, ...).
    """

    _kind = "adam"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon = float(epsilon)
        self.amsgrad = bool(amsgrad)

    def _hparams(self):
        return (("beta_1", self.beta_1), ("beta_2", self.beta_2), ("epsilon", self.epsilon),
                ("amsgrad", self.amsgrad))


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019), as Keras's and
    ``optax.adamw``: ``p -= lr * (adam_direction + weight_decay * p)``.

    Args:
      learning_rate: float or schedule (default 0.001).
      weight_decay: decay rate (default 0.004, Keras's).
      beta_1, beta_2, epsilon, amsgrad: as `Adam`.
    """

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, name="AdamW", **kwargs):
        super().__init__(learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                         amsgrad=amsgrad, name=name, weight_decay=weight_decay, **kwargs)
