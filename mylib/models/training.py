"""`Model`: compile, fit, evaluate, predict, summary, weights.

The training step is one graph, built once per model/target signature: the forward
pass with ``training=True``, the per-output losses (sample-weighted, summed over the
batch and divided by the batch size, as Keras), the regularization losses,
`ml.gradients`, the optimizer's update ops, and the metric updates (the loss tracker
and each compiled metric accumulate totals and counts in Variables). Each step of
`fit` calls the session's raw callable with numpy batch slices: nothing is copied back
to the host per step; the fetched running metric values stay on the device until a
progress bar or the end of the epoch reads them.
"""

from __future__ import annotations

import itertools
import math
import sys
import warnings

import numpy as np

from mylib import losses as losses_mod
from mylib import errors as ml_errors

from mylib.core import dtypes as _dtypes
from mylib.core.compat_args import warn_ignored
from mylib.core.graph import GraphKeys, Tensor
from mylib.core.gradients import gradients
from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops
from mylib.runtime import keras_session as backend
from mylib.runtime.policy import get_policy
from mylib.layers.base import Input, InputLayer, Layer, collect_call_effects, flatten, \
    pack_like, to_snake_case
from mylib.models.network import GraphNetworkMixin


def _np_dtype_for(arr, want=None):
    """The dtype data is fed as: the placeholder's dtype, else float32 for floats and
    bools, int32 for integers (Keras's floatx and label conventions)."""
    if want is not None:
        return want.np
    k = arr.dtype.kind
    if k in "iu":
        return np.int32 if arr.dtype.itemsize <= 4 or (arr.size == 0 or (
            arr.min() >= -2 ** 31 and arr.max() < 2 ** 31)) else np.int64
    return np.float32


def _as_arrays(data, what):
    if data is None:
        return None
    if isinstance(data, dict):
        return {k: _as_array(v, f"{what}[{k!r}]") for k, v in data.items()}
    if isinstance(data, (list, tuple)) and data and all(
            hasattr(v, "shape") or isinstance(v, (list, tuple)) for v in data) and \
            not _looks_like_rows(data):
        return [_as_array(v, f"{what}[{i}]") for i, v in enumerate(data)]
    return _as_array(data, what)


def _looks_like_rows(data):
    # A list of plain numbers / nested lists is one array, not several inputs.
    return not any(hasattr(v, "shape") for v in data)


def _as_array(v, what):
    if isinstance(v, Tensor):
        raise TypeError(f"`{what}` is a symbolic tensor; fit/evaluate/predict take numpy "
                        "arrays (call the model on tensors to build ops instead).")
    a = np.asarray(v)
    if a.dtype == object:
        raise ValueError(f"`{what}` could not be converted to a numeric array.")
    return a


def _fmt(shape):
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def _is_sparse_loss(loss):
    name = loss if isinstance(loss, str) else (getattr(loss, "__name__", None) or
                                               type(loss).__name__)
    return "sparse" in to_snake_case(str(name))


