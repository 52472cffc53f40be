"""Graph files: `GraphDef` as plain data, `import_graph_def`, meta graphs, TensorBoard.

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

Meta graphs (``"format": "mylib.MetaGraphDef"``) add ``meta_info_def``,
``collection_def`` (per collection, entries naming tensors, ops or variables, or plain
values) and ``saver_def``. Loading never runs code (no pickle, no eval): a file that is
not one of these raises `DataLossError` naming the path.
"""

from __future__ import annotations

import base64
import json
import math
import os
import tempfile
import warnings

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core import errors
from mylib.core.graph import Graph, Operation, Tensor, get_default_graph
from mylib.core.tensor_shape import TensorShape

__all__ = ["NodeDef", "FunctionDef", "GraphDef", "MetaGraphDef", "import_graph_def", "load_graph_def",
           "write_graph", "export_meta_graph", "import_meta_graph",
           "to_tensorboard_graph_def"]

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


def _check_file_tree(tree, path, formats):
    if not isinstance(tree, dict) or tree.get("format") not in formats:
        got = tree.get("format") if isinstance(tree, dict) else type(tree).__name__
        raise errors.DataLossError(
            f"{path}: not a mylib graph file: format is {got!r}, expected one of "
            f"{sorted(formats)}")


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


def _atomic_write(path, data):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Writes a graph to ``logdir/name`` atomically (temp file, then rename).

    Args:
      graph_or_graph_def: a `Graph` or `GraphDef`.
      logdir: directory, created if missing.
      name: file name (``"graph.json"``, ``"graph.pb"``).
      as_text: JSON text if True (default), else the compact binary form.
    Returns:
      The path written.
    Raises:
      InvalidArgumentError: if an op's attr is not plain data.
    """
    gd = graph_or_graph_def
    if isinstance(gd, Graph):
        gd = gd.as_graph_def()
    if not isinstance(gd, GraphDef):
        raise TypeError("write_graph needs a Graph or a GraphDef. Received: "
                        f"graph_or_graph_def={type(graph_or_graph_def).__name__}")
    data = gd.to_json() if as_text else gd.SerializeToString()
    return _atomic_write(os.path.join(logdir, name), data)


# ---------------------------------------------------------------- Graph -> GraphDef
def _tensor_ref(t):
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


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
        inputs = [_tensor_ref(t) for t in op.inputs] + ["^" + c.name for c in op.control_inputs]
        frame = op._frame
        dbg = (str(frame[0]), int(frame[1]), str(frame[2])) if frame else None
        nodes.append(NodeDef(op.name, op.type, inputs, op.device or "", attr, dbg))
    return nodes


def graph_to_graph_def(graph, add_shapes=False):
    """The `GraphDef` of `graph` (see `Graph.as_graph_def`), with the function graphs
    its ops refer to (nested ones too) in `library`."""
    with graph._lock:
        ops = graph.get_operations()
    return GraphDef(_op_nodes(ops, add_shapes), library=_library_of(graph, ops, add_shapes))


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
    from mylib.core.func_graph import function_refs, lookup_function

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
                     op_dict=None, producer_op_list=None, _clear_devices=False,
                     _return_mapping=False):
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
    Returns:
      The list of `return_elements` (None if not given).
    Raises:
      NotFoundError: ``Op type not registered 'Foo' in node 'bar'`` (``... of function
        'f'`` inside a library function).
      InvalidArgumentError: a missing input, a cycle, a bad `input_map`, or an attr an
        op type rejects; nothing is added when these are detected up front.
      ValueError: if an `input_map` or `return_elements` name is not in `graph_def`.
    """
    from mylib.core.op_registry import get_op_def
    from mylib.core.ops import array_ops

    gd = _as_graph_def(graph_def)
    graph = get_default_graph()
    nodes = gd.node
    names = {n.name for n in nodes}
    name = "import" if name is None else name

    # --- validate everything that can be checked before adding ops ---
    op_defs = []
    for n in nodes:
        try:
            op_defs.append(get_op_def(n.op))
        except errors.NotFoundError:
            raise errors.NotFoundError(
                f"Op type not registered '{n.op}' in node '{n.name}': importing a graph "
                "accepts only op types registered in this process (import the module "
                "that defines it first)") from None
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
            from mylib.core.op_registry import convert_to_tensor

            t = convert_to_tensor(v)
            if t.graph is not graph:
                raise ValueError(f"input_map['{k}'] = '{t.name}' is not in the default graph")
            mapped[ck] = t
    for ret in return_elements or []:
        if _parse_input(ret)[0] not in names:
            raise ValueError(f"Requested return_element '{ret}' not found in graph_def.")
    order = _topological(nodes)
    lib_info = _check_library(gd)

    if graph.finalized:
        raise RuntimeError("Graph is finalized and cannot be modified.")
    # A dry run into a scratch graph (mapped inputs stood in by placeholders of their
    # dtype and shape) finds shape and attr errors before the real graph is touched.
    # Its function graphs get throw-away names and are unregistered after.
    scratch = Graph()
    scratch_fns = []
    try:
        with scratch.as_default():
            stand_ins = {ck: (array_ops.no_op() if ck.startswith("^") else
                              array_ops.placeholder(t.dtype, t.shape.as_tuple()))
                         for ck, t in mapped.items()}
            _import_into(scratch, gd, op_defs, order, lib_info, stand_ins, _clear_devices,
                         None, True, scratch_fns)
    finally:
        from mylib.core.func_graph import unregister

        for fg in scratch_fns:
            unregister(fg)
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


