"""Histogram summaries: the events written hold TensorFlow 1's buckets (its default
bucket limits, `Histogram::Add`'s upper-bound rule, `EncodeToProto`'s collapsed empty
runs), computed by a plain-Python reference of that algorithm; the buckets are counted
inside the compiled step, so only the counts leave it."""

import bisect
import glob
import sys

import numpy as np
import pytest

import mylib as ml
from mylib import errors
from mylib.summary import summary_ops
from mylib.summary.reader import summary_iterator
from tensorboard.backend.event_processing import event_accumulator
from tensorboardX.proto import summary_pb2

DBL_MAX = sys.float_info.max


def _tf_limits():
    # TensorFlow's InitDefaultBucketsInner, written out in Python floats.
    pos, v = [], 1.0e-12
    while v < 1.0e20:
        pos.append(v)
        v *= 1.1
    pos.append(DBL_MAX)
    return [-p for p in reversed(pos)] + [0.0] + pos


LIMITS = _tf_limits()


def _tf_histogram(values):
    """(min, max, num, sum, sum_squares, bucket_limit, bucket) as TF1 writes them."""
    buckets = [0.0] * len(LIMITS)
    lo, hi, total, sq = DBL_MAX, -DBL_MAX, 0.0, 0.0
    for v in (float(x) for x in values):
        b = bisect.bisect_right(LIMITS, v)
        buckets[min(b, len(LIMITS) - 1)] += 1
        lo, hi = min(lo, v), max(hi, v)
        total += v
        sq += v * v
    limit, count, i = [], [], 0
    while i < len(buckets):
        end, c = LIMITS[i], buckets[i]
        i += 1
        if c <= 0:
            while i < len(buckets) and buckets[i] <= 0:
                end, c = LIMITS[i], buckets[i]
                i += 1
        limit.append(end)
        count.append(c)
    return lo, hi, float(len(values)), total, sq, limit, count


def _edge_values():
    # No subnormals: XLA on CPU (and TensorFlow's CPU kernels) flush them to zero.
    lim = np.array(LIMITS[1:-1])
    v = np.concatenate([lim, np.nextafter(lim, -np.inf), np.nextafter(lim, np.inf),
                        [0.0, -0.0, 3e20, -3e20, 1e-300, -1e-300, 1e300, DBL_MAX]])
    return v[(v == 0) | (np.abs(v) >= np.finfo(np.float64).tiny)]


CASES = [
    ("normal_f32", lambda: np.random.RandomState(0).randn(300, 40).astype(np.float32)),
    ("edges_f64", _edge_values),
    ("edges_f32", lambda: _edge_values()[np.abs(_edge_values()) < 3e38].astype(np.float32)),
    ("ints", lambda: np.array([[-5, 0, 3], [3, 2**31 - 1, -2**31]], np.int32)),
    ("zeros", lambda: np.zeros(7, np.float32)),
    ("empty", lambda: np.zeros((0, 3), np.float32)),
]


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_histogram_events_equal_tensorflow_buckets(tmp_path, name, make):
    value = make()
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.as_dtype(value.dtype), [None] * value.ndim)
        h = ml.summary.histogram("values", x)
    with ml.Session(graph=g) as s:
        w = ml.summary.FileWriter(str(tmp_path))
        w.add_summary(s.run(h, {x: value}), 3)
        w.close()
    want = _tf_histogram(value.reshape(-1))
    (path,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    got = [e for e in summary_iterator(path) if e.HasField("summary")]
    assert len(got) == 1 and got[0].step == 3
    (v,) = got[0].summary.value
    hp = v.histo
    assert v.tag == "values"
    assert (hp.min, hp.max, hp.num) == want[:3]
    # TF adds in order, XLA pairwise: equal up to rounding of the sum of magnitudes.
    flat = value.reshape(-1).astype(np.float64)
    with np.errstate(over="ignore"):
        scale = np.abs(flat).sum(), (flat * flat).sum()
    for got_v, want_v, mag in zip([hp.sum, hp.sum_squares], want[3:5], scale):
        assert got_v == want_v or abs(got_v - want_v) <= 1e-13 * mag, (got_v, want_v)
    assert list(hp.bucket_limit) == want[5]
    assert list(hp.bucket) == want[6]
    # TensorBoard's own reader sees the same histogram.
    acc = event_accumulator.EventAccumulator(str(tmp_path),
                                             size_guidance={event_accumulator.HISTOGRAMS: 0})
    acc.Reload()
    hv = acc.Histograms("values")[0].histogram_value
    assert list(hv.bucket) == want[6] and hv.num == want[2]


def test_graph_reading_values_in_summary_op_packs_the_same():
    # A HistogramSummary that reads the values itself (graphs saved before the counts
    # moved into the step) writes the same proto as one fed by HistogramStats.
    value = np.random.RandomState(1).randn(50).astype(np.float32) * 3
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None])
        new = ml.summary.histogram("h", x)
        old = summary_ops.HistogramSummary(x, tag="h", name="old")
    with ml.Session(graph=g) as s:
        a, b = s.run([new, old], {x: value})
    assert a == b


def test_histogram_counts_in_compiled_step_only_counts_leave_it():
    g = ml.Graph()
    with g.as_default():
        w = ml.Variable(np.random.RandomState(0).randn(784, 256).astype(np.float32))
        upd = w.assign_add(ml.ones_like(w))
        with ml.control_dependencies([upd]):
            h = ml.summary.histogram("w", w.read_value())
        merged = ml.summary.merge_all()
    with ml.Session(graph=g) as s:
        s.run(w.initializer)
        s.run(merged)
        (plan,) = [p for k, p in s._plans.items() if k[0] == (merged,)]
    d = plan.segmented.describe()
    xla = [seg for seg in d["segments"] if seg["kind"] == "xla"]
    assert len(xla) == 1  # one compiled program, not split around the summaries
    # What the compiled program hands the host: the counts and five numbers.
    for t in plan.segmented.segments[0].outputs:
        assert t.shape.num_elements() <= len(LIMITS), t


@pytest.mark.parametrize("bad,what", [(np.nan, "Nan"), (np.inf, "Infinity"),
                                      (-np.inf, "Infinity")])
def test_non_finite_histogram_fails_the_step_and_keeps_variables(bad, what):
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None])
        v = ml.Variable(np.zeros(3, np.float32))
        step = v.assign_add(ml.ones(3))
        with ml.name_scope("stats"):
            h = ml.summary.histogram("x", x)
    with ml.Session(graph=g) as s:
        s.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError,
                           match=f"{what} in summary histogram for: stats/x"):
            s.run([step, h], {x: np.array([1.0, bad, np.nan, 2.0], np.float32)})
        np.testing.assert_array_equal(s.run(v), np.zeros(3))


def test_histogram_rejects_non_real_values():
    with ml.Graph().as_default():
        with pytest.raises(TypeError, match="real numbers"):
            ml.summary.histogram("b", ml.constant([True, False]))


def test_merged_histograms_parse_as_summary():
    g = ml.Graph()
    with g.as_default():
        a = ml.summary.histogram("a", ml.constant([1.0, 2.0]))
        b = ml.summary.histogram("b", ml.constant([[-1, 4]], ml.int64))
        m = ml.summary.merge([a, b])
    with ml.Session(graph=g) as s:
        p = summary_pb2.Summary()
        p.ParseFromString(s.run(m))
    assert [v.tag for v in p.value] == ["a", "b"]
    assert list(p.value[1].histo.bucket) == _tf_histogram([-1, 4])[6]
