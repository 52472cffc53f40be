"""Convolutional LSTMs, as Keras 3: `ConvLSTM1D`, `ConvLSTM2D`, `ConvLSTM3D` and
their cell (Shi et al. 2015, "Convolutional LSTM Network: A Machine Learning Approach
for Precipitation Nowcasting").

An LSTM whose input and recurrent transforms are convolutions: with
``z = conv(x_t, kernel) + bias + conv_same(h, recurrent_kernel)`` split along the
channels into blocks i, f, c, o of `filters`::

    c = ra(z_f) * c_prev + ra(z_i) * activation(z_c);  h = ra(z_o) * activation(c)

The input convolution takes the layer's strides, padding and dilation; the recurrent
one is stride 1, ``"same"`` padding. Weights are Keras's: ``kernel [*kernel_size,
in_channels, 4 * filters]``, ``recurrent_kernel [*kernel_size, filters, 4 * filters]``,
``bias [4 * filters]``; weights copied from Keras give Keras's outputs. The time loop
is the `RNN` layer's (one `lax.scan`).

Dropout differs from Keras in its random draws only: one mask per sequence on the
inputs and one on the state, shared by the four gates (Keras draws one per gate).
"""

from __future__ import annotations

from mylib.core.ops import array_ops, constant_ops, nn_3d_ops, nn_ops
from mylib.layers import activations, regularizers
from mylib.layers.base import InputSpec
from mylib.layers.convolutional import (conv_output_length, normalize_data_format,
                                        normalize_padding, normalize_tuple,
                                        to_channels_first, to_channels_last)
from mylib.layers.rnn_cells import _DropoutCell, unit_forget_bias_initializer
from mylib.layers.rnn_layer import RNN


def convolve(x, kernel, rank, strides, padding, dilation_rate):
    """A channels-last convolution of `rank` spatial axes (1, 2 or 3) of `x` ``[batch,
    *spatial, in]`` with `kernel` ``[*kernel_size, in, out]``; `padding` ``"valid"`` or
    ``"same"``."""
    pad = padding.upper()
    if rank == 1:
        return nn_ops.conv1d(x, kernel, stride=strides[0], padding=pad,
                             dilations=dilation_rate[0])
    if rank == 3:
        return nn_3d_ops.conv3d(x, kernel, strides=list(strides), padding=pad,
                                dilations=list(dilation_rate))
    return nn_ops.conv2d(x, kernel, strides=list(strides), padding=pad,
                         dilations=list(dilation_rate))


