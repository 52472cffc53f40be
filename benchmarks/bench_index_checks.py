"""Cost of checking run-time indices (gathers and scatters fail the step when an index
is out of range, as TensorFlow on CPU): an embedding model's training step
(`embedding_lookup` into a 20000 x 64 table, batch 512, Adam) run with `Session.run`,
fetching the loss and fetching only the train op, with the checks and with the ops'
index checks switched off (the program before this change), interleaved. Fed ids are
checked on the host before the step; ids computed in the step are checked inside it
(the step then selects between new and old values of every variable it writes, and
the run waits for it).

    PYTHONPATH=. python benchmarks/bench_index_checks.py
"""

import time

import numpy as np

import mylib as tf
from mylib.core.op_registry import get_op_def

CHECKED = ("GatherV2", "ResourceGather", "ResourceScatterAdd", "ResourceScatterUpdate",
           "GatherNd", "ScatterNd", "TensorScatter")


def build(computed):
    g = tf.Graph()
    with g.as_default():
        ids = tf.placeholder(tf.int32, [None])
        y = tf.placeholder(tf.float32, [None])
        emb = tf.Variable(tf.random_normal([20000, 64], seed=1))
        w = tf.Variable(tf.random_normal([64, 1], seed=2))
        # Fed ids are checked on the host before the step; computed ones inside it.
        looked = ids * tf.constant(1) if computed else ids
        pred = tf.squeeze(tf.matmul(tf.nn.embedding_lookup(emb, looked), w), 1)
        loss = tf.reduce_mean((pred - y) ** 2)
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
        init = tf.global_variables_initializer()
    return g, ids, y, loss, train, init


def timed(checks, fetch_loss, computed, steps=200, reps=5):
    saved = {n: get_op_def(n).index_check for n in CHECKED}
    if not checks:
        for n in CHECKED:
            get_op_def(n).index_check = None
    try:
        g, ids, y, loss, train, init = build(computed)
        rng = np.random.default_rng(0)
        batches = [(rng.integers(0, 20000, 512).astype(np.int32),
                    rng.normal(size=512).astype(np.float32)) for _ in range(16)]
        with tf.Session(graph=g) as s:
            s.run(init)
            fetch = [loss, train] if fetch_loss else train
            step = s.make_callable(fetch, [ids, y])
            for b in batches[:3]:
                step(*b)
            best = []
            for _ in range(reps):
                t0 = time.perf_counter()
                for k in range(steps):
                    step(*batches[k % 16])
                s.run(loss, {ids: batches[0][0], y: batches[0][1]})  # wait for the device
                best.append((time.perf_counter() - t0) / steps * 1e6)
        return min(best)
    finally:
        for n, f in saved.items():
            get_op_def(n).index_check = f


if __name__ == "__main__":
    for computed in (False, True):
        for fetch_loss in (True, False):
            rows = []
            for _ in range(4):  # interleaved
                rows.append((timed(False, fetch_loss, computed),
                             timed(True, fetch_loss, computed)))
            off = min(r[0] for r in rows)
            on = min(r[1] for r in rows)
            what = ("computed ids, " if computed else "fed ids,      ") + \
                ("loss + train" if fetch_loss else "train only  ")
            print(f"{what}: unchecked {off:8.1f} us/step   checked {on:8.1f} us/step   "
                  f"({(on / off - 1) * 100:+.1f}%)")
