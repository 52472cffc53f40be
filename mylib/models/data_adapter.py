"""Input handling for `Model.fit` / `evaluate` / `predict`: data to checked numpy
arrays, sample and class weights, `validation_split`, and the per-epoch feed lists
(array batches, shuffling, datasets and generators, k-batch executions).

Nothing here builds graph ops; `Model` (in `training.py`) turns the feed lists into
steps and `step.py` builds the step graphs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from mylib.core.graph import Tensor


# ------------------------------------------------------------ arrays
def np_dtype_for(arr, want=None):
    """The dtype data is fed as: the placeholder's dtype, else float32 for floats and
    bools, int32 for integers (Keras's floatx and label conventions)."""
    if want is not None:
        return want.np
    k = arr.dtype.kind
    if k in "iu":
        return np.int32 if arr.dtype.itemsize <= 4 or (arr.size == 0 or (
            arr.min() >= -2 ** 31 and arr.max() < 2 ** 31)) else np.int64
    return np.float32


def as_arrays(data, what):
    """`data` (an array, a list of them or a dict of them) as numpy arrays."""
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
    try:
        a = np.asarray(v)
    except ValueError:  # numpy: "inhomogeneous shape" (a ragged nested list)
        raise ValueError(f"`{what}` must be a rectangular array (every sample of the same "
                         "shape); received a ragged nested list. Pad the sequences to "
                         "one length first.") from None
    if a.dtype == object and not all(isinstance(e, (str, bytes)) for e in a.flat):
        raise ValueError(f"`{what}` could not be converted to a numeric or string array: "
                         "received objects of types "
                         f"{sorted({type(e).__name__ for e in a.flat})[:5]} (dtype object).")
    # Text stays text here: a model input of dtype string takes it (lookup and text
    # layers); `standardize` refuses it for numeric inputs and for targets.
    return a


# ------------------------------------------------------------ argument checks
def int_arg(name, value, minimum=1, allow_none=True):
    """`value` as an int >= `minimum` (None kept when `allow_none`).

    Raises:
      TypeError: not an integer (bools and floats included).
      ValueError: below `minimum`.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"`{name}` must be an integer >= {minimum}"
                        f"{' or None' if allow_none else ''}. Received: {name}={value!r} "
                        f"(of type {type(value).__name__}).")
    if value < minimum:
        raise ValueError(f"`{name}` must be >= {minimum}. Received: {name}={value}.")
    return int(value)


def verbose_arg(verbose):
    """`verbose` ("auto", 0, 1 or 2) as an int (auto: 1)."""
    if verbose == "auto" and isinstance(verbose, str):
        return 1
    if isinstance(verbose, (bool, np.bool_, int, np.integer)) and int(verbose) in (0, 1, 2):
        return int(verbose)
    raise ValueError(f'`verbose` must be "auto", 0, 1 or 2. Received: verbose={verbose!r}.')


def class_weight_arg(class_weight):
    """`class_weight` checked: a dict of integer class ids to numeric weights."""
    if class_weight is None:
        return None
    if not isinstance(class_weight, dict):
        raise TypeError("`class_weight` must be a dict {class id: weight}. Received: "
                        f"class_weight of type {type(class_weight).__name__}.")
    for c, w in class_weight.items():
        if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer)):
            raise ValueError("`class_weight` keys must be integer class ids. Received: "
                             f"key {c!r} (of type {type(c).__name__}) in "
                             f"class_weight={class_weight!r}.")
        if c < 0:
            raise ValueError("`class_weight` keys must be class ids >= 0. Received: key "
                             f"{c} in class_weight={class_weight!r}.")
        try:
            ok = np.isfinite(float(w))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError("`class_weight` values must be finite numbers. Received: "
                             f"{w!r} for class {c}.")
    return class_weight


def flat_arrays(x):
    """The arrays of `x` (from `as_arrays`) in input order: sorted keys of a dict."""
    if isinstance(x, dict):
        return [x[k] for k in sorted(x)]
    if isinstance(x, list):
        return x
    return [x]


def fmt_shape(shape):
    """A shape as Keras prints it: ``(None, 3)``, ``(4,)``."""
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def standardize(data, tensors, names, what, nested, model_name):
    """A list of arrays aligned with `tensors` (a model's inputs or outputs), each
    checked against its tensor's shape (inputs) and cast to the dtype it is fed as.
    Input data one rank short of an input whose last dim is 1 gains that axis, and data
    with one extra trailing axis of size 1 loses it (Keras 3's `_adjust_input_rank`)."""
    if data is None:
        return None
    arrs = _aligned_arrays(data, tensors, names, what, nested, model_name)
    out = []
    for i, (a, t) in enumerate(zip(arrs, tensors)):
        a = np.asarray(a)
        ts = t.shape.as_list()
        shape = a.shape
        if what == "input":
            # Keras 3's functional models take data one rank off an input whose shape
            # ends in 1: (n, 28, 28) for Input((28, 28, 1)) gains the axis, (n, 5, 1)
            # for Input((5,)) loses it.
            if len(shape) == len(ts) - 1 and ts[-1] == 1:
                a = a[..., None]
            elif len(shape) == len(ts) + 1 and shape[-1] == 1:
                a = a[..., 0]
            shape = a.shape
            ok = len(shape) == len(ts) and all(
                d is None or d == s for d, s in zip(ts[1:], shape[1:]))
            if not ok:
                raise ValueError(
                    f'Input {i} ("{names[i]}") of model "{model_name}" expects data of shape '
                    f"{fmt_shape(ts)}, but received an array of shape {fmt_shape(shape)}.")
            if a.dtype.kind in "USO" and t.dtype.np != np.dtype(object):
                raise TypeError(
                    f'`x` must hold numbers for input {i} ("{names[i]}") of model '
                    f'"{model_name}" (dtype {t.dtype.name}); received an array of dtype '
                    f"{a.dtype} (strings or bytes). Encode the text as numbers first, or "
                    "give the model an Input(dtype='string') and a lookup or "
                    "TextVectorization layer.")
            if a.dtype.kind == "f" and t.dtype.is_integer:
                raise ValueError(f'Input {i} ("{names[i]}") of model "{model_name}" has '
                                 f"dtype {t.dtype.name}; received float data.")
            a = np.ascontiguousarray(a, dtype=t.dtype.np)
        else:
            if a.dtype.kind in "USO":
                raise TypeError(f'`y` must hold numbers (targets of output {i}, '
                                f'"{names[i]}"); received an array of dtype {a.dtype} '
                                "(strings or bytes). Encode string labels as class ids "
                                "first (e.g. with keras.layers.StringLookup).")
            a = np.ascontiguousarray(a, dtype=np_dtype_for(a))
        out.append(a)
    return out


def _aligned_arrays(data, tensors, names, what, nested, model_name):
    """`data` as a list in the order of `tensors` (a dict by key, a list as given)."""
    if isinstance(data, dict):
        keys = sorted(nested) if isinstance(nested, dict) else names
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
        raise ValueError(f'Model "{model_name}" has {len(tensors)} {what}s '
                         f"({names}), but it received {len(arrs)} arrays for them.")
    return arrs


def check_lengths(arrays, names):
    """The number of samples, the same in every array."""
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


# ------------------------------------------------------------ sample and class weights
def sample_weight_array(sample_weight, ys, output_names=None):
    """`sample_weight` as float32 ``[N]`` (trailing axes of 1 dropped), or ``[N, T]``
    per-timestep weights matching the targets' leading axes, or per-output weights
    (a dict by output name or a list with one ``[N]`` array per output, as Keras) as
    ``[N, 1, outputs]`` (`per_output_weights`)."""
    if output_names is not None and _per_output(sample_weight, output_names):
        return per_output_weights(sample_weight, output_names, ys)
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
    return sw


def _per_output(sample_weight, names):
    """Whether `sample_weight` is given per output: a dict, or a list / tuple of one
    array per output (a list of plain numbers is one weight per sample)."""
    if isinstance(sample_weight, dict):
        return True
    return isinstance(sample_weight, (list, tuple)) and len(names) > 1 and \
        len(sample_weight) == len(names) and all(
            v is None or hasattr(v, "shape") or isinstance(v, (list, tuple))
            for v in sample_weight)


def per_output_weights(sample_weight, names, ys=None):
    """Per-output weights as one float32 ``[N, 1, outputs]`` array: the steps slice
    output i's ``[N]`` weights from ``[:, 0, i]`` (the middle axis of 1 tells them
    from ``[N, T]`` per-timestep weights). An output left out (a key missing, or None)
    weighs every sample 1; Keras requires every output's entry. Raises ValueError for
    an unknown output name, per-timestep weights (not supported per output) or
    weights of different lengths."""
    if isinstance(sample_weight, dict):
        unknown = sorted(set(sample_weight) - set(names), key=str)
        if unknown:
            raise ValueError(f"`sample_weight` names outputs {unknown} that the model does "
                             f"not have; its outputs are {list(names)}.")
        given = [sample_weight.get(n) for n in names]
    else:
        given = list(sample_weight)
    cols = []
    for name, w in zip(names, given):
        if w is None:
            cols.append(None)
            continue
        a = np.asarray(w, dtype=np.float32)
        if a.ndim > 1 and a.shape[1:] == (1,) * (a.ndim - 1):
            a = a.reshape(len(a))
        if a.ndim != 1:
            raise ValueError(f'`sample_weight` for output "{name}" must be 1-D (one weight '
                             f"per sample); received shape {a.shape}. Per-timestep "
                             "weights are supported for a single `sample_weight` array "
                             "only.")
        cols.append(a)
    lens = {len(a) for a in cols if a is not None}
    if len(lens) > 1:
        raise ValueError("The per-output `sample_weight` arrays must hold one weight per "
                         "sample each; received lengths " +
                         ", ".join(f"{n}: {len(a)}" for n, a in zip(names, cols)
                                   if a is not None) + ".")
    n = lens.pop() if lens else (len(ys[0]) if ys else 0)
    out = np.ones((n, 1, len(names)), np.float32)
    for i, a in enumerate(cols):
        if a is not None:
            out[:, 0, i] = a
    return out


def apply_class_weight(class_weight, y, out_rank, sw):
    """The sample weights `sw` (or None) multiplied by the weight of each target's class
    in `y` (the first output's targets)."""
    cls = class_ids(y, out_rank)
    cw = np.ones(cls.shape, np.float32)
    for c, w in class_weight_arg(class_weight).items():
        cw[cls == int(c)] = w
    if sw is not None and sw.ndim < cw.ndim:
        sw = sw.reshape(sw.shape + (1,) * (cw.ndim - sw.ndim))
    elif sw is not None and cw.ndim < sw.ndim:
        cw = cw.reshape(cw.shape + (1,) * (sw.ndim - cw.ndim))
    return cw if sw is None else sw * cw


def class_ids(y, out_rank):
    """Class ids of targets `y` for `class_weight`: argmax of one-hot targets (rank of
    the output), else the labels (a trailing axis of 1 squeezed). [N] for per-sample
    targets, [N, T] for sequence targets."""
    if y.ndim >= 2 and y.shape[-1] > 1 and (out_rank is None or y.ndim == out_rank):
        return y.argmax(axis=-1)
    if y.ndim >= 2 and y.shape[-1] == 1:
        y = y.reshape(y.shape[:-1])
    return np.rint(y).astype(np.int64) if y.dtype.kind == "f" else y.astype(np.int64)


# ------------------------------------------------------------ what fit trains on
class FitInputs(NamedTuple):
    """What `fit` trains on, checked before any step runs."""
    ys: list                     # the targets (a stream's first batch): the step signature
    sw_ndim: int                 # rank of the sample weights the step is fed
    weighted: bool               # whether steps take a sample-weight feed
    epoch_feeds: Callable        # () -> the feed lists of one epoch
    steps: int | None            # batches per epoch, when known
    n: int | None                # training samples (arrays only)
    val: tuple | None            # from validation_split: (ys, sw ndim, batches())


def stream_fit_inputs(model, x, y, sample_weight, validation_split, class_weight,
                      steps_per_epoch):
    """`FitInputs` for a dataset or generator `x` of ``(x, y[, sample_weight])``."""
    if y is not None:
        raise ValueError("`y` must not be given when `x` is a dataset or a generator; "
                         "it yields (x, y) or (x, y, sample_weight) batches.")
    if sample_weight is not None or validation_split:
        raise ValueError("`sample_weight` and `validation_split` are not supported "
                         "with a dataset or generator `x`; yield the weights in the "
                         "batches and pass `validation_data`.")
    stream = BatchStream(x, steps_per_epoch, "x")
    xb, yb, swb = unpack_batch(stream.peek())
    if yb is None and not model._fits_without_y():
        raise ValueError("The dataset/generator passed to fit must yield (x, y) or "
                         "(x, y, sample_weight) batches; its first batch has no y.")
    _, ys, sw, _ = model._prepare(xb, yb, swb, class_weight)
    weighted = swb is not None or class_weight is not None
    with_y = yb is not None
    return FitInputs(ys, sw.ndim, weighted,
                     lambda: stream_feeds(model, stream, class_weight, weighted, with_y),
                     stream.steps_hint, None, None)


def array_fit_inputs(model, x, y, sample_weight, class_weight, validation_split,
                     batch_size, shuffle, steps_per_epoch, validation_batch_size,
                     validation_steps):
    """`FitInputs` for arrays `x`, `y`; a `validation_split` holds out the LAST
    fraction of the samples (before shuffling)."""
    if y is None and not model._fits_without_y():
        raise ValueError("`y` is required: mylib fits (x, y) arrays, or a dataset / "
                         "generator of (x, y) batches as `x` (a model with its own "
                         "`train_step`, or compiled with no `loss` and no metrics so "
                         "that its layers' `add_loss` terms train it, may fit `x` "
                         "alone).")
    # The held-out rows of a `validation_split` are weighted by `sample_weight` only,
    # never by `class_weight` (as Keras 3: val_loss equals `evaluate` on those rows).
    split_cw = bool(validation_split) and class_weight is not None
    xs, ys, sw, n = model._prepare(x, y, sample_weight, None if split_cw else class_weight)
    held_sw = sw
    if split_cw and ys:
        rank = model.outputs[0].shape.rank if model.outputs else None
        # `{}`: weights of 1 in the shape class weights give (one per time step, say).
        held_sw = apply_class_weight({}, ys[0], rank, sw)
        sw = apply_class_weight(class_weight, ys[0], rank, sw)
    weighted = sample_weight is not None or class_weight is not None
    val = None
    if validation_split:
        _, v = split_validation(xs, ys, held_sw, n, validation_split)
        (xs, ys, sw, n), _ = split_validation(xs, ys, sw, n, validation_split)
        vbs = validation_batch_size or batch_size
        val = (v[1], sw.ndim,
               lambda: array_feeds(v[0], v[1], v[2], v[3], vbs, validation_steps))
    if n == 0:
        raise ValueError("Expected at least one training sample; received 0.")
    epoch_feeds = ArrayEpochs(xs, ys, sw, n, batch_size, shuffle, weighted, steps_per_epoch)
    steps = steps_per_epoch or int(math.ceil(n / batch_size))
    return FitInputs(ys, sw.ndim, weighted, epoch_feeds, steps, n, val)


def split_validation(xs, ys, sw, n, validation_split):
    """``((xs, ys, sw, n) to train on, (xs, ys, sw, n) held out)``: the last
    `validation_split` fraction of the samples is held out."""
    if not 0 < validation_split < 1:
        raise ValueError(f"`validation_split` must be in [0, 1). Received: "
                         f"{validation_split}")
    split_at = int(math.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(f"validation_split={validation_split} leaves no training "
                         f"or no validation samples out of {n}.")
    held = ([a[split_at:] for a in xs], [a[split_at:] for a in ys], sw[split_at:],
            n - split_at)
    kept = ([a[:split_at] for a in xs], [a[:split_at] for a in ys], sw[:split_at], split_at)
    return kept, held


def validation_source(model, validation_data, validation_steps, batch_size):
    """(ys_signature, sw_ndim, batches() -> iterator of feed lists) for validation."""
    if is_stream(validation_data):
        stream = BatchStream(validation_data, validation_steps, "validation_data")
        xb, yb, swb = unpack_batch(stream.peek())
        if yb is None and not model._fits_without_y():
            raise ValueError("`validation_data` must yield (x_val, y_val) or "
                             "(x_val, y_val, val_sample_weight) batches.")
        _, ys0, sw0, _ = model._prepare(xb, yb, swb)
        return ys0, sw0.ndim, lambda: stream_feeds(model, stream, None, True,
                                                   with_y=yb is not None)
    vd = tuple(validation_data)
    # (x_val,) alone where the model needs no targets (Keras's 1-tuple batches).
    if len(vd) not in (2, 3) and not (len(vd) == 1 and model._fits_without_y()):
        raise ValueError("`validation_data` must be (x_val, y_val) or "
                         "(x_val, y_val, val_sample_weight).")
    vd = vd + (None,) * (3 - len(vd))
    xs, ys, sw, n = model._prepare(vd[0], vd[1], vd[2])
    return ys, sw.ndim, lambda: array_feeds(xs, ys, sw, n, batch_size, validation_steps)


# ------------------------------------------------------------ input sources
def stream_feeds(model, stream, class_weight, weighted, with_y=True):
    """Feed lists ([*xs, *ys, sw?]) for the batches of one epoch of `stream`."""
    for el in stream.epoch():
        xb, yb, swb = unpack_batch(el)
        if with_y and yb is None:
            raise ValueError("The dataset/generator yielded a batch without targets; "
                             "expected (x, y) or (x, y, sample_weight).")
        xs, ys, sw, _ = model._prepare(xb, yb if with_y else None, swb, class_weight)
        yield xs + (ys or []) + ([sw] if weighted else [])


def is_stream(x):
    """A `ml.data.Dataset` or a Python iterator/generator of batches (not arrays)."""
    from mylib.data import Dataset

    return isinstance(x, Dataset) or is_batch_sequence(x) or (
        hasattr(x, "__next__") and hasattr(x, "__iter__") and not hasattr(x, "shape"))


def is_batch_sequence(x):
    """A re-iterable batch source of known length (Keras 3's `PyDataset` / `Sequence`:
    ``len(x)`` batches, ``iter(x)`` one pass over them), marked by the class attribute
    ``_is_batch_sequence``."""
    return bool(getattr(type(x), "_is_batch_sequence", False))


def unpack_batch(el):
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


class BatchStream:
    """The batches of a `Dataset` (re-iterable: a fresh pass each epoch) or a Python
    iterator (one stream for the whole run). With `steps`, each epoch takes that many
    batches, continuing where the previous epoch stopped (a finished dataset pass is
    restarted)."""

    def __init__(self, data, steps, what):
        from mylib.data import INFINITE_CARDINALITY, Dataset

        self.data = data
        self.reiterable = isinstance(data, Dataset) or is_batch_sequence(data)
        card = (len(data) if is_batch_sequence(data) else data.cardinality()) \
            if self.reiterable else -2
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


def executions(steps, k, split_last=True, pad_last=None):
    """Groups an epoch's ``(step, feed list)`` pairs into executions of k consecutive
    batches (the last one of an epoch may hold fewer): yields ``(first step, last step,
    calls)``, `calls` a list of ``(stacked, feeds)``. ``stacked`` feeds hold several
    batches of the same shapes on a new leading axis, for one call of the k-step loop;
    the others are one batch's feed list. A group of k same-shape batches is one
    stacked call. At the end of an epoch the leading same-shape run of the last group
    is stacked too (one more program, the same every epoch), the rest (a short last
    batch) one call each. Elsewhere a group whose shapes change runs batch by batch:
    a loop program per run length would compile without bound on data of varied
    shapes. With ``split_last=False`` the last group runs one batch per call (no
    program of its length). `pad_last(group)`, when given, may return the last group
    (or a group of k whose last batch is short) as k batches of one shape (padded with
    batches that change nothing): it then runs as one stacked call."""
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
            padded = None
            if pad_last is not None and [a.shape for a in group[-1]] != [
                    a.shape for a in group[0]]:
                padded = pad_last(group)  # k batches, the last one short
            yield first, step, (_calls(group, False) if padded is None
                                else [(True, stack_batches(padded))])
            group = []
    if group:
        padded = None if pad_last is None else pad_last(group)
        if padded is not None:
            yield first, first + len(group) - 1, [(True, stack_batches(padded))]
            return
        yield first, first + len(group) - 1, (
            _calls(group, True) if split_last else [(False, b) for b in group])


def _calls(group, may_split):
    shape0 = [a.shape for a in group[0]]
    run = 1
    while run < len(group) and [a.shape for a in group[run]] == shape0:
        run += 1
    if run > 1 and (run == len(group) or may_split):
        calls = [(True, stack_batches(group[:run]))]
        return calls + [(False, b) for b in group[run:]]
    return [(False, b) for b in group]


def stack_batches(group):
    """The feed list of same-shape batches `group` stacked on a new leading axis. For
    consecutive batches cut by `array_feeds` from the same arrays, each stacked feed
    is a reshaped slice of its array (a view; no per-batch check or copy)."""
    b0, bn = group[0], group[-1]
    if type(b0) is _Slices and type(bn) is _Slices and b0.src is bn.src:
        size = b0.hi - b0.lo
        if bn.lo - b0.lo == (len(group) - 1) * size and all(
                type(b) is _Slices and b.src is b0.src and b.lo == b0.lo + i * size
                for i, b in enumerate(group)):
            return [a[b0.lo:bn.hi].reshape((len(group), size) + a.shape[1:])
                    for a in b0.src]
    return [_stack(parts) for parts in zip(*group)]


def _stack(parts):
    """``np.stack(parts)``; without a copy when the parts are consecutive slices of one
    C-contiguous numpy array (the batches `array_feeds` cuts): a view of that memory."""
    a0 = parts[0]
    if type(a0) is np.ndarray and a0.flags.c_contiguous and a0.base is not None:
        step = a0.nbytes
        addr = a0.__array_interface__["data"][0]
        if all(type(a) is np.ndarray and a.base is a0.base and a.shape == a0.shape
               and a.dtype == a0.dtype and a.flags.c_contiguous
               and a.__array_interface__["data"][0] == addr + i * step
               for i, a in enumerate(parts)):
            return np.lib.stride_tricks.as_strided(
                a0, (len(parts),) + a0.shape, (step,) + a0.strides, writeable=False)
    return np.stack(parts)


class _Slices(list):
    """A feed list of rows ``lo:hi`` of the arrays `src` (the list `array_feeds` cut
    it from), so that `stack_batches` can stack consecutive ones as one slice."""

    __slots__ = ("src", "lo", "hi")


def array_feeds(xs, ys, sw, n, batch_size, steps=None):
    """Feed lists of consecutive batches of arrays, one pass (the first `steps`)."""
    stop = n if steps is None else min(n, int(steps) * batch_size)
    src = list(xs) + list(ys) + ([] if sw is None else [sw])
    for lo in range(0, stop, batch_size):
        hi = lo + batch_size if lo + batch_size < n else n
        b = _Slices([a[lo:hi] for a in src])  # a list: faster than a generator here
        b.src, b.lo, b.hi = src, lo, hi
        yield b


def bucket_size(n, batch_size):
    """The size a short batch of `n` samples is padded to: the next power of two, at
    most `batch_size` (so data of any length compiles at most
    ``1 + ceil(log2(batch_size))`` step programs)."""
    if n >= batch_size:
        return n
    return min(batch_size, 1 << max(0, int(n - 1).bit_length()))


def pad_batch(batch, size):
    """The arrays of a feed list padded along axis 0 to `size` rows with copies of
    their last row (values the model has seen, unlike zeros)."""
    n = len(batch[0])
    if n >= size:
        return batch
    return [np.concatenate([a, np.repeat(a[-1:], size - n, axis=0)]) for a in batch]


def batch_order(n, batch_size):
    """A permutation that shuffles batch-sized chunks (full chunks in a random order,
    the short one last) and the samples within each chunk (``shuffle="batch"``)."""
    full = n // batch_size
    starts = np.random.permutation(full) * batch_size
    parts = [s + np.random.permutation(batch_size) for s in starts]
    if n % batch_size:
        parts.append(full * batch_size + np.random.permutation(n % batch_size))
    return np.concatenate(parts) if parts else np.arange(0)


class ArrayEpochs:
    """Per-epoch feed lists over arrays: one gather per pass (the shuffle), then
    contiguous slices per step. With `steps_per_epoch`, epochs take that many batches
    from an endless sequence of (reshuffled) passes."""

    def __init__(self, xs, ys, sw, n, batch_size, shuffle, weighted, steps_per_epoch):
        self.args = (xs, ys, sw, n, batch_size, shuffle, weighted)
        self.spe = steps_per_epoch
        self.stream = None

    def _arrays(self):
        """One pass's arrays (``[*xs, *ys, sw?]``, shuffled as asked)."""
        xs, ys, sw, n, bs, shuffle, weighted = self.args
        order = batch_order(n, bs) if shuffle == "batch" else (
            np.random.permutation(n) if shuffle else None)
        if order is not None:  # sample weights gathered only when they are fed
            xs, ys = [a[order] for a in xs], [a[order] for a in ys]
            sw = sw[order] if weighted else None
        return list(xs) + list(ys) + ([sw] if weighted else [])

    def _pass(self):
        return array_feeds(self._arrays(), [], None, self.args[3], self.args[4])

    def grouped(self, k, split_last=True):
        """One epoch as `executions` ``(enumerate(self()), k, split_last)`` yields it,
        cut straight from the pass's arrays: each group of k full batches is one
        reshaped slice per array (no per-batch Python). None with `steps_per_epoch`
        (epochs then run across passes)."""
        if self.spe is not None:
            return None
        return self._grouped(self._arrays(), k, split_last)

    def _grouped(self, src, k, split_last):
        n, bs = self.args[3], self.args[4]
        full = n // bs
        whole = full // k * k
        for b in range(0, whole, k):
            lo, hi = b * bs, (b + k) * bs
            yield b, b + k - 1, [(True, [a[lo:hi].reshape((k, bs) + a.shape[1:])
                                         for a in src])]
        rest = full - whole
        calls = []
        if rest > 1 and split_last:  # the last group's full batches: one more loop
            lo, hi = whole * bs, full * bs
            calls.append((True, [a[lo:hi].reshape((rest, bs) + a.shape[1:])
                                 for a in src]))
        else:
            calls += [(False, [a[i * bs:(i + 1) * bs] for a in src])
                      for i in range(whole, full)]
        if n > full * bs:  # the short last batch
            calls.append((False, [a[full * bs:] for a in src]))
        if calls:
            yield whole, full - (n == full * bs), calls

    def _endless(self):
        while True:
            yield from self._pass()

    def __call__(self):
        if self.spe is None:
            return self._pass()
        if self.stream is None:
            self.stream = self._endless()
        return itertools.islice(self.stream, self.spe)


def host_logs(names, values):
    """``{name: value}`` of a step's metric results read on the host: a Python float
    for a scalar, a numpy array for a metric with several values (``Recall`` with a
    list of thresholds, ``F1Score(average=None)``), as Keras's logs hold them."""
    logs = {}
    for k, v in zip(names, values):
        a = np.asarray(v)
        logs[k] = float(a) if a.ndim == 0 else a
    return logs
