"""On a machine with a GPU: places a training step on the GPU, checks it ran there and
matches the CPU, and prints the step time on each.

    python benchmarks/gpu_check.py

Exits with a message (status 0) when no GPU is visible to JAX.
"""

import statistics
import time

import jax
import numpy as np

import mylib as ml


def build(device, width=2048, batch=512):
    g = ml.Graph()
    rng = np.random.default_rng(0)
    with g.as_default():
        with ml.device(device):
            x = ml.placeholder(ml.float32, [None, width])
            w1 = ml.Variable(rng.standard_normal((width, width)).astype(np.float32) * 0.02)
            w2 = ml.Variable(rng.standard_normal((width, 10)).astype(np.float32) * 0.02)
            loss = ml.reduce_mean(ml.square(ml.matmul(ml.tanh(ml.matmul(x, w1)), w2)))
            g1, g2 = ml.gradients(loss, [w1, w2])
            train = ml.group(w1.assign_sub(0.1 * g1), w2.assign_sub(0.1 * g2))
        init = ml.global_variables_initializer()
    sess = ml.Session(graph=g)
    sess.run(init)
    xv = rng.standard_normal((batch, width)).astype(np.float32)
    return sess, train, loss, x, xv


def time_steps(sess, train, x, xv, n=20):
    step = sess.make_callable(train, [x])
    step(xv)
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            step(xv)
        jax.block_until_ready(list(sess._store.values()))
        ts.append((time.perf_counter() - t0) / n)
    return statistics.median(ts)


def main():
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    print(f"jax {jax.__version__}; devices: {jax.devices()}")
    if not gpus:
        print("no GPU visible to JAX: nothing to check")
        return
    results = {}
    for dev in ("/device:GPU:0", "/device:CPU:0"):
        sess, train, loss, x, xv = build(dev)
        t = time_steps(sess, train, x, xv)
        used = {str(d) for v in sess._store.values() for d in v.devices()}
        results[dev] = (t, sess.run(loss, {x: xv}))
        print(f"{dev}: step {t * 1e3:.2f} ms; variables on {sorted(used)}; "
              f"loss after training {results[dev][1]:.6f}")
    (tg, lg), (tc, lc) = results["/device:GPU:0"], results["/device:CPU:0"]
    print(f"GPU speed-up over CPU: {tc / tg:.1f}x; |loss_gpu - loss_cpu| = {abs(lg - lc):.2e}")


if __name__ == "__main__":
    main()
