"""`Layer`, `InputSpec`, `InputLayer` and `Input`: the Keras layer contract on graph ops.

A layer is called on symbolic `Tensor`s (or on numpy / JAX arrays: it then runs its own
graph and returns numpy arrays, see `mylib.layers.array_call`): the first call builds its weights
(`build(input_shape)` -> `add_weight` -> `ml.Variable`s in the inputs' graph), every call
checks the input against `input_spec` and adds the ops of `call` under a name scope of
the layer's name. Each call is recorded as a node (layer, inputs, outputs), which is how
a functional `Model` finds its layers and replays them (for example with
``training=True`` for the training graph).

The ``training`` argument is a Python bool fixed when the ops are built (None means
inference): a model's training step and its inference graph are two forward passes
over the same weights, so inference graphs hold no dropout ops at all. A call without
``training`` takes that of the enclosing layer call (Keras 3's call context), so the
sublayers of a layer whose `call` has no ``training`` argument still train.
"""

from __future__ import annotations

import functools
import inspect
import threading
import weakref

import numpy as np

from mylib._naming import to_snake_case
from mylib.core import dtypes as _dtypes
from mylib.core.compat_args import init_arg_names, unrecognized_kwargs, warn_ignored
from mylib.core.graph import Graph, Tensor, get_default_graph
from mylib.core.ops import array_ops
from mylib.core.tensor_shape import as_shape
from mylib.core.variables import Variable
from mylib.layers import array_call as _array_call
from mylib.layers import policy as _policy

# ---------------------------------------------------------------- names
_name_counters: "weakref.WeakKeyDictionary[Graph, dict]" = weakref.WeakKeyDictionary()


def unique_object_name(base, graph=None):
    """`base`, `base_1`, `base_2`, ... unique within `graph` (Keras's per-graph uids)."""
    g = graph if graph is not None else get_default_graph()
    counts = _name_counters.setdefault(g, {})
    i = counts.get(base, 0)
    counts[base] = i + 1
    return base if i == 0 else f"{base}_{i}"


def reset_uids(graph=None):
    """Forgets the layer names used in `graph` (Keras's `clear_session` does this)."""
    _name_counters.pop(graph if graph is not None else get_default_graph(), None)


# ---------------------------------------------------------------- call effects
class CallEffects:
    """Update ops (`add_update`) and losses (`add_loss`) created by layer calls while
    it is open; `fit` opens one around its ``training=True`` forward pass, so the train
    step runs exactly the updates (BatchNormalization's moving averages) and activity
    losses of that pass, never those of the inference graph or of an older step."""

    def __init__(self):
        self.updates, self.losses = [], []


_effects_stack = []
# Op types of a variable assignment made in a layer's `call` (see
# `Layer._register_call_assigns`).
_ASSIGN_OPS = frozenset({"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"})


class collect_call_effects:  # noqa: N801 - used as a context manager
    """``with collect_call_effects() as fx:`` gathers the updates and losses of the
    layer calls made inside it in ``fx.updates`` / ``fx.losses``."""

    def __enter__(self):
        self.fx = CallEffects()
        _effects_stack.append(self.fx)
        return self.fx

    def __exit__(self, *exc):
        _effects_stack.remove(self.fx)


# ---------------------------------------------------------------- training context
_context = threading.local()


def current_training():
    """The ``training`` value of the innermost enclosing layer call (None outside any
    call, or where no enclosing call had one)."""
    stack = getattr(_context, "training", None)
    return stack[-1] if stack else None


class training_context:  # noqa: N801 - used as a context manager
    """``with training_context(value):`` layer calls made inside it that are given no
    ``training`` argument run with ``training=value`` (Keras 3's call context: the
    training mode of an outer `Layer.__call__` reaches the layers its `call` calls).
    ``value=None`` keeps the enclosing value."""

    def __init__(self, value):
        self.value = value

    def __enter__(self):
        stack = getattr(_context, "training", None)
        if stack is None:
            stack = _context.training = []
        stack.append(self.value if self.value is not None else current_training())
        return self

    def __exit__(self, *exc):
        _context.training.pop()


