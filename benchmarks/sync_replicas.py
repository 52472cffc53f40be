"""Synchronous replicas on forced host CPU devices (note: this machine has 2 cores, so
more replicas share the same cores; the numbers show overhead, not speed-up).

    python benchmarks/sync_replicas.py
    python benchmarks/sync_replicas.py --processes 2

1. samples/s of `fit` for a compute-heavy MLP and a small CNN on 1, 2 and 4 replicas
   (`MirroredStrategy`), in one process.
2. all-reduce time per step for 1, 10 and 100 MB of gradients through a mylib step
   under the strategy, against a bare `jax.lax.psum` of the same size (`shard_map`).
3. the strategy's training step against a hand-written `shard_map` training step of
   the same MLP (psum of gradients, optax SGD).

With ``--processes N`` (N >= 2) it runs instead: the same MLP and CNN on 1 process with
1 device, then on N local processes with 1 device each (`MultiWorkerMirroredStrategy`
over `jax.distributed`, started by `mylib.distribute.launch`, each running
`_sync_replicas_worker.py`), at the same global batch. The processes share the same
cores, so the ratio shows the cost of the cross-process all-reduce (gloo on loopback),
not a speed-up.
"""

import argparse
import io
import pathlib
import statistics
import time

from _sync_replicas_worker import fit_samples_per_s, make_data, make_model

from mylib.devices import set_cpu_device_count

set_cpu_device_count(4)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import mylib as ml  # noqa: E402
from mylib.distribute.launch import launch  # noqa: E402

try:
    from jax import shard_map  # noqa: E402
except ImportError:  # older JAX
    from jax.experimental.shard_map import shard_map  # noqa: E402


def timeit(fn, repeats=5, number=10):
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        ts.append((time.perf_counter() - t0) / number)
    return statistics.median(ts)


def fit_rate(kind, n_rep, epochs=3, shuffle=True):
    x, y = make_data(kind)
    strategy = ml.distribute.MirroredStrategy(devices=[f"/cpu:{i}" for i in range(n_rep)])
    with ml.Graph().as_default(), strategy.scope():
        m = make_model(ml, kind)
    return fit_samples_per_s(ml, m, x, y, epochs, shuffle)


