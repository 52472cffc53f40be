"""mylib: the dataflow-graph machine-learning system of the TensorFlow paper (Abadi et
al., OSDI 2016), compiled by XLA through JAX, with a Keras-style API on top.

``import mylib as ml``: the graph API at the top (`ml.Graph`, `ml.placeholder`,
`ml.Variable`, `ml.Session`, `ml.gradients`, `ml.matmul`, ...), `ml.nn`, `ml.random`,
and the Keras-style API under `ml.layers`, `ml.models`, `ml.optimizers`, `ml.losses`,
`ml.metrics`, `ml.callbacks` (`ml.Sequential` and `ml.Model` also at the top).
"""

from mylib.core import *  # noqa: F401,F403
from mylib import errors  # noqa: F401
from mylib.runtime import (ConfigProto, GPUOptions, InteractiveSession, RunMetadata,  # noqa: F401
                           RunOptions, Session)
from mylib.runtime import coordinator, queue_runner, saver, timeline  # noqa: F401
from mylib import nn, random  # noqa: F401
from mylib import image, linalg, math, sparse, strings  # noqa: F401
from mylib import devices, distribute  # noqa: F401
from mylib import losses, metrics, optimizers  # noqa: F401
from mylib import layers, callbacks, models, saving  # noqa: F401
from mylib import train  # noqa: F401
from mylib import contrib  # noqa: F401
from mylib import mixed_precision  # noqa: F401
from mylib import debugging, summary  # noqa: F401
from mylib import config, data, test, utils  # noqa: F401
from mylib.layers import activations, initializers, regularizers  # noqa: F401
from mylib.devices import DeviceSpec  # noqa: F401

from mylib.models import Model, Sequential  # noqa: F401

from mylib._version import __version__  # noqa: F401
from mylib import version  # noqa: F401,E402 - `tf.version.VERSION`

# TensorFlow 1's `tf.VERSION`: mylib's own version string (see `mylib.version`).
VERSION = __version__

# Around a TensorFlow 1 program: tf.app, tf.flags, tf.gfile / tf.io.gfile, tf.logging,
# tf.compat (as_str, ..., compat.v1), tf.contrib.
from mylib import app, compat, contrib, flags, gfile, io  # noqa: F401,E402
from mylib import logging  # noqa: F401,E402
from mylib._tf1_aliases import *  # noqa: F401,F403,E402 - TF1's deprecated spellings
import sys as _sys  # noqa: E402

from mylib.compat import v1 as _compat_v1  # noqa: E402

# `ml.compat.v1.X` is `ml.X` for every name, read when asked (names added later too).
_compat_v1._bind_namespace(_sys.modules[__name__])

# TensorBoard's protos as TensorFlow 1 exposes them (``tf.Summary(value=[...])``),
# imported when first read.
_PROTOS = {"Summary": "summary_pb2", "SummaryMetadata": "summary_pb2", "Event": "event_pb2",
           "SessionLog": "event_pb2", "HistogramProto": "summary_pb2"}


# TensorFlow 1.x's top-level eager switches, which `compat.v1` defines.
_FROM_V1 = ("executing_eagerly", "enable_eager_execution", "disable_eager_execution",
            "disable_v2_behavior", "enable_v2_behavior")
# Names deliberately not provided, and what to use instead.
_MISSING = {
    "estimator": "ml.train.MonitoredTrainingSession with hooks, or Model.fit",
    "lite": "nothing: mylib compiles through XLA and has no TensorFlow Lite converter",
    "Supervisor": "ml.train.MonitoredTrainingSession",
}


def __getattr__(name):
    if name in _PROTOS:
        import importlib

        return getattr(importlib.import_module(f"tensorboardX.proto.{_PROTOS[name]}"), name)
    if name in _FROM_V1:
        return getattr(_compat_v1, name)
    if name in _MISSING:
        raise AttributeError(f"mylib has no {name!r}: use {_MISSING[name]} instead")
    raise AttributeError(f"module 'mylib' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_PROTOS) | set(_FROM_V1))

# TensorFlow's `tf.bool` (`bool_` in `mylib.dtypes`, which must not shadow the builtin).
bool = dtypes.bool_  # noqa: A001

from mylib import keras  # noqa: F401,E402 - the Keras 3 face, above everything else
