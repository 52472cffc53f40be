"""Graph files: `GraphDef` as plain data, its file format, and `Graph` -> `GraphDef`.

Importing lives in `mylib.core.graph_import`; meta graphs (which carry a saver) in
`mylib.runtime.meta_graph`; the TensorBoard form in `mylib.summary.graph`.

A `GraphDef` lists nodes (`NodeDef`: ``name``, ``op``, ``input``, ``device``, ``attr``)
as TensorFlow's does: an input is ``"name:idx"`` (``"name"`` for output 0) and a
control input is ``"^name"``. Attr values are plain data only: None, bools, ints,
floats (inf and nan included), complex numbers, strings, bytes, lists, tuples, dicts
with string keys, numpy arrays and scalars, `DType`s and `TensorShape`s. Exporting an
op whose attr holds anything else (a Python function, a sub-graph object) raises
`InvalidArgumentError` naming the op and the attr.

File format (version 1), one tree in two encodings, told apart by their first bytes:

- text: UTF-8 JSON, ``{"format": "mylib.GraphDef", "version": 1, "node": [...],
  "versions": {...}, "library": {}}``. Values JSON cannot hold exactly are tagged
  one-key objects: ``{"tuple": [...]}``, ``{"float": "nan"}``, ``{"int": "123..."}``,
  ``{"bytes": b64}``, ``{"complex": [re, im]}``, ``{"dict": {...}}``,
  ``{"dtype": "float32"}``, ``{"shape": [2, null]}``, ``{"ndarray": {"dtype":
  "float32", "shape": [2, 3], "b64": "..."}}`` (little-endian bytes; string arrays as
  ``"items"``), ``{"npscalar": {...same...}}``.
- binary: the 8 bytes ``b"MLGRAPH\\x01"`` followed by the same tree in msgpack, with
  array bytes stored raw (``"raw"`` instead of ``"b64"``).

Control flow: ``library`` maps the name of every function graph the nodes refer to
(cond/case branches, while_loop cond and body, scan/map_fn bodies; nested ones, named
by a function's own nodes, too; those a gradient ``VJP`` op names in its
``forward_attrs``) to ``{"node": [...], "input": [refs], "output": [refs],
"capture": [[outer_ref, inner_ref], ...], "structure": ...}`` (see `FunctionDef`):
nodes in the same NodeDef encoding with names local to the function, the captured
tensors in the order the calling op passes them, and the output structure as plain
data. Which attrs name functions is `mylib.core.func_graph.FUNCTION_ATTRS`. Importing
creates the function graphs first (callees before callers, each inside its caller),
under their own names, or fresh unique ones where a name is taken in this process (the
attrs naming them are rewritten), then the ops; op types inside functions are checked
as the graph's are, host ops are refused there, and a library that is not well formed
raises `DataLossError` (reading a file) or `InvalidArgumentError` naming the function
and node.

Each node's ``debug_info`` is the ``(file, line, function)`` that created the op.
Files written by `write_graph` and `export_meta_graph` hold portable paths by default
(``debug_paths="relative"``): a source file under the working directory as a path
relative to it, any other by its base name only, so a shared graph file does not
reveal the author's directory layout; ``"absolute"`` keeps the paths as recorded,
``"none"`` drops the debug info.

Meta graphs (``"format": "mylib.MetaGraphDef"``) add ``meta_info_def``,
``collection_def`` (per collection, entries naming tensors, ops or variables, or plain
values) and ``saver_def``. Loading never runs code (no pickle, no eval): a file that is
not one of these, or whose lists/maps nest more than `MAX_DEPTH` (256) levels, raises
`DataLossError` naming the path.
"""

from __future__ import annotations

import base64
import json
import math
import os

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib._fileio import atomic_write
from mylib.core.graph import Graph, _register_graph_def_builder, _register_node_def_builder
from mylib.core.tensor_shape import TensorShape
from mylib.core.func_graph import function_refs, lookup_function

__all__ = ["NodeDef", "FunctionDef", "GraphDef", "MetaGraphDef", "load_graph_def",
           "write_graph", "graph_to_graph_def"]

