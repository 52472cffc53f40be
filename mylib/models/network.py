"""Model topologies: functional `Model(inputs, outputs)`, `Sequential`, subclassed.

`Model` (in `training.py`) holds compile/fit/evaluate/predict; this file holds how a
model turns inputs into outputs: the functional DAG of layer calls (nodes), replayed
on new tensors; the `Sequential` stack; and the deferred build of models whose input
shape is known only from data.
"""

from __future__ import annotations

from mylib.core.graph import Tensor
from mylib.layers.base import (InputLayer, Layer, _shape_tuple, flatten, keras_history,
                               pack_like)
from mylib.models.op_nodes import TFOpLambda, wrap_extra_args, wrap_ops


def functional_nodes(inputs, outputs):
    """The nodes between `inputs` and `outputs` (flat lists of tensors), in an order
    where each node comes after the nodes producing its inputs (the tensors of its
    first argument and those of its other arguments, such as ``initial_state=``).

    Raises:
      ValueError: an output does not depend on the inputs only ("Graph disconnected").
    """
    input_ids = {id(t) for t in inputs}
    order, done, visiting = [], set(), set()
    reached = []

    def visit(t, consumer):
        if id(t) in input_ids:
            return
        h = keras_history(t)
        if h is None and isinstance(t, Tensor) and wrap_ops(t, input_ids) is not None:
            h = keras_history(t)  # ops on the model's tensors (x + residual): one node
        if h is None:
            raise ValueError(
                f"Output tensors of a functional Model must come from layers (ml.layers) "
                f"applied to the model's inputs. Tensor '{t.name}' (used by "
                f"{consumer}) was not produced by a layer.")
        node = h[0]
        if isinstance(node.layer, InputLayer):
            raise ValueError(
                f"Graph disconnected: cannot obtain value for tensor '{t.name}' at layer "
                f'"{consumer}". It is the input "{node.layer.name}", which is not among the '
                f"model's inputs. The following previous layers were accessed without "
                f"issue: {reached}")
        if id(node) in done:
            return
        if id(node) in visiting:
            raise ValueError("the layer graph has a cycle")
        visiting.add(id(node))
        wrap_extra_args(node, input_ids)
        for x in node.input_tensors:
            visit(x, node.layer.name)
        visiting.discard(id(node))
        done.add(id(node))
        order.append(node)
        reached.append(node.layer.name)

    for t in outputs:
        visit(t, "<model output>")
    return order


def layers_by_depth(inputs, outputs):
    """The layers of the functional graph from `inputs` to `outputs` (flat lists of
    tensors) in Keras's order, which `layers`, `weights` and `get_weights` follow:
    by depth, the largest number of layer calls between a layer and an output first
    (the inputs' layers), then, at equal depth, in the order a depth-first walk from
    the outputs (each output in turn, each call's inputs in order) first meets them.
    Inputs that no output uses come last. Call `functional_nodes` first: it checks
    the graph."""
    input_ids = {id(t) for t in inputs}
    first_seen, post, done = {}, [], set()

    def visit(t):
        h = keras_history(t)
        if h is None or id(h[0]) in done:
            return
        node = h[0]
        is_input = isinstance(node.layer, InputLayer)
        if id(t) in input_ids and not is_input:  # an intermediate tensor as an input
            done.add(id(node))
            return
        first_seen.setdefault(id(node.layer), (len(first_seen), node.layer))
        if not is_input:
            for x in node.input_tensors:
                visit(x)
        done.add(id(node))
        post.append(node)

    for t in outputs:
        visit(t)
    in_graph = {id(n) for n in post}
    node_depth, layer_depth = {}, {}
    for node in reversed(post):
        d = max(node_depth.get(id(node), 0), layer_depth.get(id(node.layer), 0))
        node_depth[id(node)] = layer_depth[id(node.layer)] = d
        if isinstance(node.layer, InputLayer):
            continue
        # A chain of ops is as deep as Keras 3's op nodes would be, from each input.
        steps = node.layer.op_depths() if isinstance(node.layer, TFOpLambda) else None
        for i, x in enumerate(node.input_tensors):
            h = keras_history(x)
            if h is not None and id(h[0]) in in_graph:
                step = steps[i] if steps is not None and i < len(steps) else 1
                node_depth[id(h[0])] = max(d + step, node_depth.get(id(h[0]), 0))
    for t in inputs:  # inputs no output uses: depth 0, before the rest at depth 0
        h = keras_history(t)
        if h is not None and isinstance(h[0].layer, InputLayer) and \
                id(h[0].layer) not in layer_depth:
            layer_depth[id(h[0].layer)] = 0
            first_seen[id(h[0].layer)] = (-1, h[0].layer)
    order = sorted(first_seen.items(), key=lambda kv: (-layer_depth[kv[0]], kv[1][0]))
    # Ops between layers are nodes of the model but not among its layers (Keras 3).
    return [layer for _, (_, layer) in order if not isinstance(layer, TFOpLambda)]


