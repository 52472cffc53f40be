"""The graph of one train or test step of a compiled `Model`.

A step is one graph, built once per model/target signature: the forward pass (with
``training=True`` for training), the per-output losses (sample-weighted, summed over
the batch and divided by the batch size, as Keras), the regularization losses,
`gradients`, the optimizer's update ops, and the metric updates (the loss tracker and
each compiled metric accumulate totals and counts in Variables). `Model._step_fn`
caches and compiles what `build_step_graph` returns.
"""

from __future__ import annotations

import numpy as np

from mylib._naming import to_snake_case
from mylib import errors as ml_errors
from mylib.core import dtypes as _dtypes
from mylib.core.gradients import gradients
from mylib.core.ops import array_ops, constant_ops, math_ops, reduction_ops
from mylib.layers.base import collect_call_effects, flatten, get_mask
from mylib.models.data_adapter import fmt_shape


def _loss_name(loss):
    name = loss if isinstance(loss, str) else (getattr(loss, "__name__", None) or
                                               type(loss).__name__)
    return to_snake_case(str(name))


def is_sparse_loss(loss):
    """Whether `loss` (a name, function or object) takes integer class ids (the sparse
    losses, and Keras 3's generalized cross-entropy)."""
    name = _loss_name(loss)
    return "sparse" in name or name == "categorical_generalized_cross_entropy"


def has_free_targets(loss):
    """Whether `loss`'s targets have a shape of their own, not the outputs': `ctc`
    (label sequences against per-step scores) and `circle` (class ids against
    embeddings)."""
    return _loss_name(loss) in ("ctc", "circle")


# ------------------------------------------------------------ losses and metrics
def build_tracking(model, y_arrays):
    """The loss functions and metric objects of `model`'s compile arguments, created
    in the model's graph (once per compile); their variables are local
    (non-trainable) variables."""
    from mylib import losses as L
    from mylib import metrics as M

    args = model._compile_args
    # No compiled loss: the layers' own losses (`add_loss`, regularizers) are the
    # objective, as Keras 3's endpoint-layer models; `_total_loss` refuses a step
    # that has none at all.
    loss_ids = ([None] * len(model.outputs) if args["loss"] is None
                else model._per_output(args["loss"], "loss"))
    lw = args["loss_weights"]
    lws = model._per_output(lw, "loss_weights") if lw is not None else [1.0] * len(loss_ids)
    loss_fns = []
    for lid in loss_ids:
        loss_fns.append(None if lid is None else L.get(lid))
    metric_specs = model._per_output(args["metrics"] or [], "metrics")
    wmetric_specs = model._per_output(args["weighted_metrics"] or [], "metrics")
    multi = len(model.outputs) > 1

    def metric_state(clone):
        entries = []  # (output index, metric object, weighted)
        names = ["loss"]
        loss_tracker = M.Mean(name="loss")
        # Per-output loss entries (`<output>_loss`) where more than one output has a
        # loss, for those outputs only (as Keras 3 logs them).
        per_output = multi and sum(lid is not None for lid in loss_ids) > 1
        out_trackers = [M.Mean(name=f"{n}_loss") if per_output and lid is not None
                        else None for n, lid in zip(model.output_names, loss_ids)]
        names += [t.name for t in out_trackers if t is not None]
        used = {}
        for weighted, specs in ((False, metric_specs), (True, wmetric_specs)):
            for i, spec in enumerate(specs):
                for m in (spec if isinstance(spec, (list, tuple)) else [spec]):
                    if m is None:
                        continue
                    obj = _make_metric(model, m, i, y_arrays, loss_ids[i])
                    if clone and obj is m:
                        obj = _fresh_metric(obj)
                    label = metric_label(used, m if isinstance(m, str) else obj.name,
                                         model.output_names[i] if multi else None,
                                         weighted)
                    names.append(label)
                    entries.append((i, obj, weighted))
        return {"loss_ids": loss_ids, "loss_fns": loss_fns, "loss_weights": lws,
                "loss_tracker": loss_tracker, "out_trackers": out_trackers,
                "entries": entries, "names": names}

    with model.graph.as_default(), model.graph.collectable():
        tracking = metric_state(False)
        # Evaluation (evaluate, fit's validation) accumulates in metric variables of
        # its own: an evaluate() inside a callback of fit leaves fit's running
        # totals alone.
        tracking["test"] = metric_state(True)
    return tracking


