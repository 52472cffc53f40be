"""String ops of TensorFlow 1 input pipelines, as host ops.

XLA has no string type, so string tensors are host values: numpy object arrays whose
elements are `bytes` (``str`` is encoded as UTF-8), fed through a
``placeholder(string)``, made by `constant`, or read by queues and readers. Every op
here runs on the host, outside XLA, between a step's compiled clusters (as
`dynamic_stitch` or `py_func` do), and gives numpy arrays: `bytes` objects for
strings, numbers for `string_to_number` and `decode_csv`'s numeric columns, which later
XLA clusters then take. A string tensor given to an XLA op raises InvalidArgumentError
naming that op.

Ops: `string_to_number` (``tf.strings.to_number``), `as_string`, `reduce_join`,
`substr`, `regex_replace`, `regex_full_match`, `string_join` (``tf.strings.join``),
`string_length`, `string_lower` / `string_upper` / `string_strip`, `decode_csv`.
"""

from __future__ import annotations

import csv
import re

import numpy as np

from mylib import errors
from mylib.core import dtypes as _dtypes
from mylib.core.op_registry import NotDifferentiable, OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops import _shape_rules
from mylib.core.ops.constant_ops import constant, constant_value
from mylib.core.tensor_shape import TensorShape, broadcast_shapes

__all__ = ["string_to_number", "as_string", "reduce_join", "substr", "regex_replace",
           "regex_full_match", "string_join", "string_length", "string_lower",
           "string_upper", "string_strip", "decode_csv"]


def _b(x):
    """One string element as bytes."""
    if isinstance(x, bytes):
        return x
    if isinstance(x, (str, np.str_)):
        return x.encode("utf-8")
    if isinstance(x, np.bytes_):
        return bytes(x)
    raise errors.InvalidArgumentError(f"expected a string element, got {type(x).__name__}")


def _bytes_array(a):
    """`a` as an object array of bytes (same shape)."""
    a = np.asarray(a, dtype=object)
    out = np.empty(a.shape, dtype=object)
    for i, x in np.ndenumerate(a):
        out[i] = _b(x)
    return out


def _map(fn, a, dtype=object):
    a = _bytes_array(a)
    out = np.empty(a.shape, dtype=dtype)
    for i, x in np.ndenumerate(a):
        out[i] = fn(x)
    return out


def _string_input(x, what):
    t = convert_to_tensor(x) if hasattr(x, "op") or hasattr(x, "_as_tensor") else \
        constant(x, dtype=_dtypes.string)
    if t.dtype != _dtypes.string:
        raise errors.InvalidArgumentError(
            f"{what}: expected a string tensor, got {t.dtype.name} '{t.name}'")
    return t


def _same_shape(x, **_):
    return TensorSpec(x.shape, _dtypes.string)


# ---------------------------------------------------------------- StringToNumber
def _to_number_kernel(s, *, out_type):
    dt = _dtypes.as_dtype(out_type)

    def conv(x):
        text = x.decode("utf-8", "replace").strip()
        try:
            return float(text) if dt.is_floating else int(text, 10)
        except ValueError:
            raise errors.InvalidArgumentError(
                f"StringToNumberOp could not correctly convert string: {text}") from None

    out = _map(conv, s, dtype=object)
    return np.asarray(out.astype(dt.np)) if out.size else np.zeros(out.shape, dt.np)


StringToNumber = OpDef("StringToNumber", kernel=_to_number_kernel, host=True)
NotDifferentiable("StringToNumber")


@StringToNumber.shape_fn
def _to_number_shape(s, *, out_type):
    return TensorSpec(s.shape, out_type)


def string_to_number(string_tensor, out_type=_dtypes.float32, name=None):
    """Parses each string as a number (``tf.strings.to_number``), on the host.

    Args:
      string_tensor: string `Tensor` of any shape.
      out_type: float32 (default), float64, int32 or int64.
    Returns:
      `Tensor` of `string_tensor`'s shape and `out_type`.
    Raises:
      InvalidArgumentError: (when run) a string that is not a number, as TensorFlow:
        "StringToNumberOp could not correctly convert string: ...".
    """
    dt = _dtypes.as_dtype(out_type)
    if not (dt.is_floating or dt.is_integer):
        raise TypeError(f"string_to_number: out_type must be a float or int type, got {dt.name}")
    return StringToNumber(_string_input(string_tensor, "string_to_number"),
                          out_type=dt.name, name=name)


