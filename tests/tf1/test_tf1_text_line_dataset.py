"""`tf.data.TextLineDataset`: lines of plain and gzip files as string elements, read
through a TF1 iterator and by Python iteration."""

import gzip

import numpy as np
import pytest

import mylib as tf


def test_text_lines_plain_gzip_and_interleave(tmp_path):
    a = tmp_path / "a.txt"
    a.write_bytes(b"first\nsecond line\r\n\nlast without newline")
    b = tmp_path / "b.txt.gz"
    with gzip.open(b, "wb") as f:
        f.write("b1\nb2 \xe9\n".encode())
    ds = tf.data.TextLineDataset(str(a))
    assert [x.item() for x in ds] == [b"first", b"second line", b"", b"last without newline"]
    gz = tf.data.TextLineDataset([str(b)], compression_type="GZIP")
    assert [x.item() for x in gz] == [b"b1", "b2 \xe9".encode()]
    with pytest.raises(tf.errors.DataLossError):  # a plain file read as GZIP (as TF)
        list(tf.data.TextLineDataset([str(a)], compression_type="GZIP"))
    inter = tf.data.TextLineDataset([str(a), str(a)], num_parallel_reads=2)
    got = [x.item() for x in inter]
    assert got[:4] == [b"first", b"first", b"second line", b"second line"]
    it = tf.compat.v1.data.make_one_shot_iterator(tf.data.TextLineDataset(str(a)))
    nxt = it.get_next()
    assert nxt.dtype == tf.string and nxt.shape.as_list() == []
    with tf.Session() as s:
        vals = [s.run(nxt) for _ in range(4)]
        with pytest.raises(tf.errors.OutOfRangeError):
            s.run(nxt)
    assert vals == [b"first", b"second line", b"", b"last without newline"]
    with pytest.raises(ValueError, match="compression_type"):
        tf.data.TextLineDataset(str(a), compression_type="BZ2")
    with pytest.raises(TypeError, match="strings"):
        tf.data.TextLineDataset([1, 2])
