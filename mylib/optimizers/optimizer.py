"""`Optimizer`: the base of the Keras-style optimizers, built on optax.

An optimizer turns ``(gradient, variable)`` pairs into one stateful graph op,
`ResourceApplyOptax` (see `mylib.core.ops.training_ops`), whose lowering runs the
optax transformation. Its state lives in slot `Variable`s (non-trainable, in
``GLOBAL_VARIABLES``, so `global_variables_initializer` initializes them and a Saver
saves them), one per optax state leaf per variable, named
``<optimizer>/<variable>/<leaf>`` (``Adam/dense/kernel/mu``).
"""

from __future__ import annotations

import contextlib
import numbers

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.compat_args import init_arg_names, unrecognized_kwargs
from mylib.core.gradients import IndexedSlices, gradients, indexed_slices_to_dense
from mylib.core.graph import GraphKeys, Tensor, get_default_graph
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, state_ops, training_ops
from mylib.core.variables import Variable
from mylib.runtime.policy import get_policy


class Optimizer:
    """Base class of the optimizers.

    Args:
      learning_rate: a float, or a schedule: a callable ``step -> rate`` such as an
        optax schedule (``optax.exponential_decay(...)``), evaluated at `iterations`
        (0 for the first step). A float rate is held in a non-trainable float32
        variable (`learning_rate` once built), which callbacks may assign.
      name: the name scope of the optimizer's variables and ops.
      weight_decay: optional decoupled weight decay ``p -= lr * weight_decay * p``,
        applied in the same step as the update (as Keras 3).
      clipnorm: clip each gradient to this L2 norm (Keras's ``clip_by_norm``).
      clipvalue: clip each gradient element to ``[-clipvalue, clipvalue]``.
      global_clipnorm: clip all gradients together to this global norm.

    Graphs built with a schedule object keep it in a process-local registry, so they
    cannot be serialized and re-imported in another process.
    """

    _kind = None  # the `ResourceApplyOptax` optimizer kind

    def __init__(self, learning_rate, name=None, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, **kwargs):
        if kwargs:
            raise unrecognized_kwargs(type(self).__name__, kwargs, init_arg_names(type(self)))
        if sum(x is not None for x in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError(
                "Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. "
                f"Received: clipnorm={clipnorm}, clipvalue={clipvalue}, "
                f"global_clipnorm={global_clipnorm}")
        for nm, v in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                      ("global_clipnorm", global_clipnorm), ("weight_decay", weight_decay)):
            if v is not None and (not isinstance(v, numbers.Real) or v < 0):
                raise ValueError(f"`{nm}` must be a non-negative number. Received: {nm}={v!r}")
        if isinstance(learning_rate, numbers.Real):
            if learning_rate < 0:
                raise ValueError(
                    f"`learning_rate` must be >= 0. Received: learning_rate={learning_rate}")
            learning_rate = float(learning_rate)
        elif not callable(learning_rate):
            raise ValueError("`learning_rate` must be a float or a schedule (a callable of "
                             f"the step). Received: learning_rate={learning_rate!r}")
        self._learning_rate = learning_rate
        self.name = name or type(self).__name__
        self.weight_decay = None if weight_decay is None else float(weight_decay)
        self.clipnorm = None if clipnorm is None else float(clipnorm)
        self.clipvalue = None if clipvalue is None else float(clipvalue)
        self.global_clipnorm = None if global_clipnorm is None else float(global_clipnorm)
        self._graph = None
        self._scope = None
        self._iterations = None
        self._lr_var = None
        self._schedule_id = None
        self._slots = {}  # variable key -> [slot Variable]
        self._shared_slots = {}  # (leaf, dtype, device) -> the slot shared in a group

    # ------------------------------------------------------------ hyperparameters
    def _hparams(self):
        """The ``(name, value)`` pairs passed to the optax transform builder."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement `_hparams` (abstract in the base class)")

    def get_config(self):
        """The constructor arguments (a schedule is returned as the object itself; a
        float rate is the learning-rate variable's current value once built)."""
        lr = self._learning_rate
        if self._lr_var is not None:
            lr = float(np.asarray(self._lr_var))
        return {"name": self.name, "learning_rate": lr,
                "weight_decay": self.weight_decay, "clipnorm": self.clipnorm,
                "clipvalue": self.clipvalue, "global_clipnorm": self.global_clipnorm,
                **dict(self._hparams())}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    # ------------------------------------------------------------ variables
    def _bind_graph(self, graph):
        if self._graph is None:
            self._graph = graph
            with graph.name_scope(""), graph.name_scope(self.name) as scope:
                self._scope = scope
        elif graph is not self._graph:
            raise ValueError(
                f"Optimizer '{self.name}' is already used in another graph; create one "
                "optimizer per graph.")
        return graph

    def _make_variable(self, name, initial_value, dtype):
        g = self._graph
        with g.name_scope(""), g.name_scope(self._scope), g.control_dependencies(None):
            v = Variable(initial_value, trainable=False, name=name, dtype=dtype,
                         collections=[GraphKeys.GLOBAL_VARIABLES])
        # A Keras variable: `assign` outside a step being built takes effect at once
        # (see `Variable.assign`), as Keras 3's ``optimizer.iterations.assign(0)``.
        v._keras_eager = True
        return v

    def _ensure_built(self, graph=None, colocate=None):
        self._bind_graph(graph or self._graph or get_default_graph())
        g = self._graph
        if self._iterations is None:
            # With the first variable it updates (on its parameter server, if any), as
            # TensorFlow colocates an optimizer's non-slot variables.
            place = g.colocate_with(colocate.op) if colocate is not None else \
                contextlib.nullcontext()
            # Initial values made outside any control_dependencies of the caller (the
            # TF1 idiom `with control_dependencies(UPDATE_OPS): opt.minimize(loss)`).
            with g.as_default(), place, g.control_dependencies(None):
                self._iterations = self._make_variable(
                    "iterations", constant_ops.constant(0, dtype=_dtypes.int64), _dtypes.int64)
                if callable(self._learning_rate):
                    self._schedule_id = training_ops.register_schedule(self._learning_rate)
                else:
                    self._lr_var = self._make_variable(
                        "learning_rate",
                        constant_ops.constant(self._learning_rate, dtype=_dtypes.float32),
                        _dtypes.float32)

    @property
    def iterations(self):
        """The int64 non-trainable variable counting applied steps (created in the
        default graph on first access if the optimizer is not yet built)."""
        self._ensure_built()
        return self._iterations

    @property
    def learning_rate(self):
        """The float32 learning-rate variable; with a schedule, its current rate (Keras
        3's ``float(optimizer.learning_rate)``): a float32 numpy scalar, the schedule at
        `iterations` (0 before the first step). While a step is being built (a custom
        `train_step`, a layer call) the schedule object itself is returned (the
        compiled update evaluates it at each step)."""
        if callable(self._learning_rate):
            g = self._graph if self._graph is not None else get_default_graph()
            if g._state.collectable:
                return self._learning_rate
            step = 0 if self._iterations is None else int(np.asarray(self._iterations))
            return np.float32(np.asarray(self._learning_rate(step)))
        self._ensure_built()
        return self._lr_var

    @learning_rate.setter
    def learning_rate(self, value):
        """Sets a float rate (Keras 3's ``optimizer.learning_rate = 1e-4``): before the
        optimizer is built it replaces the initial rate; after, the learning-rate
        variable is assigned in its graph's Keras session, so the next step uses it.

        Raises:
          ValueError: a negative rate, or a schedule given after the optimizer was built
            (or a float given to one built with a schedule).
        """
        if callable(value) and not isinstance(value, numbers.Real):
            if self._iterations is not None:
                raise ValueError(f"Optimizer '{self.name}' is already built: its learning "
                                 "rate cannot become a schedule now; create a new optimizer.")
            self._learning_rate = value
            return
        value = float(value)
        if value < 0:
            raise ValueError(f"`learning_rate` must be >= 0. Received: learning_rate={value}")
        if self._iterations is None:
            self._learning_rate = value
            return
        if self._lr_var is None:
            raise ValueError(f"Optimizer '{self.name}' was built with a learning-rate "
                             "schedule; its rate cannot be set to a float.")
        from mylib.runtime import keras_session

        self._learning_rate = value
        keras_session.set_values([self._lr_var], [value], owner=f"Optimizer '{self.name}'")

    def build(self, var_list):
        """Creates `iterations`, the learning-rate variable and the slots of `var_list`
        (done by `apply_gradients` otherwise)."""
        var_list = list(var_list)
        graph = var_list[0].graph if var_list else None
        self._ensure_built(graph, var_list[0] if var_list else None)
        for v in var_list:
            self._get_slots(v)

    def _get_slots(self, var):
        slots = self._slots.get(var._key)
        if slots is not None:
            return slots
        if not var.shape.is_fully_defined():
            raise ValueError(
                f"Optimizer '{self.name}': variable '{var.name}' has a partially known "
                f"shape {var.shape}; optimizer slots need a fully defined shape")
        shape = var.shape.as_list()
        structure = training_ops.slot_structure(self._kind, self._hparams(), shape, var.dtype)
        inits = training_ops.slot_initial_values(self._kind, self._hparams(), shape, var.dtype)
        shared = training_ops.shared_slot_mask(self._kind, self._hparams(), var.dtype)
        slots = []
        g = self._graph
        with g.as_default(), g.colocate_with(var.op):
            for (leaf_name, spec), init, is_shared in zip(structure, inits, shared):
                dt = _dtypes.as_dtype(spec.dtype)
                # A leaf optax shares between parameters (Adam's count) is one
                # variable per device group, not one per variable: fewer buffers per step.
                skey = (leaf_name, dt.name, var.handle.op.device) if is_shared else None
                if skey is not None and skey in self._shared_slots:
                    slots.append(self._shared_slots[skey])
                    continue

                def initial(init=init, dt=dt):
                    if isinstance(init, tuple):
                        value, shp, _ = init
                        return constant_ops.fill(list(shp),
                                              constant_ops.constant(value.item(), dtype=dt))
                    return constant_ops.constant(init, dtype=dt)

                slot = self._make_variable(leaf_name if skey is not None else
                                           f"{var._name}/{leaf_name}", initial, dt)
                if skey is not None:
                    self._shared_slots[skey] = slot
                slots.append(slot)
        self._slots[var._key] = slots
        return slots

    def get_slot_names(self, var):
        """Leaf names of the slots of `var` (e.g. ``["mu", "nu", "count"]``)."""
        return [n for n, _ in training_ops.slot_structure(
            self._kind, self._hparams(), var.shape.as_list(), var.dtype)]

    def get_slot(self, var, name):
        """The slot variable of `var` named `name` (see `get_slot_names`)."""
        names = self.get_slot_names(var)
        slots = self._slots.get(var._key)
        if slots is None or name not in names:
            return None
        return slots[names.index(name)]

    @property
    def variables(self):
        """`iterations`, the learning-rate variable and all slots: a list (Keras 3's
        property). Calling it, ``opt.variables()``, also works and returns the same
        list (the older method form)."""
        return _VariableList(self._variable_list())

    def _variable_list(self):
        out = []
        if self._iterations is not None:
            out.append(self._iterations)
        if self._lr_var is not None:
            out.append(self._lr_var)
        seen = set()
        for slots in self._slots.values():
            for sl in slots:
                if id(sl) not in seen:
                    seen.add(id(sl))
                    out.append(sl)
        return out

    # ------------------------------------------------------------ graph building
    def apply(self, grads, trainable_variables=None):
        """Keras 3's ``optimizer.apply(grads, trainable_variables)``: the update op of
        the gradients `grads` (a list, None entries skipped) for `trainable_variables`
        (a list of the same length), as `apply_gradients`.

        Raises:
          ValueError: `trainable_variables` is missing or of another length.
        """
        grads = list(grads)
        if trainable_variables is None:
            raise ValueError("optimizer.apply needs `trainable_variables` (the variables "
                             "the gradients belong to).")
        tvars = list(trainable_variables)
        if len(grads) != len(tvars):
            raise ValueError(f"optimizer.apply: {len(grads)} gradients for {len(tvars)} "
                             "variables; pass one gradient (or None) per variable.")
        return self.apply_gradients(list(zip(grads, tvars)))

    def compute_gradients(self, loss, var_list=None):
        """Gradients of `loss` with respect to `var_list`.

        Args:
          loss: a scalar `Tensor` (or a callable returning one).
          var_list: variables; default the ``TRAINABLE_VARIABLES`` of the loss's graph.
        Returns:
          A list of ``(gradient, variable)``; the gradient is None for a variable the
          loss does not depend on, and may be an `IndexedSlices`.
        """
        if callable(loss) and not isinstance(loss, Tensor):
            loss = loss()
        loss = convert_to_tensor(loss)
        if var_list is None:
            var_list = loss.graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        # A sharded variable (``.variables``: its shards) is optimized shard by shard.
        var_list = [p for v in var_list for p in (
            v.variables if isinstance(getattr(v, "variables", None), list) else [v])]
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = gradients(loss, var_list)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """An op applying one update from `grads_and_vars`.

        Pairs whose gradient is None are skipped (the variable is not updated).
        `IndexedSlices` gradients are made dense. `iterations` (and `global_step`, if
        given) advance by one per run; variables with a `constraint` are projected by
        it after the update, in the same step.

        Returns:
          The `Operation` to run.
        Raises:
          ValueError: if every gradient is None.
        """
        pairs = [(g, v) for g, v in grads_and_vars]
        if not pairs:
            raise ValueError("No variables provided.")
        kept = [(g, v) for g, v in pairs if g is not None]
        if not kept:
            raise ValueError("No gradients provided for any variable: "
                             f"{[v.name for _, v in pairs]}.")
        graph = kept[0][1].graph
        self._ensure_built(graph, kept[0][1])
        with graph.as_default(), graph.name_scope(""), graph.name_scope(self._scope), \
                graph.name_scope(name or "update"):
            dense_kept, dense, sparse_ops = self._split_gradients(graph, kept)
            apply_ops = sparse_ops + self._dense_apply_ops(graph, dense_kept, dense)
            with graph.control_dependencies(apply_ops):
                inc = state_ops.assign_add_variable_op(
                    self._iterations.handle, constant_ops.constant(1, dtype=_dtypes.int64))
            apply_op = array_ops.group(*apply_ops, inc, name="apply_updates")
            after = []
            with graph.control_dependencies([apply_op]):
                for _, v in kept:
                    if getattr(v, "constraint", None) is not None:
                        after.append(v.assign(v.constraint(v.value()), read_value=False))
                if global_step is not None:
                    one = constant_ops.constant(1, dtype=global_step.dtype)
                    after.append(state_ops.assign_add_variable_op(global_step.handle, one))
            if not after:
                return apply_op
            return array_ops.group(apply_op, *after, name="apply")

    def _split_gradients(self, graph, kept):
        """``(dense pairs, their dense gradients, sparse update ops)``: each gradient
        aggregated over replicas where a strategy says so; an `IndexedSlices` one
        applied to its rows where the optimizer allows, else made dense; then the
        dense ones clipped by `global_clipnorm`."""
        # A parameter-server strategy in synchronous mode marks each gradient as
        # the mean over the aggregated replicas (`aggregate_gradient`).
        policy = get_policy(graph)
        aggregate = policy.aggregate_gradient if policy is not None else None
        dense, sparse_ops, dense_kept = [], [], []
        for g, v in kept:
            if aggregate is not None:
                g = aggregate(g, v)
            if isinstance(g, IndexedSlices) and self._sparse_rule(v):
                # Only the rows it names are updated, by a scatter on the variable
                # (where a parameter server holds it): TensorFlow's sparse apply.
                sparse_ops.append(self._apply_sparse(g, v))
                continue
            dense_kept.append((g, v))
            if isinstance(g, IndexedSlices):
                # Made dense where the variable lives: only the rows travel there.
                with graph.colocate_with(v.handle.op):
                    g = indexed_slices_to_dense(g)
            dense.append(convert_to_tensor(g))
        if self.global_clipnorm is not None:
            # The global norm spans every variable: clip in graph ops first, so the
            # per-device update ops below each see already-clipped gradients.
            from mylib.core.ops.clip_ops import clip_by_global_norm

            dense, _ = clip_by_global_norm(dense, self.global_clipnorm)
        return dense_kept, dense, sparse_ops

    def _dense_apply_ops(self, graph, dense_kept, dense):
        """One update op per device, colocated with its variables (as TensorFlow's
        per-variable ResourceApply* ops), so variables never leave their device."""
        step = self._iterations.value()
        lr = None if self._lr_var is None else self._lr_var.value()
        groups = {}
        for (g, v), d in zip(dense_kept, dense):
            groups.setdefault(v.handle.op.device, []).append((d, v))
        apply_ops = []
        for members in groups.values():
            first = members[0][1]
            with graph.colocate_with(first.handle.op):
                apply_ops.append(training_ops.resource_apply_optax(
                    step, lr, [v.handle for _, v in members],
                    [s.handle for _, v in members for s in self._get_slots(v)],
                    [d for d, _ in members],
                    optimizer=self._kind, hparams=self._hparams(),
                    schedule=self._schedule_id, clipnorm=self.clipnorm,
                    global_clipnorm=None, clipvalue=self.clipvalue,
                    weight_decay=self.weight_decay))
        return apply_ops

    def _sparse_rule(self, var):
        """Whether an `IndexedSlices` gradient of `var` may be applied to its rows only
        (exactly the dense update: rows without gradient would not change). Optimizers
        with such a rule override this and `_apply_sparse`."""
        return False

    def _apply_sparse(self, grad, var):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `_apply_sparse` when `_sparse_rule` "
            "allows it (abstract in the base class)")

    def minimize(self, loss, var_list=None, global_step=None, name=None):
        """`compute_gradients` then `apply_gradients`; returns the update `Operation`."""
        return self.apply_gradients(self.compute_gradients(loss, var_list),
                                    global_step=global_step, name=name)

    def __repr__(self):
        return f"<ml.optimizers.{type(self).__name__} name={self.name!r}>"


class _VariableList(list):
    """A list that may also be called (returning itself as a list), so both Keras 3's
    ``opt.variables`` and the older ``opt.variables()`` work."""

    def __call__(self):
        return list(self)