class Model(GraphNetworkMixin, Layer):
    """A layer graph with training and inference: functional, Sequential or subclassed.

    Functional::

        x = ml.layers.Input(shape=(4,))
        y = ml.layers.Dense(3, activation="softmax")(ml.layers.Dense(8, "relu")(x))
        model = ml.Model(x, y)

    Subclassed: override `call(inputs, training=None)` and create layers in `__init__`;
    the model is traced on placeholders shaped like the first data it sees.

    Every model lives in one graph (its inputs' graph) and keeps its weights' values in
    that graph's Keras session (`model.session`).
    """

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", args[0] if len(args) > 0 else None)
        outputs = kwargs.pop("outputs", args[1] if len(args) > 1 else None)
        if len(args) > 2:
            raise TypeError(f"Model() takes (inputs, outputs) positionally; got {len(args)} "
                            "positional arguments")
        super().__init__(**kwargs)
        self._is_graph_network = False
        self.inputs = None
        self.outputs = None
        self.compiled = False
        self.stop_training = False
        self.history = None
        self.optimizer = None
        self._fns = {}
        self._tracking = None
        if inputs is not None or outputs is not None:
            if inputs is None or outputs is None:
                raise ValueError("A functional Model needs both `inputs` and `outputs`.")
            self._init_graph_network(inputs, outputs)

    # ------------------------------------------------------------ structure
    @property
    def layers(self):
        return list(self._flat_layers())

    def get_layer(self, name=None, index=None):
        if index is not None:
            return self.layers[index]
        for l in self.layers:
            if l.name == name:
                return l
        raise ValueError(f"No such layer: {name}. Existing layers are: "
                         f"{[l.name for l in self.layers]}.")

    @property
    def graph(self):
        if self.inputs is None:
            raise ValueError(f'Model "{self.name}" has not been built yet: call it on data '
                             "(fit/predict) or call `build(input_shape)` first.")
        return self.inputs[0].graph

    @property
    def session(self):
        return backend.get_session(self.graph)

    @property
    def metrics_names(self):
        return list(self._tracking["names"]) if self._tracking else ["loss"]

    def call(self, inputs, training=None):
        if self._is_graph_network:
            return self._run_graph(inputs, training)
        raise NotImplementedError(f"Model {type(self).__name__} must implement `call` "
                                  "(or be built with Model(inputs, outputs)).")

    def __call__(self, inputs, *args, **kwargs):
        flat = flatten(inputs)
        if flat and not any(isinstance(x, Tensor) for x in flat):
            # Eager-style call on data: the inference outputs as numpy arrays.
            return self.predict(inputs, batch_size=max(len(np.asarray(flat[0])), 1), verbose=0)
        return super().__call__(inputs, *args, **kwargs)

    def build(self, input_shape):
        """Builds a deferred model (Sequential without an input shape, subclassed) on
        placeholders of `input_shape` (tuple with the batch dim, or a list of them)."""
        if self.inputs is not None:
            self.built = True
            return
        if isinstance(input_shape, list) and input_shape and isinstance(input_shape[0],
                                                                         (tuple, list)):
            ins = [Input(batch_shape=tuple(s)) for s in input_shape]
        elif isinstance(input_shape, dict):
            ins = {k: Input(batch_shape=tuple(s), name=k) for k, s in input_shape.items()}
        else:
            ins = Input(batch_shape=tuple(input_shape))
        self._trace(ins)

    def _trace(self, ins):
        """Builds the inference outputs of a deferred model on input tensors `ins`."""
        g = flatten(ins)[0].graph
        with g.as_default():
            outs = self._forward(ins, training=None)
        self._nested_inputs, self._nested_outputs = ins, outs
        self.inputs, self.outputs = flatten(ins), flatten(outs)
        self._set_io_names()
        self.built = True

    def _forward(self, inputs, training):
        if training is not None and self._accepts("training"):
            return self.call(inputs, training=training)
        return self.call(inputs)

    def _ensure_built(self, x_list=None, x_struct=None):
        if self.inputs is None:
            if x_list is None:
                raise ValueError(f'Model "{self.name}" has not been built yet. Build it by '
                                 "calling `build(input_shape)`, or by fitting/predicting on a "
                                 "batch of data.")
            ins = [Input(shape=a.shape[1:], dtype=_dtypes.as_dtype(_np_dtype_for(a)).name)
                   for a in x_list]
            if isinstance(x_struct, dict):
                ins = dict(zip(sorted(x_struct), ins))
            elif not isinstance(x_struct, (list, tuple)):
                ins = ins[0]
            self._trace(ins)
        backend.ensure_initialized(self.weights)

    # ------------------------------------------------------------ data
    def _standardize(self, data, tensors, names, what, nested):
        """A list of arrays aligned with `tensors` (inputs or outputs)."""
        if data is None:
            return None
        if isinstance(data, dict):
            keys = list(sorted(nested)) if isinstance(nested, dict) else names
            missing = [k for k in keys if k not in data]
            if missing:
                raise ValueError(f"No data provided for {what} {missing}. Expected keys "
                                 f"{keys}, got {sorted(data)}.")
            arrs = [data[k] for k in keys]
        elif isinstance(data, (list, tuple)):
            arrs = list(data)
        else:
            arrs = [data]
        if len(arrs) != len(tensors):
            raise ValueError(f'Model "{self.name}" has {len(tensors)} {what}s '
                             f"({names}), but it received {len(arrs)} arrays for them.")
        out = []
        for i, (a, t) in enumerate(zip(arrs, tensors)):
            a = np.asarray(a)
            ts = t.shape.as_list()
            shape = a.shape
            if what == "input":
                ok = len(shape) == len(ts) and all(
                    d is None or d == s for d, s in zip(ts[1:], shape[1:]))
                if not ok:
                    raise ValueError(
                        f'Input {i} ("{names[i]}") of model "{self.name}" expects data of shape '
                        f"{_fmt(ts)}, but received an array of shape {_fmt(shape)}.")
                if a.dtype.kind == "f" and t.dtype.is_integer:
                    raise ValueError(f'Input {i} ("{names[i]}") of model "{self.name}" has '
                                     f"dtype {t.dtype.name}; received float data.")
                a = np.ascontiguousarray(a, dtype=t.dtype.np)
            else:
                a = np.ascontiguousarray(a, dtype=_np_dtype_for(a))
            out.append(a)
        return out

    def _check_label_range(self, ys):
        """Class ids for a sparse loss must lie in [0, num_classes): checked on the
        host before any step (XLA cannot raise inside a step; TensorFlow on CPU raises
        too)."""
        loss_ids = (getattr(self, "_tracking", None) or {}).get("loss_ids")
        if loss_ids is None:
            comp = getattr(self, "_compile_args", None) or getattr(self, "_compiled", None)
            loss = comp.get("loss") if isinstance(comp, dict) else None
            if loss is None:
                return
            loss_ids = self._per_output(loss, "loss") if not isinstance(loss, (str,)) \
                else [loss] * len(self.outputs)
        for i, (y, t) in enumerate(zip(ys, self.outputs)):
            if i >= len(loss_ids) or not _is_sparse_loss(loss_ids[i]):
                continue
            n = t.shape.as_list()[-1] if t.shape.rank else None
            if n is None or n == 1 or not y.size or y.dtype.kind not in "iuf":
                continue
            lo, hi = y.min(), y.max()
            if lo < 0 or hi >= n:
                bad = hi if hi >= n else lo
                raise ml_errors.InvalidArgumentError(
                    f'Target {i} ("{self.output_names[i]}"): received a label value of '
                    f"{bad} which is outside the valid range of [0, {n}) for the "
                    f"{n}-class output.")

    def _check_targets(self, ys):
        for i, (y, t) in enumerate(zip(ys, self.outputs)):
            ps = t.shape.as_list()
            ys_ = list(y.shape)
            if _is_sparse_loss(self._tracking["loss_ids"][i]):
                ok = len(ys_) == len(ps) - 1 or (len(ys_) == len(ps) and ys_[-1] == 1)
                if not ok:
                    raise ValueError(
                        f'Target {i} ("{self.output_names[i]}") for the sparse loss must hold '
                        f"integer class ids of shape {_fmt(ps[:-1])}; received shape "
                        f"{_fmt(ys_)} against outputs of shape {_fmt(ps)}.")
                continue
            if len(ys_) == len(ps) - 1 and ps[-1] == 1:
                ys_ = ys_ + [1]
            ok = len(ys_) == len(ps) and all(p is None or p == q for p, q in zip(ps[1:], ys_[1:]))
            if not ok:
                raise ValueError(
                    f'Target {i} ("{self.output_names[i]}") has shape {_fmt(y.shape)}, which is '
                    f"incompatible with the model output of shape {_fmt(ps)} (loss "
                    f"{self._tracking['loss_ids'][i]!r}).")

    @staticmethod
    def _check_lengths(arrays, names):
        ns = {nm: len(a) if a.ndim else None for a, nm in zip(arrays, names)}
        if any(n is None for n in ns.values()):
            raise ValueError(f"Data must have a batch dimension; got scalars for "
                             f"{[k for k, v in ns.items() if v is None]}.")
        if len(set(ns.values())) > 1:
            raise ValueError("Data cardinality is ambiguous: make sure all arrays contain "
                             "the same number of samples. " +
                             ", ".join(f"{k} sizes: {v}" for k, v in ns.items()))
        n = next(iter(ns.values()))
        return n

    def _prepare(self, x, y=None, sample_weight=None, class_weight=None):
        """Arrays for a run: (xs, ys, sw, n), checked before any step runs."""
        x = _as_arrays(x, "x")
        if x is None:
            raise ValueError("`x` is required.")
        x_list = None
        if self.inputs is None:
            if isinstance(x, dict):
                x_list = [x[k] for k in sorted(x)]
            elif isinstance(x, list):
                x_list = x
            else:
                x_list = [x]
        self._ensure_built(x_list, x)
        xs = self._standardize(x, self.inputs, self.input_names, "input", self._nested_inputs)
        ys = None
        if y is not None:
            y = _as_arrays(y, "y")
            ys = self._standardize(y, self.outputs, self.output_names, "output",
                                   self._nested_outputs)
            self._check_label_range(ys)
        arrays = xs + (ys or [])
        names = [f"x[{n}]" for n in self.input_names] + [f"y[{n}]" for n in self.output_names
                                                         ][:len(ys or [])]
        sw = None
        if sample_weight is not None:
            sw = np.asarray(sample_weight, dtype=np.float32)
            if sw.ndim > 1 and sw.shape[1:] == (1,) * (sw.ndim - 1):
                sw = sw.reshape(len(sw))
            # [N, T] (temporal) weights must match the targets' leading axes.
            temporal = sw.ndim == 2 and ys is not None and ys[0].ndim >= 2 and \
                ys[0].shape[:2] == sw.shape
            if sw.ndim != 1 and not temporal:
                raise ValueError(f"`sample_weight` must be 1-D (one weight per sample) or "
                                 f"[samples, timesteps] matching the targets; received shape "
                                 f"{sw.shape}.")
            arrays.append(sw)
            names.append("sample_weight")
        n = self._check_lengths(arrays, names)
        if class_weight is not None and ys is not None:
            cls = _class_ids(ys[0], self.outputs[0].shape.rank)
            cw = np.ones(cls.shape, np.float32)
            for c, w in class_weight.items():
                cw[cls == int(c)] = w
            if sw is not None and sw.ndim < cw.ndim:
                sw = sw.reshape(sw.shape + (1,) * (cw.ndim - sw.ndim))
            elif sw is not None and cw.ndim < sw.ndim:
                cw = cw.reshape(cw.shape + (1,) * (sw.ndim - cw.ndim))
            sw = cw if sw is None else sw * cw
        if ys is not None and sw is None:
            sw = np.ones(n, np.float32)
        return xs, ys, sw, n

    # ------------------------------------------------------------ compile
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, run_eagerly=None, steps_per_execution=None,
                jit_compile=None):
        """Configures training.

        Args:
          optimizer: name (``"adam"``) or an `ml.optimizers` instance.
          loss: name, function ``(y_true, y_pred) -> per-sample losses``, a loss object,
            or a list/dict of them for several outputs.
          metrics: names (``"accuracy"``, ``"mae"``) or metric objects; a list, or a
            list/dict per output. Not weighted by `sample_weight` (as Keras).
          loss_weights: scalar weights of each output's loss in the total loss.
          weighted_metrics: metrics that are weighted by `sample_weight`.
          run_eagerly: run each step op by op on concrete values (no XLA
            compilation; errors name the failing op); ignores `steps_per_execution`.
          steps_per_execution: k, the number of batches each call into the compiled
            program runs (default 1). With k > 1, `fit` and `evaluate` (and fit's
            validation) stack k consecutive batches of the same shapes and run them
            as one in-graph loop (`lax.scan` over the step, variables carried from
            step to step): one dispatch and one host round trip per k batches, for
            small models whose steps cost less than Python's per-call overhead. The
            program is compiled once; its size does not grow with k. The results are
            those of k single steps (random ops such as `Dropout` draw what k
            separate steps would). An epoch's batches are taken k at a time. The
            last group of an epoch may hold fewer: its batches of the first batch's
            shape run as one more loop (compiled once, reused every epoch), a short
            last batch runs alone; a group whose shapes change inside it runs one
            batch per call. Batch-level callback hooks run once per execution (so
            ``ceil(steps / k)`` times an epoch): ``on_*_batch_begin`` with the index
            of its first batch, ``on_*_batch_end`` with the index of its last and the
            logs after it (as Keras 3); the progress bar, `ModelCheckpoint`,
            `BackupAndRestore` and `TensorBoard` count the batches in between.
            `predict` runs one batch per call. Steps that cannot loop in one
            program (host ops such as `py_func`, a model placed on several devices,
            distribution strategies) run the k steps one call each, with the same
            results.
          jit_compile: accepted for compatibility; steps are always compiled by XLA
            (``"auto"``); ``False`` is ignored and warns once (`run_eagerly=True` runs
            a step op by op).

        Raises:
          ValueError: an unknown loss name, or `steps_per_execution` < 1.
          TypeError: an unknown keyword argument (as Keras).
        """
        if jit_compile is False:
            warn_ignored("Model.compile", "jit_compile", "steps are always compiled by "
                         "XLA; pass run_eagerly=True to run a step op by op.")
        from mylib import optimizers

        self.optimizer = optimizers.get(optimizer)
        if self._dtype_policy.name == "mixed_float16":
            from mylib.mixed_precision import LossScaleOptimizer

            if not isinstance(self.optimizer, LossScaleOptimizer):  # as Keras 3
                self.optimizer = LossScaleOptimizer(self.optimizer)
        # Unknown loss names fail here, as a bad optimizer name does, not at the first step.
        for spec in (loss.values() if isinstance(loss, dict) else
                     loss if isinstance(loss, (list, tuple)) else [loss]):
            if isinstance(spec, str):
                losses_mod.get(spec)
        self.loss = loss
        self._compile_args = dict(loss=loss, metrics=metrics, loss_weights=loss_weights,
                                  weighted_metrics=weighted_metrics,
                                  run_eagerly=bool(run_eagerly),
                                  jit_compile=jit_compile if jit_compile is not None else "auto",
                                  steps_per_execution=int(steps_per_execution or 1))
        if int(steps_per_execution or 1) < 1:
            raise ValueError("`steps_per_execution` must be >= 1. Received: "
                             f"{steps_per_execution}")
        self._fns = {}
        self._tracking = None
        self.compiled = True

    def _assert_compiled(self):
        if not self.compiled:
            raise RuntimeError("You must compile your model before training/testing. Use "
                               "`model.compile(optimizer, loss)`.")

    def _per_output(self, spec, what):
        names = self.output_names
        if isinstance(spec, dict):
            unknown = [k for k in spec if k not in names]
            if unknown:
                raise ValueError(f"Unknown entries in `{what}` dictionary: {unknown}. Only "
                                 f"expected the following keys: {names}")
            return [spec.get(n) for n in names]
        if isinstance(spec, (list, tuple)) and what != "metrics" or (
                what == "metrics" and isinstance(spec, (list, tuple)) and len(names) > 1 and
                spec and all(isinstance(s, (list, tuple)) or s is None for s in spec)):
            if len(spec) != len(names):
                raise ValueError(f"When passing a list as `{what}`, it should have one entry "
                                 f"per model output. The model has {len(names)} outputs, but "
                                 f"you passed {what}={spec!r}")
            return list(spec)
        return [spec] * len(names)

    def _build_tracking(self, y_arrays):
        """Creates the loss functions and metric objects (once per compile), in the
        model's graph; their variables are local (non-trainable) variables."""
        from mylib import losses as L
        from mylib import metrics as M

        args = self._compile_args
        if args["loss"] is None:
            raise ValueError("The model must be compiled with a `loss` to be trained or "
                             "evaluated.")
        loss_ids = self._per_output(args["loss"], "loss")
        lw = args["loss_weights"]
        lws = self._per_output(lw, "loss_weights") if lw is not None else [1.0] * len(loss_ids)
        loss_fns = []
        for lid in loss_ids:
            loss_fns.append(None if lid is None else L.get(lid))
        metric_specs = self._per_output(args["metrics"] or [], "metrics")
        wmetric_specs = self._per_output(args["weighted_metrics"] or [], "metrics")
        multi = len(self.outputs) > 1
        entries = []  # (output index, metric object, weighted)
        names = ["loss"]
        with self.graph.as_default():
            loss_tracker = M.Mean(name="loss")
            out_trackers = [M.Mean(name=f"{n}_loss") for n in self.output_names] if multi \
                else []
            names += [f"{n}_loss" for n in self.output_names] if multi else []
            for weighted, specs in ((False, metric_specs), (True, wmetric_specs)):
                for i, spec in enumerate(specs):
                    for m in (spec if isinstance(spec, (list, tuple)) else [spec]):
                        if m is None:
                            continue
                        obj = self._make_metric(m, i, y_arrays, loss_ids[i])
                        label = m if isinstance(m, str) else obj.name
                        if weighted and isinstance(m, str):
                            label = "weighted_" + label
                        if multi:
                            label = f"{self.output_names[i]}_{label}"
                        names.append(label)
                        entries.append((i, obj, weighted))
        self._tracking = {"loss_ids": loss_ids, "loss_fns": loss_fns, "loss_weights": lws,
                          "loss_tracker": loss_tracker, "out_trackers": out_trackers,
                          "entries": entries, "names": names}

    def _make_metric(self, m, i, y_arrays, loss_id):
        from mylib import metrics as M

        if isinstance(m, str) and m in ("accuracy", "acc") and y_arrays is not None:
            y = y_arrays[i]
            out = self.outputs[i]
            return M.resolve_accuracy(y, out, loss=loss_id, name=m)
        if isinstance(m, str) or callable(m) and not hasattr(m, "update_state"):
            return M.get(m)
        return m

    # ------------------------------------------------------------ step graphs
    def _step_fn(self, mode, ys, weighted=True, sw_ndim=1, loop=False):
        """The raw callable of the train ('train') or test ('test') step for targets
        shaped like `ys`; built and compiled once per signature. Unweighted steps
        (`weighted=False`) take no sample-weight feed: every sample weighs 1. With
        `loop`, the session's k-steps-per-call callable of the same step (feeds
        stacked on a leading axis of k), or None where steps are scheduled elsewhere
        (a parameter-server strategy)."""
        feed_weights = weighted
        sw_ndim = int(sw_ndim) if feed_weights else 1
        key = (mode, feed_weights, sw_ndim, tuple((a.dtype.str, a.shape[1:]) for a in ys),
               tuple(id(w) for w in self.trainable_weights) if mode == "train" else ())
        if loop:
            self._step_fn(mode, ys, weighted, sw_ndim)
            return self._fns.get(key + ("loop",))
        fn = self._fns.get(key)
        if fn is not None:
            return fn
        if self._tracking is None:
            self._build_tracking(ys)
        self._check_targets(ys)
        g = self.graph
        tr = self._tracking
        with g.as_default():
            with g.name_scope(mode):
                fx = None
                if mode == "train":
                    # The training pass's own update ops (BatchNormalization) and
                    # activity losses; see `collect_call_effects`.
                    with collect_call_effects() as fx:
                        outs = flatten(self._forward(self._nested_inputs, training=True))
                else:
                    outs = self.outputs
                targets = [array_ops.placeholder(_dtypes.as_dtype(a.dtype),
                                                 [None] + list(a.shape[1:]),
                                                 name=f"{n}_target")
                           for a, n in zip(ys, self.output_names)]
                if feed_weights:
                    sw = array_ops.placeholder("float32", [None] * sw_ndim,
                                               name="sample_weight")
                else:  # ones, [batch]: no per-step host-to-device copy of weights
                    sw = constant_ops.fill(array_ops.shape(targets[0])[:1],
                                        constant_ops.constant(1.0, dtype="float32"))
                batch = math_ops.cast(array_ops.shape(sw)[0], "float32")
                out_losses, updates = [], []
                aligned = []
                for i, (yt, yp) in enumerate(zip(targets, outs)):
                    if yp.dtype in (_dtypes.float16, _dtypes.bfloat16):
                        yp = math_ops.cast(yp, "float32")  # losses in float32 (mixed precision)
                    yt = _align(yt, yp, tr["loss_ids"][i])
                    aligned.append((yt, yp))
                    if tr["loss_fns"][i] is None:
                        out_losses.append(None)
                        continue
                    per = _per_sample(tr["loss_fns"][i], yt, yp, sw if sw_ndim > 1 else None)
                    out_losses.append(reduction_ops.reduce_sum(per * sw) / batch if sw_ndim == 1
                                      else reduction_ops.reduce_sum(per) / batch)
                terms = [l * w if w != 1.0 else l for l, w in zip(out_losses, tr["loss_weights"])
                         if l is not None]
                reg = self.losses if fx is None else self._weight_losses() + fx.losses
                if reg:
                    terms.append(math_ops.add_n(reg) if len(reg) > 1 else reg[0])
                total = math_ops.add_n(terms) if len(terms) > 1 else terms[0]
                updates.append(tr["loss_tracker"].update_state(total, sample_weight=batch))
                for trk, l in zip(tr["out_trackers"], out_losses):
                    if l is not None:
                        updates.append(trk.update_state(l, sample_weight=batch))
                for i, obj, weighted in tr["entries"]:
                    yt, yp = aligned[i]
                    updates.append(obj.update_state(yt, yp, sample_weight=sw if weighted
                                                    else None))
                step_ops = list(updates) + (fx.updates if fx is not None else [])
                if mode == "train":
                    self._assert_compiled()
                    tvars = _expand_sharded(self.trainable_weights)
                    if tvars:
                        scale = getattr(self.optimizer, "scale_loss", None)  # loss scaling
                        grads = gradients(scale(total) if scale else total, tvars)
                        pairs = [(gr, v) for gr, v in zip(grads, tvars) if gr is not None]
                        if not pairs:
                            raise ValueError("No gradients provided for any variable: the loss "
                                             "does not depend on the trainable weights "
                                             f"{[v.name for v in tvars]}.")
                        step_ops.append(self.optimizer.apply_gradients(pairs))
                with g.control_dependencies(updates):
                    results = [tr["loss_tracker"].result()] + \
                        [t.result() for t in tr["out_trackers"]] + \
                        [obj.result() for _, obj, _ in tr["entries"]]
                step = array_ops.group(*step_ops, name=f"{mode}_step")
        self._init_all()
        feeds = list(self.inputs) + targets + ([sw] if feed_weights else [])
        # A parameter-server strategy runs training steps on its workers.
        policy = get_policy(g)
        fn = None
        if mode == "train" and policy is not None:
            with g.as_default():  # the metrics read after the scheduled steps ran
                plain = [tr["loss_tracker"].result()] + \
                    [t.result() for t in tr["out_trackers"]] + \
                    [obj.result() for _, obj, _ in tr["entries"]]
            fn = policy.schedule_step(g, [step] + results, feeds, plain)
        if fn is None:
            fn = self.session.make_device_callable([step] + results, feeds)
            self._fns[key + ("loop",)] = self.session.make_device_loop_callable(
                [step] + results, feeds)
        self._fns[key] = fn
        if mode == "train":
            self._train_graph_built = True
        return fn

    def _loop_fn(self, mode, ys, weighted, sw_ndim):
        """``(callable, k)``: the step's k-steps-per-call callable and k for
        ``compile(steps_per_execution=k)``; ``(None, 1)`` for one step per call (k is
        1, `run_eagerly`, or steps scheduled by a parameter-server strategy)."""
        k = self._compile_args.get("steps_per_execution", 1)
        if k <= 1 or self._compile_args.get("run_eagerly"):
            return None, 1
        fn = self._step_fn(mode, ys, weighted, sw_ndim, loop=True)
        return (None, 1) if fn is None else (fn, k)

    def _init_all(self):
        g = self.graph
        backend.ensure_initialized(g.get_collection(GraphKeys.GLOBAL_VARIABLES) +
                                   g.get_collection(GraphKeys.LOCAL_VARIABLES))

    def _reset_metrics_op(self):
        op = self._fns.get("reset")
        if op is None:
            tr = self._tracking
            objs = [tr["loss_tracker"]] + tr["out_trackers"] + [o for _, o, _ in tr["entries"]]
            with self.graph.as_default():
                op = array_ops.group(*[o.reset_state() for o in objs], name="reset_metrics")
            self._fns["reset"] = op
        return op

    def reset_metrics(self):
        if self._tracking is not None:
            self.session.run(self._reset_metrics_op())

    def _predict_fn(self):
        fn = self._fns.get("predict")
        if fn is None:
            fn = self.session.make_device_callable(self.outputs, list(self.inputs))
            self._fns["predict"] = fn
        return fn

    # ------------------------------------------------------------ loops
    def _call_step(self, fn, batch):
        """One compiled step; with ``compile(run_eagerly=True)`` the same step runs op by
        op on concrete values (no XLA compilation), so a failing op's error names the op,
        its creation line and its input values."""
        if self._compile_args.get("run_eagerly") if getattr(self, "_compile_args", None) \
                else False:
            import jax

            with jax.disable_jit():
                return fn(*batch)
        return fn(*batch)

    def _stream_feeds(self, stream, class_weight, weighted, with_y=True):
        """Feed lists ([*xs, *ys, sw?]) for the batches of one epoch of `stream`."""
        for el in stream.epoch():
            xb, yb, swb = _unpack_batch(el)
            if with_y and yb is None:
                raise ValueError("The dataset/generator yielded a batch without targets; "
                                 "expected (x, y) or (x, y, sample_weight).")
            xs, ys, sw, _ = self._prepare(xb, yb if with_y else None, swb, class_weight)
            yield xs + (ys or []) + ([sw] if weighted else [])

    def _val_source(self, validation_data, validation_steps, batch_size):
        """(ys_signature, sw_ndim, batches() -> iterator of feed lists) for validation."""
        if _is_stream(validation_data):
            stream = _BatchStream(validation_data, validation_steps, "validation_data")
            xb, yb, swb = _unpack_batch(stream.peek())
            if yb is None:
                raise ValueError("`validation_data` must yield (x_val, y_val) or "
                                 "(x_val, y_val, val_sample_weight) batches.")
            _, ys0, sw0, _ = self._prepare(xb, yb, swb)
            return ys0, sw0.ndim, lambda: self._stream_feeds(stream, None, True)
        vd = tuple(validation_data)
        if len(vd) not in (2, 3):
            raise ValueError("`validation_data` must be (x_val, y_val) or "
                             "(x_val, y_val, val_sample_weight).")
        xs, ys, sw, n = self._prepare(vd[0], vd[1], vd[2] if len(vd) == 3 else None)
        return ys, sw.ndim, lambda: _array_feeds(xs, ys, sw, n, batch_size, validation_steps)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1):
        """Trains for `epochs` epochs (from `initial_epoch`).

        Args:
          x, y: numpy or JAX arrays (a list or a dict keyed by input names for several
            inputs); or `x` alone as an `ml.data.Dataset` or a Python generator yielding
            ``(x, y)`` or ``(x, y, sample_weight)`` batches.
          shuffle: shuffle the samples each epoch (arrays only); ``"batch"`` shuffles in
            batch-sized chunks (the order of the chunks and the samples inside each).
          class_weight: ``{class: weight}`` multiplying the sample weights; with sequence
            targets (``[N, T]`` labels) the weights are per timestep.
          sample_weight: ``[N]`` per-sample or ``[N, T]`` per-timestep weights.
          steps_per_epoch: batches per epoch; with arrays the batches continue through
            the (reshuffled) data across epochs; required for an infinite dataset.
          validation_steps: batches per validation run (default: all of them).
          validation_freq: validate every `validation_freq` epochs (an int), or after
            the epochs listed (1-based, a list).

        `validation_split` holds out the LAST fraction of the samples (before shuffling).
        Epoch logs are sample-weighted means over all batches (a short last batch counts
        by its size). Returns the `History` callback (`.history`: per-epoch lists, with
        ``val_``-prefixed validation entries). With ``compile(steps_per_execution=k)``
        each call runs k batches in one compiled loop (see `compile`).

        Raises:
          ValueError: mismatched sample counts or shapes, before any step runs.
          RuntimeError: the model is not compiled.
        """
        from mylib import callbacks as cbks

        self._assert_compiled()
        batch_size = 32 if batch_size is None else int(batch_size)
        if batch_size <= 0:
            raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
        if steps_per_epoch is not None and int(steps_per_epoch) <= 0:
            raise ValueError(f"`steps_per_epoch` must be positive. Received: {steps_per_epoch}")
        spe = None if steps_per_epoch is None else int(steps_per_epoch)
        if isinstance(validation_freq, int):
            if validation_freq < 1:
                raise ValueError(f"`validation_freq` must be >= 1. Received: {validation_freq}")
            do_val = lambda ep: (ep + 1) % validation_freq == 0  # noqa: E731
        else:
            vf = set(int(v) for v in validation_freq)
            do_val = lambda ep: (ep + 1) in vf  # noqa: E731
        if shuffle not in (True, False, "batch"):
            raise ValueError(f'`shuffle` must be True, False or "batch". Received: {shuffle!r}')
        val = None  # (ys signature, sw ndim, batches())
        if _is_stream(x):
            if y is not None:
                raise ValueError("`y` must not be given when `x` is a dataset or a generator; "
                                 "it yields (x, y) or (x, y, sample_weight) batches.")
            if sample_weight is not None or validation_split:
                raise ValueError("`sample_weight` and `validation_split` are not supported "
                                 "with a dataset or generator `x`; yield the weights in the "
                                 "batches and pass `validation_data`.")
            stream = _BatchStream(x, spe, "x")
            xb, yb, swb = _unpack_batch(stream.peek())
            if yb is None:
                raise ValueError("The dataset/generator passed to fit must yield (x, y) or "
                                 "(x, y, sample_weight) batches; its first batch has no y.")
            _, ys, sw, _ = self._prepare(xb, yb, swb, class_weight)
            weighted = swb is not None or class_weight is not None
            epoch_feeds = lambda: self._stream_feeds(stream, class_weight, weighted)  # noqa
            steps, n = stream.steps_hint, None
        else:
            if y is None:
                raise ValueError("`y` is required: mylib fits (x, y) arrays, or a dataset / "
                                 "generator of (x, y) batches as `x`.")
            xs, ys, sw, n = self._prepare(x, y, sample_weight, class_weight)
            weighted = sample_weight is not None or class_weight is not None
            if validation_split and validation_data is None:
                if not 0 < validation_split < 1:
                    raise ValueError(f"`validation_split` must be in [0, 1). Received: "
                                     f"{validation_split}")
                split_at = int(math.floor(n * (1.0 - validation_split)))
                if split_at == 0 or split_at == n:
                    raise ValueError(f"validation_split={validation_split} leaves no training "
                                     f"or no validation samples out of {n}.")
                v = ([a[split_at:] for a in xs], [a[split_at:] for a in ys], sw[split_at:],
                     n - split_at)
                vbs = validation_batch_size or batch_size
                val = (v[1], sw.ndim,
                       lambda: _array_feeds(v[0], v[1], v[2], v[3], vbs, validation_steps))
                xs, ys, sw, n = [a[:split_at] for a in xs], [a[:split_at] for a in ys], \
                    sw[:split_at], split_at
            if n == 0:
                raise ValueError("Expected at least one training sample; received 0.")
            epoch_feeds = _ArrayEpochs(xs, ys, sw, n, batch_size, shuffle, weighted, spe)
            steps = spe or int(math.ceil(n / batch_size))
        if validation_data is not None:
            val = self._val_source(validation_data, validation_steps,
                                   validation_batch_size or batch_size)
        train_fn = self._step_fn("train", ys, weighted, sw_ndim=sw.ndim)
        if val is not None:
            self._step_fn("test", val[0], sw_ndim=val[1])
        verbose = 1 if verbose == "auto" else int(verbose)
        cb = cbks.CallbackList(callbacks, add_history=True, add_progbar=verbose != 0,
                               model=self, verbose=verbose, epochs=epochs, steps=steps,
                               samples=n)
        self.stop_training = False
        reset = self._reset_metrics_op()
        sess = self.session
        names = self.metrics_names
        call = self._call_step
        eager = self._compile_args.get("run_eagerly")
        loop_fn, k = self._loop_fn("train", ys, weighted, sw.ndim)
        self._resume_at = None
        cb.on_train_begin()
        # `BackupAndRestore` sets where an interrupted run resumes: (epoch, step).
        resume, self._resume_at = self._resume_at, None
        skip = 0
        if resume is not None:
            initial_epoch, skip = max(initial_epoch, resume[0]), resume[1]
        epoch_logs = {}
        for epoch in range(initial_epoch, epochs):
            sess.run(reset)
            cb.on_epoch_begin(epoch)
            outs = None
            hooks = cb.needs_train_batch_hooks
            feeds = enumerate(epoch_feeds())
            if skip:  # the steps an interrupted run already did (BackupAndRestore)
                feeds, skip = itertools.islice(feeds, skip, None), 0
            for first, last, calls in _executions(feeds, k):
                if hooks:
                    cb.on_train_batch_begin(first)
                for stacked, b in calls:
                    if stacked:
                        outs = loop_fn(*b)
                    else:
                        outs = call(train_fn, b) if eager else train_fn(*b)
                # Device arrays: converting one to float is what syncs; callbacks that
                # print do so only when they print.
                if hooks:
                    cb.on_train_batch_end(last, dict(zip(names, outs[1:])))
                if self.stop_training:
                    break
            if outs is None:
                warnings.warn("Your input ran out of data; interrupting training. Make sure "
                              "the dataset or generator can produce `steps_per_epoch * "
                              "epochs` batches (e.g. with `.repeat()`).", stacklevel=2)
                break
            epoch_logs = {k: float(np.asarray(v)) for k, v in zip(names, outs[1:])}
            if val is not None and do_val(epoch):
                vlogs = self._test_loop(val[2](), val[0], cb, sw_ndim=val[1])
                epoch_logs.update({"val_" + k: v for k, v in vlogs.items()})
            cb.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        cb.on_train_end(epoch_logs)
        return self.history

    def _test_loop(self, batches, ys, cb=None, sw_ndim=1):
        """Runs the test step over `batches` (feed lists [*xs, *ys, sw])."""
        test_fn = self._step_fn("test", ys, sw_ndim=sw_ndim)
        loop_fn, k = self._loop_fn("test", ys, True, sw_ndim)
        self.session.run(self._reset_metrics_op())
        names = self.metrics_names
        if cb is not None:
            cb.on_test_begin()
        outs = None
        for first, last, calls in _executions(enumerate(batches), k):
            if cb is not None:
                cb.on_test_batch_begin(first)
            for stacked, b in calls:
                outs = loop_fn(*b) if stacked else self._call_step(test_fn, b)
            if cb is not None:
                cb.on_test_batch_end(last, dict(zip(names, outs[1:])))
        if outs is None:
            raise ValueError("No batches to evaluate: the data is empty (or `steps` is 0).")
        logs = {k: float(np.asarray(v)) for k, v in zip(names, outs[1:])}
        if cb is not None:
            cb.on_test_end(logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False):
        """Loss and metrics on `x`, `y` (arrays, or `x` a dataset / generator of
        ``(x, y[, sample_weight])`` batches, `steps` of them when given): sample-weighted
        means over all samples.

        Returns:
          the loss (a float) when no metrics were compiled, else ``[loss, *metrics]`` in
          `metrics_names` order; a dict with `return_dict=True`.
        """
        from mylib import callbacks as cbks

        self._assert_compiled()
        batch_size = 32 if batch_size is None else int(batch_size)
        verbose = 1 if verbose == "auto" else int(verbose)
        if _is_stream(x):
            if y is not None:
                raise ValueError("`y` must not be given when `x` is a dataset or a generator.")
            stream = _BatchStream(x, steps, "x")
            xb, yb, swb = _unpack_batch(stream.peek())
            if yb is None:
                raise ValueError("The dataset/generator passed to evaluate must yield (x, y) "
                                 "or (x, y, sample_weight) batches.")
            _, ys, sw, _ = self._prepare(xb, yb, swb)
            batches, nsteps = self._stream_feeds(stream, None, True), stream.steps_hint
        else:
            if y is None:
                raise ValueError("`y` is required to evaluate.")
            xs, ys, sw, n = self._prepare(x, y, sample_weight)
            if n == 0:
                raise ValueError("Expected at least one sample to evaluate; received 0.")
            batches = _array_feeds(xs, ys, sw, n, batch_size, steps)
            nsteps = steps or int(math.ceil(n / batch_size))
        cb = cbks.CallbackList(callbacks, model=self, verbose=verbose, steps=nsteps)
        logs = self._test_loop(batches, ys, cb, sw_ndim=sw.ndim)
        if verbose:
            print(" - ".join(f"{k}: {v:.4f}" for k, v in logs.items()))
        if return_dict:
            return logs
        vals = [logs[k] for k in self.metrics_names]
        return vals[0] if len(vals) == 1 else vals

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """Inference outputs for `x` (arrays, or a dataset / generator of ``x`` or
        ``(x, ...)`` batches, `steps` of them when given), batch by batch
        (``training=False``), concatenated.

        `verbose` is accepted for Keras compatibility: predict shows no progress bar
        (1 or 2 warns once).

        Returns:
          a numpy array, or a list/dict of them for several outputs.
        """
        if verbose not in ("auto", 0, None):
            warn_ignored("Model.predict", "verbose", "predict shows no progress bar.")
        from mylib import callbacks as cbks

        batch_size = 32 if batch_size is None else int(batch_size)
        if _is_stream(x):
            stream = _BatchStream(x, steps, "x")
            self._prepare(_unpack_batch(stream.peek())[0])
            batches = self._stream_feeds(stream, None, False, with_y=False)
            nsteps = stream.steps_hint
        else:
            xs, _, _, n = self._prepare(x)
            batches = (_array_feeds(xs, [], None, n, batch_size, steps) if n else iter(()))
            nsteps = steps or int(math.ceil(n / batch_size))
        fn = self._predict_fn()
        cb = cbks.CallbackList(callbacks, model=self, verbose=0, steps=nsteps)
        cb.on_predict_begin()
        chunks = []
        for step, batch in enumerate(batches):
            cb.on_predict_batch_begin(step)
            out = self._call_step(fn, batch)
            chunks.append(out)
            cb.on_predict_batch_end(step, {"outputs": out})
        cb.on_predict_end()
        if not chunks:
            res = [np.zeros([0] + t.shape.as_list()[1:], t.dtype.np) for t in self.outputs]
        else:
            res = [np.concatenate([np.asarray(c[i]) for c in chunks]) for i in
                   range(len(self.outputs))]
        return pack_like(self._nested_outputs, res)

    def train_on_batch(self, x, y, sample_weight=None, class_weight=None, return_dict=False):
        """One training step on one batch; returns the batch's loss (and metrics)."""
        self._assert_compiled()
        xs, ys, sw, _ = self._prepare(x, y, sample_weight, class_weight)
        fn = self._step_fn("train", ys, sw_ndim=sw.ndim)
        self.session.run(self._reset_metrics_op())
        outs = self._call_step(fn, [*xs, *ys, sw])
        logs = {k: float(np.asarray(v)) for k, v in zip(self.metrics_names, outs[1:])}
        return logs if return_dict else (list(logs.values()) if len(logs) > 1 else logs["loss"])

    def test_on_batch(self, x, y, sample_weight=None, return_dict=False):
        logs = self.evaluate(x, y, batch_size=max(1, len(np.asarray(flatten(x)[0]))),
                             verbose=0, sample_weight=sample_weight, return_dict=True)
        return logs if return_dict else (list(logs.values()) if len(logs) > 1 else logs["loss"])

    def predict_on_batch(self, x):
        return self.predict(x, batch_size=max(1, len(np.asarray(flatten(x)[0]))), verbose=0)

    # ------------------------------------------------------------ weights & summary
    def get_weights(self):
        if self.inputs is not None:
            self._ensure_built()
        return super().get_weights()

    def set_weights(self, weights):
        backend.set_values(self.weights, weights, owner=f'Model "{self.name}"')

    def summary(self, line_length=None, positions=None, print_fn=None):
        """Prints each layer's name, type, output shape and parameter count, and the
        total, trainable and non-trainable parameter counts."""
        if not self.built or self.inputs is None:
            raise ValueError("This model has not yet been built. Build the model first by "
                             "calling `build()` or by calling the model on a batch of data.")
        print_fn = print_fn or (lambda s: print(s, file=sys.stdout))
        width = line_length or 65
        cols = [int(width * p) for p in (positions or (0.45, 0.85, 1.0))]
        rows = [("Layer (type)", "Output Shape", "Param #")]
        for layer in self.layers:
            try:
                shape = layer.output_shape
            except AttributeError:
                shape = "?"
            if isinstance(layer, InputLayer):
                shape = [layer._batch_input_shape]
            shape_s = _fmt(shape) if isinstance(shape, tuple) else \
                ", ".join(_fmt(s) if isinstance(s, tuple) else str(s) for s in
                          (shape if isinstance(shape, list) else [shape]))
            rows.append((f"{layer.name} ({type(layer).__name__})", shape_s,
                         f"{layer.count_params() if layer.built else 0:,}"))

        def line(cells):
            s = ""
            for c, end in zip(cells, cols):
                s = (s + " " + str(c)).ljust(end)
            return s.rstrip()

        print_fn(f'Model: "{self.name}"')
        print_fn("_" * width)
        print_fn(line(rows[0]))
        print_fn("=" * width)
        for i, r in enumerate(rows[1:]):
            print_fn(line(r))
            print_fn(("_" if i < len(rows) - 2 else "=") * width)
        trainable = int(sum(int(np.prod(w.shape.as_list())) for w in self.trainable_weights))
        total = int(sum(int(np.prod(w.shape.as_list())) for w in self.weights))
        print_fn(f"Total params: {total:,}")
        print_fn(f"Trainable params: {trainable:,}")
        print_fn(f"Non-trainable params: {total - trainable:,}")
        print_fn("_" * width)

    # ------------------------------------------------------------ saving
    # The formats and the class registry live in `mylib.models.saving`.
    def get_config(self):
        """Sequential: the layers' configs; functional: the layers and their call graph
        (inbound nodes by layer name); subclassed: ``name`` and ``trainable`` (override
        to add constructor arguments)."""
        from mylib.models import saving

        return saving.model_get_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from mylib.models import saving

        return saving.model_from_config_dict(cls, config, custom_objects)

    def to_json(self, **kwargs):
        """The architecture as JSON text (`ml.models.model_from_json` reads it back)."""
        from mylib.models import saving

        return saving.to_json(self, **kwargs)

    def save(self, filepath, overwrite=True, include_optimizer=True):
        """Writes the model (architecture, weights, compile arguments, optimizer state)
        to one zip file; `ml.models.load_model` reads it back without running code.
        Subclassed models need a registered class (else use `save_weights`)."""
        from mylib.models import saving

        saving.save_model(self, filepath, overwrite=overwrite,
                          include_optimizer=include_optimizer)

    def save_training_state(self, filepath, extra=None):
        """Writes the weights, the optimizer state and `extra` (JSON-serializable: epoch,
        step, random-stream state) to one file, atomically: what `BackupAndRestore`
        keeps. Works for subclassed models (no config is stored).

        Args:
          filepath: the file to write (str).
          extra: optional dict stored beside the arrays.
        """
        from mylib.models import saving

        saving.save_training_state(self, filepath, extra)

    def load_training_state(self, filepath):
        """Restores what `save_training_state` wrote and returns its `extra` dict.

        Raises:
          DataLossError: the file is truncated, corrupted or of another model.
        """
        from mylib.models import saving

        return saving.load_training_state(self, filepath)

    def save_weights(self, filepath, overwrite=True):
        """Writes the weights (in `weights` order, with names and shapes) to a file."""
        from mylib.models import saving

        saving.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath):
        """Loads weights written by `save_weights` or `save`; every shape is checked
        before any weight changes."""
        from mylib.models import saving

        saving.load_weights(self, filepath)


