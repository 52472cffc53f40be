"""Mixed precision (Keras's ``keras.mixed_precision``): dtype policies and loss scaling.

::

    ml.mixed_precision.set_global_policy("mixed_bfloat16")
    model = ml.Sequential([ml.layers.Input(shape=(784,)),
                           ml.layers.Dense(256, activation="relu"),
                           ml.layers.Dense(10),
                           ml.layers.Activation("softmax", dtype="float32")])

Layers created under a mixed policy store their weights in float32 and compute in
bfloat16 / float16 (see `mylib.layers.policy`). `fit` computes the losses in float32
(float16 / bfloat16 model outputs are cast first, as Keras 3's losses do). A model
created under ``"mixed_float16"`` wraps its optimizer in a `LossScaleOptimizer` when
compiled, so small float16 gradients do not flush to zero.
"""

from __future__ import annotations

from mylib.core import dtypes as _dtypes
from mylib.core.gradients import IndexedSlices, indexed_slices_to_dense
from mylib.core.graph import GraphKeys, Tensor
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops
from mylib.core.variables import Variable
from mylib.layers.policy import Policy, global_policy, set_global_policy  # noqa: F401
from mylib.optimizers.optimizer import Optimizer
from mylib import optimizers

__all__ = ["Policy", "global_policy", "set_global_policy", "LossScaleOptimizer"]


