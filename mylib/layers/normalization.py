"""Normalization layers: `BatchNormalization`, `LayerNormalization`,
`GroupNormalization` (Keras 3's arguments, defaults and formulas)."""

from __future__ import annotations

import numpy as np

from mylib.core import dtypes
from mylib.core.ops import array_ops, constant_ops, math_ops, nn_ops, reduction_ops
from mylib.layers import constraints, initializers, regularizers
from mylib.layers.base import InputSpec, Layer
from mylib.layers.core import _dynamic_shape


def _axes(axis, rank, name):
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f'Layer "{name}": invalid axis {a} for an input of rank {rank}.')
        out.append(a % rank)
    return sorted(set(out))


class _AffineNorm(Layer):
    """Shared arguments: the learned `gamma` (scale) and `beta` (center)."""

    # Masks pass through (Keras 3); BatchNormalization's batch statistics skip
    # masked steps.
    supports_masking = True

    def __init__(self, axis, epsilon, center, scale, beta_initializer, gamma_initializer,
                 beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint,
                 **kwargs):
        super().__init__(**kwargs)
        self.axis = axis if isinstance(axis, int) else tuple(axis)
        self.epsilon, self.center, self.scale = float(epsilon), bool(center), bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)

    def _known_axes(self, input_shape):
        rank = len(input_shape)
        axes = _axes(self.axis, rank, self.name)
        for a in axes:
            if input_shape[a] is None:
                raise ValueError(f'Layer "{self.name}": axis {a} of the input must be known. '
                                 f"Received: input_shape={tuple(input_shape)}")
        return axes

    def _affine_weights(self, shape):
        self.gamma = (self.add_weight("gamma", shape, self.gamma_initializer,
                                      regularizer=self.gamma_regularizer,
                                      constraint=self.gamma_constraint)
                      if self.scale else None)
        self.beta = (self.add_weight("beta", shape, self.beta_initializer,
                                     regularizer=self.beta_regularizer,
                                     constraint=self.beta_constraint)
                     if self.center else None)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "beta_regularizer": regularizers.serialize(self.beta_regularizer),
                "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
                "beta_constraint": constraints.serialize(self.beta_constraint),
                "gamma_constraint": constraints.serialize(self.gamma_constraint)}


def _param(w, bshape):
    """A per-feature tensor (or weight) reshaped to broadcast against the input; as is
    when the features are the last axis."""
    if w is None:
        return None
    if all(d == 1 for d in bshape[:-1]):
        return w
    return array_ops.reshape(w, bshape)


