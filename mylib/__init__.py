"""mylib: the dataflow-graph machine-learning system of the TensorFlow paper (Abadi et
al., OSDI 2016), compiled by XLA through JAX, with a Keras-style API on top.

``import mylib as ml``: the graph API at the top (`ml.Graph`, `ml.placeholder`,
`ml.Variable`, `ml.Session`, `ml.gradients`, `ml.matmul`, ...), `ml.nn`, `ml.random`,
and the Keras-style API under `ml.layers`, `ml.models`, `ml.optimizers`, `ml.losses`,
`ml.metrics`, `ml.callbacks` (`ml.Sequential` and `ml.Model` also at the top).
"""

from mylib.core import *  # noqa: F401,F403
from mylib import errors  # noqa: F401
from mylib.runtime import (ConfigProto, InteractiveSession, RunMetadata, RunOptions,  # noqa: F401
                           Session)
from mylib.runtime import coordinator, queue_runner, saver, timeline  # noqa: F401
from mylib import nn, random  # noqa: F401
from mylib import devices, distribute  # noqa: F401
from mylib import losses, metrics, optimizers  # noqa: F401
from mylib import layers, callbacks, models, saving  # noqa: F401
from mylib import train  # noqa: F401
from mylib import mixed_precision  # noqa: F401
from mylib import debugging, summary  # noqa: F401
from mylib import config, data, utils  # noqa: F401
from mylib.layers import activations, initializers, regularizers  # noqa: F401
from mylib.devices import DeviceSpec  # noqa: F401

from mylib.models import Model, Sequential  # noqa: F401

from mylib._version import __version__  # noqa: F401

from mylib import keras  # noqa: F401,E402 - the Keras 3 face, above everything else