def metric_label(used, name, output_name, weighted):
    """The log name of a compiled metric named `name` (of output `output_name` of a
    multi-output model, else None), as Keras 3 names them: ``<output>_<name>``; a
    weighted metric whose name an unweighted one took first gets ``weighted_`` before
    its name; a name taken again gets ``_1``, ``_2``, ... `used` counts the names given
    so far (updated); call it for every unweighted metric before the weighted ones."""
    def prefixed(n):
        return f"{output_name}_{n}" if output_name else n

    label = prefixed(name)
    if weighted and label in used:
        label = prefixed("weighted_" + name)
    if label in used:
        used[label] += 1
        return f"{label}_{used[label] - 1}"
    used[label] = 1
    return label


def for_mode(tracking, mode):
    """The metric state of a train ('train') or test step (evaluate, validation)."""
    return tracking if mode == "train" else tracking["test"]


def _fresh_metric(obj):
    """A copy of metric object `obj` with state of its own (created on first use). A
    metric whose `__init__` made its variables (a Keras 3 user metric) holds them in
    attributes a copy would share: it is used as it is, for training and evaluation
    alike, as Keras 3 uses one metric object for both (evaluate resets it)."""
    import copy

    if getattr(obj, "_state_in_init", False):
        return obj

    new = copy.copy(obj)
    new._variables, new._graph, new._scope = [], None, None
    return new


def _make_metric(model, m, i, y_arrays, loss_id):
    from mylib import metrics as M

    if isinstance(m, str) and m in ("accuracy", "acc") and y_arrays is not None:
        y = y_arrays[i]
        out = model.outputs[i]
        return M.resolve_accuracy(y, out, loss=loss_id, name=m)
    if isinstance(m, str) or callable(m) and not hasattr(m, "update_state"):
        return M.get(m)
    return m


def metric_objects(tracking):
    """The loss tracker, the per-output loss trackers and the compiled metrics."""
    return [tracking["loss_tracker"]] + \
        [t for t in tracking["out_trackers"] if t is not None] + \
        [o for _, o, _ in tracking["entries"]]


def metric_results(tracking):
    """The current value of each metric, in `metrics_names` order (new ops)."""
    return [tracking["loss_tracker"].result()] + \
        [t.result() for t in tracking["out_trackers"] if t is not None] + \
        [obj.result() for _, obj, _ in tracking["entries"]]


def is_builtin_loss(loss):
    """Whether `loss` is one of mylib's losses (a name, or a function or object of
    `mylib.losses`), whose target shapes are known; not a user's own loss."""
    if loss is None or isinstance(loss, str):
        return True
    mod = getattr(loss, "__module__", None) if callable(loss) and not hasattr(
        loss, "call") else type(loss).__module__
    return str(mod or "").startswith("mylib.")


def check_targets(model, ys):
    """Each target array's shape must fit its output under its loss. A user's own
    loss decides what it accepts (integer class ids of shape [N, 1] against [N, C]
    outputs, say): its targets are not checked here."""
    for i, (y, t) in enumerate(zip(ys, model.outputs)):
        ps = t.shape.as_list()
        ys_ = list(y.shape)
        if not is_builtin_loss(model._tracking["loss_ids"][i]) or \
                has_free_targets(model._tracking["loss_ids"][i]):
            continue
        if is_sparse_loss(model._tracking["loss_ids"][i]):
            ok = len(ys_) == len(ps) - 1 or (len(ys_) == len(ps) and ys_[-1] == 1)
            if not ok:
                raise ValueError(
                    f'Target {i} ("{model.output_names[i]}") for the sparse loss must hold '
                    f"integer class ids of shape {fmt_shape(ps[:-1])}; received shape "
                    f"{fmt_shape(ys_)} against outputs of shape {fmt_shape(ps)}.")
            continue
        if len(ys_) == len(ps) - 1 and ps[-1] == 1:
            ys_ = ys_ + [1]
        ok = len(ys_) == len(ps) and all(p is None or p == q for p, q in zip(ps[1:], ys_[1:]))
        if not ok:
            raise ValueError(
                f'Target {i} ("{model.output_names[i]}") has shape {fmt_shape(y.shape)}, '
                f"which is incompatible with the model output of shape {fmt_shape(ps)} "
                f"(loss {model._tracking['loss_ids'][i]!r}).")


