"""TensorFlow 1's ``tf.train.Optimizer`` and its subclasses, on mylib's graph.

Each optimizer adds, per variable, one TensorFlow-style training op
(``ResourceApplyAdam``, ``ResourceSparseApplyMomentum``, ...; see
`mylib.core.ops.apply_ops`) whose rule is TensorFlow 1's own, so programs written for
``tf.train.AdamOptimizer`` and friends get TensorFlow 1's numbers step for step.
These are not optax transformations (as `mylib.optimizers` are) because TensorFlow 1's
rules differ from optax's where it matters: Adam adds epsilon to the uncorrected
``sqrt(v)`` (``lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)``), RMSProp starts its
mean square at 1 and keeps the rate inside the momentum, and sparse updates
(`IndexedSlices` gradients from gathers) touch only the gathered rows for Momentum,
Adagrad, RMSProp and Ftrl (TensorFlow 1's ``_apply_sparse``), which no optax
transformation does.

Slot variables are non-trainable `Variable`s in ``GLOBAL_VARIABLES`` named as in
TensorFlow 1 (``<var>/<Optimizer>``, then ``<var>/<Optimizer>_1``, ...), colocated with
their variable, so `global_variables_initializer` initializes them and a `Saver`
saves them under TensorFlow 1's names.
"""

from __future__ import annotations

import numbers

from mylib.core.gradients import IndexedSlices, gradients, indexed_slices_to_dense
from mylib.core.graph import GraphKeys, Tensor, get_default_graph
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import apply_ops, array_ops, constant_ops, math_ops, state_ops
from mylib.core.variables import Variable
from mylib.runtime.policy import get_policy

__all__ = ["Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer",
           "AdagradOptimizer", "RMSPropOptimizer", "FtrlOptimizer", "AdadeltaOptimizer",
           "ProximalGradientDescentOptimizer", "ProximalAdagradOptimizer"]


def _var_op_name(var):
    return var.op.name


def _is_variable(v):
    # A `Variable`, or an object standing for one (a wrapper with its handle and key).
    return isinstance(v, Variable) or (hasattr(v, "handle") and hasattr(v, "_key"))