FORMAT_VERSION = 1
_BINARY_MAGIC = b"MLGRAPH\x01"
_GRAPH_FORMAT = "mylib.GraphDef"
_META_FORMAT = "mylib.MetaGraphDef"


# ---------------------------------------------------------------- plain-data classes
class NodeDef:
    """One node of a `GraphDef`.

    Attributes:
      name: the op's unique name.
      op: the registered op type (``"MatMul"``).
      input: list of ``"name:idx"`` / ``"name"`` data inputs, then ``"^name"`` control
        inputs.
      device: requested device string ('' if none).
      attr: dict of attribute values (plain data, see the module docstring).
      debug_info: ``(file, line, function)`` of the line that created the op, or None.
    """

    __slots__ = ("name", "op", "input", "device", "attr", "debug_info")

    def __init__(self, name, op, input=None, device="", attr=None,  # noqa: A002 - TF's name
                 debug_info=None):
        self.name = name
        self.op = op
        self.input = list(input or [])
        self.device = device or ""
        self.attr = dict(attr or {})
        self.debug_info = debug_info

    def __repr__(self):
        return f"NodeDef(name={self.name!r}, op={self.op!r}, input={self.input!r})"


class FunctionDef:
    """One function graph of a `GraphDef`'s `library` (a cond branch, a loop body).

    Attributes:
      name: the function's name; ops name it in plain-string attrs (``then_branch``,
        ``else_branch``, ``branches``, ``cond``, ``body``, and inside a ``VJP`` op's
        ``forward_attrs``).
      node: list of `NodeDef` (same encoding as the graph's nodes; names are local to
        the function).
      input: refs (``"name:idx"``) of the placeholders for the explicit operands.
      output: refs of the output tensors, in flattening order.
      capture: ``[outer_ref, inner_ref]`` pairs in the order the calling op passes them
        (the function's ``external`` list): a tensor of the enclosing graph (the root
        graph, or the function whose node calls this one) and the placeholder (or, for
        a variable handle, the ``VarHandleOp`` copy) standing for it inside.
      structure: the structure of the outputs as plain data: ``{"out": i}`` for output
        ``i``, ``None``, ``{"list": [...]}``, ``{"tuple": [...]}``,
        ``{"dict": [[key, s], ...]}``, ``{"odict": [[key, s], ...]}`` (OrderedDict),
        ``{"namedtuple": {"name": "Point", "fields": ["x", "y"], "values": [...]}}``
        (rebuilt as a fresh namedtuple class of that name and fields: no user code is
        imported), ``{"node": {"type": "module.Class", "children": [...]}}`` (another
        pytree node type; rebuilt as a tuple of its children).
    """

    __slots__ = ("name", "node", "input", "output", "capture", "structure")

    def __init__(self, name, node=None, input=None, output=None,  # noqa: A002
                 capture=None, structure=None):
        self.name = name
        self.node = list(node or [])
        self.input = list(input or [])
        self.output = list(output or [])
        self.capture = [list(c) for c in (capture or [])]
        self.structure = structure

    def __repr__(self):
        return f"<FunctionDef '{self.name}' with {len(self.node)} nodes>"

    def _to_tree(self, binary):
        return {"node": [_node_to_tree(n, binary) for n in self.node],
                "input": list(self.input), "output": list(self.output),
                "capture": [list(c) for c in self.capture],
                "structure": _encode(self.structure, binary)}

    @classmethod
    def _from_tree(cls, name, t):
        where = f"library function '{name}'"
        _expect(isinstance(t, dict), f"{where} must be a map")
        nodes = t.get("node", [])
        _expect(isinstance(nodes, list), f"{where}: 'node' must be a list")
        for key in ("input", "output"):
            v = t.get(key, [])
            _expect(isinstance(v, list) and all(isinstance(i, str) for i in v),
                    f"{where}: '{key}' must be a list of strings")
        caps = t.get("capture", [])
        _expect(isinstance(caps, list) and all(
            isinstance(c, list) and len(c) == 2 and all(isinstance(i, str) for i in c)
            for c in caps), f"{where}: 'capture' must be a list of [outer, inner] names")
        try:
            node = [_node_from_tree(n) for n in nodes]
            structure = _decode(t.get("structure"))
        except _Malformed as e:
            raise _Malformed(f"{where}: {e}") from None
        return cls(name, node, t.get("input", []), t.get("output", []), caps, structure)


