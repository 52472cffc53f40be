"""Adam and AdamW."""

from __future__ import annotations

from mylib.optimizers.optimizer import Optimizer


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015) as Keras 3 and TensorFlow 1 compute it::

        alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)
        m += (g - m) * (1 - beta_1);  v += (g**2 - v) * (1 - beta_2)
        (amsgrad: v_max = max(v_max, v), the raw moment, used for v below)
        p -= m * alpha / (sqrt(v) + epsilon)

    epsilon sits on the raw ``sqrt(v)`` ("epsilon hat" in the paper's section 2), not
    on the bias-corrected ``sqrt(v_hat)`` as in ``optax.adam``: the two differ by up to
    100% where gradients are near epsilon (e.g. under a small ``clipnorm``). Written
    as an optax-style transformation (`mylib.core.ops.training_ops`).

    Slots per variable: ``mu`` (first moment), ``nu`` (second moment), ``nu_max``
    (AMSGrad only), and the shared step ``count`` (int32).

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
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019), as Keras 3's:
    ``p -= lr * weight_decay * p`` first, then the `Adam` step (epsilon on the raw
    ``sqrt(v)``, unlike ``optax.adamw``).

    Args:
      learning_rate: float or schedule (default 0.001).
      weight_decay: decay rate (default 0.004, Keras's).
      beta_1, beta_2, epsilon, amsgrad: as `Adam`.
    """

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, name="AdamW", **kwargs):
        super().__init__(learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                         amsgrad=amsgrad, name=name, weight_decay=weight_decay, **kwargs)
