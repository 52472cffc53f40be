"""Keyword arguments kept for TensorFlow / Keras compatibility.

Two rules, used by every room:

- an unknown keyword argument raises `TypeError` naming it (`unrecognized_kwargs`, in
  Keras 3's words: ``Unrecognized keyword arguments passed to Dense: {'foo': 1}``), so a
  typo such as ``trainabel=False`` is never swallowed;
- an argument that is accepted so TensorFlow / Keras code runs, but that mylib does not
  honour, warns once per process and argument (`warn_ignored`) with an
  `IgnoredArgumentWarning` that says what happens instead.

This module imports nothing from mylib, so any room (core included) can use it.
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import os
import sys
import threading
import warnings

__all__ = ["IgnoredArgumentWarning", "init_arg_names", "reset_ignored_warnings",
           "unrecognized_kwargs", "warn_ignored"]

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_CONTEXTLIB = os.path.dirname(contextlib.__file__) + os.sep + "contextlib"


class IgnoredArgumentWarning(UserWarning):
    """An argument accepted for TensorFlow / Keras compatibility has no effect."""


_warned = set()  # (owner, argument) pairs already warned about in this process
_lock = threading.Lock()


def _user_stacklevel():
    # The `stacklevel` of the first frame outside mylib, so the warning quotes the
    # user's line (as errors do), whatever the depth of the layer/model subclassing.
    f, level = sys._getframe(1), 1
    while f is not None and f.f_code.co_filename.startswith((_PKG_DIR, _CONTEXTLIB)):
        f, level = f.f_back, level + 1
    return level


def warn_ignored(owner, arg, reason):
    """Warns, once per process for each ``(owner, arg)``, that ``owner(arg=...)`` is
    accepted for compatibility and ignored.

    Args:
      owner: the callable's name as users write it (``"gradients"``, ``"LSTM"``,
        ``"Model.compile"``).
      arg: the argument's name.
      reason: what mylib does instead (one sentence).
    Returns:
      True if this call warned.
    """
    key = (owner, arg)
    with _lock:
        if key in _warned:
            return False
        _warned.add(key)
    warnings.warn(f"{owner}({arg}=...) is accepted for TensorFlow/Keras compatibility and "
                  f"ignored: {reason}", IgnoredArgumentWarning, stacklevel=_user_stacklevel())
    return True


def reset_ignored_warnings():
    """Forgets which ignored arguments have warned (tests use it to see each warn again)."""
    with _lock:
        _warned.clear()


def unrecognized_kwargs(owner, kwargs, known=()):
    """The `TypeError` for unknown keyword arguments `kwargs` (a non-empty dict) passed
    to `owner`, naming each, with a suggestion when one is close to a `known` name."""
    msg = f"Unrecognized keyword arguments passed to {owner}: {dict(kwargs)!r}"
    hints = []
    for k in kwargs:
        close = difflib.get_close_matches(str(k), list(known), n=1, cutoff=0.75)
        if close:
            hints.append(f"`{close[0]}` instead of `{k}`")
    if hints:
        msg += ". Did you mean " + "; ".join(hints) + "?"
    return TypeError(msg)


def init_arg_names(cls):
    """The named parameters of `cls.__init__` and of its bases' (the `known` names of
    `unrecognized_kwargs` for a class whose ``__init__`` passes ``**kwargs`` up)."""
    names = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is not None and klass is not object:
            names |= {p.name for p in inspect.signature(init).parameters.values()
                      if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    names.discard("self")
    return sorted(names)


def deprecated_alias(new, old, new_value, old_value, owner):
    """The value of argument `new` given TensorFlow 1's deprecated spelling `old` (e.g.
    ``reduction_indices`` for ``axis``): whichever was given.

    Raises:
      ValueError: both were given.
    """
    if old_value is None:
        return new_value
    if new_value is not None and new_value is not False:
        raise ValueError(f"{owner}: cannot specify both '{new}' and '{old}'. Received: "
                         f"{new}={new_value!r}, {old}={old_value!r}")
    return old_value
