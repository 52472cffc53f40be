"""`keras.optimizers.schedules`: learning-rate schedules (Keras 3's formulas).

A schedule is a callable of the optimizer step (``iterations``, 0 at the first update)
returning the rate; mylib's optimizers evaluate it inside the compiled update (on a
JAX integer scalar), so the functions here are written with `jax.numpy` and also work
on plain ints (``schedule(1000)`` gives a JAX scalar).
"""

from __future__ import annotations

import math

import jax.numpy as jnp


class LearningRateSchedule:
    """Base class: implement ``__call__(step)`` and `get_config`."""

    def __call__(self, step):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `__call__(step)` (abstract in the base "
            "class)")

    def get_config(self):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `get_config` to be serialized")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _f(step):
    return jnp.asarray(step, dtype=jnp.float32)


class ExponentialDecay(LearningRateSchedule):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)`` (the exponent
    floored with `staircase`)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="ExponentialDecay"):
        if decay_steps <= 0:
            raise ValueError(f"`decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.decay_rate, self.staircase, self.name = decay_rate, staircase, name

    def __call__(self, step):
        p = _f(step) / self.decay_steps
        if self.staircase:
            p = jnp.floor(p)
        return self.initial_learning_rate * jnp.power(self.decay_rate, p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class InverseTimeDecay(LearningRateSchedule):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)``."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="InverseTimeDecay"):
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.decay_rate, self.staircase, self.name = decay_rate, staircase, name

    def __call__(self, step):
        p = _f(step) / self.decay_steps
        if self.staircase:
            p = jnp.floor(p)
        return self.initial_learning_rate / (1 + self.decay_rate * p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[i]`` for ``boundaries[i-1] < step <= boundaries[i]``."""

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(values) != len(boundaries) + 1:
            raise ValueError("The length of `values` must be one more than the length of "
                             f"`boundaries`. Received: boundaries={boundaries}, "
                             f"values={values}")
        self.boundaries, self.values, self.name = list(boundaries), list(values), name

    def __call__(self, step):
        s = jnp.asarray(step)
        idx = jnp.sum(jnp.asarray([s > b for b in self.boundaries], dtype=jnp.int32)) \
            if self.boundaries else 0
        return jnp.asarray(self.values, dtype=jnp.float32)[idx]

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """From `initial_learning_rate` to `end_learning_rate` over `decay_steps` steps as
    ``(1 - step / decay_steps) ** power``; with `cycle` the horizon is extended to the
    next multiple of `decay_steps`."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001,
                 power=1.0, cycle=False, name="PolynomialDecay"):
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.end_learning_rate, self.power, self.cycle, self.name = (
            end_learning_rate, power, cycle, name)

    def __call__(self, step):
        s = _f(step)
        steps = float(self.decay_steps)
        if self.cycle:
            mult = jnp.where(s == 0, 1.0, jnp.ceil(s / steps))
            steps = steps * mult
        else:
            s = jnp.minimum(s, steps)
        frac = (1 - s / steps) ** self.power
        return (self.initial_learning_rate - self.end_learning_rate) * frac + \
            self.end_learning_rate

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Cosine decay (Loshchilov & Hutter, 2017) from `initial_learning_rate` (or, after
    a linear warmup of `warmup_steps`, from `warmup_target`) down to
    ``alpha * initial`` over `decay_steps`."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay",
                 warmup_target=None, warmup_steps=0):
        self.initial_learning_rate, self.decay_steps, self.alpha = (
            initial_learning_rate, decay_steps, alpha)
        self.name, self.warmup_target, self.warmup_steps = name, warmup_target, warmup_steps

    def __call__(self, step):
        s = _f(step)
        top = self.initial_learning_rate if self.warmup_target is None else self.warmup_target
        d = jnp.minimum(jnp.maximum(s - self.warmup_steps, 0.0), self.decay_steps)
        cos = 0.5 * (1 + jnp.cos(math.pi * d / self.decay_steps))
        decayed = top * ((1 - self.alpha) * cos + self.alpha)
        if self.warmup_steps:
            warm = self.initial_learning_rate + (top - self.initial_learning_rate) * (
                s / self.warmup_steps)
            return jnp.where(s < self.warmup_steps, warm, decayed)
        return decayed

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """SGDR (Loshchilov & Hutter, 2017): cosine decay restarted after
    `first_decay_steps`, each period `t_mul` times longer and `m_mul` times lower."""

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0,
                 alpha=0.0, name="SGDRDecay"):
        self.initial_learning_rate, self.first_decay_steps = (initial_learning_rate,
                                                              first_decay_steps)
        self.t_mul, self.m_mul, self.alpha, self.name = t_mul, m_mul, alpha, name

    def __call__(self, step):
        frac = _f(step) / self.first_decay_steps
        if self.t_mul == 1.0:
            i = jnp.floor(frac)
            frac = frac - i
        else:
            i = jnp.floor(jnp.log(1 - frac * (1 - self.t_mul)) / math.log(self.t_mul))
            s = (1 - self.t_mul ** i) / (1 - self.t_mul)
            frac = (frac - s) / self.t_mul ** i
        m = self.m_mul ** i
        cos = 0.5 * m * (1 + jnp.cos(math.pi * frac))
        return self.initial_learning_rate * ((1 - self.alpha) * cos + self.alpha)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self.t_mul,
                "m_mul": self.m_mul, "alpha": self.alpha, "name": self.name}


def serialize(schedule):
    return {"class_name": type(schedule).__name__, "config": schedule.get_config()}


def deserialize(config, custom_objects=None):
    classes = {c.__name__: c for c in (ExponentialDecay, InverseTimeDecay,
                                       PiecewiseConstantDecay, PolynomialDecay, CosineDecay,
                                       CosineDecayRestarts)}
    classes.update(custom_objects or {})
    name = config["class_name"]
    if name not in classes:
        raise ValueError(f"Unknown learning-rate schedule: {name!r}. Known: "
                         f"{sorted(classes)}")
    return classes[name].from_config(config["config"])


__all__ = ["LearningRateSchedule", "ExponentialDecay", "InverseTimeDecay",
           "PiecewiseConstantDecay", "PolynomialDecay", "CosineDecay", "CosineDecayRestarts",
           "serialize", "deserialize"]
