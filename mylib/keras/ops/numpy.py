"""`keras.ops` numpy-named operations (Keras 3's `keras.ops.numpy`).

Each runs on arrays (returning JAX arrays) or adds a graph op on symbolic tensors; see
`mylib.keras.ops._dispatch`. Semantics are numpy's / `jax.numpy`'s, as Keras 3 on JAX.
Shape arguments (`reshape`, `zeros`, `ones`, `full`, `broadcast_to`) may hold scalar
int tensors (``ops.shape(x)[0]`` of an unknown batch dimension): those go through
mylib's own `Reshape` / `Fill` ops, which take shapes as tensors.
"""

from __future__ import annotations

import builtins

import jax
import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.ops import array_ops, constant_ops, math_ops
from mylib.keras.ops._dispatch import any_symbolic, is_symbolic, keras_op, plain
from mylib.core.op_registry import convert_to_tensor

_py_slice = builtins.slice


def _dt(dtype):
    return None if dtype is None else (dtype.name if isinstance(dtype, _dtypes.DType)
                                       else dtype)


# ------------------------------------------------------------ elementwise, unary
def _unary(name, f):
    def fn(x):
        return f(x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise `{name}` of `x` (as `jax.numpy` / Keras 3)."
    return keras_op("x")(fn)


abs = _unary("abs", jnp.abs)  # noqa: A001
absolute = _unary("absolute", jnp.abs)
negative = _unary("negative", jnp.negative)
sqrt = _unary("sqrt", jnp.sqrt)
square = _unary("square", jnp.square)
exp = _unary("exp", jnp.exp)
expm1 = _unary("expm1", jnp.expm1)
log = _unary("log", jnp.log)
log1p = _unary("log1p", jnp.log1p)
log2 = _unary("log2", jnp.log2)
log10 = _unary("log10", jnp.log10)
floor = _unary("floor", jnp.floor)
ceil = _unary("ceil", jnp.ceil)
sign = _unary("sign", jnp.sign)
sin = _unary("sin", jnp.sin)
cos = _unary("cos", jnp.cos)
tan = _unary("tan", jnp.tan)
arcsin = _unary("arcsin", jnp.arcsin)
arccos = _unary("arccos", jnp.arccos)
arctan = _unary("arctan", jnp.arctan)
sinh = _unary("sinh", jnp.sinh)
cosh = _unary("cosh", jnp.cosh)
tanh = _unary("tanh", jnp.tanh)
arcsinh = _unary("arcsinh", jnp.arcsinh)
arctanh = _unary("arctanh", jnp.arctanh)
reciprocal = _unary("reciprocal", jnp.reciprocal)
logical_not = _unary("logical_not", jnp.logical_not)
isnan = _unary("isnan", jnp.isnan)
isinf = _unary("isinf", jnp.isinf)
isfinite = _unary("isfinite", jnp.isfinite)
trunc = _unary("trunc", jnp.trunc)
conj = _unary("conj", jnp.conj)
real = _unary("real", jnp.real)
imag = _unary("imag", jnp.imag)


@keras_op("x")
def round(x, decimals=0):  # noqa: A001
    """Rounds half to even, to `decimals` places."""
    return jnp.round(x, decimals)


@keras_op("x")
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    return jnp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


# ------------------------------------------------------------ elementwise, binary
def _binary(name, f):
    def fn(x1, x2):
        return f(x1, x2)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise `{name}` of `x1` and `x2` (numpy broadcasting)."
    return keras_op("x1", "x2")(fn)


add = _binary("add", jnp.add)
subtract = _binary("subtract", jnp.subtract)
multiply = _binary("multiply", jnp.multiply)
divide = _binary("divide", jnp.true_divide)
true_divide = _binary("true_divide", jnp.true_divide)
floor_divide = _binary("floor_divide", jnp.floor_divide)
divide_no_nan = _binary("divide_no_nan",
                        lambda a, b: jnp.where(b == 0, 0, a / jnp.where(b == 0, 1, b)))
power = _binary("power", jnp.power)
mod = _binary("mod", jnp.mod)
maximum = _binary("maximum", jnp.maximum)
minimum = _binary("minimum", jnp.minimum)
equal = _binary("equal", jnp.equal)
not_equal = _binary("not_equal", jnp.not_equal)
greater = _binary("greater", jnp.greater)
greater_equal = _binary("greater_equal", jnp.greater_equal)
less = _binary("less", jnp.less)
less_equal = _binary("less_equal", jnp.less_equal)
logical_and = _binary("logical_and", jnp.logical_and)
logical_or = _binary("logical_or", jnp.logical_or)
logical_xor = _binary("logical_xor", jnp.logical_xor)
arctan2 = _binary("arctan2", jnp.arctan2)
hypot = _binary("hypot", jnp.hypot)
logaddexp = _binary("logaddexp", jnp.logaddexp)
copysign = _binary("copysign", jnp.copysign)
heaviside = _binary("heaviside", jnp.heaviside)
bitwise_and = _binary("bitwise_and", jnp.bitwise_and)
bitwise_or = _binary("bitwise_or", jnp.bitwise_or)
bitwise_xor = _binary("bitwise_xor", jnp.bitwise_xor)


@keras_op("x", "x_min", "x_max")
def clip(x, x_min, x_max):
    """`x` clipped to ``[x_min, x_max]``."""
    return jnp.clip(x, x_min, x_max)


@keras_op("condition", "x1", "x2")
def where(condition, x1=None, x2=None):
    """``x1`` where `condition` else ``x2``; with neither, the indices where it holds
    (arrays only: the count is data-dependent)."""
    if x1 is None and x2 is None:
        return jnp.nonzero(condition)
    return jnp.where(condition, x1, x2)


# ------------------------------------------------------------ reductions
def _reduction(name, f, doc):
    def fn(x, axis=None, keepdims=False):
        return f(x, axis=plain(axis, "axis"), keepdims=keepdims)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + " over `axis` (an int, a tuple, or None for all)."
    return keras_op("x")(fn)


sum = _reduction("sum", jnp.sum, "Sum")  # noqa: A001
mean = _reduction("mean", jnp.mean, "Mean")
max = _reduction("max", jnp.max, "Maximum")  # noqa: A001
min = _reduction("min", jnp.min, "Minimum")  # noqa: A001
amax = _reduction("amax", jnp.max, "Maximum")
amin = _reduction("amin", jnp.min, "Minimum")
prod = _reduction("prod", jnp.prod, "Product")
any = _reduction("any", jnp.any, "Logical or")  # noqa: A001
all = _reduction("all", jnp.all, "Logical and")  # noqa: A001
var = _reduction("var", jnp.var, "Variance (population, ddof=0)")
std = _reduction("std", jnp.std, "Standard deviation (population, ddof=0)")


@keras_op("x")
def median(x, axis=None, keepdims=False):
    return jnp.median(x, axis=axis, keepdims=keepdims)


@keras_op("x")
def argmax(x, axis=None, keepdims=False):
    """Index of the maximum along `axis` (int32, as Keras 3)."""
    return jnp.argmax(x, axis=axis, keepdims=keepdims).astype("int32")


@keras_op("x")
def argmin(x, axis=None, keepdims=False):
    """Index of the minimum along `axis` (int32, as Keras 3)."""
    return jnp.argmin(x, axis=axis, keepdims=keepdims).astype("int32")


@keras_op("x")
def count_nonzero(x, axis=None):
    return jnp.count_nonzero(x, axis=axis).astype("int32")


@keras_op("x")
def cumsum(x, axis=None, dtype=None):
    return jnp.cumsum(x, axis=axis, dtype=_dt(dtype))


@keras_op("x")
def cumprod(x, axis=None, dtype=None):
    return jnp.cumprod(x, axis=axis, dtype=_dt(dtype))


@keras_op("x", "weights")
def average(x, axis=None, weights=None):
    return jnp.average(x, axis=axis, weights=weights)


# ------------------------------------------------------------ shapes and layout
def shape(x):
    """The shape as a tuple. On a symbolic tensor, unknown dimensions (the batch) are
    scalar int32 tensors (``ops.shape(x)[0]`` can size other ops), known ones ints."""
    if is_symbolic(x):
        t = convert_to_tensor(x)
        dims = t.shape.as_list() if t.shape.rank is not None else None
        if dims is None:
            raise ValueError(f"ops.shape: tensor '{t.name}' has unknown rank.")
        if builtins.all(d is not None for d in dims):
            return tuple(dims)
        dyn = array_ops.shape(t)
        return tuple(d if d is not None else dyn[i] for i, d in enumerate(dims))
    return tuple(jnp.shape(x))


def ndim(x):
    if is_symbolic(x):
        return convert_to_tensor(x).shape.rank
    return jnp.ndim(x)


def size(x):
    if is_symbolic(x):
        t = convert_to_tensor(x)
        if t.shape.is_fully_defined():
            return int(np.prod(t.shape.as_list()))
        return array_ops.size(t)
    return jnp.size(x)


@keras_op("x")
def _reshape(x, newshape):
    return jnp.reshape(x, newshape)


def reshape(x, newshape):
    """`x` with shape `newshape` (one entry may be -1; entries may be scalar tensors
    on a symbolic `x`)."""
    if isinstance(newshape, int):
        newshape = (newshape,)
    if any_symbolic(newshape) or (is_symbolic(x) and not isinstance(newshape, (list, tuple))):
        return array_ops.reshape(x, list(newshape) if isinstance(newshape, tuple)
                                 else newshape)
    return _reshape(x, tuple(int(d) for d in newshape))


@keras_op("x")
def transpose(x, axes=None):
    return jnp.transpose(x, axes)


@keras_op("x")
def expand_dims(x, axis):
    return jnp.expand_dims(x, axis)


@keras_op("x")
def squeeze(x, axis=None):
    return jnp.squeeze(x, axis)


@keras_op("x")
def swapaxes(x, axis1, axis2):
    return jnp.swapaxes(x, axis1, axis2)


@keras_op("x")
def moveaxis(x, source, destination):
    return jnp.moveaxis(x, source, destination)


@keras_op("x")
def ravel(x):
    return jnp.ravel(x)


@keras_op(seq="xs")
def concatenate(xs, axis=0):
    """Joins `xs` along `axis`."""
    return jnp.concatenate(xs, axis=axis)


@keras_op(seq="x")
def stack(x, axis=0):
    """Stacks the list `x` along a new `axis`."""
    return jnp.stack(x, axis=axis)


@keras_op(seq="xs")
def hstack(xs):
    return jnp.hstack(xs)


@keras_op(seq="xs")
def vstack(xs):
    return jnp.vstack(xs)


@keras_op("x")
def _split(x, indices_or_sections, axis=0):
    return tuple(jnp.split(x, indices_or_sections, axis=axis))


def split(x, indices_or_sections, axis=0):
    """A list of pieces of `x` along `axis` (numpy's `split`)."""
    return list(_split(x, plain(indices_or_sections, "indices_or_sections"), axis))


@keras_op("x")
def _unstack(x, axis=0):
    return tuple(jnp.moveaxis(x, axis, 0))


def unstack(x, num=None, axis=0):
    return list(_unstack(x, axis))


@keras_op("x")
def tile(x, repeats):
    return jnp.tile(x, repeats)


@keras_op("x")
def repeat(x, repeats, axis=None):
    return jnp.repeat(x, repeats, axis=axis)


@keras_op("x")
def flip(x, axis=None):
    return jnp.flip(x, axis)


@keras_op("x")
def roll(x, shift, axis=None):
    return jnp.roll(x, shift, axis)


@keras_op("x")
def pad(x, pad_width, mode="constant", constant_values=None):
    """Pads `x` by `pad_width` (``[(before, after)]`` per axis)."""
    pw = tuple(tuple(int(v) for v in p) if isinstance(p, (list, tuple)) else int(p)
               for p in pad_width) if isinstance(pad_width, (list, tuple)) else pad_width
    if mode == "constant":
        return jnp.pad(x, pw, mode, constant_values=constant_values or 0)
    return jnp.pad(x, pw, mode)


@keras_op("x")
def _broadcast_to(x, shape):
    return jnp.broadcast_to(x, shape)


def broadcast_to(x, shape):
    if any_symbolic(shape):
        x = convert_to_tensor(x)
        return x * constant_ops.ones(list(shape) if isinstance(shape, tuple) else shape,
                                     dtype=x.dtype)
    return _broadcast_to(x, tuple(int(d) for d in shape))


@keras_op("x")
def tril(x, k=0):
    return jnp.tril(x, k)


@keras_op("x")
def triu(x, k=0):
    return jnp.triu(x, k)


@keras_op("x")
def diagonal(x, offset=0, axis1=0, axis2=1):
    return jnp.diagonal(x, offset, axis1, axis2)


@keras_op("x")
def diag(x, k=0):
    return jnp.diag(x, k)


@keras_op("x")
def trace(x, offset=0, axis1=0, axis2=1):
    return jnp.trace(x, offset, axis1, axis2)


# ------------------------------------------------------------ linear algebra
@keras_op("x1", "x2")
def matmul(x1, x2):
    """Matrix product over the last two axes (numpy's `matmul`: vectors allowed,
    leading axes broadcast)."""
    return jnp.matmul(x1, x2)


@keras_op("x1", "x2")
def dot(x1, x2):
    return jnp.dot(x1, x2)


@keras_op("x1", "x2")
def tensordot(x1, x2, axes=2):
    return jnp.tensordot(x1, x2, axes)


@keras_op("x1", "x2")
def outer(x1, x2):
    return jnp.outer(x1, x2)


@keras_op("x1", "x2")
def inner(x1, x2):
    return jnp.inner(x1, x2)


@keras_op("x1", "x2")
def vdot(x1, x2):
    return jnp.vdot(x1, x2)


@keras_op("x1", "x2")
def cross(x1, x2, axisa=-1, axisb=-1, axisc=-1, axis=None):
    return jnp.cross(x1, x2, axisa, axisb, axisc, axis)


@keras_op(seq="operands")
def _einsum(subscripts, operands):
    return jnp.einsum(subscripts, *operands)


def einsum(subscripts, *operands):
    """Einstein summation (``einsum("ij,jk->ik", a, b)``)."""
    return _einsum(subscripts, list(operands))


# ------------------------------------------------------------ indexing and sorting
@keras_op("x", "indices")
def take(x, indices, axis=None):
    """Elements of `x` at `indices` along `axis` (out-of-range indices clip, as JAX)."""
    return jnp.take(x, indices, axis=axis)


@keras_op("x", "indices")
def take_along_axis(x, indices, axis=None):
    return jnp.take_along_axis(x, indices, axis=axis)


@keras_op("x")
def sort(x, axis=-1):
    return jnp.sort(x, axis=axis)


@keras_op("x")
def argsort(x, axis=-1):
    return jnp.argsort(x, axis=axis).astype("int32")


@keras_op("x")
def nonzero(x):
    return jnp.nonzero(x)


@keras_op("sorted_sequence", "values")
def searchsorted(sorted_sequence, values, side="left"):
    return jnp.searchsorted(sorted_sequence, values, side=side).astype("int32")


@keras_op("x", "bins")
def digitize(x, bins):
    return jnp.digitize(x, bins).astype("int32")


# ------------------------------------------------------------ creation
def _static_shape(shape):
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(d) for d in shape)