class LossScaleOptimizer(Optimizer):
    """Dynamic loss scaling around another optimizer (Keras's `LossScaleOptimizer`).

    The train step differentiates ``scale_loss(loss) = loss * dynamic_scale``;
    `apply_gradients` divides the gradients by the scale and, in the same step:

    - if every gradient is finite: applies the inner optimizer's update and counts the
      step; after `dynamic_growth_steps` finite steps in a row the scale doubles;
    - otherwise: leaves every variable, optimizer slot and the inner optimizer's
      `iterations` as they were (the update is skipped) and halves the scale.

    All of it is graph ops: the scale and the counter are non-trainable float32 / int64
    Variables (``<name>/dynamic_scale``, ``<name>/step_counter``), and the skip selects
    between the values before and after the inner update with `where` (so a skipped
    step still costs one update's compute and one extra read of the optimizer state).

    Args:
      inner_optimizer: the `Optimizer` (or name) that applies the unscaled gradients.
      initial_scale: the first loss scale (default ``2**15``).
      dynamic_growth_steps: finite steps between doublings of the scale (default 2000).
      name: name scope of the scale variables.

    Other attributes (`learning_rate`, `iterations`, `get_slot`, ...) are the inner
    optimizer's.
    """

    def __init__(self, inner_optimizer, initial_scale=2.0 ** 15, dynamic_growth_steps=2000,
                 name=None):

        # No Optimizer.__init__: everything but the scaling is the inner optimizer's
        # (attribute reads fall through `__getattr__`).
        self.inner_optimizer = optimizers.get(inner_optimizer)
        if initial_scale <= 0:
            raise ValueError(f"`initial_scale` must be positive. Received: "
                             f"initial_scale={initial_scale}")
        if int(dynamic_growth_steps) < 1:
            raise ValueError(f"`dynamic_growth_steps` must be >= 1. Received: "
                             f"dynamic_growth_steps={dynamic_growth_steps}")
        self.initial_scale = float(initial_scale)
        self.dynamic_growth_steps = int(dynamic_growth_steps)
        self.name = name or "LossScaleOptimizer"
        self._ls_graph = self._ls_scope = None
        self.dynamic_scale = None
        self.step_counter = None

    def __getattr__(self, item):
        if item.startswith("__") or item in ("inner_optimizer", "_ls_graph", "_ls_scope"):
            raise AttributeError(item)
        return getattr(self.inner_optimizer, item)

    # --- state ---
    def _ensure_scale_vars(self, graph):
        if self._ls_graph is None:
            self._ls_graph = graph
            with graph.as_default(), graph.name_scope(""), graph.name_scope(self.name) as \
                    scope, graph.control_dependencies(None):
                self._ls_scope = scope
                self.dynamic_scale = Variable(
                    constant_ops.constant(self.initial_scale, dtype=_dtypes.float32),
                    trainable=False, name="dynamic_scale", dtype=_dtypes.float32,
                    collections=[GraphKeys.GLOBAL_VARIABLES])
                self.step_counter = Variable(
                    constant_ops.constant(0, dtype=_dtypes.int64), trainable=False,
                    name="step_counter", dtype=_dtypes.int64,
                    collections=[GraphKeys.GLOBAL_VARIABLES])
        elif graph is not self._ls_graph:
            raise ValueError(f"Optimizer '{self.name}' is already used in another graph; "
                             "create one optimizer per graph.")

    @property
    def loss_scale(self):
        """The current scale Variable (TensorFlow's name for `dynamic_scale`)."""
        return self.dynamic_scale

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @property
    def iterations(self):
        return self.inner_optimizer.iterations

    @property
    def variables(self):
        """The inner optimizer's variables, then the scale and the step counter (a list;
        calling it also works, as `Optimizer.variables`)."""
        from mylib.optimizers.optimizer import _VariableList

        own = [v for v in (self.dynamic_scale, self.step_counter) if v is not None]
        return _VariableList(list(self.inner_optimizer.variables) + own)

    def apply(self, grads, trainable_variables=None):
        """Keras 3's `apply`: `apply_gradients` of ``zip(grads, trainable_variables)``
        (the gradients of the scaled loss)."""
        return Optimizer.apply(self, grads, trainable_variables)

    def build(self, var_list):
        var_list = list(var_list)
        if var_list:
            self._ensure_scale_vars(var_list[0].graph)
        self.inner_optimizer.build(var_list)

    def get_config(self):

        inner = self.inner_optimizer
        ser = getattr(optimizers, "serialize", None)
        return {"name": self.name, "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps,
                "inner_optimizer": ser(inner) if ser is not None else
                {"class_name": type(inner).__name__, "config": inner.get_config()}}

    @classmethod
    def from_config(cls, config):

        config = dict(config)
        inner = config.pop("inner_optimizer")
        des = getattr(optimizers, "deserialize", None)
        if des is not None:
            inner = des(inner)
        elif isinstance(inner, dict):
            inner = getattr(optimizers, inner["class_name"]).from_config(inner["config"])
        return cls(inner, **config)

    # --- graph building ---
    def scale_loss(self, loss):
        """``loss * dynamic_scale`` (in the loss's dtype), the value to differentiate."""
        loss = convert_to_tensor(loss)
        self._ensure_scale_vars(loss.graph)
        with loss.graph.as_default():
            return loss * math_ops.cast(self.dynamic_scale.value(), loss.dtype)

    def compute_gradients(self, loss, var_list=None):
        """Gradients of the SCALED loss (unscaled again by `apply_gradients`)."""
        if callable(loss) and not isinstance(loss, Tensor):
            loss = loss()
        return self.inner_optimizer.compute_gradients(self.scale_loss(loss), var_list)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Unscales the gradients, applies them if all are finite (else skips the update
        and halves the scale), and updates the scale; returns the `Operation`."""
        pairs = [(g, v) for g, v in grads_and_vars]
        kept = [(g, v) for g, v in pairs if g is not None]
        if not kept:
            raise ValueError("No gradients provided for any variable: "
                             f"{[v.name for _, v in pairs]}.")
        graph = kept[0][1].graph
        self._ensure_scale_vars(graph)
        inner = self.inner_optimizer
        variables = [v for _, v in kept]
        inner.build(variables)  # slots exist before the snapshot below
        with graph.as_default(), graph.name_scope(""), graph.name_scope(self._ls_scope), \
                graph.name_scope(name or "update"):
            scale = self.dynamic_scale.value()
            counter = self.step_counter.value()
            grads = []
            for g, _ in kept:
                if isinstance(g, IndexedSlices):
                    g = indexed_slices_to_dense(g)
                g = convert_to_tensor(g)
                grads.append(g * math_ops.cast(1.0 / scale, g.dtype))
            finite = None
            for g in grads:
                f = reduction_ops.reduce_all(math_ops.is_finite(g))
                finite = f if finite is None else math_ops.logical_and(finite, f)
            # Everything the inner update writes, read before it runs.
            state = list({id(s): s for s in variables + [
                s for v in variables for s in inner._get_slots(v)]}.values()) + \
                [inner.iterations]
            if global_step is not None:
                state.append(global_step)
            old = [s.value() for s in state]
            with graph.control_dependencies(old):
                applied = inner.apply_gradients(list(zip(grads, variables)),
                                                global_step=global_step)
            with graph.control_dependencies([applied]):
                keep = [s.assign(array_ops.where(finite, s.value(), o), read_value=False)
                        for s, o in zip(state, old)]
                two = constant_ops.constant(2.0, dtype=_dtypes.float32)
                count = array_ops.where(finite, counter + 1,
                                       constant_ops.constant(0, dtype=_dtypes.int64))
                grow = math_ops.logical_and(
                    finite, count >= constant_ops.constant(self.dynamic_growth_steps,
                                                        dtype=_dtypes.int64))
                new_scale = array_ops.where(finite, array_ops.where(grow, scale * two, scale),
                                           scale / two)
                count = array_ops.where(grow, constant_ops.constant(0, dtype=_dtypes.int64), count)
                keep.append(self.dynamic_scale.assign(new_scale, read_value=False))
                keep.append(self.step_counter.assign(count, read_value=False))
            return array_ops.group(applied, *keep, name="apply")

    def minimize(self, loss, var_list=None, global_step=None, name=None):
        return self.apply_gradients(self.compute_gradients(loss, var_list),
                                    global_step=global_step, name=name)

    def __repr__(self):
        return f"<ml.mixed_precision.LossScaleOptimizer inner={self.inner_optimizer!r}>"


def _delegate(name):
    def method(self, *args, **kwargs):
        return getattr(self.inner_optimizer, name)(*args, **kwargs)

    method.__name__ = name
    return method


# Optimizer methods that LossScaleOptimizer does not define act on the inner optimizer
# (slots, hyperparameters), not on the wrapper's (unset) Optimizer state.
for _name, _attr in list(vars(Optimizer).items()):
    if callable(_attr) and not _name.startswith("__") and \
            _name not in vars(LossScaleOptimizer) and _name != "from_config":
        setattr(LossScaleOptimizer, _name, _delegate(_name))
