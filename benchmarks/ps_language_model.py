"""Training throughput (words/s) of the word-level LSTM language model of
``examples/ps_language_model.py`` on `ParameterServerStrategy`: full against sampled
softmax, and 1 against 2 parameter servers (the shape of the TensorFlow paper's
Figure 9, Abadi et al., OSDI 2016, section 6.4).

    python benchmarks/ps_language_model.py [--num-workers 2] [--batch-size 64]
                                           [--windows 5] [--window-steps 20]
                                           [--num-classes N] [--quick]

The model, data and partitioner are the example's (imported from it): embedding and
softmax weights of [classes, 128] split by rows over the parameter servers, LSTM(128)
over 20 steps, Adam, asynchronous workers scheduled through `ClusterCoordinator`. For
each configuration (softmax full or sampled with 64 samples; 1 or 2 parameter servers)
a fresh cluster is started, a warm-up of two steps per worker compiles the step on
every task, then `--windows` timed windows of `--window-steps` steps each run back to
back (one step in flight per worker, `join` at the end of each window). words/s of a
window = target tokens of its steps / its wall time; the table shows the median over
windows, and the lowest and highest.

The corpus has about 3,500 distinct tokens, far fewer than the paper's 800,000-word
vocabulary, so the full softmax is cheap here. ``--num-classes N`` widens the output
layer (and the embedding) to N classes, the extra ones never occurring in the data, to
show how the gap grows with the vocabulary; throughput does not depend on the data.
The workers and parameter servers are processes sharing this machine's cores, so more
parameter servers help only as far as idle cores allow: the numbers give the shape,
not the paper's scale.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
import ps_language_model as lm  # noqa: E402


def measure(softmax, num_ps, num_workers, num_classes, train_ids, batch_size, windows,
            window_steps, num_sampled):
    """Per-window words/s of one configuration, on a cluster of its own."""
    strategy = lm.make_strategy(num_ps, num_workers)
    try:
        model, _, coord = lm.build(strategy, num_classes, softmax=softmax,
                                   num_sampled=num_sampled)
        rng = np.random.default_rng(0)

        def run(n):
            for _ in range(n):
                coord.schedule(model.train_step, args=lm.random_windows(
                    train_ids, batch_size, model.num_steps, rng))
            coord.join()

        run(2 * num_workers)  # compiles the step on every worker and parameter server
        rates = []
        for _ in range(windows):
            t0 = time.perf_counter()
            run(window_steps)
            rates.append(window_steps * batch_size * model.num_steps /
                         (time.perf_counter() - t0))
        return rates
    finally:
        strategy.close()


def main(argv=None):
    p = argparse.ArgumentParser(description="words/s of the PS language model: full vs "
                                "sampled softmax, 1 vs 2 parameter servers.")
    p.add_argument("--num-workers", type=int, default=2, help="workers (default 2)")
    p.add_argument("--batch-size", type=int, default=64, help="windows per step (64)")
    p.add_argument("--windows", type=int, default=5, help="timed windows (default 5)")
    p.add_argument("--window-steps", type=int, default=20,
                   help="steps per timed window (default 20)")
    p.add_argument("--num-sampled", type=int, default=64, help="sampled classes (64)")
    p.add_argument("--num-classes", type=int, default=None,
                   help="output classes (default: the corpus vocabulary, ~3,500)")
    p.add_argument("--quick", action="store_true", help="3 windows of 10 steps")
    args = p.parse_args(argv)
    if args.quick:
        args.windows, args.window_steps = 3, 10

    train_ids, _, vocab = lm.load_corpus(10000)
    num_classes = max(args.num_classes or 0, len(vocab))
    configs = [(sm, ps) for ps in (1, 2) for sm in ("full", "sampled")]
    results = {}
    for sm, ps in configs:
        rates = measure(sm, ps, args.num_workers, num_classes, train_ids, args.batch_size,
                        args.windows, args.window_steps, args.num_sampled)
        results[sm, ps] = rates
        print(f"  {sm:7s} softmax, {ps} ps: median {statistics.median(rates):9,.0f} "
              f"words/s", flush=True)

    print(f"\nPS language model: {num_classes:,} classes, LSTM 128, batch "
          f"{args.batch_size} x 20 steps, {args.num_workers} async workers, "
          f"{args.windows} windows x {args.window_steps} steps")
    print(f"  {'softmax':8s} {'ps':>3s} {'words/s':>10s} {'min':>9s} {'max':>9s}")
    med = {}
    for sm, ps in configs:
        r = results[sm, ps]
        med[sm, ps] = statistics.median(r)
        print(f"  {sm:8s} {ps:3d} {med[sm, ps]:10,.0f} {min(r):9,.0f} {max(r):9,.0f}")
    print("  ratios:")
    for ps in (1, 2):
        print(f"    sampled / full, {ps} ps: {med['sampled', ps] / med['full', ps]:.2f}x")
    for sm in ("full", "sampled"):
        print(f"    2 ps / 1 ps, {sm} softmax: {med[sm, 2] / med[sm, 1]:.2f}x")
    return med


if __name__ == "__main__":
    main()
