"""Trains the digits MLP of ``train_digits.py`` on a parameter-server cluster: the
variables live on 2 parameter-server tasks, `fit` runs the training steps on the
workers (the architecture of the TensorFlow paper, sections 3-4, on a local Ray
instance started and stopped by the strategy).

    python examples/ps_digits.py [--mode async|sync] [--epochs 5] [--batch-size 32]
                                 [--num-workers 2] [--replicas-to-aggregate M]

``--mode async`` (default): each worker applies its update as soon as its gradient is
ready, against whatever values the parameter servers hold then (Downpour-style, the
paper's default). ``--mode sync``: each step applies the mean of the first M gradients
computed against that step's values and drops the rest (TensorFlow 1's
`SyncReplicasOptimizer` with backup workers, Chen et al. 2016; the paper's section
4.4). M defaults to ``num_workers - 1``: one backup worker, so a straggling worker
never sets the pace. With the default 2 workers that is M = 1: each step takes the
first of two gradients and drops the other, trading half the workers' compute for
robustness to a slow worker. Use ``--num-workers 3`` for M = 2 of 3 (two replicas plus
one backup, whose gradients are averaged), closer to how the paper runs it.

Evaluation runs in this process, reading the weights from the parameter servers. The
script prints the test accuracy, the number of steps applied and (sync) the gradients
dropped, then closes the strategy, which stops every task and removes Ray's files.
"""

import argparse
import time


import mylib as ml
from train_digits import load  # the same data split and scaling


def build_model(seed, lr):
    init = ml.initializers.GlorotUniform
    model = ml.Sequential([
        ml.layers.Input((64,), name="pixels"),
        ml.layers.Dense(128, activation="relu", kernel_initializer=init(seed=seed),
                        name="hidden"),
        ml.layers.Dense(10, activation="softmax", kernel_initializer=init(seed=seed + 1),
                        name="classifier"),
    ], name="digits_mlp")
    model.compile(optimizer=ml.optimizers.Adam(learning_rate=lr),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


class EpochClock(ml.callbacks.Callback):
    """Wall time at the end of each epoch (the first includes starting the tasks,
    shipping the graph to them and compiling the step there)."""

    def __init__(self):
        super().__init__()
        self.ends = []

    def on_epoch_end(self, epoch, logs=None):
        self.ends.append(time.perf_counter())


def make_strategy(mode, num_ps, num_workers, replicas_to_aggregate):
    if mode == "async":
        m = None
    else:
        m = replicas_to_aggregate or max(num_workers - 1, 1)
        if not 1 <= m <= num_workers:
            raise SystemExit(f"--replicas-to-aggregate must be in 1..{num_workers}; "
                             f"got {m}")
    return ml.distribute.ParameterServerStrategy(num_ps=num_ps, num_workers=num_workers,
                                                 replicas_to_aggregate=m)


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Train the digits MLP with 2 parameter servers and several workers.")
    p.add_argument("--mode", default="async", choices=["async", "sync"],
                   help="async updates (default) or sync with backup workers")
    p.add_argument("--epochs", type=int, default=5, help="training epochs (default 5)")
    p.add_argument("--batch-size", type=int, default=32,
                   help="batch size per worker step (default 32)")
    p.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate")
    p.add_argument("--num-ps", type=int, default=2, help="parameter servers (default 2)")
    p.add_argument("--num-workers", type=int, default=2, help="workers (default 2)")
    p.add_argument("--replicas-to-aggregate", type=int, default=None, metavar="M",
                   help="sync mode: gradients averaged per step (default num_workers - 1, "
                        "i.e. one backup worker)")
    p.add_argument("--seed", type=int, default=0, help="data split and weight seed")
    args = p.parse_args(argv)

    x_tr, y_tr, x_te, y_te = load(args.seed)
    print(f"digits: {len(x_tr)} training, {len(x_te)} test images of 64 pixels")
    strategy = make_strategy(args.mode, args.num_ps, args.num_workers,
                             args.replicas_to_aggregate)
    print(strategy)
    try:
        with strategy.scope():
            model = build_model(args.seed, args.lr)
        clock = EpochClock()
        t0 = time.perf_counter()
        history = model.fit(x_tr, y_tr, batch_size=args.batch_size, epochs=args.epochs,
                            verbose=0, shuffle=True, callbacks=[clock])
        seconds = time.perf_counter() - t0
        first = clock.ends[0] - t0
        test_loss, test_acc = model.evaluate(x_te, y_te, batch_size=256, verbose=0)
        stats = dict(strategy.stats)
        # Every applied update advanced the optimizer's step counter on its parameter
        # server; in async mode there is one per scheduled step.
        applied = int(ml.layers.backend.get_session(model.graph).run(
            model.optimizer.iterations))
    finally:
        strategy.close()
    scheduled = args.epochs * -(-len(x_tr) // args.batch_size)
    print(f"trained {args.epochs} epochs ({scheduled} steps scheduled) in {seconds:.1f} s "
          f"(first epoch, with cluster start-up and compilation: {first:.1f} s); "
          f"last epoch's training accuracy {history.history['accuracy'][-1]:.4f}")
    print(f"steps applied {applied}  gradients dropped {stats['dropped_gradients']}")
    print(f"test loss {test_loss:.4f}  test accuracy {test_acc:.4f}")
    return {"test_accuracy": float(test_acc), "test_loss": float(test_loss),
            "applied_steps": applied, "dropped_gradients": stats["dropped_gradients"],
            "seconds": seconds}


if __name__ == "__main__":
    main()
