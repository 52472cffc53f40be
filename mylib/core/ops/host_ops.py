"""Host ops: run in Python, outside XLA, between the compiled clusters of a step.

`numpy_function` / `py_func` call a Python function on numpy arrays; `print` writes
tensors to a stream or a logger. A step that contains host ops is cut into segments by
the executor (`mylib/core/executor.py`); a step without them stays one XLA call.
"""

from __future__ import annotations

import itertools
import logging
import sys
import threading

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.graph import get_default_graph
from mylib.core.op_registry import NotDifferentiable, OpDef, TensorSpec, convert_to_tensor
from mylib.core.ops.array_ops import identity
from mylib.core.tensor_shape import TensorShape

# Python callables cannot be attrs (attrs are plain data): they live in this process's
# registry under a token, as TensorFlow's py_func does. Graphs with py_funcs therefore
# run only in the process that built them.
_FUNCS = {}
_tokens = itertools.count()
_funcs_lock = threading.Lock()


def _register(fn):
    with _funcs_lock:
        token = f"pyfunc_{next(_tokens)}"
        _FUNCS[token] = fn
    return token


# How an exception raised by the Python function reaches the caller of `Session.run`,
# as TensorFlow's py_func maps it (so `except tf.errors.OutOfRangeError` ends a loop fed
# by a generator's StopIteration). `mylib.errors` raised by the function pass as they are.
_PY_ERRORS = ((ValueError, errors.InvalidArgumentError),
              (TypeError, errors.InvalidArgumentError),
              (StopIteration, errors.OutOfRangeError),
              (MemoryError, errors.ResourceExhaustedError),
              (NotImplementedError, errors.UnimplementedError))


def _py_func_lower(ctx, op, *inputs):
    fn = _FUNCS.get(op.attrs["token"])
    if fn is None:
        raise errors.NotFoundError(
            f"py_func token {op.attrs['token']!r} is not registered in this process "
            "(graphs with py_func run only where they were built)")
    args = [np.asarray(v) for v in inputs]
    try:
        out = fn(*args)
    except errors.OpError:
        raise
    except Exception as e:  # noqa: BLE001 - TensorFlow's mapping of Python errors
        cls = next((c for py, c in _PY_ERRORS if isinstance(e, py)), errors.UnknownError)
        raise cls(f"{type(e).__name__}: {e}", op=op) from e
    touts = op.attrs["Tout"]
    single = op.attrs["single"]
    outs = [out] if single else (list(out) if isinstance(out, (list, tuple)) else [out])
    if len(outs) != len(touts):
        raise errors.InvalidArgumentError(
            f"the Python function returned {len(outs)} value(s), {len(touts)} declared in Tout")
    res = []
    for i, (v, dt) in enumerate(zip(outs, touts)):
        d = _dtypes.as_dtype(dt)
        a = np.asarray(v)
        if a.dtype != d.np:
            if d == _dtypes.string:
                a = a.astype(object)
            elif not np.can_cast(a.dtype, d.np, "same_kind") and not (
                    a.dtype.kind in "iub" and d.is_floating):
                raise errors.InvalidArgumentError(
                    f"output {i} of the Python function has dtype {a.dtype}, declared {d.name}")
            else:
                a = a.astype(d.np)
        res.append(a)
    return tuple(res)


def _py_func_effect(attrs):
    return ("calls the Python function registered in this process under token "
            f"{attrs.get('token')!r}")


PyFunc = OpDef("PyFunc", lower=_py_func_lower, stateful=True, host=True,
               host_effect=_py_func_effect)


@PyFunc.shape_fn
def _py_func_shape(*inputs, token, Tout, single, stateful=True):
    return [TensorSpec(TensorShape(None), dt) for dt in Tout]


NotDifferentiable("PyFunc")


