"""`mylib.keras`: the Keras 3 face of mylib.

``from mylib import keras`` (or ``import mylib.keras as keras``; `ml.keras` is the same
module) offers Keras 3's namespace over mylib's layers, models and graph: `Input`,
`Model`, `Sequential`, `layers`, `ops`, `losses`, `metrics`, `optimizers` (with
`schedules`), `callbacks`, `activations`, `initializers`, `regularizers`,
`constraints`, `models`, `saving`, `mixed_precision`, `utils`, `backend`, `random`,
`config`, `datasets`, `preprocessing`.

Models are dataflow graphs: a `train_step` you override is called ONCE, on symbolic
batches, to build the step graph that `fit` then runs every step. Where a Keras 3
program computes gradients with a backend's own tool (`tf.GradientTape`, `jax.grad`,
`loss.backward()`), write::

    grads = ml.gradients(loss, self.trainable_variables)   # import mylib as ml

then ``self.optimizer.apply(grads, self.trainable_variables)`` (or
``apply_gradients(zip(grads, vars))``), as in Keras 3. Metric updates
(``tracker.update_state(loss)``) and optimizer updates made in the step all run, in
the order written, at every step.

A Keras name mylib lacks raises an AttributeError that says what to use instead.
"""

from mylib._version import __version__ as _mylib_version
from mylib.keras import (activations, backend, callbacks, config, constraints,  # noqa: F401
                         datasets, initializers, layers, losses, metrics, mixed_precision,
                         models, ops, optimizers, preprocessing, random, regularizers, saving,
                         utils)
from mylib.core.graph import Tensor as KerasTensor  # noqa: F401
from mylib.core.graph import device, name_scope  # noqa: F401
from mylib.core.variables import Variable  # noqa: F401
from mylib.keras._face import missing as _missing
from mylib.layers import Input, InputSpec, Layer  # noqa: F401
from mylib.layers.initializers import Initializer  # noqa: F401
from mylib.layers.policy import Policy as DTypePolicy  # noqa: F401
from mylib.layers.regularizers import Regularizer  # noqa: F401
from mylib.losses import Loss  # noqa: F401
from mylib.metrics import Metric  # noqa: F401
from mylib.models import Model, Sequential  # noqa: F401
from mylib.optimizers import Optimizer  # noqa: F401

# The Keras 3 API version this face follows, with mylib's own version as a local label.
__version__ = f"3.0.0+mylib{_mylib_version}"


def version():
    return __version__


__all__ = ["__version__", "version", "Input", "InputSpec", "KerasTensor", "Layer",
           "Model", "Sequential", "Variable", "Loss", "Metric", "Optimizer", "Initializer",
           "Regularizer", "DTypePolicy", "device", "name_scope",
           "activations", "backend", "callbacks", "config", "constraints", "datasets",
           "initializers", "layers", "losses", "metrics", "mixed_precision", "models", "ops",
           "optimizers", "preprocessing", "random", "regularizers", "saving", "utils"]

_HINTS = {
    "applications": "pretrained applications need downloaded weights; build the "
                    "architecture from keras.layers (weights load with "
                    "model.load_weights from mylib's format).",
    "distribution": "use mylib.distribute (MirroredStrategy, MultiWorkerMirroredStrategy, "
                    "ParameterServerStrategy) and `with strategy.scope():`.",
    "export": "save models with keras.saving.save_model; the graph is exported with "
              "mylib's graph files (Graph.as_graph_def).",
    "tree": "use jax.tree_util (flatten, map, structure) on nested inputs.",
    "visualization": "use keras.utils.plot_model.",
    "wrappers": "the scikit-learn wrappers are not provided; call fit / predict directly.",
    "legacy": "use the Keras 3 names (keras.layers, keras.optimizers, ...).",
    "quantizers": "quantization is not implemented.",
    "dtype_policies": "use keras.mixed_precision (Policy, set_global_policy).",
    "StatelessScope": "mylib's layers are graph-based; call the model on arrays or use "
                      "model.predict instead of stateless calls.",
    "Operation": "write a function of keras.ops (it adds graph ops when given tensors), or "
                 "a mylib custom op (ml.OpDef).",
}


def __getattr__(name):
    raise _missing(__name__, name, _HINTS)
