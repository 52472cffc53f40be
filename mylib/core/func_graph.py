"""Function graphs: the sub-graphs held by functional control flow (cond branches, loop
bodies), as TensorFlow 2's `FuncGraph`.

A `FuncGraph` is built by calling a Python function on placeholders (one per operand)
inside ``with fg.as_default()``. A tensor of an enclosing graph used inside it is
*captured*: `OpDef.create` calls `capture`, which adds a placeholder (or, for a variable
handle, a copy of its `VarHandleOp`) and records the pair; a nested function captures
through its parent. Function graphs live in a process-level registry by unique name so
that a control-flow op's attrs only name them (plain data, serializable).

Graph files carry function graphs in a GraphDef's ``library``: `FUNCTION_ATTRS` says
which attrs of which op types name functions (`function_refs`,
`rewrite_function_attrs`), and `FuncGraph.for_import` / `set_signature` /
`bind_captures` rebuild one from its definition.

`call_function` interprets a function graph with the same interpreter as a step
(`lowering.interpret`), with a `FuncContext` whose variable state starts from values the
caller threads through the lax primitive.
"""

from __future__ import annotations

import itertools
import threading
import weakref

import jax
import jax.numpy as jnp

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.graph import Graph, Operation, get_default_graph
from mylib.core.lowering import LoweringContext, interpret, prepare, prune
from mylib.core.op_registry import TensorSpec, convert_to_tensor
from mylib.core.ops import array_ops, state_ops

_FUNCTIONS = weakref.WeakValueDictionary()
_counter = itertools.count(1)
_lock = threading.Lock()

# Stateful op types that only read state: a function made only of these (besides pure
# kernels) is differentiable, its variable reads hoisted to the enclosing graph.
READ_ONLY_TYPES = frozenset({"VarHandleOp", "ReadVariableOp", "Placeholder", "ResourceGather"})


def get_function(name):
    """The `FuncGraph` registered under `name`.

    Raises:
      NotFoundError: if no live function graph has that name.
    """
    try:
        return _FUNCTIONS[name]
    except KeyError:
        raise errors.NotFoundError(f"Function graph '{name}' not found") from None


def _unique_name(base):
    with _lock:
        while True:
            name = f"{base}_{next(_counter)}"
            if name not in _FUNCTIONS:
                return name


def is_registered(name):
    """Whether a live function graph is registered under `name`."""
    return name in _FUNCTIONS


def unregister(fg):
    """Removes `fg` from the process registry and its root graph's `_functions` (used
    for the throw-away functions of an import's dry run)."""
    with _lock:
        if _FUNCTIONS.get(fg.name) is fg:
            del _FUNCTIONS[fg.name]
    root = fg.outer_graph
    while isinstance(root, FuncGraph):
        root = root.outer_graph
    fns = root.__dict__.get("_functions")
    if fns is not None and fns.get(fg.name) is fg:
        del fns[fg.name]


def lookup_function(graph, name):
    """The function graph `name` as seen from `graph`: its root graph's `_functions`
    first, then the process registry; None if neither has it."""
    root = graph
    while isinstance(root, FuncGraph):
        root = root.outer_graph
    fg = root.__dict__.get("_functions", {}).get(name)
    return fg if fg is not None else _FUNCTIONS.get(name)


# ---------------------------------------------------------------- attrs naming functions
# Op type -> attrs whose value names a function graph (a string, or a list/tuple of
# them). Graph files find the functions an op needs (and rename them on import) here;
# an op type defined elsewhere that holds function graphs registers its attrs with
# `register_function_attrs`. Listed op types also keep the shared names of the variables
# their functions use in a ``var_keys`` attr.
FUNCTION_ATTRS = {
    "If": ("then_branch", "else_branch"), "StatelessIf": ("then_branch", "else_branch"),
    "Case": ("branches",), "StatelessCase": ("branches",),
    "While": ("cond", "body"), "StatelessWhile": ("cond", "body"),
    "StatelessWhileMasked": ("cond", "body"),
    "Scan": ("body",), "StatelessScan": ("body",),
}
# Op types whose attrs hold another op type's attrs (the generic VJP op: its
# ``forward_attrs`` are ``(key, value)`` pairs of the op ``forward_type`` names).
_NESTED_ATTRS = {"VJP": ("forward_type", "forward_attrs")}