class GraphDef:
    """A graph as plain data: `node` (list of `NodeDef`), `versions`, `library` (dict
    function name -> `FunctionDef`: every function graph the nodes refer to, nested
    ones included).

    `SerializeToString()` / `GraphDef.FromString(data)` give the binary form;
    `to_json()` / `GraphDef.from_json(text)` the text form; `load_graph_def(path)` reads
    either from a file.
    """

    def __init__(self, node=None, versions=None, library=None):
        self.node = list(node or [])
        self.versions = dict(versions or {"producer": FORMAT_VERSION, "min_consumer": 1})
        self.library = dict(library or {})

    def __repr__(self):
        return f"<GraphDef with {len(self.node)} nodes>"

    # --- (de)serialization ---
    def _to_tree(self, binary):
        lib = {}
        for k, f in self.library.items():
            if not isinstance(f, FunctionDef):
                raise TypeError(f"GraphDef.library['{k}'] must be a FunctionDef. Received: "
                                f"{type(f).__name__}")
            lib[k] = f._to_tree(binary)
        return {"node": [_node_to_tree(n, binary) for n in self.node],
                "versions": dict(self.versions), "library": lib}

    @classmethod
    def _from_tree(cls, tree):
        _expect(isinstance(tree, dict), "a GraphDef must be a map")
        nodes = tree.get("node", [])
        _expect(isinstance(nodes, list), "'node' must be a list")
        versions = tree.get("versions") or {}
        _expect(isinstance(versions, dict), "'versions' must be a map")
        _check_version(versions.get("min_consumer", 1))
        lib = tree.get("library") or {}
        _expect(isinstance(lib, dict), "'library' must be a map")
        library = {}
        for k, f in lib.items():
            _expect(isinstance(k, str) and k, "library keys must be non-empty strings")
            library[k] = FunctionDef._from_tree(k, f)
        return cls([_node_from_tree(n) for n in nodes], versions, library)

    def SerializeToString(self):  # noqa: N802 - protobuf's name
        """The compact binary form (magic + msgpack)."""
        return _dump(_GRAPH_FORMAT, self._to_tree(True), as_text=False)

    def to_json(self, indent=1):
        """The human-readable text form (JSON)."""
        return _dump(_GRAPH_FORMAT, self._to_tree(False), as_text=True, indent=indent)

    @classmethod
    def FromString(cls, data):  # noqa: N802 - protobuf's name
        """Parses either form (bytes or str); raises `DataLossError` if malformed."""
        return _graph_def_from_file_tree(_parse(data, "<bytes>"), "<bytes>")

    from_json = FromString


class MetaGraphDef:
    """A graph plus what is needed to use it again: collections and saver settings.

    Attributes:
      meta_info_def: dict (``mylib_version``, ``stripped_op_list``, ``tags``).
      graph_def: `GraphDef`.
      collection_def: dict collection key -> list of entries; an entry is
        ``{"kind": "tensor" | "op", "name": ...}``, ``{"kind": "variable", "handle": op
        name, "initializer": op name, "snapshot": tensor name, "initial_value": tensor
        name, "trainable": bool}`` or ``{"kind": "value", "value": plain data}``.
      saver_def: dict or None.
    """

    def __init__(self, meta_info_def=None, graph_def=None, collection_def=None,
                 saver_def=None):
        self.meta_info_def = dict(meta_info_def or {})
        self.graph_def = graph_def if graph_def is not None else GraphDef()
        self.collection_def = dict(collection_def or {})
        self.saver_def = saver_def

    def __repr__(self):
        return (f"<MetaGraphDef with {len(self.graph_def.node)} nodes, collections "
                f"{sorted(self.collection_def)}>")

    def _to_tree(self, binary):
        return {"meta_info_def": _encode(self.meta_info_def, binary),
                "graph_def": self.graph_def._to_tree(binary),
                "collection_def": {k: [_encode(e, binary) for e in v]
                                   for k, v in self.collection_def.items()},
                "saver_def": _encode(self.saver_def, binary)}

    @classmethod
    def _from_tree(cls, tree):
        _expect(isinstance(tree, dict), "a MetaGraphDef must be a map")
        cols = tree.get("collection_def") or {}
        _expect(isinstance(cols, dict), "'collection_def' must be a map")
        collection_def = {}
        for k, v in cols.items():
            _expect(isinstance(v, list), f"collection '{k}' must be a list")
            collection_def[k] = [_decode(e) for e in v]
        return cls(_decode(tree.get("meta_info_def") or {}),
                   GraphDef._from_tree(tree.get("graph_def") or {}),
                   collection_def, _decode(tree.get("saver_def")))

    def SerializeToString(self):  # noqa: N802
        return _dump(_META_FORMAT, self._to_tree(True), as_text=False)

    def to_json(self, indent=1):
        return _dump(_META_FORMAT, self._to_tree(False), as_text=True, indent=indent)

    @classmethod
    def FromString(cls, data):  # noqa: N802
        return _meta_from_file_tree(_parse(data, "<bytes>"), "<bytes>")


