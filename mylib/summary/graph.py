"""The TensorBoard form of a graph: a `tensorboardX` `GraphDef` protobuf for the Graphs tab."""

from __future__ import annotations

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.graph import Graph
from mylib.core.graph_io import _tensor_ref
from mylib.core.tensor_shape import TensorShape

__all__ = ["to_tensorboard_graph_def"]

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
    -> its short text in ``s``. A `Graph` is read from its ops, so an attr that a graph
    file could not hold is still shown (by its text) and never fails the conversion.
    """
    from tensorboardX.proto import graph_pb2

    out = graph_pb2.GraphDef()
    for name, op_type, inputs, device, attrs in _nodes(graph_or_graph_def):
        nd = out.node.add()
        nd.name, nd.op, nd.device = name, op_type, device or ""
        nd.input.extend(inputs)
        for k, v in attrs.items():
            try:
                _tb_attr(nd.attr[k], k, v, max_tensor_values)
            except Exception:  # noqa: BLE001 - a display attribute must never fail a run
                nd.attr[k].Clear()
                nd.attr[k].s = type(v).__name__.encode("utf-8")
    out.versions.producer = 22
    return out


def _nodes(graph_or_graph_def):
    """(name, op type, inputs, device, attrs) of each node, in creation order."""
    if not isinstance(graph_or_graph_def, Graph):
        for n in graph_or_graph_def.node:
            yield n.name, n.op, n.input, n.device, n.attr
        return
    for op in graph_or_graph_def.get_operations():
        attrs = dict(op.attrs)
        if op.outputs:
            attrs["_output_shapes"] = [t.shape for t in op.outputs]
        inputs = [_tensor_ref(t) for t in op.inputs] + ["^" + c.name for c in op.control_inputs]
        yield op.name, op.type, inputs, op.device, attrs


def _tb_dtype_enum(v):
    from tensorboardX.proto import types_pb2

    name = v.name if isinstance(v, _dtypes.DType) else v
    tb = _TB_TYPES.get(name) if isinstance(name, str) else None
    return None if tb is None else types_pb2.DataType.Value(tb)


def _tb_shape(proto, shape):
    proto.SetInParent()  # a scalar's shape has no dims, yet is set
    shape = shape if isinstance(shape, TensorShape) else TensorShape(shape)
    if shape.rank is None:
        proto.unknown_rank = True
        return
    for d in shape.as_tuple():
        proto.dim.add().size = -1 if d is None else int(d)


def _is_shape_like(v):
    return isinstance(v, TensorShape) or (isinstance(v, (tuple, list)) and all(
        d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in v))


def _tb_attr(av, key, v, max_values):
    if isinstance(v, _dtypes.DType) or (isinstance(v, str) and (
            key in ("dtype", "T", "out_type", "DstT", "SrcT", "Tout", "Tidx", "output_type")
            or key.endswith("dtype")) and _tb_dtype_enum(v) is not None):
        av.type = _tb_dtype_enum(v)
    elif key == "_output_shapes" and isinstance(v, list):
        av.list.SetInParent()
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

