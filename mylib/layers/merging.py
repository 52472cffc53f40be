"""Merge layers: `Add`, `Subtract`, `Multiply`, `Average`, `Maximum`, `Minimum`,
`Concatenate`, `Dot`. Each is called on a list of tensors."""

from __future__ import annotations

from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops
from mylib.layers.base import Layer, _fmt_shape
from mylib import nn


def _fmt_all(shapes):
    return ", ".join(_fmt_shape(s) for s in shapes)


class _Merge(Layer):
    """Element-wise merge of a list of tensors; shapes must agree except where a dim is
    1 or unknown (broadcast, as Keras), and the batch dimension."""

    supports_masking = True
    _min_inputs = 2

    def _check_list(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or not input_shape or \
                not all(isinstance(s, (list, tuple)) for s in input_shape):
            raise ValueError(f'A merge layer should be called on a list of inputs. Layer '
                             f'"{self.name}" received: input_shape={input_shape}')
        if len(input_shape) < self._min_inputs:
            raise ValueError(f'A merge layer should be called on a list of at least '
                             f'{self._min_inputs} inputs. Layer "{self.name}" received '
                             f"{len(input_shape)} input(s).")

    def build(self, input_shape):
        self._check_list(input_shape)
        self.compute_output_shape(input_shape)

    def compute_output_shape(self, input_shape):
        shapes = [tuple(s) for s in input_shape if s is not None]
        if not shapes:
            return None
        rank = max(len(s) for s in shapes)
        out = []
        for i in range(1, rank + 1):
            dims = {s[-i] for s in shapes if len(s) >= i} - {None}
            if len(dims - {1}) > 1:
                raise ValueError(f'Layer "{self.name}": inputs have incompatible shapes. '
                                 f"Received shapes {_fmt_all(shapes)}")
            out.append(max(dims) if dims else None)
        return tuple(reversed(out))

    def call(self, inputs, mask=None):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f'A merge layer should be called on a list of inputs. Layer '
                             f'"{self.name}" received: {inputs!r}')
        self._check_list([tuple(x.shape.as_list()) for x in inputs])
        self.compute_output_shape([tuple(x.shape.as_list()) for x in inputs])
        inputs = [x if x.dtype == inputs[0].dtype else math_ops.cast(x, inputs[0].dtype)
                  for x in inputs]
        if isinstance(mask, (list, tuple)) and any(m is not None for m in mask) and \
                hasattr(self, "_merge_masked"):
            return self._merge_masked(inputs, list(mask))
        return self._merge(inputs)

    def compute_mask(self, inputs, mask=None):
        """Keras 3: the OR of the inputs' masks when every input has one, else None."""
        if not isinstance(mask, (list, tuple)) or any(m is None for m in mask):
            return None
        out = math_ops.cast(mask[0], "bool")
        for m in mask[1:]:
            out = math_ops.logical_or(out, math_ops.cast(m, "bool"))
        return out


class Add(_Merge):
    """Sum of the inputs (same or broadcastable shapes)."""

    def _merge(self, xs):
        return math_ops.add_n(xs) if len({tuple(x.shape.as_list()) for x in xs}) == 1 and \
            xs[0].shape.is_fully_defined() else _fold(math_ops.add, xs)


class Subtract(_Merge):
    """``inputs[0] - inputs[1]`` (exactly two inputs)."""

    def build(self, input_shape):
        if isinstance(input_shape, (list, tuple)) and len(input_shape) != 2:
            raise ValueError(f'Layer "{self.name}": a `Subtract` layer should be called on '
                             f"exactly 2 inputs. Received: {len(input_shape)} inputs.")
        super().build(input_shape)

    def _merge(self, xs):
        return xs[0] - xs[1]