# ---------------------------------------------------------------- AsString
def _as_string_kernel(x, *, precision, scientific, shortest, width, fill):
    kind = x.dtype.kind
    if kind == "b":
        return _map_values(lambda v: b"true" if v else b"false", x)
    flag = "0" if fill == "0" else ""
    w = str(width) if width > -1 else ""
    if kind in "iu":
        spec = f"%{flag}{w}d"
    elif kind == "f":
        p = f".{precision}" if precision > -1 else ""
        spec = f"%{flag}{w}{p}{'e' if scientific else 'g' if shortest else 'f'}"
    else:
        raise errors.InvalidArgumentError(f"as_string: unsupported dtype {x.dtype}")
    return _map_values(lambda v: (spec % v).encode("ascii"), x)


def _map_values(fn, x):
    x = np.asarray(x)
    out = np.empty(x.shape, dtype=object)
    for i, v in np.ndenumerate(x):
        out[i] = fn(v.item() if hasattr(v, "item") else v)
    return out


AsString = OpDef("AsString", kernel=_as_string_kernel, host=True,
                 shape_fn=lambda x, **_: TensorSpec(x.shape, _dtypes.string))
NotDifferentiable("AsString")


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1,  # noqa: A002
              fill="", name=None):
    """Formats each number (or bool) as a string, on the host, as TensorFlow's printf
    formats: ``%d`` for integers, ``%f`` (``%e`` with `scientific`, ``%g`` with
    `shortest`) for floats, ``true`` / ``false`` for bools.

    Args:
      input: numeric or bool `Tensor`.
      precision: digits after the point for floats (-1: the format's default, 6).
      width: minimum width (-1: none), padded with spaces, or zeros if `fill` is "0".
    Returns:
      string `Tensor` of `input`'s shape.
    """
    x = convert_to_tensor(input)
    if fill not in ("", " ", "0"):
        raise errors.InvalidArgumentError(f"as_string: fill must be '', ' ' or '0', got {fill!r}")
    if scientific and shortest:
        raise errors.InvalidArgumentError("as_string: cannot select both scientific and shortest")
    if x.dtype == _dtypes.string:
        raise errors.InvalidArgumentError("as_string: input is already a string tensor")
    return AsString(x, precision=int(precision), scientific=bool(scientific),
                    shortest=bool(shortest), width=int(width), fill=fill, name=name)


# ---------------------------------------------------------------- ReduceJoin
def _reduce_join_kernel(x, *, axis, keepdims, separator):
    x = _bytes_array(x)
    sep = _b(separator)
    axes = tuple(range(x.ndim)) if axis is None else tuple(a % x.ndim for a in axis)
    keep = [d for d in range(x.ndim) if d not in axes]
    moved = np.transpose(x, keep + list(axes))
    lead = moved.shape[:len(keep)]
    flat = moved.reshape(lead + (-1,))
    out = np.empty(lead, dtype=object)
    for i in np.ndindex(*lead):
        out[i] = sep.join(flat[i])
    if keepdims:
        out = out.reshape([1 if d in axes else x.shape[d] for d in range(x.ndim)])
    return out


ReduceJoin = OpDef("ReduceJoin", kernel=_reduce_join_kernel, host=True)
NotDifferentiable("ReduceJoin")


@ReduceJoin.shape_fn
def _reduce_join_shape(x, *, axis, keepdims, separator):
    if x.shape.rank is None:
        return TensorSpec(TensorShape(None), _dtypes.string)
    dims = x.shape.as_list()
    axes = range(len(dims)) if axis is None else [a % len(dims) for a in axis]
    out = [1 if i in axes else d for i, d in enumerate(dims)] if keepdims else \
        [d for i, d in enumerate(dims) if i not in axes]
    return TensorSpec(out, _dtypes.string)


def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None,
                keep_dims=None, reduction_indices=None):
    """Joins strings along `axis` with `separator` (``tf.strings.reduce_join``).

    Args:
      inputs: string `Tensor`.
      axis: int or list of ints known when the graph is built; None joins all.
      keepdims: keep the joined axes with size 1 (`keep_dims`: TF1's name).
    Returns:
      string `Tensor`: `inputs`' shape without (or with size-1) joined axes.
    """
    x = _string_input(inputs, "reduce_join")
    if axis is None:
        axis = reduction_indices
    if keep_dims is not None:
        keepdims = keep_dims
    if axis is not None:
        axis = tuple(int(a) for a in np.asarray(axis).reshape(-1))
        if x.shape.rank is not None:
            for a in axis:
                _shape_rules.normalize_axis(a, x.shape.rank)
    return ReduceJoin(x, axis=axis, keepdims=bool(keepdims), separator=separator, name=name)


