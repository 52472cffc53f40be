"""`make_template`: a function whose variables are created on its first call and shared
by every later call (TensorFlow 1's `tf.make_template`)."""

from __future__ import annotations

import functools

from mylib.core.variable_scope import variable_scope as _variable_scope
from mylib.core.graph import GraphKeys, get_default_graph


class Template:
    """A function wrapped so that all its calls share one variable scope; made by
    `make_template`. The first call creates the variables (`get_variable`), later calls
    reuse them."""

    def __init__(self, name, func, create_scope_now=False, unique_name=None,
                 custom_getter=None):
        if not callable(func):
            raise ValueError(f"make_template: func_ must be callable. Received: {func!r}")
        self._name = name
        self._func = func
        self._unique_name = unique_name
        self._custom_getter = custom_getter
        self._scope = None
        if create_scope_now:
            with self._open_first():
                pass

    def _open_first(self):
        if self._unique_name is not None:
            ctx = _variable_scope(self._unique_name, custom_getter=self._custom_getter)
        else:
            ctx = _variable_scope(None, default_name=self._name,
                                     custom_getter=self._custom_getter)
        return _Capture(self, ctx)

    def __call__(self, *args, **kwargs):
        if self._scope is None or not self._created:
            with self._open_first() if self._scope is None else \
                    _variable_scope(self._scope):
                out = self._func(*args, **kwargs)
            self._created = True
            return out
        with _variable_scope(self._scope, reuse=True):
            return self._func(*args, **kwargs)

    _created = False

    @property
    def name(self):
        return self._name

    @property
    def func(self):
        return self._func

    @property
    def variable_scope(self):
        """The `VariableScope` (None before the first call unless created now)."""
        return self._scope

    @property
    def variable_scope_name(self):
        return None if self._scope is None else self._scope.name

    def _collection(self, key):
        if self._scope is None:
            return []
        return get_default_graph().get_collection(key, self._scope.name + "/")

    @property
    def variables(self):
        """The global variables the template created."""
        return self._collection(GraphKeys.GLOBAL_VARIABLES)

    global_variables = variables

    @property
    def trainable_variables(self):
        return self._collection(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def local_variables(self):
        return self._collection(GraphKeys.LOCAL_VARIABLES)


class _Capture:
    """Enters a scope and records it on the template as it opens."""

    def __init__(self, template, ctx):
        self._t, self._ctx = template, ctx

    def __enter__(self):
        scope = self._ctx.__enter__()
        self._t._scope = scope
        return scope

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


def make_template(name_, func_, create_scope_now_=False, unique_name_=None,
                  custom_getter_=None, **kwargs):
    """Wraps `func_` so that every call shares the variables of the first.

    Variables must be made with `get_variable` (as in TensorFlow): the first call opens
    a variable scope named uniquely after `name_` (``name_``, then ``name__1`` for a second template of that name, as
    `variable_scope(None, default_name=name_)`) and creates them; later calls re-enter
    that scope with ``reuse=True``.

    Args:
      name_: the scope's base name.
      func_: the function; `kwargs` are bound to it (`functools.partial`).
      create_scope_now_: open the scope now instead of at the first call.
      unique_name_: use exactly this scope name.
      custom_getter_: a custom getter for the scope's variables.
    Returns:
      a `Template` (callable) with `variable_scope`, `variables`, `trainable_variables`.
    Raises:
      ValueError: `func_` is not callable; (at a later call) `func_` creating a variable
        the first call did not, as `get_variable` under reuse.
    """
    if kwargs:
        func_ = functools.partial(func_, **kwargs)
    return Template(name_, func_, create_scope_now=create_scope_now_,
                    unique_name=unique_name_, custom_getter=custom_getter_)
