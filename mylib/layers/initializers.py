"""Weight initializers (Keras's names and defaults), computed by graph ops.

An initializer is called as ``init(shape, dtype)`` and returns a `Tensor`: random ones
build `mylib.random` ops, so the values are drawn when the variable's initializer runs
in the session. With `seed` set (or a graph-level seed from `ml.set_random_seed`) the
values are the same on every run.
"""

from __future__ import annotations

import math

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.ops import random_ops
from mylib import random
from mylib.core.ops import constant_ops


class Initializer:
    def __init__(self):
        # Explicit so that `Zeros(foo=1)` names `foo` in its TypeError (object's does not).
        pass

    def __call__(self, shape, dtype=None):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `__call__` (abstract in the base class)")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _random():

    return random


def _dt(dtype):
    return _dtypes.as_dtype(dtype or "float32")


class Zeros(Initializer):
    def __call__(self, shape, dtype=None):
        return constant_ops.zeros(list(shape), dtype=_dt(dtype))


class Ones(Initializer):
    def __call__(self, shape, dtype=None):
        return constant_ops.ones(list(shape), dtype=_dt(dtype))


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype=None):
        dt = _dt(dtype)
        v = np.asarray(self.value, dtype=dt.np)
        return constant_ops.constant(np.broadcast_to(v, tuple(shape)).copy(), dtype=dt)

    def get_config(self):
        return {"value": self.value if np.ndim(self.value) == 0 else np.asarray(self.value).tolist()}


class RandomUniform(Initializer):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None):
        return _random().uniform(list(shape), minval=self.minval, maxval=self.maxval,
                                 dtype=_dt(dtype), seed=self.seed)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None):
        return _random().normal(list(shape), mean=self.mean, stddev=self.stddev,
                                dtype=_dt(dtype), seed=self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(RandomNormal):
    """Normal values more than two standard deviations from the mean are redrawn."""

    def __call__(self, shape, dtype=None):
        return _random().truncated_normal(list(shape), mean=self.mean, stddev=self.stddev,
                                          dtype=_dt(dtype), seed=self.seed)


def compute_fans(shape, input_axes=None, output_axes=None):
    """(fan_in, fan_out) as Keras computes them (receptive field for conv kernels), or
    the products of the dims of `input_axes` and `output_axes` when both are given
    (Keras 3.15's form, for kernels such as `EinsumDense`'s)."""
    shape = tuple(shape)
    if input_axes is not None and output_axes is not None:
        return (int(np.prod([shape[a] for a in input_axes])),
                int(np.prod([shape[a] for a in output_axes])))
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    rf = int(np.prod(shape[:-2]))
    return shape[-2] * rf, shape[-1] * rf


class VarianceScaling(Initializer):
    """Draws with variance ``scale / n`` (n = fan_in, fan_out or their mean) from a
    truncated normal, an untruncated normal, or a uniform distribution."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 input_axes=None, output_axes=None):
        if scale <= 0.0:
            raise ValueError(f"`scale` must be positive. Received: scale={scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument: {mode!r}")
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(f"Invalid `distribution` argument: {distribution!r}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.input_axes = None if input_axes is None else [int(a) for a in input_axes]
        self.output_axes = None if output_axes is None else [int(a) for a in output_axes]

    def __call__(self, shape, dtype=None):
        fan_in, fan_out = compute_fans(shape, self.input_axes, self.output_axes)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        dt = _dt(dtype)
        r = _random()
        if self.distribution == "truncated_normal":
            # 0.879... is the stddev of a unit normal truncated to [-2, 2].
            return r.truncated_normal(list(shape), mean=0.0,
                                      stddev=math.sqrt(scale) / 0.87962566103423978,
                                      dtype=dt, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return r.normal(list(shape), mean=0.0, stddev=math.sqrt(scale), dtype=dt,
                            seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return r.uniform(list(shape), minval=-limit, maxval=limit, dtype=dt, seed=self.seed)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "input_axes": self.input_axes,
                "output_axes": self.output_axes}


def _vs(name, scale, mode, distribution):
    def __init__(self, seed=None, input_axes=None, output_axes=None):
        VarianceScaling.__init__(self, scale, mode, distribution, seed, input_axes,
                                 output_axes)

    def get_config(self):
        return {"seed": self.seed, "input_axes": self.input_axes,
                "output_axes": self.output_axes}

    return type(name, (VarianceScaling,), {"__init__": __init__, "get_config": get_config,
                                           "__doc__": f"VarianceScaling({scale}, {mode!r}, "
                                                      f"{distribution!r})."})


GlorotUniform = _vs("GlorotUniform", 1.0, "fan_avg", "uniform")
GlorotNormal = _vs("GlorotNormal", 1.0, "fan_avg", "truncated_normal")
HeUniform = _vs("HeUniform", 2.0, "fan_in", "uniform")
HeNormal = _vs("HeNormal", 2.0, "fan_in", "truncated_normal")
LecunUniform = _vs("LecunUniform", 1.0, "fan_in", "uniform")
LecunNormal = _vs("LecunNormal", 1.0, "fan_in", "truncated_normal")

class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times `gain` (Saxe et al. 2014), as Keras: the QR
    decomposition of a normal matrix of shape ``(max(rows, cols), min(rows, cols))``,
    where ``cols = shape[-1]`` and ``rows`` is the product of the other dims; the
    default `recurrent_initializer` of the recurrent layers."""

    def __init__(self, gain=1.0, seed=None):
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None):
        shape = tuple(int(d) for d in shape)
        if len(shape) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional. "
                             f"Received: shape={shape} of rank {len(shape)}.")
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        a = _random().normal([max(rows, cols), min(rows, cols)], dtype=_dt(dtype),
                             seed=self.seed)
        return random_ops.orthogonalize(a, shape=shape, gain=float(self.gain))

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """`gain` times the identity matrix (ones on the main diagonal of a 2-D shape,
    which need not be square), as Keras's `Identity`.

    Raises:
      ValueError: a shape that is not 2-D.
    """

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None):
        shape = tuple(int(d) for d in shape)
        if len(shape) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices. "
                             f"Received: shape={shape} of rank {len(shape)}.")
        dt = _dt(dtype)
        return constant_ops.constant(float(self.gain) * np.eye(*shape, dtype=dt.np), dtype=dt)

    def get_config(self):
        return {"gain": self.gain}