def register_function_attrs(op_type, *attr_names):
    """Declares that attrs `attr_names` of `op_type` name function graphs."""
    FUNCTION_ATTRS[op_type] = tuple(attr_names)


def _names_in(v):
    if isinstance(v, str):
        return [v]
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        return list(v)
    return []


def _nested_attrs(op_type, attrs):
    """(attr name, inner op type, inner attrs as pairs) when an op of `op_type` holds
    another op's attrs in well-formed `attrs`, else None."""
    nested = _NESTED_ATTRS.get(op_type)
    if nested is None:
        return None
    ft, fa = attrs.get(nested[0]), attrs.get(nested[1])
    if isinstance(ft, str) and isinstance(fa, (list, tuple)) and all(
            isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], str)
            for p in fa):
        return nested[1], ft, fa
    return None


def function_refs(op_type, attrs):
    """The names of the function graphs an op of `op_type` with `attrs` refers to."""
    out = []
    for k in FUNCTION_ATTRS.get(op_type, ()):
        out += _names_in(attrs.get(k))
    nested = _nested_attrs(op_type, attrs)
    if nested is not None:
        out += function_refs(nested[1], dict(nested[2]))
    return out


def rewrite_function_attrs(op_type, attrs, fn_map, key_map=None):
    """`attrs` with function names renamed by `fn_map` and variable shared names in
    ``var_keys`` by `key_map` (dicts old -> new); the same dict if nothing changes."""
    key_map = key_map or {}
    new, changed = dict(attrs), False

    def rename(v, m):
        if isinstance(v, str) and v in m:
            return m[v], True
        if isinstance(v, (list, tuple)) and v and all(isinstance(x, str) for x in v) \
                and any(x in m for x in v):
            return type(v)(m.get(x, x) for x in v), True
        return v, False

    if op_type in FUNCTION_ATTRS:
        for k in (*FUNCTION_ATTRS[op_type], "var_keys"):
            if k in attrs:
                new[k], c = rename(attrs[k], key_map if k == "var_keys" else fn_map)
                changed |= c
    nested = _nested_attrs(op_type, attrs)
    if nested is not None:
        key, ft, fa = nested
        inner = rewrite_function_attrs(ft, dict(fa), fn_map, key_map)
        if any(inner[k] is not v for k, v in fa):
            new[key] = type(fa)((k, inner[k]) for k, _ in fa)
            changed = True
    return new if changed else attrs


def variable_key(t):
    """The session key (shared name) of the variable behind resource tensor `t`."""
    op = state_ops.handle_op(t)
    if op.type != "VarHandleOp":
        raise errors.UnimplementedError(
            f"control flow can capture variable handles only; '{t.name}' comes from a "
            f"{op.type} op")
    return op.attrs["shared_name"], op


