"""TensorFlow 1's learning-rate schedules on the global step (``tf.train.
exponential_decay``, ...): each returns a scalar `Tensor` computed from `global_step`
in graph ops, so it changes as the step advances and can be passed to any optimizer
as its `learning_rate`. Formulas from TensorFlow 1's ``learning_rate_decay.py``.
"""

from __future__ import annotations

import math

from mylib.core.graph import get_default_graph
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, math_ops
from mylib.core.variables import Variable

__all__ = ["exponential_decay", "piecewise_constant", "polynomial_decay",
           "inverse_time_decay", "natural_exp_decay", "cosine_decay", "cosine_decay_restarts",
           "linear_cosine_decay"]


def _step(global_step, what, dtype):
    if global_step is None:
        raise ValueError(f"global_step is required for {what}.")
    t = global_step.value() if isinstance(global_step, Variable) else \
        convert_to_tensor(global_step)
    return math_ops.cast(t, dtype)


def _lr(learning_rate):
    lr = convert_to_tensor(learning_rate)
    if not lr.dtype.is_floating:
        lr = math_ops.cast(lr, "float32")
    return lr


def _scope(name, default):
    return get_default_graph().name_scope(name or default)


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """``learning_rate * decay_rate ^ (global_step / decay_steps)``; with `staircase`
    the exponent is floored (the rate drops every `decay_steps` steps).

    Args:
      learning_rate: float scalar (or `Tensor`), the initial rate.
      global_step: int scalar `Variable`/`Tensor`; must not be None.
      decay_steps: positive number of steps per decay.
      decay_rate: the decay factor.
      staircase: floor ``global_step / decay_steps``.
    Returns:
      A scalar `Tensor` of `learning_rate`'s (float) dtype.
    Raises:
      ValueError: `global_step` is None.
    """
    with _scope(name, "ExponentialDecay"):
        lr = _lr(learning_rate)
        step = _step(global_step, "exponential_decay", lr.dtype)
        p = step / math_ops.cast(convert_to_tensor(decay_steps), lr.dtype)
        if staircase:
            p = math_ops.floor(p)
        return lr * math_ops.pow(math_ops.cast(convert_to_tensor(decay_rate), lr.dtype), p)


def piecewise_constant(x, boundaries, values, name=None):
    """`values[0]` while ``x <= boundaries[0]``, `values[i]` while ``boundaries[i-1] <
    x <= boundaries[i]``, `values[-1]` after ``boundaries[-1]``.

    Args:
      x: scalar `Tensor`/`Variable` (e.g. the global step).
      boundaries: increasing list of numbers, same type as `x`'s values.
      values: one more value than `boundaries`, all of one dtype.
    Returns:
      A scalar `Tensor` of `values`' dtype.
    Raises:
      ValueError: ``len(values) != len(boundaries) + 1``.
    """
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of "
                         f"values; got {len(boundaries)} boundaries and {len(values)} values")
    with _scope(name, "PiecewiseConstant"):
        xt = x.value() if isinstance(x, Variable) else convert_to_tensor(x)
        vals = [convert_to_tensor(v) for v in values]
        out = vals[-1]
        # From the last interval down: x <= b_i picks values[i].
        for b, v in reversed(list(zip(boundaries, vals[:-1]))):
            bt = math_ops.cast(convert_to_tensor(b), xt.dtype)
            out = array_ops.where(math_ops.less_equal(xt, bt), v, out)
        return out


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """``(learning_rate - end) * (1 - step / decay_steps) ^ power + end`` with ``step =
    min(global_step, decay_steps)``; with `cycle`, `decay_steps` is multiplied by
    ``ceil(global_step / decay_steps)`` (1 at step 0) so the decay restarts.

    Returns:
      A scalar float `Tensor`. Raises: ValueError if `global_step` is None.
    """
    with _scope(name, "PolynomialDecay"):
        lr = _lr(learning_rate)
        step = _step(global_step, "polynomial_decay", lr.dtype)
        ds = math_ops.cast(convert_to_tensor(decay_steps), lr.dtype)
        end = math_ops.cast(convert_to_tensor(end_learning_rate), lr.dtype)
        if cycle:
            mult = array_ops.where(math_ops.equal(step, 0.0),
                                   constant_ops.constant(1.0, dtype=lr.dtype),
                                   math_ops.ceil(step / ds))
            ds = ds * mult
        else:
            step = math_ops.minimum(step, ds)
        frac = 1.0 - step / ds
        return (lr - end) * math_ops.pow(frac, math_ops.cast(convert_to_tensor(power),
                                                             lr.dtype)) + end


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)`` (the quotient
    floored with `staircase`). Returns a scalar float `Tensor`."""
    with _scope(name, "NaturalExpDecay"):
        lr = _lr(learning_rate)
        step = _step(global_step, "natural_exp_decay", lr.dtype)
        p = step / math_ops.cast(convert_to_tensor(decay_steps), lr.dtype)
        if staircase:
            p = math_ops.floor(p)
        rate = math_ops.cast(convert_to_tensor(decay_rate), lr.dtype)
        return lr * math_ops.exp(-rate * p)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)`` (the quotient
    floored with `staircase`). Returns a scalar float `Tensor`."""
    with _scope(name, "InverseTimeDecay"):
        lr = _lr(learning_rate)
        step = _step(global_step, "inverse_time_decay", lr.dtype)
        p = step / math_ops.cast(convert_to_tensor(decay_steps), lr.dtype)
        if staircase:
            p = math_ops.floor(p)
        rate = math_ops.cast(convert_to_tensor(decay_rate), lr.dtype)
        return lr / (1.0 + rate * p)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """Cosine decay (Loshchilov & Hutter, SGDR, ICLR 2017): ``learning_rate * ((1 -
    alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha)``.
    Returns a scalar float `Tensor`."""
    with _scope(name, "CosineDecay"):
        lr = _lr(learning_rate)
        step = _step(global_step, "cosine_decay", lr.dtype)
        ds = math_ops.cast(convert_to_tensor(decay_steps), lr.dtype)
        step = math_ops.minimum(step, ds)
        cosine = 0.5 * (1.0 + math_ops.cos(math.pi * step / ds))
        return lr * ((1.0 - alpha) * cosine + alpha)


