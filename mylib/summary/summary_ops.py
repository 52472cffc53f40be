"""Summary ops: host ops that turn tensors into serialized `Summary` protocol buffers
(TensorBoard's format), built with tensorboardX's summary helpers and protos.
Histograms are counted inside the compiled step (`HistogramStats`); their host op only
packs the counts.

Each op runs on the host after the values it needs are computed, outputs a 0-d string
tensor (a numpy object array holding the `bytes`), and is added to the `SUMMARIES`
collection; `merge_all()` gathers them into one op whose value goes to
`FileWriter.add_summary`.
"""

from __future__ import annotations

import re

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.graph import GraphKeys, add_to_collection, get_default_graph
from mylib.core.op_registry import NotDifferentiable, OpDef, TensorSpec, convert_to_tensor

__all__ = ["scalar", "histogram", "image", "text", "merge", "merge_all"]

_INVALID_TAG = re.compile(r"[^-/\w\.]")


def _summary_pb2():
    from tensorboardX.proto import summary_pb2

    return summary_pb2


def _as_bytes_out(summary):
    return np.array(summary.SerializeToString(), dtype=object)


def _string_spec(*specs, **attrs):
    return TensorSpec([], _dtypes.string)


def _scalar_lower(ctx, op, value):
    from tensorboardX import summary as tbx

    a = np.asarray(value)
    if a.size != 1:
        raise errors.InvalidArgumentError(
            f"scalar summary '{op.attrs['tag']}' needs a single value, got shape {a.shape}")
    return _as_bytes_out(tbx.scalar(op.attrs["tag"], float(a.reshape(()))))


# TensorFlow's default histogram bucket limits (tensorflow/core/lib/histogram): +-1e-12 *
# 1.1^k up to 1e20, then +-DBL_MAX, and 0. A value v counts in the first bucket whose
# limit is above it (bucket i holds limits[i-1] <= v < limits[i]).
def _default_limits():
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    pos.append(np.finfo(np.float64).max)
    return np.array([-x for x in reversed(pos)] + [0.0] + pos)


_LIMITS = _default_limits()
_N_POS = (len(_LIMITS) - 1) // 2  # positive limits, DBL_MAX included
# The positive limits between -inf and +inf sentinels, for the guess-and-correct count.
_POS_EXT = np.concatenate([[-np.inf], _LIMITS[_N_POS + 1:], [np.inf]])


def _f32_bounds(limits):
    # For float32 a: a >= L  <=>  a >= up[L] (the least float32 >= L), and
    # a > L  <=>  a > down[L] (the greatest float32 <= L): exact float64 comparisons
    # made in float32.
    with np.errstate(over="ignore"):
        t = limits.astype(np.float32)
    wide = t.astype(np.float64)
    up = np.where(wide < limits, np.nextafter(t, np.float32(np.inf)), t)
    down = np.where(wide > limits, np.nextafter(t, np.float32(-np.inf)), t)
    return up, down


_POS_UP32, _POS_DOWN32 = _f32_bounds(_POS_EXT)