class BatchNormalization(_AffineNorm):
    """Normalizes each feature (the `axis` channels) by batch statistics in training
    and by moving statistics at inference (Ioffe & Szegedy, 2015).

    ``y = gamma * (x - mean) / sqrt(var + epsilon) + beta``.

    - ``training=True`` (as `fit` builds its step): `mean`/`var` are the batch's
      (biased variance, as Keras 3), and the step also runs the update ops
      ``moving = moving * momentum + batch_stat * (1 - momentum)`` (registered with
      `add_update`; they are also in the graph's ``UPDATE_OPS`` collection).
    - inference (``training`` None/False): the moving mean and variance.
    - ``trainable=False``: inference mode even in training, and the statistics stay
      frozen (Keras's rule for fine-tuning).
    - a mask over the non-feature axes (e.g. ``[batch, T]`` from
      `Embedding(mask_zero=True)`): the batch statistics count the unmasked steps only
      (Keras 3); the mask passes through to the output.

    Args:
      axis: the feature axis (or axes); -1 for channels-last, 1 for channels-first.
      momentum: of the moving averages.
      epsilon: added to the variance.
      center, scale: learn `beta`, `gamma`.
      beta_initializer, gamma_initializer, moving_mean_initializer,
      moving_variance_initializer, beta_regularizer, gamma_regularizer,
      beta_constraint, gamma_constraint: as usual.
      synchronized: accepted for Keras compatibility; under `MirroredStrategy` the
        batch statistics are always those of the global batch (as ``True``).
      renorm: batch renormalization (Ioffe 2017), as Keras 3: in training the
        normalized batch is corrected by ``r = stddev / renorm_stddev`` and ``d = (mean -
        renorm_mean) / renorm_stddev`` (no gradient through them), which track the
        batch statistics with `renorm_momentum`; the moving statistics track the
        standard deviation (``moving_stddev``), ``moving_variance`` is derived from it.
      renorm_clipping: dict with optional ``rmin``, ``rmax``, ``dmax`` clipping r and d.
      renorm_momentum: momentum of ``renorm_mean`` / ``renorm_stddev``.
    Raises:
      ValueError: bad `renorm_clipping` keys or values.
    """

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, synchronized=False, renorm=False,
                 renorm_clipping=None, renorm_momentum=0.99, **kwargs):
        super().__init__(axis, epsilon, center, scale, beta_initializer, gamma_initializer,
                         beta_regularizer, gamma_regularizer, beta_constraint,
                         gamma_constraint, **kwargs)
        self.momentum = float(momentum)
        self.synchronized = bool(synchronized)
        self.renorm = bool(renorm)
        if self.renorm:
            renorm_clipping = dict(renorm_clipping or {})
            unknown = set(renorm_clipping) - {"rmax", "rmin", "dmax"}
            if unknown:
                raise ValueError("Received invalid keys for `renorm_clipping` argument: "
                                 f"{renorm_clipping}. Supported values: ['rmax', 'rmin', "
                                 "'dmax'].")
            rmax, rmin = renorm_clipping.get("rmax"), renorm_clipping.get("rmin")
            dmax = renorm_clipping.get("dmax")
            if rmax is not None and rmin is not None and rmax < rmin:
                raise ValueError("rmax should be greater than rmin in the `renorm_clipping` "
                                 f"argument. Received: rmax={rmax}, rmin={rmin}.")
            if dmax is not None and dmax < 0:
                raise ValueError("dmax should be non-negative in the `renorm_clipping` "
                                 f"argument. Received: dmax={dmax}.")
        self.renorm_clipping = renorm_clipping
        self.renorm_momentum = float(renorm_momentum)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)

    def build(self, input_shape):
        axes = self._known_axes(input_shape)
        rank = len(input_shape)
        shape = [input_shape[a] for a in axes]
        self._bshape = [input_shape[i] if i in axes else 1 for i in range(rank)]
        self._reduction_axes = [i for i in range(rank) if i not in axes]
        self._affine_weights(shape)
        self.moving_mean = self.add_weight("moving_mean", shape, self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", shape,
                                               self.moving_variance_initializer,
                                               trainable=False)
        if self.renorm:  # Keras's order: moving_stddev, renorm_mean, renorm_stddev
            var_init = self.moving_variance_initializer

            def stddev_init(shape, dtype=None):
                return math_ops.sqrt(var_init(shape, dtype=dtype))

            self.moving_stddev = self.add_weight("moving_stddev", shape, stddev_init,
                                                 trainable=False)
            self.renorm_mean = self.add_weight("renorm_mean", shape,
                                               self.moving_mean_initializer, trainable=False)
            self.renorm_stddev = self.add_weight("renorm_stddev", shape, stddev_init,
                                                 trainable=False)
        self.input_spec = InputSpec(ndim=rank, axes={a: input_shape[a] for a in axes})

    def call(self, inputs, training=None, mask=None, time_steps=None):
        """`time_steps` (set by `TimeDistributed`, static T): the batch axis holds T
        time slices per sample (``[batch * T, ...]``, sample-major); in training each
        slice is normalized by its own batch statistics and the moving statistics
        take one update per slice in time order, as Keras 3's `TimeDistributed`, which
        calls the layer once per time step (TF-Keras 2 pooled all slices)."""
        if inputs.dtype in (dtypes.float16, dtypes.bfloat16) or \
                self.dtype in (dtypes.float16, dtypes.bfloat16):
            # As Keras 3: batch statistics overflow in 16 bits, so a mixed policy's
            # normalization computes in float32 (the output in the input's dtype).
            x = math_ops.cast(inputs, dtypes.float32)
        else:
            x = inputs if inputs.dtype == self.dtype else math_ops.cast(inputs, self.dtype)
        b = self._bshape
        if training and self.trainable and time_steps and time_steps > 1 and not self.renorm:
            # (with renorm, TimeDistributed's slices share one set of batch statistics)
            out = self._per_slice_call(x, int(time_steps), mask)
            return out if out.dtype == inputs.dtype else math_ops.cast(out, inputs.dtype)
        if training and self.trainable:
            mean, var = self._masked_moments(x, mask) if self._mask_applies(x, mask) \
                else nn_ops.moments(x, self._reduction_axes, keepdims=False)
            m = self.momentum
            if self.renorm:
                renorm = self._renorm(mean, var)
            else:
                for moving, stat in ((self.moving_mean, mean), (self.moving_variance, var)):
                    new = moving.value() * m + array_ops.stop_gradient(stat) * (1.0 - m)
                    self.add_update(moving.assign(new, read_value=False))
        else:
            mean, var = self.moving_mean.value(), self.moving_variance.value()
        # gamma and beta as stored (not cast to a mixed policy's compute dtype), in x's.
        beta, gamma = (None if w is None else w.value() for w in (self.beta, self.gamma))
        mean, var, beta, gamma = (t if t is None or t.dtype == x.dtype else
                                  math_ops.cast(t, x.dtype) for t in (mean, var, beta, gamma))
        if training and self.trainable and self.renorm:
            # (x_hat * r + d) * gamma + beta: the correction folded into gamma and beta.
            r, d = (math_ops.cast(t, x.dtype) for t in renorm)
            if gamma is not None:
                gamma, d = r * gamma, d * gamma
            else:
                gamma = r
            beta = d if beta is None else d + beta
        out = nn_ops.batch_normalization(x, _param(mean, b), _param(var, b),
                                         _param(beta, b), _param(gamma, b), self.epsilon)
        return out if out.dtype == inputs.dtype else math_ops.cast(out, inputs.dtype)

    def _renorm(self, mean, var):
        """The batch-renormalization correction ``(r, d)`` of the batch statistics (no
        gradient through them), and the updates of the renorm and moving statistics
        (Ioffe 2017; Keras 3's `BatchNormalization(renorm=True)`)."""
        sg = array_ops.stop_gradient
        mean, var = sg(mean), sg(var)
        stddev = math_ops.sqrt(var + self.epsilon)
        r_mean, r_std = self.renorm_mean.value(), self.renorm_stddev.value()
        safe_std = math_ops.maximum(r_std, float(np.sqrt(self.epsilon)))
        r = stddev / safe_std
        d = (mean - r_mean) / safe_std
        clip = self.renorm_clipping or {}
        if clip.get("rmin") is not None:
            r = math_ops.maximum(r, float(clip["rmin"]))
        if clip.get("rmax") is not None:
            r = math_ops.minimum(r, float(clip["rmax"]))
        if clip.get("dmax") is not None:
            d = math_ops.minimum(math_ops.maximum(d, -float(clip["dmax"])),
                                 float(clip["dmax"]))
        rm, m = self.renorm_momentum, self.momentum
        new_std = self.moving_stddev.value() * m + stddev * (1.0 - m)
        for v, new in ((self.renorm_mean, r_mean * rm + mean * (1.0 - rm)),
                       (self.renorm_stddev, r_std * rm + stddev * (1.0 - rm)),
                       (self.moving_mean, self.moving_mean.value() * m + mean * (1.0 - m)),
                       (self.moving_stddev, new_std),
                       (self.moving_variance,
                        nn_ops.relu(new_std * new_std - self.epsilon))):
            self.add_update(v.assign(new, read_value=False))
        return sg(r), sg(d)

    def _per_slice_call(self, x, steps, mask):
        """Training pass over ``[batch * steps, ...]`` with each time slice's own
        statistics (see `call`)."""
        tail = x.shape.as_list()[1:]
        xs = array_ops.reshape(x, [-1, steps] + tail)  # [batch, T, ...]
        # Reduced: the batch axis and the slice's other non-feature axes (not time).
        axes = [0] + [a + 1 for a in self._reduction_axes if a != 0]
        if mask is not None and self._mask_applies(x, mask):
            w = math_ops.cast(array_ops.reshape(mask, [-1, steps] + tail[:-1]), x.dtype)
            w = array_ops.expand_dims(w, -1) * constant_ops.ones_like(xs)
            n = math_ops.maximum(reduction_ops.reduce_sum(w, axes, keepdims=True), 1e-7)
            mean = reduction_ops.reduce_sum(w * xs, axes, keepdims=True) / n
            var = reduction_ops.reduce_sum(w * math_ops.square(xs - mean), axes,
                                           keepdims=True) / n
        else:
            mean, var = nn_ops.moments(xs, axes, keepdims=True)  # [1, T, 1.., C]
        m = self.momentum
        # T sequential updates in closed form: moving * m**T + sum_t (1-m) m**(T-1-t) s_t.
        coef = constant_ops.constant(
            [[(1.0 - m) * m ** (steps - 1 - t)] for t in range(steps)], dtype=x.dtype)
        for moving, stat in ((self.moving_mean, mean), (self.moving_variance, var)):
            per_t = array_ops.reshape(array_ops.stop_gradient(stat), [steps, -1])
            step_sum = reduction_ops.reduce_sum(per_t * coef, 0)
            v = moving.value()
            if v.dtype != x.dtype:
                step_sum = math_ops.cast(step_sum, v.dtype)
            new = v * (m ** steps) + array_ops.reshape(step_sum, array_ops.shape(v))
            self.add_update(moving.assign(new, read_value=False))
        bb = [1] + self._bshape
        beta, gamma = (None if w is None else w.value() for w in (self.beta, self.gamma))
        beta, gamma = (t if t is None or t.dtype == x.dtype else math_ops.cast(t, x.dtype)
                       for t in (beta, gamma))
        out = nn_ops.batch_normalization(xs, mean, var, _param(beta, bb), _param(gamma, bb),
                                         self.epsilon)
        return array_ops.reshape(out, [-1] + tail)

    def _mask_applies(self, x, mask):
        """A mask over all but the (last) feature axis, e.g. [batch, T] for [batch, T, C]."""
        if isinstance(mask, (list, tuple)):
            return False
        rank = x.shape.rank
        return mask is not None and mask.shape.rank is not None and rank is not None and \
            mask.shape.rank == rank - 1 and self._reduction_axes == list(range(rank - 1))

    def _masked_moments(self, x, mask):
        """Keras 3's masked batch statistics: the mean and (biased) variance over the
        unmasked entries only."""
        w = array_ops.expand_dims(math_ops.cast(mask, x.dtype), -1)
        axes = self._reduction_axes
        n = math_ops.maximum(reduction_ops.reduce_sum(w * constant_ops.ones_like(x), axes),
                             1e-7)
        mean = reduction_ops.reduce_sum(w * x, axes) / n
        var = reduction_ops.reduce_sum(w * math_ops.square(x - mean), axes) / n
        return mean, var

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum,
                "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
                "moving_variance_initializer":
                    initializers.serialize(self.moving_variance_initializer),
                "synchronized": self.synchronized, "renorm": self.renorm,
                "renorm_clipping": self.renorm_clipping,
                "renorm_momentum": self.renorm_momentum}


