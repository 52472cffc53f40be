"""Checkpoint save/restore throughput of `ml.train.Saver` against `numpy.save` /
`numpy.load` of the same arrays (issue 3).

Default: 100 MB of float32 variables (10 x 10 MB), median of 5 repeats. Saver.save
covers reading the values out of the Session, CRC-32, the write,
fsync and the atomic rename, and the index file; Saver.restore covers the read, the
checksums, the checks and placing the arrays in the Session. The numpy
baselines write one .npy file per array (without and with fsync, for the same
durability) and load them (to host, and also placed on the device with
`jax.device_put`, which is what a restore does). Reads come from the page cache for
all contenders.

Run: python benchmarks/checkpoint.py [--mb 100] [--vars 10] [--repeats 5] [--dir DIR]
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import zlib

import jax
import numpy as np

import mylib as ml
from mylib.runtime import saver as saver_mod


def timed(fn, repeats, before=None):
    times = []
    for _ in range(repeats):
        if before:
            before()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mb", type=float, default=100.0, help="total MB (1e6 bytes)")
    p.add_argument("--vars", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    a = p.parse_args(argv)

    n_per = int(a.mb * 1e6 / 4 / a.vars)
    total = n_per * 4 * a.vars
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(n_per, dtype=np.float32) for _ in range(a.vars)]
    root = tempfile.mkdtemp(dir=a.dir, prefix="ckpt_bench_")
    try:
        g = ml.Graph()
        with g.as_default():
            vs = [ml.Variable(np.zeros(n_per, np.float32), name=f"v{i}")
                  for i in range(a.vars)]
            saver = ml.train.Saver(max_to_keep=1)
            sess = ml.Session()
            # Place the values in the session as a training loop would leave them.
            sess.assign_variables({v._key: jax.device_put(x) for v, x in zip(vs, arrays)})
            prefix = os.path.join(root, "model.ckpt")
            ml_save = timed(lambda: saver.save(sess, prefix), a.repeats)
            ml_restore = timed(lambda: saver.restore(sess, prefix), a.repeats)
            check = sess.run(vs[-1])
            assert np.array_equal(check, arrays[-1])

        npdir = os.path.join(root, "npy")
        os.makedirs(npdir)
        files = [os.path.join(npdir, f"v{i}.npy") for i in range(a.vars)]
        host = [np.asarray(jax.device_put(x)) for x in arrays]

        def np_save(sync):
            for f, x in zip(files, host):
                with open(f, "wb") as fh:
                    np.save(fh, x)
                    if sync:
                        fh.flush()
                        os.fsync(fh.fileno())

        np_save_t = timed(lambda: np_save(False), a.repeats)
        np_save_sync_t = timed(lambda: np_save(True), a.repeats)
        np_load_t = timed(lambda: [np.load(f) for f in files], a.repeats)
        np_load_dev_t = timed(
            lambda: jax.block_until_ready([jax.device_put(np.load(f)) for f in files]),
            a.repeats)

        # Where the time goes (same data, host arrays).
        named = {f"v{i}": x for i, x in enumerate(host)}
        crc_t = timed(lambda: [zlib.crc32(x) for x in host], a.repeats)
        raw = os.path.join(root, "raw.mylib")
        write_t = timed(lambda: saver_mod.write_checkpoint_file(raw, named), a.repeats)
        read_t = timed(lambda: saver_mod.read_checkpoint_file(raw), a.repeats)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    mb = total / 1e6

    def row(name, t, base):
        return f"| {name:<40} | {t * 1e3:8.1f} | {mb / t:8.0f} | {t / base:6.2f}x |"

    cmd = "python benchmarks/checkpoint.py " + " ".join(sys.argv[1:] if argv is None else argv)
    print(f"Command: `{cmd.strip()}`; {a.vars} x {mb / a.vars:.1f} MB float32 = {mb:.0f} MB, "
          f"median of {a.repeats}; jax {jax.__version__} {jax.default_backend()}, "
          f"{os.cpu_count()} CPU cores")
    print()
    print(f"| {'operation':<40} | {'ms':>8} | {'MB/s':>8} | {'vs np':>7} |")
    print(f"|{'-' * 42}|{'-' * 10}:|{'-' * 10}:|{'-' * 8}:|")
    print(row("Saver.save (fsync, atomic rename)", ml_save, np_save_sync_t))
    print(row("numpy.save x N + fsync", np_save_sync_t, np_save_sync_t))
    print(row("numpy.save x N (no fsync)", np_save_t, np_save_sync_t))
    print(row("Saver.restore (into the Session)", ml_restore, np_load_dev_t))
    print(row("numpy.load x N + jax.device_put", np_load_dev_t, np_load_dev_t))
    print(row("numpy.load x N (host only)", np_load_t, np_load_dev_t))
    print()
    print(f"save ratio: Saver.save / (numpy.save + fsync) = {ml_save / np_save_sync_t:.2f}x, "
          f"/ numpy.save without fsync = {ml_save / np_save_t:.2f}x")
    print(f"restore ratio: Saver.restore / (numpy.load + device_put) = "
          f"{ml_restore / np_load_dev_t:.2f}x, / numpy.load = {ml_restore / np_load_t:.2f}x")
    print(f"breakdown: crc32 of all arrays {crc_t * 1e3:.1f} ms; write_checkpoint_file "
          f"(host arrays -> file, fsync, rename) {write_t * 1e3:.1f} ms; read_checkpoint_file "
          f"(file -> host arrays, checksums) {read_t * 1e3:.1f} ms")

if __name__ == "__main__":
    main()
