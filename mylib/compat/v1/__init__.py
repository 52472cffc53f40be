"""`ml.compat.v1`: the TensorFlow 1 namespace. Every name of `mylib` is reachable here
as the same object (``ml.compat.v1.train is ml.train``), resolved when read, so names
added to `mylib` appear here too; ``import mylib.compat.v1 as tf`` ports a program
written for ``import tensorflow.compat.v1 as tf``.

The names that exist only in TensorFlow 1's compat module are defined here:
`disable_eager_execution`, `disable_v2_behavior`, `enable_v2_behavior`,
`executing_eagerly`, `enable_eager_execution` (an error: mylib runs graphs), and
`data` (`ml.data` plus `make_one_shot_iterator` / `make_initializable_iterator`).
"""

from __future__ import annotations

from mylib.compat.v1 import data  # noqa: F401


def disable_eager_execution():
    """Nothing to do: mylib always builds graphs and runs them in a `Session`."""


def disable_v2_behavior():
    """Nothing to do: mylib's graph API behaves as TensorFlow 1's."""


def enable_v2_behavior():
    """Nothing to do here (mylib's API is the same in both spellings); eager execution
    is not available (see `enable_eager_execution`)."""


def disable_resource_variables():
    """Nothing to do: every mylib variable is a resource variable."""


def enable_resource_variables():
    """Nothing to do: every mylib variable is a resource variable."""


def resource_variables_enabled():
    return True


def executing_eagerly():
    """False: mylib builds graphs and runs them in a `Session`."""
    return False


def executing_eagerly_outside_functions():
    return False


def enable_eager_execution(config=None, device_policy=None, execution_mode=None):
    """Raises: eager execution is not part of mylib.

    Raises:
      NotImplementedError: always, naming what to use instead.
    """
    raise NotImplementedError(
        "mylib runs graphs: eager execution is not available. Build the graph and run it "
        "with ml.Session().run(...); layers and models called on numpy arrays run "
        "immediately (ml.layers.Dense(3)(np.ones((2, 4)))).")


_OWN = {"data", "disable_eager_execution", "disable_v2_behavior", "enable_v2_behavior",
        "disable_resource_variables", "enable_resource_variables",
        "resource_variables_enabled", "executing_eagerly",
        "executing_eagerly_outside_functions", "enable_eager_execution"}


# The `mylib` package binds itself here when it has finished importing
# (`_bind_namespace`), so this module never imports the package face.
_namespace = None


def _bind_namespace(module):
    global _namespace
    _namespace = module


def __getattr__(name):
    if _namespace is None:
        raise AttributeError(f"module 'mylib.compat.v1' has no attribute {name!r} (mylib is "
                             "still importing)")
    try:
        return getattr(_namespace, name)
    except AttributeError as e:
        raise AttributeError(f"module 'mylib.compat.v1' has no attribute {name!r}: {e}") \
            from None


def __dir__():
    return sorted(set(dir(_namespace) if _namespace is not None else ()) | _OWN)
