"""TensorFlow 1's ``tf.layers``: the functions (`dense`, `conv2d`, `max_pooling2d`,
`dropout`, `batch_normalization`, `flatten`, ...) and their layer classes, on mylib's
Keras layers.

A TF1 layer lives in a variable scope (`mylib.core.variable_scope`): its weights are
made by `get_variable`, so they are named as TF1 names them (``dense/kernel:0``,
``dense_1/bias:0``, ``conv2d/kernel:0``), honour the scope's initializer, regularizer
and reuse (``tf.layers.dense(x, 10, name="fc", reuse=True)`` shares ``fc``'s weights),
and their regularization losses go to ``GraphKeys.REGULARIZATION_LOSSES``. Defaults are
TF1's: ``kernel_initializer=None`` means the scope's initializer, else
`get_variable`'s default (Glorot uniform).

``training`` may be a Python bool or a boolean scalar `Tensor` (a placeholder): with a
tensor, `dropout` and `batch_normalization` choose at run time. `batch_normalization`
in training puts its moving-average updates in ``GraphKeys.UPDATE_OPS`` (as TF1), so
run them with the train op::

    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = optimizer.minimize(loss)

Differences from TF1: the moving variance is updated with the biased batch variance
(TF1's fused kernel uses the unbiased one); ``renorm``, ``virtual_batch_size`` and
``adjustment`` are not supported (a clear error says so).
"""

from __future__ import annotations

import contextlib

from mylib.core.graph import Tensor, get_default_graph
from mylib.core import dtypes as _dtypes
from mylib.core.ops import array_ops, math_ops, nn_ops
from mylib.core.op_registry import convert_to_tensor
from mylib.core import init_ops
from mylib.core.variable_scope import PartitionedVariable, get_variable, variable_scope
from mylib.layers import convolutional, core, normalization, pooling
from mylib.layers.normalization import _param

__all__ = ["dense", "conv1d", "conv2d", "conv2d_transpose", "max_pooling1d", "max_pooling2d",
           "average_pooling1d", "average_pooling2d", "dropout", "batch_normalization",
           "flatten", "conv3d", "max_pooling3d", "average_pooling3d"]


class _TF1Layer:
    """Mixin (before the Keras class): the layer's weights come from `get_variable` in
    the layer's variable scope, and its ops go in that scope's name scope."""

    _tf1_base = None

    def _tf1_init(self, name, reuse):
        self._tf1_name, self._tf1_reuse, self._tf1_scope = name, reuse, None

    def __call__(self, inputs, *args, **kwargs):
        x = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        g = x.graph if isinstance(x, Tensor) else get_default_graph()
        with g.as_default():
            if self._tf1_scope is None:
                # An unnamed layer asked to reuse takes its base name itself (``dense``),
                # as TF1 does, instead of a new unique one.
                name = self._tf1_name if self._tf1_name is not None or \
                    self._tf1_reuse is not True else self._tf1_base
                with variable_scope(name, default_name=self._tf1_base,
                                       reuse=self._tf1_reuse) as scope:
                    self._tf1_scope = scope
                self.name = scope.name.split("/")[-1]
            reuse = True if self.built else self._tf1_reuse
            with variable_scope(self._tf1_scope, reuse=reuse, auxiliary_name_scope=False):
                return super().__call__(inputs, *args, **kwargs)

    def _call_name_scope(self, g):
        return g.name_scope(self._tf1_scope.original_name_scope)

    def _call_collectable(self, g):
        # TensorFlow 1's layer functions return only the output; what they add to
        # collections (regularization losses, UPDATE_OPS) must outlive the layer object.
        return contextlib.nullcontext()

    @property
    def scope_name(self):
        return self._tf1_scope.name if self._tf1_scope is not None else None

    def add_weight(self, name=None, shape=None, initializer=None, trainable=True, dtype=None,
                   regularizer=None, constraint=None, partitioner=None):
        dtype = _dtypes.as_dtype(dtype) if dtype is not None else self.variable_dtype
        v = get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                            regularizer=regularizer, trainable=trainable,
                            constraint=constraint, partitioner=partitioner)
        parts = list(v) if isinstance(v, PartitionedVariable) else [v]
        for p in parts:
            p._keras_trainable = bool(trainable)
            if not any(p is w for w in self._weights_own):
                self._weights_own.append(p)
        return v


def _kw(name, reuse, trainable, **kw):
    return dict(name=name, _reuse=reuse, trainable=trainable, **kw)


