"""Training ops: one stateful op, `ResourceApplyOptax`, applies an optax update to a
list of variables whose optimizer state lives in slot variables.

TensorFlow has one op per optimizer (`ResourceApplyAdam`, ...); here one op covers
them all: its attrs name the optimizer kind and its hyperparameters (plain data, so
the graph serializes), and its lowering rebuilds the optax transformation from them,
reads the variables, slots and gradients, runs ``tx.update`` and
``optax.apply_updates``, and writes parameters, slots and the step counter back.

Each variable has its own optax state (``tx.init(param)``), flattened into slot
variables in ``jax.tree`` leaf order, so slots are per variable as in Keras and
TensorFlow. The learning rate enters the transformation as an extra argument at the
place Keras applies it (before the momentum trace for SGD and RMSprop), so a changing
learning rate behaves as in Keras.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.op_registry import NotDifferentiable, OpDef
from mylib.core.ops.apply_ops import _ftrl as _ftrl_rule

# Learning-rate schedules (Python callables of the step) cannot be attrs: they live
# here, keyed by the id string in the op's `schedule` attr. Graphs using them do not
# serialize to another process.
_SCHEDULES = {}
_schedule_ids = itertools.count()


def register_schedule(fn):
    """Keeps `fn` (a callable ``step -> learning rate``) and returns its attr id."""
    key = f"schedule_{next(_schedule_ids)}"
    _SCHEDULES[key] = fn
    return key


# ---------------------------------------------------------------- transformations
# Keras 3 rules optax has no transform for, written as optax transformations so the op
# runs them like the others. State leaves shared by all parameters (counts, Nadam's
# momentum product) are scalars outside the per-parameter trees.
class _RelativeStepState(NamedTuple):
    step: jax.Array  # int32 [], updates applied so far


def _scale_by_relative_step_rate():
    """``u -> -min(learning_rate, 1 / sqrt(t)) * u`` at step ``t = 1, 2, ...``: Keras 3
    Adafactor's step size ``rho_t``."""

    def init_fn(params):
        del params
        return _RelativeStepState(step=jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None, *, learning_rate, **extra):
        del params, extra
        step = optax.safe_increment(state.step)
        t = step.astype(jnp.float32)

        def scale(u):
            rate = jnp.minimum(jnp.asarray(learning_rate, u.dtype),
                               jax.lax.rsqrt(t.astype(u.dtype)))
            return (-rate * u).astype(u.dtype)

        return jax.tree.map(scale, updates), _RelativeStepState(step=step)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


class _NadamState(NamedTuple):
    count: jax.Array  # int32 []
    u_product: jax.Array  # [], the product of the momentum schedule u_1 ... u_t
    mu: optax.Updates
    nu: optax.Updates


def _float_type(params):
    leaves = jax.tree.leaves(params)
    return jnp.float64 if leaves and leaves[0].dtype == jnp.float64 else jnp.float32