class LayerNormalization(_AffineNorm):
    """Normalizes each sample over `axis` (Ba et al., 2016):
    ``gamma * (x - mean) / sqrt(var + epsilon) + beta`` with the mean and (biased)
    variance over `axis`; `gamma`/`beta` have the shape of those axes.

    Args:
      axis: int or list of ints (default -1).
      epsilon: default 1e-3 (Keras).
      rms_scaling: divide by the root mean square instead (no centering; RMSNorm).
    """

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, rms_scaling=False,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 **kwargs):
        super().__init__(axis, epsilon, center, scale, beta_initializer, gamma_initializer,
                         beta_regularizer, gamma_regularizer, beta_constraint,
                         gamma_constraint, **kwargs)
        self.rms_scaling = bool(rms_scaling)

    def build(self, input_shape):
        axes = self._known_axes(input_shape)
        rank = len(input_shape)
        self._axes = axes
        self._bshape = [input_shape[i] if i in axes else 1 for i in range(rank)]
        self._affine_weights([input_shape[a] for a in axes])

    def call(self, inputs):
        x = inputs if inputs.dtype == self.dtype else math_ops.cast(inputs, self.dtype)
        b = self._bshape
        if self.rms_scaling:
            ms = reduction_ops.reduce_mean(math_ops.square(x), self._axes, keepdims=True)
            out = x * math_ops.rsqrt(ms + self.epsilon)
            if self.gamma is not None:
                out = out * _param(self.gamma, b)
        else:
            mean, var = nn_ops.moments(x, self._axes, keepdims=True)
            out = nn_ops.batch_normalization(x, mean, var, _param(self.beta, b),
                                             _param(self.gamma, b), self.epsilon)
        return out if out.dtype == inputs.dtype else math_ops.cast(out, inputs.dtype)

    def get_config(self):
        return {**super().get_config(), "rms_scaling": self.rms_scaling}