class Dense(_TF1Layer, core.Dense):
    """TF1's `tf.layers.Dense`: ``activation(inputs @ kernel + bias)``, weights
    ``<scope>/kernel`` [in, units] and ``<scope>/bias`` [units]."""

    _tf1_base = "dense"

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 trainable=True, name=None, _reuse=None, **kwargs):
        self._tf1_init(name, _reuse)
        super().__init__(units, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer or init_ops.zeros_initializer(),
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         trainable=trainable, name=name, **kwargs)


def _conv_class(keras_cls, base):
    class _Conv(_TF1Layer, keras_cls):
        _tf1_base = base

        def __init__(self, filters, kernel_size, strides=1, padding="valid",
                     data_format="channels_last", dilation_rate=1, activation=None,
                     use_bias=True, kernel_initializer=None, bias_initializer=None,
                     kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                     kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                     _reuse=None, **kwargs):
            self._tf1_init(name, _reuse)
            extra = {} if keras_cls is convolutional.Conv2DTranspose else \
                {"dilation_rate": dilation_rate}
            super().__init__(filters, kernel_size, strides=strides, padding=padding,
                             data_format=data_format, activation=activation, use_bias=use_bias,
                             kernel_initializer=kernel_initializer,
                             bias_initializer=bias_initializer or
                             init_ops.zeros_initializer(),
                             kernel_regularizer=kernel_regularizer,
                             bias_regularizer=bias_regularizer,
                             activity_regularizer=activity_regularizer,
                             kernel_constraint=kernel_constraint,
                             bias_constraint=bias_constraint, trainable=trainable, name=name,
                             **extra, **kwargs)

    _Conv.__name__ = _Conv.__qualname__ = keras_cls.__name__
    _Conv.__doc__ = (f"TF1's `tf.layers.{keras_cls.__name__}`: weights ``<scope>/kernel`` and "
                     f"``<scope>/bias``; arguments as `mylib.layers.{keras_cls.__name__}` "
                     "with TF1's defaults.")
    return _Conv


Conv1D = _conv_class(convolutional.Conv1D, "conv1d")
Conv2D = _conv_class(convolutional.Conv2D, "conv2d")
Conv2DTranspose = _conv_class(convolutional.Conv2DTranspose, "conv2d_transpose")
Conv3D = _conv_class(convolutional.Conv3D, "conv3d")


def _pool_class(keras_cls, base):
    class _Pool(_TF1Layer, keras_cls):
        _tf1_base = base

        def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                     name=None, **kwargs):
            self._tf1_init(name, None)
            super().__init__(pool_size=pool_size, strides=strides, padding=padding,
                             data_format=data_format, name=name, **kwargs)

    _Pool.__name__ = _Pool.__qualname__ = keras_cls.__name__
    _Pool.__doc__ = f"TF1's `tf.layers.{keras_cls.__name__}` (pool_size and strides required)."
    return _Pool


MaxPooling1D = _pool_class(pooling.MaxPooling1D, "max_pooling1d")
MaxPooling2D = _pool_class(pooling.MaxPooling2D, "max_pooling2d")
AveragePooling1D = _pool_class(pooling.AveragePooling1D, "average_pooling1d")
AveragePooling2D = _pool_class(pooling.AveragePooling2D, "average_pooling2d")
MaxPooling3D = _pool_class(pooling.MaxPooling3D, "max_pooling3d")
AveragePooling3D = _pool_class(pooling.AveragePooling3D, "average_pooling3d")
MaxPool1D, MaxPool2D = MaxPooling1D, MaxPooling2D
AveragePool1D, AveragePool2D = AveragePooling1D, AveragePooling2D


class Flatten(_TF1Layer, core.Flatten):
    """TF1's `tf.layers.Flatten`: ``[batch, ...] -> [batch, prod(...)]``."""

    _tf1_base = "flatten"

    def __init__(self, data_format="channels_last", name=None, **kwargs):
        self._tf1_init(name, None)
        super().__init__(data_format=data_format, name=name, **kwargs)


def _is_tensor(training):
    return isinstance(training, Tensor) or hasattr(training, "_as_tensor")


def _scalar(t, dtype_hint=None):
    """`t` as a scalar tensor: an unshaped placeholder (``tf.placeholder(tf.bool)``) is
    reshaped to rank 0 (a fed non-scalar then fails at run time), so the outputs it
    selects between keep their static shape, as in TF1."""
    t = convert_to_tensor(t, dtype_hint=dtype_hint)
    return t if t.shape.rank == 0 else array_ops.reshape(t, [])