# ------------------------------------------------------------ input sources
def _expand_sharded(variables):
    """Variables, with each sharded variable (it has ``.variables``) as its shards."""
    out = []
    for v in variables:
        parts = getattr(v, "variables", None)
        out.extend(parts if isinstance(parts, list) else [v])
    return out


def _is_stream(x):
    """A `ml.data.Dataset` or a Python iterator/generator of batches (not arrays)."""
    from mylib.data import Dataset

    return isinstance(x, Dataset) or (hasattr(x, "__next__") and hasattr(x, "__iter__")
                                      and not hasattr(x, "shape"))


def _unpack_batch(el):
    """``(x, y, sample_weight)`` from a batch: a tuple ``(x,)``, ``(x, y)`` or
    ``(x, y, sw)``, or ``x`` alone (Keras's `unpack_x_y_sample_weight`)."""
    if isinstance(el, tuple) and not hasattr(el, "_fields"):
        if len(el) == 1:
            return el[0], None, None
        if len(el) == 2:
            return el[0], el[1], None
        if len(el) == 3:
            return el
        raise ValueError("Data is expected to be (x,), (x, y) or (x, y, sample_weight); "
                         f"received a tuple of {len(el)} elements.")
    return el, None, None


_NONE = object()


class _BatchStream:
    """The batches of a `Dataset` (re-iterable: a fresh pass each epoch) or a Python
    iterator (one stream for the whole run). With `steps`, each epoch takes that many
    batches, continuing where the previous epoch stopped (a finished dataset pass is
    restarted)."""

    def __init__(self, data, steps, what):
        from mylib.data import INFINITE_CARDINALITY, Dataset

        self.data = data
        self.reiterable = isinstance(data, Dataset)
        card = data.cardinality() if self.reiterable else -2
        if steps is None and card == INFINITE_CARDINALITY:
            raise ValueError(f"`{what}` is an infinite dataset (it repeats forever): pass "
                             "`steps_per_epoch` (fit) or `steps` (evaluate/predict) to say "
                             "how many batches make an epoch.")
        self.steps = None if steps is None else int(steps)
        self.card = card
        self.it = None

    @property
    def steps_hint(self):
        return self.steps or (self.card if self.card >= 0 else None)

    def peek(self):
        """The first batch, checked before any step runs (kept for the first epoch)."""
        it = iter(self.data)
        first = next(it, _NONE)
        if first is _NONE:
            raise ValueError("The dataset/generator is empty: it produced no batches.")
        self.it = itertools.chain([first], it)
        return first

    def epoch(self):
        if self.steps is None:
            it = self.it if self.it is not None else iter(self.data)
            self.it = None if self.reiterable else it
            yield from it
            return
        for _ in range(self.steps):
            if self.it is None:
                self.it = iter(self.data)
            el = next(self.it, _NONE)
            if el is _NONE:
                if not self.reiterable:
                    return
                self.it = iter(self.data)
                el = next(self.it, _NONE)
                if el is _NONE:
                    return
            yield el


