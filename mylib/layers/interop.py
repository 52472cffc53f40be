"""Interop layers: `FlaxLayer` (a Flax linen or nnx module as a layer) and `Lambda`.

`FlaxLayer` turns the module's parameters into mylib Variables (trained by `fit` like
any layer's weights) and adds ONE op to the graph, ``FlaxCall``, whose kernel applies the
module to its inputs and the parameter values. ``FlaxCall`` has no registered gradient:
the generic VJP op (``jax.vjp`` of the kernel) differentiates it with respect to the
inputs and every parameter.

Op attrs hold plain data only, so the module object lives in a process-level registry
and the op names it by a string id (``module_id``). A graph holding ``FlaxCall`` ops
runs only in the process that built it: exported as a GraphDef and imported elsewhere,
running it raises `NotFoundError`.
"""

from __future__ import annotations

import inspect
import itertools
import threading
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from mylib._optional import require
from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.graph import get_default_graph
from mylib.core.op_registry import OpDef
from mylib.layers import registration
from mylib.core.ops import constant_ops
from mylib.layers.base import Layer, flatten

# ---------------------------------------------------------------- module registry
# module_id -> _Entry. Each graph holding FlaxCall ops keeps its entries alive (and the
# layer does), so building models in a loop does not grow the registry without bound.
_MODULES: "weakref.WeakValueDictionary[str, _Entry]" = weakref.WeakValueDictionary()
_GRAPH_REFS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_ids = itertools.count()
_lock = threading.Lock()


class _Entry:
    """What the kernel needs: ``apply(leaves, *inputs) -> output pytree``."""

    def __init__(self, apply, treedef):
        self.apply, self.treedef = apply, treedef
        self.out_treedef = None


def _register(entry, graph):
    with _lock:
        module_id = f"flax_module_{next(_ids)}"
        _MODULES[module_id] = entry
        _GRAPH_REFS.setdefault(graph, []).append(entry)
    return module_id


def _lookup(module_id):
    entry = _MODULES.get(module_id)
    if entry is None:
        raise errors.NotFoundError(
            f"FlaxCall: no Flax module '{module_id}' in this process. Graphs holding "
            "FlaxLayer ops run only in the process that built them (the module object is "
            "not part of the graph); rebuild the model here instead of importing its graph.")
    return entry


# ---------------------------------------------------------------- the op
def _flax_call_kernel(*arrays, module_id, n_inputs):
    entry = _lookup(module_id)
    out = entry.apply(list(arrays[n_inputs:]), *arrays[:n_inputs])
    leaves = jax.tree_util.tree_leaves(out)
    return leaves[0] if len(leaves) == 1 else tuple(leaves)


FlaxCall = OpDef("FlaxCall", kernel=_flax_call_kernel, host_effect=lambda attrs: (
    f"calls the Flax module registered in this process as {attrs.get('module_id')!r}"))
# No shape rule (jax.eval_shape of the kernel) and no gradient (the generic VJP op).


def flax_call(inputs, params, module_id, name=None):
    """Applies registered module `module_id` to `inputs` (tensors) with parameter leaves
    `params` (tensors or Variables); returns its output leaves (one tensor or a tuple)."""
    return FlaxCall(*inputs, *params, module_id=module_id, n_inputs=len(inputs), name=name)


# ---------------------------------------------------------------- FlaxLayer
def _path_name(path):
    parts = []
    for k in path:
        if isinstance(k, jax.tree_util.DictKey):
            parts.append(str(k.key))
        elif isinstance(k, jax.tree_util.SequenceKey):
            parts.append(str(k.idx))
        elif isinstance(k, jax.tree_util.GetAttrKey):
            if k.name != "value":  # nnx.Variable's payload
                parts.append(str(k.name))
        else:
            parts.append(str(k).strip("[].'\""))
    return "/".join(p for p in parts if p) or "param"


