"""Core layers: `Dense`, `Activation`, `Dropout`, `Flatten`, `Reshape`, `Masking`."""

from __future__ import annotations

import numpy as np

from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops
from mylib.layers import activations, constraints, initializers, regularizers
from mylib.layers.base import InputSpec, Layer
from mylib import nn


def _bias_add(x, b):

    fn = getattr(nn, "bias_add", None)
    return fn(x, b) if fn is not None else x + b


def refuse_lora_and_quantization(layer, lora_rank, quantization_config):
    """Keras 3's LoRA (``lora_rank``) and quantized weights (``quantization_config``) are
    not implemented: None (their default, what Keras's configs hold) is accepted, any
    other value raises NotImplementedError naming the layer."""
    for what, v in (("lora_rank", lora_rank), ("quantization_config", quantization_config)):
        if v is not None:
            raise NotImplementedError(
                f'Layer "{layer.name}" ({type(layer).__name__}): `{what}` is not supported '
                f"(Keras 3's LoRA and quantized layers are not implemented). Received: "
                f"{what}={v!r}")


class Dense(Layer):
    """Densely connected layer: ``activation(inputs @ kernel + bias)``.

    Input shape ``[batch, ..., in_features]``; output shape ``[batch, ..., units]``.
    The kernel has shape ``[in_features, units]``.
    """

    supports_masking = True  # masks pass through, as in Keras

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 lora_rank=None, lora_alpha=None, quantization_config=None, **kwargs):
        super().__init__(**kwargs)
        refuse_lora_and_quantization(self, lora_rank, quantization_config)
        if not isinstance(units, (int, np.integer)) or isinstance(units, bool) or units <= 0:
            raise ValueError(f"`units` must be a positive int. Received: units={units!r}")
        self.units, self.use_bias = int(units), bool(use_bias)
        self.activation = activations.get(activation)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape):
        last = input_shape[-1]
        if last is None:
            raise ValueError(f'Layer "{self.name}": the last dimension of the input must be '
                             f"known to build a Dense layer. Received: input_shape={input_shape}")
        self.kernel = self.add_weight("kernel", [last, self.units], self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = (self.add_weight("bias", [self.units], self.bias_initializer,
                                     regularizer=self.bias_regularizer,
                                     constraint=self.bias_constraint)
                     if self.use_bias else None)
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last})

    def call(self, inputs):
        if inputs.dtype != self.dtype:
            inputs = math_ops.cast(inputs, self.dtype)
        outputs = math_ops.matmul(inputs, self.kernel)
        if self.bias is not None:
            outputs = _bias_add(outputs, self.bias)
        return self.activation(outputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}


class Activation(Layer):
    """Applies an activation function (a name or a callable) element-wise."""

    supports_masking = True  # masks pass through, as in Keras

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


class Dropout(Layer):
    """Sets a fraction `rate` of inputs to 0 in training and scales the rest by
    ``1 / (1 - rate)`` (inverted dropout); the identity at inference.

    `training` is a Python bool fixed when the graph is built: `fit` builds its step with
    ``training=True``; `predict`, `evaluate` and calls with ``training=None`` build no
    dropout ops at all.

    Args:
      rate: fraction of units to drop, in [0, 1).
      noise_shape: shape of the keep mask, broadcast against the input (`None` entries
        take the input's size), e.g. ``(None, 1, features)`` to drop whole features.
      seed: op-level seed for a deterministic mask sequence.
    """

    supports_masking = True  # masks pass through, as in Keras

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float "
                             f"value between 0 and 1. Received: rate={rate}")
        self.rate, self.noise_shape, self.seed = float(rate), noise_shape, seed

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        return self._drop(inputs, self.rate)

    def _drop(self, inputs, rate):
        noise_shape = None
        if self.noise_shape is not None:
            shape = inputs.shape.as_list()
            noise_shape = [s if n is None else n for n, s in zip(self.noise_shape, shape)]
            if any(d is None for d in noise_shape):
                noise_shape = [shape[i] if d is None else d for i, d in enumerate(noise_shape)]
                noise_shape = _dynamic_shape(inputs, noise_shape)
        return nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=self.seed)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