def _histogram_stats_kernel(values):
    """Bucket counts and moments of `values`, as TensorFlow's `Histogram::Add` makes
    them (in float64): ``(counts [len(_LIMITS)] int32, min, max, sum, sum_squares,
    bad)``, `bad` 0 when all values are finite, else 1 (NaN) or 2 (Inf) for the
    first non-finite value. Runs inside the compiled step."""
    import jax.numpy as jnp

    x = jnp.asarray(values).reshape(-1)
    narrow = x.dtype in (jnp.float32, jnp.float16, jnp.bfloat16)
    # Buckets of 32-bit (or narrower) floats are found in float32, exactly (see
    # _f32_bounds); other values in float64. The sums are float64 for all, as in TF.
    x = x.astype(jnp.float32 if narrow else jnp.float64)
    n_lim = len(_LIMITS)
    if x.shape[0] == 0:
        big = np.finfo(np.float64).max
        return (jnp.zeros(n_lim, jnp.int32), jnp.float64(big), jnp.float64(-big),
                jnp.float64(0.0), jnp.float64(0.0), jnp.int32(0))
    a = jnp.abs(x)
    # The bucket from the logarithm, off by at most one (the limits' rounding is far
    # below their 10% spacing), then made exact by comparing with the two limits
    # around it: a binary search costs ~10 passes over the values, this one. The guess
    # is taken in float32 (4x faster than float64 on CPU) on |x| clipped to
    # [1e-13, 1e21]: outside it the guess is the first or the last bucket, which the
    # comparisons make exact just the same.
    a32 = jnp.clip(a, 1e-13, 1e21).astype(jnp.float32)
    guess = jnp.floor(jnp.log(a32 * np.float32(1e12)) / np.float32(np.log(1.1))) + 1
    # NaN gives 0 (it is counted nowhere).
    guess = jnp.minimum(jnp.where(guess > 0, guess, 0.0), float(_N_POS))
    g = guess.astype(jnp.int32)
    if narrow:
        up, down = jnp.asarray(_POS_UP32), jnp.asarray(_POS_DOWN32)
        n_le = g - 1 + (up[g] <= a) + (up[g + 1] <= a)  # positive limits <= |x|
        n_lt = g - 1 + (down[g] < a) + (down[g + 1] < a)  # positive limits < |x|
    else:
        ext = jnp.asarray(_POS_EXT)
        lo, hi = ext[g], ext[g + 1]
        n_le = g - 1 + (lo <= a) + (hi <= a)
        n_lt = g - 1 + (lo < a) + (hi < a)
    # Limits <= x (std::upper_bound): for x >= 0 all negative ones and 0, plus the
    # positive ones <= x; for x < 0 the negative ones -p with p >= |x|.
    b = jnp.where(x >= 0, _N_POS + 1 + n_le, _N_POS - n_lt)
    finite = jnp.isfinite(x)
    b = jnp.where(finite, jnp.minimum(b, n_lim - 1), 0)
    counts = jnp.zeros(n_lim, jnp.int32).at[b].add(1)
    # TF stops at the first NaN or Inf and names it: whichever comes first.
    n = x.shape[0]
    nan, inf = jnp.isnan(x), jnp.isinf(x)
    first_nan = jnp.where(jnp.any(nan), jnp.argmax(nan), n)
    first_inf = jnp.where(jnp.any(inf), jnp.argmax(inf), n)
    bad = jnp.where(first_nan < first_inf, 1, jnp.where(first_inf < n, 2, 0))
    x64 = x.astype(jnp.float64)
    return (counts, jnp.min(x).astype(jnp.float64), jnp.max(x).astype(jnp.float64),
            jnp.sum(x64), jnp.sum(x64 * x64), bad.astype(jnp.int32))


def _histogram_stats_spec(values):
    f64 = _dtypes.float64
    return [TensorSpec([len(_LIMITS)], _dtypes.int32), TensorSpec([], f64),
            TensorSpec([], f64), TensorSpec([], f64), TensorSpec([], f64),
            TensorSpec([], _dtypes.int32)]


def _histogram_stats_host(values):
    """`_histogram_stats_kernel` in numpy (graphs whose HistogramSummary reads the
    values themselves)."""
    x = np.asarray(values).reshape(-1).astype(np.float64)
    finite = np.isfinite(x)
    bad = 0 if finite.all() else (1 if np.isnan(x[np.argmin(finite)]) else 2)
    if x.size == 0:
        big = np.finfo(np.float64).max
        return np.zeros(len(_LIMITS), np.int64), big, -big, 0.0, 0.0, bad
    b = np.minimum(np.searchsorted(_LIMITS, x[finite], side="right"), len(_LIMITS) - 1)
    counts = np.bincount(b, minlength=len(_LIMITS))
    with np.errstate(over="ignore"):  # sums past DBL_MAX are inf, as in TensorFlow
        return counts, x.min(), x.max(), x.sum(), (x * x).sum(), bad