def replay(nodes, inputs, new_inputs, outputs, training):
    """Applies the layers of `nodes` to `new_inputs` (in place of `inputs`), with the
    tensors of each call's keyword arguments replaced too; returns the tensors that
    correspond to `outputs`. An explicit ``training=`` given when a layer
    was called wins over `training` (Keras's rule)."""
    env = {id(a): b for a, b in zip(inputs, new_inputs)}
    for node in nodes:
        # Tensors in the call's other arguments (an RNN's initial_state=[h, c]) are
        # the node's inputs too: replaced by their new counterparts.
        args, extra, kwargs = node.map_call(lambda t: env[id(t)])
        if training is not None:
            kwargs.setdefault("training", training)
        out = node.layer(args, *extra, **kwargs)
        for t, o in zip(node.output_tensors, flatten(out)):
            env[id(t)] = o
    return [env[id(t)] for t in outputs]


def _nested_shapes(struct):
    """The shape tuples (None for unknown dims) of the tensors in `struct`, nested as
    it is."""
    shapes = [_shape_tuple(t) for t in flatten(struct)]
    return shapes[0] if isinstance(struct, Tensor) else pack_like(struct, shapes)


class GraphNetworkMixin:
    """What a functional model needs: `_init_graph_network` and `_run_graph`."""

    def _init_graph_network(self, inputs, outputs):
        for what, s in (("inputs", inputs), ("outputs", outputs)):
            flat = flatten(s)
            if not flat or not all(isinstance(t, Tensor) for t in flat):
                raise ValueError(f"`{what}` of a functional Model must be symbolic tensors "
                                 f"(from ml.layers.Input and layer calls). Received: {s!r}")
        self._nested_inputs = inputs
        self._nested_outputs = outputs
        self.inputs = flatten(inputs)
        self.outputs = flatten(outputs)
        graphs = {t.graph for t in self.inputs + self.outputs}
        if len(graphs) != 1:
            raise ValueError("All inputs and outputs of a Model must be in one graph.")
        self._nodes = functional_nodes(self.inputs, self.outputs)
        self._layers = layers_by_depth(self.inputs, self.outputs)
        self._is_graph_network = True
        self.built = True
        self._set_io_names()

    def _set_io_names(self):
        # Keras names inputs and outputs by their layers (an `Input(name="thal")` is fed as
        # "thal" even where the graph already held an op of that name and so called the
        # placeholder "thal_1"); a tensor with no layer falls back to its op's name.
        if isinstance(self._nested_inputs, dict):
            self.input_names = list(sorted(self._nested_inputs))
        else:
            self.input_names = _layer_names(self.inputs)
        if isinstance(self._nested_outputs, dict):
            self.output_names = list(sorted(self._nested_outputs))
        else:
            self.output_names = _layer_names(self.outputs)

    # Keras's `model.input` / `output` / `input_shape` / `output_shape` of a built graph
    # model are those of its own inputs and outputs (nested as given), not of the first
    # call of the model as a layer; a model never built falls back to the layer's.
    def _own_io(self, which):
        flat = getattr(self, which, None)
        if not flat:
            return None
        return getattr(self, f"_nested_{which}", None)

    @property
    def input(self):
        own = self._own_io("inputs")
        return own if own is not None else super().input

    @property
    def output(self):
        own = self._own_io("outputs")
        return own if own is not None else super().output

    @property
    def input_shape(self):
        own = self._own_io("inputs")
        return _nested_shapes(own) if own is not None else super().input_shape

    @property
    def output_shape(self):
        own = self._own_io("outputs")
        return _nested_shapes(own) if own is not None else super().output_shape

    def _run_graph(self, inputs, training=None):
        flat = flatten(inputs)
        if len(flat) != len(self.inputs):
            raise ValueError(f'Model "{self.name}" expects {len(self.inputs)} input(s), but '
                             f"it received {len(flat)} input tensors.")
        if training is None and all(a is b for a, b in zip(flat, self.inputs)):
            return self._nested_outputs
        outs = replay(self._nodes, self.inputs, flat, self.outputs, training)
        return pack_like(self._nested_outputs, outs)


def sequential_layers(model):
    return [l for l in model._layers if not isinstance(l, InputLayer)]


def check_layer(layer):
    if not isinstance(layer, Layer):
        raise TypeError(f"The added layer must be an instance of class Layer. "
                        f"Received: layer={layer!r} of type {type(layer)}.")


def _layer_names(tensors):
    """The names of the layers that made `tensors` (the op's name where none did), made
    unique by a `_1`, `_2` suffix in order."""
    names = []
    for t in tensors:
        h = keras_history(t)
        n = h[0].layer.name if h is not None else t.op.name
        base, i = n, 1
        while n in names:
            n, i = f"{base}_{i}", i + 1
        names.append(n)
    return names
