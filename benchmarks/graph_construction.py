"""Graph construction rate (ops/s) for a 5,000-op graph of mixed basic ops
(matmul, add, multiply, reduce_sum, reshape, cast, exp, tanh, constants, placeholders).

Goal (issue 2): at least 5,000 ops/s.

Run: python benchmarks/graph_construction.py [--ops 5000] [--repeats 5] [--profile]
"""

import argparse
import cProfile
import pstats
import statistics
import sys
import time

import mylib as ml


def build(n_ops):
    """Builds a graph of at least `n_ops` ops in repeating blocks; returns it."""
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, 16], name="x")
        w = ml.constant([[0.01] * 16] * 16, name="w")
        h = x
        i = 0
        while len(g._ops) < n_ops:
            with ml.name_scope(f"block{i}"):
                m = ml.matmul(h, w)                       # MatMul
                a = ml.add(m, 1.0)                        # Const + AddV2
                t = ml.tanh(a * 0.5)                      # Const + Mul + Tanh
                e = ml.exp(ml.cast(t, ml.float64))        # Cast + Exp
                s = ml.reduce_sum(e, axis=1, keepdims=True)  # Sum
                r = ml.reshape(ml.cast(s, ml.float32), [-1, 1])  # Cast + Reshape
                h = ml.multiply(t, r)                     # Mul
            i += 1
    return g


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ops", type=int, default=5000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--profile", action="store_true", help="print a cProfile of one build")
    a = p.parse_args(argv)

    build(200)  # warm shape-inference caches and imports
    rates, counts = [], []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        g = build(a.ops)
        dt = time.perf_counter() - t0
        counts.append(len(g.get_operations()))
        rates.append(counts[-1] / dt)
    med = statistics.median(rates)
    print(f"command: python {' '.join(sys.argv)}")
    print(f"{'graph ops':>10s} {'median ops/s':>13s} {'min ops/s':>10s} {'max ops/s':>10s} "
          f"{'goal':>7s}")
    print(f"{counts[0]:10d} {med:13.0f} {min(rates):10.0f} {max(rates):10.0f} {5000:7d}")
    if a.profile:
        pr = cProfile.Profile()
        pr.enable()
        build(a.ops)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(15)
    return med


if __name__ == "__main__":
    main()
