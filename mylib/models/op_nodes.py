"""Graph ops applied to a functional model's tensors, recorded as nodes of the model.

Keras 3 lets a functional model use any op on its symbolic tensors between layer
calls (``x = x + residual``, ``x = keras.ops.mean(x, axis=1)``, ``x * 0.5``): each op
becomes a node of the model, replayed when the model runs on new tensors (in `fit`,
in `predict`, or when the model is called as a layer). In mylib such ops are plain
graph ops with no layer; `functional_nodes` wraps each chain of them between layer
outputs (or model inputs) into one `TFOpLambda` node, whose call copies the ops onto
its new inputs.
"""

from __future__ import annotations

import re

from mylib.core.graph import Tensor
from mylib.layers.base import Layer, Node, keras_history

# Ops that hold or feed state a copy cannot share: a functional model's op chain may
# read no variable a layer does not own, and take no value from a placeholder.
_REFUSED = {"VarHandleOp": "a variable no layer owns",
            "VariableV2": "a variable no layer owns",
            "Placeholder": "a placeholder that is not one of the model's inputs",
            "PlaceholderWithDefault": "a placeholder that is not one of the model's inputs"}


class TFOpLambda(Layer):
    """The graph ops of a functional model between layer outputs (or model inputs), as
    one layer: calling it on new tensors copies the ops onto them.

    Made by `Model(inputs, outputs)` for each tensor that ops (not a layer) made from
    the model's tensors; users do not build it. Input: the list of tensors the ops
    read (layer outputs or model inputs), in `frontier` order; output: the copy of
    `output` (same dtype; same shape but for dims that depend on the batch).

    Differs from Keras 3: Keras 3 records each op (``Add``, ``Mean``) as its own node
    and leaves it out of `model.layers`; mylib records a chain of ops as one node of
    this class, also left out of `model.layers` (and of `summary`). Saving a model
    that holds one is not supported (`get_config` raises NotImplementedError).
    """

    def __init__(self, ops, frontier, output, **kwargs):
        super().__init__(**kwargs)
        self._template_ops = list(ops)
        self._frontier = list(frontier)
        self._template_output = output
        self.built = True

    def call(self, inputs):
        env = {id(a): b for a, b in zip(self._frontier, inputs)}
        for op in self._template_ops:
            new_inputs = [env.get(id(x), x) for x in op.inputs]
            # Attrs the graph adds (``_class`` colocation) are not the op's own.
            attrs = {k: v for k, v in op.attrs.items() if not k.startswith("_")}
            new = op.op_def.create(new_inputs, attrs, name=_base_name(op.name))
            for a, b in zip(op.outputs, new.outputs):
                env[id(a)] = b
        return env[id(self._template_output)]

    def compute_output_shape(self, input_shape):
        return self._template_output.shape.as_tuple()

    def get_config(self):
        raise NotImplementedError(
            f'Layer "{self.name}" holds graph ops applied to a functional model\'s '
            f"tensors ({', '.join(sorted({op.type for op in self._template_ops}))}); "
            "saving such a model is not supported. Put the ops in a Layer subclass "
            "(or use keras.layers.Add, Multiply, ...) to save it.")


def _base_name(name):
    return re.sub(r"_\d+$", "", name.rsplit("/", 1)[-1])


def wrap_ops(t, input_ids):
    """Records the ops that made tensor `t` from layer outputs or the model's inputs
    (`input_ids`: ids of the model's input tensors) as a `TFOpLambda` node, and sets
    `t`'s Keras history to it. Returns the node, or None when `t` does not depend on
    any layer output or model input (a constant of the model).

    Raises:
      ValueError: the ops read a variable no layer owns, or an unrelated placeholder.
    """
    frontier, template, depends, op_dep = [], [], {}, {}
    refused = []

    def visit(x):
        if id(x) in depends:
            return depends[id(x)]
        if id(x) in input_ids or keras_history(x) is not None:
            frontier.append(x)
            depends[id(x)] = True
            return True
        op = x.op
        if id(op) not in op_dep:
            # Every input is visited (not `any`, which stops early): the copy needs
            # each dependent input's op, and constants are read as they are.
            dep = False
            for i in op.inputs:
                dep = visit(i) or dep
            if op.type in _REFUSED:
                refused.append(op)
            op_dep[id(op)] = dep
            if dep:
                template.append(op)
        depends[id(x)] = op_dep[id(op)]
        return depends[id(x)]

    dep = visit(t)
    if refused:
        op = refused[0]
        raise ValueError(
            f"The functional model's tensor '{t.name}' is computed with {_REFUSED[op.type]} "
            f"('{op.name}'). Only layers and ops applied to the model's inputs and layer "
            "outputs can make its tensors; create the variable in a Layer's `build` "
            "(add_weight), or make the placeholder a keras.Input of the model.")
    if not dep:
        return None
    layer = TFOpLambda(template, frontier, t, name=_base_name(t.op.name).lower())
    node = Node(layer, list(frontier), t, (), {})
    layer._inbound_nodes.append(node)
    t._keras_history = (node, 0)
    return node


def wrap_extra_args(node, input_ids):
    """Wraps the tensors in a node's further arguments (``attention_mask=ops.cast(m,
    "bool")``) that ops made from the model's tensors, so the node's replay takes
    their new values instead of reading the first call's as constants."""
    from mylib.layers.base import flatten

    for x in flatten([list(node.args), node.kwargs]):
        if isinstance(x, Tensor) and keras_history(x) is None and id(x) not in input_ids:
            wrap_ops(x, input_ids)