def _is_nnx(module):
    try:
        from flax import nnx
    except ImportError:  # pragma: no cover - flax without nnx
        return False
    return isinstance(module, nnx.Module)


class FlaxLayer(Layer):
    """A Flax module as a layer: its parameters become trainable mylib Variables.

    Works with `flax.linen` modules (initialized on build with
    ``module.init(PRNGKey(seed), *dummy_inputs)``, dummies shaped like the inputs with
    unknown dimensions set to 1; or pass `variables`) and with `flax.nnx` modules (their
    current parameter values are used, through ``nnx.split(module, nnx.Param, ...)``).
    Each parameter leaf is one weight named by its pytree path (``params/Dense_0/kernel``
    for linen, ``l1/kernel`` for nnx). The forward pass is one ``FlaxCall`` op, computing
    ``module.apply({...}, *inputs)`` (linen) or ``nnx.merge(graphdef, params, rest)(*inputs)``
    (nnx); its gradient is ``jax.vjp`` of that.

    Several inputs are passed as a list and become positional arguments of the module.
    Outputs may be an array or a tuple/list/dict of arrays (returned in that structure).

    Limits:
      - Linen collections other than ``params`` (``batch_stats``, ...) become
        non-trainable weights that are read but never updated (``mutable=False``); nnx
        state other than `nnx.Param` (batch statistics, RNG streams) is frozen at its
        build-time value. Modules are called without ``rngs``, so stochastic layers
        (dropout) need ``deterministic=True``.
      - Under a mixed precision policy the module receives its inputs and parameters in
        the compute dtype; its weights are stored in the variable dtype.
      - Graphs with a FlaxLayer do not serialize to other processes (see the module
        docstring), and `get_config` cannot describe the module: `model.save` of such a
        model raises, `save_weights` / `load_weights` work.

    Args:
      module: a `flax.linen.Module` or a `flax.nnx.Module`.
      method: the method to call instead of ``__call__`` (a name; for linen also a
        function, as `Module.apply`'s `method`).
      variables: linen only: initialized variables (``{"params": ...}``) to use instead
        of ``module.init``.
      seed: the PRNG seed of ``module.init`` (linen).
    """

    def __init__(self, module, method=None, variables=None, seed=0, **kwargs):
        super().__init__(**kwargs)
        self._nnx = _is_nnx(module)
        if not self._nnx:
            linen = require("flax.linen", "FlaxLayer", "interop")
            if not isinstance(module, linen.Module):
                raise TypeError("FlaxLayer wraps a flax.linen or flax.nnx Module. Received: "
                                f"module={module!r} ({type(module).__name__})")
        elif variables is not None:
            raise ValueError("`variables` is for linen modules; an nnx module holds its own "
                             "parameters.")
        self.module, self.method, self.seed = module, method, int(seed)
        self._init_variables = variables
        self._input_dtypes = None
        self._module_id = None
        self._entry = None
        self._params = []

    def __call__(self, inputs, *args, **kwargs):
        if self._input_dtypes is None:
            self._input_dtypes = [getattr(x, "dtype", None) for x in flatten(inputs)]
        return super().__call__(inputs, *args, **kwargs)

    def _dummy_inputs(self, input_shape):
        shapes = input_shape if isinstance(input_shape, list) else [input_shape]
        dts = self._input_dtypes or [None] * len(shapes)
        out = []
        for s, dt in zip(shapes, dts):
            dt = _dtypes.as_dtype(dt) if dt is not None else self.compute_dtype
            out.append(jnp.zeros(tuple(1 if d is None else d for d in s), dt.np))
        return out

    def _variables_tree(self, dummies):
        """(pytree of arrays, per-leaf trainable flags, apply(tree, *xs))."""
        method = self.method
        if self._nnx:
            from flax import nnx

            graphdef, params, rest = nnx.split(self.module, nnx.Param, ...)

            def apply(tree, *xs):
                model = nnx.merge(graphdef, tree, rest)
                fn = getattr(model, method) if method is not None else model
                return fn(*xs)

            leaves = jax.tree_util.tree_leaves(params)
            return params, [True] * len(leaves), apply
        module = self.module
        variables = self._init_variables
        if variables is None:
            variables = module.init(jax.random.key(self.seed), *dummies,
                                    **({"method": method} if method is not None else {}))
        variables = dict(variables)
        flags = []
        for col in sorted(variables):
            flags += [col == "params"] * len(jax.tree_util.tree_leaves(variables[col]))

        def apply(tree, *xs):
            return module.apply(tree, *xs, **({"method": method} if method is not None else {}))

        # sorted(dict) is the flatten order of a dict pytree, so `flags` lines up.
        return variables, flags, apply

    def build(self, input_shape):
        dummies = self._dummy_inputs(input_shape)
        tree, flags, apply_tree = self._variables_tree(dummies)
        with_path, treedef = jax.tree_util.tree_flatten_with_path(tree)

        def apply(leaves, *xs):
            return apply_tree(jax.tree_util.tree_unflatten(treedef, leaves), *xs)

        entry = _Entry(apply, treedef)
        self._params = []
        for (path, value), trainable in zip(with_path, flags):
            value = np.asarray(value)
            dt = _dtypes.as_dtype(value.dtype)
            if dt.is_floating:
                dt = self.variable_dtype
            name = _path_name(path)
            self._params.append(self.add_weight(
                name=name, shape=value.shape, dtype=dt, trainable=trainable,
                initializer=lambda shape, dtype, value=value: constant_ops.constant(
                    value.astype(_dtypes.as_dtype(dtype).np))))
        entry.out_treedef = jax.tree_util.tree_structure(
            jax.eval_shape(apply, [jax.ShapeDtypeStruct(np.shape(v), np.asarray(v).dtype)
                                   for _, v in with_path], *dummies))
        self._entry = entry
        self._module_id = _register(entry, get_default_graph())  # the layer's graph

    def call(self, inputs):
        xs = inputs if isinstance(inputs, (list, tuple)) else [inputs]
        out = flax_call(list(xs), self._params, self._module_id, name="FlaxCall")
        leaves = list(out) if isinstance(out, tuple) else [out]
        if self._entry.out_treedef.num_leaves != len(leaves):  # pragma: no cover
            raise errors.InternalError("FlaxCall returned an unexpected number of outputs")
        return jax.tree_util.tree_unflatten(self._entry.out_treedef, leaves)

    def compute_output_shape(self, input_shape):
        dummies = self._dummy_inputs(input_shape)
        out = jax.eval_shape(lambda *xs: self._entry.apply(
            [jnp.zeros(p.shape.as_list(), p.dtype.np) for p in self._params], *xs), *dummies)
        shapes = [tuple(o.shape) for o in jax.tree_util.tree_leaves(out)]
        return shapes[0] if len(shapes) == 1 else shapes

    def get_config(self):
        raise NotImplementedError(
            f'FlaxLayer "{self.name}" cannot be serialized: its Flax module is Python code. '
            "Save the weights with `save_weights` and rebuild the model in code to load them.")