def numpy_function(func, inp, Tout, stateful=True, name=None):
    """Wraps a Python function of numpy arrays as a graph op that runs on the host.

    Args:
      func: called as ``func(*arrays)``; returns an array or a list of arrays.
      inp: list of input tensors.
      Tout: a `DType` or a list of them: the output dtypes.
      stateful: whether the function has side effects (kept for compatibility; host
        ops always run once per step).
    Returns:
      A `Tensor` (if `Tout` is a single dtype) or a list of tensors, of unknown shape
      (use `set_shape` to declare it).
    Raises:
      At run time, as TensorFlow maps an exception of `func`: `InvalidArgumentError`
      for ValueError and TypeError (and for a result with another number of values or
      a dtype that cannot be converted to the declared one), `OutOfRangeError` for
      StopIteration, `ResourceExhaustedError` for MemoryError, `UnimplementedError` for
      NotImplementedError, `UnknownError` for any other Exception (the original is
      chained as ``__cause__``); a `mylib.errors` error passes as it is, and
      KeyboardInterrupt / SystemExit are not caught. A failed step changes no variable.
    Differs from TensorFlow: no gradient is defined (as `tf.numpy_function`).
    """
    single = not isinstance(Tout, (list, tuple))
    touts = (Tout,) if single else tuple(Tout)
    tensors = [convert_to_tensor(x) for x in (inp or [])]
    out = PyFunc(*tensors, token=_register(func),
                 Tout=tuple(_dtypes.as_dtype(t).name for t in touts), single=single,
                 stateful=bool(stateful), name=name)
    if isinstance(out, tuple):
        return list(out)
    if not hasattr(out, "dtype"):  # no outputs: the op itself
        return out
    return out if single else [out]


py_func = numpy_function


def _format(v, summarize):
    if isinstance(v, str):
        return v
    a = np.asarray(v)
    if a.dtype == object:
        a = np.vectorize(lambda b: b.decode() if isinstance(b, bytes) else b)(a)
    with np.printoptions(threshold=max(summarize, 1) * 2, edgeitems=summarize):
        return np.array2string(a, separator=" ") if a.ndim else str(a)


def _print_lower(ctx, op, *inputs):
    parts = []
    it = iter(inputs)
    for kind in op.attrs["template"]:
        parts.append(_format(next(it), op.attrs["summarize"]) if kind is None else kind)
    text = op.attrs["sep"].join(parts) + op.attrs["end"]
    stream = op.attrs["output_stream"]
    if stream == "stderr":
        sys.stderr.write(text)
        sys.stderr.flush()
    elif stream == "stdout":
        sys.stdout.write(text)
        sys.stdout.flush()
    elif stream.startswith("log://"):
        logging.getLogger(stream[len("log://"):] or "mylib").info(text.rstrip("\n"))
    else:
        with open(stream.removeprefix("file://"), "a") as f:
            f.write(text)
    return ()


_CONSOLE_STREAMS = ("stderr", "stdout")


def _print_effect(attrs):
    stream = attrs.get("output_stream")
    if isinstance(stream, str) and (stream in _CONSOLE_STREAMS or stream.startswith("log://")):
        return None
    return f"appends to the file {stream!r} (output_stream)"


PrintV2 = OpDef("PrintV2", lower=_print_lower, stateful=True, host=True,
                shape_fn=lambda *a, **k: [], host_effect=_print_effect)
NotDifferentiable("PrintV2")


def print(*inputs, output_stream="stderr", summarize=3, sep=" ", end="\n", name=None):  # noqa: A001
    """An op that prints `inputs` (tensors and Python strings) when it runs.

    Args:
      output_stream: ``"stderr"``, ``"stdout"``, ``"log://<logger name>"`` (logging
        at INFO), or ``"file://<path>"`` (appended). A graph holding a file stream is a
        host effect: `import_graph_def` refuses it unless ``allow_host_effects=True``.
      summarize: elements shown at each end of each dimension.
    Returns:
      The `Operation`; run it, or make other ops depend on it with
      `control_dependencies`.
    """
    if output_stream is sys.stderr:
        output_stream = "stderr"
    elif output_stream is sys.stdout:
        output_stream = "stdout"
    elif isinstance(output_stream, logging.Logger):
        output_stream = "log://" + output_stream.name
    template, tensors = [], []
    for x in inputs:
        if isinstance(x, str):
            template.append(x)
        else:
            template.append(None)
            tensors.append(convert_to_tensor(x))
    return PrintV2(*tensors, template=tuple(template), output_stream=str(output_stream),
                   summarize=int(summarize), sep=sep, end=end, name=name)


def Print(input_, data, message=None, summarize=3, name=None):  # noqa: N802 - TF1 name
    """TF1's `Print`: returns `input_` and prints `message` and `data` when it is
    computed."""
    p = print(*([message] if message else []), *data, summarize=summarize)
    with get_default_graph().control_dependencies([p]):
        return identity(input_, name=name)


__all__ = ["numpy_function", "py_func", "print", "Print"]
