"""Optional dependencies: import one where a feature needs it, or say how to install it.

`pip install mylib` installs what build, fit, save, load, predict and the TensorBoard
callback need. A few features need more, installed as extras of the package:

  ``ps``           Ray, for `ParameterServerStrategy`
  ``interop``      Flax, for `FlaxLayer`
  ``tensorboard``  TensorBoard, for `run_metadata_proto` / `FileWriter.add_run_metadata`
  ``preprocessing`` pyfarmhash, for the `Hashing` layer and string OOV buckets of
                   `StringLookup` (FarmHash Fingerprint64)
  ``image``        Pillow, for `keras.utils.load_img` / `save_img` / `array_to_img`

This module imports nothing from mylib, so every layer (devices, core, distribute, ...)
may use it; the modules it names are imported only when a feature is used, never by
``import mylib``.
"""

from __future__ import annotations

import importlib
import importlib.util

__all__ = ["available", "missing_message", "require"]


def missing_message(feature, package, extra):
    return (f"{feature} needs {package}, which is not installed: "
            f"pip install 'mylib[{extra}]'")


def _top(module):
    return module.partition(".")[0]


def require(module, feature, extra, package=None):
    """Imports and returns `module`.

    Raises:
      ImportError: `module`'s distribution is not installed; the message names
        `feature`, the package (`package`, default `module`'s top-level name) and the
        extra of mylib that installs it. An ImportError raised from inside an installed
        package (a broken install, a missing dependency of it) propagates unchanged.
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = _top(module)
        if e.name is None or (e.name != top and not e.name.startswith(top + ".")):
            raise  # something the package itself needs is missing: not ours to rename
        raise ImportError(missing_message(feature, package or top, extra),
                          name=e.name) from e


def available(module):
    """Whether `module` can be imported, without importing it (its parent packages
    may be imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
