"""`GradientTape` in graph mode, as TensorFlow 1.x's ``tf.GradientTape`` inside a graph:
the tape records the ops created inside its ``with`` block, and `gradient` adds the
gradient ops (through `mylib.gradients`) for the recorded part of the graph only.

Example::

    x = ml.placeholder(ml.float32, [None, 3])
    w = ml.Variable(ml.zeros([3, 1]))
    with ml.GradientTape() as tape:
        loss = ml.reduce_mean(ml.square(ml.matmul(x, w) - y))
    (dw,) = tape.gradient(loss, [w])      # a Tensor; run it in a Session
"""

from __future__ import annotations

from mylib.core.gradients import gradients
from mylib.core.graph import Tensor, get_default_graph
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import constant_ops
from mylib.core.variables import Variable

__all__ = ["GradientTape", "UnconnectedGradients"]


class UnconnectedGradients:
    """What `GradientTape.gradient` returns for a source the target does not depend on."""

    NONE = "none"
    ZERO = "zero"


_READ_OPS = ("ReadVariableOp", "ResourceGather", "ReadOrInitialValue")


def _flatten(struct):
    if isinstance(struct, dict):
        return [x for k in sorted(struct) for x in _flatten(struct[k])]
    if isinstance(struct, (list, tuple)):
        return [x for s in struct for x in _flatten(s)]
    return [struct]


def _pack(struct, flat):
    it = iter(flat)

    def rec(s):
        if isinstance(s, dict):
            vals = {k: rec(s[k]) for k in sorted(s)}
            return type(s)((k, vals[k]) for k in s)
        if isinstance(s, tuple) and hasattr(s, "_fields"):
            return type(s)(*[rec(x) for x in s])
        if isinstance(s, (list, tuple)):
            return type(s)(rec(x) for x in s)
        return next(it)

    return rec(struct)