# ---------------------------------------------------------------- node history
class Node:
    """One call of a layer: `inputs` (the structure passed first), `outputs` (a
    structure), and the call's further positional `args` and keyword `kwargs` (which
    may hold tensors too, such as an RNN's ``initial_state=[h, c]``)."""

    __slots__ = ("layer", "inputs", "outputs", "args", "kwargs")

    def __init__(self, layer, inputs, outputs, args, kwargs):
        self.layer, self.inputs, self.outputs = layer, inputs, outputs
        self.args, self.kwargs = args, kwargs

    @property
    def input_tensors(self):
        """Every tensor the call took that a functional model must compute first: those
        of `inputs`, then those made by layers in `args` and `kwargs` (tensors from no
        layer there are constants of the call)."""
        extra = [t for t in flatten([list(self.args), self.kwargs])
                 if isinstance(t, Tensor) and keras_history(t) is not None]
        return flatten(self.inputs) + extra if extra else flatten(self.inputs)

    def map_call(self, fn):
        """``(inputs, args, kwargs)`` of this call with each tensor of `input_tensors`
        replaced by ``fn(tensor)`` (how a model replays the call on new tensors)."""
        ids = {id(t) for t in self.input_tensors}

        def sub(x):
            return fn(x) if isinstance(x, Tensor) and id(x) in ids else x

        inputs = pack_like(self.inputs, [sub(t) for t in flatten(self.inputs)])
        rest = [list(self.args), self.kwargs]
        flat_rest = flatten(rest)
        if any(isinstance(x, Tensor) and id(x) in ids for x in flat_rest):
            args, kwargs = pack_like(rest, [sub(x) for x in flat_rest])
            return inputs, tuple(args), kwargs
        return inputs, tuple(self.args), dict(self.kwargs)

    @property
    def output_tensors(self):
        return flatten(self.outputs)


# A tensor's Keras history, (Node, index in the node's flat outputs), and its Keras
# mask (a bool Tensor, e.g. [batch, time], set by layers that produce one such as
# `Embedding(mask_zero=True)` and propagated by `supports_masking` layers) live on the
# tensor (`_keras_history`, `_keras_mask`), as in TensorFlow: a global table keyed by
# tensor would keep every layer alive (the node it maps to holds the tensor).


def get_mask(t):
    """The Keras mask of `t` (None if it has none)."""
    return t._keras_mask if isinstance(t, Tensor) else None


def keras_history(t):
    """(Node, index) that produced `t`, or None for tensors not made by a layer."""
    return t._keras_history if isinstance(t, Tensor) else None


def flatten(struct):
    if isinstance(struct, dict):
        return [x for k in sorted(struct) for x in flatten(struct[k])]
    if isinstance(struct, (list, tuple)):
        return [x for s in struct for x in flatten(s)]
    return [struct]


def pack_like(struct, flat):
    """Inverse of `flatten`: rebuilds `struct`'s nesting from a flat iterable."""
    it = iter(flat)

    def build(s):
        if isinstance(s, dict):
            out = {k: build(s[k]) for k in sorted(s)}
            return {k: out[k] for k in s}
        if isinstance(s, (list, tuple)):
            return type(s)(build(x) for x in s)
        return next(it)

    return build(struct)


def _shape_tuple(t):
    s = t.shape
    return None if s.rank is None else tuple(s.as_list())


def _fmt_shape(shape):
    if shape is None:
        return "<unknown>"
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


