"""`ml.logging`: TensorFlow 1's ``tf.logging`` on Python's `logging` module.

Messages go to the ``"mylib"`` logger (TensorFlow's is ``"tensorflow"``); the first
call that logs adds a stderr handler to it if it has none and no root handler exists
(as TensorFlow's `tf.logging` did), so `info` messages show after
``set_verbosity(INFO)``. Importing mylib configures nothing.

Example::

    tf.logging.set_verbosity(tf.logging.INFO)
    tf.logging.info("step %d: loss %.3f", step, loss)
"""

from __future__ import annotations

import logging as _logging
import sys as _sys
import threading as _threading

__all__ = ["DEBUG", "INFO", "WARN", "ERROR", "FATAL", "get_logger", "set_verbosity",
           "get_verbosity", "debug", "info", "warn", "warning", "error", "fatal", "log",
           "log_every_n", "log_first_n", "log_if", "vlog", "flush", "TaskLevelStatusMessage"]

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARN
ERROR = _logging.ERROR
FATAL = _logging.FATAL

_lock = _threading.Lock()
_handler_added = False


def get_logger():
    """The ``"mylib"`` `logging.Logger` (with a stderr handler once something logs)."""
    global _handler_added
    logger = _logging.getLogger("mylib")
    if not _handler_added:
        with _lock:
            if not _handler_added:
                if not logger.handlers and not _logging.getLogger().handlers:
                    h = _logging.StreamHandler(_sys.stderr)
                    h.setFormatter(_logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
                    logger.addHandler(h)
                _handler_added = True
    return logger


def set_verbosity(v):
    """Sets the threshold (`DEBUG`, `INFO`, `WARN`, `ERROR`, `FATAL` or an int)."""
    get_logger().setLevel(v)


def get_verbosity():
    return get_logger().getEffectiveLevel()


def log(level, msg, *args, **kwargs):
    kwargs.setdefault("stacklevel", 2)
    get_logger().log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs):
    kwargs.setdefault("stacklevel", 2)
    get_logger().debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    kwargs.setdefault("stacklevel", 2)
    get_logger().info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    kwargs.setdefault("stacklevel", 2)
    get_logger().warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs):
    kwargs.setdefault("stacklevel", 2)
    get_logger().error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs):
    kwargs.setdefault("stacklevel", 2)
    get_logger().fatal(msg, *args, **kwargs)


def vlog(level, msg, *args, **kwargs):
    kwargs.setdefault("stacklevel", 2)
    get_logger().log(level, msg, *args, **kwargs)


_counts = {}


def _count(token):
    with _lock:
        n = _counts.get(token, 0)
        _counts[token] = n + 1
    return n


def log_every_n(level, msg, n, *args):
    """Logs on the 1st, (n+1)th, (2n+1)th ... call from the same line."""
    f = _sys._getframe(1)
    if _count((f.f_code.co_filename, f.f_lineno, "every")) % n == 0:
        log(level, msg, *args, stacklevel=3)


def log_first_n(level, msg, n, *args):
    """Logs only the first `n` calls from the same line."""
    f = _sys._getframe(1)
    if _count((f.f_code.co_filename, f.f_lineno, "first")) < n:
        log(level, msg, *args, stacklevel=3)


def log_if(level, msg, condition, *args):
    if condition:
        log(level, msg, *args, stacklevel=3)


def flush():
    for h in get_logger().handlers:
        h.flush()


def TaskLevelStatusMessage(msg):  # noqa: N802 - TensorFlow's name
    error(msg, stacklevel=3)