_CLASSES = {c.__name__: c for c in (Zeros, Ones, Constant, RandomUniform, RandomNormal,
                                    TruncatedNormal, VarianceScaling, GlorotUniform,
                                    GlorotNormal, HeUniform, HeNormal, LecunUniform,
                                    LecunNormal, Orthogonal, Identity)}
_ALIASES = {"zeros": Zeros, "ones": Ones, "constant": Constant, "random_uniform": RandomUniform,
            "random_normal": RandomNormal, "truncated_normal": TruncatedNormal,
            "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform,
            "glorot_normal": GlorotNormal, "he_uniform": HeUniform, "he_normal": HeNormal,
            "lecun_uniform": LecunUniform, "lecun_normal": LecunNormal,
            "uniform": RandomUniform, "normal": RandomNormal, "zero": Zeros, "one": Ones,
            "orthogonal": Orthogonal, "identity": Identity}

# Keras's lower-case names of the classes (``initializers.glorot_uniform(seed=1)``),
# which TensorFlow 1's ``tf.initializers`` has too.
zeros, ones, constant, identity = Zeros, Ones, Constant, Identity
random_uniform, random_normal, truncated_normal = RandomUniform, RandomNormal, TruncatedNormal
variance_scaling, orthogonal = VarianceScaling, Orthogonal
glorot_uniform, glorot_normal, he_uniform, he_normal = (GlorotUniform, GlorotNormal,
                                                        HeUniform, HeNormal)
lecun_uniform, lecun_normal = LecunUniform, LecunNormal
IdentityInitializer, OrthogonalInitializer = Identity, Orthogonal


def global_variables():
    """TensorFlow 1's ``tf.initializers.global_variables()``: the op initializing every
    global variable (`global_variables_initializer`)."""
    from mylib.core.variables import global_variables_initializer

    return global_variables_initializer()


def local_variables():
    """TensorFlow 1's ``tf.initializers.local_variables()``
    (`local_variables_initializer`)."""
    from mylib.core.variables import local_variables_initializer

    return local_variables_initializer()


def variables(var_list, name="init"):
    """TensorFlow 1's ``tf.initializers.variables(var_list)`` (`variables_initializer`)."""
    from mylib.core.variables import variables_initializer

    return variables_initializer(var_list, name=name)


def get(identifier):
    """An initializer from a name (``"glorot_uniform"``), a config dict
    (``{"class_name": ..., "config": ...}``), an `Initializer` or a callable."""
    if identifier is None:
        return None
    if isinstance(identifier, Initializer) or callable(identifier) and \
            not isinstance(identifier, type):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if isinstance(identifier, str):
        cls = _ALIASES.get(identifier) or _CLASSES.get(identifier)
        if cls is None:
            from mylib.layers import registration

            obj = registration.get_registered_object(identifier)
            if obj is not None:
                return obj() if isinstance(obj, type) else obj
            raise ValueError(f"Unknown initializer: '{identifier}'. Known: {sorted(_ALIASES)}")
        return cls()
    if isinstance(identifier, dict):
        from mylib.layers import registration

        return registration.deserialize_object(identifier, {**_ALIASES, **_CLASSES},
                                               "initializer")
    raise TypeError(f"Could not interpret initializer identifier: {identifier!r}")


def deserialize(config, custom_objects=None):
    """The initializer of a `serialize` config (or a name), as `get`."""
    if custom_objects:
        from mylib.layers import registration

        return registration.deserialize_object(config, {**_ALIASES, **_CLASSES,
                                                        **custom_objects}, "initializer")
    return get(config)


def serialize(init):
    """`get`'s config-dict form (``{"class_name", "config"}``, with
    ``"registered_name"`` for a registered class); a registered function's name."""
    from mylib.layers import registration

    return registration.serialize_object(init)
