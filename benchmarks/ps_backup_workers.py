"""Backup workers against a straggler (Abadi et al., OSDI 2016, section 4.4 and
Figure 8, in miniature): synchronous training with `ParameterServerStrategy(...,
replicas_to_aggregate=m)` of a small MLP on n workers, with and without one
artificially slow worker (`simulate_slow_worker`), comparing m = n (every step waits
for every worker) with m = n - 1 (one backup worker: each step applies the mean of the
first n - 1 gradients and drops the late one).

    python benchmarks/ps_backup_workers.py [--quick] [--workers 4] [--delay 0.1]
                                           [--jitter 0.02] [--steps 40]

Scenarios: ``none`` (no slow worker), ``one slow`` (worker n-1 sleeps `delay` seconds
in every step) and ``jitter`` (every worker sleeps a random time per step,
exponentially distributed with mean `jitter` seconds, redrawn every millisecond: a
long-tailed spread of worker step times, closer to the paper's production stragglers).

Model: MLP 64-128-10 (ReLU, softmax cross-entropy), batch 64 of synthetic data per
worker step, plain SGD, variables on 2 parameter servers. Each closure is one worker's
step; in synchronous mode the coordinator gives one closure to each idle worker per
step (see `mylib.distribute.coordinator`).

Timing: a thread polls ``strategy.stats["applied_steps"]`` every millisecond and
records when each synchronous step is applied; the median step time is the median
interval between applied steps after a warm-up, applied steps/s their count over the
measured interval, and dropped gradients the stats counter over the same run. The
straggler sleeps `delay` seconds in every step it runs (always the same worker), so a
backup worker removes it entirely; the paper's stragglers were random, hence its
smaller gain (the ``jitter`` scenario shows a random tail instead). On a 2-core
machine the n workers share the cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

import numpy as np

IN, HIDDEN, OUT, BATCH, LR = 64, 128, 10, 64, 0.05


def _setup(n, m):
    import mylib as ml
    from mylib.distribute.coordinator import ClusterCoordinator

    s = ml.distribute.ParameterServerStrategy(num_ps=2, num_workers=n,
                                              replicas_to_aggregate=m, address="auto")
    g = ml.Graph()
    rng = np.random.default_rng(0)
    with g.as_default(), s.scope():
        w1 = ml.Variable((rng.standard_normal((IN, HIDDEN)) * 0.1).astype(np.float32),
                         name="w1")
        b1 = ml.Variable(np.zeros(HIDDEN, np.float32), name="b1")
        w2 = ml.Variable((rng.standard_normal((HIDDEN, OUT)) * 0.1).astype(np.float32),
                         name="w2")
        b2 = ml.Variable(np.zeros(OUT, np.float32), name="b2")
        params = [w1, b1, w2, b2]
        opt = ml.optimizers.SGD(LR)
        opt.build(params)
        init = ml.global_variables_initializer()
    ml.layers.backend.get_session(g).run(init)
    coord = ClusterCoordinator(s)

    def step(x, y):
        h = ml.nn.relu(ml.matmul(x, w1) + b1)
        logits = ml.matmul(h, w2) + b2
        loss = ml.reduce_mean(ml.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits))
        return loss, opt.minimize(loss, var_list=params)

    teacher = rng.standard_normal((IN, OUT)).astype(np.float32)

    def batch():
        x = rng.standard_normal((BATCH, IN)).astype(np.float32)
        return x, np.argmax(x @ teacher, axis=1).astype(np.int64)

    return s, coord, step, batch


def _jitter(s, n, mean, stop):
    rng = np.random.default_rng(1)
    while not stop.is_set():
        for i in range(n):
            s.simulate_slow_worker(i, float(rng.exponential(mean)))
        time.sleep(0.001)


def run_config(n, m, scenario, delay, jitter, steps, warmup):
    """One configuration; returns a dict of measurements."""
    t0 = time.perf_counter()
    s, coord, step, batch = _setup(n, m)
    stop = threading.Event()
    try:
        if scenario == "one slow":
            s.simulate_slow_worker(n - 1, delay)
        elif scenario == "jitter":
            threading.Thread(target=_jitter, args=(s, n, jitter, stop), daemon=True).start()
        for _ in range(n * 2):  # compile everywhere and ship the graph
            coord.schedule(step, args=batch())
        coord.join()
        setup_s = time.perf_counter() - t0
        stamps = []
        done = threading.Event()

        def poll():
            last = s.stats["applied_steps"]
            while not done.is_set():
                cur = s.stats["applied_steps"]
                if cur != last:
                    now = time.perf_counter()
                    stamps.extend([now] * (cur - last))
                    last = cur
                time.sleep(0.001)

        poller = threading.Thread(target=poll, daemon=True)
        dropped0 = s.stats["dropped_gradients"]
        applied0 = s.stats["applied_steps"]
        poller.start()
        # Enough closures for `steps` applied steps whatever m is (each step takes one
        # closure per idle worker).
        rvs = [coord.schedule(step, args=batch()) for _ in range((steps + warmup) * n)]
        coord.join()
        done.set()
        poller.join()
        losses = [float(rv.fetch()[0]) for rv in rvs[-n:]]
        applied = s.stats["applied_steps"] - applied0
        dropped = s.stats["dropped_gradients"] - dropped0
        t = stamps[warmup:]
        gaps = np.diff(t)
        return {"n": n, "m": m, "scenario": scenario, "median_ms": statistics.median(gaps) * 1e3,
                "steps_per_s": len(gaps) / (t[-1] - t[0]), "applied": applied,
                "dropped": dropped, "closures": len(rvs), "loss": float(np.mean(losses)),
                "setup_s": setup_s}
    finally:
        stop.set()
        s.close()


SCENARIOS = ("none", "one slow", "jitter")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer steps")
    p.add_argument("--workers", type=int, default=4, help="n, the number of workers")
    p.add_argument("--delay", type=float, default=0.1,
                   help="seconds the slow worker sleeps per step")
    p.add_argument("--jitter", type=float, default=0.02,
                   help="mean random per-step sleep (s) of every worker, jitter scenario")
    p.add_argument("--steps", type=int, default=None, help="measured steps per config")
    args = p.parse_args()
    n = args.workers
    if n < 2:
        p.error("--workers must be at least 2 (one of them is the backup)")
    steps = args.steps or (15 if args.quick else 40)
    warmup = 3

    from mylib.distribute import ps_runtime

    local = ps_runtime.LocalRay(num_cpus=os.cpu_count() or 1)
    rows = []
    try:
        print(f"Machine: {os.cpu_count()} CPU cores; n = {n} workers, 2 parameter "
              f"servers; one slow: worker {n - 1} sleeps {args.delay * 1e3:.0f} ms/step; "
              f"jitter: exponential sleeps, mean {args.jitter * 1e3:.0f} ms; {steps} "
              "measured steps per configuration.")
        for scenario in SCENARIOS:
            for m in (n, n - 1):
                r = run_config(n, m, scenario, args.delay, args.jitter, steps, warmup)
                rows.append(r)
                print(f"  {scenario:8s} m={m}: median step "
                      f"{r['median_ms']:7.2f} ms, {r['steps_per_s']:6.1f} applied steps/s, "
                      f"{r['dropped']} dropped of {r['closures']} gradients "
                      f"(setup {r['setup_s']:.1f} s, final loss {r['loss']:.3f})",
                      flush=True)
    finally:
        local.stop()

    print(f"\nSynchronous MLP step, n = {n} workers: median step time, applied steps/s, "
          "dropped gradients; speed-up = median step time with m = n / with m = n - 1")
    print(f"  {'scenario':10s} {'m':>3s} {'median ms':>10s} {'steps/s':>8s} "
          f"{'dropped':>8s} {'speed-up':>9s}")
    for scenario in SCENARIOS:
        full = next(r for r in rows if r["scenario"] == scenario and r["m"] == n)
        for r in (x for x in rows if x["scenario"] == scenario):
            sp = full["median_ms"] / r["median_ms"]
            print(f"  {scenario:10s} {r['m']:3d} {r['median_ms']:10.2f} "
                  f"{r['steps_per_s']:8.1f} {r['dropped']:4d}/{r['closures']:<3d} "
                  f"{sp:8.2f}x")


if __name__ == "__main__":
    main()
