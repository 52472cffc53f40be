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
"""

from mylib.keras.ops import core, nn, numpy  # noqa: F401
from mylib.keras.ops.core import *  # noqa: F401,F403
from mylib.keras.ops.nn import *  # noqa: F401,F403
from mylib.keras.ops.numpy import *  # noqa: F401,F403
from mylib.keras.ops.core import map, slice  # noqa: F401,A004
from mylib.keras.ops.numpy import (abs, all, any, max, min, round, sum)  # noqa: F401,A004
from mylib.keras.ops import math, linalg, image  # noqa: F401,E402
from mylib.keras.ops.math import (erf, erfinv, in_top_k, logsumexp, segment_max,  # noqa: F401
                                  segment_sum, top_k, rsqrt, extract_sequences)