def _executions(steps, k):
    """Groups an epoch's ``(step, feed list)`` pairs into executions of k consecutive
    batches (the last one of an epoch may hold fewer): yields ``(first step, last step,
    calls)``, `calls` a list of ``(stacked, feeds)``. ``stacked`` feeds hold several
    batches of the same shapes on a new leading axis, for one call of the k-step loop;
    the others are one batch's feed list. A group of k same-shape batches is one
    stacked call. At the end of an epoch the leading same-shape run of the last group
    is stacked too (one more program, the same every epoch), the rest (a short last
    batch) one call each. Elsewhere a group whose shapes change runs batch by batch:
    a loop program per run length would compile without bound on data of varied
    shapes."""
    if k == 1:
        for step, batch in steps:
            yield step, step, ((False, batch),)
        return
    group = []
    for step, batch in steps:
        if not group:
            first = step
        group.append(batch)
        if len(group) == k:
            yield first, step, _calls(group, False)
            group = []
    if group:
        yield first, first + len(group) - 1, _calls(group, True)


def _calls(group, may_split):
    shape0 = [a.shape for a in group[0]]
    run = 1
    while run < len(group) and [a.shape for a in group[run]] == shape0:
        run += 1
    if run > 1 and (run == len(group) or may_split):
        calls = [(True, [np.stack(parts) for parts in zip(*group[:run])])]
        return calls + [(False, b) for b in group[run:]]
    return [(False, b) for b in group]