# ---------------------------------------------------------------- attr encoding
class _Malformed(ValueError):
    """Raised inside decoding; turned into DataLossError with the path by the caller."""


def _expect(cond, what):
    if not cond:
        raise _Malformed(what)


def _check_version(min_consumer):
    if not isinstance(min_consumer, int) or min_consumer > FORMAT_VERSION:
        raise _Malformed(f"the file needs a reader of format version {min_consumer!r}; "
                         f"this mylib reads version {FORMAT_VERSION}")


class _Unencodable(TypeError):
    pass


def _encode(v, binary):
    """Encodes an attr value as a JSON/msgpack-safe tree (tagged one-key maps)."""
    if isinstance(v, np.ndarray):
        return {"ndarray": _encode_array(v, binary)}
    if isinstance(v, np.generic):  # before float: np.float64 subclasses float
        return {"npscalar": _encode_array(np.asarray(v), binary)}
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v) if -2 ** 63 <= v < 2 ** 63 else {"int": str(int(v))}
    if isinstance(v, float):
        return float(v) if math.isfinite(v) else {"float": repr(float(v))}
    if isinstance(v, complex):
        return {"complex": [_encode(v.real, binary), _encode(v.imag, binary)]}
    if isinstance(v, (bytes, bytearray)):
        return {"bytes": bytes(v) if binary else base64.b64encode(bytes(v)).decode("ascii")}
    if isinstance(v, list):
        return [_encode(x, binary) for x in v]
    if isinstance(v, tuple):
        return {"tuple": [_encode(x, binary) for x in v]}
    if isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            raise _Unencodable("a dict with non-string keys")
        return {"dict": {k: _encode(x, binary) for k, x in v.items()}}
    if isinstance(v, _dtypes.DType):
        return {"dtype": v.name}
    if isinstance(v, TensorShape):
        return {"shape": None if v.rank is None else list(v.as_tuple())}
    raise _Unencodable(f"a value of type {type(v).__module__}.{type(v).__qualname__}")


def _encode_array(a, binary):
    shape = list(a.shape)
    if a.dtype.kind in "OSU":
        items = []
        for x in a.reshape(-1).tolist():
            if isinstance(x, str):
                x = x.encode("utf-8")
            if not isinstance(x, bytes):
                raise _Unencodable(f"an object array holding {type(x).__name__}")
            items.append(x if binary else base64.b64encode(x).decode("ascii"))
        return {"dtype": "unicode" if a.dtype.kind == "U" else "string", "shape": shape,
                "items": items}
    try:
        name = _dtypes.as_dtype(a.dtype.newbyteorder("=")).name
    except (TypeError, KeyError, ValueError):
        raise _Unencodable(f"an array of dtype {a.dtype}") from None
    le = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")) \
        if a.dtype.byteorder == ">" else np.ascontiguousarray(a)
    data = le.tobytes()
    return {"dtype": name, "shape": shape,
            **({"raw": data} if binary else {"b64": base64.b64encode(data).decode("ascii")})}