def _encode_histogram(counts, vmin, vmax, vsum, vsum_sq):
    """TensorFlow's `Histogram::EncodeToProto` without zero buckets: each run of
    empty buckets becomes one bucket (its last limit, count 0)."""
    pb = _summary_pb2()
    counts = np.asarray(counts).astype(np.float64)
    empty = counts <= 0
    # A non-empty bucket, or the last bucket of a run of empty ones.
    keep = ~empty | np.append(~empty[1:], True)
    return pb.HistogramProto(min=float(vmin), max=float(vmax), num=float(counts.sum()),
                             sum=float(vsum), sum_squares=float(vsum_sq),
                             bucket_limit=_LIMITS[keep].tolist(),
                             bucket=counts[keep].tolist())


def histogram_proto(values):
    """The `HistogramProto` TensorFlow 1 writes for `values` (an array of real
    numbers), computed on the host.

    Raises:
      InvalidArgumentError: a value is NaN or infinite.
    """
    counts, vmin, vmax, vsum, vsum_sq, bad = _histogram_stats_host(values)
    if bad:
        raise errors.InvalidArgumentError(
            f"{'Nan' if bad == 1 else 'Infinity'} in histogram values")
    return _encode_histogram(counts, vmin, vmax, vsum, vsum_sq)


def _histogram_lower(ctx, op, *inputs):
    stats = inputs if len(inputs) == 6 else _histogram_stats_host(inputs[0])
    counts, vmin, vmax, vsum, vsum_sq, bad = (np.asarray(v) for v in stats)
    if int(bad):
        what = "Nan" if int(bad) == 1 else "Infinity"
        raise errors.InvalidArgumentError(
            f"{what} in summary histogram for: {op.attrs['tag']}")
    pb = _summary_pb2()
    hist = _encode_histogram(counts, vmin, vmax, vsum, vsum_sq)
    return _as_bytes_out(pb.Summary(value=[pb.Summary.Value(tag=op.attrs["tag"],
                                                            histo=hist)]))


def _png(img):
    """PNG bytes of a uint8 ``[height, width, channels]`` image, 1, 3 or 4 channels
    (written with zlib: no imaging library needed)."""
    import struct
    import zlib

    h, w, c = img.shape
    color_type = {1: 0, 3: 2, 4: 6}[c]  # grayscale, RGB, RGBA; 8 bits per sample
    rows = np.ascontiguousarray(img, dtype=np.uint8).reshape(h, w * c)
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rows], axis=1).tobytes()  # filter 0

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n" +
            chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def _image_lower(ctx, op, images):
    pb = _summary_pb2()
    a = np.asarray(images)
    tag = op.attrs["tag"]
    if a.ndim != 4 or a.shape[-1] not in (1, 3, 4):
        raise errors.InvalidArgumentError(
            f"image summary '{tag}' needs [batch, height, width, channels] with 1, 3 or "
            f"4 channels, got shape {a.shape}")
    if a.dtype != np.uint8:
        if not np.all(np.isfinite(a)):
            raise errors.InvalidArgumentError(f"Nan or Inf in image summary '{tag}'")
        # TF1 rescales floats: [0, 1] -> [0, 255] (values are clipped).
        a = np.clip(np.round(a.astype(np.float64) * 255.0), 0, 255).astype(np.uint8)
    n = min(op.attrs["max_outputs"], a.shape[0])
    values = []
    for i in range(n):
        t = f"{tag}/image" if op.attrs["max_outputs"] == 1 else f"{tag}/image/{i}"
        im = pb.Summary.Image(height=a.shape[1], width=a.shape[2], colorspace=a.shape[3],
                              encoded_image_string=_png(a[i]))
        values.append(pb.Summary.Value(tag=t, image=im))
    return _as_bytes_out(pb.Summary(value=values))


