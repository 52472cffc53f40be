"""The Keras session of each graph: where layer and model weights hold their values.

(`mylib.layers.backend` is the Keras-facing module over this one.)

Every graph that layers build into gets one `Session` (created on first use, as Keras's
TF1 backend did); `ensure_initialized` runs the initializers of the variables it has
not initialized yet, so weights are initialized once, when their model is built.
"""

from __future__ import annotations

import weakref

import jax.numpy as jnp
import numpy as np

from mylib.core.graph import Tensor, get_default_graph, get_default_session, reset_default_graph
from mylib.core.variables import (Variable, register_eager_writer, register_value_reader,
                                  variables_initializer)
from mylib.core.x64 import with_x64
from mylib.runtime.session import Session
from mylib.runtime.variable_store import host_value

_sessions: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def get_session(graph=None):
    """The Keras session of `graph` (default: the default graph)."""
    g = graph if graph is not None else get_default_graph()
    sess = _sessions.get(g)
    if sess is None or sess.closed:
        sess = _sessions[g] = Session(graph=g)
    return sess


def set_session(session):
    """Makes `session` the Keras session of its graph (e.g. to share one you created)."""
    _sessions[session.graph] = session


def clear_session():
    """Closes the default graph's Keras session and installs a fresh default graph.
    (`mylib.layers.backend.clear_session` also forgets the graph's layer names.)"""
    g = get_default_graph()
    sess = _sessions.pop(g, None)
    if sess is not None:
        sess.close()
    reset_default_graph()


def _shards(v):
    parts = getattr(v, "variables", None)
    return parts if isinstance(parts, list) else None


def _expand(variables):
    out = []
    for v in variables:
        out.extend(_shards(v) or [v])
    return out


def ensure_initialized(variables):
    """Runs the initializers of those `variables` that their session has no value for."""
    variables = _expand(variables)
    by_graph = {}
    for v in variables:
        by_graph.setdefault(v.graph, []).append(v)
    for g, vs in by_graph.items():
        sess = get_session(g)
        todo = [v for v in vs if sess.variable_value(v._key) is None]
        if todo:
            with g.as_default(), g.collectable():
                op = variables_initializer(todo, name="keras_init")
            # A one-shot callable: its plan leaves the session's cache with it, so
            # the initializer op is freed (and with it nothing the model needs).
            sess.make_callable(op)()


def _read_held_value(v):
    """`v`'s value as numpy: from the default session when it is of `v`'s graph and
    holds a value for it (TensorFlow 1 code reading inside its session), else from
    the graph's Keras session for weights that Keras layers or optimizers made (their
    initializers run first if needed, as `get_weights` does); None otherwise."""
    parts = _shards(v) or [v]
    sess = get_default_session()
    if sess is not None and not sess.closed and sess.graph is v.graph:
        vals = [sess.variable_value(p._key) for p in parts]
        if all(a is not None for a in vals):
            vals = [np.array(host_value(a)) for a in vals]
            return vals[0] if len(vals) == 1 else np.concatenate(vals, axis=0)
    if hasattr(v, "_keras_trainable") or getattr(v, "_keras_eager", False) or \
            v.graph in _sessions:
        return get_values([v])[0]
    return None


register_value_reader(_read_held_value)


def _is_keras_variable(v):
    """A weight made by a Keras layer's `add_weight` (built collectable, unlike those of
    TensorFlow 1's layer functions), or a variable an optimizer marked `_keras_eager`."""
    if getattr(v, "_keras_eager", False):
        return True
    return hasattr(v, "_keras_trainable") and getattr(v.handle.op, "_collectable", False)


def _concrete(value):
    """`value` as a numpy array, or None when it is symbolic (a graph `Tensor`, a
    variable whose value no session holds) and so must be written by a graph op."""
    if isinstance(value, Variable):
        if not _is_keras_variable(value):
            return None
        return get_values([value])[0]
    if isinstance(value, Tensor) or hasattr(value, "op") or hasattr(value, "indices"):
        return None
    try:
        a = np.asarray(value)
    except (TypeError, ValueError):
        return None
    return None if a.dtype == object else a


def _write_now(v, kind, value):
    """Keras 3's eager `assign` / `assign_add` / `assign_sub` on a Keras variable: done
    in its graph's Keras session when no step is being built (no layer call, no
    `train_step` trace: the graph is not collecting ops in this thread, and the default
    graph is the variable's own), no TensorFlow 1 session of the graph is the default
    one, and (for an optimizer's variables) the graph has a Keras session. Returns the
    variable, or None to leave the write to a graph op."""
    if not _is_keras_variable(v) or _shards(v) is not None:
        return None
    g = v.graph
    if g._state.collectable or get_default_graph() is not g:
        return None
    if not hasattr(v, "_keras_trainable") and g not in _sessions:
        return None  # an optimizer of TensorFlow 1 code: no Keras session holds values
    sess = get_default_session()
    if sess is not None and not sess.closed and sess.graph is g and sess is not _sessions.get(g):
        return None
    a = _concrete(value)
    if a is None:
        return None
    want = tuple(v.shape.as_list())
    if kind == "assign":
        if a.shape != want:
            raise ValueError(
                f"The shape of the target variable and the shape of the target value in "
                f"`variable.assign(value)` must match. variable.shape={want}, Received: "
                f"value.shape={a.shape}. Target variable: {v.name}")
        new = a
    else:
        cur = get_values([v])[0]
        new = cur + a if kind == "assign_add" else cur - a
        if new.shape != want:
            raise ValueError(f"`variable.{kind}(value)`: a value of shape {a.shape} does not "
                             f"broadcast to the shape {want} of variable '{v.name}'.")
    ensure_initialized([v])
    set_values([v], [np.asarray(new).astype(v.dtype.np)], owner=f"Variable '{v.name}'")
    return v


register_eager_writer(_write_now)


def get_values(variables):
    """The values of `variables` as numpy arrays (initializing them first if needed)."""
    ensure_initialized(variables)

    out = []
    for v in variables:
        parts = _shards(v) or [v]
        vals = [np.array(host_value(get_session(p.graph).variable_value(p._key)))
                for p in parts]
        out.append(vals[0] if len(vals) == 1 else np.concatenate(vals, axis=0))
    return out


@with_x64
def set_values(variables, values, owner="Model"):
    """Sets `variables` to `values` (a list of arrays, shapes checked first: on a
    mismatch nothing is changed)."""
    values = list(values)
    if len(values) != len(variables):
        raise ValueError(f"{owner}: you called `set_weights(weights)` with a list of "
                         f"{len(values)} arrays, but it has {len(variables)} weights "
                         f"({[v.name for v in variables]}).")
    arrays = []
    for v, a in zip(variables, values):
        a = np.asarray(a)
        want = tuple(v.shape.as_list())
        if a.shape != want:
            raise ValueError(f"{owner}: weight shape mismatch for '{v.name}': expected "
                             f"shape {want}, received an array of shape {a.shape}.")
        arrays.append(jnp.asarray(a, dtype=v.dtype.np))
    by_session = {}  # one assignment per session: all values land together
    for v, a in zip(variables, arrays):
        parts = _shards(v)
        if parts is None:
            by_session.setdefault(get_session(v.graph), {})[v._key] = a
            continue
        off = 0
        for p in parts:  # a sharded variable: each shard takes its rows
            rows = p.shape.as_list()[0]
            by_session.setdefault(get_session(p.graph), {})[p._key] = a[off:off + rows]
            off += rows
    for sess, vals in by_session.items():
        sess.assign_variables(vals)