def _check_plain(v):
    """Raises _Unencodable unless `v` is plain data (as `_encode`, without copying arrays)."""
    if isinstance(v, np.ndarray):
        if v.dtype.kind in "OSU":
            _encode_array(v, True)
        else:
            _encode_array(v.reshape(-1)[:0], True)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _check_plain(x)
    elif isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            raise _Unencodable("a dict with non-string keys")
        for x in v.values():
            _check_plain(x)
    else:
        _encode(v, True)


def _decode(x):
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, list):
        return [_decode(i) for i in x]
    _expect(isinstance(x, dict) and len(x) == 1, f"unexpected value {_short(x)}")
    (tag, val), = x.items()
    if tag == "tuple":
        _expect(isinstance(val, list), "a tuple must hold a list")
        return tuple(_decode(i) for i in val)
    if tag == "float":
        _expect(val in ("inf", "-inf", "nan"), f"bad float {_short(val)}")
        return float(val)
    if tag == "int":
        _expect(isinstance(val, str) and val.lstrip("-").isdigit(), f"bad int {_short(val)}")
        return int(val)
    if tag == "complex":
        _expect(isinstance(val, list) and len(val) == 2, "a complex needs [re, im]")
        re_, im_ = (_decode(p) for p in val)
        _expect(all(isinstance(p, (int, float)) for p in (re_, im_)), "bad complex parts")
        return complex(re_, im_)
    if tag == "bytes":
        return _bytes_of(val)
    if tag == "dict":
        _expect(isinstance(val, dict), "a dict must hold a map")
        return {str(k): _decode(i) for k, i in val.items()}
    if tag == "dtype":
        try:
            return _dtypes.as_dtype(val)
        except Exception:  # noqa: BLE001 - any bad name is a malformed file
            raise _Malformed(f"unknown dtype {_short(val)}") from None
    if tag == "shape":
        _expect(val is None or (isinstance(val, list) and all(
            d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in val)),
            f"bad shape {_short(val)}")
        return TensorShape(val)
    if tag == "ndarray":
        return _decode_array(val)
    if tag == "npscalar":
        return _decode_array(val)[()]
    raise _Malformed(f"unknown value tag {tag!r}")


def _bytes_of(val):
    if isinstance(val, bytes):
        return val
    _expect(isinstance(val, str), "bytes must be base64 text or raw bytes")
    try:
        return base64.b64decode(val.encode("ascii"), validate=True)
    except Exception:  # noqa: BLE001
        raise _Malformed("invalid base64 data") from None


def _decode_array(d):
    _expect(isinstance(d, dict) and "dtype" in d and "shape" in d, "bad ndarray")
    shape = d["shape"]
    _expect(isinstance(shape, list) and all(isinstance(s, int) and not isinstance(s, bool)
                                            and s >= 0 for s in shape), "bad ndarray shape")
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if "items" in d:
        items = d["items"]
        _expect(isinstance(items, list) and len(items) == n, "ndarray item count differs")
        vals = [_bytes_of(i) for i in items]
        if d["dtype"] == "unicode":
            return np.array([v.decode("utf-8") for v in vals]).reshape(shape)
        out = np.empty(n, dtype=object)
        out[:] = vals
        return out.reshape(shape)
    try:
        dt = _dtypes.as_dtype(d["dtype"]).np.newbyteorder("<")
    except Exception:  # noqa: BLE001
        raise _Malformed(f"unknown array dtype {_short(d['dtype'])}") from None
    data = _bytes_of(d["raw"] if "raw" in d else d.get("b64"))
    _expect(len(data) == n * dt.itemsize,
            f"ndarray holds {len(data)} bytes, shape {shape} of {d['dtype']} needs "
            f"{n * dt.itemsize}")
    return np.frombuffer(data, dtype=dt).reshape(shape).astype(dt.newbyteorder("="))


def _short(x):
    s = repr(x)
    return s if len(s) < 80 else s[:77] + "..."


def _node_to_tree(n, binary):
    attr = {}
    for k, v in n.attr.items():
        try:
            attr[k] = _encode(v, binary)
        except _Unencodable as e:
            raise errors.InvalidArgumentError(_unencodable_msg(n.name, n.op, k, e)) from None
    t = {"name": n.name, "op": n.op, "input": list(n.input), "device": n.device,
         "attr": attr}
    if n.debug_info is not None:
        t["debug_info"] = list(n.debug_info)
    return t


