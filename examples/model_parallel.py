"""Model parallelism: the layers of one model on two devices, trained with `fit`.

    python examples/model_parallel.py [--epochs 10]

The first layers live on device 0, the classifier on device 1 (on a machine without
two accelerators, two host CPU devices are made with
`mylib.devices.set_cpu_device_count(2)` before JAX starts). Each layer's variables,
reads and updates stay on its device; the activations crossing between them travel as
`_Send`/`_Recv` transfers inserted by the partitioner.
"""

import argparse

from mylib.devices import set_cpu_device_count

try:
    set_cpu_device_count(2)  # must run before JAX initializes: before other mylib work
except RuntimeError:
    pass  # JAX already started with another device count (e.g. under the test suite)

import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import mylib as ml  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description="Two-device model-parallel MLP on the digits.")
    p.add_argument("--epochs", type=int, default=10)
    args = p.parse_args(argv)

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, stratify=y, random_state=0)

    devices = [d.name for d in ml.devices.list_devices()][:2]
    with ml.Graph().as_default():  # the model's own graph
        inputs = ml.layers.Input((64,), name="pixels")
        with ml.device(devices[0]):
            h = ml.layers.Dense(256, activation="relu", name="hidden_a")(inputs)
            h = ml.layers.Dense(128, activation="relu", name="hidden_b")(h)
        with ml.device(devices[-1]):
            outputs = ml.layers.Dense(10, activation="softmax", name="classifier")(h)
        model = ml.Model(inputs, outputs, name="two_device_mlp")
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                      metrics=["accuracy"])
    model.fit(x_tr, y_tr, batch_size=32, epochs=args.epochs, verbose=2)
    _, acc = model.evaluate(x_te, y_te, verbose=0)
    placement = {w.name: sorted(str(d) for d in model.session._store[w._key].devices())
                 for w in model.trainable_weights}
    for name, devs in placement.items():
        print(f"  {name:28s} on {devs}")
    print(f"test accuracy {acc:.4f}")
    return acc, placement


if __name__ == "__main__":
    main()
