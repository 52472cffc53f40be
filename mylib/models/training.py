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

import math
import sys

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.core.graph import GraphKeys, Tensor
from mylib.core.gradients import gradients
from mylib.core.ops import array_ops, math_ops
from mylib.layers import backend
from mylib.layers.base import Input, InputLayer, Layer, flatten, pack_like, to_snake_case
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
        arrays = xs + (ys or [])
        names = [f"x[{n}]" for n in self.input_names] + [f"y[{n}]" for n in self.output_names
                                                         ][:len(ys or [])]
        sw = None
        if sample_weight is not None:
            sw = np.asarray(sample_weight, dtype=np.float32)
            if sw.ndim != 1:
                sw = sw.reshape(len(sw), -1)[:, 0] if sw.ndim > 1 and sw.shape[1:] == (1,) * (
                    sw.ndim - 1) else sw
            if sw.ndim != 1:
                raise ValueError(f"`sample_weight` must be 1-D (one weight per sample); "
                                 f"received shape {sw.shape}.")
            arrays.append(sw)
            names.append("sample_weight")
        n = self._check_lengths(arrays, names)
        if class_weight is not None and ys is not None:
            cw = np.ones(n, np.float32)
            y0 = ys[0]
            cls = y0.reshape(n, -1).argmax(axis=1) if y0.ndim > 1 and y0.shape[-1] > 1 else \
                y0.reshape(n).astype(np.int64)
            for c, w in class_weight.items():
                cw[cls == int(c)] = w
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
        """
        from mylib import optimizers

        self.optimizer = optimizers.get(optimizer)
        self.loss = loss
        self._compile_args = dict(loss=loss, metrics=metrics, loss_weights=loss_weights,
                                  weighted_metrics=weighted_metrics)
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
    def _step_fn(self, mode, ys, weighted=True):
        """The raw callable of the train ('train') or test ('test') step for targets
        shaped like `ys`; built and compiled once per signature. Unweighted steps
        (`weighted=False`) take no sample-weight feed: every sample weighs 1."""
        feed_weights = weighted
        key = (mode, feed_weights, tuple((a.dtype.str, a.shape[1:]) for a in ys),
               tuple(id(w) for w in self.trainable_weights) if mode == "train" else ())
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
                if mode == "train":
                    outs = flatten(self._forward(self._nested_inputs, training=True))
                else:
                    outs = self.outputs
                targets = [array_ops.placeholder(_dtypes.as_dtype(a.dtype),
                                                 [None] + list(a.shape[1:]),
                                                 name=f"{n}_target")
                           for a, n in zip(ys, self.output_names)]
                if feed_weights:
                    sw = array_ops.placeholder("float32", [None], name="sample_weight")
                else:  # ones, [batch]: no per-step host-to-device copy of weights
                    sw = array_ops.fill(array_ops.shape(targets[0])[:1],
                                        array_ops.constant(1.0, dtype="float32"))
                batch = math_ops.cast(array_ops.shape(sw)[0], "float32")
                out_losses, updates = [], []
                aligned = []
                for i, (yt, yp) in enumerate(zip(targets, outs)):
                    yt = _align(yt, yp, tr["loss_ids"][i])
                    aligned.append((yt, yp))
                    if tr["loss_fns"][i] is None:
                        out_losses.append(None)
                        continue
                    per = _per_sample(tr["loss_fns"][i], yt, yp)
                    out_losses.append(math_ops.reduce_sum(per * sw) / batch)
                terms = [l * w if w != 1.0 else l for l, w in zip(out_losses, tr["loss_weights"])
                         if l is not None]
                reg = self.losses
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
                step_ops = list(updates)
                if mode == "train":
                    self._assert_compiled()
                    tvars = self.trainable_weights
                    if tvars:
                        grads = gradients(total, tvars)
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
        fn = self.session._make_raw_callable([step] + results, feeds)
        self._fns[key] = fn
        if mode == "train":
            self._train_graph_built = True
        return fn

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
            fn = self.session._make_raw_callable(self.outputs, list(self.inputs))
            self._fns["predict"] = fn
        return fn

    # ------------------------------------------------------------ loops
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1):
        """Trains for `epochs` epochs over `x`, `y` (numpy arrays, lists or dicts of them).

        `validation_split` holds out the LAST fraction of the samples (before shuffling).
        Epoch logs are sample-weighted means over all batches (a short last batch counts
        by its size). Returns the `History` callback (`.history`: per-epoch lists, with
        ``val_``-prefixed validation entries).

        Raises:
          ValueError: mismatched sample counts or shapes, before any step runs.
          RuntimeError: the model is not compiled.
        """
        from mylib import callbacks as cbks

        self._assert_compiled()
        if y is None:
            raise ValueError("`y` is required: mylib fits (x, y) arrays.")
        batch_size = 32 if batch_size is None else int(batch_size)
        if batch_size <= 0:
            raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
        xs, ys, sw, n = self._prepare(x, y, sample_weight, class_weight)
        weighted = sample_weight is not None or class_weight is not None
        val = None
        if validation_data is not None:
            vd = tuple(validation_data)
            if len(vd) not in (2, 3):
                raise ValueError("`validation_data` must be (x_val, y_val) or "
                                 "(x_val, y_val, val_sample_weight).")
            val = self._prepare(vd[0], vd[1], vd[2] if len(vd) == 3 else None)
        elif validation_split:
            if not 0 < validation_split < 1:
                raise ValueError(f"`validation_split` must be in [0, 1). Received: "
                                 f"{validation_split}")
            split_at = int(math.floor(n * (1.0 - validation_split)))
            if split_at == 0 or split_at == n:
                raise ValueError(f"validation_split={validation_split} leaves no training or "
                                 f"no validation samples out of {n}.")
            val = ([a[split_at:] for a in xs], [a[split_at:] for a in ys], sw[split_at:],
                   n - split_at)
            xs, ys, sw, n = [a[:split_at] for a in xs], [a[:split_at] for a in ys], \
                sw[:split_at], split_at
        if n == 0:
            raise ValueError("Expected at least one training sample; received 0.")
        train_fn = self._step_fn("train", ys, weighted)
        if val is not None:
            self._step_fn("test", val[1])
        steps = int(math.ceil(n / batch_size))
        verbose = 1 if verbose == "auto" else int(verbose)
        cb = cbks.CallbackList(callbacks, add_history=True, add_progbar=verbose != 0,
                               model=self, verbose=verbose, epochs=epochs, steps=steps,
                               samples=n)
        self.stop_training = False
        reset = self._reset_metrics_op()
        sess = self.session
        names = self.metrics_names
        cb.on_train_begin()
        epoch_logs = {}
        for epoch in range(initial_epoch, epochs):
            sess.run(reset)
            cb.on_epoch_begin(epoch)
            order = np.random.permutation(n) if shuffle else None
            outs = None
            hooks = cb.needs_train_batch_hooks
            if order is not None:
                # One gather per epoch, then contiguous slices per step.
                xs_e = [a[order] for a in xs]
                ys_e = [a[order] for a in ys]
                sw_e = sw[order]
            else:
                xs_e, ys_e, sw_e = xs, ys, sw
            for step in range(steps):
                lo, hi = step * batch_size, min(n, (step + 1) * batch_size)
                batch = [a[lo:hi] for a in xs_e] + [a[lo:hi] for a in ys_e]
                if weighted:
                    batch.append(sw_e[lo:hi])
                if hooks:
                    cb.on_train_batch_begin(step)
                outs = train_fn(*batch)
                # Device arrays: converting one to float is what syncs; callbacks that
                # print do so only when they print.
                if hooks:
                    cb.on_train_batch_end(step, dict(zip(names, outs[1:])))
                if self.stop_training:
                    break
            epoch_logs = {k: float(np.asarray(v)) for k, v in zip(names, outs[1:])}
            if val is not None and (epoch + 1) % validation_freq == 0:
                vlogs = self._test_loop(val[0], val[1], val[2], validation_batch_size or
                                        batch_size, cb)
                epoch_logs.update({"val_" + k: v for k, v in vlogs.items()})
            cb.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        cb.on_train_end(epoch_logs)
        return self.history

    def _test_loop(self, xs, ys, sw, batch_size, cb=None):
        test_fn = self._step_fn("test", ys)
        self.session.run(self._reset_metrics_op())
        n = len(xs[0])
        steps = int(math.ceil(n / batch_size))
        names = self.metrics_names
        if cb is not None:
            cb.on_test_begin()
        outs = None
        for step in range(steps):
            lo, hi = step * batch_size, min(n, (step + 1) * batch_size)
            if cb is not None:
                cb.on_test_batch_begin(step)
            outs = test_fn(*[a[lo:hi] for a in xs], *[a[lo:hi] for a in ys], sw[lo:hi])
            if cb is not None:
                cb.on_test_batch_end(step, dict(zip(names, outs[1:])))
        logs = {k: float(np.asarray(v)) for k, v in zip(names, outs[1:])}
        if cb is not None:
            cb.on_test_end(logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False):
        """Loss and metrics on `x`, `y`: sample-weighted means over all samples.

        Returns:
          the loss (a float) when no metrics were compiled, else ``[loss, *metrics]`` in
          `metrics_names` order; a dict with `return_dict=True`.
        """
        from mylib import callbacks as cbks

        self._assert_compiled()
        if y is None:
            raise ValueError("`y` is required to evaluate.")
        xs, ys, sw, n = self._prepare(x, y, sample_weight)
        if n == 0:
            raise ValueError("Expected at least one sample to evaluate; received 0.")
        batch_size = 32 if batch_size is None else int(batch_size)
        verbose = 1 if verbose == "auto" else int(verbose)
        cb = cbks.CallbackList(callbacks, model=self, verbose=verbose,
                               steps=int(math.ceil(n / batch_size)))
        logs = self._test_loop(xs, ys, sw, batch_size, cb)
        if verbose:
            print(" - ".join(f"{k}: {v:.4f}" for k, v in logs.items()))
        if return_dict:
            return logs
        vals = [logs[k] for k in self.metrics_names]
        return vals[0] if len(vals) == 1 else vals

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """Inference outputs for `x`, batch by batch (``training=False``), concatenated.

        Returns:
          a numpy array, or a list/dict of them for several outputs.
        """
        from mylib import callbacks as cbks

        xs, _, _, n = self._prepare(x)
        batch_size = 32 if batch_size is None else int(batch_size)
        fn = self._predict_fn()
        steps = int(math.ceil(n / batch_size))
        cb = cbks.CallbackList(callbacks, model=self, verbose=0, steps=steps)
        cb.on_predict_begin()
        chunks = []
        for step in range(steps):
            lo, hi = step * batch_size, min(n, (step + 1) * batch_size)
            cb.on_predict_batch_begin(step)
            out = fn(*[a[lo:hi] for a in xs])
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
        self._assert_compiled()
        xs, ys, sw, _ = self._prepare(x, y, sample_weight, class_weight)
        fn = self._step_fn("train", ys)
        self.session.run(self._reset_metrics_op())
        outs = fn(*xs, *ys, sw)
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

    def get_config(self):
        cfg = {"name": self.name, "trainable": self.trainable}
        if self._is_graph_network:
            cfg["layers"] = [{"class_name": type(l).__name__, "config": l.get_config()}
                             for l in self.layers]
        return cfg


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


def _per_sample(loss_fn, y_true, y_pred):
    """Per-sample losses [batch]: loss objects through their `call`, functions directly;
    extra axes are averaged (Keras's per-sample reduction)."""
    call = getattr(loss_fn, "call", None)
    per = call(y_true, y_pred) if call is not None else loss_fn(y_true, y_pred)
    if per.shape.rank is not None and per.shape.rank > 1:
        per = math_ops.reduce_mean(per, axis=list(range(1, per.shape.rank)))
    elif per.shape.rank == 0:
        raise ValueError(f"The loss {loss_fn!r} returned a scalar; losses used by compile "
                         "must return one value per sample.")
    return per