def _unencodable_msg(name, op_type, attr, e):
    return (f"{op_type} '{name}': attr '{attr}' holds {e}, which a graph file cannot "
            "hold: attrs must be plain data (None, bool, int, float, complex, str, bytes, "
            "list, tuple, dict, numpy array, DType, TensorShape)")


def _node_from_tree(t):
    _expect(isinstance(t, dict), "a node must be a map")
    name, op = t.get("name"), t.get("op")
    _expect(isinstance(name, str) and name, "a node needs a non-empty string 'name'")
    _expect(isinstance(op, str) and op, f"node '{name}' needs a string 'op'")
    inputs = t.get("input", [])
    _expect(isinstance(inputs, list) and all(isinstance(i, str) for i in inputs),
            f"node '{name}': 'input' must be a list of strings")
    device = t.get("device", "") or ""
    _expect(isinstance(device, str), f"node '{name}': 'device' must be a string")
    attr = t.get("attr", {}) or {}
    _expect(isinstance(attr, dict), f"node '{name}': 'attr' must be a map")
    try:
        attr = {str(k): _decode(v) for k, v in attr.items()}
    except _Malformed as e:
        raise _Malformed(f"node '{name}': {e}") from None
    dbg = t.get("debug_info")
    if dbg is not None:
        ok = (isinstance(dbg, list) and len(dbg) == 3 and isinstance(dbg[0], str)
              and isinstance(dbg[1], int) and isinstance(dbg[2], str))
        dbg = tuple(dbg) if ok else None
    return NodeDef(name, op, inputs, device, attr, dbg)


# ---------------------------------------------------------------- files
def _dump(fmt, tree, as_text, indent=1):
    tree = {"format": fmt, "version": FORMAT_VERSION, **tree}
    if as_text:
        return json.dumps(tree, allow_nan=False, indent=indent, ensure_ascii=False)
    import msgpack

    return _BINARY_MAGIC + msgpack.packb(tree, use_bin_type=True)


def _parse(data, path):
    """bytes/str of a graph file -> tree; DataLossError naming `path` if malformed."""
    try:
        if isinstance(data, str):
            return json.loads(data)
        if data.startswith(_BINARY_MAGIC):
            import msgpack

            return msgpack.unpackb(data[len(_BINARY_MAGIC):], raw=False,
                                   strict_map_key=False)
        head = data[:64].lstrip()
        if head.startswith(b"{"):
            return json.loads(data.decode("utf-8"))
    except Exception as e:  # noqa: BLE001 - any parser failure is a malformed file
        raise errors.DataLossError(
            f"{path}: not a readable mylib graph file ({type(e).__name__}: "
            f"{str(e)[:200]}); it may be truncated or corrupted") from None
    raise errors.DataLossError(
        f"{path}: not a mylib graph file: neither JSON text nor the mylib binary form "
        f"(starts with {bytes(data[:8])!r})")


MAX_DEPTH = 256  # nesting of lists and maps in a graph file