def _fill_symbolic(shape, value, dtype):
    dt = _dtypes.as_dtype(dtype or "float32")
    return constant_ops.fill(list(shape) if isinstance(shape, tuple) else shape,
                             constant_ops.constant(value, dtype=dt))


def zeros(shape, dtype=None):
    """Zeros of `shape` (entries may be scalar tensors), float32 by default."""
    if any_symbolic(shape):
        return _fill_symbolic(shape, 0, dtype)
    return jnp.zeros(_static_shape(shape), _dt(dtype) or "float32")


def ones(shape, dtype=None):
    if any_symbolic(shape):
        return _fill_symbolic(shape, 1, dtype)
    return jnp.ones(_static_shape(shape), _dt(dtype) or "float32")


def full(shape, fill_value, dtype=None):
    if any_symbolic(shape) or is_symbolic(fill_value):
        if is_symbolic(fill_value):
            v = convert_to_tensor(fill_value)
            return constant_ops.fill(list(shape) if isinstance(shape, tuple) else shape,
                                     v if dtype is None else math_ops.cast(v, dtype))
        return _fill_symbolic(shape, fill_value, dtype or (
            "float32" if isinstance(fill_value, float) else "int32"))
    return jnp.full(_static_shape(shape), fill_value, _dt(dtype))