class GradientTape:
    """Records the ops created in its context so `gradient` can differentiate them.

    Args:
      persistent: allow several `gradient` calls (else the second raises RuntimeError).
      watch_accessed_variables: trainable variables read inside the context are watched
        automatically; with False only what `watch` names is.

    Semantics (TensorFlow's): gradients flow only through ops created while the tape was
    recording, back to the watched tensors and variables; a tensor created outside the
    tape (a placeholder, a value computed before it) is a constant unless watched. A
    source that is not watched gets None (or zeros with
    ``unconnected_gradients="zero"``).

    Differs from TensorFlow: this is graph mode only (the gradients are graph tensors to
    run in a `Session`); `stop_recording` pauses recording; jacobians are not provided.
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._graph = None
        self._spans = []  # [start, end) op ids recorded (end None while recording)
        self._watched_tensors = []
        self._watched_vars = {}
        self._used = False

    # ------------------------------------------------------------ recording
    def __enter__(self):
        g = get_default_graph()
        if self._graph is None:
            self._graph = g
        elif g is not self._graph:
            raise ValueError("GradientTape re-entered in another graph")
        self._spans.append([g._next_id, None])
        return self

    def __exit__(self, *exc):
        self._spans[-1][1] = self._graph._next_id

    def _recording(self):
        return bool(self._spans) and self._spans[-1][1] is None

    class _Pause:
        def __init__(self, tape):
            self._tape = tape

        def __enter__(self):
            t = self._tape
            if not t._recording():
                raise ValueError("Tape.stop_recording() called while the tape is not "
                                 "recording")
            t._spans[-1][1] = t._graph._next_id

        def __exit__(self, *exc):
            self._tape._spans.append([self._tape._graph._next_id, None])

    def stop_recording(self):
        """A context in which ops are not recorded."""
        return GradientTape._Pause(self)

    def reset(self):
        """Forgets what was recorded and watched (recording goes on if inside)."""
        rec = self._recording()
        self._spans = [[self._graph._next_id, None]] if rec else []
        self._watched_tensors, self._watched_vars = [], {}

    def watch(self, tensor):
        """Watches a `Tensor`, a `Variable`, or a nested list of them.

        Raises:
          ValueError: a non-float tensor (it can have no gradient).
        """
        for t in _flatten(tensor):
            if isinstance(t, Variable) or hasattr(t, "handle"):
                self._watched_vars[t._key] = t
                continue
            t = convert_to_tensor(t)
            if not t.dtype.is_floating and not t.dtype.is_complex:
                raise ValueError(f"GradientTape.watch: {t.name} has dtype {t.dtype.name}; "
                                 "only float or complex tensors can be watched")
            self._watched_tensors.append(t)

    def watched_variables(self):
        """The variables watched (explicitly or by being read on the tape), by creation."""
        out = dict(self._watched_vars)
        if self._watch_accessed:
            for v in self._accessed_variables():
                out.setdefault(v._key, v)
        return list(out.values())

    def _recorded(self, op):
        return any(s <= op._id < (e if e is not None else self._graph._next_id)
                   for s, e in self._spans)

    def _recorded_ops(self):
        # Op ids grow monotonically; the graph's op list may drop freed (collectable) ops.
        for op in self._graph.get_operations():
            if self._recorded(op):
                yield op

    def _accessed_variables(self):
        by_handle = {}
        for v in self._graph._variables.values():
            if v.trainable:
                by_handle[v.handle] = v
        seen = {}
        for op in self._recorded_ops():
            if op.type in _READ_OPS and op.inputs and op.inputs[0] in by_handle:
                v = by_handle[op.inputs[0]]
                seen.setdefault(v._key, v)
        return list(seen.values())

    # ------------------------------------------------------------ gradients
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """Adds the gradient ops of `target` with respect to `sources`.

        Args:
          target: a `Tensor` or (nested) list of tensors (their sum is differentiated).
          sources: a `Variable`, `Tensor`, or nested list/tuple/dict of them.
          output_gradients: optional gradients of the targets (same structure).
          unconnected_gradients: ``"none"`` or ``"zero"``.
        Returns:
          Gradients in the structure of `sources`: `Tensor`s, `IndexedSlices` for
          gathered variables, or None.
        Raises:
          RuntimeError: a second call on a non-persistent tape.
        """
        if self._graph is None:
            raise RuntimeError("GradientTape.gradient called on a tape that recorded "
                               "nothing: use it as `with ml.GradientTape() as tape:`")
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute "
                               "one set of gradients (or jacobians)")
        self._used = True
        flat_sources = _flatten(sources)
        targets = [convert_to_tensor(t) for t in _flatten(target)]
        grad_ys = None if output_gradients is None else _flatten(output_gradients)
        watched_vars = {v._key for v in self.watched_variables()}
        watched_t = set(self._watched_tensors)
        # Inputs of recorded ops that come from outside the tape are constants, unless
        # watched (variables enter through their handles, which are never cut).
        stop = set()
        for op in self._recorded_ops():
            for t in op.inputs:
                if t in watched_t or t.op.type == "VarHandleOp" or self._recorded(t.op):
                    continue
                stop.add(t)
        active, idx = [], []
        for i, s in enumerate(flat_sources):
            if isinstance(s, Variable) or hasattr(s, "handle"):
                ok = s._key in watched_vars
            else:
                s = convert_to_tensor(s)
                ok = s in watched_t
            if ok:
                active.append(s)
                idx.append(i)
        out = [None] * len(flat_sources)
        if active:
            with self._graph.as_default():
                grads = gradients(targets, active, grad_ys=grad_ys,
                                  stop_gradients=list(stop),
                                  unconnected_gradients=unconnected_gradients)
            for i, gr in zip(idx, grads):
                out[i] = gr
        if unconnected_gradients == UnconnectedGradients.ZERO:
            with self._graph.as_default():
                for i, s in enumerate(flat_sources):
                    if out[i] is None:
                        base = s.value() if isinstance(s, Variable) else convert_to_tensor(s)
                        out[i] = constant_ops.zeros_like(base)
        if isinstance(sources, (Variable, Tensor)) or not isinstance(
                sources, (list, tuple, dict)):
            return out[0]
        return _pack(sources, out)