def _text_lower(ctx, op, *inputs):
    from tensorboardX import summary as tbx

    a = np.asarray(inputs[0]) if inputs else np.array(op.attrs["value"], dtype=object)
    if a.dtype == object or a.dtype.kind in "SU":
        flat = [x.decode() if isinstance(x, bytes) else str(x) for x in a.reshape(-1)]
    else:
        flat = [str(x) for x in a.reshape(-1)]
    s = flat[0] if a.ndim == 0 else "\n\n".join(flat)
    return _as_bytes_out(tbx.text(op.attrs["tag"], s))


def _merge_lower(ctx, op, *inputs):
    pb = _summary_pb2()
    out = pb.Summary()
    seen = set()
    for v in inputs:
        b = v.item() if isinstance(v, np.ndarray) else v
        s = pb.Summary()
        try:
            s.ParseFromString(b)
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError
            raise errors.InvalidArgumentError(
                f"Could not parse one of the summary inputs: {e}") from None
        for val in s.value:
            if val.tag in seen:
                raise errors.InvalidArgumentError(f"Duplicate tag {val.tag} found in summary "
                                                  "inputs")
            seen.add(val.tag)
            out.value.add().CopyFrom(val)
    return _as_bytes_out(out)


ScalarSummary = OpDef("ScalarSummary", lower=_scalar_lower, shape_fn=_string_spec,
                      stateful=True, host=True)
HistogramStats = OpDef("HistogramStats", _histogram_stats_kernel,
                       shape_fn=_histogram_stats_spec)
HistogramSummary = OpDef("HistogramSummary", lower=_histogram_lower, shape_fn=_string_spec,
                         stateful=True, host=True)
ImageSummary = OpDef("ImageSummary", lower=_image_lower, shape_fn=_string_spec,
                     stateful=True, host=True)
TextSummary = OpDef("TextSummary", lower=_text_lower, shape_fn=_string_spec, stateful=True,
                    host=True)
MergeSummary = OpDef("MergeSummary", lower=_merge_lower, shape_fn=_string_spec,
                     stateful=True, host=True)
for _t in ("ScalarSummary", "HistogramStats", "HistogramSummary", "ImageSummary", "TextSummary",
           "MergeSummary"):
    NotDifferentiable(_t)


def _tag_and_name(name):
    """TF1: the tag is the name under the current name scope; invalid characters
    become underscores."""
    clean = _INVALID_TAG.sub("_", str(name)).strip("/") or "summary"
    # The op's (unique, scoped) name is the tag: a second "loss" is tagged "loss_1".
    return get_default_graph().unique_name(clean, mark_as_used=False), clean


def _add(t, collections):
    for c in (collections if collections is not None else [GraphKeys.SUMMARIES]):
        add_to_collection(c, t)
    return t


def scalar(name, tensor, collections=None, family=None):
    """A summary op holding one scalar value.

    Args:
      name: the tag (under the current name scope).
      tensor: a real scalar tensor (or one element).
      collections: collections to add the op to (default `[GraphKeys.SUMMARIES]`).
    Returns:
      a 0-d string `Tensor`: the serialized `Summary`.
    """
    tag, op_name = _tag_and_name(name if family is None else f"{family}/{name}")
    t = convert_to_tensor(tensor)
    out = ScalarSummary(t, tag=tag, name=op_name)
    return _add(out, collections)


