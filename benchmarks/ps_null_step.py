"""Null-step microbenchmark of `ParameterServerStrategy` (Abadi et al., OSDI 2016,
section 6.2, Figure 6): each step a worker pulls the model's variables (or the rows it
looks up) from the parameter servers, does a trivial computation (the gradient of
``sum(w * w)``) and pushes an SGD update, so the step time is the system's own cost.

    python benchmarks/ps_null_step.py [--quick] [--models scalar,dense,sparse,sparse-scatter]
                                      [--workers 1,2,4] [--window 1.5] [--repeats 3]
                                      [--in-flight N] [--table-rows 1000000]

Models (2 parameter servers in every case):

- ``scalar``: one float32 scalar variable.
- ``dense``: two float32 vectors of 12.5M elements (100 MB), one per parameter server.
- ``sparse``: an embedding table of 1M x 64 float32 rows (256 MB; ``--table-rows``
  sets the rows, e.g. 10M for 2.56 GB, to show the step independent of it), split by rows into
  two variables, one per parameter server ("mod" ids); each step looks up 32 random
  rows through `ml.nn.embedding_lookup`, its gradient travelling as IndexedSlices, and
  applies `SGD.minimize`.
- ``sparse-scatter``: the same lookup, with the update written by hand as
  `Variable.scatter_add` of the IndexedSlices (no optimizer: no learning-rate or
  step-counter variables to read or advance). The hand-written contender is the same
  as for ``sparse``.

Contenders, in one Ray instance (started once, loopback, as the strategy's own):

- the floor: the round trip of an empty Ray actor call;
- mylib: a `ParameterServerStrategy(num_ps=2, num_workers=n)` and its
  `ClusterCoordinator` (asynchronous mode; the coordinator keeps a fixed number of
  closures in flight per worker, `coordinator._IN_FLIGHT`, 1 or 2 depending on the
  version);
- hand-written: numpy arrays in 2 parameter-server actors (single-threaded, Ray's
  default) with pull/push (gather/scatter) methods, n worker actors that pull, compute
  and push (threaded when more than one step is in flight), and a driver that keeps as
  many steps in flight per worker as the coordinator does (``--in-flight``).

Timing: after a warm-up (compilation, graph shipping), the two contenders run `repeats`
windows of about `window` seconds each, interleaved (mylib, hand-written, mylib, ...) so
that both see the machine's drift alike. Per window, aggregate steps/s = steps / wall time and
step time = wall time x workers / steps (one worker's time per step while all are busy;
with one step in flight, the step's latency); the table shows the medians over
windows, and the ratio of the median and of the mean steps/s. On a machine with fewer cores than tasks the workers share the cores, so more
workers show coordination overhead rather than speed-up. TensorFlow is not installed in
this environment, so the paper's own system is not run; the hand-written Ray parameter
server stands in as the baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

ALL_MODELS = ("scalar", "dense", "sparse", "sparse-scatter")
DENSE_N = 12_500_000  # float32 elements per parameter server: 2 x 50 MB
TABLE_ROWS, TABLE_DIM = 1_000_000, 64  # 256 MB of float32, 2 shards of 500k rows
LOOKUPS = 32
LR = 0.01
NUM_PS = 2


# ---------------------------------------------------------------- the hand-written PS
class HandPS:
    """A parameter server: named float32 numpy arrays; pull/push whole arrays,
    gather/scatter rows; plain SGD."""

    def __init__(self, shapes):
        self.vars = {name: np.zeros(shape, np.float32) for name, shape in shapes.items()}

    def pull(self, names):
        return [self.vars[n] for n in names]

    def push(self, names, grads):
        for n, g in zip(names, grads):
            v = self.vars[n]
            v -= np.float32(LR) * g
        return True

    def gather(self, name, rows):
        return self.vars[name][rows]

    def scatter(self, name, rows, grad):
        np.subtract.at(self.vars[name], rows, np.float32(LR) * grad)
        return True


class HandWorker:
    """A worker: one null step of a model against the HandPS actors."""

    def __init__(self, ps, layout):
        self.ps = ps
        self.layout = layout  # model -> [(ps index, variable name)]

    def step(self, model, ids=None):
        import ray

        parts = self.layout[model]
        if ids is None:
            by_ps = {}
            for k, name in parts:
                by_ps.setdefault(k, []).append(name)
            pulled = ray.get([self.ps[k].pull.remote(names) for k, names in by_ps.items()])
            pushes = [self.ps[k].push.remote(names, [2.0 * v for v in vals])
                      for (k, names), vals in zip(by_ps.items(), pulled)]
            ray.get(pushes)
            return True
        # "mod" partitioning: id i is row i // n of shard i % n.
        n = len(parts)
        sel = [(k, name, ids[ids % n == s] // n) for s, (k, name) in enumerate(parts)]
        rows = ray.get([self.ps[k].gather.remote(name, r) for k, name, r in sel])
        ray.get([self.ps[k].scatter.remote(name, r, 2.0 * x)
                 for (k, name, r), x in zip(sel, rows)])
        return True


class Echo:
    def noop(self):
        return None


# ---------------------------------------------------------------- timing
def _window(run_steps, k, workers):
    """One timing window of `k` steps: (aggregate steps/s, one worker's step time s)."""
    t0 = time.perf_counter()
    run_steps(k)
    wall = time.perf_counter() - t0
    return k / wall, wall * workers / k


def _steps_per_window(per_step_guess, workers, window):
    return max(workers * 2, int(round(window / max(per_step_guess, 1e-4) * workers)))


def _guess(run_steps, workers):
    """Warm-up (compiles, ships the graph) and a rough per-step time estimate."""
    run_steps(workers)
    n = workers * 2
    t0 = time.perf_counter()
    run_steps(n)
    return (time.perf_counter() - t0) * workers / n


def floor_rtt(ray, repeats=300):
    a = ray.remote(num_cpus=0)(Echo).remote()
    ray.get(a.noop.remote())
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        ray.get(a.noop.remote())
        ts.append(time.perf_counter() - t0)
    ray.kill(a)
    return statistics.median(ts)


def _remote_rounds(coord):
    """Phases of the most recently traced step that call a parameter server (each is
    one sequential round of Ray calls from the worker)."""
    spec = list(coord._traced.values())[-1].spec
    return sum(1 for ph in spec["phases"] if any(s["task"] != "local" for s in ph))


def _ids(rng):
    return rng.integers(0, TABLE_ROWS, LOOKUPS).astype(np.int64)


# ---------------------------------------------------------------- mylib
def _var_shapes(models):
    """{model: [(ps task, name, shape)]} of the models' variables."""
    out = {}
    if "scalar" in models:
        out["scalar"] = [(0, "scalar_w", ())]
    if "dense" in models:
        out["dense"] = [(k, f"dense_w{k}", (DENSE_N,)) for k in range(NUM_PS)]
    if "sparse" in models or "sparse-scatter" in models:
        rows = TABLE_ROWS // NUM_PS
        out["sparse"] = [(k, f"table_{k}", (rows, TABLE_DIM)) for k in range(NUM_PS)]
    return out


def mylib_setup(models, workers):
    """A strategy with `workers` workers, the models' variables and one step function
    per model; returns (strategy, coordinator, {model: run_steps})."""
    import mylib as ml
    from mylib.distribute.coordinator import ClusterCoordinator
    from mylib.distribute.parameter_server import ps_device

    s = ml.distribute.ParameterServerStrategy(num_ps=NUM_PS, num_workers=workers,
                                              address="auto")
    g = ml.Graph()
    vs = {}
    with g.as_default(), s.scope():
        for model, parts in _var_shapes(models).items():
            vs[model] = []
            for k, name, shape in parts:
                with g.device(ps_device(k)):
                    # An initializer op, not a numpy constant: the graph (shipped to
                    # every task) stays small.
                    vs[model].append(ml.Variable(ml.zeros(list(shape)), name=name))
        opt = ml.optimizers.SGD(LR)
        opt.build([v for parts in vs.values() for v in parts])
        init = ml.global_variables_initializer()
    ml.layers.backend.get_session(g).run(init)
    coord = ClusterCoordinator(s)

    def dense_step(model):
        def step():
            loss = ml.add_n([ml.reduce_sum(ml.square(v)) for v in vs[model]])
            return opt.minimize(loss, var_list=vs[model])
        return step

    def sparse_sgd(ids):
        rows = ml.nn.embedding_lookup(vs["sparse"], ids)
        return opt.minimize(ml.reduce_sum(ml.square(rows)), var_list=vs["sparse"])

    def sparse_scatter(ids):
        rows = ml.nn.embedding_lookup(vs["sparse"], ids)
        grads = ml.gradients(ml.reduce_sum(ml.square(rows)), vs["sparse"])
        return ml.group(*[v.scatter_add(ml.IndexedSlices(-LR * gr.values, gr.indices,
                                                         gr.dense_shape))
                          for v, gr in zip(vs["sparse"], grads)])

    rng = np.random.default_rng(0)
    runners = {}
    for model in models:
        if model in ("scalar", "dense"):
            fn = dense_step(model)

            def run(k, fn=fn):
                for _ in range(k):
                    coord.schedule(fn)
                coord.join()
        else:
            fn = sparse_sgd if model == "sparse" else sparse_scatter

            def run(k, fn=fn):
                for _ in range(k):
                    coord.schedule(fn, args=(_ids(rng),))
                coord.join()
        runners[model] = run
    return s, coord, runners


# ---------------------------------------------------------------- hand-written
def hand_setup(ray, models, max_workers, in_flight):
    shapes = [{} for _ in range(NUM_PS)]
    layout = {}
    for model, parts in _var_shapes(models).items():
        layout[model] = [(k, name) for k, name, _ in parts]
        for k, name, shape in parts:
            shapes[k][name] = shape
    layout["sparse-scatter"] = layout.get("sparse")
    ps = [ray.remote(num_cpus=0)(HandPS).remote(shapes[k]) for k in range(NUM_PS)]
    # Threaded when several steps are in flight, so that they can overlap.
    ws = [ray.remote(num_cpus=0, max_concurrency=max(in_flight, 1))(HandWorker).remote(
        ps, layout) for _ in range(max_workers)]
    ray.get([p.pull.remote([]) for p in ps])
    rng = np.random.default_rng(0)

    def runner(model, n):
        sparse = model.startswith("sparse")

        def run(k):
            def submit(w):
                return w.step.remote(model, _ids(rng) if sparse else None)

            inflight = {}
            issued = 0
            for _ in range(in_flight):
                for w in ws[:n]:
                    if issued < k:
                        inflight[submit(w)] = w
                        issued += 1
            while inflight:
                ready, _ = ray.wait(list(inflight), num_returns=1)
                w = inflight.pop(ready[0])
                ray.get(ready[0])
                if issued < k:
                    inflight[submit(w)] = w
                    issued += 1
        return run

    return ps + ws, runner


# ---------------------------------------------------------------- main
def main():
    global TABLE_ROWS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="short windows, 2 repeats (about a minute and a half)")
    p.add_argument("--models", default=",".join(ALL_MODELS),
                   help=f"comma-separated subset of {','.join(ALL_MODELS)}")
    p.add_argument("--workers", default="1,2,4", help="comma-separated worker counts")
    p.add_argument("--window", type=float, default=None, help="seconds per timing window")
    p.add_argument("--repeats", type=int, default=None, help="timing windows per cell")
    p.add_argument("--in-flight", type=int, default=None,
                   help="steps the hand-written driver keeps in flight per worker "
                        "(default: as many as mylib's coordinator)")
    p.add_argument("--table-rows", type=int, default=TABLE_ROWS,
                   help="rows of the sparse models' table (a multiple of 2)")
    args = p.parse_args()
    TABLE_ROWS = args.table_rows
    models = [m for m in args.models.split(",") if m]
    for m in models:
        if m not in ALL_MODELS:
            p.error(f"unknown model {m!r}; choose from {', '.join(ALL_MODELS)}")
    worker_counts = [int(w) for w in args.workers.split(",") if w]
    window = args.window or (0.5 if args.quick else 1.5)
    repeats = args.repeats or (2 if args.quick else 3)

    from mylib.distribute import coordinator, ps_runtime

    # Closures the coordinator keeps in flight per worker (asynchronous mode); the
    # hand-written driver keeps as many.
    in_flight = args.in_flight or getattr(coordinator, "_IN_FLIGHT", 1)
    local = ps_runtime.LocalRay(num_cpus=os.cpu_count() or 1)
    import ray

    try:
        import tensorflow  # noqa: F401
        tf_note = "installed but not run by this benchmark"
    except ImportError:
        tf_note = "not installed: the paper's system is not measured here"
    print(f"TensorFlow: {tf_note}. Machine: {os.cpu_count()} CPU cores; "
          f"{NUM_PS} parameter servers; sparse table {TABLE_ROWS:,} x {TABLE_DIM}; windows of ~{window} s x {repeats}; "
          f"{in_flight} step(s) in flight per worker.")
    try:
        rtt = floor_rtt(ray)
        print(f"floor: empty Ray actor call round trip {rtt * 1e3:.3f} ms "
              f"({1 / rtt:,.0f} calls/s)")
        results = {}
        hand_actors, hand_runner = hand_setup(ray, models, max(worker_counts), in_flight)
        for n in worker_counts:
            t0 = time.perf_counter()
            s, coord, runners = mylib_setup(models, n)
            print(f"\n{n} worker(s): strategy started and initialized in "
                  f"{time.perf_counter() - t0:.1f} s")
            try:
                for model in models:
                    runs = {"mylib": runners[model], "hand": hand_runner(model, n)}
                    ks, warm = {}, {}
                    for system, run in runs.items():
                        t0 = time.perf_counter()
                        ks[system] = _steps_per_window(_guess(run, n), n, window)
                        warm[system] = time.perf_counter() - t0
                    # Windows interleaved (mylib, hand, mylib, ...): the machine's
                    # speed drifts, and both systems see the same drift.
                    per = {system: [] for system in runs}
                    for _ in range(repeats):
                        for system, run in runs.items():
                            per[system].append(_window(run, ks[system], n))
                    for system in runs:
                        rates = [r for r, _ in per[system]]
                        step = statistics.median(t for _, t in per[system])
                        results[(model, n, system)] = (statistics.median(rates), step,
                                                       statistics.mean(rates))
                        rounds = (f", {_remote_rounds(coord)} PS rounds/step"
                                  if system == "mylib" else ", 2 PS rounds/step")  # pull, push
                        print(f"  {model:15s} {system:6s} {step * 1e3:9.2f} ms/step "
                              f"{statistics.median(rates):9.1f} steps/s  ({ks[system]} "
                              f"steps/window, warm-up {warm[system]:.1f} s{rounds})",
                              flush=True)
            finally:
                s.close()
        for a in hand_actors:
            ray.kill(a)
    finally:
        local.stop()

    print(f"\nNull step, {NUM_PS} PS: median step time (ms) and median aggregate steps/s "
          f"over interleaved windows; ratio = mylib steps/s / hand-written steps/s, of the "
          f"medians and of the means; floor {rtt * 1e3:.2f} ms")
    print(f"  {'model':15s} {'workers':>7s} {'mylib ms':>9s} {'steps/s':>8s} "
          f"{'hand ms':>9s} {'steps/s':>8s} {'median':>7s} {'mean':>6s}")
    for model in models:
        for n in worker_counts:
            mr, ms, mm = results[(model, n, "mylib")]
            hr, hs, hm = results[(model, n, "hand")]
            print(f"  {model:15s} {n:7d} {ms * 1e3:9.2f} {mr:8.1f} {hs * 1e3:9.2f} "
                  f"{hr:8.1f} {mr / hr:7.2f} {mm / hm:6.2f}")


if __name__ == "__main__":
    main()