class Dropout(_TF1Layer, core.Dropout):
    """TF1's `tf.layers.Dropout`: ``training`` a Python bool or a bool scalar tensor."""

    _tf1_base = "dropout"

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        self._tf1_init(name, None)
        # A tensor rate (a placeholder fed at run time) is kept apart from the float one.
        self._rate_tensor = _scalar(rate, _dtypes.float32) if _is_tensor(rate) else None
        super().__init__(0.5 if self._rate_tensor is not None else rate,
                         noise_shape=noise_shape, seed=seed, name=name, **kwargs)

    def call(self, inputs, training=False):
        if self._rate_tensor is None and self.rate == 0:
            return inputs
        if _is_tensor(training):
            dropped = self._dropped(inputs)
            return array_ops.where(_scalar(training), dropped, inputs)
        return self._dropped(inputs) if training else inputs

    def _dropped(self, inputs):
        rate = self.rate if self._rate_tensor is None else self._rate_tensor
        if _is_tensor(rate) and rate.dtype != inputs.dtype:
            rate = math_ops.cast(rate, inputs.dtype)
        return self._drop(inputs, rate)


class BatchNormalization(_TF1Layer, normalization.BatchNormalization):
    """TF1's `tf.layers.BatchNormalization` (weights ``<scope>/gamma``, ``beta``,
    ``moving_mean``, ``moving_variance``); in training the moving-average updates go to
    ``UPDATE_OPS``. With a tensor ``training`` both statistics are built and chosen at
    run time, and the updates leave the moving averages unchanged when it is False."""

    _tf1_base = "batch_normalization"

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=None, gamma_initializer=None,
                 moving_mean_initializer=None, moving_variance_initializer=None,
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, trainable=True, virtual_batch_size=None,
                 adjustment=None, name=None, _reuse=None, **kwargs):
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise ValueError("batch_normalization: renorm, virtual_batch_size and adjustment "
                             "are not supported by mylib; use the plain batch normalization.")
        self._tf1_init(name, _reuse)
        zeros, ones = init_ops.zeros_initializer, init_ops.ones_initializer
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, beta_initializer=beta_initializer or zeros(),
                         gamma_initializer=gamma_initializer or ones(),
                         moving_mean_initializer=moving_mean_initializer or zeros(),
                         moving_variance_initializer=moving_variance_initializer or ones(),
                         beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
                         beta_constraint=beta_constraint, gamma_constraint=gamma_constraint,
                         trainable=trainable, name=name, **kwargs)

    def call(self, inputs, training=False):
        if not _is_tensor(training):
            return super().call(inputs, training=training)
        training = _scalar(training)
        x = inputs if inputs.dtype == self.dtype else math_ops.cast(inputs, self.dtype)
        b = self._bshape
        mean_b, var_b = nn_ops.moments(x, self._reduction_axes, keepdims=False)
        mean = array_ops.where(training, mean_b, self.moving_mean.value())
        var = array_ops.where(training, var_b, self.moving_variance.value())
        if self.trainable:
            m = array_ops.where(training, math_ops.cast(self.momentum, x.dtype),
                                math_ops.cast(1.0, x.dtype))
            for moving, stat in ((self.moving_mean, mean_b), (self.moving_variance, var_b)):
                new = moving.value() * m + array_ops.stop_gradient(stat) * (1.0 - m)
                self.add_update(moving.assign(new, read_value=False))
        out = nn_ops.batch_normalization(x, _param(mean, b), _param(var, b),
                                         _param(self.beta, b), _param(self.gamma, b),
                                         self.epsilon)
        return out if out.dtype == inputs.dtype else math_ops.cast(out, inputs.dtype)


BatchNorm = BatchNormalization


# ---------------------------------------------------------------- the functions
def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable=True, name=None, reuse=None):
    """TF1's `tf.layers.dense`: ``activation(inputs @ kernel + bias)``.

    Args:
      inputs: `Tensor` [..., in_features] (float).
      units: output size.
      name: the variable scope (default ``dense``, ``dense_1``, ...); reuse: share the
        weights of an earlier call with the same `name`.
    Returns:
      `Tensor` [..., units].
    """
    layer = Dense(units, activation=activation, use_bias=use_bias,
                  kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                  kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                  activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                  bias_constraint=bias_constraint, trainable=trainable, name=name, _reuse=reuse)
    return layer(inputs)


