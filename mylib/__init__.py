"""mylib: the dataflow-graph machine-learning system of the TensorFlow paper (Abadi et
al., OSDI 2016), compiled by XLA through JAX, with a Keras-style API on top."""

from mylib.core import *  # noqa: F401,F403
from mylib.core import errors  # noqa: F401

__version__ = "0.1.0"
