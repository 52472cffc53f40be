"""TensorFlow 1's per-optimizer training ops: ``ResourceApply<Rule>`` (dense) and
``ResourceSparseApply<Rule>`` (rows), each a stateful op that reads a variable and its
slot variables, applies one update rule and writes them back.

The rules are those of TensorFlow 1's kernels (``tensorflow/core/kernels/
training_ops.cc``), element by element, so `tf.train.*Optimizer` programs get
TensorFlow 1's numbers:

- GradientDescent: ``var -= lr * g``
- Momentum: ``accum = momentum * accum + g``; ``var -= lr * accum`` (Nesterov:
  ``var -= lr * g + lr * momentum * accum``)
- Adam: ``lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)``; ``m += (g - m)(1 - beta1)``;
  ``v += (g^2 - v)(1 - beta2)``; ``var -= lr_t * m / (sqrt(v) + epsilon)`` (epsilon is
  added to the uncorrected ``sqrt(v)``; optax's ``scale_by_adam`` adds it to the
  bias-corrected one, which is why these rules are not optax transforms)
- Adagrad: ``accum += g^2``; ``var -= lr * g / sqrt(accum)`` (no epsilon)
- RMSProp: ``ms += (g^2 - ms)(1 - rho)``; ``mom = momentum * mom + lr * g /
  sqrt(ms + epsilon)``; ``var -= mom`` (centered: ``mg += (g - mg)(1 - rho)`` and the
  denominator ``sqrt(ms - mg^2 + epsilon)``)
- Ftrl (McMahan et al., 2013; with TensorFlow's ``l2_shrinkage``): see `_ftrl`.
- Adadelta (Zeiler, 2012): ``accum = rho accum + (1 - rho) g^2``; ``update =
  sqrt(accum_update + eps) / sqrt(accum + eps) g``; ``accum_update = rho accum_update +
  (1 - rho) update^2``; ``var -= lr * update``
- ProximalGradientDescent / ProximalAdagrad (Duchi & Singer, FOBOS, 2009): the gradient
  (or Adagrad) step, then the L1/L2 proximal map ``sign(v) / (1 + lr_t l2) *
  max(|v| - lr_t l1, 0)``.

Inputs, for every op: the variable's handle, its slot handles, the hyperparameters
(scalars, cast to the variable's dtype) in the order of the rule's arguments, then the
gradient; the sparse ops take the gradient's ``values`` and ``indices``, sum the
values of repeated indices (TensorFlow 1's ``_deduplicate_indexed_slices``) and apply
the rule to those rows only, as TensorFlow's ``ResourceSparseApply*`` kernels do.
Attr ``use_nesterov`` (Momentum, Adam) as in TensorFlow.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from mylib.core.op_registry import NotDifferentiable, OpDef


# ---------------------------------------------------------------- rules
def _gradient_descent(var, slots, lr, g, **_):
    return var - lr * g, []


def _momentum(var, slots, lr, momentum, g, use_nesterov=False):
    (accum,) = slots
    accum = accum * momentum + g
    if use_nesterov:
        var = var - (g * lr + accum * momentum * lr)
    else:
        var = var - lr * accum
    return var, [accum]


def _adam(var, slots, beta1_power, beta2_power, lr, beta1, beta2, epsilon, g,
          use_nesterov=False):
    m, v = slots
    lr_t = lr * jnp.sqrt(1 - beta2_power) / (1 - beta1_power)
    m = m + (g - m) * (1 - beta1)
    v = v + (g * g - v) * (1 - beta2)
    if use_nesterov:
        var = var - (g * (1 - beta1) + beta1 * m) * lr_t / (jnp.sqrt(v) + epsilon)
    else:
        var = var - m * lr_t / (jnp.sqrt(v) + epsilon)
    return var, [m, v]


def _adagrad(var, slots, lr, g, **_):
    (accum,) = slots
    accum = accum + g * g
    return var - lr * g * jax.lax.rsqrt(accum), [accum]


def _rmsprop(var, slots, lr, rho, momentum, epsilon, g, **_):
    ms, mom = slots
    ms = ms + (g * g - ms) * (1 - rho)
    mom = mom * momentum + lr * g * jax.lax.rsqrt(ms + epsilon)
    return var - mom, [ms, mom]


def _centered_rmsprop(var, slots, lr, rho, momentum, epsilon, g, **_):
    mg, ms, mom = slots
    mg = mg + (g - mg) * (1 - rho)
    ms = ms + (g * g - ms) * (1 - rho)
    mom = mom * momentum + lr * g * jax.lax.rsqrt(ms - mg * mg + epsilon)
    return var - mom, [mg, ms, mom]


def _adadelta(var, slots, lr, rho, epsilon, g, **_):
    accum, accum_update = slots
    accum = accum * rho + g * g * (1 - rho)
    update = jnp.sqrt(accum_update + epsilon) * jax.lax.rsqrt(accum + epsilon) * g
    accum_update = accum_update * rho + update * update * (1 - rho)
    return var - update * lr, [accum, accum_update]


def _proximal(prox_v, lr_t, l1, l2):
    return jnp.sign(prox_v) / (1 + lr_t * l2) * jnp.maximum(jnp.abs(prox_v) - lr_t * l1, 0)


def _proximal_gradient_descent(var, slots, lr, l1, l2, g, **_):
    return _proximal(var - lr * g, lr, l1, l2), []


def _proximal_adagrad(var, slots, lr, l1, l2, g, **_):
    (accum,) = slots
    accum = accum + g * g
    lr_t = lr * jax.lax.rsqrt(accum)
    return _proximal(var - lr_t * g, lr_t, l1, l2), [accum]


def _ftrl(var, slots, lr, l1, l2, l2_shrinkage, lr_power, g, **_):
    """FTRL-Proximal (McMahan et al., "Ad Click Prediction", KDD 2013), as TensorFlow's
    ``ApplyFtrlV2``: the shrinkage term enters the linear accumulator only."""
    accum, linear = slots
    g_shrink = g + 2 * l2_shrinkage * var
    new_accum = accum + g * g
    is_sqrt = lr_power == -0.5
    p_new = jnp.where(is_sqrt, jnp.sqrt(new_accum), new_accum ** -lr_power)
    p_old = jnp.where(is_sqrt, jnp.sqrt(accum), accum ** -lr_power)
    linear = linear + g_shrink - (p_new - p_old) / lr * var
    quadratic = p_new / lr + 2 * l2
    var = jnp.where(jnp.abs(linear) > l1, (l1 * jnp.sign(linear) - linear) / quadratic,
                    jnp.zeros_like(var))
    return var, [new_accum, linear]


# ---------------------------------------------------------------- lowering
def _split(op, inputs, n_slots, n_grad):
    ref = inputs[0]
    slot_refs = inputs[1:1 + n_slots]
    scalars = inputs[1 + n_slots:len(inputs) - n_grad]
    return ref, slot_refs, scalars, inputs[len(inputs) - n_grad:]


def _attrs(op):
    return {k: v for k, v in op.attrs.items() if k == "use_nesterov"}


def _make_dense_lower(rule, n_slots):
    def lower(ctx, op, *inputs):
        ref, slot_refs, scalars, (g,) = _split(op, inputs, n_slots, 1)
        var = ctx.read_var(op, ref)
        dt = var.dtype
        slots = [ctx.read_var(op, r) for r in slot_refs]
        scalars = [jnp.asarray(s).astype(dt) for s in scalars]
        new_var, new_slots = rule(var, slots, *scalars, jnp.asarray(g).astype(dt), **_attrs(op))
        ctx.write_var(op, ref, new_var.astype(dt))
        for r, s in zip(slot_refs, new_slots):
            ctx.write_var(op, r, s.astype(dt))
        return ()

    return lower


def _make_sparse_lower(rule, n_slots):
    def lower(ctx, op, *inputs):
        ref, slot_refs, scalars, (values, indices) = _split(op, inputs, n_slots, 2)
        var = ctx.read_var(op, ref)
        dt = var.dtype
        slots = [ctx.read_var(op, r) for r in slot_refs]
        scalars = [jnp.asarray(s).astype(dt) for s in scalars]
        indices = jnp.asarray(indices).reshape(-1)
        values = jnp.asarray(values).astype(dt).reshape((indices.shape[0],) + var.shape[1:])
        n, rows = indices.shape[0], var.shape[0]
        # Repeated rows are summed first (static size: padding rows point past the end
        # and are dropped on write).
        uniq, inv = jnp.unique(indices, size=n, fill_value=rows, return_inverse=True)
        summed = jax.ops.segment_sum(values, inv.reshape(-1), num_segments=n)
        uniq = ctx.gate_rows(uniq, rows)  # a failed index check: no row changes

        def take(x):
            return x.at[uniq].get(mode="fill", fill_value=0)

        new_rows, new_slot_rows = rule(take(var), [take(s) for s in slots], *scalars, summed,
                                       **_attrs(op))
        ctx.write_var(op, ref, var.at[uniq].set(new_rows.astype(dt), mode="drop"), gated=True)
        for r, s, new in zip(slot_refs, slots, new_slot_rows):
            ctx.write_var(op, r, s.at[uniq].set(new.astype(dt), mode="drop"), gated=True)
        return ()

    return lower


def _no_outputs(*specs, **attrs):
    return []


def _define(name, rule, n_slots):
    dense = OpDef(f"ResourceApply{name}", lower=_make_dense_lower(rule, n_slots),
                  stateful=True, shape_fn=_no_outputs)
    sparse = OpDef(f"ResourceSparseApply{name}", lower=_make_sparse_lower(rule, n_slots),
                   stateful=True, shape_fn=_no_outputs)
    NotDifferentiable(dense.name)
    NotDifferentiable(sparse.name)
    return dense, sparse


ResourceApplyGradientDescent, ResourceSparseApplyGradientDescent = _define(
    "GradientDescent", _gradient_descent, 0)
ResourceApplyMomentum, ResourceSparseApplyMomentum = _define("Momentum", _momentum, 1)
ResourceApplyAdam, ResourceSparseApplyAdam = _define("Adam", _adam, 2)
ResourceApplyAdagrad, ResourceSparseApplyAdagrad = _define("Adagrad", _adagrad, 1)
ResourceApplyRMSProp, ResourceSparseApplyRMSProp = _define("RMSProp", _rmsprop, 2)
ResourceApplyCenteredRMSProp, ResourceSparseApplyCenteredRMSProp = _define(
    "CenteredRMSProp", _centered_rmsprop, 3)
ResourceApplyFtrl, ResourceSparseApplyFtrl = _define("Ftrl", _ftrl, 2)
ResourceApplyAdadelta, ResourceSparseApplyAdadelta = _define("Adadelta", _adadelta, 2)
ResourceApplyProximalGradientDescent, ResourceSparseApplyProximalGradientDescent = _define(
    "ProximalGradientDescent", _proximal_gradient_descent, 0)
ResourceApplyProximalAdagrad, ResourceSparseApplyProximalAdagrad = _define(
    "ProximalAdagrad", _proximal_adagrad, 1)

_OPS = {
    "GradientDescent": (ResourceApplyGradientDescent, ResourceSparseApplyGradientDescent),
    "Momentum": (ResourceApplyMomentum, ResourceSparseApplyMomentum),
    "Adam": (ResourceApplyAdam, ResourceSparseApplyAdam),
    "Adagrad": (ResourceApplyAdagrad, ResourceSparseApplyAdagrad),
    "RMSProp": (ResourceApplyRMSProp, ResourceSparseApplyRMSProp),
    "CenteredRMSProp": (ResourceApplyCenteredRMSProp, ResourceSparseApplyCenteredRMSProp),
    "Ftrl": (ResourceApplyFtrl, ResourceSparseApplyFtrl),
    "Adadelta": (ResourceApplyAdadelta, ResourceSparseApplyAdadelta),
    "ProximalGradientDescent": (ResourceApplyProximalGradientDescent,
                                ResourceSparseApplyProximalGradientDescent),
    "ProximalAdagrad": (ResourceApplyProximalAdagrad, ResourceSparseApplyProximalAdagrad),
}


def resource_apply(rule, var_handle, slot_handles, hyper, grad, *, indices=None,
                   use_nesterov=None, name=None):
    """One update of TensorFlow 1's rule `rule` on one variable.

    Args:
      rule: ``"GradientDescent"``, ``"Momentum"``, ``"Adam"``, ``"Adagrad"``,
        ``"RMSProp"``, ``"CenteredRMSProp"``, ``"Ftrl"``, ``"Adadelta"``,
        ``"ProximalGradientDescent"`` or ``"ProximalAdagrad"``.
      var_handle: the variable's resource handle.
      slot_handles: its slot handles, in the rule's order (Momentum: accum; Adam: m, v;
        Adagrad: accum; RMSProp: ms, mom; CenteredRMSProp: mg, ms, mom; Ftrl: accum,
        linear; Adadelta: accum, accum_update; ProximalAdagrad: accum).
      hyper: scalar `Tensor`s, in the order of the rule (Adam: beta1_power, beta2_power,
        lr, beta1, beta2, epsilon; Momentum: lr, momentum; RMSProp: lr, rho, momentum,
        epsilon; Ftrl: lr, l1, l2, l2_shrinkage, lr_power; Adadelta: lr, rho, epsilon;
        Proximal*: lr, l1, l2; others: lr).
      grad: the dense gradient (shaped as the variable), or with `indices` the rows'
        values ``[n, ...]``.
      indices: int `Tensor` [n]: apply to these rows only (repeated rows summed).
      use_nesterov: Momentum and Adam only.
    Returns:
      The `Operation` (no outputs).
    """
    dense, sparse = _OPS[rule]
    attrs = {} if use_nesterov is None else {"use_nesterov": bool(use_nesterov)}
    inputs = [var_handle, *slot_handles, *hyper, grad]
    if indices is not None:
        return sparse(*inputs, indices, name=name, **attrs)
    return dense(*inputs, name=name, **attrs)