def histogram(name, values, collections=None, family=None):
    """A summary op holding a histogram of `values` (any shape), in TensorFlow's
    default exponential buckets (limits +-1e-12 * 1.1^k up to 1e20, +-DBL_MAX and 0;
    runs of empty buckets written as one, as TensorFlow 1 writes them).

    Args:
      name: the tag (under the current name scope).
      values: a real (float or integer) `Tensor` of any shape; counted as float64.
      collections: collections to add the op to (default `[GraphKeys.SUMMARIES]`).
    Returns:
      a 0-d string `Tensor`: the serialized `Summary`.
    Raises:
      TypeError: `values` is not real (bool, complex, string).
      InvalidArgumentError (at run time): a value is NaN or infinite
        (``"Nan in summary histogram for: <tag>"``, or ``Infinity``, as TensorFlow).

    Differs from TensorFlow 1: the counts, min, max and sums are computed inside the
    step's compiled program by a `HistogramStats` op (named ``<name>/stats``) that the
    `HistogramSummary` op reads, so the graph holds two ops where TensorFlow has one;
    the sums are added pairwise, not in order (equal up to rounding). Subnormal values
    count as zero (XLA flushes them on CPU).
    """
    tag, op_name = _tag_and_name(name if family is None else f"{family}/{name}")
    t = convert_to_tensor(values)
    if not (t.dtype.is_floating or t.dtype.is_integer):
        raise TypeError(f"histogram '{tag}' needs real numbers, got {t.dtype.name} for "
                        f"'{t.name}'")
    # The buckets are counted inside the compiled step (HistogramStats, an XLA op):
    # only ~1,550 counts and 5 numbers leave the device, and the host op only packs
    # the proto, so the step is not held up by a pass over the values in Python.
    stats = HistogramStats(t, name=f"{op_name}/stats")
    out = HistogramSummary(*stats, tag=tag, name=op_name)
    return _add(out, collections)


def image(name, tensor, max_outputs=3, collections=None, family=None):
    """A summary op holding up to `max_outputs` images of `tensor`.

    Args:
      tensor: [batch, height, width, channels], channels 1 (grey), 3 (RGB) or 4
        (RGBA); uint8, or floats in [0, 1] (scaled by 255, clipped).
    Returns:
      a 0-d string `Tensor`; the images are tagged ``name/image/i`` (``name/image``
      when `max_outputs` is 1), as TensorFlow 1.
    """
    if not isinstance(max_outputs, int) or max_outputs < 1:
        raise ValueError(f"`max_outputs` must be a positive int. Received: "
                         f"max_outputs={max_outputs!r}")
    t = convert_to_tensor(tensor)
    if t.shape.rank is not None and t.shape.rank != 4:
        raise ValueError(f"image summary needs a [batch, height, width, channels] tensor, "
                         f"got shape {t.shape}")
    tag, op_name = _tag_and_name(name if family is None else f"{family}/{name}")
    out = ImageSummary(t, tag=tag, max_outputs=max_outputs, name=op_name)
    return _add(out, collections)


def text(name, tensor, collections=None):
    """A summary op holding text (a string tensor, or any tensor printed as text);
    shown in TensorBoard's Text tab."""
    tag, op_name = _tag_and_name(name)
    if isinstance(tensor, (str, bytes)):
        # String constants are not graph tensors here: the text is an attr.
        value = tensor.decode() if isinstance(tensor, bytes) else tensor
        out = TextSummary(tag=tag, value=value, name=op_name)
    else:
        out = TextSummary(convert_to_tensor(tensor), tag=tag, value=None,
                          name=op_name)
    return _add(out, collections)


def merge(inputs, collections=None, name=None):
    """A summary op holding the union of the values of the summaries `inputs`.

    Raises (at run time):
      InvalidArgumentError: two inputs use the same tag.
    """
    ts = [convert_to_tensor(x) for x in inputs]
    for t in ts:
        if t.dtype != _dtypes.string:
            raise TypeError(f"merge: '{t.name}' is not a summary (dtype {t.dtype.name})")
    out = MergeSummary(*ts, name=name or "Merge/MergeSummary")
    if collections:
        _add(out, collections)
    return out


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """Merges every summary in collection `key` (optionally filtered by `scope`).

    Returns:
      the merged summary tensor, or None when the collection is empty (as TF1).
    """
    ts = get_default_graph().get_collection(key, scope)
    if not ts:
        return None
    return merge(ts, name=name)
