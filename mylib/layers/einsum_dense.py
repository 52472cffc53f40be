"""`EinsumDense`: a dense layer whose product is an einsum (Keras 3's layer, used by
transformer blocks to project to ``[batch, seq, heads, head_dim]`` without reshapes)."""

from __future__ import annotations

import re

import numpy as np

from mylib.core.ops import array_ops, linalg_ops, math_ops
from mylib.layers import activations, constraints, initializers, regularizers
from mylib.layers.base import InputSpec, Layer
from mylib.layers.core import refuse_lora_and_quantization


def _analyze_einsum(equation, bias_axes, input_shape, output_shape):
    """Keras's shape analysis: ``(kernel_shape, bias_shape or None, full_output_shape)``
    for an equation ``X,Y->Z``, ``...X,Y->...Z`` or ``X...,Y->Z...``."""
    eq = re.sub(r"\.\.\.", "0", equation)
    left = False
    m = re.match("([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)$", eq)
    if not m:
        m = re.match("0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)$", eq)
        left = bool(m)
    if not m:
        m = re.match("([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0$", eq)
    if not m:
        raise ValueError(f"Invalid einsum equation '{equation}'. Equations must be in the "
                         "form [X],[Y]->[Z], ...[X],[Y]->...[Z], or [X]...,[Y]->[Z]....")
    in_spec, w_spec, out_spec = m.groups()
    input_shape = list(input_shape)
    elided = len(input_shape) - len(in_spec)
    out = [input_shape[0]] + list(output_shape)
    if elided > 0 and left:
        for i in range(1, elided):
            out.insert(1, input_shape[i])
    elif elided > 0:
        out.extend(input_shape[len(input_shape) - elided:])
    if left:
        in_map = {d: i + elided - len(input_shape) for i, d in enumerate(in_spec)}
        out_map = {d: i + elided for i, d in enumerate(out_spec)}
    else:
        in_map = {d: i for i, d in enumerate(in_spec)}
        out_map = {d: i for i, d in enumerate(out_spec)}
    for d in in_spec:
        if d in out_map and out[out_map[d]] is not None and \
                out[out_map[d]] != input_shape[in_map[d]]:
            raise ValueError(f"Input shape and output shape do not match at shared dimension "
                             f"'{d}'. Input shape is {input_shape[in_map[d]]}, and output "
                             f"shape is {out[out_map[d]]}.")
    for d in out_spec:
        if d not in in_spec and d not in w_spec:
            raise ValueError(f"Dimension '{d}' was specified in the output '{out_spec}' but "
                             f"has no corresponding dim in the input spec '{in_spec}' or "
                             f"weight spec '{w_spec}'")
    kernel = []
    for d in w_spec:
        if d in out_map:
            kernel.append(out[out_map[d]])
        elif d in in_map:
            kernel.append(input_shape[in_map[d]])
        else:
            raise ValueError(f"Weight dimension '{d}' did not have a match in either the "
                             f"input spec '{in_spec}' or the output spec '{out_spec}'. For "
                             "this layer, the weight must be fully specified.")
    bias = None
    if bias_axes is not None:
        shift = elided if left else 0
        sizes = {c: out[i + shift] for i, c in enumerate(out_spec)}
        for c in bias_axes:
            if c not in out_spec:
                raise ValueError(f"Bias dimension '{c}' was requested, but is not part of "
                                 f"the output spec '{out_spec}'")
        first = min(out_spec.find(c) for c in bias_axes)
        bias = [sizes[c] if c in bias_axes else 1 for c in out_spec[first:]]
        if not left:
            bias += [1] * max(elided, 0)
    return kernel, bias, out


def _axes_of(equation, kernel_rank):
    """The kernel axes summed with the input (fan in) and those of the output (fan out)."""
    in_spec, w_spec, out_spec = re.match(r"(.*),(.*)->(.*)", equation).groups()
    out_axes = [i for i, d in enumerate(w_spec) if d in out_spec]
    return [i for i in range(kernel_rank) if i not in out_axes], out_axes


