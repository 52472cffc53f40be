"""Static shapes with unknown dimensions, as TensorFlow's `TensorShape`.

A dimension is an `int` or `None` (unknown). A shape of unknown rank has `dims is None`.
Indexing a shape gives a known dimension as an `int` that also has TensorFlow 1's
`.value` (`x.get_shape()[-1].value`), and an unknown one as `None`.
"""

from __future__ import annotations

import operator


class Dimension:
    """TensorFlow 1's `Dimension`: an int or unknown (`value is None`).

    Arithmetic with an unknown dimension is unknown; a comparison with one is `None`.
    """

    def __init__(self, value):
        self._value = _as_dim_value(value)

    @property
    def value(self):
        return self._value

    def __repr__(self):
        return f"Dimension({self._value})"

    def __str__(self):
        return "?" if self._value is None else str(self._value)

    def __int__(self):
        if self._value is None:
            raise TypeError("an unknown Dimension has no integer value")
        return self._value

    __index__ = __int__

    def __hash__(self):
        return hash(self._value)

    def __eq__(self, other):
        other = dimension_value(other)
        if self._value is None or other is None:
            return None
        return self._value == other

    def __ne__(self, other):
        eq = self.__eq__(other)
        return None if eq is None else not eq

    def _compare(self, other, op):
        other = dimension_value(other)
        if self._value is None or other is None:
            return None
        return op(self._value, other)

    def __lt__(self, other):
        return self._compare(other, operator.lt)

    def __le__(self, other):
        return self._compare(other, operator.le)

    def __gt__(self, other):
        return self._compare(other, operator.gt)

    def __ge__(self, other):
        return self._compare(other, operator.ge)

    def _arith(self, other, op):
        other = dimension_value(other)
        if self._value is None or other is None:
            return Dimension(None)
        return Dimension(op(self._value, other))

    def __add__(self, other):
        return self._arith(other, operator.add)

    def __radd__(self, other):
        return self._arith(other, lambda a, b: b + a)

    def __sub__(self, other):
        return self._arith(other, operator.sub)

    def __rsub__(self, other):
        return self._arith(other, lambda a, b: b - a)

    def __mul__(self, other):
        return self._arith(other, operator.mul)

    def __rmul__(self, other):
        return self._arith(other, lambda a, b: b * a)

    def __floordiv__(self, other):
        return self._arith(other, operator.floordiv)

    def __rfloordiv__(self, other):
        return self._arith(other, lambda a, b: b // a)

    def __mod__(self, other):
        return self._arith(other, operator.mod)

    def __rmod__(self, other):
        return self._arith(other, lambda a, b: b % a)

    def is_compatible_with(self, other):
        other = dimension_value(other)
        return self._value is None or other is None or self._value == other

    def merge_with(self, other):
        other = dimension_value(other)
        if self._value is None:
            return Dimension(other)
        if other is not None and other != self._value:
            raise ValueError(f"Dimensions {self._value} and {other} are not compatible")
        return Dimension(self._value)


class _KnownDimension(int, Dimension):
    """A known dimension: a plain `int` in every way, plus TensorFlow 1's `.value`."""

    __slots__ = ()

    def __init__(self, value):  # the value is the int itself
        pass

    @property
    def value(self):
        return int(self)

    __repr__ = int.__repr__
    __str__ = int.__str__


def _dim_out(d):
    return None if d is None else _KnownDimension(d)


def dimension_value(dimension):
    """The `int` or `None` value of a `Dimension`, an int or None (TensorFlow's
    `tf.compat.dimension_value`)."""
    if isinstance(dimension, Dimension):
        return dimension.value
    return dimension


def as_dimension(value):
    """`value` as a `Dimension` (an existing one is returned as is)."""
    return value if isinstance(value, Dimension) else Dimension(value)


class TensorShape:
    """A possibly partial shape: `TensorShape([None, 784])` prints as `(?, 784)`."""

    __slots__ = ("_dims",)

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif dims is None:
            self._dims = None
        else:
            try:
                seq = list(dims)
            except TypeError:
                seq = [dims]
            self._dims = tuple(_as_dim(d) for d in seq)

    @property
    def dims(self):
        return None if self._dims is None else [_dim_out(d) for d in self._dims]

    @property
    def rank(self):
        return None if self._dims is None else len(self._dims)

    ndims = rank

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def as_tuple(self):
        return self._dims

    def is_fully_defined(self):
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other):
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other):
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def with_rank(self, rank):
        if self._dims is None:
            return TensorShape([None] * rank)
        if len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def concatenate(self, other):
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return (_dim_out(d) for d in self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            if isinstance(key, slice):
                return TensorShape(None)
            return None
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return _dim_out(self._dims[key])

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __hash__(self):
        return hash(self._dims)

    def __bool__(self):
        return self._dims is not None

    def __add__(self, other):
        return self.concatenate(other)

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join("?" if d is None else str(d) for d in self._dims)
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"

    def __repr__(self):
        return f"TensorShape({None if self._dims is None else list(self._dims)})"


def _as_dim(d):
    if d is None:
        return None
    if hasattr(d, "value") and not isinstance(d, int):  # Dimension-like
        d = d.value
        if d is None:
            return None
    i = _as_dim_value(d)
    if i is not None and i < 0:
        if i == -1:
            return None  # -1 means unknown, as in TensorFlow's shape arguments
        raise ValueError(f"Dimension {i} must be >= 0")
    return i


def _as_dim_value(d):
    if d is None:
        return None
    if isinstance(d, Dimension):
        return d.value
    try:
        i = int(d)
    except (TypeError, ValueError):
        raise TypeError(f"Dimension must be an int or None, got {d!r}") from None
    if i != d:
        raise TypeError(f"Dimension must be an int or None, got {d!r}")
    return i


def as_shape(shape):
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape(rank=None):
    return TensorShape(None if rank is None else [None] * rank)


def broadcast_shapes(a, b):
    """Static broadcast of two `TensorShape`s (numpy rules); None where undecidable.

    Raises:
      ValueError: if two known dimensions differ and neither is 1.
    """
    a, b = as_shape(a), as_shape(b)
    if a.rank is None or b.rank is None:
        return TensorShape(None)
    da, db = a.as_tuple(), b.as_tuple()
    n = max(len(da), len(db))
    da = (1,) * (n - len(da)) + da
    db = (1,) * (n - len(db)) + db
    out = []
    for x, y in zip(da, db):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None:
            out.append(y)  # y is known and != 1: x must equal it
        elif y is None:
            out.append(x)
        elif x == y:
            out.append(x)
        else:
            raise ValueError(f"shapes {a} and {b} cannot be broadcast")
    return TensorShape(out)
