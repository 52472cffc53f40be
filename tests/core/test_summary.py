"""Summary ops and FileWriter, read back with TensorBoard's EventAccumulator."""

import glob
import os

import numpy as np
import pytest

import mylib as ml
from mylib import errors
from tensorboard.backend.event_processing import event_accumulator
from tensorboardX.proto import summary_pb2


def _load(logdir):
    acc = event_accumulator.EventAccumulator(
        logdir, size_guidance={event_accumulator.SCALARS: 0, event_accumulator.IMAGES: 0,
                               event_accumulator.HISTOGRAMS: 0, event_accumulator.TENSORS: 0})
    acc.Reload()
    return acc


def test_scalar_histogram_image_text_merge_roundtrip(tmp_path):
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None])
        loss = ml.reduce_mean(x * x)
        with ml.name_scope("train"):
            s_loss = ml.summary.scalar("loss", loss)
        s_hist = ml.summary.histogram("x", x)
        img = ml.placeholder(ml.float32, [None, 4, 5, 3])
        s_img = ml.summary.image("pics", img, max_outputs=2)
        s_txt = ml.summary.text("note", "hello **world**")
        merged = ml.summary.merge_all()
    assert s_loss.dtype == ml.string and s_loss.shape.as_list() == []
    assert set(g.get_collection(ml.GraphKeys.SUMMARIES)) == {s_loss, s_hist, s_img, s_txt}
    logdir = str(tmp_path)
    with ml.Session(graph=g) as sess:
        writer = ml.summary.FileWriter(logdir, sess.graph)
        images = np.random.RandomState(0).rand(3, 4, 5, 3).astype(np.float32)
        for step in range(3):
            xv = np.arange(4, dtype=np.float32) + step
            out = sess.run(merged, {x: xv, img: images})
            assert isinstance(out, bytes)
            writer.add_summary(out, global_step=step)
        one = sess.run(s_loss, {x: np.ones(2, np.float32)})
        proto = summary_pb2.Summary()
        proto.ParseFromString(one)
        assert proto.value[0].tag == "train/loss" and proto.value[0].simple_value == 1.0
        writer.add_summary(proto, global_step=10)  # a proto works too
        writer.close()
    acc = _load(logdir)
    tags = acc.Tags()
    assert "train/loss" in tags["scalars"]
    ev = acc.Scalars("train/loss")
    assert [e.step for e in ev] == [0, 1, 2, 10]
    np.testing.assert_allclose([e.value for e in ev],
                               [np.mean((np.arange(4) + s) ** 2) for s in range(3)] + [1.0])
    assert "x" in tags["histograms"]
    h = acc.Histograms("x")[-1].histogram_value
    assert h.num == 4 and h.min == 2.0 and h.max == 5.0 and h.sum == 14.0
    assert sorted(tags["images"]) == ["pics/image/0", "pics/image/1"]
    im = acc.Images("pics/image/0")[0]
    assert (im.height, im.width) == (4, 5)
    assert any(t.startswith("note") for t in tags["tensors"])
    assert tags["graph"]
    names = {n.name for n in acc.Graph().node}
    assert x.op.name in names and loss.op.name in names


def test_histogram_rejects_nan_and_merge_rejects_duplicates():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None])
        h = ml.summary.histogram("h", x)
        a = ml.summary.scalar("same", ml.constant(1.0), collections=[])
        b = ml.summary.scalar("same", ml.constant(2.0), collections=[])
        m = ml.summary.merge([a, b])
        c = ml.summary.scalar("dup", ml.constant(1.0), collections=[])
        dup = ml.summary.merge([c, c])
    with ml.Session(graph=g) as s:
        with pytest.raises(errors.InvalidArgumentError, match="Nan in summary histogram for: h"):
            s.run(h, {x: np.array([1.0, np.nan], np.float32)})
        # Unique op names give unique tags (TF1's "same_1"), so this merge is fine.
        p = summary_pb2.Summary()
        p.ParseFromString(s.run(m))
        assert [v.tag for v in p.value] == ["same", "same_1"]
        with pytest.raises(errors.InvalidArgumentError, match="Duplicate tag dup"):
            s.run(dup)
    with ml.Graph().as_default():
        assert ml.summary.merge_all() is None


def test_image_summary_uint8_gray(tmp_path):
    g = ml.Graph()
    with g.as_default():
        img = ml.placeholder(ml.uint8, [None, 3, 3, 1])
        s_img = ml.summary.image("gray", img, max_outputs=1)
    with ml.Session(graph=g) as s:
        out = s.run(s_img, {img: np.full((2, 3, 3, 1), 200, np.uint8)})
    p = summary_pb2.Summary()
    p.ParseFromString(out)
    assert [v.tag for v in p.value] == ["gray/image"]
    assert p.value[0].image.colorspace == 1


def test_add_run_metadata(tmp_path):
    g = ml.Graph()
    with g.as_default():
        x = ml.constant(np.ones((2, 2), np.float32))
        y = ml.py_func(lambda a: a * 2, [ml.matmul(x, x)], ml.float32)
        z = y + 1.0
    md = ml.RunMetadata()
    with ml.Session(graph=g) as s:
        s.run(z, options=ml.RunOptions(trace_level=ml.RunOptions.FULL_TRACE), run_metadata=md)
    w = ml.summary.FileWriter(str(tmp_path))
    w.add_run_metadata(md, "step_1", global_step=1)
    with pytest.raises(ValueError, match="already used"):
        w.add_run_metadata(md, "step_1")
    w.close()
    assert glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*"))
    acc = _load(str(tmp_path))
    assert "step_1" in acc.Tags()["run_metadata"]
    rm = acc.RunMetadata("step_1")
    kinds = [n.node_name for d in rm.step_stats.dev_stats for n in d.node_stats]
    assert len(kinds) == len(md.step_stats) and any("PyFunc" in k for k in kinds)