class FuncGraph(Graph):
    """A graph holding the body of a control-flow op.

    Attributes:
      name: unique name (the control-flow op's attrs refer to it).
      outer_graph: the enclosing graph (a `Graph` or another `FuncGraph`).
      inputs: placeholders for the explicit operands (loop variables, elements).
      outputs: flat list of output tensors.
      structured_outputs: the function's return value with tensors in place (tree).
      captures: dict outer tensor -> inner tensor, in capture order.
      external: after `unify_captures`, the ordered outer tensors every function of
        one op takes, shared by all its branches.
    """

    def __init__(self, name, outer_graph):
        super().__init__()
        self.name = name
        self.outer_graph = outer_graph
        self.inputs = []
        self.outputs = []
        self.structured_outputs = None
        self.captures = {}
        self.external = None
        self._prepared = None
        root = outer_graph
        while isinstance(root, FuncGraph):
            root = root.outer_graph
        self.seed = root.seed
        # The root graph keeps its functions alive (the registry holds weak refs).
        root.__dict__.setdefault("_functions", {})[name] = self
        _FUNCTIONS[name] = self

    def _is_enclosed_by(self, graph):
        g = self.outer_graph
        while g is not None:
            if g is graph:
                return True
            g = getattr(g, "outer_graph", None)
        return False

    def capture(self, t):
        """The tensor standing for outer tensor `t` inside this function graph."""
        if t.graph is self:
            return t
        if self._finalized:
            raise ValueError(
                f"'{t.name}' and a tensor of the function graph '{self.name}' (the body "
                "of a cond, while_loop or scan) meet in one op: a tensor created inside a "
                "control-flow function cannot be used outside it; return it instead.")
        if not self._is_enclosed_by(t.graph):
            raise ValueError(
                f"'{t.name}' is from a graph that does not enclose the function graph "
                f"'{self.name}'")
        src = t if t.graph is self.outer_graph else self.outer_graph.capture(t)
        inner = self.captures.get(src)
        if inner is not None:
            return inner

        with self.control_dependencies(None), self.name_scope("captures/"):
            if src.dtype == _dtypes.resource:
                _, hop = variable_key(src)
                inner = state_ops.VarHandleOp.create([], dict(hop.attrs), name=None,
                                                     graph=self)
                inner = inner.outputs[0]
            else:
                inner = array_ops.Placeholder.create(
                    [], {"dtype": src.dtype.name, "shape": src.shape.as_tuple()},
                    graph=self).outputs[0]
        self.captures[src] = inner
        return inner

    # --- what interpreting needs ---
    @property
    def arg_tensors(self):
        """Inputs then non-resource captures in `external` order: the values a call binds."""
        return self.inputs + [self.captures[t] for t in self.external
                              if t.dtype != _dtypes.resource]

    def prepared(self):
        if self._prepared is None:
            feeds = self.arg_tensors
            targets = [op for op in self._ops
                       if op.op_def.stateful and op.type not in READ_ONLY_TYPES]
            self._prepared = prepare(prune(self.outputs, targets, feeds), feeds)
        return self._prepared

    def effectful_ops(self):
        """Ops with effects beyond reading variables (assigns, random, nested ones)."""
        return [op for op in self._ops
                if op.op_def.stateful and op.type not in READ_ONLY_TYPES]

    def __repr__(self):
        return f"<ml.FuncGraph '{self.name}' with {len(self._ops)} ops>"

    # --- building from a definition (graph files) ---
    @classmethod
    def for_import(cls, name, outer_graph, fresh=False):
        """An empty function graph to fill from a definition: named `name`, or a fresh
        unique name derived from it if that is taken (or `fresh`)."""
        with _lock:
            taken = fresh or name in _FUNCTIONS
        if taken:
            base = name.rstrip("0123456789")
            base = base[:-1] if base.endswith("_") and len(base) > 1 else (base or "fn")
            name = _unique_name(base)
        return cls(name, outer_graph)

    def set_signature(self, inputs, outputs, structured_outputs):
        """Sets `inputs` / `outputs` (tensors of this graph) and the output structure (a
        tree whose tensor leaves are, in flattening order, `outputs`)."""
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.structured_outputs = structured_outputs
        self.output_tree = jax.tree_util.tree_structure(structured_outputs)
        if self.output_tree.num_leaves != len(self.outputs):
            raise errors.InvalidArgumentError(
                f"function graph '{self.name}': its output structure has "
                f"{self.output_tree.num_leaves} leaves for {len(self.outputs)} outputs")

    def bind_captures(self, pairs):
        """Sets the captured tensors: `pairs` of (outer tensor, inner tensor) in the
        order the calling op passes them (`external`); finalizes the graph."""
        self.captures = dict(pairs)
        self.external = [o for o, _ in pairs]
        self._prepared = None
        self.finalize()


