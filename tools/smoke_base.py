"""Smoke test of a base install (`pip install mylib`, no extras): build a Sequential,
compile, `fit` with default arguments (the default progress bar), `model.save`,
`load_model`, `predict` (the loaded model predicts what the original did), and `fit`
with the TensorBoard callback (an event file is written). Data are numpy random
numbers: scikit-learn is not a base dependency.

    python tools/smoke_base.py           # in any environment with mylib
    python tools/smoke_base.py --base    # also: no extra is installed, and the features
                                         # that need one raise ImportError naming it

Exits non-zero on any failure. `.ci/run` runs it with --base in a venv of the base
dependencies only.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile

import numpy as np

# What the extras install (and scikit-learn, which only the examples and tests use).
EXTRA_MODULES = {"flax": "interop", "ray": "ps", "tensorboard": "tensorboard",
                 "farmhash": "preprocessing", "sklearn": "examples",
                 "matplotlib": "examples"}


def check(cond, what):
    if not cond:
        raise SystemExit(f"smoke_base: FAILED: {what}")
    print(f"smoke_base: ok: {what}", flush=True)


def expect_import_error(fn, extra, what):
    try:
        fn()
    except ImportError as e:
        check(f"mylib[{extra}]" in str(e), f"{what} raises ImportError naming "
              f"mylib[{extra}] ({e})")
    else:
        raise SystemExit(f"smoke_base: FAILED: {what} did not raise ImportError")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", action="store_true",
                    help="also check that no extra is installed and that the features "
                         "needing one raise ImportError naming it")
    args = ap.parse_args(argv)

    if args.base:
        present = [m for m in EXTRA_MODULES if importlib.util.find_spec(m) is not None]
        check(not present, f"no optional package is installed (found: {present})")

    import mylib as ml

    print(f"smoke_base: mylib from {os.path.dirname(ml.__file__)}", flush=True)
    leaked = sorted(m for m in ("flax", "ray", "tensorboard") if m in sys.modules)
    check(not leaked, f"`import mylib` imports no optional package (imported: {leaked})")

    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 8)).astype(np.float32)
    w = rng.normal(size=(8,)).astype(np.float32)
    y = (x @ w > 0).astype(np.int32)
    x_new = rng.normal(size=(32, 8)).astype(np.float32)

    model = ml.Sequential([
        ml.layers.Input((8,)),
        ml.layers.Dense(16, activation="relu"),
        ml.layers.Dense(2, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x, y, epochs=3)  # default arguments: verbose="auto", a progress bar
    losses = history.history["loss"]
    check(len(losses) == 3 and all(np.isfinite(losses)), f"fit: losses {losses}")
    check(losses[-1] < losses[0], "fit: the loss went down")

    with tempfile.TemporaryDirectory(prefix="mylib-smoke-") as tmp:
        path = os.path.join(tmp, "model.mylib")
        model.save(path)
        check(os.path.getsize(path) > 0, f"model.save wrote {path}")
        loaded = ml.models.load_model(path)
        p0 = model.predict(x_new, verbose=0)
        p1 = loaded.predict(x_new, verbose=0)
        check(p0.shape == (32, 2), f"predict: shape {p0.shape}")
        check(np.allclose(p0, p1, rtol=1e-6, atol=1e-6),
              f"load_model: the loaded model predicts the same (max diff "
              f"{float(np.max(np.abs(p0 - p1))):.2e})")

        logdir = os.path.join(tmp, "logs")
        loaded.fit(x, y, epochs=2, verbose=0, validation_split=0.25,
                   callbacks=[ml.callbacks.TensorBoard(logdir)])
        events = [os.path.join(d, f) for d, _, fs in os.walk(logdir) for f in fs
                  if "tfevents" in f]
        check(events and all(os.path.getsize(f) > 0 for f in events),
              f"TensorBoard: {len(events)} event file(s) written")

    if args.base:
        expect_import_error(lambda: ml.layers.FlaxLayer(object()), "interop", "FlaxLayer")
        expect_import_error(lambda: ml.distribute.ParameterServerStrategy(), "ps",
                            "ParameterServerStrategy")
        expect_import_error(lambda: ml.summary.run_metadata_proto(ml.RunMetadata()),
                            "tensorboard", "run_metadata_proto")
        expect_import_error(lambda: ml.layers.Hashing(num_bins=3)(["a"]), "preprocessing",
                            "Hashing")

    print("smoke_base: all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