def _dynamic_shape(x, dims):
    """A shape tensor: static entries of `dims`, the runtime size of `x` for None."""
    if all(d is not None for d in dims):
        return dims
    s = array_ops.shape(x)
    parts = [s[i:i + 1] if d is None else constant_ops.constant([d], dtype="int32")
             for i, d in enumerate(dims)]
    return array_ops.concat(parts, axis=0)


class Flatten(Layer):
    """Flattens each sample: ``[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]``."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        shape = inputs.shape.as_list()
        if len(shape) == 1:
            return array_ops.expand_dims(inputs, 1)
        if self.data_format == "channels_first" and len(shape) > 2:
            inputs = array_ops.transpose(inputs, [0] + list(range(2, len(shape))) + [1])
            shape = inputs.shape.as_list()
        rest = shape[1:]
        if all(d is not None for d in rest):
            return array_ops.reshape(inputs, [-1, int(np.prod(rest))])
        if shape[0] is not None:
            return array_ops.reshape(inputs, [shape[0], -1])
        raise ValueError(f'Layer "{self.name}": cannot flatten an input whose batch and '
                         f"feature sizes are both unknown. Received: input shape {tuple(shape)}")

    def compute_output_shape(self, input_shape):
        rest = input_shape[1:]
        n = None if any(d is None for d in rest) else int(np.prod(rest))
        return (input_shape[0], n)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class Reshape(Layer):
    """Reshapes each sample to `target_shape` (the batch dimension is kept; one entry
    may be -1)."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if self.target_shape.count(-1) > 1:
            raise ValueError("There can only be one unknown dimension in `target_shape`. "
                             f"Received: target_shape={self.target_shape}")

    def compute_output_shape(self, input_shape):
        rest = input_shape[1:]
        tgt = list(self.target_shape)
        if -1 in tgt and all(d is not None for d in rest):
            known = int(np.prod([d for d in tgt if d != -1]))
            total = int(np.prod(rest))
            if known == 0 or total % known:
                raise ValueError(f'Layer "{self.name}": total size of new array must be '
                                 f"unchanged, input_shape = {tuple(rest)}, output_shape = "
                                 f"{self.target_shape}")
            tgt[tgt.index(-1)] = total // known
        elif -1 not in tgt and all(d is not None for d in rest) and \
                int(np.prod(rest)) != int(np.prod(tgt)):
            raise ValueError(f'Layer "{self.name}": total size of new array must be unchanged, '
                             f"input_shape = {tuple(rest)}, output_shape = {self.target_shape}")
        return (input_shape[0],) + tuple(tgt)

    def call(self, inputs):
        out = self.compute_output_shape(tuple(inputs.shape.as_list()))
        if -1 not in out[1:]:
            return array_ops.reshape(inputs, [-1] + list(out[1:]))
        b = inputs.shape.as_list()[0]
        if b is not None:
            return array_ops.reshape(inputs, [b] + list(out[1:]))
        return array_ops.reshape(inputs, _dynamic_shape(inputs, [None] + list(out[1:])))

    def get_config(self):
        return {**super().get_config(), "target_shape": self.target_shape}


class Masking(Layer):
    """Masks timesteps whose features all equal `mask_value` (Keras 3's `Masking`).

    For inputs ``[batch, time, features]`` the mask is ``any(inputs != mask_value,
    axis=-1)`` (``[batch, time]``), which mask-aware layers after it (recurrent layers,
    attention) consume; the outputs are the inputs with masked timesteps set to 0.
    """

    supports_masking = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value

    def _keep(self, inputs, keepdims):
        value = constant_ops.constant(self.mask_value, dtype=inputs.dtype)
        return reduction_ops.reduce_any(math_ops.not_equal(inputs, value), axis=-1,
                                        keepdims=keepdims)

    def compute_mask(self, inputs, mask=None):
        return self._keep(inputs, keepdims=False)

    def call(self, inputs):
        return inputs * math_ops.cast(self._keep(inputs, keepdims=True), inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}