def check_label_range(model, ys, loss_ids):
    """Class ids for a sparse loss must lie in [0, num_classes): checked on the
    host before any step (XLA cannot raise inside a step; TensorFlow on CPU raises
    too)."""
    for i, (y, t) in enumerate(zip(ys, model.outputs)):
        if i >= len(loss_ids) or not is_sparse_loss(loss_ids[i]):
            continue
        if y.dtype.kind == "f" and y.size and not np.isfinite(y).all():
            bad = y[~np.isfinite(y)].flat[0]
            raise ml_errors.InvalidArgumentError(
                f'Target {i} ("{model.output_names[i]}"): received a label value of '
                f"{bad}, which is not a class id (sparse labels must be integers in "
                f"[0, num_classes)).")
        n = t.shape.as_list()[-1] if t.shape.rank else None
        ignored = getattr(loss_ids[i], "ignore_class", None)
        if ignored is not None:
            y = y[y != ignored]  # labels a loss ignores need not be class ids
        if n is None or n == 1 or not y.size or y.dtype.kind not in "iuf":
            continue
        lo, hi = y.min(), y.max()
        if lo < 0 or hi >= n:
            bad = hi if hi >= n else lo
            raise ml_errors.InvalidArgumentError(
                f'Target {i} ("{model.output_names[i]}"): received a label value of '
                f"{bad} which is outside the valid range of [0, {n}) for the "
                f"{n}-class output.")


# ------------------------------------------------------------ the step graph
def build_step_graph(model, mode, ys, feed_weights, sw_ndim):
    """``(step op, metric results, feeds)``: the train ('train') or test ('test') step
    of `model` for targets shaped like `ys`, in name scope `mode`. The feeds are the
    inputs, one target placeholder per output and, with `feed_weights`, the
    sample weights (rank `sw_ndim`); without, every sample weighs 1.

    A test step also takes ``n_valid`` (int32 scalar) last: only the first `n_valid`
    rows of its batch are samples, the rest padding (`Model._test_loop` pads a short
    batch up to a bucket size so data of any length compiles few programs). Padding
    rows weigh 0 in the losses, the loss trackers and every metric (weighted or not,
    masked or not), so results are those of the unpadded batch;
    ``tracking["test"]["exact_padding"]`` is False when a loss reduces the batch
    itself (a scalar per batch), the layers add losses of their activations
    (activity regularizers, `add_loss`), or a metric is a user's class (it may ignore
    `sample_weight`), where padding could change them."""
    g = model.graph
    tr = for_mode(model._tracking, mode)
    with g.as_default(), g.name_scope(mode), g.collectable():
        outs, fx = _forward_outputs(model, mode)
        targets = [array_ops.placeholder(_dtypes.as_dtype(a.dtype),
                                         [None] + list(a.shape[1:]),
                                         name=f"{n}_target")
                   for a, n in zip(ys, model.output_names)]
        if feed_weights:
            sw = array_ops.placeholder("float32", [None] * sw_ndim,
                                       name="sample_weight")
        else:  # ones, [batch]: no per-step host-to-device copy of weights
            # (without targets, `targets_free`, the batch is the first input's)
            rows = targets[0] if targets else flatten(model.inputs)[0]
            sw = constant_ops.fill(array_ops.shape(rows)[:1],
                                constant_ops.constant(1.0, dtype="float32"))
        fed_sw = sw
        masks = [get_mask(o) for o in outs]  # Keras masks of the outputs (or None)
        valid = None
        if mode == "test":
            n_valid = array_ops.placeholder("int32", [], name="n_valid")
            # 0, 1, ..., batch - 1 (the batch size is known only when compiled)
            rows = reduction_ops.cumsum(constant_ops.fill(array_ops.shape(sw)[:1],
                                                          constant_ops.constant(1)),
                                        exclusive=True)
            valid_b = math_ops.less(rows, n_valid)
            valid = math_ops.cast(valid_b, "float32")
            vw = valid
            for _ in range(sw_ndim - 1):
                vw = array_ops.expand_dims(vw, -1)
            sw = sw * vw
            batch = math_ops.cast(n_valid, "float32")
            # A step of padding alone (n_valid 0: evaluate's last loop call padded to
            # k) adds nothing: its losses are 0 / 1, weighted 0.
            divisor = math_ops.maximum(batch, constant_ops.constant(1.0))
            masks = [m if m is None else
                     math_ops.logical_and(math_ops.cast(m, "bool"), _expand_to(valid_b, m))
                     for m in masks]
        else:
            batch = divisor = math_ops.cast(array_ops.shape(sw)[0], "float32")
        info = {"batch_reduced": False}
        # Per-output weights ([batch, 1, outputs], see `data_adapter.per_output_weights`):
        # output i weighs its samples by [:, 0, i].
        sws, sw_ndim = ([sw[:, 0, i] for i in range(len(outs))], 1) if sw_ndim == 3 \
            else ([sw] * len(outs), sw_ndim)
        out_losses, aligned = _output_losses(tr, targets, outs, sws, sw_ndim, divisor, masks,
                                             info)
        if mode == "test":
            # A loss that reduces the batch itself would see the padding rows, and so
            # would a user's metric class that ignores `sample_weight`.
            # Activity regularizers and `add_loss` terms of the layers reduce the
            # batch too; only the weights' own regularizers do not.
            tr["exact_padding"] = not info["batch_reduced"] and all(
                type(o).__module__.startswith("mylib.") for _, o, _ in tr["entries"]) \
                and len(model.losses) == len(model._weight_losses())
        total = _total_loss(model, tr, out_losses, fx)
        updates = _metric_updates(tr, total, out_losses, aligned, sws, batch, masks, valid)
        step_ops = list(updates) + (fx.updates if fx is not None else [])
        if mode == "train":
            model._assert_compiled()
            train_op = _train_op(model, total)
            if train_op is not None:
                step_ops.append(train_op)
        with g.control_dependencies(updates):
            results = metric_results(tr)
        step = array_ops.group(*step_ops, name=f"{mode}_step")
    feeds = list(model.inputs) + targets + ([fed_sw] if feed_weights else [])
    if mode == "test":
        feeds.append(n_valid)
    return step, results, feeds


