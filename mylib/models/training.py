"""`Model`: compile, fit, evaluate, predict, summary, weights.

The training step is one graph, built once per model/target signature: the forward
pass with ``training=True``, the per-output losses (sample-weighted, summed over the
batch and divided by the batch size, as Keras), the regularization losses,
`ml.gradients`, the optimizer's update ops, and the metric updates (the loss tracker
and each compiled metric accumulate totals and counts in Variables). Each step of
`fit` calls the session's raw callable with numpy batch slices: nothing is copied back
to the host per step; the fetched running metric values stay on the device until a
progress bar or the end of the epoch reads them.

Input handling (arrays, weights, validation_split, datasets, epoch feeds) lives in
`data_adapter.py`; the step graph itself is built in `step.py`.
"""

from __future__ import annotations

import functools
import itertools
import math
import sys
import warnings

import numpy as np

from mylib import losses as losses_mod
from mylib.core import dtypes as _dtypes
from mylib.core.compat_args import warn_ignored
from mylib.core.graph import GraphKeys, Tensor
from mylib.core.ops import array_ops
from mylib.layers import array_call
from mylib.layers.base import Input, InputLayer, Layer, flatten, pack_like
from mylib.models import custom_step as cs
from mylib.models import data_adapter as da
from mylib.models import step as step_lib
from mylib.models.network import GraphNetworkMixin
from mylib.runtime import keras_session as backend
from mylib.runtime.policy import get_policy

# Batches per call of the k-step loop `predict` and `evaluate` use on arrays when
# `steps_per_execution` is not set (and there are at least that many): one compiled
# program more, 16 times fewer dispatches (the digits MLP, 57 batches: 3 loop calls and
# 9 single ones).
_PREDICT_LOOP = 16

