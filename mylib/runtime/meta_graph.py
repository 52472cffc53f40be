"""Meta graphs: a graph with its collections and saver settings, in one file.

`export_meta_graph` writes the `MetaGraphDef` (see `mylib.core.graph_io` for the format);
`import_meta_graph_collections` imports it into the default graph and rebuilds its
collections (`mylib.runtime.saver.import_meta_graph` adds a `Saver`, as TensorFlow's). Loading never runs code.
"""

from __future__ import annotations

import os
import warnings

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib._fileio import atomic_write
from mylib._version import __version__
from mylib.core.compat_args import warn_ignored
from mylib.core.graph import Operation, Tensor, get_default_graph
from mylib.core.graph_import import _parse_input, import_graph_def
from mylib.core.graph_io import (FunctionDef, GraphDef, MetaGraphDef, NodeDef, _check_plain,
                                 _meta_from_file_tree, _parse, _read, _short, _Unencodable,
                                 with_debug_paths)
from mylib.core.tensor_shape import TensorShape
from mylib.core.variables import Variable

__all__ = ["export_meta_graph", "import_meta_graph_collections", "read_meta_graph_file"]

# ---------------------------------------------------------------- meta graphs
def _collection_entry(v, graph):
    if isinstance(v, Variable):
        return {"kind": "variable", "handle": v._handle.op.name,
                "initializer": v._initializer_op.name,
                "snapshot": v._graph_element.name,
                "initial_value": v._initial_value.name,
                "trainable": bool(v._trainable),
                "validate_shape": bool(getattr(v, "_validate_shape", True))}
    if isinstance(v, Tensor):
        return {"kind": "tensor", "name": v.name}
    if isinstance(v, Operation):
        return {"kind": "op", "name": v.name}
    try:
        _check_plain(v)
    except _Unencodable:
        return None
    return {"kind": "value", "value": v}


def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None,
                      collection_list=None, as_text=None, graph=None, clear_devices=False,
                      export_scope=None, clear_extraneous_savers=False,
                      strip_default_attrs=False, save_debug_info=False,
                      debug_paths="relative"):
    """Exports the graph, its collections and saver settings as a `MetaGraphDef`.

    Args:
      filename: optional path to write (atomically).
      meta_info_def: optional dict merged into the meta info.
      graph_def: optional `GraphDef` to use instead of `graph`'s.
      saver_def: optional dict describing the saver.
      collection_list: collection keys to export (default: all). Variables are stored
        by the names of their handle, initializer, snapshot and initial-value ops;
        tensors and ops by name; plain values as data. Other objects (queue runners,
        savers) are skipped with a warning.
      as_text: JSON text if True, binary if False; default by extension of `filename`
        (``.json``, ``.pbtxt``, ``.txt`` are text).
      graph: the `Graph` (default: the default graph).
      clear_devices: drop device strings.
      export_scope, clear_extraneous_savers, strip_default_attrs, save_debug_info:
        accepted for TensorFlow compatibility and ignored (a non-default value warns
        once): the whole graph is exported, with every attr; each node keeps its
        creation line.
      debug_paths: the source file of each node's creation line: ``"relative"``
        (default: relative to the working directory; a file outside it by its base
        name), ``"absolute"`` (as recorded) or ``"none"`` (no debug info). Applies to
        the file and the returned `MetaGraphDef`.
    Returns:
      The `MetaGraphDef`.
    Raises:
      TypeError: an unknown keyword argument.
      ValueError: an unknown `debug_paths`.
    """
    for arg, value in (("export_scope", export_scope),
                       ("clear_extraneous_savers", clear_extraneous_savers),
                       ("strip_default_attrs", strip_default_attrs),
                       ("save_debug_info", save_debug_info)):
        if value:
            warn_ignored("export_meta_graph", arg, "the whole graph is exported, with "
                         "every attr and each node's creation line.")
    graph = graph or get_default_graph()
    gd = graph_def if graph_def is not None else graph.as_graph_def()
    gd = with_debug_paths(gd, debug_paths)
    if clear_devices:
        def clear(nodes):
            return [NodeDef(n.name, n.op, n.input, "", n.attr, n.debug_info) for n in nodes]

        gd = GraphDef(clear(gd.node), gd.versions,
                      {k: FunctionDef(f.name, clear(f.node), f.input, f.output, f.capture,
                                      f.structure) for k, f in gd.library.items()})
    keys = collection_list if collection_list is not None else graph.get_all_collection_keys()
    collection_def, skipped = {}, []
    for key in keys:
        entries = []
        for item in graph.get_collection(key):
            e = _collection_entry(item, graph)
            if e is None:
                skipped.append(f"{key}: {type(item).__name__}")
            else:
                entries.append(e)
        if entries:
            collection_def[key] = entries
    if skipped:
        warnings.warn("export_meta_graph: skipped collection items that are not variables, "
                      f"tensors, ops or plain data: {sorted(set(skipped))}", stacklevel=2)
    info = {"mylib_version": __version__,
            "stripped_op_list": sorted({n.op for n in gd.node} | {
                n.op for f in gd.library.values() for n in f.node}), "tags": []}
    info.update(meta_info_def or {})
    meta = MetaGraphDef(info, gd, collection_def, saver_def)
    if filename is not None:
        if as_text is None:
            as_text = os.path.splitext(filename)[1].lower() in (".json", ".pbtxt", ".txt")
        atomic_write(filename, meta.to_json() if as_text else meta.SerializeToString(),
                     makedirs=True)
    return meta