def _check_library(gd):
    """Validates `gd.library` before anything is added: op types registered (and not
    host ops) inside every function, inputs present, no cycles, refs of inputs, outputs
    and captures naming nodes of the function, every function an op names present.

    Returns:
      dict function name -> (op_defs, topological order, names of the functions its
      nodes call, in first-use order).
    """
    from mylib.core.func_graph import function_refs
    from mylib.core.op_registry import get_op_def

    lib = gd.library
    info = {}

    def callees(nodes, where):
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

    for fname, fdef in lib.items():
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
        info[fname] = (op_defs, order, callees(fdef.node, where))
    callees(gd.node, "")
    # No function may (transitively) call itself.
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
    return info


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
    from mylib.core.func_graph import FuncGraph, rewrite_function_attrs

    lib = gd.library
    fn_map, built = {}, {}  # old name -> new name; old name -> [fg, ops]
    renamed = {}  # old shared name -> new (variables renamed by the import scope)
    used = set()

    def rewrite(nodes):
        out = []
        for n in nodes:
            a = rewrite_function_attrs(n.op, n.attr, fn_map)
            out.append(n if a is n.attr else
                       NodeDef(n.name, n.op, n.input, n.device, a, n.debug_info))
        return out

    def bind(fname, outer_ops, outer_mapped):
        fdef, (fg, ops) = lib[fname], built[fname]
        where = f"function '{fname}': "
        pairs = []
        for outer_ref, inner_ref in fdef.capture:
            ck = _canonical(outer_ref)
            if ck in outer_mapped:
                used.add(ck)
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

    def build(fname, outer):
        fdef = lib[fname]
        f_op_defs, f_order, callees = lib_info[fname]
        where = f"function '{fname}': "
        fg = FuncGraph.for_import(fname, outer, fresh)
        built_fns.append(fg)
        fn_map[fname] = fg.name
        built[fname] = [fg, None]
        own = []
        for c in callees:
            if c not in built:
                build(c, fg)
                own.append(c)
        try:
            ops, _ = _create_ops(fg, rewrite(fdef.node), f_op_defs, f_order, {},
                                 clear_devices)
        except errors.OpError as e:
            raise type(e)(f"import_graph_def: in function '{fname}': {e.message}") from None
        built[fname][1] = ops
        outs = [_tensor_in(ops, r, where) for r in fdef.output]
        fg.set_signature([_tensor_in(ops, r, where) for r in fdef.input], outs,
                         _structure_from_data(fdef.structure, outs, where))
        for c in own:
            bind(c, ops, {})

    root_own = []
    for c in _root_callees(gd, lib):
        if c not in built:
            build(c, graph)
            root_own.append(c)
    with graph.name_scope(scope) if scope else _null():
        new_ops, used_root = _create_ops(graph, rewrite(gd.node), op_defs, order, mapped,
                                         clear_devices, renamed)
    used |= used_root
    for c in root_own:
        bind(c, new_ops, mapped)
    if renamed:
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
    return new_ops, used


