"""`import_graph_def`: a `GraphDef` (plain data) becomes ops of a `Graph`.

Only registered op types are accepted, function libraries are checked before any op is
created, and importing never runs code (see `mylib.core.graph_io` for the format).
Nor does running an imported graph reach the host beyond the session's own state: ops
whose attrs would write a file or call a Python function or object of this process
(see `OpDef.host_effect`) are refused unless the caller passes
``allow_host_effects=True``.
"""

from __future__ import annotations

import warnings


from mylib import errors
from mylib.core.graph import Graph, Tensor, get_default_graph
from mylib.core.func_graph import FuncGraph, function_refs, rewrite_function_attrs, unregister
from mylib.core.graph_io import (FunctionDef, GraphDef, MetaGraphDef, NodeDef, _short)
from mylib.core.op_registry import convert_to_tensor, get_op_def
from mylib.core.ops import array_ops

# ---------------------------------------------------------------- GraphDef -> Graph
def _parse_input(s):
    """'^a' -> ('a', None, True); 'a:2' -> ('a', 2, False); 'a' -> ('a', 0, False)."""
    if s.startswith("^"):
        return s[1:], None, True
    if ":" in s:
        name, idx = s.rsplit(":", 1)
        if idx.isdigit():
            return name, int(idx), False
    return s, 0, False


def _canonical(s):
    name, idx, ctrl = _parse_input(s)
    return "^" + name if ctrl else f"{name}:{idx}"