def _expand_to(v, m):
    """The [batch] bool `v` with trailing axes of 1 up to the rank of mask `m`."""
    while v.shape.rank is not None and m.shape.rank is not None and v.shape.rank < m.shape.rank:
        v = array_ops.expand_dims(v, -1)
    return v


def _forward_outputs(model, mode):
    """``(outputs, effects)``: the training pass's outputs and its own update ops
    (BatchNormalization) and activity losses (see `collect_call_effects`); the
    inference outputs and None for a test step."""
    if mode != "train":
        return model.outputs, None
    with collect_call_effects() as fx:
        outs = flatten(model._forward(model._nested_inputs, training=True))
    return outs, fx


def _output_losses(tr, targets, outs, sws, sw_ndim, batch, masks=None, info=None):
    """Each output's loss (None where it has none) and its (target, prediction) pair
    aligned for the loss and the metrics; `sws`: each output's sample weights. An
    output with a Keras mask (`masks`) has its loss averaged over the unmasked entries
    only (see `_masked_loss`)."""
    out_losses, aligned = [], []
    masks = masks or [None] * len(outs)
    for i, (yt, yp, sw) in enumerate(zip(targets, outs, sws)):
        if yp.dtype in (_dtypes.float16, _dtypes.bfloat16):
            yp = math_ops.cast(yp, "float32")  # losses in float32 (mixed precision)
        yt = _align(yt, yp, tr["loss_ids"][i])
        aligned.append((yt, yp))
        if tr["loss_fns"][i] is None:
            out_losses.append(None)
            continue
        if masks[i] is not None or getattr(tr["loss_fns"][i], "ignore_class", None) is not None:
            masked = _masked_loss(tr["loss_fns"][i], yt, yp, masks[i], sw)
            if masked is not None:
                out_losses.append(masked)
                continue
        elements = []
        per = _per_sample(tr["loss_fns"][i], yt, yp, sw if sw_ndim > 1 else None, info,
                          elements)
        out_losses.append(_reduced(tr["loss_fns"][i], per, sw, sw_ndim, batch,
                                   elements[0] if elements else None))
    return out_losses, aligned