class Multiply(_Merge):
    """Element-wise product of the inputs (Keras 3 with masks: masked entries count as
    1, and when every input is masked, entries masked in all of them are 0)."""

    def _merge(self, xs):
        return _fold(math_ops.multiply, xs)

    def _merge_masked(self, xs, masks):
        every = all(m is not None for m in masks)
        out, out_mask = None, None
        for x, m in zip(xs, masks):
            if m is not None:
                m = _step_mask(m)
                x = array_ops.where(m, x, constant_ops.ones_like(x))
                if every:
                    out_mask = m if out_mask is None else math_ops.logical_or(out_mask, m)
            out = x if out is None else math_ops.multiply(out, x)
        if every:
            out = array_ops.where(out_mask, out, constant_ops.zeros_like(out))
        return out


class Average(_Merge):
    """Element-wise mean of the inputs."""

    def _merge(self, xs):
        return _fold(math_ops.add, xs) * (1.0 / len(xs))


class Maximum(_Merge):
    """Element-wise maximum of the inputs (a masked step of one input takes the other
    inputs' values, as Keras 3)."""

    def _merge(self, xs):
        return _fold(math_ops.maximum, xs)

    def _merge_masked(self, xs, masks):
        return _merge_or_masked(math_ops.maximum, xs, masks)


class Minimum(_Merge):
    """Element-wise minimum of the inputs (masked steps as in `Maximum`)."""

    def _merge(self, xs):
        return _fold(math_ops.minimum, xs)

    def _merge_masked(self, xs, masks):
        return _merge_or_masked(math_ops.minimum, xs, masks)


def _step_mask(m):
    """A [batch, T] mask as a bool [batch, T, 1] that broadcasts against its input."""
    return array_ops.expand_dims(math_ops.cast(m, "bool"), -1)


def _merge_or_masked(fn, xs, masks):
    """Keras 3's `_apply_merge_op_and_or_mask`: masked entries of one input are replaced
    by the running result (and the reverse), so they never win."""
    out, out_mask = None, None
    for x, m in zip(xs, masks):
        m = _step_mask(m) if m is not None else None
        if out is None:
            out, out_mask = x, m
            continue
        if m is not None:
            x = array_ops.where(m, x, out)
        if out_mask is not None:
            out = array_ops.where(out_mask, out, x)
        out_mask = math_ops.logical_or(out_mask, m) \
            if m is not None and out_mask is not None else None
        out = fn(out, x)
    return out


def _fold(fn, xs):
    out = xs[0]
    for x in xs[1:]:
        out = fn(out, x)
    return out