def read_meta_graph_file(filename):
    """Reads a `MetaGraphDef` (or a plain `GraphDef` file, with no collections)."""
    return _meta_from_file_tree(_parse(_read(filename), filename), filename)


def _variable_from_imported(graph, handle_op, initializer_op, snapshot, initial_value,
                            trainable, validate_shape=True):
    """A `Variable` bound to already-imported ops (TF's `Variable(variable_def=...)`):
    built without running `Variable.__init__`, which would create new ops."""
    v = object.__new__(Variable)
    fields = {
        "_initialized_object": True, "_graph": graph, "_initial_value": initial_value,
        "_dtype": _dtypes.as_dtype(handle_op.attrs["dtype"]),
        "_shape": TensorShape(handle_op.attrs["shape"]), "_handle": handle_op.outputs[0],
        "_name": handle_op.name, "_initializer_op": initializer_op,
        "_graph_element": snapshot, "_trainable": bool(trainable), "constraint": None,
        "_validate_shape": bool(validate_shape),
    }
    for k, val in fields.items():
        object.__setattr__(v, k, val)
    graph._variables[handle_op.name] = v
    return v


def import_meta_graph_collections(meta_graph_or_file, clear_devices=False, import_scope=None,
                                  input_map=None, allow_host_effects=False):
    """Imports a meta graph into the default graph and rebuilds its collections.

    Args:
      meta_graph_or_file: a `MetaGraphDef` or a path written by `export_meta_graph`.
      clear_devices: drop device strings.
      import_scope: name scope prefixed to imported names (default: none, so names and
        checkpoint keys are unchanged).
      input_map: as in `import_graph_def`.
      allow_host_effects: as in `import_graph_def` (default False: file writes and
        Python callables of this process are refused).
    Returns:
      The imported `Variable`s (a list, possibly empty).
    Raises:
      DataLossError: if the file is malformed. Otherwise as `import_graph_def`.
    """
    meta = meta_graph_or_file
    if isinstance(meta, (str, os.PathLike)):
        meta = read_meta_graph_file(os.fspath(meta))
    elif isinstance(meta, GraphDef):
        meta = MetaGraphDef(graph_def=meta)
    if not isinstance(meta, MetaGraphDef):
        raise TypeError("import_meta_graph needs a MetaGraphDef or a file name. Received: "
                        f"{type(meta_graph_or_file).__name__}")
    graph = get_default_graph()
    _, new_ops = import_graph_def(meta.graph_def, input_map=input_map,
                                  name=import_scope or "", _clear_devices=clear_devices,
                                  allow_host_effects=allow_host_effects,
                                  _return_mapping=True)

    def tensor(name):
        src, idx, _ = _parse_input(name)
        return new_ops[src].outputs[idx]

    variables = {}
    for key, entries in meta.collection_def.items():
        for e in entries:
            kind = e.get("kind") if isinstance(e, dict) else None
            try:
                if kind == "variable":
                    h = e["handle"]
                    v = variables.get(h)
                    if v is None:
                        v = variables[h] = _variable_from_imported(
                            graph, new_ops[h], new_ops[e["initializer"]],
                            tensor(e["snapshot"]), tensor(e["initial_value"]),
                            e.get("trainable", True), e.get("validate_shape", True))
                    item = v
                elif kind == "tensor":
                    item = tensor(e["name"])
                elif kind == "op":
                    item = new_ops[e["name"]]
                elif kind == "value":
                    item = e.get("value")
                else:
                    raise KeyError(f"unknown entry kind {kind!r}")
            except (KeyError, TypeError, IndexError) as err:
                raise errors.DataLossError(
                    f"import_meta_graph: collection '{key}' entry {_short(e)} does not "
                    f"match the graph: {err}") from None
            graph.add_to_collection(key, item)
    return list(variables.values())



