"""Per-step time of a TF1 training step that writes histogram summaries every step, in
the style of TensorFlow-Examples' ``tensorboard_advanced.py``: an MLP 784-256-256-10,
histograms of its 6 weights, their 6 gradients and the 2 hidden activations (14
histograms, the largest 784x256), scalars for loss and accuracy, `merge_all`, and
`FileWriter.add_summary` each step. The baseline is a hand-written `jax.jit` step
computing the same update and the same histograms (TensorFlow's default buckets, by a
binary search in XLA, 32-bit), packed into `Summary` protos on the host and written with
tensorboardX's record writer; a second hand-written step finds the buckets from
log(|v|) corrected against the nearby limits (mylib's method, in 32 bits: its edges are
not TensorFlow-exact), the baseline the ratios are against. A last row runs the mylib
step without fetching the summaries (the training step alone).

Run: python benchmarks/summary_histograms.py [--steps 30] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

BATCH, LR = 100, 0.01


def data(n=2000, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.rand(n, 784).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.randint(0, 10, n)]
    return x, y


def init_weights(seed=1):
    rng = np.random.RandomState(seed)
    shapes = [(784, 256), (256, 256), (256, 10)]
    ws = [rng.randn(*s).astype(np.float32) * 0.05 for s in shapes]
    bs = [np.zeros(s[1], np.float32) for s in shapes]
    return ws, bs


def mylib_step(logdir, summaries=True):
    import mylib.compat.v1 as tf

    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 784], name="InputData")
        y = tf.placeholder(tf.float32, [None, 10], name="LabelData")
        ws, bs = init_weights()
        W = [tf.Variable(w, name=f"W{i + 1}") for i, w in enumerate(ws)]
        B = [tf.Variable(b, name=f"b{i + 1}") for i, b in enumerate(bs)]
        with tf.name_scope("Model"):
            l1 = tf.nn.relu(tf.matmul(x, W[0]) + B[0])
            tf.summary.histogram("relu1", l1)
            l2 = tf.nn.relu(tf.matmul(l1, W[1]) + B[1])
            tf.summary.histogram("relu2", l2)
            logits = tf.matmul(l2, W[2]) + B[2]
        with tf.name_scope("Loss"):
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(
                labels=y, logits=logits))
        with tf.name_scope("SGD"):
            opt = tf.train.GradientDescentOptimizer(LR)
            grads = opt.compute_gradients(loss, W + B)
            apply = opt.apply_gradients(grads)
        with tf.name_scope("Accuracy"):
            acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1),
                                                  tf.argmax(y, 1)), tf.float32))
        tf.summary.scalar("loss", loss)
        tf.summary.scalar("accuracy", acc)
        for v in W + B:
            tf.summary.histogram(v.name.split(":")[0], v)
        for gr, v in grads:
            tf.summary.histogram(v.name.split(":")[0] + "/gradient", gr)
        merged = tf.summary.merge_all()
        sess = tf.Session(graph=g)
        sess.run(tf.global_variables_initializer())
    writer = tf.summary.FileWriter(logdir, graph=g)
    state = {"i": 0}

    def step(bx, by):
        if not summaries:
            return float(sess.run([apply, loss], {x: bx, y: by})[1])
        _, c, s = sess.run([apply, loss, merged], {x: bx, y: by})
        writer.add_summary(s, state["i"])
        state["i"] += 1
        return float(c)

    return step, writer.close


def _limits():
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    pos.append(np.finfo(np.float64).max)
    return np.array([-p for p in reversed(pos)] + [0.0] + pos)


def jax_step(logdir, search="binary"):
    import jax
    import jax.numpy as jnp
    from tensorboardX.proto import event_pb2, summary_pb2
    from tensorboardX.record_writer import RecordWriter

    limits = _limits()
    ws, bs = init_weights()
    params = [jnp.asarray(a) for a in ws + bs]

    with np.errstate(over="ignore"):  # +-DBL_MAX become +-inf
        lim32 = limits.astype(np.float32)  # 32-bit limits: not TF-exact at the edges
    n_pos = (len(limits) - 1) // 2

    def bucket_binary(v):
        return jnp.searchsorted(jnp.asarray(lim32), v, side="right", method="scan_unrolled")

    ext = np.concatenate([[-np.inf] * 2, lim32, [np.inf] * 2])

    def bucket_log(v):
        # The count of limits <= v guessed from log(|v|) (within 2), then counted
        # exactly among the 4 limits around the guess.
        k = jnp.floor(jnp.log(jnp.clip(jnp.abs(v), 1e-13, 1e21) * 1e12) / np.log(1.1))
        k = jnp.clip(k.astype(jnp.int32) + 1, 0, n_pos)
        guess = jnp.where(v >= 0, n_pos + 1 + k, n_pos - k)
        e = jnp.asarray(ext)
        return guess - 2 + sum((e[guess + d] <= v).astype(jnp.int32) for d in range(4))

    find = bucket_binary if search == "binary" else bucket_log

    def stats(v):
        v = v.reshape(-1).astype(jnp.float32)
        b = jnp.minimum(find(v), len(limits) - 1)
        counts = jnp.zeros(len(limits), jnp.int32).at[b].add(1)
        return counts, v.min(), v.max(), v.sum(), (v * v).sum()

    def loss_fn(p, bx, by):
        l1 = jax.nn.relu(bx @ p[0] + p[3])
        l2 = jax.nn.relu(l1 @ p[1] + p[4])
        logits = l2 @ p[2] + p[5]
        loss = jnp.mean(-jnp.sum(by * jax.nn.log_softmax(logits), -1))
        return loss, (l1, l2, logits)

    @jax.jit
    def step_fn(p, bx, by):
        (loss, (l1, l2, logits)), g = jax.value_and_grad(loss_fn, has_aux=True)(p, bx, by)
        acc = jnp.mean(jnp.argmax(logits, 1) == jnp.argmax(by, 1))
        hists = [stats(a) for a in [l1, l2] + list(p) + list(g)]
        return [a - LR * b for a, b in zip(p, g)], loss, acc, hists

    names = ["relu1", "relu2"] + [f"W{i}" for i in (1, 2, 3)] + \
        [f"b{i}" for i in (1, 2, 3)]
    names += [n + "/gradient" for n in names[2:]]
    os.makedirs(logdir, exist_ok=True)
    rec = RecordWriter(os.path.join(logdir, "events.out.tfevents.jax"))
    state = {"p": params, "i": 0}

    def step(bx, by):
        state["p"], *out = step_fn(state["p"], bx, by)
        loss, acc, hists = jax.device_get(out)  # one transfer for all the values
        s = summary_pb2.Summary()
        s.value.add(tag="loss", simple_value=float(loss))
        s.value.add(tag="accuracy", simple_value=float(acc))
        for name, (c, lo, hi, sm, sq) in zip(names, hists):
            c = np.asarray(c).astype(np.float64)
            empty = c <= 0
            keep = ~empty | np.append(~empty[1:], True)
            h = summary_pb2.HistogramProto(min=float(lo), max=float(hi), num=c.sum(),
                                           sum=float(sm), sum_squares=float(sq),
                                           bucket_limit=limits[keep].tolist(),
                                           bucket=c[keep].tolist())
            s.value.add(tag=name, histo=h)
        rec.write(event_pb2.Event(step=state["i"], wall_time=time.time(),
                                  summary=s).SerializeToString())
        state["i"] += 1
        return float(loss)

    return step, rec.close


def time_steps(make, steps, x, y):
    with tempfile.TemporaryDirectory() as d:
        step, close = make(d)
        t0 = time.perf_counter()
        step(x[:BATCH], y[:BATCH])
        first = time.perf_counter() - t0
        times = []
        for i in range(steps):
            j = (i * BATCH) % (len(x) - BATCH)
            t0 = time.perf_counter()
            loss = step(x[j:j + BATCH], y[j:j + BATCH])
            times.append(time.perf_counter() - t0)
        close()
    return statistics.median(times), first, loss


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args(argv)
    x, y = data()
    systems = [("mylib Session.run", mylib_step), ("hand-written jax.jit", jax_step),
               ("jax.jit, log buckets", lambda d: jax_step(d, search="log")),
               ("mylib, no summaries", lambda d: mylib_step(d, summaries=False))]
    res = {n: [] for n, _ in systems}
    for r in range(a.repeats):
        order = systems[r % len(systems):] + systems[:r % len(systems)]
        for name, make in order:
            res[name].append(time_steps(make, a.steps, x, y))
    base = statistics.median(t for t, _, _ in res["jax.jit, log buckets"])
    print(f"{'system':24s} {'ms/step':>9s} {'vs jax':>7s} {'first step s':>13s} "
          f"{'last loss':>10s}")
    for name, _ in systems:
        t = statistics.median(v[0] for v in res[name])
        first = statistics.median(v[1] for v in res[name])
        print(f"{name:24s} {t * 1e3:9.2f} {t / base:6.2f}x {first:13.2f} "
              f"{res[name][-1][2]:10.4f}")


if __name__ == "__main__":
    main()
