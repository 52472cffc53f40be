"""Keras 3's custom training pattern on mylib's graph: `Model.train_step` /
`test_step` / `predict_step` overridden by the user, `compute_loss`,
`compute_metrics`, the loss tracker and the compiled-metrics container.

The user's step is called ONCE per signature, on symbolic batches (placeholders), to
build the step graph; `fit` / `evaluate` then run that graph each step. Every state
change the step makes while being built (metric ``update_state``, optimizer
``apply`` / ``apply_gradients``, ``assign``, BatchNormalization's updates, prints) is
gathered into the step op, and runs in the order written (mylib orders effects of one
step by data and control edges, then creation order). The returned dict of logs
(tensors, or nested dicts of them such as a metric container's result) is fetched
after them.

Gradients: ``ml.gradients(loss, self.trainable_variables)`` replaces a backend's tape
(`tf.GradientTape`, `jax.grad`, `loss.backward()`).
"""

from __future__ import annotations

import inspect

from mylib import errors as ml_errors
from mylib.core import dtypes as _dtypes
from mylib.core.graph import GraphKeys, Tensor
from mylib.core.op_registry import convert_to_tensor, get_op_def
from mylib.core.ops import array_ops, math_ops, reduction_ops
from mylib.layers.base import collect_call_effects, flatten, pack_like
from mylib.models.step import metric_label

# Stateful op types that read or create state, or draw random numbers: they run when a
# value needs them, and are not effects a step must run on its own.
_NOT_EFFECTS = frozenset((
    "Placeholder", "VarHandleOp", "ReadVariableOp", "ReadOrInitialValue",
    "VarIsInitializedOp", "ReportUninitializedVariables", "ResourceGather",
    "RandomStandardNormal", "RandomUniform", "RandomUniformInt", "TruncatedNormal",
    "Multinomial", "RandomShuffle", "LogUniformCandidateSampler",
    "UniformCandidateSampler", "FIFOQueueV2", "PaddingFIFOQueueV2", "PriorityQueueV2",
    "RandomShuffleQueueV2"))

STEP_METHODS = ("train_step", "test_step", "predict_step")


def overrides(model, method):
    """Whether `model`'s class overrides `Model.<method>`."""
    from mylib.models.training import Model

    return getattr(type(model), method) is not getattr(Model, method)


def uses_custom_steps(model):
    """Whether `fit` / `evaluate` run the model's (possibly inherited) `train_step` /
    `test_step` instead of mylib's built-in step graph: when its class overrides
    either, or `compute_loss` / `compute_metrics` (Keras 3's hooks, which the default
    steps call)."""
    return any(overrides(model, m) for m in ("train_step", "test_step", "compute_loss",
                                             "compute_metrics"))