@keras_op("x")
def zeros_like(x, dtype=None):
    return jnp.zeros_like(x, dtype=_dt(dtype))


@keras_op("x")
def ones_like(x, dtype=None):
    return jnp.ones_like(x, dtype=_dt(dtype))


@keras_op("x", "fill_value")
def full_like(x, fill_value, dtype=None):
    return jnp.full_like(x, fill_value, dtype=_dt(dtype))


def arange(start, stop=None, step=1, dtype=None):
    """Evenly spaced values in ``[start, stop)`` (static bounds)."""
    return jnp.arange(start, stop, step, dtype=_dt(dtype))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    return jnp.linspace(start, stop, num, endpoint=endpoint, retstep=retstep,
                        dtype=_dt(dtype), axis=axis)


def eye(N, M=None, k=0, dtype=None):  # noqa: N803 - numpy's names
    return jnp.eye(N, M, k, dtype=_dt(dtype) or "float32")


def identity(n, dtype=None):
    return jnp.identity(n, dtype=_dt(dtype) or "float32")


def tri(N, M=None, k=0, dtype=None):  # noqa: N803
    return jnp.tri(N, M, k, dtype=_dt(dtype) or "float32")


# ------------------------------------------------------------ misc
@keras_op("x")
def _norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    return jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    """Vector / matrix norm (`numpy.linalg.norm`)."""
    return _norm(x, ord, plain(axis, "axis"), keepdims)


@keras_op("x")
def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x)))`` over `axis`, computed stably."""
    return jax.scipy.special.logsumexp(x, axis=axis, keepdims=keepdims)


@keras_op("x")
def erf(x):
    return jax.scipy.special.erf(x)


@keras_op("x")
def erfinv(x):
    return jax.scipy.special.erfinv(x)


@keras_op("x1", "x2")
def isclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    return jnp.isclose(x1, x2, rtol=rtol, atol=atol, equal_nan=equal_nan)


@keras_op("x1", "x2")
def append(x1, x2, axis=None):
    return jnp.append(x1, x2, axis=axis)


@keras_op("x")
def quantile(x, q, axis=None, method="linear", keepdims=False):
    return jnp.quantile(x, jnp.asarray(q), axis=axis, method=method, keepdims=keepdims)



__all__ = sorted(n for n, v in list(globals().items())
                 if not n.startswith("_") and callable(v) and
                 getattr(v, "__module__", None) == __name__)
