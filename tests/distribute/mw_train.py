"""Worker script for test_multi_worker.py (run by the launcher, one per process)."""

import sys
import time

import numpy as np

import mylib as ml


def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((70, 10)).astype(np.float32)
    return x, (x[:, :3].sum(1) > 0).astype(np.int64)


def model():
    init = ml.initializers.GlorotUniform
    m = ml.Sequential([ml.layers.Input((10,)),
                       ml.layers.Dense(16, activation="relu", kernel_initializer=init(seed=1)),
                       ml.layers.Dense(2, kernel_initializer=init(seed=2))])
    m.compile(optimizer=ml.optimizers.Adam(0.01), metrics=["accuracy"],
              loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


class DieAfter(ml.callbacks.Callback):
    """Worker 1 dies abruptly after `epoch` (simulates a lost machine)."""

    def __init__(self, strategy, epoch):
        super().__init__()
        self.strategy, self.epoch = strategy, epoch

    def on_epoch_end(self, epoch, logs=None):
        if self.strategy.cluster_resolver.task_id == 1 and epoch == self.epoch:
            import os

            os._exit(3)
        time.sleep(0.2)


if __name__ == "__main__":
    out, mode = sys.argv[1], sys.argv[2]
    strategy = ml.distribute.MultiWorkerMirroredStrategy(heartbeat_timeout=5)
    x, y = data()
    with strategy.scope():
        m = model()
    cbs = [DieAfter(strategy, 1)] if mode == "die" else []
    epochs = 3 if mode != "die" else 50
    if mode in ("backup_die", "backup_resume"):
        # BackupAndRestore in the backup dir; the first run loses worker 1 after epoch 1.
        cbs = [ml.callbacks.BackupAndRestore(sys.argv[3])]
        epochs = 3
        if mode == "backup_die":
            cbs.append(DieAfter(strategy, 1))

        class Epochs(ml.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                print("epoch", epoch, flush=True)

        cbs.append(Epochs())
    h = m.fit(x, y, batch_size=16, epochs=epochs, verbose=0, shuffle=False, callbacks=cbs)
    print("replicas", strategy.num_replicas_in_sync, "loss", h.history["loss"], flush=True)
    if strategy.extended.should_checkpoint:
        np.savez(out, *m.get_weights())
