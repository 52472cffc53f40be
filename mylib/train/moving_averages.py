"""`ExponentialMovingAverage`: TensorFlow 1's shadow variables tracking moving
averages of variables or tensors (``tf.train.ExponentialMovingAverage``)."""

from __future__ import annotations

from mylib.core.graph import GraphKeys, Tensor, get_default_graph
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, math_ops
from mylib.core.variables import Variable, global_variables, trainable_variables

__all__ = ["ExponentialMovingAverage"]

_FLOAT_TYPES = ("float16", "bfloat16", "float32", "float64")


class ExponentialMovingAverage:
    """Moving averages ``shadow -= (1 - decay) * (shadow - value)`` of variables and
    tensors, updated by the op `apply` returns.

    Args:
      decay: float in [0, 1] (typically 0.999...).
      num_updates: optional int `Variable`/`Tensor` (e.g. the global step); then the
        decay used is ``min(decay, (1 + num_updates) / (10 + num_updates))``.
      zero_debias: for tensors (whose shadows start at zero), keep a biased average
        ``<shadow>/biased`` and a step count ``<shadow>/local_step`` and set the shadow
        to ``biased / (1 - decay^t)`` (Kingma & Ba's bias correction), as TensorFlow 1.
      name: the suffix of the shadow variables' names (``<var>/<name>``).

    A variable's shadow starts at the variable's initial value; a tensor's at zeros (as
    TensorFlow 1). Shadows are non-trainable `GLOBAL_VARIABLES`, colocated with what
    they average; averaged variables join ``MOVING_AVERAGE_VARIABLES``.
    """

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        self._zero_debias = bool(zero_debias)
        self._debias = {}  # tensor key -> (biased Variable, local_step Variable)
        self._decay = decay
        self._num_updates = num_updates
        self._name = name
        self._averages = {}  # variable key or ("tensor", name) -> shadow Variable

    @property
    def name(self):
        return self._name

    def _key(self, var):
        return var._key if isinstance(var, Variable) else ("tensor", var.name)

    def _op_name(self, var):
        return var.op.name

    def apply(self, var_list=None):
        """Creates shadows for `var_list` (default: the trainable variables) and returns
        the `Operation` that updates them all once.

        Raises:
          TypeError: a non-float variable or tensor; ValueError: an average of it exists.
        """
        if var_list is None:
            var_list = trainable_variables()
        var_list = list(var_list)
        g = get_default_graph()
        for v in var_list:
            if v.dtype.name not in _FLOAT_TYPES:
                raise TypeError(f"The variables must be half, float, or double: {v.name} has "
                                f"dtype {v.dtype.name}")
            if self._key(v) in self._averages:
                raise ValueError(f"Moving average already computed for: {v.name}")
        for v in var_list:
            with g.name_scope(None), g.control_dependencies(None), \
                    g.colocate_with(v.handle.op if isinstance(v, Variable) else v.op):
                if isinstance(v, Variable):
                    init = v.initialized_value()
                    shadow = Variable(init, trainable=False, name=self.average_name(v),
                                      dtype=v.dtype, collections=[GraphKeys.GLOBAL_VARIABLES])
                    g.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, v)
                else:
                    if not v.shape.is_fully_defined():
                        raise ValueError(f"ExponentialMovingAverage: tensor {v.name} needs a "
                                         f"fully defined shape, got {v.shape}")
                    shape = v.shape.as_list()
                    shadow = Variable(lambda shape=shape, dt=v.dtype: constant_ops.zeros(
                        shape, dtype=dt), trainable=False, name=self.average_name(v),
                        dtype=v.dtype, collections=[GraphKeys.GLOBAL_VARIABLES])
                    if self._zero_debias:
                        biased = Variable(lambda shape=shape, dt=v.dtype: constant_ops.zeros(
                            shape, dtype=dt), trainable=False,
                            name=self.average_name(v) + "/biased", dtype=v.dtype,
                            collections=[GraphKeys.GLOBAL_VARIABLES])
                        step = Variable(lambda dt=v.dtype: constant_ops.zeros([], dtype=dt),
                                        trainable=False,
                                        name=self.average_name(v) + "/local_step",
                                        dtype=v.dtype,
                                        collections=[GraphKeys.GLOBAL_VARIABLES])
                        self._debias[self._key(v)] = (biased, step)
            self._averages[self._key(v)] = shadow
        with g.name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay)
            if not decay.dtype.is_floating:
                decay = math_ops.cast(decay, "float32")
            if self._num_updates is not None:
                n = self._num_updates
                n = n.value() if isinstance(n, Variable) else convert_to_tensor(n)
                n = math_ops.cast(n, decay.dtype)
                decay = math_ops.minimum(decay, (1.0 + n) / (10.0 + n))
            updates = []
            for v in var_list:
                shadow = self._averages[self._key(v)]
                value = v.value() if isinstance(v, Variable) else v
                with g.colocate_with(shadow.handle.op):
                    d = math_ops.cast(decay, v.dtype)
                    debias = self._debias.get(self._key(v))
                    if debias is None:
                        new = shadow.value() - (shadow.value() - value) * (1.0 - d)
                        updates.append(shadow.assign(new, read_value=False))
                        continue
                    biased, step = debias
                    new_biased = biased.assign(
                        biased.value() - (biased.value() - value) * (1.0 - d))
                    t = step.assign_add(constant_ops.constant(1, dtype=v.dtype))
                    updates.append(shadow.assign(new_biased / (1.0 - math_ops.pow(d, t)),
                                                 read_value=False))
            return array_ops.group(*updates, name=scope)

    def average(self, var):
        """The shadow `Variable` of `var`, or None if `apply` has not seen it."""
        return self._averages.get(self._key(var))

    def average_name(self, var):
        """The name of the shadow of `var`: ``<var op name>/<self.name>``."""
        if isinstance(var, (Variable, Tensor)):
            return f"{self._op_name(var)}/{self._name}"
        raise TypeError(f"average_name expects a Variable or Tensor, got {var!r}")

    def variables_to_restore(self, moving_avg_variables=None):
        """A ``{name: Variable}`` map for a `Saver` that loads the averages into the
        variables: each averaged variable under its shadow's name, every other global
        variable under its own name.

        Args:
          moving_avg_variables: default the trainable and ``MOVING_AVERAGE_VARIABLES``.
        """
        if moving_avg_variables is None:
            moving_avg_variables = list(trainable_variables())
            moving_avg_variables += get_default_graph().get_collection(
                GraphKeys.MOVING_AVERAGE_VARIABLES)
        seen = {}
        for v in moving_avg_variables:
            seen.setdefault(v._key, v)
        name_map = {self.average_name(v): v for v in seen.values()}
        for v in global_variables():
            if v._key not in seen and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map
