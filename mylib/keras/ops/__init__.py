"""`keras.ops`: Keras 3's backend-neutral operations, numpy-named.

Every function works in two worlds:

- on numpy / JAX arrays and Python numbers it computes at once and returns a JAX array,
  like Keras 3 on its JAX backend;
- on symbolic mylib tensors (inside a layer's `call`, a custom `train_step`, or any
  graph program) it adds graph ops, so `ml.gradients`, placement, compiled steps and
  saving handle them like mylib's own ops. Ops without a mylib counterpart are graph
  ops of type ``Keras<Name>`` whose kernel is the same JAX function used on arrays
  (see `mylib.keras.ops._dispatch`).

Submodules as in Keras 3: `numpy`, `nn`, `core`, `math`, `linalg`, `image` (a subset).
A Keras op mylib lacks raises an AttributeError saying what to use instead.
"""

from mylib.keras.ops import core, image, linalg, math, more, nn, numpy  # noqa: F401
from mylib.keras.ops.core import *  # noqa: F401,F403
from mylib.keras.ops.linalg import *  # noqa: F401,F403
from mylib.keras.ops.math import *  # noqa: F401,F403
from mylib.keras.ops.more import *  # noqa: F401,F403
from mylib.keras.ops.nn import *  # noqa: F401,F403
from mylib.keras.ops.numpy import *  # noqa: F401,F403
from mylib.keras.ops.core import map, slice  # noqa: F401,A004
from mylib.keras.ops.numpy import abs, all, any, max, min, round, sum  # noqa: F401,A004

__all__ = sorted(set(core.__all__) | set(linalg.__all__) | set(math.__all__) |
                 set(more.__all__) | set(nn.__all__) | set(numpy.__all__)) + [
    "core", "image", "linalg", "math", "nn", "numpy"]

_CUSTOM = "use other keras.ops in a function of your own (on tensors it builds graph ops)"
_HINTS = {
    "conv_transpose": "use keras.layers.Conv2DTranspose, or " + _CUSTOM + ".",
    "ctc_decode": "not implemented; use keras.ops.argmax over the classes, then drop "
                  "repeats and blanks in numpy (greedy decoding).",
    "custom_gradient": "use a mylib op with a registered gradient (ml.OpDef + "
                       "ml.RegisterGradient), see docs/custom_ops.md.",
    "eig": "use keras.ops.eigh for symmetric matrices, or jax.numpy.linalg.eig on "
           "arrays.",
    "unique": "the output size depends on the data; use jax.numpy.unique on arrays.",
    "histogram": "the output depends on the data; use numpy.histogram on arrays.",
    "associative_scan": "use keras.ops.scan.",
    "unravel_index": "use jax.numpy.unravel_index on arrays.",
}


def __getattr__(name):
    from mylib.keras._face import missing

    raise missing(__name__, name, _HINTS, _CUSTOM + ".")