def _topological(nodes):
    """Node indices in an order where every producer precedes its consumers (file order
    among ready nodes)."""
    by_name = {}
    for i, n in enumerate(nodes):
        if n.name in by_name:
            raise errors.InvalidArgumentError(f"import_graph_def: duplicate node name '{n.name}'")
        by_name[n.name] = i
    deps = [set() for _ in nodes]
    users = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        for s in n.input:
            # A mapped input still orders its original producer first: TF creates
            # every node, and the producer's spec checks the replacement.
            src = _parse_input(s)[0]
            j = by_name.get(src)
            if j is None:
                raise errors.InvalidArgumentError(
                    f"import_graph_def: node '{n.name}' ({n.op}) has input '{s}', but no "
                    f"node named '{src}' is in the graph def")
            if j not in deps[i]:
                deps[i].add(j)
                users[j].append(i)
    import heapq

    count = [len(d) for d in deps]
    ready = [i for i, c in enumerate(count) if c == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            count[u] -= 1
            if count[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(nodes):
        stuck = sorted(nodes[i].name for i, c in enumerate(count) if c > 0)
        raise errors.InvalidArgumentError(
            "import_graph_def: the graph def has a cycle through nodes "
            f"{stuck[:10]}{' ...' if len(stuck) > 10 else ''}")
    return order


def _as_graph_def(graph_def):
    if isinstance(graph_def, GraphDef):
        return graph_def
    if isinstance(graph_def, MetaGraphDef):
        return graph_def.graph_def
    if isinstance(graph_def, Graph):
        return graph_def.as_graph_def()
    if isinstance(graph_def, (bytes, bytearray, str)):
        return GraphDef.FromString(bytes(graph_def) if not isinstance(graph_def, str)
                                   else graph_def)
    raise TypeError("import_graph_def needs a GraphDef. Received: "
                    f"graph_def={type(graph_def).__name__}")


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None,
                     op_dict=None, producer_op_list=None, allow_host_effects=False,
                     _clear_devices=False, _return_mapping=False):
    """Adds the ops of `graph_def` to the default graph, as TensorFlow's.

    Ops are created in dependency order (the file's node order does not matter), with
    shapes re-inferred by each op type's registered rule. No code from the file runs:
    only registered op types are accepted. The function graphs of control-flow ops
    (`GraphDef.library`) are created first, under fresh unique names where their names
    are taken in this process (the attrs naming them follow); variables renamed by the
    import scope are renamed inside them too.

    Args:
      graph_def: a `GraphDef` (or its serialized bytes / JSON text).
      input_map: dict from names in `graph_def` (``"x:0"``, ``"x"`` for output 0, or
        ``"^x"`` for a control input) to existing `Tensor`s (or `Operation`s for
        ``"^x"``) of the default graph that replace them, e.g. a placeholder remapped
        to a real tensor. Dtypes must match and shapes be compatible.
      return_elements: names in `graph_def` to return: ``"x:0"`` gives the imported
        `Tensor`, ``"train"`` the imported `Operation`.
      name: name scope prefixed to imported names (default ``"import"``; ``""`` for
        none). Variables keep their identity by handle name: an imported `VarHandleOp`
        whose ``shared_name`` was its own name gets its new name.
      op_dict, producer_op_list: accepted for TensorFlow compatibility; unused.
      allow_host_effects: accept ops that act on the host when they run, beyond their
        outputs and the session's variables: `PrintV2` with a file ``output_stream``
        (only ``"stderr"``, ``"stdout"`` and ``"log://..."`` are allowed without it),
        `PyFunc` (`numpy_function` / `py_func`: its token would call a function
        registered in *this* process), `FlaxCall` (a Flax module of this process) and
        optimizer updates naming a learning-rate schedule of this process. Default
        False: a graph file cannot make the importing program write files or call its
        own Python functions. Set it only for graphs you trust. (TensorFlow has no
        such check.)
    Returns:
      The list of `return_elements` (None if not given).
    Raises:
      PermissionDeniedError: a node (or a node of a library function) has a host
        effect and `allow_host_effects` is False; nothing is added.
      NotFoundError: ``Op type not registered 'Foo' in node 'bar'`` (``... of function
        'f'`` inside a library function).
      InvalidArgumentError: a missing input, a cycle, a bad `input_map`, or an attr an
        op type rejects; nothing is added when these are detected up front.
      ValueError: if an `input_map` or `return_elements` name is not in `graph_def`.
    """
    gd = _as_graph_def(graph_def)
    graph = get_default_graph()
    nodes = gd.node
    names = {n.name for n in nodes}
    name = "import" if name is None else name

    # --- validate everything that can be checked before adding ops ---
    op_defs = _node_op_defs(nodes)
    mapped = _resolve_input_map(input_map, names, graph)
    for ret in return_elements or []:
        if _parse_input(ret)[0] not in names:
            raise ValueError(f"Requested return_element '{ret}' not found in graph_def.")
    order = _topological(nodes)
    lib_info = _check_library(gd)
    if not allow_host_effects:
        _check_host_effects(gd, op_defs, lib_info)

    if graph.finalized:
        raise RuntimeError("Graph is finalized and cannot be modified.")
    _dry_run(gd, op_defs, order, lib_info, mapped, _clear_devices)
    new_ops, used = _import_into(graph, gd, op_defs, order, lib_info, mapped,
                                 _clear_devices, name, False, [])
    unused = sorted(set(mapped) - used)
    if unused:
        warnings.warn(f"import_graph_def: input_map entries not used by any node: {unused}",
                      stacklevel=2)
    result = None
    if return_elements is not None:
        result = []
        for r in return_elements:
            src, idx, _ = _parse_input(r)
            op = new_ops[src]
            result.append(op.outputs[idx] if ":" in r else op)
    if _return_mapping:
        return result, new_ops
    return result


def _check_host_effects(gd, op_defs, lib_info):
    """PermissionDeniedError for the first node (of the graph or of a library function)
    whose op type says it acts on the host with its attrs (`OpDef.host_effect`)."""
    places = [("", gd.node, op_defs)]
    places += [(f" of function '{f}'", gd.library[f].node, info[0])
               for f, info in lib_info.items()]
    for where, nodes, defs in places:
        for n, od in zip(nodes, defs):
            effect = od.host_effect(n.attr) if od.host_effect is not None else None
            if effect:
                raise errors.PermissionDeniedError(
                    f"import_graph_def: node '{n.name}' ({n.op}){where} {effect} when it "
                    "runs: an imported graph may not act on the host. Pass "
                    "allow_host_effects=True to import it anyway (only for graphs you "
                    "trust).")


def _node_op_defs(nodes):
    """The registered `OpDef` of each node's op type."""
    op_defs = []
    for n in nodes:
        try:
            op_defs.append(get_op_def(n.op))
        except errors.NotFoundError:
            raise errors.NotFoundError(
                f"Op type not registered '{n.op}' in node '{n.name}': importing a graph "
                "accepts only op types registered in this process (import the module "
                "that defines it first)") from None
    return op_defs


def _resolve_input_map(input_map, names, graph):
    """``{canonical name: Tensor or Operation of graph}`` from `input_map`, whose keys
    must name nodes in `names`."""
    mapped = {}
    for k, v in (input_map or {}).items():
        if not isinstance(k, str):
            raise TypeError(f"input_map keys must be strings. Received: {k!r}")
        ck = _canonical(k)
        if _parse_input(k)[0] not in names:
            raise ValueError(f"Attempted to map inputs that were not found in graph_def: [{k}]")
        if ck.startswith("^"):
            mapped[ck] = v.op if isinstance(v, Tensor) else \
                graph.as_graph_element(v, allow_tensor=False)
        else:
            t = convert_to_tensor(v)
            if t.graph is not graph:
                raise ValueError(f"input_map['{k}'] = '{t.name}' is not in the default graph")
            mapped[ck] = t
    return mapped


def _dry_run(gd, op_defs, order, lib_info, mapped, clear_devices):
    """Imports `gd` into a scratch graph (mapped inputs stood in by placeholders of their
    dtype and shape) to find shape and attr errors before the real graph is touched.
    Its function graphs get throw-away names and are unregistered after."""
    scratch = Graph()
    scratch_fns = []
    try:
        with scratch.as_default():
            stand_ins = {ck: (array_ops.no_op() if ck.startswith("^") else
                              array_ops.placeholder(t.dtype, t.shape.as_tuple()))
                         for ck, t in mapped.items()}
            _import_into(scratch, gd, op_defs, order, lib_info, stand_ins, clear_devices,
                         None, True, scratch_fns)
    finally:
        for fg in scratch_fns:
            unregister(fg)


def _check_library(gd):
    """Validates `gd.library` before anything is added: op types registered (and not
    host ops) inside every function, inputs present, no cycles, refs of inputs, outputs
    and captures naming nodes of the function, every function an op names present.

    Returns:
      dict function name -> (op_defs, topological order, names of the functions its
      nodes call, in first-use order).
    """
    lib = gd.library
    info = {}
    for fname, fdef in lib.items():
        info[fname] = _check_function(fname, fdef, lib)
    _callees(gd.node, "", lib)
    _check_no_call_cycle(lib, info)
    return info


def _callees(nodes, where, lib):
    """The library functions `nodes` name, in first-use order; each must be in `lib`."""
    out = []
    for n in nodes:
        for f in function_refs(n.op, n.attr):
            if f not in lib:
                # Never bound to a live function of this process that happens to
                # have the name: it could be any other graph's.
                raise errors.InvalidArgumentError(
                    f"import_graph_def: {where}node '{n.name}' ({n.op}) refers to the "
                    f"function graph '{f}', which is not in the graph def's library")
            if f not in out:
                out.append(f)
    return out


def _check_function(fname, fdef, lib):
    """``(op_defs, topological order, callees)`` of library function `fname`, checked."""
    where = f"function '{fname}': "
    if not isinstance(fdef, FunctionDef):
        raise errors.InvalidArgumentError(
            f"import_graph_def: library entry '{fname}' is a {type(fdef).__name__}, "
            "not a FunctionDef")
    op_defs = []
    for n in fdef.node:
        try:
            od = get_op_def(n.op)
        except errors.NotFoundError:
            raise errors.NotFoundError(
                f"Op type not registered '{n.op}' in node '{n.name}' of function "
                f"'{fname}': importing a graph accepts only op types registered in "
                "this process (import the module that defines it first)") from None
        if od.host:
            raise errors.InvalidArgumentError(
                f"import_graph_def: {where}node '{n.name}' is a host op ({n.op}), which "
                "cannot run inside cond/while_loop/scan")
        op_defs.append(od)
    try:
        order = _topological(fdef.node)
    except errors.InvalidArgumentError as e:
        raise errors.InvalidArgumentError(
            e.message.replace("import_graph_def: ", f"import_graph_def: {where}", 1)
        ) from None
    by_name = {n.name for n in fdef.node}
    refs = ([("input", r) for r in fdef.input] + [("output", r) for r in fdef.output]
            + [("capture", c[1]) for c in fdef.capture])
    for kind, r in refs:
        src, _, ctrl = _parse_input(r)
        if ctrl or src not in by_name:
            raise errors.InvalidArgumentError(
                f"import_graph_def: {where}{kind} '{r}' names no tensor of the function")
    return op_defs, order, _callees(fdef.node, where, lib)


def _check_no_call_cycle(lib, info):
    """No function may (transitively) call itself."""
    state = {}

    def visit(f, path):
        if state.get(f) == 2:
            return
        if state.get(f) == 1:
            raise errors.InvalidArgumentError(
                "import_graph_def: the library's functions call each other in a cycle: "
                + " -> ".join(path[path.index(f):] + [f]))
        state[f] = 1
        for c in info[f][2]:
            visit(c, path + [f])
        state[f] = 2

    for f in lib:
        visit(f, [])


def _tensor_in(ops, ref, where):
    src, idx, _ = _parse_input(ref)
    op = ops[src]
    if idx >= len(op.outputs):
        raise errors.InvalidArgumentError(
            f"import_graph_def: {where}'{ref}' names output {idx} of '{src}', which has "
            f"{len(op.outputs)} output(s)")
    return op.outputs[idx]


def _structure_from_data(d, outputs, where):
    """Inverse of `_structure_to_data`: the tree with `outputs` at its leaves."""
    import collections

    def build(x):
        if x is None:
            return None
        if not (isinstance(x, dict) and len(x) == 1):
            raise errors.InvalidArgumentError(
                f"import_graph_def: {where}bad output structure element {_short(x)}")
        (tag, v), = x.items()
        if tag == "out" and isinstance(v, int) and not isinstance(v, bool) \
                and 0 <= v < len(outputs):
            return outputs[v]
        if tag in ("list", "tuple") and isinstance(v, list):
            kids = [build(c) for c in v]
            return kids if tag == "list" else tuple(kids)
        if tag in ("dict", "odict") and isinstance(v, list) and all(
                isinstance(p, (list, tuple)) and len(p) == 2 for p in v):
            items = [(k, build(c)) for k, c in v]
            return dict(items) if tag == "dict" else collections.OrderedDict(items)
        if tag == "namedtuple" and isinstance(v, dict) and isinstance(v.get("values"), list):
            try:
                cls = collections.namedtuple(v.get("name"), v.get("fields"))
                return cls(*[build(c) for c in v["values"]])
            except (TypeError, ValueError) as e:
                raise errors.InvalidArgumentError(
                    f"import_graph_def: {where}bad namedtuple in the output structure: "
                    f"{e}") from None
        if tag == "node" and isinstance(v, dict) and isinstance(v.get("children"), list):
            return tuple(build(c) for c in v["children"])
        raise errors.InvalidArgumentError(
            f"import_graph_def: {where}bad output structure element {_short(x)}")

    try:
        tree = build(d)
    except TypeError as e:  # e.g. an unhashable dict key
        raise errors.InvalidArgumentError(
            f"import_graph_def: {where}bad output structure: {e}") from None
    import jax

    leaves = jax.tree_util.tree_leaves(tree)
    if len(leaves) != len(outputs) or any(a is not b for a, b in zip(leaves, outputs)):
        raise errors.InvalidArgumentError(
            f"import_graph_def: {where}the output structure does not list the "
            f"{len(outputs)} outputs once each, in order")
    return tree


def _import_into(graph, gd, op_defs, order, lib_info, mapped, clear_devices, scope, fresh,
                 built_fns):
    """Creates the library's function graphs (callees first, each inside its caller),
    then the ops of `gd` in `graph` (inside name scope `scope`), rewriting the attrs
    that name functions to the names they got; binds each function's captures to
    tensors of its enclosing graph; renames variable shared names inside functions and
    in ``var_keys`` attrs as the import renamed the variables. Appends every function
    graph made to `built_fns`. Returns ``(new_ops, used)`` as `_create_ops`."""
    lib = gd.library
    fns = _FunctionImport(lib, lib_info, clear_devices, fresh, built_fns)
    renamed = {}  # old shared name -> new (variables renamed by the import scope)
    root_own = []
    for c in _root_callees(gd, lib):
        if c not in fns.built:
            fns.build(c, graph)
            root_own.append(c)
    with graph.name_scope(scope) if scope else _null():
        new_ops, used_root = _create_ops(graph, fns.rewrite(gd.node), op_defs, order, mapped,
                                         clear_devices, renamed)
    fns.used |= used_root
    for c in root_own:
        fns.bind(c, new_ops, mapped)
    if renamed:
        _rename_shared_names(gd, new_ops, fns.built, renamed)
    return new_ops, fns.used


class _FunctionImport:
    """The function graphs of one import of a library: `build` creates one (its callees
    first, inside it), `bind` binds its captures to tensors of its enclosing graph,
    `rewrite` renames the functions that nodes' attrs name to the names they got."""

    def __init__(self, lib, lib_info, clear_devices, fresh, built_fns):
        self.lib, self.lib_info = lib, lib_info
        self.clear_devices, self.fresh, self.built_fns = clear_devices, fresh, built_fns
        self.fn_map, self.built = {}, {}  # old name -> new name; old name -> [fg, ops]
        self.used = set()  # input_map keys used by captures

    def rewrite(self, nodes):
        out = []
        for n in nodes:
            a = rewrite_function_attrs(n.op, n.attr, self.fn_map)
            out.append(n if a is n.attr else
                       NodeDef(n.name, n.op, n.input, n.device, a, n.debug_info))
        return out

    def bind(self, fname, outer_ops, outer_mapped):
        fdef, (fg, ops) = self.lib[fname], self.built[fname]
        where = f"function '{fname}': "
        pairs = []
        for outer_ref, inner_ref in fdef.capture:
            ck = _canonical(outer_ref)
            if ck in outer_mapped:
                self.used.add(ck)
                o = outer_mapped[ck]
            else:
                src, _, _ = _parse_input(outer_ref)
                if src not in outer_ops:
                    raise errors.InvalidArgumentError(
                        f"import_graph_def: {where}captures '{outer_ref}', which is not a "
                        "node of its enclosing graph")
                o = _tensor_in(outer_ops, outer_ref, where)
            i = _tensor_in(ops, inner_ref, where)
            if o.dtype != i.dtype:
                raise errors.InvalidArgumentError(
                    f"import_graph_def: {where}captures '{outer_ref}' ({o.dtype.name}) as "
                    f"'{inner_ref}' ({i.dtype.name}): the dtypes differ")
            pairs.append((o, i))
        fg.bind_captures(pairs)

    def build(self, fname, outer):
        fdef = self.lib[fname]
        f_op_defs, f_order, callees = self.lib_info[fname]
        where = f"function '{fname}': "
        fg = FuncGraph.for_import(fname, outer, self.fresh)
        self.built_fns.append(fg)
        self.fn_map[fname] = fg.name
        self.built[fname] = [fg, None]
        own = []
        for c in callees:
            if c not in self.built:
                self.build(c, fg)
                own.append(c)
        try:
            ops, _ = _create_ops(fg, self.rewrite(fdef.node), f_op_defs, f_order, {},
                                 self.clear_devices)
        except errors.OpError as e:
            raise type(e)(f"import_graph_def: in function '{fname}': {e.message}") from None
        self.built[fname][1] = ops
        outs = [_tensor_in(ops, r, where) for r in fdef.output]
        fg.set_signature([_tensor_in(ops, r, where) for r in fdef.input], outs,
                         _structure_from_data(fdef.structure, outs, where))
        for c in own:
            self.bind(c, ops, {})


def _rename_shared_names(gd, new_ops, built, renamed):
    """Variables the import scope renamed (`renamed`: old shared name -> new) keep
    their identity: imported handle ops, handle ops inside the function graphs and
    attrs that name variables (``var_keys``) follow the new names."""
    for n in gd.node:
        op = new_ops[n.name]
        old = n.attr.get("shared_name")
        if op.type == "VarHandleOp" and old in renamed and op.attrs["shared_name"] == old:
            op.attrs["shared_name"] = renamed[old]
    every = list(new_ops.values()) + [o for fg, ops in built.values()
                                      for o in ops.values()]
    in_fns = {id(o) for fg, ops in built.values() for o in ops.values()}
    for op in every:
        if op.type == "VarHandleOp" and id(op) in in_fns and \
                op.attrs.get("shared_name") in renamed:
            op.attrs["shared_name"] = renamed[op.attrs["shared_name"]]
        a = rewrite_function_attrs(op.type, op.attrs, {}, renamed)
        if a is not op.attrs:
            op.attrs.update(a)


def _root_callees(gd, lib):
    out = []
    for n in gd.node:
        for f in function_refs(n.op, n.attr):
            if f in lib and f not in out:
                out.append(f)
    return out


def _create_ops(graph, nodes, op_defs, order, mapped, clear_devices, renamed=None):
    """Creates the ops of `nodes` in `order` in `graph` (inside the import scope).
    Variables whose handle op got a new name are recorded in `renamed` (old shared
    name -> new)."""
    new_ops = {}  # old name -> Operation
    used = set()
    for i in order:
        n, od = nodes[i], op_defs[i]
        data, ctrl = [], []
        for s in n.input:
            src, idx, is_ctrl = _parse_input(s)
            ck = _canonical(s)
            if ck in mapped:
                used.add(ck)
                (ctrl if is_ctrl else data).append(mapped[ck])
            elif is_ctrl:
                ctrl.append(new_ops[src])
            else:
                op = new_ops[src]
                if idx >= len(op.outputs):
                    raise errors.InvalidArgumentError(
                        f"import_graph_def: node '{n.name}' ({n.op}) has input '{s}', "
                        f"but '{src}' has {len(op.outputs)} output(s)")
                data.append(op.outputs[idx])
        kattrs = {k: v for k, v in n.attr.items() if not k.startswith("_")}
        for s, t in zip(n.input, data):
            if _canonical(s) in mapped:
                _check_mapped(n, s, t, new_ops)
        loc = n.attr.get("_class")
        if loc is not None and not (isinstance(loc, (list, tuple))
                                    and all(isinstance(x, str) for x in loc)):
            raise errors.InvalidArgumentError(
                f"import_graph_def: node '{n.name}' ({n.op}) has a malformed '_class' "
                f"attr: expected a list of 'loc:@<node>' strings, got {loc!r:.100}")
        frame = n.debug_info
        op = od.create(data, kattrs, name=n.name, graph=graph,
                       frame=tuple(frame) if frame else None)
        if op.type == "VarHandleOp" and n.attr.get("shared_name") == n.name:
            op.attrs["shared_name"] = op.name
            if renamed is not None and op.name != n.name:
                renamed[n.name] = op.name
        for k, v in n.attr.items():
            if k == "_class":
                op.attrs[k] = [_remap_loc(x, new_ops) for x in v]
            elif k.startswith("_") and k != "_output_shapes":
                op.attrs[k] = v
        for c in ctrl:
            op._add_control_input(c)
        if n.device and not clear_devices:
            op.device = n.device
        elif clear_devices:
            op.device = ""
        new_ops[n.name] = op
    return new_ops, used


class _null:
    def __enter__(self):
        return ""

    def __exit__(self, *exc):
        return False


def _check_mapped(n, s, t, new_ops):
    """The replacement must have the dtype, and a shape compatible with, the imported
    tensor it replaces."""
    src, idx, _ = _parse_input(s)
    outs = new_ops[src].outputs
    if idx >= len(outs):
        raise errors.InvalidArgumentError(
            f"import_graph_def: input_map key '{s}' names output {idx} of '{src}', which "
            f"has {len(outs)} output(s)")
    want = outs[idx]
    if want.dtype != t.dtype:
        raise errors.InvalidArgumentError(
            f"import_graph_def: input_map['{s}'] = '{t.name}' has dtype {t.dtype.name}, "
            f"but '{s}' in the graph def has dtype {want.dtype.name} (used by node "
            f"'{n.name}')")
    if not want.shape.is_compatible_with(t.shape):
        raise errors.InvalidArgumentError(
            f"import_graph_def: input_map['{s}'] = '{t.name}' has shape {t.shape}, not "
            f"compatible with {want.shape} of '{s}' in the graph def (used by node "
            f"'{n.name}')")


def _remap_loc(x, new_ops):
    if isinstance(x, str) and x.startswith("loc:@") and x[5:] in new_ops:
        return "loc:@" + new_ops[x[5:]].name
    return x


