"""Control-flow benchmarks (issue 3):

1. time per iteration of a `while_loop` with a small body (x = x * 0.999 + 1 on a [16]
   float32 vector) run through `Session.run`, against `jax.jit` of `lax.fori_loop` of the
   same body; also the masked-scan form that the loop's gradient differentiates
   (`maximum_iterations` steps, each a `lax.cond`), to show its cost;
2. graph construction rate (ops/s) for a 10,000-op graph (graph_construction.py's
   blocks, plus one while_loop/cond per block);
3. checkpoint throughput from benchmarks/checkpoint.py when it exists.

Run: python benchmarks/control_flow.py [--iters 1000 100000] [--repeats 5]
"""

import argparse
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import mylib as ml  # noqa: E402
from mylib.core.ops import control_flow_ops  # noqa: E402


def _median_time(fn, repeats):
    fn()  # compile / warm up
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def bench_while(n, repeats):
    x0 = np.ones(16, np.float32)
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [16])
        k = ml.placeholder(ml.int32, [])
        _, y = ml.while_loop(lambda i, v: i < k, lambda i, v: (i + 1, v * 0.999 + 1.0),
                             [ml.constant(0), x])
    sess = ml.Session(graph=g)
    t_ml = _median_time(lambda: sess.run(y, {x: x0, k: n}), repeats)

    @jax.jit
    def ref(v, k):
        return lax.fori_loop(0, k, lambda i, v: v * np.float32(0.999) + np.float32(1.0), v)

    t_jax = _median_time(lambda: np.asarray(ref(x0, n)), repeats)

    # The differentiable twin (what the gradient runs): a masked lax.scan of n steps.
    # (k is captured by the loop condition: the kernel's one external input.)
    attrs = y.op.attrs
    masked = jax.jit(lambda i0, v, kk: control_flow_ops._while_run(
        [i0, v], n, [kk], [], attrs, masked=True)[0])
    ins = [np.int32(0), x0, np.int32(n)]
    t_masked = _median_time(lambda: jax.block_until_ready(masked(*ins)), repeats)
    out_ml = sess.run(y, {x: x0, k: n})
    np.testing.assert_allclose(out_ml, np.asarray(ref(x0, n)), rtol=1e-5)
    sess.close()
    return t_ml, t_jax, t_masked


def build_graph(n_ops):
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, 16], name="x")
        w = ml.constant([[0.01] * 16] * 16, name="w")
        p = ml.placeholder(ml.bool_, [], name="p")
        h = x
        i = 0
        while len(g._ops) < n_ops:
            with ml.name_scope(f"block{i}"):
                m = ml.matmul(h, w)
                a = ml.add(m, 1.0)
                t = ml.tanh(a * 0.5)
                if i % 10 == 0:
                    t = ml.cond(p, lambda: t * 2.0, lambda: t)
                    _, t = ml.while_loop(lambda j, v: j < 3, lambda j, v: (j + 1, v * 0.5),
                                         [ml.constant(0), t])
                h = ml.multiply(t, ml.reduce_sum(t, axis=1, keepdims=True))
            i += 1
    return g


def bench_construction(n_ops, repeats):
    ts, n = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        g = build_graph(n_ops)
        ts.append(time.perf_counter() - t0)
        n = len(g.get_operations())
    return n, statistics.median(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, nargs="+", default=[1000, 100000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ops", type=int, default=10000)
    ap.add_argument("--no-checkpoint", action="store_true")
    args = ap.parse_args(argv)
    print(f"command: python benchmarks/control_flow.py {' '.join(argv or sys.argv[1:])}")
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, {os.cpu_count()} CPUs\n")
    print("| iterations | Session.run while_loop | jit(fori_loop) | ratio | "
          "masked scan (grad form) | per-iter ml / jax |")
    print("|-----------:|----------:|----------:|------:|----------:|------------:|")
    for n in args.iters:
        t_ml, t_jax, t_masked = bench_while(n, args.repeats)
        print(f"| {n:,} | {t_ml * 1e3:.3f} ms | {t_jax * 1e3:.3f} ms | {t_ml / t_jax:.2f}x | "
              f"{t_masked * 1e3:.3f} ms | {t_ml / n * 1e9:.1f} / {t_jax / n * 1e9:.1f} ns |")
    n_ops, t = bench_construction(args.ops, max(1, args.repeats // 2))
    print(f"\ngraph construction: {n_ops:,} ops (outer graph, with a cond and a while_loop "
          f"every 10 blocks) in {t * 1e3:.0f} ms = {n_ops / t:,.0f} ops/s")
    if not args.no_checkpoint:
        try:
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import checkpoint  # noqa: PLC0415 - another engineer's benchmark, optional
        except ImportError:
            print("\n(benchmarks/checkpoint.py not found: checkpoint throughput skipped)")
        else:
            print("\ncheckpoint throughput (benchmarks/checkpoint.py):")
            checkpoint.main([])


if __name__ == "__main__":
    main()
