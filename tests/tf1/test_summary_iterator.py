"""`tf.train.summary_iterator` reads back what `FileWriter` wrote; altered or truncated
files raise `DataLossError`."""

import glob
import os

import numpy as np
import pytest

import mylib as tf


def _write(logdir):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        s = tf.summary.scalar("loss", x)
        with tf.Session() as sess, tf.summary.FileWriter(str(logdir), sess.graph) as w:
            for step, v in enumerate([3.0, 2.5, 1.25]):
                w.add_summary(sess.run(s, {x: v}), step)
    (path,) = glob.glob(os.path.join(str(logdir), "events.out.tfevents.*"))
    return path


def test_reads_back_scalars_and_graph(tmp_path):
    path = _write(tmp_path)
    events = list(tf.train.summary_iterator(path))
    assert events[0].file_version.startswith("brain.Event")
    vals = [(e.step, v.tag, v.simple_value) for e in events for v in e.summary.value]
    assert vals == [(0, "loss", 3.0), (1, "loss", 2.5), (2, "loss", 1.25)]
    assert any(e.graph_def for e in events)
    assert all(e.wall_time > 0 for e in events)


@pytest.mark.parametrize("damage", ["flip", "truncate", "length"])
def test_damaged_files_raise_data_loss(tmp_path, damage):
    path = _write(tmp_path)
    data = bytearray(open(path, "rb").read())
    if damage == "flip":
        data[-6] ^= 0xFF
    elif damage == "truncate":
        data = data[:-3]
    else:  # a length field claiming far more data than the file holds
        data[0:8] = np.uint64(1 << 40).tobytes()
    open(path, "wb").write(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        list(tf.train.summary_iterator(path))
    with pytest.raises(tf.errors.NotFoundError):
        list(tf.train.summary_iterator(tmp_path / "missing"))