def _array_feeds(xs, ys, sw, n, batch_size, steps=None):
    """Feed lists of consecutive batches of arrays, one pass (the first `steps`)."""
    stop = n if steps is None else min(n, int(steps) * batch_size)
    for lo in range(0, stop, batch_size):
        hi = lo + batch_size
        b = [a[lo:hi] for a in xs] + [a[lo:hi] for a in ys]
        if sw is not None:
            b.append(sw[lo:hi])
        yield b


def _batch_order(n, batch_size):
    """A permutation that shuffles batch-sized chunks (full chunks in a random order,
    the short one last) and the samples within each chunk (``shuffle="batch"``)."""
    full = n // batch_size
    starts = np.random.permutation(full) * batch_size
    parts = [s + np.random.permutation(batch_size) for s in starts]
    if n % batch_size:
        parts.append(full * batch_size + np.random.permutation(n % batch_size))
    return np.concatenate(parts) if parts else np.arange(0)


class _ArrayEpochs:
    """Per-epoch feed lists over arrays: one gather per pass (the shuffle), then
    contiguous slices per step. With `steps_per_epoch`, epochs take that many batches
    from an endless sequence of (reshuffled) passes."""

    def __init__(self, xs, ys, sw, n, batch_size, shuffle, weighted, steps_per_epoch):
        self.args = (xs, ys, sw, n, batch_size, shuffle, weighted)
        self.spe = steps_per_epoch
        self.stream = None

    def _pass(self):
        xs, ys, sw, n, bs, shuffle, weighted = self.args
        order = _batch_order(n, bs) if shuffle == "batch" else (
            np.random.permutation(n) if shuffle else None)
        if order is not None:
            xs, ys, sw = [a[order] for a in xs], [a[order] for a in ys], sw[order]
        return _array_feeds(xs, ys, sw if weighted else None, n, bs)

    def _endless(self):
        while True:
            yield from self._pass()

    def __call__(self):
        if self.spe is None:
            return self._pass()
        if self.stream is None:
            self.stream = self._endless()
        return itertools.islice(self.stream, self.spe)