def _reduced(loss_fn, per, sw, sw_ndim, batch, elements=None):
    """The batch loss from per-sample losses `per` by the loss object's `reduction`,
    as Keras's compiled loss: ``"sum"`` the weighted sum; ``"mean_with_sample_weight"``
    that sum over the sum of the weights (0 where they sum to 0); otherwise
    (``"sum_over_batch_size"``, ``"mean"``, plain functions) over the batch's rows.
    Per-element weights (`sw_ndim` > 1) are already in `per` (averaged per sample),
    so their per-sample means are the weights summed. `elements`: the loss values per
    sample that `per` averages (a sequence's timesteps), which ``"sum"`` adds up."""
    total = reduction_ops.reduce_sum(per * sw) if sw_ndim == 1 else \
        reduction_ops.reduce_sum(per)
    red = getattr(loss_fn, "reduction", "sum_over_batch_size")
    if red == "sum":
        return total if elements is None else total * math_ops.cast(elements, total.dtype)
    if red == "mean_with_sample_weight":
        den = reduction_ops.reduce_sum(sw)
        if sw_ndim > 1:
            den = den * math_ops.cast(array_ops.shape(sw)[0], den.dtype) / math_ops.cast(
                array_ops.size(sw), den.dtype)
        zero = math_ops.equal(den, 0.0)
        return array_ops.where(zero, constant_ops.zeros_like(total),
                               total / array_ops.where(zero, constant_ops.ones_like(den), den))
    return total / batch


def _total_loss(model, tr, out_losses, fx):
    """The weighted output losses plus the regularization (and activity) losses."""
    terms = [l * w if w != 1.0 else l for l, w in zip(out_losses, tr["loss_weights"])
             if l is not None]
    reg = model.losses if fx is None else model._weight_losses() + fx.losses
    if reg:
        terms.append(math_ops.add_n(reg) if len(reg) > 1 else reg[0])
    if not terms:
        raise ValueError("No loss to compute: the model was compiled without a `loss` "
                         "and none of its layers adds one (`add_loss`, regularizers). "
                         "Provide a `loss` argument in `compile()`.")
    return math_ops.add_n(terms) if len(terms) > 1 else terms[0]


def _metric_updates(tr, total, out_losses, aligned, sws, batch, masks=None, valid=None):
    """The update ops of the loss trackers and of each compiled metric (`sws`: each
    output's sample weights, for the weighted metrics). An output's
    Keras mask weighs its metrics (times the sample weights of weighted metrics), so
    they average over the unmasked entries (Keras's masked metrics). `valid` ([batch]
    0/1, test steps) weighs the unweighted metrics so padding rows count for none."""
    updates = [tr["loss_tracker"].update_state(total, sample_weight=batch)]
    for trk, l in zip(tr["out_trackers"], out_losses):
        if trk is not None and l is not None:
            updates.append(trk.update_state(l, sample_weight=batch))
    for i, obj, weighted in tr["entries"]:
        yt, yp = aligned[i]
        w = sws[i] if weighted else valid
        if masks is not None and masks[i] is not None:
            m = _metric_mask(masks[i], yp)
            w = m if w is None else _times_to_rank(w, m)
        updates.append(obj.update_state(yt, yp, sample_weight=w))
    return updates


def _train_op(model, total):
    """The optimizer's update of the trainable weights along `gradients` of the
    (scaled) loss; None for a model with no trainable weights."""
    tvars = _expand_sharded(model.trainable_weights)
    if not tvars:
        return None
    scale = getattr(model.optimizer, "scale_loss", None)  # loss scaling
    grads = gradients(scale(total) if scale else total, tvars)
    pairs = [(gr, v) for gr, v in zip(grads, tvars) if gr is not None]
    if not pairs:
        raise ValueError("No gradients provided for any variable: the loss "
                         "does not depend on the trainable weights "
                         f"{[v.name for v in tvars]}.")
    return model.optimizer.apply_gradients(pairs)


def _expand_sharded(variables):
    """Variables, with each sharded variable (it has ``.variables``) as its shards."""
    out = []
    for v in variables:
        parts = getattr(v, "variables", None)
        out.extend(parts if isinstance(parts, list) else [v])
    return out


def _align(y_true, y_pred, loss_id):
    """Keras's `match_dtype_and_rank`: [N] targets against [N, 1] outputs become [N, 1]
    (never broadcast to [N, N]); float targets take the output's float dtype."""
    tr, pr = y_true.shape.rank, y_pred.shape.rank
    if tr is not None and pr is not None and tr == pr - 1 and y_pred.shape.as_list()[-1] == 1 \
            and not is_sparse_loss(loss_id):
        y_true = array_ops.expand_dims(y_true, -1)
    if y_true.dtype.is_floating and y_pred.dtype.is_floating and y_true.dtype != y_pred.dtype:
        y_true = math_ops.cast(y_true, y_pred.dtype)
    elif y_true.dtype == _dtypes.bool_ and y_pred.dtype.is_floating:
        y_true = math_ops.cast(y_true, y_pred.dtype)
    return y_true


