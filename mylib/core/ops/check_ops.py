"""Checks that run inside a step: `check_numerics` and the `assert_*` ops.

They are host ops: the condition is computed with ordinary graph ops (compiled by
XLA), then `Assert` / `CheckNumerics` look at it on the host and raise
`InvalidArgumentError` naming the op and the user's line that created it, as
TensorFlow's do. Make other ops depend on an assert with `control_dependencies`, or
run it as a target.
"""

from __future__ import annotations

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.graph import get_default_graph
from mylib.core.op_registry import NotDifferentiable, OpDef, RegisterGradient, TensorSpec
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops

__all__ = ["check_numerics", "Assert", "assert_equal", "assert_none_equal", "assert_less",
           "assert_less_equal", "assert_greater", "assert_greater_equal", "assert_positive",
           "assert_negative", "assert_non_negative", "assert_non_positive", "assert_rank",
           "assert_type"]


# ---------------------------------------------------------------- CheckNumerics
def _check_numerics_lower(ctx, op, x):
    a = np.asarray(x)
    if a.dtype.kind in "fc":
        bad_nan = bool(np.isnan(a).any())
        bad_inf = bool(np.isinf(a).any())
        if bad_nan or bad_inf:
            what = " and ".join(w for w, b in (("NaN", bad_nan), ("Inf", bad_inf)) if b)
            raise errors.InvalidArgumentError(
                f"{op.attrs['message']} : Tensor had {what} values")
    return x


CheckNumerics = OpDef("CheckNumerics", lower=_check_numerics_lower, stateful=True,
                      host=True, shape_fn=lambda x, **_: TensorSpec(x.shape, x.dtype))


@RegisterGradient("CheckNumerics")
def _check_numerics_grad(op, grad):
    # As TensorFlow: the gradient is checked too.
    return [check_numerics(grad, f"Not a number (NaN) or infinity (Inf) values detected in "
                                 f"gradient. {op.attrs['message']}")]


def check_numerics(tensor, message, name=None):
    """Returns `tensor`, raising at run time if it holds NaN or Inf.

    Args:
      tensor: a floating-point `Tensor`.
      message: text put in front of the error.
    Raises (at run time):
      InvalidArgumentError: ``"<message> : Tensor had NaN values"``, naming this op and
        the line that created it.
    """
    t = convert_to_tensor(tensor)
    if not t.dtype.is_floating:
        raise TypeError(f"check_numerics needs a floating-point tensor, got "
                        f"{t.dtype.name} for '{t.name}'")
    return CheckNumerics(t, message=str(message), name=name)


# ---------------------------------------------------------------- Assert
def _fmt(v, summarize):
    a = np.asarray(v)
    if a.dtype == object:
        a = np.vectorize(lambda b: b.decode() if isinstance(b, bytes) else b)(a)
    flat = a.reshape(-1)
    if summarize is not None and summarize >= 0 and flat.size > summarize:
        body = " ".join(str(x) for x in flat[:summarize]) + "..."
    else:
        body = " ".join(str(x) for x in flat)
    return f"[{body}]"


def _assert_lower(ctx, op, cond, *data):
    c = np.asarray(cond)
    if c.shape != ():
        raise errors.InvalidArgumentError(f"Assert: the condition must be a scalar, got "
                                          f"shape {c.shape}")
    if not bool(c):
        parts, it = [], iter(data)
        for kind in op.attrs["template"]:
            parts.append(_fmt(next(it), op.attrs["summarize"]) if kind is None else kind)
        raise errors.InvalidArgumentError("assertion failed: " + " ".join(parts))
    return ()


AssertOp = OpDef("Assert", lower=_assert_lower, stateful=True, host=True,
                 shape_fn=lambda *a, **k: [])
NotDifferentiable("Assert")


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TF's name
    """An op raising `InvalidArgumentError` at run time when `condition` is false.

    Args:
      condition: a bool scalar tensor.
      data: list of tensors and Python strings printed in the error.
      summarize: elements of each tensor shown (all when None).
    Returns:
      the `Operation`.
    """
    cond = convert_to_tensor(condition, dtype=_dtypes.bool_)
    template, tensors = [], []
    for x in data or ():
        if isinstance(x, str):
            template.append(x)
        else:
            template.append(None)
            tensors.append(convert_to_tensor(x))
    return AssertOp(cond, *tensors, template=tuple(template),
                    summarize=None if summarize is None else int(summarize),
                    name=name or "Assert")


def _binary_assert(fn_name, sym, cmp, x, y, data, summarize, message, name):
    x = convert_to_tensor(x)
    y = convert_to_tensor(y, dtype=x.dtype) if not hasattr(y, "dtype") else \
        convert_to_tensor(y)
    with get_default_graph().name_scope(name or fn_name):
        cond = reduction_ops.reduce_all(cmp(x, y))
        if data is None:
            data = [f"Condition x {sym} y did not hold element-wise:",
                    f"x (name = {x.name}) = ", x, f"y (name = {y.name}) = ", y]
        if message is not None:
            data = [str(message)] + list(data)
        return Assert(cond, data, summarize=summarize, name="Assert")