# ---------------------------------------------------------------- InputSpec
class InputSpec:
    """What a layer accepts (Keras's `InputSpec`): `dtype`, `shape` (None entries are
    free), `ndim`, `max_ndim`, `min_ndim`, `axes` ({axis: size})."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None):
        self.dtype = None if dtype is None else _dtypes.as_dtype(dtype)
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.axes = dict(axes or {})

    def __repr__(self):
        return (f"InputSpec(dtype={self.dtype}, shape={self.shape}, ndim={self.ndim}, "
                f"max_ndim={self.max_ndim}, min_ndim={self.min_ndim}, axes={self.axes})")


def assert_input_compatibility(spec, inputs, layer_name):
    """Raises ValueError naming the layer, what it expects and what it received."""
    specs = spec if isinstance(spec, (list, tuple)) else [spec]
    flat = flatten(inputs)
    if len(specs) != len(flat):
        if len(specs) == 1:
            specs = specs * len(flat)
        else:
            raise ValueError(f'Layer "{layer_name}" expects {len(specs)} input(s), but it '
                             f"received {len(flat)} input tensors.")
    for i, (s, x) in enumerate(zip(specs, flat)):
        if s is None:
            continue
        shape = _shape_tuple(x)
        head = f'Input {i} of layer "{layer_name}" is incompatible with the layer: '
        if s.dtype is not None and x.dtype != s.dtype:
            raise ValueError(head + f"expected dtype={s.dtype.name}, found "
                             f"dtype={x.dtype.name}")
        if shape is None:
            continue
        nd = len(shape)
        if s.ndim is not None and nd != s.ndim:
            raise ValueError(head + f"expected ndim={s.ndim}, found ndim={nd}. Full shape "
                             f"received: {_fmt_shape(shape)}")
        if s.max_ndim is not None and nd > s.max_ndim:
            raise ValueError(head + f"expected max_ndim={s.max_ndim}, found ndim={nd}. "
                             f"Full shape received: {_fmt_shape(shape)}")
        if s.min_ndim is not None and nd < s.min_ndim:
            raise ValueError(head + f"expected min_ndim={s.min_ndim}, found ndim={nd}. "
                             f"Full shape received: {_fmt_shape(shape)}")
        for axis, value in s.axes.items():
            if value is None:
                continue
            if not -nd <= axis < nd or shape[axis] not in (value, None):
                got = shape[axis] if -nd <= axis < nd else "<missing>"
                raise ValueError(head + f"expected axis {axis} of input shape to have value "
                                 f"{value}, but received input with shape {_fmt_shape(shape)} "
                                 f"(axis {axis} is {got})")
        if s.shape is not None:
            for a, b in zip(s.shape, shape):
                if a is not None and b is not None and a != b:
                    raise ValueError(head + f"expected shape={_fmt_shape(s.shape)}, found "
                                     f"shape={_fmt_shape(shape)}")


# ---------------------------------------------------------------- Layer

def _marks_built(build):
    @functools.wraps(build)
    def build_and_mark(self, *args, **kwargs):
        out = build(self, *args, **kwargs)
        self.built = True
        return out

    build_and_mark._marks_built = True
    return build_and_mark

class Layer:
    """Base class of layers.

    Subclasses set attributes in `__init__`, create weights in `build(input_shape)` with
    `add_weight`, and compute outputs from symbolic tensors in
    `call(inputs, training=None)`.

    Args:
      trainable: whether the layer's weights are updated by `fit`. Settable later:
        setting it sets it on every sublayer too (as Keras 3), so False freezes the
        weights of the layer and its sublayers and puts their BatchNormalization in
        inference mode, and True unfreezes them all.
      name: unique name; default the snake-cased class name, made unique per graph
        (`dense`, `dense_1`, ...).
      dtype: a dtype or a `mylib.mixed_precision` policy name (default: the global
        policy, float32 unless set). ``"mixed_bfloat16"`` / ``"mixed_float16"`` make float32
        weights (`variable_dtype`) and compute in the low type (`dtype` =
        `compute_dtype`): floating inputs are cast, and trainable float weights read in
        `call` are cast (see `mylib.layers.policy`).
      input_shape / batch_input_shape / batch_size / input_dim: as Keras, for the first
        layer of a `Sequential` (makes the model build right away).
      activity_regularizer: optional regularizer of the layer's outputs; its value is
        added to the model's losses (as Keras 3).
      autocast: with a mixed policy, reads of the layer's float weights inside `call`
        are cast to the compute dtype (default True); False reads them in their own
        dtype (as Keras 3).

    Raises:
      TypeError: an unknown keyword argument, named in Keras 3's words
        (``Unrecognized keyword arguments passed to Dense: {'foo': 1}``).
    """

    supports_masking = False  # True: the inputs' mask passes through to the outputs

    def __init__(self, trainable=True, name=None, dtype=None, input_shape=None,
                 batch_input_shape=None, batch_size=None, input_dim=None,
                 activity_regularizer=None, autocast=True, **kwargs):
        if kwargs:
            raise unrecognized_kwargs(type(self).__name__, kwargs, init_arg_names(type(self)))
        object.__setattr__(self, "_layers", [])
        if activity_regularizer is not None:
            from mylib.layers import regularizers

            self.activity_regularizer = regularizers.get(activity_regularizer)
        self.autocast = bool(autocast)
        self._trainable = bool(trainable)
        self.name = name or unique_object_name(to_snake_case(type(self).__name__))
        # `dtype`: a dtype or a policy name (None: the global policy). `self.dtype` is the
        # dtype `call` computes in (what layers cast their inputs to; Keras 3 would say
        # `compute_dtype`); weights are made in `variable_dtype`.
        self._dtype_policy = _policy.get(dtype)
        self.dtype = _dtypes.as_dtype(self._dtype_policy.compute_dtype)
        self.built = False
        self.input_spec = None
        self._weights_own = []
        self._losses = []
        self._call_losses = []  # add_loss outside `collect_call_effects` (inference calls)
        self._updates = []
        self._inbound_nodes = []
        self._build_input_shape = None
        if input_dim is not None and input_shape is None:
            input_shape = (input_dim,)
        if batch_input_shape is not None:
            self._batch_input_shape = tuple(batch_input_shape)
        elif input_shape is not None:
            self._batch_input_shape = (batch_size,) + tuple(input_shape)
        else:
            self._batch_input_shape = None

    # --- tracking sublayers (subclassed layers and models) ---
    def __setattr__(self, key, value):
        if not key.startswith("_") or key == "_layers":
            items = value if isinstance(value, (list, tuple)) else [value]
            layers = self.__dict__.get("_layers")
            if layers is not None:
                for v in items:
                    if isinstance(v, Layer) and v is not self and \
                            not any(v is x for x in layers):
                        layers.append(v)
        object.__setattr__(self, key, value)

    # --- the contract ---
    def build(self, input_shape):
        """Creates the weights; `input_shape` is a tuple (None for unknown dims), or a
        list of them for several inputs."""
        self.built = True

    def call(self, inputs, training=None):
        """The forward computation on symbolic tensors."""
        return inputs

    def compute_output_shape(self, input_shape):
        raise NotImplementedError(f"{type(self).__name__}.compute_output_shape")

    def __call__(self, inputs, *args, **kwargs):
        flat = flatten(inputs)
        if flat and not any(isinstance(x, Tensor) for x in flat) and \
                all(_array_call.is_array(x) for x in flat):
            # Eager-style call on numpy / JAX arrays: runs the layer's own graph
            # (see mylib.layers.array_call); returns numpy arrays.
            return _array_call.call_on_arrays(self, inputs, args, kwargs)
        if not flat or not all(isinstance(x, Tensor) for x in flat):
            kinds = sorted({type(x).__name__ for x in flat})
            raise TypeError(
                f'Layer "{self.name}" must be called on symbolic ml.Tensors (from '
                f"ml.layers.Input or another layer) or on numpy / JAX arrays. Received: "
                f"{kinds}.")
        g = flat[0].graph
        # Collectable: the ops live as long as something uses them (this layer's
        # nodes, a model, the user's tensors), then leave the graph.
        with g.as_default(), self._call_name_scope(g), self._call_collectable(g):
            if not self.built:
                shapes = [_shape_tuple(x) for x in flat]
                shape = pack_like(inputs, shapes) if not isinstance(inputs, Tensor) else shapes[0]
                if self.input_spec is not None:
                    assert_input_compatibility(self.input_spec, inputs, self.name)
                self.build(shape)
                self.built = True
                self._build_input_shape = shape
            if self.input_spec is not None:
                assert_input_compatibility(self.input_spec, inputs, self.name)
            if "training" in kwargs and not self._accepts("training"):
                training = kwargs.pop("training")
            else:
                training = kwargs.get("training")
            # Keras 3's call context: no `training` given -> the enclosing call's, else
            # the default of this layer's `call`; the value reaches the layers `call`
            # calls in turn. It is not recorded in the node (a replay sets its own).
            has_training, default = self._training_arg()
            if training is None:
                training = current_training()
            if training is None:
                training = default
            # Masks: the inputs' masks go to `call(mask=...)` when it takes one (not
            # recorded in the node, so a replay recomputes them from its own inputs).
            in_masks = [t._keras_mask for t in flat]
            prev_mask = kwargs.get("mask")
            if prev_mask is None and any(m is not None for m in in_masks):
                prev_mask = in_masks[0] if isinstance(inputs, Tensor) else \
                    pack_like(inputs, in_masks)
            call_kwargs = kwargs
            if prev_mask is not None and "mask" not in kwargs and self._accepts_mask():
                call_kwargs = {**kwargs, "mask": prev_mask}
            if has_training and training is not None and kwargs.get("training") is None:
                call_kwargs = {**call_kwargs, "training": training}
            with _policy.autocast_scope(self.compute_dtype if getattr(self, "autocast", True)
                                        else None), training_context(training), \
                    g._recording_ops(_ASSIGN_OPS) as assigns:
                outputs = self.call(self._autocast_inputs(inputs), *args, **call_kwargs)
            self._register_call_assigns(g, assigns)
            act_reg = getattr(self, "activity_regularizer", None)
            if act_reg is not None:
                self._add_activity_loss(act_reg, outputs)
            in_ids = {id(t) for t in flat + [x for x in flatten([list(args), kwargs])
                                              if isinstance(x, Tensor)]}
            if any(id(t) in in_ids for t in flatten(outputs)):
                # A layer that passes a tensor through still gets an output of its own,
                # so the node graph stays acyclic.
                outs = [array_ops.identity(t) if id(t) in in_ids else t
                        for t in flatten(outputs)]
                outputs = outs[0] if isinstance(outputs, Tensor) else pack_like(outputs, outs)
            if self.supports_masking or type(self).compute_mask is not Layer.compute_mask:
                _set_masks(outputs, self.compute_mask(inputs, prev_mask))
        node = Node(self, inputs, outputs, args, kwargs)
        self._inbound_nodes.append(node)
        for i, t in enumerate(flatten(outputs)):
            if isinstance(t, Tensor):
                t._keras_history = (node, i)
        return outputs

    def _register_call_assigns(self, g, assigns):
        """Registers the variable assignments `call` made (`assigns`: ``v.assign_add(...)``
        in `call`) as updates, as if by `add_update`: Keras 3 applies a layer's state
        changes at every step, and a graph step runs only the updates it knows of."""
        if not assigns:
            return
        from mylib.core.graph import GraphKeys

        known = {id(op) for op in g.get_collection(GraphKeys.UPDATE_OPS)}
        for op in assigns:
            if id(op) not in known:
                self.add_update(op)
                known.add(id(op))

    def _call_collectable(self, g):
        # The call's ops are collectable (freed with the layer and whatever uses them);
        # TF1-style layers keep theirs as long as the graph, as TensorFlow 1 does.
        return g.collectable()

    def _call_name_scope(self, g):
        # The name scope of the call's ops; TF1-style layers (mylib.layers.tf1_functions)
        # re-enter their variable scope's name scope instead.
        return g.name_scope(self.name)

    def _accepts_mask(self):
        cls = type(self)
        if "_call_has_mask" not in cls.__dict__:
            cls._call_has_mask = "mask" in inspect.signature(cls.call).parameters
        return cls._call_has_mask

    def compute_mask(self, inputs, mask=None):
        """The mask of the outputs: `mask` passed through when `supports_masking`, else
        None. Layers that make or change masks (`Embedding`, RNNs) override it; called
        on numpy / JAX arrays, an override returns numpy arrays, as Keras 3's."""
        return mask if self.supports_masking else None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # Keras 3 users call `layer.compute_mask(batch)` on arrays (the masking guide):
        # each class's own override also takes arrays (see array_call.mask_on_arrays).
        own = cls.__dict__.get("compute_mask")
        if own is not None and not getattr(own, "_mask_on_arrays", False):
            cls.compute_mask = _array_call.mask_on_arrays(own)
        # As Keras 3, a layer whose `build` ran is built, however build was reached: a
        # parent that builds a sublayer itself (``self.conv.build(shape)``, keras-io's
        # PixelCNN) must not see that sublayer build again, with fresh weights, when
        # it is first called.
        own = cls.__dict__.get("build")
        if own is not None and not getattr(own, "_marks_built", False):
            cls.build = _marks_built(own)

    # --- dtype policy (mylib.mixed_precision) ---
    @property
    def dtype_policy(self):
        return self._dtype_policy

    @property
    def compute_dtype(self):
        """`DType` of the layer's computations and outputs (same as `dtype`)."""
        return self.dtype

    @property
    def variable_dtype(self):
        """`DType` of the layer's weights (`add_weight`'s default)."""
        return _dtypes.as_dtype(self._dtype_policy.variable_dtype)

    def _autocast_inputs(self, inputs):
        # Floating inputs take the compute dtype when either side is float16/bfloat16
        # (float32/float64 mixes are left to the layer, as before policies existed).
        want = self.compute_dtype
        flat = flatten(inputs)
        if not want.is_floating or all(
                not x.dtype.is_floating or x.dtype == want or not (
                    _policy.is_low_precision(x.dtype) or _policy.is_low_precision(want))
                for x in flat):
            return inputs
        from mylib.core.ops import math_ops

        cast = [math_ops.cast(x, want) if x.dtype.is_floating and x.dtype != want else x
                for x in flat]
        return cast[0] if isinstance(inputs, Tensor) else pack_like(inputs, cast)

    def _training_arg(self):
        """(whether `call` names a ``training`` argument, its default value)."""
        cls = type(self)
        if "_call_training_arg" not in cls.__dict__:
            p = inspect.signature(cls.call).parameters.get("training")
            cls._call_training_arg = (
                p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY),
                None if p is None or p.default is p.empty else p.default)
        return cls._call_training_arg

    def _accepts(self, arg):
        cls = type(self)
        cache = cls.__dict__.get("_call_args_cache")
        if cache is None:
            params = inspect.signature(cls.call).parameters
            cache = {"*": any(p.kind is p.VAR_KEYWORD for p in params.values()),
                     "names": set(params)}
            setattr(cls, "_call_args_cache", cache)
        return arg in cache["names"] or cache["*"]

    # --- weights ---
    def add_weight(self, name=None, shape=None, initializer=None, trainable=True, dtype=None,
                   regularizer=None, constraint=None, autocast=True, aggregation=None,
                   overwrite_with_gradient=False):
        """Creates a weight `ml.Variable` whose initial value is computed in the graph by
        `initializer` (default glorot_uniform for floats, zeros otherwise).

        Keras 3's positional order, ``add_weight(shape, initializer, ...)``, is accepted
        too: a first argument that is a tuple or list is the shape (and a second one the
        initializer). `aggregation` and `overwrite_with_gradient` are accepted for Keras
        3 compatibility and ignored (`autocast` follows the layer's policy).

        Returns:
          the `ml.Variable`, named ``<layer name>/<name>``.
        """
        from mylib.layers import constraints, initializers, regularizers

        if isinstance(name, (tuple, list)):  # Keras 3: add_weight(shape, initializer, ...)
            if shape is not None and initializer is None:
                initializer = shape
            name, shape = None, name

        dtype = _dtypes.as_dtype(dtype) if dtype is not None else self.variable_dtype
        shape = tuple(int(d) for d in as_shape(shape or ()).as_list())
        if any(d is None for d in shape):
            raise ValueError(f'Layer "{self.name}": weight "{name}" needs a fully known '
                             f"shape. Received: shape={shape}")
        if initializer is None:
            initializer = "glorot_uniform" if dtype.is_floating else "zeros"
        init = initializers.get(initializer)
        constraint = constraints.get(constraint)  # names ("non_neg") and configs too
        with get_default_graph().collectable():  # freed with the layer
            v = Variable(lambda: init(shape, dtype=dtype), trainable=trainable,
                         name=name or "weight", dtype=dtype, constraint=constraint)
        v._keras_trainable = bool(trainable)
        if trainable and dtype.is_floating and self._dtype_policy.is_mixed:
            _policy.enable_autocast(v)  # reads in `call` give the compute dtype
        self._weights_own.append(v)
        reg = regularizers.get(regularizer)
        if reg is not None:
            with v.graph.name_scope(f"{name}/Regularizer"), v.graph.collectable():
                self._losses.append(reg(v.value()))
        return v

    def _flat_layers(self):
        seen, out = set(), []
        for layer in self._layers:
            if id(layer) not in seen:
                seen.add(id(layer))
                out.append(layer)
        return out

    @property
    def weights(self):
        """All weights: this layer's, then its sublayers' (each once)."""
        return _dedupe(self._weights_own + [w for l in self._flat_layers() for w in l.weights])

    variables = weights

    @property
    def trainable_weights(self):
        if not self._trainable:
            return []
        own = [w for w in self._weights_own if w._keras_trainable]
        return _dedupe(own + [w for l in self._flat_layers() for w in l.trainable_weights])

    trainable_variables = trainable_weights

    @property
    def non_trainable_weights(self):
        tw = set(id(w) for w in self.trainable_weights)
        return [w for w in self.weights if id(w) not in tw]

    non_trainable_variables = non_trainable_weights

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        # As Keras 3: the value goes to every sublayer too, so a frozen model's
        # BatchNormalization runs in inference mode in `fit` and its own
        # `trainable_weights` are empty; True unfreezes them all again.
        value = bool(value)
        todo, seen = [self], set()
        while todo:  # each layer once, even where sublayers refer to each other
            layer = todo.pop()
            if id(layer) not in seen:
                seen.add(id(layer))
                layer._trainable = value
                todo.extend(layer._flat_layers())

    @property
    def losses(self):
        """Regularization losses (scalar tensors) of this layer and its sublayers: weight
        regularizers, and losses added by calls outside `fit`'s training pass (activity
        regularizers of the inference graph)."""
        return self._losses + self._call_losses + \
            [x for l in self._flat_layers() for x in l.losses]

    def _weight_losses(self):
        """Only the weight-regularizer losses (what the train step adds to the losses
        it collects from its own forward pass)."""
        return self._losses + [x for l in self._flat_layers() for x in l._weight_losses()]

    def add_loss(self, loss):
        """Adds a scalar loss tensor made in `call` (activity regularization) to the
        model's total loss."""
        if _effects_stack:
            _effects_stack[-1].losses.append(loss)
        else:
            self._call_losses.append(loss)

    def add_update(self, op):
        """Registers a state-update op made in `call` (e.g. BatchNormalization's moving
        averages); `fit`'s train step runs the updates of its training pass. Also added
        to the graph's ``UPDATE_OPS`` collection, for TF1-style loops."""
        from mylib.core.graph import GraphKeys

        if _effects_stack:
            _effects_stack[-1].updates.append(op)
        self._updates.append(op)
        op.graph.add_to_collection(GraphKeys.UPDATE_OPS, op)

    def _add_activity_loss(self, reg, outputs):
        # Keras 3: regularizer(output) divided by the batch size, per output.
        from mylib.core.ops import math_ops

        for out in flatten(outputs):
            if not isinstance(out, Tensor):
                continue
            with out.graph.name_scope("ActivityRegularizer"):
                loss = reg(out)
                if out.shape.rank:
                    n = math_ops.cast(array_ops.shape(out)[0], loss.dtype)
                    loss = loss / math_ops.maximum(n, 1.0)
            self.add_loss(loss)

    def count_params(self):
        if not self.built:
            raise ValueError(f'You tried to call `count_params` on layer "{self.name}", but '
                             "the layer isn't built.")
        return int(sum(int(np.prod(w.shape.as_list())) for w in self.weights))

    # --- values (through the model's session) ---
    def get_weights(self):
        from mylib.runtime import keras_session as backend

        return backend.get_values(self.weights)

    def set_weights(self, weights):
        from mylib.runtime import keras_session as backend

        backend.set_values(self.weights, weights, owner=f'Layer "{self.name}"')

    # --- shapes of the first call ---
    def _first_node(self, what):
        if not self._inbound_nodes:
            raise AttributeError(f'Layer "{self.name}" has never been called and thus has '
                                 f"no defined {what}.")
        return self._inbound_nodes[0]

    @property
    def input(self):
        return self._first_node("input").inputs

    @property
    def output(self):
        return self._first_node("output").outputs

    @property
    def output_shape(self):
        out = self._first_node("output shape").outputs
        shapes = [_shape_tuple(t) for t in flatten(out)]
        return shapes[0] if isinstance(out, Tensor) else pack_like(out, shapes)

    @property
    def input_shape(self):
        inp = self._first_node("input shape").inputs
        shapes = [_shape_tuple(t) for t in flatten(inp)]
        return shapes[0] if isinstance(inp, Tensor) else pack_like(inp, shapes)

    # --- config ---
    def get_config(self):
        cfg = {"name": self.name, "trainable": self.trainable,
               "dtype": self._dtype_policy.name}
        if not getattr(self, "autocast", True):
            cfg["autocast"] = False
        if self._batch_input_shape is not None:
            cfg["batch_input_shape"] = self._batch_input_shape
        act_reg = getattr(self, "activity_regularizer", None)
        if act_reg is not None:
            from mylib.layers import regularizers

            cfg["activity_regularizer"] = regularizers.serialize(act_reg)
        return cfg

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


