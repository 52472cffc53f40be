"""Adafactor."""

from __future__ import annotations

from mylib.optimizers.optimizer import Optimizer


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern, 2018), as Keras 3's, through optax's Adafactor
    pieces (``scale_by_factored_rms``, ``clip_by_block_rms``,
    ``scale_by_param_block_rms``). At step ``t = 1, 2, ...``, with
    ``beta = 1 - t**beta_2_decay`` and ``G = g**2 + epsilon_1``:

        rank >= 2:  r = beta * r + (1 - beta) * mean(G, last axis)
                    c = beta * c + (1 - beta) * mean(G, second-to-last axis)
                    v = (r / mean(r)) outer c          (factored: O(rows + cols) memory)
        rank < 2:   v = beta * v + (1 - beta) * G
        u = g / sqrt(v);  u /= max(1, rms(u) / clip_threshold)
        p -= min(lr, 1 / sqrt(t)) * max(epsilon_2, rms(p)) * u

    Slots per variable: ``v_row``, ``v_col`` (factored) or ``v`` (the others hold one
    zero), and the shared ``count`` and ``step``.

    Differences from Keras 3: optax factors the two largest axes of an array of rank
    >= 3, Keras the last two; they are the same axes for matrices and for convolution
    kernels ``[..., in, out]`` whose channel axes are the largest. `relative_step` is
    kept for Keras's config: in Keras 3 (and here) the step is ``min(lr, 1/sqrt(t))``
    whatever its value. ``optax.adafactor`` itself differs more (it factors only axes
    of 128 or more, and its step is the plain rate), so its pieces are used with
    Keras's settings.

    Args:
      learning_rate: float or schedule (default 0.001).
      beta_2_decay: exponent of the second-moment decay, < 0 (default -0.8).
      epsilon_1: added to the squared gradient (default 1e-30).
      epsilon_2: lower bound of the parameter scale ``rms(p)`` (default 1e-3).
      clip_threshold: the update's RMS is clipped to this (default 1.0).
      relative_step: see above (default True).
      **kwargs: the base `Optimizer` arguments (name, clipnorm, weight_decay, ...).
    """

    _kind = "adafactor"

    def __init__(self, learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30,
                 epsilon_2=1e-3, clip_threshold=1.0, relative_step=True, name="Adafactor",
                 **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.beta_2_decay = float(beta_2_decay)
        self.epsilon_1, self.epsilon_2 = float(epsilon_1), float(epsilon_2)
        self.clip_threshold = float(clip_threshold)
        self.relative_step = bool(relative_step)

    def _hparams(self):
        return (("beta_2_decay", self.beta_2_decay), ("epsilon_1", self.epsilon_1),
                ("epsilon_2", self.epsilon_2), ("clip_threshold", self.clip_threshold),
                ("relative_step", self.relative_step))