class Optimizer:
    """Base class of TensorFlow 1's optimizers (``tf.train.Optimizer``).

    Subclasses say which rule of `mylib.core.ops.apply_ops` they use, their slots and
    their hyperparameters. Use `minimize`, or `compute_gradients` then (after, e.g.,
    `clip_by_global_norm`) `apply_gradients`.

    Args:
      use_locking: accepted for TensorFlow compatibility; every update op reads and
        writes its variables atomically within a step (the Session never loses a
        concurrent update), so it has no effect.
      name: the name of the optimizer's ops and slot variables.
    """

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    # (slot name, initial value: "zeros", "ones" or a number), in TensorFlow 1's order.
    _slot_specs = ()
    _rule = None
    # "rows": IndexedSlices update only their rows (TF1's sparse kernels);
    # "dense": they are made dense first (TF1's Adam updates every row's moments).
    _sparse_mode = "rows"

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots = {}  # slot name -> {variable key: slot Variable}
        self._non_slot = {}  # (name, graph id) -> Variable

    def get_name(self):
        return self._name

    # ------------------------------------------------------------ gradients
    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """Gradients of `loss` for the variables in `var_list`.

        Args:
          loss: a `Tensor` (or a callable returning one) to minimize.
          var_list: variables; default the loss graph's ``TRAINABLE_VARIABLES``.
          gate_gradients, aggregation_method, colocate_gradients_with_ops: accepted for
            TensorFlow compatibility (see `mylib.gradients`).
          grad_loss: optional `Tensor`, the gradient flowing into `loss`.
        Returns:
          A list of ``(gradient, variable)``; the gradient is None where `loss` does not
          depend on the variable, an `IndexedSlices` for a gathered variable.
        Raises:
          ValueError: no variables to optimize; TypeError: `loss` is not a tensor.
        """
        if callable(loss) and not isinstance(loss, Tensor):
            loss = loss()
        loss = convert_to_tensor(loss)
        if var_list is None:
            var_list = loss.graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        else:
            var_list = list(var_list)
        var_list = [p for v in var_list for p in (
            v.variables if isinstance(getattr(v, "variables", None), list) else [v])]
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            if not _is_variable(v):
                raise TypeError(f"{self._name}.compute_gradients: var_list holds a "
                                f"non-variable {v!r}; pass `Variable`s")
        grad_ys = None if grad_loss is None else [grad_loss]
        grads = gradients(loss, var_list, grad_ys=grad_ys,
                          colocate_gradients_with_ops=colocate_gradients_with_ops)
        return list(zip(grads, var_list))

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """`compute_gradients` then `apply_gradients`; returns the update `Operation`.

        Raises:
          ValueError: no variable has a gradient (names them all).
        """
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        if not any(g is not None for g, _ in grads_and_vars):
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do "
                "not support gradients, between variables "
                f"{[v.name for _, v in grads_and_vars]} and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    # ------------------------------------------------------------ applying
    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """An `Operation` that applies the gradients, then increments `global_step`.

        Args:
          grads_and_vars: ``(gradient, variable)`` pairs (from `compute_gradients`,
            possibly transformed); pairs with a None gradient are skipped.
          global_step: optional int variable, incremented by one after the update.
          name: name of the returned op (default the optimizer's name).
        Returns:
          The `Operation` to run.
        Raises:
          ValueError: empty `grads_and_vars` or every gradient None; TypeError: a
          gradient that is not a `Tensor`/`IndexedSlices` or a non-variable.
        """
        pairs = list(grads_and_vars)
        if not pairs:
            raise ValueError("No variables provided.")
        for g, v in pairs:
            if not _is_variable(v):
                raise TypeError(f"{self._name}.apply_gradients: {v!r} is not a Variable")
            if g is not None and not isinstance(g, (Tensor, IndexedSlices)):
                raise TypeError(f"{self._name}.apply_gradients: the gradient of "
                                f"'{v.name}' must be a Tensor or IndexedSlices; got {g!r}")
        kept = [(g, v) for g, v in pairs if g is not None]
        if not kept:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[str(v.name) for _, v in pairs]}.")
        graph = kept[0][1].graph
        policy = get_policy(graph)
        aggregate = policy.aggregate_gradient if policy is not None else None
        with graph.as_default():
            with graph.name_scope(None):
                self._create_slots([v for _, v in kept])
                self._create_non_slots(kept)
            with graph.name_scope(name or self._name) as scope:
                self._prepare()
                update_ops = []
                for g, v in kept:
                    if aggregate is not None:
                        g = aggregate(g, v)
                    with graph.name_scope("update_" + _var_op_name(v)), \
                            graph.colocate_with(v.handle.op):
                        update_ops.append(self._apply(g, v))
                finish = self._finish(update_ops,
                                      "update" if global_step is not None else scope)
            if global_step is None:
                return finish
            with graph.control_dependencies([finish]), graph.colocate_with(
                    global_step.handle.op):
                one = constant_ops.constant(1, dtype=global_step.dtype)
                inc = state_ops.assign_add_variable_op(global_step.handle, one)
            return array_ops.group(finish, inc, name=scope)

    def _apply(self, grad, var):
        if self._rule is None:
            return self._apply_subclass(grad, var)
        slots = [self._slots[n][var._key].handle for n, _ in self._slot_specs]
        hyper = self._hyper(var)
        nesterov = self._nesterov()
        if isinstance(grad, IndexedSlices):
            if self._sparse_mode == "rows":
                values = math_ops.cast(convert_to_tensor(grad.values), var.dtype)
                return apply_ops.resource_apply(self._rule_for(var), var.handle, slots, hyper,
                                                values, indices=grad.indices,
                                                use_nesterov=nesterov)
            grad = indexed_slices_to_dense(grad)
        grad = math_ops.cast(convert_to_tensor(grad), var.dtype)
        return apply_ops.resource_apply(self._rule_for(var), var.handle, slots, hyper, grad,
                                        use_nesterov=nesterov)

    def _rule_for(self, var):
        return self._rule

    # ------------------------------------------------------------ subclass protocol
    # A user optimizer written for TensorFlow 1 subclasses `Optimizer` and implements
    # `_create_slots` (with `_zeros_slot` / `_get_or_make_slot`), `_prepare`, and
    # `_apply_dense(grad, var)` or `_resource_apply_dense(grad, var)` (and optionally
    # `_apply_sparse(grad, var)` / `_resource_apply_sparse(values, var, indices)`, else a
    # sparse gradient is made dense), each returning the update op, and `_finish`.
    def _apply_subclass(self, grad, var):
        cls = type(self)
        if isinstance(grad, IndexedSlices):
            if cls._resource_apply_sparse is not Optimizer._resource_apply_sparse:
                return self._resource_apply_sparse(convert_to_tensor(grad.values), var,
                                                   grad.indices)
            if cls._apply_sparse is not Optimizer._apply_sparse:
                return self._apply_sparse(grad, var)
            grad = indexed_slices_to_dense(grad)
        grad = convert_to_tensor(grad)
        if cls._resource_apply_dense is not Optimizer._resource_apply_dense:
            return self._resource_apply_dense(grad, var)
        return self._apply_dense(grad, var)

    def _apply_dense(self, grad, var):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `_apply_dense(grad, var)` or "
            "`_resource_apply_dense(grad, var)` (a TensorFlow 1 optimizer subclass), or "
            "set `_rule` to one of mylib.core.ops.apply_ops's rules")

    def _resource_apply_dense(self, grad, var):
        return self._apply_dense(grad, var)

    def _apply_sparse(self, grad, var):
        return self._apply_dense(convert_to_tensor(indexed_slices_to_dense(grad)), var)

    def _resource_apply_sparse(self, values, var, indices):
        return self._apply_sparse(IndexedSlices(values, indices), var)

    def _call_if_callable(self, param):
        return param() if callable(param) and not isinstance(param, (Tensor, Variable)) \
            else param

    def _slot_dict(self, slot_name):
        return self._slots.setdefault(slot_name, {})

    def _get_or_make_slot(self, var, val, slot_name, op_name):
        """The slot `slot_name` of `var`, created with initial value `val` (a tensor or
        array shaped as `var`) if missing, named ``<var>/<op_name>``."""
        table = self._slot_dict(slot_name)
        if var._key not in table:
            g = var.graph
            with g.as_default(), g.name_scope(None), g.control_dependencies(None), \
                    g.colocate_with(var.handle.op):
                table[var._key] = Variable(val, trainable=False,
                                           name=f"{_var_op_name(var)}/{op_name}",
                                           collections=[GraphKeys.GLOBAL_VARIABLES])
        return table[var._key]

    def _get_or_make_slot_with_initializer(self, var, initializer, shape, dtype, slot_name,
                                           op_name):
        """As `_get_or_make_slot`, the value from ``initializer(shape, dtype)``."""
        shape = shape.as_list() if hasattr(shape, "as_list") else list(shape)
        return self._get_or_make_slot(var, lambda: initializer(shape, dtype=dtype),
                                      slot_name, op_name)

    def _zeros_slot(self, var, slot_name, op_name):
        """The slot `slot_name` of `var`, created as zeros if missing."""
        shape = var.shape.as_list()
        return self._get_or_make_slot(
            var, lambda: constant_ops.zeros(shape, dtype=var.dtype), slot_name, op_name)

    def _create_non_slot_variable(self, initial_value, name, colocate_with):
        """A variable of the optimizer itself (e.g. a power of beta), one per graph."""
        g = colocate_with.graph
        key = (name, id(g))
        if key not in self._non_slot:
            with g.as_default(), g.name_scope(None), g.control_dependencies(None), \
                    g.colocate_with(colocate_with.handle.op):
                self._non_slot[key] = Variable(initial_value, trainable=False, name=name,
                                               collections=[GraphKeys.GLOBAL_VARIABLES])
        return self._non_slot[key]

    def _get_non_slot_variable(self, name, graph=None):
        return self._non_slot.get((name, id(graph or get_default_graph())))

    def _nesterov(self):
        return None

    def _prepare(self):
        """Builds the hyperparameter tensors of this `apply_gradients` call."""

    def _hyper(self, var):
        raise NotImplementedError(f"{type(self).__name__} must implement `_hyper` "
                                  "(abstract in the base class)")

    def _finish(self, update_ops, name_scope):
        return array_ops.group(*update_ops, name=name_scope)

    def _scalar(self, value, var):
        """`value` (number, `Tensor` or callable) as a scalar of `var`'s dtype."""
        if callable(value) and not isinstance(value, (Tensor, Variable)):
            value = value()
        if isinstance(value, numbers.Real):
            return constant_ops.constant(value, dtype=var.dtype)
        t = value.value() if isinstance(value, Variable) else convert_to_tensor(value)
        return t if t.dtype == var.dtype else math_ops.cast(t, var.dtype)

    # ------------------------------------------------------------ slots
    def _create_slots(self, var_list):
        """Creates the slots of `_slot_specs` (subclasses written for TensorFlow 1
        override this with `_zeros_slot` / `_get_or_make_slot` calls)."""
        for v in var_list:
            if not v.shape.is_fully_defined():
                raise ValueError(f"{self._name}: variable '{v.name}' has a partially known "
                                 f"shape {v.shape}; slots need a fully defined shape")
            for k, (slot, init) in enumerate(self._slot_specs):
                table = self._slots.setdefault(slot, {})
                if v._key in table:
                    continue
                suffix = self._name if k == 0 else f"{self._name}_{k}"
                table[v._key] = self._make_slot(v, init, f"{_var_op_name(v)}/{suffix}")

    def _make_slot(self, var, init, name):
        g = var.graph
        shape = var.shape.as_list()

        def initial():
            if init == "zeros":
                return constant_ops.zeros(shape, dtype=var.dtype)
            if init == "ones":
                return constant_ops.ones(shape, dtype=var.dtype)
            return constant_ops.fill(shape, constant_ops.constant(init, dtype=var.dtype))

        with g.control_dependencies(None), g.colocate_with(var.handle.op):
            return Variable(initial, trainable=False, name=name, dtype=var.dtype,
                            collections=[GraphKeys.GLOBAL_VARIABLES])

    def _create_non_slots(self, kept):
        """Creates the optimizer's non-slot variables (Adam's beta powers)."""

    def _non_slot_variable(self, name, initial_value, colocate_with):
        g = colocate_with.graph
        key = (name, id(g))
        v = self._non_slot.get(key)
        if v is None:
            with g.control_dependencies(None), g.colocate_with(colocate_with.handle.op):
                v = Variable(initial_value, trainable=False, name=name,
                             dtype=colocate_with.dtype, collections=[GraphKeys.GLOBAL_VARIABLES])
            self._non_slot[key] = v
        return v

    def get_slot_names(self):
        """The names of the slots this optimizer creates (sorted)."""
        return sorted(self._slots)

    def get_slot(self, var, name):
        """The slot variable `name` of `var` (e.g. ``"m"``), or None."""
        return self._slots.get(name, {}).get(getattr(var, "_key", None))

    def variables(self):
        """The optimizer's variables in the default graph (non-slot and slot), by name."""
        g = get_default_graph()
        out = [v for v in self._non_slot.values() if v.graph is g]
        for table in self._slots.values():
            out.extend(v for v in table.values() if v.graph is g)
        return sorted(out, key=lambda v: v.name)

    def __repr__(self):
        return f"<ml.train.{type(self).__name__} name={self._name!r}>"