def _depth_over(tree, limit):
    """Whether lists/maps in `tree` nest deeper than `limit` (iterative: a crafted
    file cannot exhaust the stack here)."""
    stack = [(tree, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, dict):
            x = list(x.values())
        elif not isinstance(x, (list, tuple)):
            continue
        if d > limit:
            return True
        stack.extend((c, d + 1) for c in x if isinstance(c, (dict, list, tuple)))
    return False


def _check_file_tree(tree, path, formats):
    if not isinstance(tree, dict) or not isinstance(tree.get("format"), str) \
            or tree["format"] not in formats:
        got = tree.get("format") if isinstance(tree, dict) else type(tree).__name__
        raise errors.DataLossError(
            f"{path}: not a mylib graph file: format is {got!r}, expected one of "
            f"{sorted(formats)}")
    if _depth_over(tree, MAX_DEPTH):
        raise errors.DataLossError(
            f"{path}: malformed graph file: lists/maps nest more than {MAX_DEPTH} levels "
            "deep")


def _graph_def_from_file_tree(tree, path):
    _check_file_tree(tree, path, {_GRAPH_FORMAT, _META_FORMAT})
    try:
        if tree["format"] == _META_FORMAT:
            return MetaGraphDef._from_tree(tree).graph_def
        return GraphDef._from_tree(tree)
    except _Malformed as e:
        raise errors.DataLossError(f"{path}: malformed graph file: {e}") from None


def _meta_from_file_tree(tree, path):
    _check_file_tree(tree, path, {_GRAPH_FORMAT, _META_FORMAT})
    try:
        if tree["format"] == _GRAPH_FORMAT:
            return MetaGraphDef(graph_def=GraphDef._from_tree(tree))
        return MetaGraphDef._from_tree(tree)
    except _Malformed as e:
        raise errors.DataLossError(f"{path}: malformed meta graph file: {e}") from None


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(f"{path}: no such graph file") from None


def load_graph_def(path):
    """Reads a `GraphDef` from a file written by `write_graph` (text or binary) or by
    `export_meta_graph` (its graph part).

    Raises:
      NotFoundError: if `path` does not exist.
      DataLossError: if the file is truncated, corrupted or not a mylib graph file.
    """
    return _graph_def_from_file_tree(_parse(_read(path), path), path)


_DEBUG_PATHS = ("relative", "absolute", "none")


def _portable_path(path, cwd):
    a = os.path.abspath(path) if os.path.isabs(path) else None
    if a is None:
        return path  # already relative (or a pseudo-file such as "<stdin>")
    r = os.path.relpath(a, cwd)
    if r != os.pardir and not r.startswith(os.pardir + os.sep):
        return r
    return os.path.basename(a)


def with_debug_paths(gd, debug_paths):
    """`gd` with each node's debug-info file made portable (see the module docstring):
    ``"relative"``, ``"absolute"`` (`gd` itself) or ``"none"``.

    Raises:
      ValueError: another `debug_paths`.
    """
    if debug_paths not in _DEBUG_PATHS:
        raise ValueError(f"debug_paths must be one of {list(_DEBUG_PATHS)}. Received: "
                         f"debug_paths={debug_paths!r}")
    if debug_paths == "absolute":
        return gd
    cwd = os.getcwd()

    def fix(nodes):
        out = []
        for n in nodes:
            d = n.debug_info
            if d is not None:
                d = None if debug_paths == "none" else (
                    (_portable_path(str(d[0]), cwd),) + tuple(d[1:]))
            out.append(NodeDef(n.name, n.op, n.input, n.device, n.attr, d))
        return out

    return GraphDef(fix(gd.node), gd.versions,
                    {k: FunctionDef(f.name, fix(f.node), f.input, f.output, f.capture,
                                    f.structure) for k, f in gd.library.items()})


def write_graph(graph_or_graph_def, logdir, name, as_text=True, debug_paths="relative"):
    """Writes a graph to ``logdir/name`` atomically (temp file, then rename).

    Args:
      graph_or_graph_def: a `Graph` or `GraphDef`.
      logdir: directory, created if missing.
      name: file name (``"graph.json"``, ``"graph.pb"``).
      as_text: JSON text if True (default), else the compact binary form.
      debug_paths: the source paths in each node's debug info: ``"relative"``
        (default: relative to the working directory, other files by base name),
        ``"absolute"`` or ``"none"`` (see the module docstring).
    Returns:
      The path written.
    Raises:
      InvalidArgumentError: if an op's attr is not plain data.
      ValueError: an unknown `debug_paths`.
    """
    gd = graph_or_graph_def
    if isinstance(gd, Graph):
        gd = gd.as_graph_def()
    if not isinstance(gd, GraphDef):
        raise TypeError("write_graph needs a Graph or a GraphDef. Received: "
                        f"graph_or_graph_def={type(graph_or_graph_def).__name__}")
    gd = with_debug_paths(gd, debug_paths)
    data = gd.to_json() if as_text else gd.SerializeToString()
    return atomic_write(os.path.join(logdir, name), data, makedirs=True)


# ---------------------------------------------------------------- Graph -> GraphDef
def _tensor_ref(t):
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def _op_node(op, attr):
    inputs = [_tensor_ref(t) for t in op.inputs] + ["^" + c.name for c in op.control_inputs]
    frame = op._frame
    dbg = (str(frame[0]), int(frame[1]), str(frame[2])) if frame else None
    return NodeDef(op.name, op.type, inputs, op.device or "", attr, dbg)


def _op_nodes(ops, add_shapes, where=""):
    nodes = []
    for op in ops:
        attr = dict(op.attrs)
        for k, v in attr.items():
            try:
                _check_plain(v)
            except _Unencodable as e:
                raise errors.InvalidArgumentError(
                    where + _unencodable_msg(op.name, op.type, k, e)) from None
        if add_shapes:
            attr["_output_shapes"] = [t.shape for t in op.outputs]
        nodes.append(_op_node(op, attr))
    return nodes


def graph_to_graph_def(graph, add_shapes=False):
    """The `GraphDef` of `graph` (see `Graph.as_graph_def`), with the function graphs
    its ops refer to (nested ones too) in `library`."""
    with graph._lock:
        ops = graph.get_operations()
    return GraphDef(_op_nodes(ops, add_shapes), library=_library_of(graph, ops, add_shapes))


_register_graph_def_builder(graph_to_graph_def)  # Graph.as_graph_def calls it
_register_node_def_builder(lambda op: _op_node(op, dict(op.attrs)))  # Operation.node_def


def _structure_to_data(td, counter):
    """A jax treedef (the function's `output_tree`) as plain data (see `FunctionDef`)."""
    import jax

    if jax.tree_util.treedef_is_leaf(td) and td.num_leaves == 1:
        return {"out": next(counter)}
    typ, aux = td.node_data()
    if typ is type(None):
        return None
    kids = [_structure_to_data(c, counter) for c in td.children()]
    if typ is list:
        return {"list": kids}
    if typ is tuple:
        return {"tuple": kids}
    if issubclass(typ, tuple) and hasattr(typ, "_fields"):
        return {"namedtuple": {"name": typ.__name__, "fields": list(typ._fields),
                               "values": kids}}
    if issubclass(typ, dict):
        keys = aux[-1] if typ is not dict and typ.__name__ == "defaultdict" else aux
        ordered = typ.__name__ == "OrderedDict"
        return {"odict" if ordered else "dict": [[k, v] for k, v in zip(keys, kids)]}
    return {"node": {"type": f"{typ.__module__}.{typ.__qualname__}", "children": kids}}


def _function_def(fg, add_shapes):
    import itertools

    with fg._lock:
        ops = fg.get_operations()
    where = f"function graph '{fg.name}': "
    tree = getattr(fg, "output_tree", None)
    if tree is not None and tree.num_leaves == len(fg.outputs):
        structure = _structure_to_data(tree, itertools.count())
    else:
        structure = {"list": [{"out": i} for i in range(len(fg.outputs))]}
    external = fg.external if fg.external is not None else list(fg.captures)
    caps = [[_tensor_ref(o), _tensor_ref(fg.captures[o])] for o in external]
    try:
        _check_plain(structure)
    except _Unencodable as e:
        raise errors.InvalidArgumentError(
            f"{where}its output structure holds {e}, which a graph file cannot hold") from None
    return FunctionDef(fg.name, _op_nodes(ops, add_shapes, where),
                       [_tensor_ref(t) for t in fg.inputs],
                       [_tensor_ref(t) for t in fg.outputs], caps, structure)


def _library_of(graph, ops, add_shapes):
    """Every function graph reachable from `ops` of `graph`, as `FunctionDef`s (callers
    before callees)."""

    lib = {}
    stack = [(graph, op) for op in reversed(ops)]
    while stack:
        g, op = stack.pop()
        for fname in function_refs(op.type, op.attrs):
            if fname in lib:
                continue
            fg = lookup_function(g, fname)
            if fg is None:
                raise errors.InvalidArgumentError(
                    f"{op.type} '{op.name}' refers to the function graph '{fname}', which "
                    "is not registered in this process", op=op)
            lib[fname] = _function_def(fg, add_shapes)
            with fg._lock:
                fops = fg.get_operations()
            stack.extend((fg, o) for o in reversed(fops))
    return lib