def allreduce(nbytes, n_rep=4):
    n = nbytes // 4 // n_rep * n_rep
    devs = jax.devices()[:n_rep]
    mesh = Mesh(np.array(devs), ("batch",))
    xs = np.ones((n_rep, n // n_rep), np.float32)
    # mylib: a replicated variable updated with the sum over the batch-sharded feed.
    g = ml.Graph()
    strategy = ml.distribute.MirroredStrategy(devices=[f"/cpu:{i}" for i in range(n_rep)])
    with g.as_default():
        with strategy.scope():
            v = ml.Variable(np.zeros(n // n_rep, np.float32))
        x = ml.placeholder(ml.float32, [None, n // n_rep])
        step = v.assign_sub(0.001 * ml.reduce_sum(x, axis=0), read_value=False)
        init = ml.global_variables_initializer()
    sess = ml.Session(graph=g)
    sess.run(init)
    fn = sess.make_device_callable([step], [x])
    t_ml = timeit(lambda: jax.block_until_ready(
        (fn(xs), sess._store[v._key])), number=3)
    # bare psum of the same per-device block
    xs_dev = jax.device_put(xs, NamedSharding(mesh, P("batch")))
    f = jax.jit(shard_map(lambda a: jax.lax.psum(a, "batch"), mesh=mesh,
                          in_specs=P("batch"), out_specs=P()))
    t_psum = timeit(lambda: jax.block_until_ready(f(xs_dev)), number=3)
    return t_ml, t_psum


def step_overhead(n_rep=4, width=1024, batch=256):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, width)).astype(np.float32)
    y = rng.integers(0, 10, batch)
    g = ml.Graph()
    strategy = ml.distribute.MirroredStrategy(devices=[f"/cpu:{i}" for i in range(n_rep)])
    with g.as_default(), strategy.scope():
        m = ml.Sequential([ml.layers.Input((width,)),
                           ml.layers.Dense(width, activation="relu"), ml.layers.Dense(10)])
        m.compile(optimizer=ml.optimizers.SGD(0.01),
                  loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True))
    m.fit(x, y, batch_size=batch, epochs=1, verbose=0)
    fn = m._step_fn("train", [y], False)
    t_ml = timeit(lambda: jax.block_until_ready(fn(x, y)))

    mesh = Mesh(np.array(jax.devices()[:n_rep]), ("batch",))
    params = [jnp.asarray(rng.standard_normal((width, width)) * 0.02, jnp.float32),
              jnp.zeros(width, jnp.float32),
              jnp.asarray(rng.standard_normal((width, 10)) * 0.02, jnp.float32),
              jnp.zeros(10, jnp.float32)]
    rep, bs = NamedSharding(mesh, P()), NamedSharding(mesh, P("batch"))
    params = [jax.device_put(p, rep) for p in params]
    tx = optax.sgd(0.01)
    state = tx.init(params)

    def local_loss(p, xb, yb):
        h = jax.nn.relu(xb @ p[0] + p[1]) @ p[2] + p[3]
        return optax.softmax_cross_entropy_with_integer_labels(h, yb).sum() / batch

    def local_step(p, s, xb, yb):
        grads = jax.lax.psum(jax.grad(local_loss)(p, xb, yb), "batch")
        u, s = tx.update(grads, s, p)
        return optax.apply_updates(p, u), s

    step = jax.jit(shard_map(local_step, mesh=mesh, in_specs=(P(), P(), P("batch"),
                                                                P("batch")),
                             out_specs=(P(), P())), donate_argnums=(0, 1))
    xd, yd = jax.device_put(x, bs), jax.device_put(y, bs)
    box = [params, state]

    def run():
        box[0], box[1] = step(box[0], box[1], xd, yd)
        jax.block_until_ready(box[0])

    t_hand = timeit(run)
    return t_ml, t_hand


def processes_rates(kinds, n_proc, epochs):
    """{kind: (replicas, samples/s)} printed by the chief of `n_proc` local processes."""
    worker = pathlib.Path(__file__).resolve().parent / "_sync_replicas_worker.py"
    log = io.StringIO()
    # The children inherit this process's XLA_FLAGS (4 devices); the worker sets 1.
    rc = launch([str(worker), *kinds, "--epochs", str(epochs)], num_workers=n_proc,
                timeout=600, out=log)
    if rc != 0:
        raise RuntimeError(f"the {n_proc} worker processes failed:\n{log.getvalue()}")
    rates = {}
    for line in log.getvalue().splitlines():
        if line.startswith("[worker 0] sync_replicas "):
            kind, replicas, sps = line.split()[3:]
            rates[kind] = (int(replicas), float(sps))
    return rates


def compare_processes(n_proc, epochs=8):
    kinds = ("mlp", "cnn")
    # Unshuffled in both, as the workers must feed the same batches in the same order.
    one = {kind: fit_rate(kind, 1, epochs, shuffle=False) for kind in kinds}
    many = processes_rates(kinds, n_proc, epochs)
    print(f"\n4. fit samples/s, 1 process x 1 device against {n_proc} processes x 1 device"
          f"\n   (MultiWorkerMirroredStrategy over jax.distributed, gloo on 127.0.0.1),"
          f"\n   global batch 256, median of {epochs - 1} epochs after a warm-up epoch."
          f"\n   The {n_proc} processes share this machine's cores: the ratio is the cost"
          f"\n   of the cross-process all-reduce, not a speed-up.")
    for kind in kinds:
        replicas, sps = many[kind]
        print(f"   {kind:4s} 1 process: {one[kind]:9.0f}   {n_proc} processes "
              f"({replicas} replicas): {sps:9.0f}   ratio {sps / one[kind]:5.2f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--processes", type=int, default=1,
                   help="N >= 2: compare 1 process with N local processes instead")
    args = p.parse_args(argv)
    print(f"devices: {jax.devices()}")
    if args.processes > 1:
        compare_processes(args.processes)
        return
    print("\n1. fit samples/s by number of replicas (global batch 256)")
    for kind in ("mlp", "cnn"):
        rates = [fit_rate(kind, n) for n in (1, 2, 4)]
        print(f"   {kind:4s} " + "  ".join(f"{n} rep: {r:9.0f}" for n, r in zip((1, 2, 4), rates)))
    print("\n2. all-reduce per step (4 replicas)")
    for label, nb in [("1 MB", 1 << 20), ("10 MB", 10 << 20), ("100 MB", 100 << 20)]:
        t_ml, t_psum = allreduce(nb)
        print(f"   {label:7s} mylib step {t_ml * 1e3:8.2f} ms   bare psum {t_psum * 1e3:8.2f} ms"
              f"   ratio {t_ml / t_psum:5.2f}")
    t_ml, t_hand = step_overhead()
    print("\n3. MLP 1024x1024 training step, 4 replicas, batch 256")
    print(f"   mylib MirroredStrategy {t_ml * 1e3:7.2f} ms   hand-written shard_map "
          f"{t_hand * 1e3:7.2f} ms   ratio {t_ml / t_hand:5.2f}")


if __name__ == "__main__":
    main()