class GradientDescentOptimizer(Optimizer):
    """``var -= learning_rate * grad`` (TensorFlow 1's ``GradientDescentOptimizer``).

    Args:
      learning_rate: float, scalar `Tensor` (e.g. a schedule such as
        `exponential_decay`) or callable returning one.
      use_locking, name: see `Optimizer`.

    An `IndexedSlices` gradient updates only its rows (repeated rows summed).
    """

    _rule = "GradientDescent"

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _hyper(self, var):
        return [self._scalar(self._learning_rate, var)]


class MomentumOptimizer(Optimizer):
    """Momentum (TensorFlow 1's ``MomentumOptimizer``): ``accum = momentum * accum +
    grad``; ``var -= lr * accum``; Nesterov: ``var -= lr * grad + lr * momentum *
    accum``. Slot ``"momentum"`` (zeros).

    Differs from Keras's SGD: the rate multiplies the accumulator rather than entering
    it, so a changing rate rescales the whole history (as in TensorFlow 1).

    Args:
      learning_rate: float, `Tensor` or callable.
      momentum: float or `Tensor`.
      use_nesterov: Nesterov's accelerated gradient (Sutskever et al., 2013).
    """

    _rule = "Momentum"
    _slot_specs = (("momentum", "zeros"),)

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = bool(use_nesterov)

    def _nesterov(self):
        return self._use_nesterov

    def _hyper(self, var):
        return [self._scalar(self._learning_rate, var), self._scalar(self._momentum, var)]


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba, 2015) in TensorFlow 1's form ("epsilon hat"):

    ``lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)``; ``m = beta1 m + (1 - beta1) g``;
    ``v = beta2 v + (1 - beta2) g^2``; ``var -= lr_t * m / (sqrt(v) + epsilon)``.

    Slots ``"m"`` and ``"v"``; non-slot variables ``beta1_power`` and ``beta2_power``
    (colocated with the first variable by name), multiplied by ``beta1``/``beta2`` after
    each update. An `IndexedSlices` gradient is applied as its dense equivalent (every
    row's moments decay), as TensorFlow 1's Adam does.

    The same rule as Keras 3's (and mylib's) `Adam`, whose default epsilon is 1e-7;
    differs from ``optax.adam``, which adds epsilon to the bias-corrected root (there
    epsilon weighs ``sqrt(1 - beta2^t)`` times less early in training).
    """

    _rule = "Adam"
    _slot_specs = (("m", "zeros"), ("v", "zeros"))
    _sparse_mode = "dense"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._beta1, self._beta2, self._epsilon = beta1, beta2, epsilon

    def _get_beta_accumulators(self):
        g = get_default_graph()
        return (self._non_slot.get(("beta1_power", id(g))),
                self._non_slot.get(("beta2_power", id(g))))

    def _create_non_slots(self, kept):
        first = min((v for _, v in kept), key=lambda v: v.name)
        b1 = self._beta1 if isinstance(self._beta1, numbers.Real) else 0.9
        b2 = self._beta2 if isinstance(self._beta2, numbers.Real) else 0.999
        self._non_slot_variable("beta1_power", float(b1), first)
        self._non_slot_variable("beta2_power", float(b2), first)
        self._first = first

    def _hyper(self, var):
        b1p, b2p = self._get_beta_accumulators()
        return [self._scalar(b1p, var), self._scalar(b2p, var),
                self._scalar(self._learning_rate, var), self._scalar(self._beta1, var),
                self._scalar(self._beta2, var), self._scalar(self._epsilon, var)]

    def _finish(self, update_ops, name_scope):
        b1p, b2p = self._get_beta_accumulators()
        g = b1p.graph
        with g.control_dependencies(update_ops), g.colocate_with(b1p.handle.op):
            up1 = b1p.assign(b1p.value() * self._scalar(self._beta1, b1p), read_value=False)
            up2 = b2p.assign(b2p.value() * self._scalar(self._beta2, b2p), read_value=False)
        return array_ops.group(*update_ops, up1, up2, name=name_scope)


class AdagradOptimizer(Optimizer):
    """Adagrad (Duchi et al., 2011) as TensorFlow 1: ``accum += g^2``;
    ``var -= lr * g / sqrt(accum)``, no epsilon. Slot ``"accumulator"`` starting at
    `initial_accumulator_value` (must be > 0)."""

    _rule = "Adagrad"

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError("initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._slot_specs = (("accumulator", float(initial_accumulator_value)),)

    def _hyper(self, var):
        return [self._scalar(self._learning_rate, var)]


class RMSPropOptimizer(Optimizer):
    """RMSProp (Hinton's lecture 6e) as TensorFlow 1:

    ``ms = decay ms + (1 - decay) g^2``; ``mom = momentum mom + lr g / sqrt(ms +
    epsilon)``; ``var -= mom``. Centered: also ``mg = decay mg + (1 - decay) g`` and the
    denominator ``sqrt(ms - mg^2 + epsilon)``. Slots ``"rms"`` (starting at ONES, as
    TensorFlow 1), ``"mg"`` (centered only, zeros), ``"momentum"`` (zeros).

    Differs from Keras's RMSprop: the mean square starts at 1, and epsilon is inside
    the square root with default 1e-10.
    """

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, name="RMSProp"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._decay, self._momentum, self._epsilon = decay, momentum, epsilon
        self._centered = bool(centered)
        if self._centered:
            self._rule = "CenteredRMSProp"
            self._slot_specs = (("rms", "ones"), ("mg", "zeros"), ("momentum", "zeros"))
        else:
            self._rule = "RMSProp"
            self._slot_specs = (("rms", "ones"), ("momentum", "zeros"))

    def _apply(self, grad, var):
        if self._centered:
            # The kernel takes (mg, ms, mom); slot creation order is TF1's (rms, mg, mom).
            names = ("mg", "rms", "momentum")
        else:
            names = ("rms", "momentum")
        slots = [self._slots[n][var._key].handle for n in names]
        hyper = self._hyper(var)
        if isinstance(grad, IndexedSlices):
            values = math_ops.cast(convert_to_tensor(grad.values), var.dtype)
            return apply_ops.resource_apply(self._rule, var.handle, slots, hyper, values,
                                            indices=grad.indices)
        grad = math_ops.cast(convert_to_tensor(grad), var.dtype)
        return apply_ops.resource_apply(self._rule, var.handle, slots, hyper, grad)

    def _hyper(self, var):
        return [self._scalar(self._learning_rate, var), self._scalar(self._decay, var),
                self._scalar(self._momentum, var), self._scalar(self._epsilon, var)]


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal (McMahan et al., "Ad Click Prediction: a View from the Trenches",
    KDD 2013) as TensorFlow 1's ``FtrlOptimizer`` (``ApplyFtrlV2`` when
    `l2_shrinkage_regularization_strength` > 0). Slots ``"accum"`` (starting at
    `initial_accumulator_value`) and ``"linear"`` (zeros).

    Args:
      learning_rate: float or `Tensor` (> 0).
      learning_rate_power: <= 0 (default -0.5: the rate decays as 1/sqrt(accum)).
      initial_accumulator_value: >= 0.
      l1_regularization_strength, l2_regularization_strength,
      l2_shrinkage_regularization_strength: >= 0.
      beta: adds ``beta / (2 * learning_rate)`` to the L2 strength (TensorFlow's).
    Raises:
      ValueError: an argument out of range.
    """

    _rule = "Ftrl"

    def __init__(self, learning_rate, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking=False, name="Ftrl",
                 accum_name=None, linear_name=None, l2_shrinkage_regularization_strength=0.0,
                 beta=None):
        super().__init__(use_locking, name)
        checks = (("initial_accumulator_value", initial_accumulator_value, 0.0),
                  ("l1_regularization_strength", l1_regularization_strength, 0.0),
                  ("l2_regularization_strength", l2_regularization_strength, 0.0),
                  ("l2_shrinkage_regularization_strength",
                   l2_shrinkage_regularization_strength, 0.0))
        for nm, v, lo in checks:
            if v < lo:
                raise ValueError(f"{nm} {v} needs to be >= {lo}")
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power {learning_rate_power} needs to be <= 0.0")
        self._learning_rate = learning_rate
        self._lr_power = learning_rate_power
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._beta = 0.0 if beta is None else beta
        self._slot_specs = (("accum", float(initial_accumulator_value)), ("linear", "zeros"))

    def _hyper(self, var):
        lr = self._scalar(self._learning_rate, var)
        l2 = self._scalar(self._l2, var)
        if self._beta:
            l2 = l2 + self._scalar(self._beta, var) / (2.0 * lr)
        return [lr, self._scalar(self._l1, var), l2, self._scalar(self._l2_shrinkage, var),
                self._scalar(self._lr_power, var)]


class AdadeltaOptimizer(Optimizer):
    """Adadelta (Zeiler, 2012) as TensorFlow 1: ``accum = rho accum + (1 - rho) g^2``;
    ``update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * g``;
    ``accum_update = rho accum_update + (1 - rho) update^2``; ``var -= lr * update``.
    Slots ``"accum"`` and ``"accum_update"`` (zeros). Note TensorFlow 1's default rate
    0.001 (the paper's method has none: pass 1.0 for it)."""

    _rule = "Adadelta"
    _slot_specs = (("accum", "zeros"), ("accum_update", "zeros"))

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False,
                 name="Adadelta"):
        super().__init__(use_locking, name)
        self._learning_rate, self._rho, self._epsilon = learning_rate, rho, epsilon

    def _hyper(self, var):
        return [self._scalar(self._learning_rate, var), self._scalar(self._rho, var),
                self._scalar(self._epsilon, var)]


class ProximalGradientDescentOptimizer(Optimizer):
    """Gradient descent followed by the L1/L2 proximal map (FOBOS, Duchi & Singer 2009):
    ``v = var - lr g``; ``var = sign(v) / (1 + lr l2) * max(|v| - lr l1, 0)``."""

    _rule = "ProximalGradientDescent"

    def __init__(self, learning_rate, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking=False,
                 name="ProximalGradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _hyper(self, var):
        return [self._scalar(self._learning_rate, var), self._scalar(self._l1, var),
                self._scalar(self._l2, var)]


class ProximalAdagradOptimizer(Optimizer):
    """Adagrad followed by the L1/L2 proximal map: ``accum += g^2``; ``lr_t = lr /
    sqrt(accum)``; ``v = var - lr_t g``; ``var = sign(v) / (1 + lr_t l2) * max(|v| -
    lr_t l1, 0)``. Slot ``"accumulator"`` (starting at `initial_accumulator_value`)."""

    _rule = "ProximalAdagrad"

    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError("initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength
        self._slot_specs = (("accumulator", float(initial_accumulator_value)),)

    def _hyper(self, var):
        return [self._scalar(self._learning_rate, var), self._scalar(self._l1, var),
                self._scalar(self._l2, var)]
