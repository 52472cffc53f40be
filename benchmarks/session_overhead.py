"""Per-call overhead of `Session.run` and `make_callable` on a tiny cached graph
(``y = x * 2 + 1`` on a [4] float32 feed) against calling the same `jax.jit` function
directly (and with `np.asarray` of its result, which is what `run` returns).

Goals (issue 2): Session.run / make_callable under 2x the bare jit call, and at least
20,000 steps/s through make_callable.

Run: python benchmarks/session_overhead.py [--calls 20000] [--repeats 7]
"""

import argparse
import statistics
import sys
import time

import jax
import numpy as np

import mylib as ml


def per_call_us(fn, calls, repeats):
    for _ in range(min(calls, 2000)):  # warm up (compile, caches)
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--repeats", type=int, default=7)
    a = p.parse_args(argv)

    xv = np.arange(4, dtype=np.float32)
    jf = jax.jit(lambda x: x * 2 + 1)

    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [4], name="x")
        y = x * 2.0 + 1.0
    sess = ml.Session(graph=g)
    feed = {x: xv}
    call = sess.make_callable(y, [x])
    np.testing.assert_allclose(sess.run(y, feed), jf(xv))
    np.testing.assert_allclose(call(xv), jf(xv))

    rows = [
        ("jax.jit(f)(x)", lambda: jf(xv)),
        ("np.asarray(jax.jit(f)(x))", lambda: np.asarray(jf(xv))),
        ("Session.run(y, {x: v})", lambda: sess.run(y, feed)),
        ("make_callable(y, [x])(v)", lambda: call(xv)),
    ]
    res = {name: per_call_us(fn, a.calls, a.repeats) for name, fn in rows}
    base = res["jax.jit(f)(x)"]
    base_np = res["np.asarray(jax.jit(f)(x))"]
    print(f"command: python {' '.join(sys.argv)}")
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, "
          f"median of {a.repeats} repeats x {a.calls} calls")
    print(f"{'call':32s} {'us/call':>9s} {'vs jit':>8s} {'vs jit+np':>10s} {'calls/s':>10s}")
    for name, _ in rows:
        us = res[name]
        print(f"{name:32s} {us:9.2f} {us / base:7.2f}x {us / base_np:9.2f}x {1e6 / us:10.0f}")
    sess.close()
    return res


if __name__ == "__main__":
    main()
