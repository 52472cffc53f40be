"""`ml.app`: TensorFlow 1's ``tf.app`` (`run`, `flags`) on absl-py's `app`.

``ml.app.run(main=None, argv=None)`` parses the command line into ``ml.app.flags.FLAGS``
(flags nobody defined are left in ``argv`` rather than rejected, as TensorFlow 1 did),
calls ``main(argv)`` (the calling module's ``main`` if none is given) and exits with its
return value, through ``absl.app.run``.
"""

from __future__ import annotations

import sys as _sys

from mylib import flags  # noqa: F401

__all__ = ["run", "flags"]


def _parse_flags_tolerate_undef(argv):
    return flags.FLAGS(_sys.argv if argv is None else argv, known_only=True)


def run(main=None, argv=None):
    """Parses flags, runs ``main(argv)`` and exits with its return value.

    Args:
      main: the program's main function, taking the remaining argv (default: the
        ``main`` of the ``__main__`` module).
      argv: the command line (default ``sys.argv``).
    Raises:
      SystemExit: always, when `main` returns (``sys.exit(main(argv))``).
      AttributeError: no `main` given and ``__main__`` has none.
    """
    if main is None:
        main_mod = _sys.modules["__main__"]
        main = getattr(main_mod, "main", None)
        if main is None:
            raise AttributeError("ml.app.run() without `main`: the __main__ module has no "
                                 "function `main`; pass ml.app.run(main=your_function)")
    from absl import app as _absl_app  # imported here: it sets up absl.logging

    _absl_app.run(main=main, argv=argv, flags_parser=_parse_flags_tolerate_undef)