class ConvLSTMCell(_DropoutCell):
    """One step of a convolutional LSTM, as Keras 3's `ConvLSTMCell` (see the module
    docstring for the math).

    Args:
      rank: number of spatial axes, 1, 2 or 3.
      filters: channels of the output and of each state.
      kernel_size, strides, dilation_rate: ints or `rank` ints (strides > 1 and
        dilation > 1 together raise ValueError, as Keras).
      padding: ``"valid"`` or ``"same"``, of the input convolution.
      data_format: ``"channels_last"`` (default) or ``"channels_first"``.
      activation (``"tanh"``), recurrent_activation (``"sigmoid"``), use_bias,
      initializers, unit_forget_bias, regularizers, constraints, dropout,
      recurrent_dropout, seed: as `LSTMCell`.
    Call arguments: ``inputs [batch, *spatial, channels]`` (channels-last), ``states [h,
      c]`` each ``[batch, *out_spatial, filters]``, ``training``. Returns ``(h, [h, c])``.
    Raises:
      ValueError: bad arguments; unknown spatial or channel sizes when built.
    """

    _gates = 4

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, activation="tanh",
                 recurrent_activation="sigmoid", unit_forget_bias=True, **kwargs):
        if rank not in (1, 2, 3):
            raise ValueError(f"Rank {rank} convolutions are not currently implemented. "
                             f"Received: rank={rank}")
        super().__init__(filters, activation=activation, **kwargs)
        self.rank = int(rank)
        self.filters = self.units
        self.kernel_size = normalize_tuple(kernel_size, rank, "kernel_size")
        self.strides = normalize_tuple(strides, rank, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)
        self.dilation_rate = normalize_tuple(dilation_rate, rank, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError("Specifying `strides > 1` is not compatible with "
                             "`dilation_rate > 1`. Please provide `strides=1` or "
                             f"`dilation_rate=1`. Received: strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.input_spec = InputSpec(ndim=rank + 2)
        self.spatial_dims = None
        self.input_dim = None

    @property
    def state_size(self):
        return [self.filters, self.filters]  # each [batch, *out_spatial, filters]

    @property
    def output_size(self):
        spatial = [conv_output_length(d, k, self.padding, s, r) for d, k, s, r in
                   zip(self.spatial_dims, self.kernel_size, self.strides,
                       self.dilation_rate)]
        if self.data_format == "channels_first":
            return [self.filters] + spatial
        return spatial + [self.filters]

    def build(self, input_shape):
        if self.data_format == "channels_first":
            spatial, channels = tuple(input_shape[2:]), input_shape[1]
        else:
            spatial, channels = tuple(input_shape[1:-1]), input_shape[-1]
        if len(spatial) != self.rank or None in spatial:
            raise ValueError("ConvLSTM layers only support static input shapes for the "
                             f"spatial dimension. Received invalid input shape: "
                             f"input_shape={tuple(input_shape)}")
        if channels is None:
            raise ValueError("The channel dimension of the inputs should be defined. "
                             f"Found None. Full input shape received: "
                             f"input_shape={tuple(input_shape)}")
        self.spatial_dims, self.input_dim = spatial, int(channels)
        n = 4 * self.filters
        self.kernel = self.add_weight(
            "kernel", list(self.kernel_size) + [self.input_dim, n], self.kernel_initializer,
            regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", list(self.kernel_size) + [self.filters, n],
            self.recurrent_initializer, regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint)
        bias_init = (unit_forget_bias_initializer(self.bias_initializer, self.filters)
                     if self.unit_forget_bias else self.bias_initializer)
        self.bias = (self.add_weight("bias", [n], bias_init,
                                     regularizer=self.bias_regularizer,
                                     constraint=self.bias_constraint)
                     if self.use_bias else None)
        self.built = True

    def get_initial_state(self, batch_size=None):
        """Zero states ``[h, c]``, each ``[batch_size, *out_spatial, filters]`` (or
        channels-first)."""
        shape = list(self.output_size)
        if isinstance(batch_size, int):
            zero = constant_ops.zeros([batch_size] + shape, self.dtype)
        else:
            n = 1
            for d in shape:
                n *= d
            zero = array_ops.reshape(constant_ops.zeros(
                array_ops.stack([batch_size, n]), self.dtype), [-1] + shape)
        return [zero, zero]

    def call(self, inputs, states, training=False):
        h_prev, c_prev = states[0], states[1]
        x, h = self._dropped(inputs, h_prev, training)
        df = self.data_format
        x, h, c_prev = (to_channels_last(t, df) for t in (x, h, c_prev))
        z = convolve(x, self.kernel, self.rank, self.strides, self.padding,
                     self.dilation_rate)
        if self.bias is not None:
            z = nn_ops.bias_add(z, self.bias)
        ones = (1,) * self.rank
        z = z + convolve(h, self.recurrent_kernel, self.rank, ones, "same", ones)
        zi, zf, zc, zo = array_ops.split(z, 4, axis=-1)
        ra, act = self.recurrent_activation, self.activation
        c = ra(zf) * c_prev + ra(zi) * act(zc)
        h = ra(zo) * act(c)
        h, c = to_channels_first(h, df), to_channels_first(c, df)
        return h, [h, c]

    def get_config(self):
        cfg = super().get_config()
        cfg.pop("units")
        return {**cfg, "rank": self.rank, "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate,
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias}


class _ConvLSTM(RNN):
    """A `ConvLSTMCell` run over ``[batch, time, *spatial, channels]`` by `RNN`."""

    _rank = 2

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, return_sequences=False,
                 return_state=False, go_backwards=False, stateful=False, **kwargs):
        kwargs.pop("rank", None)
        cell = ConvLSTMCell(
            self._rank, filters, kernel_size, strides=strides, padding=padding,
            data_format=data_format, dilation_rate=dilation_rate, activation=activation,
            recurrent_activation=recurrent_activation, use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer, bias_initializer=bias_initializer,
            unit_forget_bias=unit_forget_bias, kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer, bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint, recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint, dropout=dropout,
            recurrent_dropout=recurrent_dropout, seed=seed, name="conv_lstm_cell",
            dtype=kwargs.get("dtype"))
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.input_spec = InputSpec(ndim=self._rank + 3)

    def build(self, sequences_shape, initial_state_shape=None):
        if isinstance(sequences_shape, list) and sequences_shape and \
                isinstance(sequences_shape[0], tuple):
            sequences_shape = sequences_shape[0]
        if len(sequences_shape) != self._rank + 3:
            raise ValueError(f'Input 0 of layer "{self.name}" is incompatible with the '
                             f"layer: expected ndim={self._rank + 3}, found "
                             f"ndim={len(sequences_shape)}. Full shape received: "
                             f"{tuple(sequences_shape)}")
        super().build(sequences_shape, initial_state_shape)

    def compute_output_shape(self, sequences_shape, initial_state_shape=None):
        b, t = sequences_shape[0], sequences_shape[1]
        if not self.cell.built:
            self.cell.spatial_dims = tuple(
                sequences_shape[3:] if self.cell.data_format == "channels_first"
                else sequences_shape[2:-1])
        step = tuple(self.cell.output_size)
        out = (b, t) + step if self.return_sequences else (b,) + step
        if self.return_state:
            return [out, (b,) + step, (b,) + step]
        return out

    def get_config(self):
        cell = self.cell
        cfg = {k: v for k, v in super().get_config().items() if k != "cell"}
        inner = cell.get_config()
        for k in ("name", "trainable", "dtype", "rank"):
            inner.pop(k, None)
        act = getattr(self, "activity_regularizer", None)
        return {**cfg, **inner, "activity_regularizer": regularizers.serialize(act)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config.pop("cell", None)
        return cls(**config)

    def __getattr__(self, name):
        # Keras's read-only views of the cell's arguments (`layer.filters`, ...).
        if name in ("filters", "kernel_size", "strides", "padding", "data_format",
                    "dilation_rate", "activation", "recurrent_activation", "use_bias",
                    "kernel_initializer", "recurrent_initializer", "bias_initializer",
                    "unit_forget_bias", "kernel_regularizer", "recurrent_regularizer",
                    "bias_regularizer", "kernel_constraint", "recurrent_constraint",
                    "bias_constraint", "dropout", "recurrent_dropout"):
            cell = self.__dict__.get("cell")
            if cell is not None:
                return getattr(cell, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class ConvLSTM1D(_ConvLSTM):
    """1-D convolutional LSTM, as Keras 3: inputs ``[batch, time, steps, channels]``
    (channels-last); output ``[batch, new_steps, filters]``, or with
    ``return_sequences`` ``[batch, time, new_steps, filters]``. Arguments as
    `ConvLSTMCell` plus `RNN`'s return_sequences, return_state, go_backwards and
    stateful."""

    _rank = 1


class ConvLSTM2D(_ConvLSTM):
    """2-D convolutional LSTM (Shi et al. 2015), as Keras 3: inputs ``[batch, time,
    rows, cols, channels]`` (channels-last; ``[batch, time, channels, rows, cols]``
    channels-first); output ``[batch, new_rows, new_cols, filters]``, or with
    ``return_sequences`` ``[batch, time, new_rows, new_cols, filters]``. Arguments as
    `ConvLSTMCell` plus `RNN`'s return_sequences, return_state, go_backwards and
    stateful. Masks: a masked step keeps the states (as `RNN`)."""

    _rank = 2


class ConvLSTM3D(_ConvLSTM):
    """3-D convolutional LSTM, as Keras 3: inputs ``[batch, time, d1, d2, d3,
    channels]``; output ``[batch, n1, n2, n3, filters]`` (with ``return_sequences``,
    per step). Arguments as `ConvLSTM2D`."""

    _rank = 3


__all__ = ["ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "ConvLSTMCell"]