# ---------------------------------------------------------------- Substr
def _substr_kernel(x, pos, length, *, unit):
    x = _bytes_array(x)
    pos, length = np.asarray(pos), np.asarray(length)
    shape = np.broadcast_shapes(x.shape, pos.shape, length.shape)
    xs, ps, ls = (np.broadcast_to(a, shape) for a in (x, pos, length))
    out = np.empty(shape, dtype=object)
    for i in np.ndindex(*shape):
        s = xs[i].decode("utf-8") if unit == "UTF8_CHAR" else xs[i]
        p, n = int(ps[i]), int(ls[i])
        if p < 0:
            p += len(s)
        if not 0 <= p <= len(s):
            raise errors.InvalidArgumentError(
                f"pos {int(ps[i])} out of range for string b'{xs[i].decode('utf-8', 'replace')}'"
                f" at index {', '.join(map(str, i))}")
        if n < 0:
            raise errors.InvalidArgumentError(f"len must be non-negative, got {n}")
        piece = s[p:p + n]
        out[i] = piece.encode("utf-8") if unit == "UTF8_CHAR" else piece
    return out


Substr = OpDef("Substr", kernel=_substr_kernel, host=True)
NotDifferentiable("Substr")


@Substr.shape_fn
def _substr_shape(x, pos, length, *, unit):
    return TensorSpec(broadcast_shapes(broadcast_shapes(x.shape, pos.shape), length.shape), _dtypes.string)


def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002 - TF's names
    """``input[pos:pos + len]`` of each string (``tf.strings.substr``); `pos` and `len`
    broadcast against `input`. A negative `pos` counts from the end.

    Args:
      input: string `Tensor`.
      pos, len: int scalars or `Tensor`s.
      unit: "BYTE" (default) or "UTF8_CHAR".
    Returns:
      string `Tensor` of the broadcast shape.
    Raises:
      InvalidArgumentError: (when run) `pos` beyond a string's end, as TensorFlow.
    """
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise errors.InvalidArgumentError(f"substr: unit must be BYTE or UTF8_CHAR, got {unit!r}")
    return Substr(_string_input(input, "substr"), convert_to_tensor(pos, dtype_hint=_dtypes.int32),
                  convert_to_tensor(len, dtype_hint=_dtypes.int32), unit=unit, name=name)


# ---------------------------------------------------------------- regexes
def _rewrite(rewrite):
    # RE2's rewrite names groups \0..\9; Python's re.sub names the whole match \g<0>.
    return re.sub(rb"\\0", rb"\\g<0>", _b(rewrite))


def _regex_replace_kernel(x, *, pattern, rewrite, replace_global):
    rx = re.compile(_b(pattern))
    rw = _rewrite(rewrite)
    return _map(lambda s: rx.sub(rw, s, count=0 if replace_global else 1), x)


RegexReplace = OpDef("RegexReplace", kernel=_regex_replace_kernel, host=True,
                     shape_fn=_same_shape)
NotDifferentiable("RegexReplace")