def _root_callees(gd, lib):
    from mylib.core.func_graph import function_refs

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


# ---------------------------------------------------------------- meta graphs
def _variable_cls():
    from mylib.core.variables import Variable

    return Variable


def _collection_entry(v, graph):
    Variable = _variable_cls()
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
                      **kwargs):
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
    Returns:
      The `MetaGraphDef`.
    """
    graph = graph or get_default_graph()
    gd = graph_def if graph_def is not None else graph.as_graph_def()
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
    import mylib

    info = {"mylib_version": getattr(mylib, "__version__", "?"),
            "stripped_op_list": sorted({n.op for n in gd.node} | {
                n.op for f in gd.library.values() for n in f.node}), "tags": []}
    info.update(meta_info_def or {})
    meta = MetaGraphDef(info, gd, collection_def, saver_def)
    if filename is not None:
        if as_text is None:
            as_text = os.path.splitext(filename)[1].lower() in (".json", ".pbtxt", ".txt")
        _atomic_write(filename, meta.to_json() if as_text else meta.SerializeToString())
    return meta


def read_meta_graph_file(filename):
    """Reads a `MetaGraphDef` (or a plain `GraphDef` file, with no collections)."""
    return _meta_from_file_tree(_parse(_read(filename), filename), filename)


def _variable_from_imported(graph, handle_op, initializer_op, snapshot, initial_value,
                            trainable, validate_shape=True):
    """A `Variable` bound to already-imported ops (TF's `Variable(variable_def=...)`):
    built without running `Variable.__init__`, which would create new ops."""
    Variable = _variable_cls()
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


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None,
                      input_map=None, **kwargs):
    """Imports a meta graph into the default graph and rebuilds its collections.

    Args:
      meta_graph_or_file: a `MetaGraphDef` or a path written by `export_meta_graph`.
      clear_devices: drop device strings.
      import_scope: name scope prefixed to imported names (default: none, so names and
        checkpoint keys are unchanged).
      input_map: as in `import_graph_def`.
    Returns:
      A `mylib.train.Saver` over the imported variables when `mylib.train.Saver` exists
      and there are variables, else None.
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
    if not variables:
        return None
    try:
        from mylib.train import Saver
    except ImportError:
        return None
    return Saver(var_list=list(variables.values()))


# ---------------------------------------------------------------- TensorBoard
_TB_TYPES = {"float16": "DT_HALF", "bfloat16": "DT_BFLOAT16", "float32": "DT_FLOAT",
             "float64": "DT_DOUBLE", "complex64": "DT_COMPLEX64",
             "complex128": "DT_COMPLEX128", "int8": "DT_INT8", "int16": "DT_INT16",
             "int32": "DT_INT32", "int64": "DT_INT64", "uint8": "DT_UINT8",
             "uint16": "DT_UINT16", "uint32": "DT_UINT32", "uint64": "DT_UINT64",
             "bool": "DT_BOOL", "string": "DT_STRING", "resource": "DT_RESOURCE"}
_TB_VALS = {"DT_HALF": None, "DT_BFLOAT16": None, "DT_FLOAT": "float_val",
            "DT_DOUBLE": "double_val", "DT_INT8": "int_val", "DT_INT16": "int_val",
            "DT_INT32": "int_val", "DT_UINT8": "int_val", "DT_UINT16": "int_val",
            "DT_INT64": "int64_val", "DT_BOOL": "bool_val"}


def to_tensorboard_graph_def(graph_or_graph_def, max_tensor_values=16):
    """A `tensorboardX.proto.graph_pb2.GraphDef` for TensorBoard's Graphs tab.

    Node names, op types, inputs (``"^name"`` for control inputs) and devices are kept;
    attrs become `AttrValue`s: dtype names -> ``type``, shapes (and ``_output_shapes``,
    added from a `Graph`, which labels the edges) -> ``shape``, scalars -> ``s/i/f/b``,
    arrays -> ``tensor`` (values only up to `max_tensor_values` elements), anything else
    -> its short text in ``s``.
    """
    from tensorboardX.proto import graph_pb2

    gd = graph_or_graph_def
    if isinstance(gd, Graph):
        gd = gd.as_graph_def(add_shapes=True)
    out = graph_pb2.GraphDef()
    for n in gd.node:
        nd = out.node.add()
        nd.name, nd.op, nd.device = n.name, n.op, n.device
        nd.input.extend(n.input)
        for k, v in n.attr.items():
            _tb_attr(nd.attr[k], k, v, max_tensor_values)
    out.versions.producer = 22
    return out


def _tb_dtype_enum(v):
    from tensorboardX.proto import types_pb2

    name = v.name if isinstance(v, _dtypes.DType) else v
    tb = _TB_TYPES.get(name) if isinstance(name, str) else None
    return None if tb is None else types_pb2.DataType.Value(tb)


def _tb_shape(proto, shape):
    shape = shape if isinstance(shape, TensorShape) else TensorShape(shape)
    if shape.rank is None:
        proto.unknown_rank = True
        return
    for d in shape.as_tuple():
        proto.dim.add().size = -1 if d is None else int(d)


def _is_shape_like(v):
    return isinstance(v, TensorShape) or (isinstance(v, tuple) and all(
        d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in v))


def _tb_attr(av, key, v, max_values):
    if isinstance(v, _dtypes.DType) or (isinstance(v, str) and (
            key in ("dtype", "T", "out_type", "DstT", "SrcT", "Tout", "output_type")
            or key.endswith("dtype")) and _tb_dtype_enum(v) is not None):
        av.type = _tb_dtype_enum(v)
    elif key == "_output_shapes" and isinstance(v, list):
        for s in v:
            _tb_shape(av.list.shape.add(), s)
    elif (key == "shape" or key.endswith("_shape")) and (v is None or _is_shape_like(v)):
        _tb_shape(av.shape, v)
    elif isinstance(v, (np.ndarray, np.generic)):
        _tb_tensor(av.tensor, np.asarray(v), max_values)
    elif isinstance(v, bool):
        av.b = v
    elif isinstance(v, int) and -2 ** 63 <= v < 2 ** 63:
        av.i = v
    elif isinstance(v, float):
        av.f = v
    elif isinstance(v, str):
        av.s = v.encode("utf-8")
    elif isinstance(v, bytes):
        av.s = v
    elif isinstance(v, (list, tuple)) and v and all(
            isinstance(x, int) and not isinstance(x, bool) for x in v):
        av.list.i.extend(v)
    elif isinstance(v, (list, tuple)) and v and all(isinstance(x, float) for x in v):
        av.list.f.extend(v)
    elif isinstance(v, (list, tuple)) and v and all(isinstance(x, str) for x in v):
        av.list.s.extend(x.encode("utf-8") for x in v)
    else:
        s = repr(v)
        av.s = (s if len(s) <= 200 else s[:197] + "...").encode("utf-8")


def _tb_tensor(tp, a, max_values):
    enum = _tb_dtype_enum(_dtypes.as_dtype(a.dtype).name) if a.dtype.kind not in "OSU" \
        else _tb_dtype_enum("string")
    if enum is not None:
        tp.dtype = enum
    _tb_shape(tp.tensor_shape, a.shape)
    if a.size > max_values:
        return  # summarized: dtype and shape only
    from tensorboardX.proto import types_pb2

    field = _TB_VALS.get(types_pb2.DataType.Name(tp.dtype)) if enum is not None else None
    flat = a.reshape(-1)
    if field is not None:
        getattr(tp, field).extend(flat.tolist())
    elif a.dtype.kind in "OSU":
        tp.string_val.extend(x if isinstance(x, bytes) else str(x).encode("utf-8")
                             for x in flat.tolist())
