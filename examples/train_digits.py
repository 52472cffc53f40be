"""Trains an MLP on scikit-learn's handwritten digits with mylib's Keras-style API and
writes TensorBoard logs.

    python examples/train_digits.py [--epochs 30] [--batch-size 32] [--logdir runs/digits]
                                    [--strategy none|mirrored|multi_worker]

With ``--strategy mirrored`` the model trains on all local devices (synchronous
replicas); with ``multi_worker`` on several processes, started for example by
``python -m mylib.distribute.launch --num_workers 2 examples/train_digits.py
--strategy multi_worker`` (the chief writes the TensorBoard logs).

The 1,797 8x8 digit images are standardized, split 80/20 (stratified, fixed seed);
10% of the training part is held out for validation. Then open the logs with
``tensorboard --logdir runs/digits``.
"""

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import mylib as ml


def load(seed):
    x, y = load_digits(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, stratify=y,
                                              random_state=seed)
    scaler = StandardScaler().fit(x_tr)
    return (scaler.transform(x_tr).astype(np.float32), y_tr.astype(np.int64),
            scaler.transform(x_te).astype(np.float32), y_te.astype(np.int64))


def build_model(seed):
    init = ml.initializers.GlorotUniform
    model = ml.Sequential([
        ml.layers.Input((64,), name="pixels"),
        ml.layers.Dense(128, activation="relu", kernel_initializer=init(seed=seed),
                        name="hidden"),
        ml.layers.Dropout(0.1, seed=seed),
        ml.layers.Dense(10, activation="softmax", kernel_initializer=init(seed=seed + 1),
                        name="classifier"),
    ], name="digits_mlp")
    model.compile(optimizer=ml.optimizers.Adam(learning_rate=1e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def main(argv=None):
    p = argparse.ArgumentParser(description="Train an MLP on scikit-learn's digits.")
    p.add_argument("--epochs", type=int, default=30, help="training epochs (default 30)")
    p.add_argument("--batch-size", type=int, default=32, help="batch size (default 32)")
    p.add_argument("--logdir", default="runs/digits",
                   help="TensorBoard log directory (default runs/digits)")
    p.add_argument("--seed", type=int, default=0, help="data split and weight seed")
    p.add_argument("--verbose", type=int, default=2, choices=[0, 1, 2],
                   help="0 silent, 1 progress bar, 2 one line per epoch (default)")
    p.add_argument("--strategy", default="none", choices=["none", "mirrored", "multi_worker"],
                   help="distribution strategy (default none: one device)")
    args = p.parse_args(argv)
    strategy = None
    if args.strategy == "mirrored":
        strategy = ml.distribute.MirroredStrategy()
    elif args.strategy == "multi_worker":
        # Created first: jax.distributed must start before any other JAX work.
        strategy = ml.distribute.MultiWorkerMirroredStrategy()

    x_tr, y_tr, x_te, y_te = load(args.seed)
    print(f"digits: {len(x_tr)} training, {len(x_te)} test images of 64 pixels")
    if strategy is not None:
        print(f"{type(strategy).__name__}: {strategy.num_replicas_in_sync} replicas")
        with strategy.scope():
            model = build_model(args.seed)
        # Every process sees the same batches in the same order.
        shuffle = args.strategy != "multi_worker"
        chief = getattr(strategy.extended, "should_save_summary", True)
    else:
        model = build_model(args.seed)
        shuffle, chief = True, True
    model.summary()
    t0 = time.perf_counter()
    # Under a multi-worker strategy only the chief writes to --logdir (the callback
    # sends the other workers' logs to a temporary directory).
    callbacks = [ml.callbacks.TensorBoard(log_dir=args.logdir)]
    history = model.fit(x_tr, y_tr, batch_size=args.batch_size, epochs=args.epochs,
                        validation_split=0.1, verbose=args.verbose, shuffle=shuffle,
                        callbacks=callbacks)
    seconds = time.perf_counter() - t0
    test_loss, test_acc = model.evaluate(x_te, y_te, batch_size=256, verbose=0)
    print(f"trained {args.epochs} epochs in {seconds:.1f} s; "
          f"final val_accuracy {history.history['val_accuracy'][-1]:.4f}")
    print(f"test loss {test_loss:.4f}  test accuracy {test_acc:.4f}")
    if chief:
        print(f"TensorBoard logs in {args.logdir}  (tensorboard --logdir {args.logdir})")
    return {"test_accuracy": float(test_acc), "test_loss": float(test_loss),
            "seconds": seconds, "history": history.history}


if __name__ == "__main__":
    main()
