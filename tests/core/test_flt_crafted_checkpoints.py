"""Crafted TF1 checkpoint data files whose index is well-formed msgpack with a valid
checksum (an attacker recomputes it) but lies about sizes, shapes, offsets or types:
every reader (`list_variables`, `load_variable`, `load_checkpoint`, `Saver.restore`)
raises DataLossError before allocating anything the file does not hold, and a restore
leaves the variables as they were."""

import zlib

import msgpack
import numpy as np
import pytest

import mylib as ml
from mylib import errors
from mylib.runtime import saver as S


def _parts(path):
    raw = open(path, "rb").read()
    magic, ver, flags, length, _ = S._HEADER.unpack(raw[:S._HEADER.size])
    start = S._HEADER.size + length
    index = msgpack.unpackb(raw[S._HEADER.size:start])
    return (magic, ver, flags), index, raw[start + S._pad(start):]


def _rewrite(path, edit):
    """Rewrites `path` with its index changed by `edit`, re-checksummed and
    re-aligned as a writer would: only the lie in the index remains."""
    head, index, data = _parts(path)
    edit(index)
    ib = msgpack.packb(index, use_bin_type=True)
    out = S._HEADER.pack(*head, len(ib), zlib.crc32(ib)) + ib
    out += b"\0" * S._pad(len(out))
    with open(path, "wb") as f:
        f.write(out + data)


def _entry(**kw):
    return lambda index: index["tensors"][0].update(**kw)


LIES = {
    # 2**32 * 2**32 elements: an int64 product wraps to 0, matching nbytes=0.
    "element count wraps int64": _entry(shape=[2 ** 32, 2 ** 32], nbytes=0),
    "element count wraps int64 (2)": _entry(shape=[2 ** 62, 4], nbytes=0),
    "bool dimension": _entry(shape=[True, 3], nbytes=12),
    "float dimensions": _entry(shape=[2.0, 3.0]),
    "negative offset": _entry(offset=-64),
    "offset past the end": _entry(offset=2 ** 62),
    "negative size": _entry(nbytes=-24),
    "size past the end": _entry(shape=[2 ** 60], nbytes=2 ** 62),
    "object dtype": _entry(dtype="object"),
    "dtype code not a name": _entry(dtype=["float32"]),
    "name not a string": _entry(name=5),
    "checksum not an int": _entry(crc32="x"),
    "bool offset": _entry(offset=False),
    "tensors not a list": lambda index: index.update(tensors={"v": 1}),
}


@pytest.fixture
def ckpt(tmp_path):
    with ml.Graph().as_default():
        v = ml.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="v")
        w = ml.Variable(np.arange(4, dtype=np.int64), name="w")
        sess = ml.Session()
        sess.run(ml.global_variables_initializer())
        prefix = ml.train.Saver().save(sess, str(tmp_path / "model"), write_meta_graph=False)
        sess.close()
    _, index, _ = _parts(prefix + S.DATA_SUFFIX)
    assert index["tensors"][0]["name"] == "v"
    return prefix


@pytest.mark.parametrize("lie", sorted(LIES))
def test_lying_index_is_data_loss_for_every_reader(ckpt, lie):
    _rewrite(ckpt + S.DATA_SUFFIX, LIES[lie])
    for read in (lambda: ml.train.list_variables(ckpt),
                 lambda: ml.train.load_variable(ckpt, "v"),
                 lambda: ml.train.load_checkpoint(ckpt).get_tensor("v")):
        with pytest.raises(errors.DataLossError, match="model.mylib"):
            read()
    with ml.Graph().as_default():
        v = ml.Variable(np.full((2, 3), -1, np.float32), name="v")
        w = ml.Variable(np.full((4,), -1, np.int64), name="w")
        sess = ml.Session()
        sess.run(ml.global_variables_initializer())
        with pytest.raises(errors.DataLossError):
            ml.train.Saver().restore(sess, ckpt)
        np.testing.assert_array_equal(sess.run(v), np.full((2, 3), -1))
        np.testing.assert_array_equal(sess.run(w), np.full((4,), -1))
        sess.close()


def test_the_untouched_file_reads_back(ckpt):
    _rewrite(ckpt + S.DATA_SUFFIX, lambda index: None)
    np.testing.assert_array_equal(ml.train.load_variable(ckpt, "v"),
                                  np.arange(6, dtype=np.float32).reshape(2, 3))
    assert dict(ml.train.list_variables(ckpt)) == {"v": [2, 3], "w": [4]}


def test_truncated_and_bit_flipped_files(ckpt, tmp_path):
    raw = open(ckpt + S.DATA_SUFFIX, "rb").read()
    for cut in (0, 5, S._HEADER.size - 1, S._HEADER.size + 3, len(raw) - 1):
        with open(ckpt + S.DATA_SUFFIX, "wb") as f:
            f.write(raw[:cut])
        with pytest.raises(errors.DataLossError):
            ml.train.load_variable(ckpt, "v")
    # magic, version, index, the data of 'v' and of 'w' (each 64-byte aligned: 'w' is
    # the last 64 bytes, its 32 data bytes first)
    for pos in (0, 8, S._HEADER.size + 2, len(raw) - 128 + 1, len(raw) - 64 + 3):
        flipped = bytearray(raw)
        flipped[pos] ^= 0x40
        with open(ckpt + S.DATA_SUFFIX, "wb") as f:
            f.write(bytes(flipped))
        with pytest.raises(errors.DataLossError):
            S.read_checkpoint_file(ckpt + S.DATA_SUFFIX)  # every array