def _class_ids(y, out_rank):
    """Class ids of targets `y` for `class_weight`: argmax of one-hot targets (rank of
    the output), else the labels (a trailing axis of 1 squeezed). [N] for per-sample
    targets, [N, T] for sequence targets."""
    if y.ndim >= 2 and y.shape[-1] > 1 and (out_rank is None or y.ndim == out_rank):
        return y.argmax(axis=-1)
    if y.ndim >= 2 and y.shape[-1] == 1:
        y = y.reshape(y.shape[:-1])
    return np.rint(y).astype(np.int64) if y.dtype.kind == "f" else y.astype(np.int64)


def _align(y_true, y_pred, loss_id):
    """Keras's `match_dtype_and_rank`: [N] targets against [N, 1] outputs become [N, 1]
    (never broadcast to [N, N]); float targets take the output's float dtype."""
    tr, pr = y_true.shape.rank, y_pred.shape.rank
    if tr is not None and pr is not None and tr == pr - 1 and y_pred.shape.as_list()[-1] == 1 \
            and not _is_sparse_loss(loss_id):
        y_true = array_ops.expand_dims(y_true, -1)
    if y_true.dtype.is_floating and y_pred.dtype.is_floating and y_true.dtype != y_pred.dtype:
        y_true = math_ops.cast(y_true, y_pred.dtype)
    elif y_true.dtype == _dtypes.bool_ and y_pred.dtype.is_floating:
        y_true = math_ops.cast(y_true, y_pred.dtype)
    return y_true


def _per_sample(loss_fn, y_true, y_pred, element_weights=None):
    """Per-sample losses [batch]: loss objects through their `call`, functions directly;
    extra axes are averaged (Keras's per-sample reduction). `element_weights` (e.g.
    per-timestep weights [batch, T]) multiply the losses before that average, and the
    caller then feeds samples weights of 1."""
    call = getattr(loss_fn, "call", None)
    per = call(y_true, y_pred) if call is not None else loss_fn(y_true, y_pred)
    if element_weights is not None:
        per = per * element_weights
    if per.shape.rank is not None and per.shape.rank > 1:
        per = reduction_ops.reduce_mean(per, axis=list(range(1, per.shape.rank)))
    elif per.shape.rank == 0:
        raise ValueError(f"The loss {loss_fn!r} returned a scalar; losses used by compile "
                         "must return one value per sample.")
    return per