def build_function(fn, arg_specs, name, outer_graph=None, unpack=True):
    """Calls `fn` on placeholders matching the tree `arg_specs` (TensorSpec leaves)
    inside a new `FuncGraph`; returns it (not yet finalized).

    If `unpack`, `fn` is called as ``fn(*args)``, else ``fn(args)``. Operations returned
    by `fn` run (their effects happen) but give no output; outer tensors and Python
    values returned are captured or converted.
    """
    outer = outer_graph if outer_graph is not None else get_default_graph()
    fg = FuncGraph(_unique_name(name), outer)
    leaves, treedef = jax.tree_util.tree_flatten(
        arg_specs, is_leaf=lambda x: isinstance(x, TensorSpec))

    with fg.as_default():
        fg.inputs = [array_ops.placeholder(s.dtype, s.shape, name=f"arg{i}")
                     for i, s in enumerate(leaves)]
        args = jax.tree_util.tree_unflatten(treedef, fg.inputs)
        out = fn(*args) if unpack else fn(args)
        out = jax.tree_util.tree_map(lambda x: None if isinstance(x, Operation) else x, out,
                                     is_leaf=lambda x: isinstance(x, Operation))
        out_leaves, out_tree = jax.tree_util.tree_flatten(out)
        fg.outputs = [fg.capture(convert_to_tensor(o)) for o in out_leaves]
    fg.structured_outputs = out
    fg.output_tree = out_tree
    for op in fg._ops:
        if op.op_def.host:
            raise errors.UnimplementedError(
                f"host op {op.type} '{op.name}' inside the control-flow function "
                f"'{fg.name}': host ops (py_func, print, queues, summaries) cannot run "
                "inside cond/while_loop/scan, which compile to XLA", op=op)
    return fg


def unify_captures(fgs):
    """Makes every function graph of one op take the same captured outer tensors in
    the same order (unused ones included), as TF's cond_v2 does; finalizes them.

    Returns:
      The ordered list of outer tensors (the op's extra inputs).
    """
    external = []
    seen = set()
    for fg in fgs:
        for t in fg.captures:
            if t not in seen:
                seen.add(t)
                external.append(t)
    for fg in fgs:
        for t in external:
            fg.capture(t)
        fg.external = external
        fg.finalize()
    return external


class FuncContext(LoweringContext):
    """The lowering context inside a function graph: variables' values start from the
    values the control-flow op threads in; random keys derive from the parent's, salted
    by the calling op and branch and folded with the loop iteration."""

    def __init__(self, state, parent=None, salt=0, iteration=None):
        super().__init__(state, getattr(parent, "counter", 0), getattr(parent, "seed_base", 0))
        # Index checks are the step's: a body is traced inside lax.cond / while_loop,
        # whose values cannot leave it (see LoweringContext.check_indices).
        self.index_checks = False
        self.parent = parent
        self.salt = salt
        self.iteration = iteration

    def is_initialized(self, ref):
        return True if self.parent is None else self.parent.is_initialized(ref)

    def rng_key(self, op):
        if self.parent is None:
            raise errors.InternalError("random op in a function graph lowered without state")
        self.uses_rng = True
        key = jax.random.fold_in(self.parent.rng_key(op), self.salt)
        if self.iteration is not None:
            key = jax.random.fold_in(key, self.iteration)
        return key


def call_function(fg, args, state, parent=None, salt=0, iteration=None, out_dtypes=None):
    """Interprets `fg` on `args` (values for `fg.arg_tensors`) with variable values
    `state` (dict key -> value). Returns ``(outputs, ctx)``; ``ctx.state`` holds the
    variables' values afterwards and ``ctx.written`` the keys assigned."""
    ctx = FuncContext(dict(state), parent, salt, iteration)
    env = dict(zip(fg.arg_tensors, args))
    interpret(fg.prepared(), env, ctx)
    outs = [env[t] for t in fg.outputs]
    dts = out_dtypes if out_dtypes is not None else [t.dtype for t in fg.outputs]
    outs = [jnp.asarray(o, _dtypes.as_dtype(d).np) for o, d in zip(outs, dts)]
    return outs, ctx
