"""Dtype policies (Keras's mixed precision): the dtype a layer computes in and the dtype
its weights are stored in.

``"mixed_bfloat16"`` and ``"mixed_float16"`` keep weights in float32 and compute in the
low type: a layer casts its floating inputs to its compute dtype, and reads of its
trainable float weights made inside its `call` are cast too (Keras's
``AutocastVariable``: the cast is a graph op after the `ReadVariableOp`, so gradients
flow back to the float32 variable through the `Cast`). A plain dtype name
(``"float32"``, ``"bfloat16"``) is a policy whose two dtypes are equal.

The public namespace is `mylib.mixed_precision`.
"""

from __future__ import annotations

import contextlib
import threading

from mylib.core import dtypes as _dtypes

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}
_LOW = ("float16", "bfloat16")


class Policy:
    """A dtype policy.

    Args:
      name: ``"mixed_float16"``, ``"mixed_bfloat16"``, or a dtype name (``"float32"``,
        ``"float64"``, ``"bfloat16"``, ``"int32"``, ...) used for both dtypes; or Keras
        3's serialized ``{"class_name": "DTypePolicy", "config": {"name": ...}}``.

    Attributes:
      name: the policy name.
      compute_dtype: dtype name of the layer's computations and outputs.
      variable_dtype: dtype name of the layer's weights.

    Raises:
      ValueError: an unknown policy or dtype name.
    """

    def __init__(self, name):
        if isinstance(name, Policy):
            name = name.name
        if isinstance(name, dict) and name.get("class_name") in ("DTypePolicy", "Policy") \
                and isinstance(name.get("config"), dict):
            name = name["config"].get("name")  # Keras 3's serialized form, in layer configs
        if not isinstance(name, str):
            try:
                name = _dtypes.as_dtype(name).name
            except TypeError:
                raise ValueError(f"Cannot convert value {name!r} to a mixed precision Policy. "
                                 "Expected a policy name such as 'mixed_bfloat16' or a dtype "
                                 "name such as 'float32'.") from None
        if name in _MIXED:
            compute, variable = _MIXED[name], "float32"
        else:
            try:
                compute = variable = _dtypes.as_dtype(name).name
            except TypeError:
                raise ValueError(
                    f"Cannot convert value {name!r} to a mixed precision Policy. Valid policies "
                    "are 'mixed_float16', 'mixed_bfloat16', and dtype names such as "
                    "'float32'.") from None
        self.name, self.compute_dtype, self.variable_dtype = name, compute, variable

    @property
    def is_mixed(self):
        return self.compute_dtype != self.variable_dtype

    def get_config(self):
        return {"name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __eq__(self, other):
        return isinstance(other, Policy) and other.name == self.name

    def __hash__(self):
        return hash(("Policy", self.name))

    def __repr__(self):
        return f'<Policy "{self.name}">'


_global_policy = None


def global_policy():
    """The policy of layers created without a `dtype` (default ``float32``)."""
    return _global_policy if _global_policy is not None else Policy("float32")


def set_global_policy(policy):
    """Sets the policy of layers created from now on without a `dtype` argument.

    Args:
      policy: a `Policy`, a policy name (``"mixed_bfloat16"``), or None to restore
        ``"float32"``. Layers already created keep their policy.
    Raises:
      ValueError: `policy` is not floating (``"int32"``), or an unknown name.
    """
    global _global_policy
    if policy is None:
        _global_policy = None
        return
    p = policy if isinstance(policy, Policy) else Policy(policy)
    if not _dtypes.as_dtype(p.compute_dtype).is_floating:
        raise ValueError(f"set_global_policy() can only be used with a floating point policy. "
                         f"Received: policy={p.name!r}")
    _global_policy = p


def get(dtype):
    """The `Policy` for a layer's `dtype` argument (None: the global policy)."""
    if dtype is None:
        return global_policy()
    return dtype if isinstance(dtype, Policy) else Policy(dtype)


def is_low_precision(dtype):
    return _dtypes.as_dtype(dtype).name in _LOW


# ---------------------------------------------------------------- autocast of reads
_local = threading.local()


def autocast_dtype():
    """The compute `DType` of the layer whose `call` is being built, or None."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def autocast_scope(dtype):
    """Inside, reads of autocast weights are cast to `dtype` (None: not cast)."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(None if dtype is None else _dtypes.as_dtype(dtype))
    try:
        yield
    finally:
        stack.pop()


def enable_autocast(variable):
    """Makes reads of `variable` (a float `ml.Variable`) inside a layer's `call` return
    the layer's compute dtype. The stored value and every other read (optimizer updates,
    regularizers, `get_weights`) keep the variable's dtype."""
    cls_value = type(variable).value

    def value():
        t = cls_value(variable)
        want = autocast_dtype()
        if want is None or want == t.dtype or not t.dtype.is_floating:
            return t
        from mylib.core.ops import math_ops

        return math_ops.cast(t, want)

    try:
        # An instance attribute shadows the method: `_as_tensor` (conversion to a
        # tensor) and the operator overloads all go through `value()`.
        variable.value = value
        variable._as_tensor = value
    except AttributeError:  # a strategy's variable type without a __dict__
        return variable
    variable._autocast = True
    return variable