def _static_string(v, what):
    if hasattr(v, "op"):
        cv = constant_value(v)
        if cv is None:
            raise errors.UnimplementedError(
                f"{what} must be known when the graph is built (a Python string)")
        v = np.asarray(cv).reshape(-1)[0]
    return _b(v).decode("utf-8")


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Replaces matches of `pattern` by `rewrite` in each string
    (``tf.strings.regex_replace``). Python's `re` runs the pattern: RE2's syntax
    (TensorFlow's) is the same for common patterns; groups are ``\\1``..``\\9``.

    Args:
      input: string `Tensor`.
      pattern, rewrite: Python strings (or constant string tensors).
      replace_global: replace every match (default) or only the first.
    Returns:
      string `Tensor` of `input`'s shape.
    """
    p = _static_string(pattern, "regex_replace: pattern")
    try:
        re.compile(p)
    except re.error as e:
        raise errors.InvalidArgumentError(f"regex_replace: invalid pattern {p!r}: {e}") from None
    return RegexReplace(_string_input(input, "regex_replace"), pattern=p,
                        rewrite=_static_string(rewrite, "regex_replace: rewrite"),
                        replace_global=bool(replace_global), name=name)


def _full_match_kernel(x, *, pattern):
    rx = re.compile(_b(pattern))
    return _map(lambda s: rx.fullmatch(s) is not None, x, dtype=bool)


RegexFullMatch = OpDef("RegexFullMatch", kernel=_full_match_kernel, host=True,
                       shape_fn=lambda x, **_: TensorSpec(x.shape, _dtypes.bool_))
NotDifferentiable("RegexFullMatch")


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each whole string matches `pattern` (``tf.strings.regex_full_match``).

    Returns:
      bool `Tensor` of `input`'s shape.
    """
    p = _static_string(pattern, "regex_full_match: pattern")
    return RegexFullMatch(_string_input(input, "regex_full_match"), pattern=p, name=name)


# ---------------------------------------------------------------- StringJoin
def _string_join_kernel(*xs, separator):
    arrs = [_bytes_array(x) for x in xs]
    shape = np.broadcast_shapes(*(a.shape for a in arrs))
    arrs = [np.broadcast_to(a, shape) for a in arrs]
    sep = _b(separator)
    out = np.empty(shape, dtype=object)
    for i in np.ndindex(*shape):
        out[i] = sep.join(a[i] for a in arrs)
    return out


StringJoin = OpDef("StringJoin", kernel=_string_join_kernel, host=True)
NotDifferentiable("StringJoin")


@StringJoin.shape_fn
def _string_join_shape(*xs, separator):
    shape = TensorShape([])
    for x in xs:
        shape = broadcast_shapes(shape, x.shape)
    return TensorSpec(shape, _dtypes.string)


def string_join(inputs, separator="", name=None):
    """Joins the strings of `inputs` element-wise with `separator`
    (``tf.strings.join``); scalars broadcast.

    Args:
      inputs: list of string `Tensor`s of one shape (or scalars).
    Returns:
      string `Tensor` of the broadcast shape.
    """
    ts = [_string_input(x, "string_join") for x in inputs]
    if not ts:
        raise errors.InvalidArgumentError("string_join: `inputs` must not be empty")
    return StringJoin(*ts, separator=separator, name=name)


# ---------------------------------------------------------------- element-wise
def _length_kernel(x, *, unit):
    if unit == "UTF8_CHAR":
        return _map(lambda s: len(s.decode("utf-8")), x, dtype=np.int32)
    return _map(len, x, dtype=np.int32)


StringLength = OpDef("StringLength", kernel=_length_kernel, host=True,
                     shape_fn=lambda x, **_: TensorSpec(x.shape, _dtypes.int32))
NotDifferentiable("StringLength")


def string_length(input, name=None, unit="BYTE"):  # noqa: A002
    """The length of each string in bytes (or in UTF-8 characters with
    ``unit="UTF8_CHAR"``), as ``tf.strings.length``.

    Returns:
      int32 `Tensor` of `input`'s shape.
    """
    return StringLength(_string_input(input, "string_length"), unit=unit, name=name)


_CASES = {"lower": lambda s: s.lower(), "upper": lambda s: s.upper(), "strip": lambda s: s.strip()}


def _case_kernel(x, *, how):
    return _map(_CASES[how], x)


StringTransform = OpDef("StringTransform", kernel=_case_kernel, host=True,
                        shape_fn=_same_shape)
NotDifferentiable("StringTransform")


def string_lower(input, encoding="", name=None):  # noqa: A002
    """Lower-cases the ASCII letters of each string (``tf.strings.lower``)."""
    return StringTransform(_string_input(input, "lower"), how="lower", name=name)


def string_upper(input, encoding="", name=None):  # noqa: A002
    """Upper-cases the ASCII letters of each string (``tf.strings.upper``)."""
    return StringTransform(_string_input(input, "upper"), how="upper", name=name)


def string_strip(input, name=None):  # noqa: A002
    """Removes leading and trailing whitespace (``tf.strings.strip``)."""
    return StringTransform(_string_input(input, "strip"), how="strip", name=name)


# ---------------------------------------------------------------- DecodeCSV
def _decode_csv_kernel(records, *defaults, out_types, field_delim, use_quote_delim, na_value,
                       select_cols):
    recs = _bytes_array(records)
    n = len(out_types)
    outs = [np.empty(recs.shape, dtype=object if t == "string" else _dtypes.as_dtype(t).np)
            for t in out_types]
    na = _b(na_value)
    for i, rec in np.ndenumerate(recs):
        text = rec.decode("utf-8")
        if use_quote_delim:
            fields = next(csv.reader([text], delimiter=field_delim, quotechar='"'), [""])
        else:
            fields = text.split(field_delim)
        if select_cols is not None:
            if max(select_cols) >= len(fields):
                raise errors.InvalidArgumentError(
                    f"Expect {max(select_cols) + 1} fields but have {len(fields)} in record "
                    f"{', '.join(map(str, i))}")
            fields = [fields[c] for c in select_cols]
        if len(fields) != n:
            raise errors.InvalidArgumentError(
                f"Expect {n} fields but have {len(fields)} in record "
                f"{', '.join(map(str, i))}")
        for k, (f, t) in enumerate(zip(fields, out_types)):
            fb = f.encode("utf-8")
            if fb == b"" or fb == na and na:
                d = np.asarray(defaults[k]).reshape(-1)
                if d.size == 0:
                    raise errors.InvalidArgumentError(
                        f"Field {k} is required but missing in record "
                        f"{', '.join(map(str, i))}!")
                outs[k][i] = _b(d[0]) if t == "string" else d[0]
            elif t == "string":
                outs[k][i] = fb
            else:
                try:
                    outs[k][i] = float(f) if _dtypes.as_dtype(t).is_floating else int(f, 10)
                except ValueError:
                    raise errors.InvalidArgumentError(
                        f"Field {k} in record {', '.join(map(str, i))} is not a valid "
                        f"{t}: {f}") from None
    return tuple(outs)


DecodeCSV = OpDef("DecodeCSV", kernel=_decode_csv_kernel, host=True)
NotDifferentiable("DecodeCSV")


@DecodeCSV.shape_fn
def _decode_csv_shape(records, *defaults, out_types, **_):
    return [TensorSpec(records.shape, t) for t in out_types]


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """Parses CSV lines into columns (``tf.io.decode_csv``), on the host.

    Args:
      records: string `Tensor` of any shape, one CSV line per element.
      record_defaults: one entry per column: a one-element list (or tensor) giving
        the column's dtype (float32, float64, int32, int64 or string) and the value of
        an empty field, or an empty list of a dtype-typed tensor for a required column
        (``[]`` is float32 and required).
      field_delim: one character. use_quote_delim: double quotes group a field.
      na_value: a field equal to it counts as empty. select_cols: the columns to keep
        (sorted ints), one default each.
    Returns:
      list of `Tensor`s, one per column, each of `records`' shape.
    Raises:
      InvalidArgumentError: (when run) a record with another number of fields, a
        missing required field, or a field that does not parse.
    """
    recs = _string_input(records, "decode_csv")
    if len(field_delim) != 1:
        raise errors.InvalidArgumentError("decode_csv: field_delim must be one character")
    defaults, types = [], []
    for d in record_defaults:
        if isinstance(d, (list, tuple)) and len(d) == 0:
            t = constant(np.zeros(0, np.float32))
        else:
            t = convert_to_tensor(d) if hasattr(d, "op") or hasattr(d, "_as_tensor") \
                else constant(d)
            if t.shape.rank is not None and t.shape.rank > 1:
                raise errors.InvalidArgumentError(
                    f"decode_csv: each record default must be a scalar or have at most one "
                    f"element, got shape {t.shape}")
        if not (t.dtype in (_dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64,
                            _dtypes.string)):
            raise errors.InvalidArgumentError(
                f"decode_csv: unsupported column type {t.dtype.name}")
        defaults.append(t)
        types.append(t.dtype.name)
    if select_cols is not None:
        select_cols = tuple(int(c) for c in select_cols)
        if list(select_cols) != sorted(set(select_cols)) or len(select_cols) != len(defaults):
            raise errors.InvalidArgumentError(
                "decode_csv: select_cols must be sorted, unique, one per record default")
    outs = DecodeCSV(recs, *defaults, out_types=tuple(types), field_delim=field_delim,
                     use_quote_delim=bool(use_quote_delim), na_value=na_value,
                     select_cols=select_cols, name=name)
    return list(outs) if isinstance(outs, tuple) else [outs]
