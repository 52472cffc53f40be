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

    Saved (`get_config`) as plain data, never as code: ``graph`` is the ops as a graph
    fragment in `GraphDef`'s text form (see `mylib.core.graph_io`), with one
    ``Placeholder`` per input (named in ``inputs``, in order) and the ops reading
    constants (the scalars of ``x * 0.5``) included; ``output`` names the result
    (``"op:0"``). `from_config` imports the fragment with `import_graph_def`'s checks
    (only registered op types; host ops, variables and other placeholders refused)
    into a graph of its own and replays it as a live node does.

    Differs from Keras 3: Keras 3 records each op (``Add``, ``Mean``) as its own node
    and leaves it out of `model.layers`; mylib records a chain of ops as one node of
    this class, also left out of `model.layers` (and of `summary`). Keras 3's configs
    with op entries load in mylib (each op is rebuilt with `mylib.keras.ops`), but
    mylib writes its own form, which Keras does not read. Ops that hold function
    graphs (`cond`, `while_loop` on the model's tensors) cannot be saved
    (NotImplementedError).
    """

    def __init__(self, ops, frontier, output, **kwargs):
        super().__init__(**kwargs)
        self._template_ops = list(ops)
        self._frontier = list(frontier)
        self._template_output = output
        self._fragment = None  # the config's graph tree, for a layer made by from_config
        self.built = True

    def call(self, inputs):
        inputs = inputs if isinstance(inputs, (list, tuple)) else [inputs]
        env = {id(a): b for a, b in zip(self._frontier, inputs)}
        graph = inputs[0].graph if inputs else None
        for op in self._template_ops:
            new_inputs = [env.get(id(x), x) for x in op.inputs]
            # Attrs the graph adds (``_class`` colocation) are not the op's own.
            attrs = {k: v for k, v in op.attrs.items() if not k.startswith("_")}
            new = op.op_def.create(new_inputs, attrs, name=_base_name(op.name),
                                   graph=graph)
            for a, b in zip(op.outputs, new.outputs):
                env[id(a)] = b
        return env[id(self._template_output)]

    def op_depths(self):
        """For each input, the largest number of ops between it and the output: the
        depth Keras 3 gives this chain, where each op is a node of its own (it orders
        `model.layers`, hence the weights, by such depths)."""
        longest = {}  # id(tensor) -> ops on the longest path from it to the output
        longest[id(self._template_output)] = 0
        for op in reversed(self._template_ops):
            d = max((longest.get(id(t), -1) for t in op.outputs), default=-1)
            if d < 0:
                continue
            for x in op.inputs:
                longest[id(x)] = max(longest.get(id(x), 0), d + 1)
        return [longest.get(id(t), 1) for t in self._frontier]

    def compute_output_shape(self, input_shape):
        return self._template_output.shape.as_tuple()

    def get_config(self):
        cfg = super().get_config()
        if self._fragment is not None:
            cfg.update(self._fragment)
            return cfg
        from mylib.core.func_graph import function_refs
        from mylib.core.graph_io import GraphDef, NodeDef, _op_nodes, _tensor_ref

        ops = _ancestors(self._template_output, self._frontier)
        for op in ops:
            if function_refs(op.type, op.attrs):
                raise NotImplementedError(
                    f"Cannot save the ops between layers of {self.name!r}: {op.type} "
                    f"'{op.name}' holds function graphs (control flow on the model's "
                    "tensors). Put the control flow in a Layer subclass to save it.")
        names = {op.name for op in ops}
        inputs, refs = [], {}
        for i, t in enumerate(self._frontier):
            n = f"input_{i}"
            while n in names:
                n = "_" + n
            names.add(n)
            inputs.append(NodeDef(n, "Placeholder", [], "", {
                "dtype": t.dtype.name, "shape": tuple(t.shape.as_list())}))
            refs[_tensor_ref(t)] = n
        nodes = _op_nodes(ops, False, f'layer "{self.name}": ')
        for n in nodes:  # read the placeholders in place of the layer outputs
            n.input = [refs.get(r, r) for r in n.input]
            n.attr = {k: v for k, v in n.attr.items() if not k.startswith("_")}
            n.device = ""
            n.debug_info = None
        tree = GraphDef(inputs + nodes)._to_tree(False)
        out = self._template_output
        cfg.update({"graph": tree, "inputs": [n.name for n in inputs],
                    "output": f"{out.op.name}:{out.value_index}"})
        return cfg

    @classmethod
    def from_config(cls, config):
        """The layer `get_config` described (see the class). Nothing in `config` runs.

        Raises:
          ValueError: the fragment names an op type mylib does not have, an op that
            acts on the host, a variable or an extra placeholder, or is malformed.
        """
        return _from_fragment(cls, dict(config))


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


def _ancestors(output, frontier):
    """The ops that compute `output` from the `frontier` tensors (constants included),
    in an order where each op follows the ops it reads."""
    stop = {id(t) for t in frontier}
    order, seen = [], set()
    stack = [(output.op, False)]
    while stack:
        op, expanded = stack.pop()
        if id(op) in seen:
            continue
        if expanded:
            seen.add(id(op))
            order.append(op)
            continue
        stack.append((op, True))
        for x in list(op.inputs) + list(op.control_inputs):
            x_op = x if not isinstance(x, Tensor) else x.op
            if isinstance(x, Tensor) and id(x) in stop:
                continue
            if id(x_op) not in seen:
                stack.append((x_op, False))
    return order


def _from_fragment(cls, config):
    from mylib.core.graph import Graph
    from mylib.core.graph_import import import_graph_def
    from mylib.core.graph_io import GraphDef
    from mylib.core.op_registry import get_op_def

    name = config.get("name")
    graph, inputs, output = config.pop("graph", None), config.pop("inputs", None), \
        config.pop("output", None)
    where = f"The saved ops between layers {name!r}"
    if not isinstance(graph, dict) or not isinstance(inputs, list) or \
            not isinstance(output, str):
        raise ValueError(f"{where} need a `graph` (dict), `inputs` (list) and `output` "
                         f"(str). Received: graph={str(graph)[:80]}, inputs={inputs!r}, "
                         f"output={output!r}")
    try:
        gd = GraphDef._from_tree(graph)
    except (TypeError, KeyError, AttributeError, ValueError) as e:
        raise ValueError(f"{where} are not a well-formed graph fragment ({e}).") from None
    if gd.library:
        raise ValueError(f"{where} hold function graphs, which mylib never saves here.")
    for n in gd.node:
        try:
            od = get_op_def(n.op)
        except Exception:  # noqa: BLE001 - the registry's NotFoundError, said plainly
            od = None
        if od is None:
            raise ValueError(f"{where} use the op type {n.op!r} (node {n.name!r}), which "
                             "mylib does not have; nothing from the file runs.")
        if n.op in _REFUSED and not (n.op == "Placeholder" and n.name in inputs):
            raise ValueError(f"{where} hold {_REFUSED[n.op]} (node {n.name!r}, {n.op}).")
        if od.host:
            raise ValueError(f"{where} hold the op {n.name!r} of type {n.op}, which "
                             "runs on the host; only graph ops are loaded.")
    g = Graph()
    try:
        with g.as_default():
            out = import_graph_def(gd, return_elements=[output], name="")[0]
    except Exception as e:  # noqa: BLE001 - any rejection of the fragment
        raise ValueError(f"{where} do not import as a graph: {type(e).__name__}: {e}") \
            from None
    by_name = {op.name: op for op in g.get_operations()}
    try:
        frontier = [by_name[n].outputs[0] for n in inputs]
    except KeyError as e:
        raise ValueError(f"{where} name the input {e} that is not in the graph.") from None
    ops = _ancestors(out, frontier)
    layer = cls(ops, frontier, out, **config)
    layer._fragment = {"graph": graph, "inputs": inputs, "output": output}
    return layer