class Concatenate(_Merge):
    """Concatenates the inputs along `axis` (default -1); the other dims must match."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = int(axis)

    def compute_output_shape(self, input_shape):
        shapes = [tuple(s) for s in input_shape]
        ranks = {len(s) for s in shapes}
        err = ValueError(f'Layer "{self.name}": a `Concatenate` layer requires inputs with '
                         f"matching shapes except for the concatenation axis "
                         f"(axis={self.axis}). Received: input_shape={_fmt_all(shapes)}")
        if len(ranks) != 1:
            raise err
        rank = ranks.pop()
        ax = self.axis % rank if -rank <= self.axis < rank else None
        if ax is None:
            raise ValueError(f'Layer "{self.name}": axis={self.axis} is out of range for '
                             f"inputs of rank {rank}")
        out = list(shapes[0])
        for s in shapes[1:]:
            for i, (a, b) in enumerate(zip(out, s)):
                if i == ax:
                    out[i] = None if a is None or b is None else a + b
                elif a is not None and b is not None and a != b:
                    raise err
                elif a is None:
                    out[i] = b
        return tuple(out)

    def _merge(self, xs):
        return array_ops.concat(xs, axis=self.axis)

    def compute_mask(self, inputs, mask=None):
        if mask is None or all(m is None for m in mask):
            return None
        ms = [math_ops.cast(m, "bool") if m is not None else _ones_mask(x)
              for x, m in zip(inputs, mask)]
        rank = inputs[0].shape.rank
        ax = self.axis % rank
        if ax == rank - 1:
            # The mask covers all but the last axis: a position is kept if kept anywhere.
            return reduction_ops.reduce_any(array_ops.stack(ms, axis=-1), axis=-1)
        return array_ops.concat(ms, axis=ax)  # the masks join along the same axis

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


def _ones_mask(x):
    return math_ops.not_equal(constant_ops.ones_like(x[..., 0]), 0)


class Dot(_Merge):
    """Dot product of two samples-batched tensors along `axes` (Keras's `batch_dot`).

    Args:
      axes: int or pair of ints: the axis of each input to contract (the batch axis 0
        is never contracted).
      normalize: l2-normalize both inputs along `axes` first, so the result is the
        cosine similarity.
    Input: two tensors of rank 2 or 3. Output: the remaining axes of the first, then of
    the second; rank-1 results get a trailing axis of size 1 (``[batch, 1]``).
    """

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axes, int):
            axes = (axes, axes)
        if not (isinstance(axes, (list, tuple)) and len(axes) == 2 and
                all(isinstance(a, int) for a in axes)):
            raise TypeError(f"Invalid format for argument `axes`: expected an int or a pair "
                            f"of ints. Received: axes={axes!r}")
        self.axes, self.normalize = tuple(axes), bool(normalize)
    supports_masking = False

    def _norm_axes(self, shapes):
        return [a % len(s) for a, s in zip(self.axes, shapes)]

    def compute_output_shape(self, input_shape):
        self._check_list(input_shape)
        shapes = [tuple(s) for s in input_shape]
        if len(shapes) != 2:
            raise ValueError(f'Layer "{self.name}": a `Dot` layer should be called on '
                             f"exactly 2 inputs. Received: {len(shapes)} inputs.")
        for s in shapes:
            if len(s) not in (2, 3):
                raise ValueError(f'Layer "{self.name}": `Dot` supports inputs of rank 2 or '
                                 f"3. Received shapes {_fmt_all(shapes)}")
        a1, a2 = self._norm_axes(shapes)
        if 0 in (a1, a2):
            raise ValueError(f'Layer "{self.name}": cannot contract the batch axis. '
                             f"Received: axes={self.axes}")
        d1, d2 = shapes[0][a1], shapes[1][a2]
        if d1 is not None and d2 is not None and d1 != d2:
            raise ValueError(f'Layer "{self.name}": incompatible input shapes: '
                             f"{_fmt_shape(shapes[0])} (axis {a1} is {d1}) and "
                             f"{_fmt_shape(shapes[1])} (axis {a2} is {d2}).")
        rest = [d for i, d in enumerate(shapes[0]) if i not in (0, a1)] + \
            [d for i, d in enumerate(shapes[1]) if i not in (0, a2)]
        return (shapes[0][0],) + (tuple(rest) if rest else (1,))

    def _merge(self, xs):

        x, y = xs
        a1, a2 = self._norm_axes([x.shape.as_list(), y.shape.as_list()])
        if self.normalize:
            x, y = nn.l2_normalize(x, axis=a1), nn.l2_normalize(y, axis=a2)
        # Contracted axis of x last, of y at 1: then one batched matmul.
        if x.shape.rank == 2:
            x = array_ops.expand_dims(x, 1)
        elif a1 == 1:
            x = array_ops.transpose(x, [0, 2, 1])
        if y.shape.rank == 2:
            y = array_ops.expand_dims(y, 2)
        elif a2 == 2:
            y = array_ops.transpose(y, [0, 2, 1])
        out = math_ops.matmul(x, y)  # [B, m, n], m/n = 1 for rank-2 inputs
        squeeze = [ax for ax, r in ((1, xs[0].shape.rank), (2, xs[1].shape.rank)) if r == 2]
        if len(squeeze) == 2:
            return array_ops.reshape(out, [-1, 1])
        return array_ops.squeeze(out, axis=squeeze) if squeeze else out

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}