def _set_masks(outputs, masks):
    if masks is None:
        return
    if isinstance(outputs, Tensor):
        if isinstance(masks, Tensor):
            outputs._keras_mask = masks
        return
    outs = flatten(outputs)
    ms = flatten(masks) if isinstance(masks, (list, tuple, dict)) else [masks] * len(outs)
    for t, m in zip(outs, ms):
        if isinstance(t, Tensor) and isinstance(m, Tensor):
            t._keras_mask = m


def _dedupe(ws):
    seen, out = set(), []
    for w in ws:
        if id(w) not in seen:
            seen.add(id(w))
            out.append(w)
    return out


# ---------------------------------------------------------------- Input
class InputLayer(Layer):
    """The layer behind `Input`: owns a placeholder.

    `sparse` and `ragged` are accepted for Keras compatibility and ignored (True warns
    once): the placeholder is dense, so feed dense arrays. `batch_shape` is Keras 3's
    name for `batch_input_shape` (configs Keras 3 writes load); `optional=True` (an
    input fed None) raises NotImplementedError.
    """

    def __init__(self, input_shape=None, batch_size=None, dtype=None, input_tensor=None,
                 name=None, batch_input_shape=None, sparse=False, ragged=False,
                 batch_shape=None, optional=False):
        name = name or unique_object_name("input")
        if isinstance(dtype, dict):  # Keras 3's serialized DTypePolicy
            dtype = (dtype.get("config") or {}).get("name", dtype)
        super().__init__(name=name, dtype=dtype)
        if optional:
            raise NotImplementedError(
                f'InputLayer "{name}": optional inputs (fed None) are not supported; '
                "the input placeholder always needs a value. Received: optional=True")
        if batch_input_shape is None and batch_shape is not None:  # Keras 3's name
            batch_input_shape = batch_shape
        for arg, value in (("sparse", sparse), ("ragged", ragged)):
            if value:
                warn_ignored("InputLayer", arg, "the input placeholder is dense; feed "
                             "dense arrays.")
        if input_tensor is None:
            if batch_input_shape is None:
                if input_shape is None:
                    raise ValueError("Input needs a `shape` (without the batch dimension). "
                                     "Received: shape=None")
                batch_input_shape = (batch_size,) + tuple(input_shape)
            self._batch_input_shape = tuple(batch_input_shape)
            g = get_default_graph()
            with g.as_default(), g.collectable():
                input_tensor = array_ops.placeholder(self.dtype, self._batch_input_shape,
                                                     name=name)
        else:
            self._batch_input_shape = _shape_tuple(input_tensor)
        self.built = True
        node = Node(self, input_tensor, input_tensor, (), {})
        self._inbound_nodes.append(node)
        input_tensor._keras_history = (node, 0)
        self.input_tensor = input_tensor

    def get_config(self):
        return {"batch_input_shape": self._batch_input_shape, "dtype": self.dtype.name,
                "name": self.name}


def Input(shape=None, batch_size=None, dtype="float32", name=None, tensor=None,  # noqa: N802
          batch_shape=None):
    """A symbolic input: a placeholder of shape ``(batch_size,) + shape``.

    Args:
      shape: the shape of one sample, without the batch dimension (`None` entries for
        unknown sizes).
      batch_size: optional fixed batch size.
      dtype: dtype of the fed data (default float32).
      name: the placeholder's name (unique per graph; default ``input``, ``input_1``).
      tensor: wrap an existing placeholder instead of creating one.
    Returns:
      a `Tensor` to call layers on and to pass to `Model(inputs, outputs)`.
    """
    if shape is not None and isinstance(shape, int):
        shape = (shape,)
    layer = InputLayer(input_shape=shape, batch_size=batch_size, dtype=dtype, name=name,
                       input_tensor=tensor, batch_input_shape=batch_shape)
    return layer.input_tensor
