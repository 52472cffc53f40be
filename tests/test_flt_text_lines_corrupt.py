"""TextLineDataset on corrupt and hostile input: a truncated or CRC-bad GZIP file and a
truncated or corrupted ZLIB file raise DataLossError naming the file after yielding
the lines before the damage (as TensorFlow's reader), also through a graph iterator;
a compression bomb is streamed with memory bounded by the longest line; lines split
across read chunks come out whole."""

import gzip
import os
import subprocess
import sys
import struct
import textwrap
import zlib

import pytest

import mylib as tf
from mylib.data import readers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINES = [f"line {i} " + "x" * (i % 50) for i in range(4000)]
TEXT = ("\n".join(LINES) + "\n").encode()


def _read(path, comp):
    return [x.item().decode() for x in tf.data.TextLineDataset(path, compression_type=comp)]


@pytest.fixture
def small_chunks(monkeypatch):
    # Chunks far smaller than the files, so lines straddle chunk boundaries.
    monkeypatch.setattr(readers, "_CHUNK", 1000)


@pytest.mark.parametrize("comp", ["", "GZIP", "ZLIB"])
def test_lines_across_chunks_match_the_text(tmp_path, small_chunks, comp):
    data = {"": TEXT, "GZIP": gzip.compress(TEXT), "ZLIB": zlib.compress(TEXT)}[comp]
    p = tmp_path / "f"
    p.write_bytes(data)
    assert _read(str(p), comp) == LINES
    p.write_bytes(b"a\r\n\nlast")  # CRLF, an empty line, no final newline
    if comp:
        p.write_bytes(gzip.compress(b"a\r\n\nlast") if comp == "GZIP"
                      else zlib.compress(b"a\r\n\nlast"))
    assert _read(str(p), comp) == ["a", "", "last"]


def _damaged(comp):
    full = gzip.compress(TEXT) if comp == "GZIP" else zlib.compress(TEXT)
    truncated = full[: len(full) // 2]
    flipped = bytearray(full)
    if comp == "GZIP":
        flipped[-6] ^= 0xFF  # the CRC-32 in the trailer
    else:
        flipped[-2] ^= 0xFF  # the Adler-32 at the end
    return {"truncated": truncated, "checksum": bytes(flipped)}


@pytest.mark.parametrize("comp", ["GZIP", "ZLIB"])
@pytest.mark.parametrize("damage", ["truncated", "checksum"])
def test_damaged_compressed_file_is_data_loss_after_the_good_lines(tmp_path, small_chunks,
                                                                   comp, damage):
    p = tmp_path / "bad.gz"
    p.write_bytes(_damaged(comp)[damage])
    got = []
    with pytest.raises(tf.errors.DataLossError, match=r"bad\.gz"):
        for x in tf.data.TextLineDataset(str(p), compression_type=comp):
            got.append(x.item().decode())
    assert got == LINES[:len(got)]
    if damage == "truncated":
        assert len(got) > 100  # the lines before the cut were read


def test_graph_iterator_raises_data_loss(tmp_path):
    p = tmp_path / "bad.gz"
    p.write_bytes(gzip.compress(TEXT)[:200])
    with tf.Graph().as_default():
        ds = tf.data.TextLineDataset(str(p), compression_type="GZIP")
        nxt = tf.compat.v1.data.make_one_shot_iterator(ds).get_next()
        with tf.Session() as sess:
            with pytest.raises(tf.errors.DataLossError, match="GZIP"):
                while True:
                    sess.run(nxt)


def _gzip_bomb(path, line_bytes=1 << 20, n_lines=512):
    """A GZIP file of `n_lines` lines of `line_bytes` bytes (512 MiB by default) in
    about half a MiB: one compressed block, made independent by a full flush,
    repeated (compressing 512 MiB for real would take the test's whole budget)."""
    line = b"a" * (line_bytes - 1) + b"\n"
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(line) + c.flush(zlib.Z_FULL_FLUSH)
    blk = c.compress(line) + c.flush(zlib.Z_FULL_FLUSH)
    assert c.compress(line) + c.flush(zlib.Z_FULL_FLUSH) == blk
    tail = c.flush()
    crc = 0
    for _ in range(n_lines):
        crc = zlib.crc32(line, crc)
    with open(path, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + head)
        for _ in range(n_lines - 1):  # the head holds the first line
            f.write(blk)
        f.write(tail)
        f.write(struct.pack("<II", crc, (n_lines * line_bytes) & 0xFFFFFFFF))


def test_a_compression_bomb_is_streamed_with_bounded_memory(tmp_path):
    # 512 MiB of 1 MiB lines in half a MiB of GZIP: reading every line must hold one
    # line at a time, not the file's expansion (the old reader decompressed it whole).
    p = tmp_path / "bomb.gz"
    _gzip_bomb(p)
    script = textwrap.dedent(f"""
        import resource
        import mylib as tf
        ds = tf.data.TextLineDataset({str(p)!r}, compression_type="GZIP")
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        n = sum(1 for x in ds if len(x.item()) == (1 << 20) - 1)
        grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
        print(n, grew // 1024)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": ROOT})
    assert out.returncode == 0, out.stderr[-2000:]
    n, grew_mb = map(int, out.stdout.split())
    assert n == 512
    assert grew_mb < 64, grew_mb
