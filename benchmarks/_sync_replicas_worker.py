"""One process of the multi-process part of `sync_replicas.py`; also holds the models
and data that both parts train, so the two measure the same work.

    python -m mylib.distribute.launch --num_workers 2 \\
        benchmarks/_sync_replicas_worker.py mlp cnn --epochs 5

Each process keeps one host CPU device and joins the others through
`MultiWorkerMirroredStrategy` (global batch 256, split across the processes). The
chief prints one line per model, ``sync_replicas <kind> <replicas> <samples/s>``, the
median over the epochs after the first (which compiles).
"""

import argparse
import statistics
import sys
import time

import numpy as np


def make_data(kind):
    rng = np.random.default_rng(0)
    shape = (4096, 512) if kind == "mlp" else (2048, 16, 16, 1)
    x = rng.standard_normal(shape).astype(np.float32)
    return x, rng.integers(0, 10, len(x))


def make_model(ml, kind):
    """Builds and compiles the model; call it inside the graph and strategy scope."""
    if kind == "mlp":
        layers = [ml.layers.Input((512,)), ml.layers.Dense(1024, activation="relu"),
                  ml.layers.Dense(1024, activation="relu"), ml.layers.Dense(10)]
    else:
        layers = [ml.layers.Input((16, 16, 1)),
                  ml.layers.Conv2D(32, 3, padding="same", activation="relu"),
                  ml.layers.MaxPooling2D(2), ml.layers.Flatten(), ml.layers.Dense(10)]
    m = ml.Sequential(layers)
    m.compile(optimizer=ml.optimizers.SGD(0.01),
              loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def fit_samples_per_s(ml, model, x, y, epochs, shuffle=True):
    """samples/s of `model.fit` at global batch 256: median over epochs 2..`epochs`."""
    times = []

    class EpochTimes(ml.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            times.append(time.perf_counter() - self.t0)

    model.fit(x, y, batch_size=256, epochs=epochs, verbose=0, shuffle=shuffle,
              callbacks=[EpochTimes()])
    return len(x) / statistics.median(times[1:])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kinds", nargs="+", choices=["mlp", "cnn"])
    p.add_argument("--epochs", type=int, default=5, help="including the warm-up epoch")
    args = p.parse_args(argv)

    from mylib.devices import set_cpu_device_count

    # One device per process, whatever XLA_FLAGS the parent had (it forces 4).
    set_cpu_device_count(1)
    import mylib as ml

    # jax.distributed must start before any other JAX work in the process.
    strategy = ml.distribute.MultiWorkerMirroredStrategy()
    chief = strategy.cluster_resolver.is_chief()
    for kind in args.kinds:
        x, y = make_data(kind)
        with ml.Graph().as_default(), strategy.scope():
            model = make_model(ml, kind)
        # Every process must feed the same batches in the same order.
        rate = fit_samples_per_s(ml, model, x, y, args.epochs, shuffle=False)
        if chief:
            print(f"sync_replicas {kind} {strategy.num_replicas_in_sync} {rate:.1f}",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