def _conv(cls, inputs, filters, kernel_size, strides, padding, data_format, dilation_rate,
          activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
          bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint,
          trainable, name, reuse):
    layer = cls(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                bias_constraint=bias_constraint, trainable=trainable, name=name, _reuse=reuse)
    return layer(inputs)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """TF1's `tf.layers.conv2d`: inputs [batch, H, W, C] (channels_last) -> [batch, H', W',
    filters]; kernel [kh, kw, C, filters]. `padding` is ``"valid"`` or ``"same"``."""
    return _conv(Conv2D, inputs, filters, kernel_size, strides, padding, data_format,
                 dilation_rate, activation, use_bias, kernel_initializer, bias_initializer,
                 kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                 bias_constraint, trainable, name, reuse)


def conv1d(inputs, filters, kernel_size, strides=1, padding="valid",
           data_format="channels_last", dilation_rate=1, activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """TF1's `tf.layers.conv1d`: inputs [batch, T, C] -> [batch, T', filters]."""
    return _conv(Conv1D, inputs, filters, kernel_size, strides, padding, data_format,
                 dilation_rate, activation, use_bias, kernel_initializer, bias_initializer,
                 kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                 bias_constraint, trainable, name, reuse)


def conv2d_transpose(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    """TF1's `tf.layers.conv2d_transpose` (the transposed convolution)."""
    return _conv(Conv2DTranspose, inputs, filters, kernel_size, strides, padding, data_format,
                 None, activation, use_bias, kernel_initializer, bias_initializer,
                 kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                 bias_constraint, trainable, name, reuse)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """TF1's `tf.layers.max_pooling2d` ([batch, H, W, C])."""
    return MaxPooling2D(pool_size, strides, padding, data_format, name=name)(inputs)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """TF1's `tf.layers.average_pooling2d` ([batch, H, W, C])."""
    return AveragePooling2D(pool_size, strides, padding, data_format, name=name)(inputs)


def max_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """TF1's `tf.layers.max_pooling1d` ([batch, T, C])."""
    return MaxPooling1D(pool_size, strides, padding, data_format, name=name)(inputs)


def average_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """TF1's `tf.layers.average_pooling1d` ([batch, T, C])."""
    return AveragePooling1D(pool_size, strides, padding, data_format, name=name)(inputs)


def conv3d(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1, 1), activation=None,
           use_bias=True, kernel_initializer=None, bias_initializer=None,
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
           kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
           reuse=None):
    """TF1's `tf.layers.conv3d`: inputs [batch, D, H, W, C] (channels_last) -> [batch, D',
    H', W', filters]; kernel [kd, kh, kw, C, filters]."""
    return _conv(Conv3D, inputs, filters, kernel_size, strides, padding, data_format,
                 dilation_rate, activation, use_bias, kernel_initializer, bias_initializer,
                 kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                 bias_constraint, trainable, name, reuse)


def max_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """TF1's `tf.layers.max_pooling3d` ([batch, D, H, W, C])."""
    return MaxPooling3D(pool_size, strides, padding, data_format, name=name)(inputs)


def average_pooling3d(inputs, pool_size, strides, padding="valid",
                      data_format="channels_last", name=None):
    """TF1's `tf.layers.average_pooling3d` ([batch, D, H, W, C])."""
    return AveragePooling3D(pool_size, strides, padding, data_format, name=name)(inputs)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """TF1's `tf.layers.dropout`: drops a fraction `rate` (not a keep probability) and
    scales the rest by ``1 / (1 - rate)`` when `training` (a bool or a bool tensor) is
    true; the identity otherwise."""
    return Dropout(rate, noise_shape=noise_shape, seed=seed, name=name)(inputs,
                                                                        training=training)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None,
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """TF1's `tf.layers.batch_normalization`: batch statistics when `training` (a bool
    or a bool tensor), moving statistics otherwise; the moving-average updates are in
    ``GraphKeys.UPDATE_OPS`` (run them with the train op).

    ``y = gamma * (x - mean) / sqrt(var + epsilon) + beta`` (Ioffe & Szegedy, 2015).
    """
    layer = BatchNormalization(
        axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
        virtual_batch_size=virtual_batch_size, adjustment=adjustment, trainable=trainable,
        name=name, _reuse=reuse)
    return layer(inputs, training=training)


def flatten(inputs, name=None, data_format="channels_last"):
    """TF1's `tf.layers.flatten`: [batch, ...] -> [batch, prod(...)]."""
    return Flatten(data_format=data_format, name=name)(inputs)