class _EinsumFans:
    """A variance-scaling initializer whose fans are the products of the kernel's input
    and output axes (Keras 3's `input_axes` / `output_axes`), not a conv's receptive
    field: the kernel is drawn as ``[fan_in, fan_out]`` (its entries are independent)
    and reshaped."""

    def __init__(self, base, fans):
        self.base, self.fans = base, fans

    def __call__(self, shape, dtype=None):
        return array_ops.reshape(self.base(list(self.fans), dtype=dtype), list(shape))


class EinsumDense(Layer):
    """A dense layer computing ``activation(einsum(equation, inputs, kernel) + bias)``.

    Example: ``EinsumDense("abc,cde->abde", output_shape=(None, 4, 8), bias_axes="de")``
    maps ``[batch, seq, 16]`` to ``[batch, seq, 4, 8]`` with a kernel ``[16, 4, 8]`` and a
    bias ``[4, 8]``.

    Args:
      equation: ``"X,Y->Z"``, ``"...X,Y->...Z"`` or ``"X...,Y->Z..."``; the first operand
        is the input, the second the kernel, whose shape comes from the input and output
        sizes of its letters.
      output_shape: int or tuple: the output shape without the batch axis and the axes
        of ``...``; None entries are taken from the input.
      activation: activation name or callable (default: none).
      bias_axes: None (no bias) or a string of output letters the bias varies along;
        the bias has size 1 on the other output axes after the first of them.
      kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
      activity_regularizer, kernel_constraint, bias_constraint: as `Dense`.

    Input: a float `Tensor` of the rank the equation names; output: ``full output
    shape`` (batch first), the layer's dtype.
    """

    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, lora_rank=None, lora_alpha=None,
                 quantization_config=None, **kwargs):
        super().__init__(**kwargs)
        refuse_lora_and_quantization(self, lora_rank, quantization_config)
        if not isinstance(equation, str):
            raise TypeError(f"`equation` must be a str. Received: equation={equation!r}")
        self.equation = equation
        self.partial_output_shape = ((int(output_shape),) if isinstance(output_shape, int)
                                     else tuple(output_shape))
        self.bias_axes = bias_axes
        self.activation = activations.get(activation)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        kshape, bshape, _ = _analyze_einsum(self.equation, self.bias_axes, input_shape,
                                            self.partial_output_shape)
        if any(d is None for d in kshape):
            raise ValueError(f'Layer "{self.name}": the kernel shape {tuple(kshape)} has '
                             f"unknown sizes; give them in `output_shape` or the input "
                             f"shape. Received: input_shape={input_shape}")
        init = self.kernel_initializer
        if isinstance(init, initializers.VarianceScaling):
            ins, outs = _axes_of(self.equation.replace("...", ""), len(kshape))
            init = _EinsumFans(init, (int(np.prod([kshape[i] for i in ins])),
                                      int(np.prod([kshape[i] for i in outs]))))
        self.kernel = self.add_weight("kernel", list(kshape), init,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = (self.add_weight("bias", list(bshape), self.bias_initializer,
                                     regularizer=self.bias_regularizer,
                                     constraint=self.bias_constraint)
                     if bshape is not None else None)
        self.input_spec = InputSpec(ndim=len(input_shape))

    def call(self, inputs):
        x = inputs if inputs.dtype == self.dtype else math_ops.cast(inputs, self.dtype)
        y = linalg_ops.einsum(self.equation, x, self.kernel)
        if self.bias is not None:
            y = y + self.bias
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        return tuple(_analyze_einsum(self.equation, self.bias_axes, tuple(input_shape),
                                     self.partial_output_shape)[2])

    def get_config(self):
        return {**super().get_config(), "output_shape": self.partial_output_shape,
                "equation": self.equation,
                "activation": activations.serialize(self.activation),
                "bias_axes": self.bias_axes,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}