def _scale_by_keras_nadam(beta_1, beta_2, epsilon):
    """Keras 3's Nadam (Dozat, 2016, with the momentum schedule
    ``u_t = beta_1 * (1 - 0.5 * 0.96**t)``); ``optax.scale_by_adam(nesterov=True)``
    is the same rule with ``u_t = beta_1``."""

    def init_fn(params):
        return _NadamState(count=jnp.zeros([], jnp.int32),
                           u_product=jnp.ones([], _float_type(params)),
                           mu=optax.tree.zeros_like(params), nu=optax.tree.zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        count = optax.safe_increment(state.count)
        t = count.astype(state.u_product.dtype)
        u_t = beta_1 * (1.0 - 0.5 * 0.96 ** t)
        u_next = beta_1 * (1.0 - 0.5 * 0.96 ** (t + 1))
        u_product = state.u_product * u_t
        u_product_next = u_product * u_next
        mu = optax.tree.update_moment(updates, state.mu, beta_1, 1)
        nu = optax.tree.update_moment_per_elem_norm(updates, state.nu, beta_2, 2)

        def direction(g, m, v):
            dt = g.dtype
            m_hat = (u_next.astype(dt) * m / (1 - u_product_next).astype(dt)
                     + (1 - u_t).astype(dt) * g / (1 - u_product).astype(dt))
            v_hat = v / (1 - beta_2 ** t).astype(dt)
            return (m_hat / (jnp.sqrt(v_hat) + epsilon)).astype(dt)

        out = jax.tree.map(direction, updates, mu, nu)
        return out, _NadamState(count=count, u_product=u_product, mu=mu, nu=nu)

    return optax.GradientTransformation(init_fn, update_fn)


def _build_nadam(beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    return optax.chain(_scale_by_keras_nadam(beta_1, beta_2, epsilon),
                       _scale_by_learning_rate())


class _FtrlState(NamedTuple):
    accumulator: optax.Updates  # sum of squared gradients (from the initial value)
    linear: optax.Updates  # the FTRL linear term z


def _build_ftrl(learning_rate_power=-0.5, initial_accumulator_value=0.1,
                l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                l2_shrinkage_regularization_strength=0.0, beta=0.0):
    """FTRL-Proximal (McMahan et al., 2013, Algorithm 1) as Keras 3 writes it: the new
    parameter is computed in closed form, so the update is ``new - param``."""
    l1, l2_shrink = l1_regularization_strength, l2_shrinkage_regularization_strength

    def init_fn(params):
        return _FtrlState(
            accumulator=jax.tree.map(lambda p: jnp.full_like(p, initial_accumulator_value),
                                     params),
            linear=optax.tree.zeros_like(params))

    def update_fn(updates, state, params=None, *, learning_rate, **extra):
        del extra
        if params is None:
            raise ValueError("Ftrl needs the parameters in `update` (its rule reads them).")

        def one(g, p, acc, lin):
            lr = jnp.asarray(learning_rate, p.dtype)
            # TensorFlow's ApplyFtrlV2 rule (shared with the TF1 `FtrlOptimizer`), with
            # Keras's `beta` folded into the L2 strength.
            new_p, (new_acc, lin) = _ftrl_rule(
                p, [acc, lin], lr, l1, l2_regularization_strength + beta / (2.0 * lr),
                l2_shrink, learning_rate_power, g)
            return (new_p - p).astype(p.dtype), new_acc, lin

        treedef = jax.tree.structure(updates)
        outs = [one(*xs) for xs in zip(*(treedef.flatten_up_to(t) for t in
                                           (updates, params, state.accumulator,
                                            state.linear)))]
        new_updates, accs, lins = ([o[i] for o in outs] for i in range(3))
        return (treedef.unflatten(new_updates),
                _FtrlState(accumulator=treedef.unflatten(accs), linear=treedef.unflatten(lins)))

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def _scale_by_learning_rate():
    """``u -> -learning_rate * u``, the rate given at update time (an extra arg)."""

    def init_fn(params):
        del params
        return optax.EmptyState()

    def update_fn(updates, state, params=None, *, learning_rate, **extra):
        del params, extra
        return jax.tree.map(lambda u: (-learning_rate * u).astype(u.dtype), updates), state

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def _build_sgd(momentum=0.0, nesterov=False):
    parts = [_scale_by_learning_rate()]
    if momentum:
        # Keras: m = momentum * m - lr * g; the rate is inside the velocity.
        parts.append(optax.trace(decay=momentum, nesterov=nesterov))
    return optax.chain(*parts)


def _keras_adam_like(direction, state_cls, n_moments, moment_names):
    """An optax transformation for an Adam-family rule of Keras 3 (and TensorFlow 1)
    that optax's ``scale_by_adam``/``scale_by_adamax``/``scale_by_amsgrad`` do not
    compose to (they add epsilon after the bias correction, or inside the max).

    `direction(g, moments, t, lr)` -> ``(update, new_moments)`` for one parameter, `t`
    the 1-based step as a float of the parameter's dtype; the state is `state_cls`
    (optax's own state type, so the slot names are optax's) with a shared int32
    ``count`` and `n_moments` per-parameter trees named `moment_names`.
    """

    def init_fn(params):
        zeros = [optax.tree.zeros_like(params) for _ in range(n_moments)]
        return state_cls(count=jnp.zeros([], jnp.int32), **dict(zip(moment_names, zeros)))

    def update_fn(updates, state, params=None, *, learning_rate, **extra):
        del params, extra
        count = optax.safe_increment(state.count)
        treedef = jax.tree.structure(updates)
        moments = [treedef.flatten_up_to(getattr(state, n)) for n in moment_names]
        outs, new_moments = [], [[] for _ in moment_names]
        for g, *ms in zip(treedef.flatten_up_to(updates), *moments):
            dt = g.dtype
            u, new = direction(g, ms, count.astype(dt), jnp.asarray(learning_rate).astype(dt))
            outs.append(u.astype(dt))
            for acc, x in zip(new_moments, new):
                acc.append(x.astype(dt))
        return (treedef.unflatten(outs),
                state_cls(count=count, **{n: treedef.unflatten(xs)
                                          for n, xs in zip(moment_names, new_moments)}))

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def _build_adam(beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False):
    """Keras 3's Adam, which is also TensorFlow 1's ``ApplyAdam`` ("epsilon hat" in
    Kingma & Ba's notation): ``alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)``;
    ``m += (g - m)(1 - beta_1)``; ``v += (g^2 - v)(1 - beta_2)``; AMSGrad: ``v_max =
    max(v_max, v)`` of the raw moment, used for ``v``; ``update = -m alpha / (sqrt(v) +
    epsilon)``. optax's ``scale_by_adam`` adds epsilon to the bias-corrected
    ``sqrt(v_hat)`` instead, which differs by up to 100% with small gradients."""

    def direction(g, ms, t, lr):
        m, v = ms[0], ms[1]
        alpha = lr * jnp.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
        m = m + (g - m) * (1 - beta_1)
        v = v + (jnp.square(g) - v) * (1 - beta_2)
        if amsgrad:
            v_max = jnp.maximum(ms[2], v)
            return -(m * alpha) / (jnp.sqrt(v_max) + epsilon), (m, v, v_max)
        return -(m * alpha) / (jnp.sqrt(v) + epsilon), (m, v)

    if amsgrad:
        return _keras_adam_like(direction, optax.ScaleByAmsgradState, 3,
                                ("mu", "nu", "nu_max"))
    return _keras_adam_like(direction, optax.ScaleByAdamState, 2, ("mu", "nu"))


def _build_adagrad(initial_accumulator_value=0.1, epsilon=1e-7):
    return optax.chain(
        optax.scale_by_rss(initial_accumulator_value=initial_accumulator_value, eps=epsilon),
        _scale_by_learning_rate())


def _build_rmsprop(rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
    scale = optax.scale_by_stddev if centered else optax.scale_by_rms
    parts = [scale(decay=rho, eps=epsilon, initial_scale=0.0, eps_in_sqrt=True),
             _scale_by_learning_rate()]
    if momentum:
        parts.append(optax.trace(decay=momentum))
    return optax.chain(*parts)


def _build_adamax(beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    """Keras 3's Adamax: ``m += (g - m)(1 - beta_1)``; ``u = max(beta_2 u, |g|)``;
    ``update = -lr m / ((1 - beta_1^t)(u + epsilon))``. optax's ``scale_by_adamax``
    keeps epsilon inside the max (``u = max(beta_2 u, |g| + epsilon)``), so its
    epsilon accumulates and differs where gradients are near epsilon."""

    def direction(g, ms, t, lr):
        m, u = ms
        m = m + (g - m) * (1 - beta_1)
        u = jnp.maximum(beta_2 * u, jnp.abs(g))
        return -(lr * m) / ((1 - beta_1 ** t) * (u + epsilon)), (m, u)

    return _keras_adam_like(direction, optax.ScaleByAdamState, 2, ("mu", "nu"))


def _build_adadelta(rho=0.95, epsilon=1e-7):
    return optax.chain(optax.scale_by_adadelta(rho=rho, eps=epsilon),
                       _scale_by_learning_rate())


def _build_lion(beta_1=0.9, beta_2=0.99):
    return optax.chain(optax.scale_by_lion(b1=beta_1, b2=beta_2), _scale_by_learning_rate())


def _build_lamb(beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    # optax.lamb without its weight decay: the Optimizer's decoupled decay is applied
    # before the update, outside the trust ratio, as Keras 3's Lamb.
    return optax.chain(optax.scale_by_adam(b1=beta_1, b2=beta_2, eps=epsilon),
                       optax.scale_by_trust_ratio(), _scale_by_learning_rate())


def _build_adafactor(beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3, clip_threshold=1.0,
                     relative_step=True):
    del relative_step  # Keras 3 takes min(lr, 1/sqrt(t)) whatever its value
    # optax.adafactor's pieces with Keras's settings: every array of rank >= 2 factored
    # (optax's default only factors axes of 128 or more), the step size
    # min(lr, 1/sqrt(t)) of Keras instead of optax's plain rate.
    return optax.chain(
        optax.scale_by_factored_rms(factored=True, decay_rate=-beta_2_decay,
                                    min_dim_size_to_factor=0, epsilon=epsilon_1),
        optax.clip_by_block_rms(clip_threshold),
        optax.scale_by_param_block_rms(min_scale=epsilon_2),
        _scale_by_relative_step_rate())


_BUILDERS = {"sgd": _build_sgd, "adam": _build_adam, "adagrad": _build_adagrad,
             "rmsprop": _build_rmsprop, "nadam": _build_nadam, "adamax": _build_adamax,
             "adadelta": _build_adadelta, "ftrl": _build_ftrl, "lion": _build_lion,
             "lamb": _build_lamb, "adafactor": _build_adafactor}


@functools.lru_cache(maxsize=256)
def build_transform(kind, hparams):
    """The optax transformation for optimizer `kind` with `hparams` (a tuple of
    ``(name, value)`` pairs). Cached: the same attrs give the same object."""
    try:
        builder = _BUILDERS[kind]
    except KeyError:
        raise errors.InvalidArgumentError(
            f"ResourceApplyOptax: unknown optimizer kind {kind!r}; known: "
            f"{sorted(_BUILDERS)}") from None
    return builder(**dict(hparams))


def slot_structure(kind, hparams, shape, dtype):
    """``[(path_name, ShapeDtypeStruct), ...]`` of the optax state for one variable."""
    tx = build_transform(kind, hparams)
    spec = jax.ShapeDtypeStruct(tuple(shape), _dtypes.as_dtype(dtype).np)
    state = jax.eval_shape(tx.init, spec)
    leaves = jax.tree_util.tree_flatten_with_path(state)[0]
    out = []
    for path, leaf in leaves:
        names = [getattr(k, "name", None) for k in path]
        names = [n for n in names if n]
        out.append(("_".join(names) or "state", leaf))
    return out


def shared_slot_mask(kind, hparams, dtype):
    """For each state leaf of `slot_structure`, whether optax shares it between all the
    parameters it updates together (Adam's step count) rather than keeping one per
    parameter."""
    tx = build_transform(kind, hparams)
    d = _dtypes.as_dtype(dtype).np
    layout = _group_layout(tx, (((2,), d), ((3,), d)))
    shared = set()
    for targets in layout.targets:
        if len(targets) > 1:
            shared.update(j for i, j in targets if i == 0)
    n = len(slot_structure(kind, hparams, (2,), dtype))
    return [j in shared for j in range(n)]


def slot_initial_values(kind, hparams, shape, dtype):
    """The initial value of each state leaf of one variable, as ``(fill_value, shape,
    dtype)`` when the leaf is uniform, else the full numpy array."""
    import numpy as np

    tx = build_transform(kind, hparams)
    np_dtype = _dtypes.as_dtype(dtype).np
    full = slot_structure(kind, hparams, shape, dtype)
    # The optax inits used here fill each leaf with one value (zeros, the initial
    # accumulator, a zero count): evaluate them on a one-element parameter instead of
    # materializing the full-size state on the host.
    tiny = jax.device_get(jax.tree.leaves(tx.init(jnp.zeros((1,) * len(shape), np_dtype))))
    out = []
    for (name, spec), small in zip(full, tiny, strict=True):
        small = np.asarray(small)
        if small.size and np.all(small == small.reshape(-1)[0]):
            out.append((small.reshape(-1)[0], tuple(spec.shape), spec.dtype))
        else:  # pragma: no cover - no such leaf among the builders above
            leaf = jax.tree.leaves(tx.init(jnp.zeros(tuple(shape), np_dtype)))[len(out)]
            out.append(np.asarray(leaf))
    return out


# ---------------------------------------------------------------- the op
def _clip_by_norm(g, clip_norm):
    # Keras's clip_by_norm: g * c / max(||g||, c), safe at g = 0.
    l2sum = jnp.sum(jnp.square(g))
    pred = l2sum > 0
    l2norm = jnp.where(pred, jnp.sqrt(jnp.where(pred, l2sum, 1.0)), l2sum)
    return (g * clip_norm / jnp.maximum(l2norm, clip_norm)).astype(g.dtype)


class _Layout:
    """How the state of ``tx.init(list_of_params)`` maps onto per-variable slots:
    `sources[l]` is the (variable, slot) a group leaf is read from and `targets[l]` the
    slots it is written to (every variable's, for a shared leaf)."""

    def __init__(self, treedef, sources, targets):
        self.treedef, self.sources, self.targets = treedef, sources, targets


@functools.lru_cache(maxsize=256)
def _group_layout(tx, specs):
    structs = [jax.ShapeDtypeStruct(s, d) for s, d in specs]
    group = jax.eval_shape(tx.init, structs)
    group_paths, treedef = jax.tree_util.tree_flatten_with_path(group)
    per_var = []
    for st in structs:
        paths, _ = jax.tree_util.tree_flatten_with_path(jax.eval_shape(tx.init, st))
        per_var.append({tuple(pth): j for j, (pth, _) in enumerate(paths)})
    sources, targets = [], []
    for pth, _ in group_paths:
        pth = tuple(pth)
        last = pth[-1] if pth else None
        idx = getattr(last, "idx", None)
        if idx is not None and idx < len(structs) and pth[:-1] in per_var[idx]:
            j = per_var[idx][pth[:-1]]  # a leaf of parameter `idx` alone
            sources.append((idx, j))
            targets.append(((idx, j),))
        else:
            js = [pv.get(pth) for pv in per_var]  # shared by all parameters
            if any(j is None for j in js):
                raise errors.InvalidArgumentError(
                    f"ResourceApplyOptax: cannot map optimizer state leaf {pth}")
            sources.append((0, js[0]))
            targets.append(tuple((i, j) for i, j in enumerate(js)))
    return _Layout(treedef, sources, targets)


def _is_wide(v):
    """Whether `v` has a 64-bit (or complex128) dtype."""
    dt = np.dtype(v.dtype) if hasattr(v, "dtype") else np.asarray(v).dtype
    return dt.itemsize == 8 and dt.kind in "iuf" or dt.itemsize == 16


def _apply_optax_lower(ctx, op, *inputs):
    a = op.attrs
    n = a["n_vars"]
    kind, hparams = a["optimizer"], a["hparams"]
    step = inputs[0]
    pos = 1
    if a.get("schedule"):
        try:
            schedule = _SCHEDULES[a["schedule"]]
        except KeyError:
            raise errors.NotFoundError(
                f"learning-rate schedule {a['schedule']!r} is not registered in this "
                "process (graphs with schedule objects do not serialize)") from None
        lr = jnp.asarray(schedule(step))
    else:
        lr = inputs[pos]
        pos += 1
    var_refs = inputs[pos:pos + n]
    slot_refs = inputs[pos + n:len(inputs) - n]
    grads = list(inputs[len(inputs) - n:])
    tx = build_transform(kind, hparams)
    params = [ctx.read_var(op, r) for r in var_refs]
    grads = [jnp.asarray(g).astype(p.dtype) for g, p in zip(grads, params)]

    # optax's arithmetic on Python scalars (Adam's ``1 - beta ** count``) takes the
    # default types of the scope it is traced in: where every value is 32-bit it is
    # traced outside the 64-bit scope, as a hand-written optax step, so no float64
    # work enters the step.
    narrow = not any(_is_wide(v) for v in [lr, *params, *grads] +
                     [ctx.read_var(op, r) for r in slot_refs])
    with jax.enable_x64(False) if narrow else contextlib.nullcontext():
        if a.get("clipnorm") is not None:
            grads = [_clip_by_norm(g, a["clipnorm"]) for g in grads]
        if a.get("global_clipnorm") is not None:
            grads, _ = optax.clip_by_global_norm(a["global_clipnorm"]).update(
                grads, optax.EmptyState())
        if a.get("clipvalue") is not None:
            c = a["clipvalue"]
            grads = [jnp.clip(g, -c, c) for g in grads]

        # One optax update over the whole group, as a hand-written optax loop does: state
        # leaves that belong to one parameter (Adam's mu, nu) come from that variable's
        # slots; leaves shared by all parameters (the step count) are read from the first
        # variable's slot and written back to every variable's. Updating leaf by leaf
        # would repeat the shared scalar work per variable, which doubles the step time of
        # small models on CPU.
        per_var_defs, per_var_refs = [], []
        k = 0
        for ref, p in zip(var_refs, params):
            treedef = jax.tree.structure(
                jax.eval_shape(tx.init, jax.ShapeDtypeStruct(p.shape, p.dtype)))
            m = treedef.num_leaves
            refs = slot_refs[k:k + m]
            if len(refs) != m:
                raise errors.InvalidArgumentError(
                    f"ResourceApplyOptax: variable '{ref.key}' needs {m} slots, "
                    f"got {len(refs)}", op=op)
            k += m
            per_var_defs.append(treedef)
            per_var_refs.append(refs)
        if k != len(slot_refs):
            raise errors.InvalidArgumentError(
                f"ResourceApplyOptax: {len(slot_refs)} slots given, {k} used", op=op)
        layout = _group_layout(tx, tuple((p.shape, p.dtype) for p in params))
        leaves = [ctx.read_var(op, per_var_refs[i][j]) for i, j in layout.sources]
        state = jax.tree.unflatten(layout.treedef, leaves)
        wd = a.get("weight_decay")
        if wd:
            # Decoupled weight decay, p -= lr * wd * p, before the update as Keras 3
            # applies it: rules that read the parameter (Lamb's trust ratio, Adafactor's
            # scale, Ftrl) see the decayed one; for the others it equals optax.adamw.
            params = [(p - jnp.asarray(lr).astype(p.dtype) * wd * p).astype(p.dtype)
                      for p in params]
        updates, new_state = tx.update(grads, state, params, learning_rate=lr)
        new_params = optax.apply_updates(params, updates)
    for ref, p, new_p in zip(var_refs, params, new_params):
        ctx.write_var(op, ref, new_p.astype(p.dtype))
    for (targets), v in zip(layout.targets, jax.tree.leaves(new_state)):
        for i, j in targets:
            ctx.write_var(op, per_var_refs[i][j], v)
    return ()


def _schedule_effect(attrs):
    if attrs.get("schedule"):
        return ("calls the learning-rate schedule registered in this process as "
                f"{attrs['schedule']!r}")
    return None


ResourceApplyOptax = OpDef("ResourceApplyOptax", lower=_apply_optax_lower, stateful=True,
                           shape_fn=lambda *specs, **attrs: [],
                           host_effect=_schedule_effect)
NotDifferentiable("ResourceApplyOptax")


def resource_apply_optax(step, learning_rate, var_handles, slot_handles, grads, *,
                         optimizer, hparams, schedule=None, clipnorm=None,
                         global_clipnorm=None, clipvalue=None, weight_decay=None,
                         name=None):
    """One optimizer step on `var_handles`.

    Args:
      step: int64 scalar `Tensor`, the optimizer's step count before this update (for
        schedules and Adam's bias correction lives in the slots); the caller increments
        its counter after every group of variables is updated.
      learning_rate: float `Tensor` scalar (ignored, may be None, with `schedule`).
      var_handles: handles of the n variables to update.
      slot_handles: handles of their optax state leaves, variable by variable, each in
        ``jax.tree.leaves(tx.init(param))`` order.
      grads: n dense gradients, shaped as the variables.
      optimizer: kind, one of ``"sgd"``, ``"adam"``, ``"adagrad"``, ``"rmsprop"``,
        ``"nadam"``, ``"adamax"``, ``"adadelta"``, ``"ftrl"``, ``"lion"``, ``"lamb"``,
        ``"adafactor"``.
      hparams: tuple of ``(name, value)`` pairs for the kind's transform builder.
      schedule: id from `register_schedule`; the rate is then ``schedule(iterations)``.
      clipnorm / global_clipnorm / clipvalue: gradient clipping, as Keras.
      weight_decay: decoupled decay ``p -= lr * weight_decay * p``.
    Returns:
      The `Operation`.
    """
    if len(grads) != len(var_handles):
        raise ValueError(f"{len(grads)} gradients for {len(var_handles)} variables")
    inputs = [step]
    if schedule is None:
        inputs.append(learning_rate)
    inputs += list(var_handles) + list(slot_handles) + list(grads)
    return ResourceApplyOptax(
        *inputs, optimizer=optimizer, hparams=tuple(hparams), n_vars=len(var_handles),
        schedule=schedule, clipnorm=clipnorm, global_clipnorm=global_clipnorm,
        clipvalue=clipvalue, weight_decay=weight_decay, name=name)