# ---------------------------------------------------------------- Lambda
class Lambda(Layer):
    """Wraps a function of symbolic tensors as a layer: ``Lambda(lambda x: x ** 2)``.

    The function is called in the layer's `call` on symbolic `ml.Tensor`s, so it must
    build mylib ops (``ml.nn.relu(x)``, ``x * 2``, ``ml.reduce_sum(x, axis=-1)``); it must
    not create weights (write a `Layer` subclass for that).

    Saving: a saved model names the function, never stores its code. `model.save`
    works only when the function is registered with
    ``@ml.saving.register_serializable()`` (and is registered again before
    `load_model`); otherwise saving raises a `ValueError` naming the function.
    Anonymous functions (``lambda``) cannot be registered meaningfully: use a named
    function. `get_config` returns the function object itself, so `clone_model` and
    `from_config` in the same process work with any function.

    Args:
      function: the function ``f(inputs, **arguments)``; it receives ``mask=`` and
        ``training=`` too when its signature has them.
      output_shape: the output shape without the batch dimension (a tuple), or a
        function ``input_shape -> output_shape`` (with the batch dimension), for
        `compute_output_shape`; by default it is inferred by calling the function.
      mask: a tensor-independent mask function ``(inputs, mask) -> mask`` or None.
      arguments: optional dict of keyword arguments passed to `function`.
    """

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: `function` must be callable. Received: "
                            f"function={function!r}")
        self.function = function
        self._output_shape = output_shape
        self.mask_fn = mask
        self.arguments = dict(arguments or {})
        try:
            self._fn_params = set(inspect.signature(function).parameters)
        except (TypeError, ValueError):  # builtins without a signature
            self._fn_params = set()
        self.supports_masking = mask is not None

    def call(self, inputs, mask=None, training=None):
        kwargs = dict(self.arguments)
        if "mask" in self._fn_params:
            kwargs["mask"] = mask
        if "training" in self._fn_params:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs, mask=None):
        if self.mask_fn is None:
            return None
        return self.mask_fn(inputs, mask) if callable(self.mask_fn) else self.mask_fn

    def compute_output_shape(self, input_shape):
        if self._output_shape is None:
            if self._inbound_nodes:
                return self.output_shape
            raise NotImplementedError(
                f'Lambda "{self.name}": pass `output_shape` to compute the output shape '
                "before the layer is called.")
        if callable(self._output_shape):
            return self._output_shape(input_shape)
        batch = input_shape[0][0] if isinstance(input_shape, list) else input_shape[0]
        return (batch,) + tuple(self._output_shape)

    def get_config(self):
        cfg = {**super().get_config(), "function": self.function}
        if self._output_shape is not None:
            cfg["output_shape"] = self._output_shape if not isinstance(
                self._output_shape, (list, tuple)) else list(self._output_shape)
        if self.mask_fn is not None:
            cfg["mask"] = self.mask_fn
        if self.arguments:
            cfg["arguments"] = self.arguments
        return cfg

    @classmethod
    def from_config(cls, config):
        """The layer of `get_config`'s dict. A function (``function``, a callable
        ``output_shape``, ``mask``) saved in a file is a registered name, looked up
        (never code: a Keras 3 file's lambda bytecode is refused with a ValueError)."""
        config = dict(config)
        name = config.get("name")
        config["function"] = _function_by_name(config.get("function"), "function", name)
        for key in ("output_shape", "mask"):
            v = config.get(key)
            if isinstance(v, str) or isinstance(v, dict) and (
                    "registered_name" in v or "class_name" in v):
                config[key] = _function_by_name(v, key, name)
        return cls(**config)


def _function_by_name(fn, what, layer_name):
    """The registered function a saved Lambda config names (`fn` as is when it is not
    a name: a callable in the same process)."""
    if isinstance(fn, dict) and fn.get("class_name") == "__lambda__":
        # Keras 3 stores a lambda's bytecode and runs it under safe_mode=False.
        raise ValueError(
            f"Lambda '{layer_name}': the saved `{what}` is Python bytecode (a `lambda` "
            "saved by Keras). mylib never runs code from a file, with or without "
            "`safe_mode=False`: define the function, register it with "
            "`@ml.saving.register_serializable()` (or pass it in `custom_objects`), or "
            "rebuild the model in code and load its weights.")
    if isinstance(fn, (str, dict)):
        # Resolved by name only; never code from a file.
        name = fn if isinstance(fn, str) else fn.get("registered_name")
        obj = registration.get_registered_object(name)
        if obj is None:
            raise ValueError(
                f"Lambda '{layer_name}': unknown `{what}` function '{name}'. Register it "
                "with `@ml.saving.register_serializable()` before loading.")
        return obj
    return fn
