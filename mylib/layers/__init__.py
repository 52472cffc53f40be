"""Keras-style layers: `Layer`, `Input`, `Dense`, `Activation`, `Dropout`, `Flatten`,
`Reshape`, with `activations`, `initializers` and `regularizers`."""

from mylib.layers import activations, backend, initializers, regularizers  # noqa: F401
from mylib.layers.base import Input, InputLayer, InputSpec, Layer  # noqa: F401
from mylib.layers.core import Activation, Dense, Dropout, Flatten, Reshape  # noqa: F401
