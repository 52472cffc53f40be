"""Runs one benchmark's Keras 3 row on the TensorFlow backend, in a process of its own
(Keras picks its backend once per process, and the other rows run Keras on JAX):

    python _keras_tf_worker.py MODULE JSON_KWARGS

imports `MODULE` (a benchmark script of this folder) with ``KERAS_BACKEND=tensorflow``,
calls its ``keras_tf_row(keras, **kwargs)`` and prints ``{"times": [...], "loss": x}``
as the last line. Started by `_harness.keras_tf_runner`."""

import json
import os
import sys

os.environ["KERAS_BACKEND"] = "tensorflow"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import importlib

    import keras

    module = importlib.import_module(sys.argv[1])
    times, loss = module.keras_tf_row(keras, **json.loads(sys.argv[2]))
    print(json.dumps({"times": list(times), "loss": float(loss)}))