def _unary_assert(fn_name, sym, cmp, x, data, summarize, message, name):
    x = convert_to_tensor(x)
    with get_default_graph().name_scope(name or fn_name):
        cond = reduction_ops.reduce_all(cmp(x, constant_ops.zeros_like(x)))
        if data is None:
            data = [f"Condition x {sym} 0 did not hold element-wise:",
                    f"x (name = {x.name}) = ", x]
        if message is not None:
            data = [str(message)] + list(data)
        return Assert(cond, data, summarize=summarize, name="Assert")


def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    """An op checking ``x == y`` element-wise (broadcasting) at run time.

    Returns:
      the `Assert` operation; running it raises InvalidArgumentError (with `message`,
      the op's name and its creation line) if any element differs.
    """
    return _binary_assert("assert_equal", "==", math_ops.equal, x, y, data, summarize, message,
                          name)


def assert_none_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Checks ``x != y`` for every element."""
    return _binary_assert("assert_none_equal", "!=", math_ops.not_equal, x, y, data, summarize,
                          message, name)


def assert_less(x, y, data=None, summarize=None, message=None, name=None):
    """Checks ``x < y`` element-wise."""
    return _binary_assert("assert_less", "<", math_ops.less, x, y, data, summarize, message,
                          name)


def assert_less_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Checks ``x <= y`` element-wise."""
    return _binary_assert("assert_less_equal", "<=", math_ops.less_equal, x, y, data, summarize,
                          message, name)


def assert_greater(x, y, data=None, summarize=None, message=None, name=None):
    """Checks ``x > y`` element-wise."""
    return _binary_assert("assert_greater", ">", math_ops.greater, x, y, data, summarize,
                          message, name)


def assert_greater_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Checks ``x >= y`` element-wise."""
    return _binary_assert("assert_greater_equal", ">=", math_ops.greater_equal, x, y, data,
                          summarize, message, name)


def assert_positive(x, data=None, summarize=None, message=None, name=None):
    """Checks ``x > 0`` element-wise."""
    return _unary_assert("assert_positive", ">", math_ops.greater, x, data, summarize, message,
                         name)


def assert_negative(x, data=None, summarize=None, message=None, name=None):
    """Checks ``x < 0`` element-wise."""
    return _unary_assert("assert_negative", "<", math_ops.less, x, data, summarize, message,
                         name)


def assert_non_negative(x, data=None, summarize=None, message=None, name=None):
    """Checks ``x >= 0`` element-wise."""
    return _unary_assert("assert_non_negative", ">=", math_ops.greater_equal, x, data,
                         summarize, message, name)


def assert_non_positive(x, data=None, summarize=None, message=None, name=None):
    """Checks ``x <= 0`` element-wise."""
    return _unary_assert("assert_non_positive", "<=", math_ops.less_equal, x, data, summarize,
                         message, name)


def assert_rank(x, rank, data=None, summarize=None, message=None, name=None):
    """Checks that `x` has rank `rank`.

    Checked when the graph is built if the static rank is known (ValueError), else at
    run time (InvalidArgumentError).

    Returns:
      an `Operation` (a no-op when the static check passed).
    Raises:
      ValueError: the static rank differs.
    """
    x = convert_to_tensor(x)
    if not isinstance(rank, (int, np.integer)):
        raise TypeError(f"assert_rank needs an int rank. Received: rank={rank!r}")
    if x.shape.rank is not None:
        if x.shape.rank != rank:
            raise ValueError(f"{message + ' ' if message else ''}Tensor {x.name} must have "
                             f"rank {rank}. Received rank {x.shape.rank}, shape {x.shape}")
        return array_ops.no_op(name=name or "assert_rank")
    with get_default_graph().name_scope(name or "assert_rank"):
        r = array_ops.rank(x)
        cond = math_ops.equal(r, np.int32(rank))
        if data is None:
            data = [f"Tensor {x.name} must have rank {rank}. Received rank: ", r]
        if message is not None:
            data = [str(message)] + list(data)
        return Assert(cond, data, summarize=summarize, name="Assert")


def assert_type(tensor, tf_type, message=None, name=None):
    """Checks the static dtype of `tensor` (TypeError at graph construction); returns
    a no-op."""
    t = convert_to_tensor(tensor)
    want = _dtypes.as_dtype(tf_type)
    if t.dtype != want:
        raise TypeError(f"{message + ' ' if message else ''}{t.name} must be of type "
                        f"{want.name}; got {t.dtype.name}")
    return array_ops.no_op(name=name or "assert_type")