def _times_to_rank(a, b):
    """``a * b`` with the lower-rank one given trailing axes of size 1 first (weights per
    sample [batch] against a mask per step [batch, T], or the reverse)."""
    while a.shape.rank is not None and b.shape.rank is not None and a.shape.rank < b.shape.rank:
        a = array_ops.expand_dims(a, -1)
    while a.shape.rank is not None and b.shape.rank is not None and b.shape.rank < a.shape.rank:
        b = array_ops.expand_dims(b, -1)
    return a * b


def _metric_mask(mask, y_pred):
    """The mask as float weights of rank at most that of the metric values (``y_pred``
    less its last axis, at least [batch]): a mask as long as the output's own axes (e.g.
    [batch, T] on a [batch, T] output) weighs a sample if any of its entries counts."""
    m = math_ops.cast(mask, "bool")
    if m.shape.rank is not None and y_pred.shape.rank is not None:
        keep = max(y_pred.shape.rank - 1, 1)
        if m.shape.rank > keep:
            m = reduction_ops.reduce_any(m, axis=list(range(keep, m.shape.rank)))
    return math_ops.cast(m, "float32")


def _masked_loss(loss_fn, y_true, y_pred, mask, sw):
    """Keras 3's loss of a masked output: the elementwise losses (e.g. [batch, T] for a
    [batch, T, 1] output and a [batch, T] mask) times the sample weights and the mask,
    summed and divided by the number of unmasked entries (0 when none is). None when the
    loss has no per-element axes to mask (the caller then reduces it unmasked)."""
    call = getattr(loss_fn, "call", None)
    per = call(y_true, y_pred) if call is not None else loss_fn(y_true, y_pred)
    own = getattr(per, "_keras_mask", None)  # the loss's own (`ignore_class`), as Keras
    if own is not None:
        mask = own if mask is None or mask.shape.rank != own.shape.rank else \
            math_ops.logical_and(math_ops.cast(mask, "bool"), own)
    if mask is None:
        return None
    m = math_ops.cast(mask, per.dtype)
    if per.shape.rank is None or m.shape.rank is None or per.shape.rank == 0:
        return None
    if m.shape.rank > per.shape.rank:  # a per-sample loss: a sample counts if any step does
        m = math_ops.cast(reduction_ops.reduce_any(
            math_ops.cast(mask, "bool"), axis=list(range(per.shape.rank, m.shape.rank))),
            per.dtype)
    m = _times_to_rank(m, constant_ops.ones_like(per))
    per = per * _times_to_rank(math_ops.cast(sw, per.dtype), m)
    valid = reduction_ops.reduce_sum(m)
    return reduction_ops.reduce_sum(per) / math_ops.maximum(valid, 1.0)


def _per_sample(loss_fn, y_true, y_pred, element_weights=None, info=None, elements=None):
    """Per-sample losses [batch]: loss objects through their `call`, functions directly;
    extra axes are averaged (Keras's per-sample reduction); a scalar (a loss that
    reduces the batch itself) stands for each sample. `element_weights` (e.g.
    per-timestep weights [batch, T]) multiply the losses before that average, and the
    caller then feeds samples weights of 1. `elements`, a list, receives the number of
    values averaged per sample (a float32 scalar tensor) when there are extra axes."""
    call = getattr(loss_fn, "call", None)
    per = call(y_true, y_pred) if call is not None else loss_fn(y_true, y_pred)
    if element_weights is not None:
        per = per * element_weights
    if per.shape.rank is not None and per.shape.rank > 1:
        if elements is not None:
            shape = math_ops.cast(array_ops.shape(per), "float32")
            elements.append(reduction_ops.reduce_prod(shape[1:]))
        per = reduction_ops.reduce_mean(per, axis=list(range(1, per.shape.rank)))
    elif per.shape.rank == 0:
        if info is not None:
            info["batch_reduced"] = True
        # A loss already reduced over the batch (Keras 3 accepts it): every sample
        # carries it, so the batch loss is it times the mean sample weight. Under a
        # mirrored strategy the step is one global-batch program, so the scalar is
        # the global batch's and the update equals one device's.
        per = constant_ops.fill(array_ops.shape(y_pred)[:1], math_ops.cast(per, "float32")
                                if per.dtype != _dtypes.float32 else per)
    return per