# fit's automatic grouping (``compile(steps_per_execution=None)``, see `_AutoLoop`): at
# most this many steps per loop call, and only for steps XLA's cost analysis puts
# under this many floating-point operations (on CPU about 2 ms; a longer step's
# dispatch overhead is under a few percent of it), on feeds of at most this many bytes
# per call.
_AUTO_LOOP = 16
_AUTO_LOOP_FLOPS = {"cpu": 2.5e8}
_AUTO_LOOP_FLOPS_OTHER = 5e10
_AUTO_LOOP_BYTES = 32 << 20
# ... and only for fits of at least this many full batches after the first epoch: the
# loop's lowering and compile (0.6-0.9 s for the digits MLP on a 2-core CPU, which the
# second epoch waits for) then cost less than the dispatches they save (100-200 us a
# step there).
_AUTO_LOOP_MIN_STEPS = 8192


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

    Called on numpy / JAX arrays, ``model(x, training=True, ...)`` runs that graph on
    them with every call argument (building a deferred model first), applies the
    call's state updates, and returns numpy arrays (see `mylib.layers.array_call`).
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
        return self._mode_names("train")

    def _mode_names(self, mode):
        """The log names of `mode`'s ('train' or 'test') step results."""
        custom = self.__dict__.get("_custom_names") or {}
        if mode in custom:
            return list(custom[mode])
        if custom and "train" in custom and mode == "test" and not self._tracking:
            return list(custom["train"])
        return list(self._tracking["names"]) if self._tracking else ["loss"]

    # ------------------------------------------------------------ Keras 3 steps
    # Overriding `train_step` / `test_step` makes fit / evaluate build their step graph
    # by calling it once on symbolic batches (see mylib.models.custom_step).
    def train_step(self, data):
        """One training step on a batch `data` (``x``, ``(x, y)`` or ``(x, y,
        sample_weight)`` of symbolic tensors); returns a dict of logs.

        Override it for custom training (Keras 3). It is called once per input
        signature, to BUILD the step graph that `fit` runs every step; compute
        gradients with ``ml.gradients(loss, self.trainable_variables)`` and apply them
        with ``self.optimizer.apply(grads, self.trainable_variables)``. Every state
        update it makes (metrics, optimizers) runs each step, in the order written.
        The default does forward, `compute_loss`, gradients, the optimizer update and
        `compute_metrics`.
        """
        return cs.default_train_step(self, data)

    def test_step(self, data):
        """One evaluation step (see `train_step`); the default runs the model with
        ``training=False``, `compute_loss` and `compute_metrics`."""
        return cs.default_test_step(self, data)

    def predict_step(self, data):
        """The outputs for a batch of inputs `data` (symbolic); `predict` builds its
        graph by calling it once. Default: ``self(x, training=False)``."""
        return cs.default_predict_step(self, data)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The compiled loss of a batch plus the regularization losses (a scalar
        float32 tensor); see `mylib.models.custom_step.compute_loss`."""
        return cs.compute_loss(self, x, y, y_pred, sample_weight, training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Updates the compiled metrics with a batch; returns `get_metrics_result()`."""
        return cs.compute_metrics(self, x, y, y_pred, sample_weight)

    def get_metrics_result(self):
        """``{name: result tensor}`` of `metrics` (containers flattened)."""
        return cs.get_metrics_result(self)

    @property
    def metrics(self):
        """Keras 3's list of the model's metric objects: the ``"loss"`` tracker and the
        compiled-metrics container once compiled, then each metric held in an
        attribute. `fit` and `evaluate` reset them at the start of each epoch / run
        when the model has custom steps. Override the property to choose them."""
        return cs.model_metrics(self)

    @property
    def compiled_metrics(self):
        """The container of compile's metrics (``update_state(y, y_pred,
        sample_weight)``, ``result()``; empty when compile named none)."""
        return cs.compile_metrics(self) or cs.CompileMetrics(self)

    @property
    def compiled_loss(self):
        """Keras 2's ``compiled_loss(y, y_pred, sample_weight=None,
        regularization_losses=None)``: `compute_loss`, recorded in the loss tracker."""
        return cs.CompiledLoss(self)

    def _custom_steps(self):
        return cs.uses_custom_steps(self)

    def _fits_without_y(self):
        """Whether `fit` / `evaluate` take `x` alone: the model's own steps decide
        what the targets are, or (Keras 3's endpoint-layer models) it was compiled
        with no `loss` and no metrics, its layers' `add_loss` terms being the
        objective."""
        if self._custom_steps():
            return True
        args = self.__dict__.get("_compile_args")
        return bool(args) and args.get("loss") is None and not args.get("metrics") \
            and not args.get("weighted_metrics")

    def call(self, inputs, training=None):
        if self._is_graph_network:
            return self._run_graph(inputs, training)
        raise NotImplementedError(f"Model {type(self).__name__} must implement `call` "
                                  "(or be built with Model(inputs, outputs)).")

    def __call__(self, inputs, *args, **kwargs):
        flat = flatten(inputs)
        if flat and not any(isinstance(x, Tensor) for x in flat):
            # Eager-style call on data: the model's own graph run on the arrays (built
            # first from their shapes if needed), honouring `training` and every other
            # argument, state updates applied; numpy outputs (see
            # mylib.layers.array_call).
            x = da.as_arrays(inputs, "x")
            self._ensure_built(da.flat_arrays(x) if self.inputs is None else None, x)
            xs = da.standardize(x, self.inputs, self.input_names, "input",
                                self._nested_inputs, self.name)
            return array_call.call_on_arrays(
                self, pack_like(self._nested_inputs, xs), args, kwargs, self.graph,
                extra_key=tuple(id(t) for t in self.inputs + self.outputs))
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
        with g.as_default(), g.collectable():
            try:
                outs = self._forward(ins, training=None)
            except NotImplementedError:
                # A model trained only through its own train_step (a GAN wrapper)
                # needs no `call`: its inputs are the data placeholders, no outputs.
                if not self._custom_steps() or type(self).call is not Model.call:
                    raise
                outs = []
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
            ins = [Input(shape=a.shape[1:], dtype=_dtypes.as_dtype(da.np_dtype_for(a)).name)
                   for a in x_list]
            if isinstance(x_struct, dict):
                ins = dict(zip(sorted(x_struct), ins))
            elif not isinstance(x_struct, (list, tuple)):
                ins = ins[0]
            self._trace(ins)
        backend.ensure_initialized(self.weights)

    # ------------------------------------------------------------ data
    def _check_label_range(self, ys):
        """Class ids for a sparse loss must lie in [0, num_classes) (see
        `step.check_label_range`); before compile's tracking exists, the loss comes
        from the compile arguments."""
        loss_ids = (getattr(self, "_tracking", None) or {}).get("loss_ids")
        if loss_ids is None:
            comp = getattr(self, "_compile_args", None) or getattr(self, "_compiled", None)
            loss = comp.get("loss") if isinstance(comp, dict) else None
            if loss is None:
                return
            loss_ids = self._per_output(loss, "loss") if not isinstance(loss, (str,)) \
                else [loss] * len(self.outputs)
        step_lib.check_label_range(self, ys, loss_ids)

    def _prepare(self, x, y=None, sample_weight=None, class_weight=None):
        """Arrays for a run: (xs, ys, sw, n), checked before any step runs."""
        x = da.as_arrays(x, "x")
        if x is None:
            raise ValueError("`x` is required.")
        self._ensure_built(da.flat_arrays(x) if self.inputs is None else None, x)
        xs = da.standardize(x, self.inputs, self.input_names, "input", self._nested_inputs,
                            self.name)
        ys = None
        if y is not None and self._custom_steps():
            # The user's step decides what the targets are: any structure of arrays.
            y = da.as_arrays(y, "y")
            self._custom_y_struct = y
            ys = [np.ascontiguousarray(a, dtype=da.np_dtype_for(a))
                  for a in da.flat_arrays(y)]
        elif y is not None:
            y = self._fill_unused_targets(da.as_arrays(y, "y"), xs)
            ys = da.standardize(y, self.outputs, self.output_names,
                                "output", self._nested_outputs, self.name)
            self._check_label_range(ys)
        arrays = xs + (ys or [])
        names = [f"x[{n}]" for n in self.input_names] + [f"y[{n}]" for n in self.output_names
                                                         ][:len(ys or [])]
        sw = None
        if sample_weight is not None:
            sw = da.sample_weight_array(sample_weight, ys,
                                        None if self._custom_steps() else self.output_names)
            arrays.append(sw)
            names.append("sample_weight")
        n = da.check_lengths(arrays, names)
        if class_weight is not None and ys is not None:
            sw = da.apply_class_weight(class_weight, ys[0], self.outputs[0].shape.rank, sw)
        if ys is None and self._fits_without_y():
            ys = []
        if ys is not None and sw is None:
            sw = np.ones(n, np.float32)
        return xs, ys, sw, n

    def _fill_unused_targets(self, y, xs):
        """A dict of targets may leave out outputs that have no loss and no metric (as
        in Keras): they get zeros of the output's shape, which no loss or metric reads
        (an unknown dimension is 1). Other missing keys are left to the error that
        names them."""
        args = self.__dict__.get("_compile_args")
        if not isinstance(y, dict) or not args or args.get("loss") is None or not xs:
            return y
        nested = self._nested_outputs
        keys = sorted(nested) if isinstance(nested, dict) else list(self.output_names)
        missing = [k for k in keys if k not in y]
        if not missing or len(keys) != len(self.outputs):
            return y
        try:
            losses = self._per_output(args["loss"], "loss")
            mets = [self._per_output(args[a] or [], "metrics")
                    for a in ("metrics", "weighted_metrics")]
        except ValueError:
            return y
        n = len(xs[0])
        y = dict(y)
        for k in missing:
            i = keys.index(k)
            if losses[i] is not None or any(m[i] for m in mets):
                return y  # a loss or metric reads it: "No data provided" names it
            t = self.outputs[i]
            shape = [1 if d is None else d for d in t.shape.as_list()[1:]]
            y[k] = np.zeros([n] + shape, t.dtype.np)
        return y

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

            Left at None (the default), each call runs one batch, except that `fit`
            on arrays groups batches by itself where nothing observes single steps
            (a mylib addition; Keras runs one batch per call): with at least 16
            full batches an epoch, at least 8192 of them after the first epoch, no
            callback hooking every batch other than the progress bar, and steps
            XLA's cost analysis puts under about 2 ms on CPU, the k-step loop of
            the same step compiles on a background thread during the first epoch
            (the second epoch waits for it, so which steps are grouped never
            depends on timing) and from the second epoch on
            runs groups of up to 16 full batches per call (the batches left over
            and a short last batch, one call each). The trained values are those
            of single steps up to floating-point rounding (XLA may fuse a step in a
            loop body differently: last-ulp differences on some models, none on
            dense and recurrent ones in the tests); pass ``steps_per_execution=1``
            for exactly one batch per call.
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
                                  steps_per_execution=int(steps_per_execution or 1),
                                  auto_steps=steps_per_execution is None)
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
               tuple(id(w) for w in self.trainable_weights) if mode == "train" else (),
               self.__dict__.get("_custom_test_weighted", False)
               if mode == "test" and self._custom_steps() else None)
        if loop:
            self._step_fn(mode, ys, weighted, sw_ndim)
            return self._fns.get(key + ("loop",))
        fn = self._fns.get(key)
        if fn is not None:
            return fn
        if self._custom_steps():
            y_struct = self.__dict__.get("_custom_y_struct")
            if y_struct is None or len(da.flat_arrays(y_struct)) != len(ys):
                y_struct = ys[0] if len(ys) == 1 else list(ys)
            step, results, feeds, names = cs.build_custom_step(
                self, mode, ys, y_struct, feed_weights, sw_ndim,
                pass_weights=mode == "train" or self.__dict__.get("_custom_test_weighted",
                                                                  False))
            self.__dict__.setdefault("_custom_names", {})[mode] = names
        else:
            if self._tracking is None:
                self._tracking = step_lib.build_tracking(self, ys)
            step_lib.check_targets(self, ys)
            step, results, feeds = step_lib.build_step_graph(self, mode, ys, feed_weights,
                                                             sw_ndim)
        self._init_all()
        fn = self._compile_step(mode, key, step, results, feeds)
        self._fns[key] = fn
        if mode == "train":
            self._train_graph_built = True
        return fn

    def _compile_step(self, mode, key, step, results, feeds):
        """The callable of a step graph: the session's device callable (and its k-step
        loop, cached under ``key + ("loop",)``), or the execution policy's scheduled
        step (a parameter-server strategy runs training steps on its workers)."""
        g = self.graph
        policy = get_policy(g)
        fn = None
        if mode == "train" and policy is not None:
            with g.as_default(), g.collectable():  # the metrics read after the scheduled steps ran
                plain = step_lib.metric_results(self._tracking)
            fn = policy.schedule_step(g, [step] + results, feeds, plain)
        if fn is None:
            fn = self.session.make_device_callable([step] + results, feeds)
            self._fns[key + ("loop",)] = self.session.make_device_loop_callable(
                [step] + results, feeds)
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

    def _reset_metrics_op(self, mode="train"):
        """The op zeroing the metric state of `mode`'s steps ('train', 'test' or
        'all'): training and evaluation keep separate totals."""
        key = "reset" if mode == "train" else "reset_" + mode
        op = self._fns.get(key)
        if op is None:
            modes = ("train", "test") if mode == "all" else (mode,)
            if self._custom_steps():
                objs = cs.metric_objects(self.metrics)
            else:
                objs = [o for md in modes for o in
                        step_lib.metric_objects(step_lib.for_mode(self._tracking, md))]
            with self.graph.as_default(), self.graph.collectable():
                op = array_ops.group(*[o.reset_state() for o in objs],
                                     name=f"reset_{mode}_metrics")
            self._fns[key] = op
        return op

    def _reset_metrics(self, mode="train"):
        """Runs `_reset_metrics_op(mode)` through a callable the model keeps (its plan
        goes when the model does)."""
        key = ("reset_fn", mode)
        fn = self._fns.get(key)
        if fn is None:
            fn = self._fns[key] = self.session.make_callable(self._reset_metrics_op(mode))
        fn()

    def reset_states(self):
        """Zeroes the kept states of every stateful recurrent layer in the model (TF
        Keras's `Model.reset_states`; Keras 3 has it on the layers only)."""
        seen, todo = set(), list(self.layers)
        while todo:
            layer = todo.pop()
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            if getattr(layer, "stateful", False) and hasattr(layer, "reset_states"):
                layer.reset_states()
            todo.extend(getattr(layer, "layers", None) or layer._flat_layers())

    def reset_metrics(self):
        if self._tracking is not None or (self._custom_steps() and self.inputs is not None):
            self._reset_metrics("all")

    def _predict_fn(self):
        fn = self._fns.get("predict")
        if fn is None:
            outs = self.outputs
            if cs.overrides(self, "predict_step"):
                outs, self._predict_struct = cs.build_predict_outputs(self)
            self._init_all()  # weights, and non-weight state (stateful RNNs)
            fn = self.session.make_device_callable(outs, list(self.inputs))
            self._fns["predict"] = fn
            self._fns["predict_loop"] = self.session.make_device_loop_callable(
                outs, list(self.inputs), all_steps=True)
        return fn

    def _predict_loop_k(self, cb, n_batches):
        """Full batches per call of `predict`'s k-step loop: ``steps_per_execution``
        when set, else `_PREDICT_LOOP` once there are that many full batches; 1 (one
        batch per call) with `run_eagerly` or callbacks that hook every batch."""
        if self._compile_args.get("run_eagerly") if getattr(self, "_compile_args", None) \
                else False:
            return 1
        if cb._overriding("on_predict_batch_begin", "on_predict_batch_end"):
            return 1
        if any(t.shape.rank is None or t.shape.rank < 1 for t in self.outputs):
            return 1
        k = (getattr(self, "_compile_args", None) or {}).get("steps_per_execution", 1)
        if k > 1:
            return k
        return _PREDICT_LOOP if n_batches >= _PREDICT_LOOP else 1

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
          sample_weight: ``[N]`` per-sample or ``[N, T]`` per-timestep weights, or for
            a model of several outputs one ``[N]`` array per output (a dict by output
            name or a list in output order; an output left out weighs 1).
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
        batch_size, spe, do_val = _fit_options(batch_size, steps_per_epoch, validation_freq,
                                               shuffle)
        epochs = da.int_arg("epochs", epochs, minimum=0, allow_none=False)
        initial_epoch = da.int_arg("initial_epoch", initial_epoch, minimum=0,
                                   allow_none=False)
        validation_steps = da.int_arg("validation_steps", validation_steps)
        validation_batch_size = da.int_arg("validation_batch_size", validation_batch_size)
        verbose = da.verbose_arg(verbose)
        da.class_weight_arg(class_weight)
        if isinstance(validation_split, (bool, str)) or not isinstance(
                validation_split, (int, float, np.integer, np.floating)) or \
                not 0 <= validation_split < 1:
            raise ValueError("`validation_split` must be a float in [0, 1). Received: "
                             f"validation_split={validation_split!r}.")
        if da.is_stream(x):
            data = da.stream_fit_inputs(self, x, y, sample_weight, validation_split,
                                        class_weight, spe)
        else:
            data = da.array_fit_inputs(
                self, x, y, sample_weight, class_weight,
                validation_split if validation_data is None else 0.0, batch_size, shuffle,
                spe, validation_batch_size, validation_steps)
        val = data.val if validation_data is None else da.validation_source(
            self, validation_data, validation_steps, validation_batch_size or batch_size)
        # A custom test_step sees (x, y, sample_weight) only where weights were given.
        self._custom_test_weighted = (
            validation_data is None and sample_weight is not None) or (
            isinstance(validation_data, (tuple, list)) and len(validation_data) == 3)
        train_fn = self._step_fn("train", data.ys, data.weighted, sw_ndim=data.sw_ndim)
        if val is not None:  # (ys signature, sw ndim, batches())
            self._step_fn("test", val[0], sw_ndim=val[1])
        cb = cbks.CallbackList(callbacks, add_history=True, add_progbar=verbose != 0,
                               model=self, verbose=verbose, epochs=epochs, steps=data.steps,
                               samples=data.n)
        self.stop_training = False
        self._reset_metrics_op()
        runner = self._train_steps(train_fn, data)
        auto = self._auto_loop(data, cb, batch_size, runner, epochs - initial_epoch)
        self._resume_at = None
        cb.on_train_begin()
        initial_epoch, skip = self._resume_point(initial_epoch)
        epoch_logs = {}
        for epoch in range(initial_epoch, epochs):
            self._reset_metrics()
            cb.on_epoch_begin(epoch)
            outs = self._train_epoch(cb, data.epoch_feeds, skip, runner, auto)
            skip = 0
            if outs is None:
                warnings.warn("Your input ran out of data; interrupting training. Make sure "
                              "the dataset or generator can produce `steps_per_epoch * "
                              "epochs` batches (e.g. with `.repeat()`).", stacklevel=2)
                break
            epoch_logs = da.host_logs(self._mode_names("train"), outs[1:])
            if val is not None and do_val(epoch):
                vlogs = self._test_loop(val[2](), val[0], cb, sw_ndim=val[1])
                epoch_logs.update({"val_" + k: v for k, v in vlogs.items()})
            cb.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        cb.on_train_end(epoch_logs)
        return self.history

    def _resume_point(self, initial_epoch):
        """``(first epoch, steps of it to skip)``: where an interrupted run resumes, as
        `BackupAndRestore` set it in ``on_train_begin`` (epoch, step), else
        `initial_epoch` from its start."""
        resume, self._resume_at = self._resume_at, None
        if resume is None:
            return initial_epoch, 0
        return max(initial_epoch, resume[0]), resume[1]

    def _train_steps(self, train_fn, data):
        """``(k, run)``: batches per execution and ``run(stacked, feeds)`` -> the step's
        outputs, through the k-step loop for stacked feeds."""
        call = self._call_step
        eager = self._compile_args.get("run_eagerly")
        loop_fn, k = self._loop_fn("train", data.ys, data.weighted, data.sw_ndim)

        def run(stacked, b):
            if stacked:
                return loop_fn(*b)
            return call(train_fn, b) if eager else train_fn(*b)
        # One step per call with nothing to hook: the epoch calls the step directly.
        run.direct = train_fn if k == 1 and not eager else None
        return k, run

    def _auto_loop(self, data, cb, batch_size, runner, epochs):
        """fit's automatic grouping of steps (see `compile`'s `steps_per_execution`):
        an `_AutoLoop`, or None where it does not apply."""
        args = self._compile_args
        if not args.get("auto_steps") or args.get("run_eagerly") or runner[0] != 1 \
                or data.n is None or epochs < 2:
            return None
        full = (data.steps if data.steps is not None and data.n >= data.steps * batch_size
                else data.n // batch_size)
        if full < _AUTO_LOOP or full * (epochs - 1) < _AUTO_LOOP_MIN_STEPS:
            return None
        from mylib.callbacks import ProgbarLogger

        if any(type(c) is not ProgbarLogger for c in cb._hooking(
                "on_train_batch_begin", "on_batch_begin", "on_train_batch_end",
                "on_batch_end")):
            return None  # a callback that watches every step sees every step
        loop_fn = self._step_fn("train", data.ys, data.weighted, data.sw_ndim, loop=True)
        if loop_fn is None or not hasattr(loop_fn, "precompile"):
            return None
        # Groups of equal size: the full batches of an epoch leave fewer over than
        # there are groups.
        k = full // -(-full // _AUTO_LOOP)
        return _AutoLoop(loop_fn, k, runner[1], batch_size)

    def _train_epoch(self, cb, epoch_feeds, skip, runner, auto=None):
        """Runs one epoch's training steps (after the first `skip`, done by an
        interrupted run); the last step's outputs, None if there was no batch."""
        k, run = runner
        outs = None
        hooks = cb.needs_train_batch_hooks
        split_last, starting = True, False
        if auto is not None:
            if auto.handle is None:  # the first epoch: starts compiling the loop
                starting = True
            elif not self.stop_training and auto.wait():
                # Later epochs: groups of auto.k batches per call. (Stopped in
                # on_epoch_begin, the epoch runs one step, as without grouping.)
                k, run, split_last = auto.k, auto.run, False
        grouped = getattr(epoch_feeds, "grouped", None)
        # Arrays in groups of k: cut as groups, not batch by batch.
        execs = grouped(k, split_last) if k > 1 and not skip and grouped else None
        if execs is None:
            feeds = enumerate(epoch_feeds())
            if skip:  # the steps an interrupted run already did (BackupAndRestore)
                feeds = itertools.islice(feeds, skip, None)
            if starting:
                feeds = auto.starting(feeds)
            direct = None if hooks or k > 1 else run.direct
            if direct is not None:  # the hot path of a plain fit: no per-batch work
                for _, b in feeds:
                    outs = direct(*b)
                    if self.stop_training:
                        break
                return outs
            execs = da.executions(feeds, k, split_last)
        names = self.metrics_names
        for first, last, calls in execs:
            if hooks:
                cb.on_train_batch_begin(first)
            for stacked, b in calls:
                outs = run(stacked, b)
            # Device arrays: converting one to float is what syncs; callbacks that
            # print do so only when they print.
            if hooks:
                cb.on_train_batch_end(last, dict(zip(names, outs[1:])))
            if self.stop_training:
                break
        return outs

    def _test_loop(self, batches, ys, cb=None, sw_ndim=1, batch_size=None, weighted=True,
                   auto_loop=False):
        """Runs the test step over `batches` (feed lists [*xs, *ys, sw]; without `sw`
        when not `weighted`: the step then weighs every sample 1 with no weight feed).

        A short batch (smaller than `batch_size`, default the first batch's size) runs
        padded to a power of two (at most that size) with rows that weigh nothing
        (see `step.build_step_graph`), so evaluating data of any length compiles at
        most ``1 + ceil(log2(batch_size))`` programs with the same results.

        With `auto_loop` (many batches of arrays) and no ``steps_per_execution``, groups
        of `_PREDICT_LOOP` batches run as one call of the k-step loop where no callback
        hooks every batch; the last group, one batch per call (no program per length)."""
        test_fn = self._step_fn("test", ys, weighted, sw_ndim=sw_ndim)
        loop_fn, k = self._loop_fn("test", ys, weighted, sw_ndim)
        split_last = True
        if k == 1 and auto_loop and not self._compile_args.get("run_eagerly") and not (
                cb is not None and cb._overriding("on_test_batch_begin", "on_test_batch_end")):
            loop_fn = self._step_fn("test", ys, weighted, sw_ndim, loop=True)
            if loop_fn is not None:
                k, split_last = _PREDICT_LOOP, False
        self._reset_metrics("test")
        if not self._custom_steps():
            # The built-in test step takes each batch's number of real rows (n_valid).
            exact = step_lib.for_mode(self._tracking, "test").get("exact_padding", False)
            batches = _with_n_valid(batches, batch_size, exact)
        names = self._mode_names("test")
        pad_last = None
        if k > 1 and batch_size is not None and not self._custom_steps() and exact:
            pad_last = functools.partial(_pad_test_group, loop_fn, k, batch_size)
        if cb is not None:
            cb.on_test_begin()
        outs = None
        for first, last, calls in da.executions(enumerate(batches), k, split_last,
                                                pad_last):
            if cb is not None:
                cb.on_test_batch_begin(first)
            for stacked, b in calls:
                outs = loop_fn(*b) if stacked else self._call_step(test_fn, b)
            if cb is not None:
                cb.on_test_batch_end(last, dict(zip(names, outs[1:])))
        if outs is None:
            raise ValueError("No batches to evaluate: the data is empty (or `steps` is 0).")
        logs = da.host_logs(names, outs[1:])
        if cb is not None:
            cb.on_test_end(logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False):
        """Loss and metrics on `x`, `y` (arrays, or `x` a dataset / generator of
        ``(x, y[, sample_weight])`` batches, `steps` of them when given): sample-weighted
        means over all samples. A short batch runs padded to a power of two (at most
        `batch_size`) with rows of weight 0, so data of any length compiles at most
        ``1 + ceil(log2(batch_size))`` programs and the results are unchanged.

        Returns:
          the loss (a float) when no metrics were compiled, else ``[loss, *metrics]`` in
          `metrics_names` order; a dict with `return_dict=True`.
        """
        from mylib import callbacks as cbks

        self._assert_compiled()
        batch_size = da.int_arg("batch_size", batch_size) or 32
        steps = da.int_arg("steps", steps)
        verbose = da.verbose_arg(verbose)
        if da.is_stream(x):
            if y is not None:
                raise ValueError("`y` must not be given when `x` is a dataset or a generator.")
            stream = da.BatchStream(x, steps, "x")
            xb, yb, swb = da.unpack_batch(stream.peek())
            if yb is None and not self._fits_without_y():
                raise ValueError("The dataset/generator passed to evaluate must yield (x, y) "
                                 "or (x, y, sample_weight) batches.")
            _, ys, sw, _ = self._prepare(xb, yb, swb)
            self._custom_test_weighted = swb is not None
            batches = da.stream_feeds(self, stream, None, True, with_y=yb is not None)
            nsteps = stream.steps_hint
        else:
            if y is None and not self._fits_without_y():
                raise ValueError("`y` is required to evaluate.")
            xs, ys, sw, n = self._prepare(x, y, sample_weight)
            self._custom_test_weighted = sample_weight is not None
            if n == 0:
                raise ValueError("Expected at least one sample to evaluate; received 0.")
            # Without sample weights the built-in step weighs every sample 1 itself:
            # no weight array to copy to the device each batch.
            weighted = sample_weight is not None or self._custom_steps()
            batches = da.array_feeds(xs, ys, sw if weighted else None, n, batch_size, steps)
            nsteps = steps or int(math.ceil(n / batch_size))
        cb = cbks.CallbackList(callbacks, model=self, verbose=verbose, steps=nsteps)
        logs = self._test_loop(batches, ys, cb, sw_ndim=sw.ndim,
                               batch_size=None if da.is_stream(x) else batch_size,
                               weighted=da.is_stream(x) or weighted,
                               auto_loop=not da.is_stream(x) and nsteps >= _PREDICT_LOOP)
        if verbose:
            print(" - ".join(f"{k}: {v:.4f}" for k, v in logs.items()))
        if return_dict:
            return logs
        vals = list(logs.values())
        return vals[0] if len(vals) == 1 else vals

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """Inference outputs for `x` (arrays, or a dataset / generator of ``x`` or
        ``(x, ...)`` batches, `steps` of them when given), batch by batch
        (``training=False``), concatenated.

        A short batch of arrays (the last one, or all of `x` when it has fewer than
        `batch_size` samples) runs padded to the next power of two (at most
        `batch_size`) with copies of its last sample, and its outputs are sliced
        back: predicting on data of any length compiles at most
        ``1 + ceil(log2(batch_size))`` programs. Each sample's outputs depend on that
        sample only (as for any inference graph without layers that mix the batch).

        On arrays of at least 16 full batches (or with ``compile(steps_per_execution=k)``)
        groups of 16 (k) full batches run as one compiled loop: one program more, far
        fewer calls; callbacks that hook every batch turn this off (they then see every
        batch, one call each). `evaluate` does the same.

        `verbose` is accepted for Keras compatibility: predict shows no progress bar
        (1 or 2 warns once).

        Returns:
          a numpy array, or a list/dict of them for several outputs.
        """
        if verbose is not None and da.verbose_arg(verbose) and verbose != "auto":
            warn_ignored("Model.predict", "verbose", "predict shows no progress bar.")
        from mylib import callbacks as cbks

        batch_size = da.int_arg("batch_size", batch_size) or 32
        steps = da.int_arg("steps", steps)
        if da.is_stream(x):
            stream = da.BatchStream(x, steps, "x")
            self._prepare(da.unpack_batch(stream.peek())[0])
            batches = da.stream_feeds(self, stream, None, False, with_y=False)
            nsteps = stream.steps_hint
        else:
            xs, _, _, n = self._prepare(x)
            batches = (da.array_feeds(xs, [], None, n, batch_size, steps) if n else iter(()))
            nsteps = steps or int(math.ceil(n / batch_size))
        fn = self._predict_fn()
        cb = cbks.CallbackList(callbacks, model=self, verbose=0, steps=nsteps)
        cb.on_predict_begin()
        chunks = []
        k = 1 if da.is_stream(x) else self._predict_loop_k(cb, n // batch_size)
        if k > 1:
            # Runs of k full batches go through the k-step loop (one call, outputs
            # stacked [k, batch, ...]); the rest, one batch per call as below.
            batches = self._predict_runs(batches, batch_size, k, cb, chunks)
        for step, batch in enumerate(batches):
            cb.on_predict_batch_begin(step)
            real = len(batch[0]) if batch and np.ndim(batch[0]) else None
            if real and not da.is_stream(x):
                # A short batch is padded up to a power of two (at most the batch
                # size) and the outputs sliced back: one predict signature compiles
                # at most 1 + log2(batch_size) programs whatever the data lengths.
                padded = da.pad_batch(batch, da.bucket_size(real, batch_size))
            else:
                padded = batch
            out = self._call_step(fn, padded)
            if real is not None and len(padded[0]) != real:
                size = len(padded[0])
                if all(o is None or (np.ndim(o) and len(o) == size) for o in out):
                    out = [None if o is None else np.asarray(o)[:real] for o in out]
                else:
                    # An output whose rows are not the samples' (a concatenation
                    # along the batch axis, a batch reduction): run the batch as is.
                    out = self._call_step(fn, batch)
            chunks.append(out)
            cb.on_predict_batch_end(step, {"outputs": out})
        cb.on_predict_end()
        struct = self.__dict__.get("_predict_struct", self._nested_outputs) \
            if cs.overrides(self, "predict_step") else self._nested_outputs
        n_out = len(flatten(struct))
        if not chunks:
            res = [np.zeros([0] + t.shape.as_list()[1:], t.dtype.np) for t in self.outputs]
        else:
            res = [np.concatenate([np.asarray(c[i]) for c in chunks]) for i in
                   range(n_out)]
        return pack_like(struct, res)

    def _predict_runs(self, batches, batch_size, k, cb, chunks):
        """Runs each group of k consecutive full batches of `batches` through the
        predict loop (appending its outputs to `chunks`); yields the batches left to
        run one per call.

        The batches after the last whole group (the full ones left and the short last
        one, padded to a full batch) run as one more call of the same loop, padded to
        k with copies of the last batch, when they are at least k / 2 and the loop's
        steps write no variable and draw no random numbers (the copies then change
        nothing; no program of another length is compiled). Otherwise, and when an
        output's rows are not the batch's samples, they are yielded."""
        loop = self._fns["predict_loop"]
        group, step, rows_ok = [], 0, False

        def run(group, real_rows):
            nonlocal step, rows_ok
            m = len(group)
            cb.on_predict_batch_begin(step)
            raw = loop(*da.stack_batches(group + [group[-1]] * (k - m)))
            rows_ok = all(o is None or (o.ndim >= 2 and o.shape[1] == batch_size)
                          for o in raw)
            # Kept on the device (read once, at the end): the next group's call is
            # dispatched while this one runs.
            out = [None if o is None else
                   (o if m == k else o[:m]).reshape((-1,) + tuple(o.shape[2:]))
                   for o in raw]
            if real_rows != m * batch_size:
                out = [None if o is None else o[:real_rows] for o in out]
            chunks.append(out)
            step += m
            cb.on_predict_batch_end(step - 1, {"outputs": out})

        def rest(short):
            m = len(group) + (short is not None)
            pure = getattr(loop, "steps_are_pure", None)
            if m and 2 * m >= k and rows_ok and pure is not None and pure():
                real = len(group) * batch_size + (0 if short is None else len(short[0]))
                run(group + ([] if short is None else [da.pad_batch(short, batch_size)]),
                    real)
                return []
            return group + ([] if short is None else [short])

        for batch in batches:
            if len(batch[0]) != batch_size:
                yield from rest(batch)
                group = []
                continue
            group.append(batch)
            if len(group) == k:
                run(group, k * batch_size)
                group = []
        yield from rest(None)

    def train_on_batch(self, x, y, sample_weight=None, class_weight=None, return_dict=False):
        """One training step on one batch; returns the batch's loss (and metrics)."""
        self._assert_compiled()
        xs, ys, sw, _ = self._prepare(x, y, sample_weight, class_weight)
        fn = self._step_fn("train", ys, sw_ndim=sw.ndim)
        self._reset_metrics()
        outs = self._call_step(fn, [*xs, *ys, sw])
        logs = da.host_logs(self._mode_names("train"), outs[1:])
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
            shape_s = da.fmt_shape(shape) if isinstance(shape, tuple) else \
                ", ".join(da.fmt_shape(s) if isinstance(s, tuple) else str(s) for s in
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

    def load_training_state(self, filepath, validate_extra=None):
        """Restores what `save_training_state` wrote and returns its `extra` dict.

        All or nothing: everything (metadata against this model, `validate_extra`
        called on the `extra` dict, every array's header, size and checksum) is checked
        before any weight or optimizer variable changes.

        Raises:
          DataLossError: the file is truncated, corrupted or of another model.
          ValueError: weight or optimizer-slot shapes that do not match this model.
          Whatever `validate_extra` raises.
        """
        from mylib.models import saving

        return saving.load_training_state(self, filepath, validate_extra)

    def save_weights(self, filepath, overwrite=True):
        """Writes the weights (in `weights` order, with names and shapes) to a file."""
        from mylib.models import saving

        saving.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath):
        """Loads weights written by `save_weights` or `save`; every shape is checked
        before any weight changes."""
        from mylib.models import saving

        saving.load_weights(self, filepath)


def _pad_test_group(loop, k, batch_size, group):
    """The last group of an evaluation (feed lists ending in the device scalar
    ``n_valid``) as k full batches, for one more call of the test loop:
    its short batch padded to `batch_size` rows (they weigh 0, ``n_valid`` unchanged)
    and copies of the last batch with ``n_valid`` 0 after it (steps that add nothing
    to any metric or loss tracker). None (run the group batch by batch) when it is
    under half of k, or the loop's steps draw random numbers or have not run as one
    program yet."""
    import jax

    fx = getattr(loop, "step_effects", lambda: None)()
    if fx is None or fx["random"] or 2 * len(group) < k:
        return None
    feeds = [list(b) for b in group]
    last = feeds[-1]
    if len(last[0]) != batch_size:
        last = feeds[-1] = da.pad_batch(last[:-1], batch_size) + [last[-1]]
    if any(len(b[0]) != batch_size for b in feeds):
        return None
    if len(feeds) < k:
        filler = last[:-1] + [jax.device_put(np.int32(0))]
        feeds += [filler] * (k - len(feeds))
    return feeds


def _with_n_valid(batches, batch_size, pad):
    """Test-step feed lists with their number of real rows appended (the step's
    ``n_valid``), short ones padded up to `da.bucket_size` when `pad`. Each distinct
    ``n_valid`` goes to the device once per loop, not once per batch."""
    import jax

    on_device = {}
    for b in batches:
        real = len(b[0])
        if batch_size is None:
            batch_size = real
        if pad and real < batch_size:
            b = da.pad_batch(b, da.bucket_size(real, batch_size))
        nv = on_device.get(real)
        if nv is None:
            nv = on_device[real] = jax.device_put(np.int32(real))
        yield list(b) + [nv]


class _AutoLoop:
    """fit's automatic grouping of steps: the k-step loop compiles on a background
    thread from the first batch of the first epoch (`start`); every later epoch
    waits for it (`wait`: the epochs grouped do not depend on the compile's timing,
    so a run is reproducible) and then runs groups of k full batches per loop call,
    the rest one call each (`run`)."""

    def __init__(self, loop_fn, k, single, batch_size):
        self.loop_fn, self.k, self.single = loop_fn, k, single
        self.batch_size = batch_size
        self.handle = None  # None: not started; False: no loop; else a LoopCompile

    def starting(self, feeds):
        """`feeds`, starting the compile when a full batch after the first is asked
        for: the first step has compiled its own program by then (two XLA compiles
        at once slow each other)."""
        for i, (step, batch) in enumerate(feeds):
            if i and self.handle is None and batch and \
                    np.shape(batch[0])[:1] == (self.batch_size,):
                self.start(batch)
            yield step, batch
        if self.handle is None:
            self.handle = False

    def start(self, batch):
        import jax

        self.handle = False
        if sum(getattr(a, "nbytes", 0) for a in batch) * self.k > _AUTO_LOOP_BYTES:
            return
        flops = _AUTO_LOOP_FLOPS.get(jax.default_backend(), _AUTO_LOOP_FLOPS_OTHER)
        try:
            handle = self.loop_fn.precompile(self.k, batch, max_flops=flops)
        except Exception:  # noqa: BLE001 - a speed-up only: the steps run one per call
            return
        self.handle = handle if handle is not None else False

    def wait(self):
        return bool(self.handle) and self.handle.wait()

    def run(self, stacked, b):
        return self.loop_fn(*b) if stacked else self.single(False, b)


def _fit_options(batch_size, steps_per_epoch, validation_freq, shuffle):
    """``(batch_size, steps_per_epoch, do_val(epoch))`` from fit's arguments, checked."""
    batch_size = da.int_arg("batch_size", batch_size) or 32
    spe = da.int_arg("steps_per_epoch", steps_per_epoch)
    if isinstance(validation_freq, (list, tuple, set)):
        vf = set(da.int_arg("validation_freq", v) for v in validation_freq)
        do_val = lambda ep: (ep + 1) in vf
    else:
        validation_freq = da.int_arg("validation_freq", validation_freq, allow_none=False)
        do_val = lambda ep: (ep + 1) % validation_freq == 0
    if shuffle not in (True, False, "batch"):
        raise ValueError(f'`shuffle` must be True, False or "batch". Received: {shuffle!r}')
    return batch_size, spe, do_val
