"""`FileWriter(logdir, sess.graph)` and `add_run_metadata` with histogram summaries in
the graph: TensorBoard reads the graph with the summary ops and their edges, and the
traced step's statistics (one compiled program, then the summaries' host ops); a
graph saved and imported again still writes the same histograms."""

import numpy as np

import mylib.compat.v1 as tf
from tensorboard.backend.event_processing import event_accumulator
from tensorboardX.proto import summary_pb2


def _build():
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2) / 8, name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w)), name="loss")
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.name_scope("summaries"):
        tf.summary.histogram("w", w)
        tf.summary.scalar("loss", loss)
    return x, w, train, tf.summary.merge_all()


def test_graph_and_run_metadata_read_by_tensorboard(tmp_path):
    g = tf.Graph()
    with g.as_default():
        x, w, train, merged = _build()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            writer = tf.summary.FileWriter(str(tmp_path), sess.graph)
            md = tf.RunMetadata()
            opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
            feed = {x: np.ones((3, 4), np.float32)}
            s, _ = sess.run([merged, train], feed, options=opts, run_metadata=md)
            writer.add_run_metadata(md, "step0", 0)
            writer.add_summary(s, 0)
            writer.close()
            w_after = sess.run(w)
    acc = event_accumulator.EventAccumulator(
        str(tmp_path), size_guidance={event_accumulator.HISTOGRAMS: 0})
    acc.Reload()
    tags = acc.Tags()
    assert tags["graph"] and "step0" in tags["run_metadata"]
    assert "summaries/w" in tags["histograms"] and "summaries/loss" in tags["scalars"]
    nodes = {n.name: n for n in acc.Graph().node}
    hist = nodes["summaries/w"]
    assert hist.op == "HistogramSummary"
    assert [i.split(":")[0] for i in hist.input] == ["summaries/w/stats"] * 6
    assert nodes["summaries/w/stats"].op == "HistogramStats"
    assert {"w", "loss", "x", "Merge/MergeSummary"} <= set(nodes)
    # The traced step: one compiled program, then the summaries' host ops.
    rm = acc.RunMetadata("step0")
    stats = [n for d in rm.step_stats.dev_stats for n in d.node_stats]
    labels = [n.timeline_label for n in stats]
    assert sum(" = xla(" in lab for lab in labels) == 1, labels
    hosts = {n.node_name for n in stats if " = host(" in n.timeline_label}
    assert hosts == {"summaries/w", "summaries/loss", "Merge/MergeSummary"}
    h = acc.Histograms("summaries/w")[0].histogram_value
    # The read of `w` is not ordered with the update (no control dependency, as in
    # TF1): the histogram holds the value before or after it.
    w_before = np.arange(8, dtype=np.float32) / 8
    assert h.num == 8
    assert (h.min, h.max) in [(float(v.min()), float(v.max())) for v in (w_before, w_after)]


def test_imported_meta_graph_writes_the_same_histograms(tmp_path):
    g = tf.Graph()
    feed_v = np.random.RandomState(0).rand(5, 4).astype(np.float32)
    with g.as_default():
        x, w, train, merged = _build()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            want = sess.run(merged, {x: feed_v})
            tf.train.Saver().save(sess, str(tmp_path / "m"))
    with tf.Graph().as_default() as g2:
        saver = tf.train.import_meta_graph(str(tmp_path / "m.meta"))
        with tf.Session() as sess:
            saver.restore(sess, str(tmp_path / "m"))
            got = sess.run(g2.get_tensor_by_name(merged.name),
                           {g2.get_tensor_by_name(x.name): feed_v})
    a, b = summary_pb2.Summary(), summary_pb2.Summary()
    a.ParseFromString(want)
    b.ParseFromString(got)
    assert a == b and [v.tag for v in b.value] == ["summaries/w", "summaries/loss"]