def _shape(x, dims):
    """A reshape target: static with -1 for the batch when only it is unknown."""
    if all(d is not None for d in dims[1:]):
        return [-1] + list(dims[1:])
    return _dynamic_shape(x, dims)


class GroupNormalization(_AffineNorm):
    """Splits the channels into `groups` and normalizes each sample's group over its
    channels and all spatial positions (Wu & He, 2018); then per-channel `gamma`,
    `beta`. ``groups=channels`` is instance normalization, ``groups=1`` is layer
    normalization over all non-batch axes.

    Args:
      groups: number of groups; must divide the channels.
      axis: the channel axis: -1 (channels-last) or 1 (channels-first).
    """

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 **kwargs):
        super().__init__(axis, epsilon, center, scale, beta_initializer, gamma_initializer,
                         beta_regularizer, gamma_regularizer, beta_constraint,
                         gamma_constraint, **kwargs)
        if not isinstance(axis, int):
            raise ValueError(f"GroupNormalization takes one channel axis. Received: axis={axis}")
        self.groups = int(groups)

    def build(self, input_shape):
        (a,) = self._known_axes(input_shape)
        rank = len(input_shape)
        c = input_shape[a]
        if self.groups <= 0 or c % self.groups:
            raise ValueError(f'Layer "{self.name}": number of groups ({self.groups}) must be a '
                             f"divisor of the number of channels ({c}). Input shape: "
                             f"{tuple(input_shape)}")
        self._axis_n, self._rank = a, rank
        self._affine_weights([c])
        self.input_spec = InputSpec(ndim=rank, axes={a: c})

    def call(self, inputs):
        x = inputs if inputs.dtype == self.dtype else math_ops.cast(inputs, self.dtype)
        a, rank = self._axis_n, self._rank
        if a != rank - 1:  # channels to the end, and back after
            perm = [i for i in range(rank) if i != a] + [a]
            x = array_ops.transpose(x, perm)
        shape = x.shape.as_list()
        c, g = shape[-1], self.groups
        grouped = array_ops.reshape(x, _shape(x, shape[:-1] + [g, c // g]))
        mean, var = nn_ops.moments(grouped, list(range(1, rank - 1)) + [rank], keepdims=True)
        normed = nn_ops.batch_normalization(grouped, mean, var, None, None, self.epsilon)
        out = array_ops.reshape(normed, _shape(x, shape))
        if self.gamma is not None:
            out = out * self.gamma.value()
        if self.beta is not None:
            out = out + self.beta.value()
        if a != rank - 1:
            inv = [0] * rank
            for i, p in enumerate(perm):
                inv[p] = i
            out = array_ops.transpose(out, inv)
        return out if out.dtype == inputs.dtype else math_ops.cast(out, inputs.dtype)

    def get_config(self):
        return {**super().get_config(), "groups": self.groups}


class RMSNormalization(Layer):
    """Root-mean-square normalization (Zhang & Sennrich, 2019), as Keras 3:
    ``x * rsqrt(mean(x**2 over axis) + epsilon) * scale``, with no centering and no
    offset; `scale` (initialized to ones) has the sizes of the normalized axes.

    Args:
      axis: int or list of ints (default -1): the axes normalized over.
      epsilon: added to the mean square (default 1e-6).

    Output: the input's shape and dtype; float16 and bfloat16 inputs are normalized in
    float32.
    """

    def __init__(self, axis=-1, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        self.epsilon = float(epsilon)

    def build(self, input_shape):
        axes = _axes(self.axis, len(input_shape), self.name)
        for a in axes:
            if input_shape[a] is None:
                raise ValueError(f'Layer "{self.name}": axis {a} of the input must be known. '
                                 f"Received: input_shape={tuple(input_shape)}")
        self._axes = axes
        self._bshape = [input_shape[i] if i in axes else 1 for i in range(len(input_shape))]
        self.scale = self.add_weight("scale", [input_shape[a] for a in axes], "ones")

    def call(self, inputs):
        x = inputs
        if x.dtype.base_dtype in (dtypes.float16, dtypes.bfloat16):
            x = math_ops.cast(x, dtypes.float32)
        ms = reduction_ops.reduce_mean(math_ops.square(x), self._axes, keepdims=True)
        scale = _param(self.scale, self._bshape)
        if scale.dtype != x.dtype:
            scale = math_ops.cast(scale, x.dtype)
        out = x * math_ops.rsqrt(ms + self.epsilon) * scale
        return out if out.dtype == inputs.dtype else math_ops.cast(out, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon}