def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0,
                        beta=0.001, name=None):
    """Linear cosine decay (Bello et al., 2017), without noise: ``learning_rate *
    ((alpha + linear) * cosine + beta)`` with ``linear = (decay_steps - step) /
    decay_steps`` and ``cosine = 0.5 (1 + cos(2 pi num_periods step / decay_steps))``,
    ``step = min(global_step, decay_steps)``."""
    with _scope(name, "LinearCosineDecay"):
        lr = _lr(learning_rate)
        step = _step(global_step, "linear_cosine_decay", lr.dtype)
        ds = math_ops.cast(convert_to_tensor(decay_steps), lr.dtype)
        step = math_ops.minimum(step, ds)
        linear = (ds - step) / ds
        cosine = 0.5 * (1.0 + math_ops.cos(math.pi * 2.0 * num_periods * step / ds))
        return lr * ((alpha + linear) * cosine + beta)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0,
                          m_mul=1.0, alpha=0.0, name=None):
    """Cosine decay with warm restarts (SGDR): periods of `first_decay_steps`, each
    `t_mul` times longer than the last, the peak scaled by `m_mul` at each restart.
    Returns a scalar float `Tensor` (TensorFlow 1's formula)."""
    with _scope(name, "SGDRDecay"):
        lr = _lr(learning_rate)
        step = _step(global_step, "cosine_decay_restarts", lr.dtype)
        frac = step / math_ops.cast(convert_to_tensor(first_decay_steps), lr.dtype)
        if t_mul == 1.0:
            i_restart = math_ops.floor(frac)
            frac = frac - i_restart
        else:
            i_restart = math_ops.floor(
                math_ops.log(1.0 - frac * (1.0 - t_mul)) / math.log(t_mul))
            sum_r = (1.0 - math_ops.pow(constant_ops.constant(t_mul, dtype=lr.dtype),
                                        i_restart)) / (1.0 - t_mul)
            frac = (frac - sum_r) / math_ops.pow(constant_ops.constant(t_mul, dtype=lr.dtype),
                                                 i_restart)
        m_fac = math_ops.pow(constant_ops.constant(m_mul, dtype=lr.dtype), i_restart)
        cosine = 0.5 * m_fac * (1.0 + math_ops.cos(math.pi * frac))
        return lr * ((1.0 - alpha) * cosine + alpha)