def unpack_x_y_sample_weight(data):
    """``(x, y, sample_weight)`` of a batch (Keras's `unpack_x_y_sample_weight`)."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be (x,), (x, y) or (x, y, sample_weight). "
                     f"Received a tuple of {len(data)} elements.")


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    if y is None:
        return (x,) if isinstance(x, (list, tuple)) else x
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


# ------------------------------------------------------------ trackers
def loss_tracker(model):
    """The model's ``Mean(name="loss")`` tracker (Keras 3's ``_loss_tracker``)."""
    t = model.__dict__.get("_keras_loss_tracker")
    if t is None:
        from mylib import metrics as M

        t = M.Mean(name="loss")
        object.__setattr__(model, "_keras_loss_tracker", t)
    return t


class CompileMetrics:
    """The metrics given to ``compile(metrics=..., weighted_metrics=...)`` as one
    container (Keras 3's ``compile_metrics``): `update_state(y_true, y_pred,
    sample_weight)` updates each (weighted ones with the sample weights), `result()`
    is a dict of their results keyed by name. Created on the first update, from the
    shapes of the targets and predictions (``"accuracy"`` picks its kind then)."""

    name = "compile_metrics"

    def __init__(self, model):
        self._model = model
        self._entries = None  # [(output index, metric, weighted, label)]

    @property
    def metrics(self):
        return [e[1] for e in self._entries or []]

    @property
    def variables(self):
        return [v for m in self.metrics for v in m.variables]

    def _build(self, ys, yps):
        from mylib import metrics as M

        args = self._model._compile_args
        n = len(yps)
        names = _output_names(self._model, n)
        losses = _per_output_spec(self._model, args.get("loss"), n, "loss")
        entries, used = [], {}
        for weighted, spec in ((False, args.get("metrics")), (True,
                                                              args.get("weighted_metrics"))):
            for i, specs in enumerate(_per_output_metrics(self._model, spec or [], n)):
                for m in specs:
                    if m is None:
                        continue
                    if isinstance(m, str) and m in ("accuracy", "acc"):
                        obj = M.resolve_accuracy(ys[i], yps[i], loss=losses[i], name=m)
                    elif isinstance(m, str) or (callable(m) and not hasattr(m, "update_state")):
                        obj = M.get(m)
                    else:
                        obj = m
                    label = metric_label(used, m if isinstance(m, str) else obj.name,
                                         names[i] if n > 1 else None, weighted)
                    entries.append((i, obj, weighted, label))
        self._entries = entries

    def update_state(self, y_true, y_pred, sample_weight=None):
        """The op updating every compiled metric with this batch."""
        from mylib.models.step import _align

        yps = [_as_float32(convert_to_tensor(p)) for p in flatten(y_pred)]
        ys = [convert_to_tensor(t) for t in flatten(y_true)]
        if len(ys) != len(yps):
            raise ValueError(f"compiled metrics: {len(ys)} targets for {len(yps)} "
                             "predictions; pass one target per model output.")
        if self._entries is None:
            self._build(ys, yps)
        losses = _per_output_spec(self._model, self._model._compile_args.get("loss"),
                                  len(yps), "loss")
        ops = []
        g = yps[0].graph if yps else None
        for i, obj, weighted, _ in self._entries:
            yt = _align(ys[i], yps[i], losses[i])
            ops.append(obj.update_state(yt, yps[i], sample_weight=sample_weight if weighted
                                        else None))
        if g is None:
            return None
        with g.as_default():
            return array_ops.group(*ops, name="compile_metrics_update")

    def result(self):
        return {label: obj.result() for _, obj, _, label in self._entries or []}

    def reset_state(self):
        ops = [m.reset_state() for m in self.metrics]
        return array_ops.group(*ops, name="compile_metrics_reset") if ops else None

    def __repr__(self):
        return f"<CompileMetrics {[e[3] for e in self._entries or []]}>"


def compile_metrics(model):
    """The model's `CompileMetrics` container (None when compile named no metrics)."""
    args = getattr(model, "_compile_args", None) or {}
    if not args.get("metrics") and not args.get("weighted_metrics"):
        return None
    c = model.__dict__.get("_keras_compile_metrics")
    if c is None:
        c = CompileMetrics(model)
        object.__setattr__(model, "_keras_compile_metrics", c)
    return c


def model_metrics(model):
    """Keras 3's ``model.metrics``: the loss tracker and the compiled-metrics container
    (once compiled), then every metric object held in an attribute of the model."""
    from mylib.metrics import Metric

    out = []
    if getattr(model, "compiled", False):
        out.append(loss_tracker(model))
        c = compile_metrics(model)
        if c is not None:
            out.append(c)
    for k, v in list(model.__dict__.items()):
        if k in ("_keras_loss_tracker", "_keras_compile_metrics"):
            continue
        if isinstance(v, Metric) and not any(v is o for o in out):
            out.append(v)
    return out


def metric_objects(metrics):
    """The metric objects in `metrics` (containers expanded)."""
    out = []
    for m in metrics:
        out.extend(m.metrics if isinstance(m, CompileMetrics) else [m])
    return out


# ------------------------------------------------------------ losses
def _as_float32(t):
    if t.dtype in (_dtypes.float16, _dtypes.bfloat16):
        return math_ops.cast(t, "float32")
    return t


def _output_names(model, n):
    names = list(getattr(model, "output_names", None) or [])
    return names if len(names) == n else [f"output_{i + 1}" for i in range(n)]


def _per_output_spec(model, spec, n, what):
    if isinstance(spec, dict):
        names = _output_names(model, n)
        return [spec.get(k) for k in names]
    if isinstance(spec, (list, tuple)) and len(spec) == n and n > 1:
        return list(spec)
    return [spec] * n


def _per_output_metrics(model, spec, n):
    if isinstance(spec, dict):
        names = _output_names(model, n)
        spec = [spec.get(k) or [] for k in names]
        return [s if isinstance(s, (list, tuple)) else [s] for s in spec]
    if isinstance(spec, (list, tuple)) and n > 1 and spec and all(
            isinstance(s, (list, tuple)) or s is None for s in spec):
        return [list(s or []) for s in spec]
    spec = spec if isinstance(spec, (list, tuple)) else [spec]
    return [list(spec)] * n


def regularization_losses(model):
    """The weight-regularization losses plus the activity losses of the layer calls of
    the step being built (or `model.losses` outside a step build)."""
    fx = model.__dict__.get("_keras_step_effects")
    if fx is None:
        return list(model.losses)
    return list(model._weight_losses()) + list(fx.losses)


def compute_loss(model, x=None, y=None, y_pred=None, sample_weight=None, training=True):
    """The total loss of a batch: the compiled loss of each output (per-sample losses
    times `sample_weight`, summed and divided by the batch size, as Keras 3), times
    its `loss_weights`, plus the regularization losses. A scalar float32 `Tensor`.

    Raises:
      ValueError: the model was compiled without a loss and has no regularization
        losses either.
    """
    from mylib import losses as L
    from mylib.models.step import _align, _per_sample

    args = getattr(model, "_compile_args", None) or {}
    spec = args.get("loss")
    terms = []
    if spec is not None and y is not None and y_pred is not None:
        yps = [_as_float32(convert_to_tensor(p)) for p in flatten(y_pred)]
        ys = [convert_to_tensor(t) for t in flatten(y)]
        if len(ys) != len(yps):
            raise ValueError(f"compute_loss: {len(ys)} targets for {len(yps)} predictions.")
        specs = _per_output_spec(model, spec, len(yps), "loss")
        lw = args.get("loss_weights")
        lws = _per_output_spec(model, lw, len(yps), "loss_weights") if lw is not None \
            else [1.0] * len(yps)
        sw = None if sample_weight is None else math_ops.cast(
            convert_to_tensor(sample_weight), "float32")
        for yt, yp, s, w in zip(ys, yps, specs, lws):
            if s is None:
                continue
            fn = L.get(s)
            yt = _align(yt, yp, s)
            per = _per_sample(fn, yt, yp)
            if sw is not None:
                n = math_ops.cast(array_ops.shape(per)[0], "float32")
                loss = reduction_ops.reduce_sum(per * sw) / n
            else:
                loss = reduction_ops.reduce_mean(per)
            terms.append(loss * float(w) if w != 1.0 else loss)
    reg = regularization_losses(model)
    terms += [math_ops.cast(r, "float32") if r.dtype != _dtypes.float32 else r for r in reg]
    if not terms:
        if spec is None:
            raise ValueError("compute_loss: the model was compiled without a `loss`; pass "
                             "one to compile(), or compute the loss yourself in train_step.")
        raise ValueError("compute_loss needs `y` and `y_pred` to compute the compiled loss.")
    return math_ops.add_n(terms) if len(terms) > 1 else terms[0]


class CompiledLoss:
    """Keras 2's ``model.compiled_loss(y, y_pred, sample_weight,
    regularization_losses)``: `compute_loss`, also recorded in the loss tracker (as
    Keras 2 did)."""

    def __init__(self, model):
        self._model = model

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None):
        loss = compute_loss(self._model, None, y_true, y_pred, sample_weight)
        loss_tracker(self._model).update_state(loss)
        return loss


# ------------------------------------------------------------ the default steps
def _call_compute_loss(model, x, y, y_pred, sw, training):
    # As Keras 3: `training` goes only to a `compute_loss` that names it, so an override
    # written without it (keras-io's knowledge-distillation Distiller) still evaluates.
    try:
        takes_training = "training" in inspect.signature(model.compute_loss).parameters
    except (TypeError, ValueError):
        takes_training = True
    if takes_training:
        return model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sw,
                                  training=training)
    return model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sw)


def default_train_step(model, data):
    """Keras 3's `train_step`: forward (training), `compute_loss`, gradients of the
    (scaled) loss, the optimizer's update, metric updates; returns the logs."""
    from mylib.core.gradients import gradients

    x, y, sw = unpack_x_y_sample_weight(data)
    y_pred = model(x, training=True)
    loss = _call_compute_loss(model, x, y, y_pred, sw, training=True)
    loss_tracker(model).update_state(loss, sample_weight=_batch_size(x))
    tvars = model.trainable_variables
    if tvars:
        scale = getattr(model.optimizer, "scale_loss", None)
        grads = gradients(scale(loss) if scale else loss, tvars)
        model.optimizer.apply_gradients([(g, v) for g, v in zip(grads, tvars)
                                         if g is not None])
    return model.compute_metrics(x, y, y_pred, sample_weight=sw)


def default_test_step(model, data):
    x, y, sw = unpack_x_y_sample_weight(data)
    y_pred = model(x, training=False)
    loss = _call_compute_loss(model, x, y, y_pred, sw, training=False)
    loss_tracker(model).update_state(loss, sample_weight=_batch_size(x))
    return model.compute_metrics(x, y, y_pred, sample_weight=sw)


def default_predict_step(model, data):
    x, _, _ = unpack_x_y_sample_weight(data)
    return model(x, training=False)


def _batch_size(x):
    t = convert_to_tensor(flatten(x)[0])
    return math_ops.cast(array_ops.shape(t)[0], "float32")


def compute_metrics(model, x, y, y_pred, sample_weight=None):
    """Updates the compiled metrics with the batch; returns `get_metrics_result`."""
    c = compile_metrics(model)
    if c is not None and y is not None:
        c.update_state(y, y_pred, sample_weight)
    return get_metrics_result(model)


def get_metrics_result(model):
    """``{name: result}`` of `model.metrics` (a container's results flattened in)."""
    logs = {}
    for m in model.metrics:
        r = m.result()
        if isinstance(r, dict):
            logs.update(r)
        else:
            logs[m.name] = r
    return logs


# ------------------------------------------------------------ building the step graph
def flatten_logs(logs, what):
    """``(names, tensors)`` of a step's returned logs (nested dicts flattened)."""
    if isinstance(logs, Tensor) or not isinstance(logs, dict):
        if logs is None:
            return [], []
        if isinstance(logs, (list, tuple)):
            raise TypeError(f"{what} must return a dict of logs (name -> value). Received a "
                            f"{type(logs).__name__}.")
        logs = {"loss": logs}
    names, vals = [], []
    for k, v in logs.items():
        if isinstance(v, dict):
            sub_n, sub_v = flatten_logs(v, what)
            names += sub_n
            vals += sub_v
            continue
        t = convert_to_tensor(v, dtype_hint=_dtypes.float32)
        if t.shape.rank:
            t = reduction_ops.reduce_mean(math_ops.cast(t, "float32"))
        names.append(str(k))
        vals.append(t)
    return names, vals


def build_custom_step(model, mode, ys, y_struct, feed_weights, sw_ndim, pass_weights=True):
    """``(step op, log tensors, feeds, log names)``: the graph of the model's
    ``<mode>_step`` ('train' or 'test') on placeholders shaped like the model's inputs,
    the targets `ys` (packed like `y_struct`; none for unsupervised data) and, with
    `feed_weights`, sample weights of rank `sw_ndim` (fed, and passed in the step's
    data as ``(x, y, sample_weight)`` only with `pass_weights`: the user gave
    weights)."""
    g = model.graph
    method = getattr(model, f"{mode}_step")
    with g.as_default(), g.name_scope(mode):
        targets = [array_ops.placeholder(_dtypes.as_dtype(a.dtype), [None] + list(a.shape[1:]),
                                         name=f"target_{i}") for i, a in enumerate(ys)]
        sw = array_ops.placeholder("float32", [None] * sw_ndim, name="sample_weight") \
            if feed_weights else None
        x = model._nested_inputs
        y = pack_like(y_struct, targets) if targets else None
        data = pack_x_y_sample_weight(x, y, sw if pass_weights else None)
        # Ops created from here on: by creation number (`Graph.version` counts every op
        # ever created), not by position in the op list, which freed collectable ops of
        # dropped models leave while the step is being built.
        v0 = g.version
        try:
            with collect_call_effects() as fx:
                object.__setattr__(model, "_keras_step_effects", fx)
                logs = method(data)
        finally:
            object.__setattr__(model, "_keras_step_effects", None)
        new_ops = [op for op in g.get_operations() if op._id >= v0]
        names, results = flatten_logs(logs, f"{type(model).__name__}.{mode}_step")
        inits = {id(v.initializer) for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES) +
                 g.get_collection(GraphKeys.LOCAL_VARIABLES)
                 if getattr(v, "initializer", None) is not None}
        effects = [op for op in new_ops if _is_effect(op) and id(op) not in inits]
        effects += [u for u in fx.updates if all(u is not e for e in effects)]
        step = array_ops.group(*effects, name=f"{mode}_step")
    if mode == "train" and not any(op.type == "ResourceApplyOptax" for op in new_ops):
        import warnings

        warnings.warn(f"{type(model).__name__}.train_step built no optimizer update: the "
                      "weights will not change. Apply the gradients with "
                      "`self.optimizer.apply(grads, self.trainable_variables)`.",
                      stacklevel=4)
    feeds = list(model.inputs) + targets + ([sw] if feed_weights else [])
    return step, results, feeds, names


def _is_effect(op):
    if op.type in _NOT_EFFECTS:
        return False
    try:
        return get_op_def(op.type).stateful
    except (KeyError, ValueError, ml_errors.NotFoundError):
        return False


def build_predict_outputs(model):
    """The flat outputs of the model's `predict_step` on its input placeholders, and
    their structure."""
    g = model.graph
    with g.as_default(), g.name_scope("predict"):
        out = model.predict_step(model._nested_inputs)
    flat = [convert_to_tensor(t) for t in flatten(out)]
    return flat, out
