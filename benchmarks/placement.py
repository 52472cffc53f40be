"""Placement and partitioning costs on forced host CPU devices.

    python benchmarks/placement.py

1. A two-device model-parallel MLP against the same model on one device (step time
   ratio; note that the forced CPU devices share the machine's cores).
2. The per-transfer overhead of a cut edge (`_Send`/`_Recv` pair) for 1 KB, 1 MB and
   100 MB against a bare `jax.device_put` of the same array.
3. Placement + partitioning time for a 10,000-op graph.
"""

import statistics
import time

from mylib.devices import set_cpu_device_count

set_cpu_device_count(4)

import jax  # noqa: E402
import numpy as np  # noqa: E402

import mylib as ml  # noqa: E402
from mylib.runtime.executor import SegmentedPlan  # noqa: E402
from mylib.core.lowering import prune  # noqa: E402
from mylib.runtime.placement import place  # noqa: E402


def median_time(fn, repeats=7, number=20):
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        ts.append((time.perf_counter() - t0) / number)
    return statistics.median(ts)


def model_parallel(devs, width=1024, batch=256):
    g = ml.Graph()
    rng = np.random.default_rng(0)
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, width])
        h = x
        ws = []
        for i in range(4):
            with ml.device(devs[i * len(devs) // 4]):
                w = ml.Variable(rng.standard_normal((width, width)).astype(np.float32) * 0.02)
                ws.append(w)
                h = ml.tanh(ml.matmul(h, w))
        loss = ml.reduce_mean(ml.square(h))
        grads = ml.gradients(loss, ws)
        train = ml.group(*[w.assign_sub(0.01 * gw) for w, gw in zip(ws, grads)])
    sess = ml.Session(graph=g)
    with g.as_default():
        init = ml.global_variables_initializer()
    sess.run(init)
    step = sess.make_callable(train, [x])
    xv = rng.standard_normal((batch, width)).astype(np.float32)
    step(xv)
    return median_time(lambda: (step(xv), jax.block_until_ready(list(sess._store.values()))),
                       repeats=5, number=5)


def transfer(nbytes):
    n = nbytes // 4
    g = ml.Graph()
    with g.as_default():
        with ml.device("/cpu:1"):
            v = ml.Variable(np.ones(n, np.float32))
            r = v.value()
        with ml.device("/cpu:2"):
            y = ml.identity(r)
        with ml.device("/cpu:1"):
            y_same = ml.identity(v.value())
        init = ml.global_variables_initializer()
    sess = ml.Session(graph=g)
    sess.run(init)
    cut = sess.make_device_callable([y], [])
    same = sess.make_device_callable([y_same], [])
    cut(), same()
    t_cut = median_time(lambda: jax.block_until_ready(cut()))
    t_same = median_time(lambda: jax.block_until_ready(same()))
    arr = jax.device_put(np.ones(n, np.float32), jax.devices()[1])
    t_put = median_time(lambda: jax.block_until_ready(jax.device_put(arr, jax.devices()[2])))
    return t_cut - t_same, t_put


def placement_time(n_ops=10_000):
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [8])
        h = x
        for i in range(n_ops // 3):  # 3 ops per step: Const, Mul, Tanh
            with ml.device(f"/cpu:{(i // 500) % 4}"):
                h = ml.tanh(h * 1.0001)
    ops = prune([h], [], [x])
    t0 = time.perf_counter()
    placed = place(ops)
    t1 = time.perf_counter()
    plan = SegmentedPlan(ops, [x], [h], placed.get, None)
    t2 = time.perf_counter()
    return len(ops), t1 - t0, t2 - t1, plan.n_clusters


def main():
    print(f"devices: {jax.devices()}")
    t1 = model_parallel(["/cpu:0"])
    t2 = model_parallel(["/cpu:0", "/cpu:1"])
    print("\n1. model-parallel MLP (4 x 1024x1024 layers, batch 256), step time")
    print(f"   one device      {t1 * 1e3:8.2f} ms")
    print(f"   two devices     {t2 * 1e3:8.2f} ms   ratio {t2 / t1:.2f}x")
    print("\n2. cut-edge transfer overhead vs bare jax.device_put")
    for label, nb in [("1 KB", 1 << 10), ("1 MB", 1 << 20), ("100 MB", 100 << 20)]:
        extra, put = transfer(nb)
        print(f"   {label:7s} send/recv {extra * 1e6:10.1f} us   device_put {put * 1e6:10.1f} us")
    n, tp, tpart, nc = placement_time()
    print(f"\n3. {n}-op graph: placement {tp * 1e3:.1f} ms, partitioning {tpart * 1e3:.1f} ms "
          f"({nc} clusters); {n / (tp + tpart):,.0f} ops/s")


if __name__ == "__main__":
    main()
