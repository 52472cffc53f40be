"""`compile_step`: a pruned subgraph becomes one jitted JAX function.

Used by every executor: the Session's one-cluster fast path, each XLA cluster of a
segmented (multi-device or host-op) step, and the parameter-server plan's local
segments. The compiled function takes and returns flat tuples,
``(*written_vars, *read_vars, *inputs[, rng_counter]) -> (*outputs, *new_written)``:
flat arguments keep the per-call dispatch cost close to a bare `jax.jit` call. The
buffers of the variables it writes may be donated (updated in place).

64-bit types. A step is traced inside mylib's 64-bit scope (`mylib.core.x64`), so the
int64 and float64 tensors a graph asks for stay 64-bit. Where the traced program holds
no 64-bit value in its loops and conditionals and no 64-bit feed (`CompiledStep.x32`),
the caller may run it outside that scope: XLA then gets the program JAX would build
for 32-bit code, whose loop counters and index arithmetic (added by JAX when it lowers
`lax.scan`, `while_loop`, gathers) are int32, not int64. The values are the same.
"""

from __future__ import annotations

import jax
import jax.extend.core
import numpy as np

from mylib.core.lowering import LoweringContext, interpret, prepare
from mylib.core.x64 import x64

__all__ = ["CompiledStep", "compile_step", "build_step"]


def build_step(ops, feeds, fetch_tensors, ro_keys, rw_keys, seed_base, info, rng_ops=()):
    """Returns ``step(rw_vals, ro_vals, feed_vals, counter) -> (fetches, written)``.

    `counter` is a uint32 vector of per-op run counts, one per name in `rng_ops` (empty
    for the discovery trace). `info` collects what tracing learns (written keys, status
    keys, random ops, static fetch values that cannot leave XLA such as strings).
    """
    prepared = prepare(ops, feeds)

    def step(rw_vals, ro_vals, feed_vals, counter):
        state = dict(zip(rw_keys, rw_vals))
        state.update(zip(ro_keys, ro_vals))
        ctx = LoweringContext(state, counter, seed_base, rng_ops)
        env = dict(zip(feeds, feed_vals))
        interpret(prepared, env, ctx)
        fetches = []
        for i, t in enumerate(fetch_tensors):
            v = env[t]
            if isinstance(v, np.ndarray) and v.dtype == object:
                info["static"][i] = v
                fetches.append(None)
            else:
                fetches.append(v)
        info["written"] = list(ctx.written)
        info["status_keys"] = list(ctx.status_keys)
        info["uses_rng"] = ctx.uses_rng
        info["rng_ops"] = list(ctx.rng_ops)
        written = {k: ctx.state[k] for k in ctx.written}
        return fetches, written

    return step


class CompiledStep:
    """What `compile_step` returns.

    Attributes:
      fn: the jitted flat function (see the module docstring).
      step: the same function un-jitted (for k-step loops), or None.
      rw_keys / ro_keys: the variables it reads and writes / only reads, in argument order.
      written_keys: the variables it writes, in result order (a superset of `rw_keys`:
        first writes of uninitialized variables are not arguments).
      static: ``{output index: value}`` for outputs that cannot leave XLA (strings).
      status_keys: variables whose initialization state the step depends on.
      uses_rng: whether it takes a random-stream counter; rng_ops: its random ops.
    """

    __slots__ = ("fn", "step", "rw_keys", "ro_keys", "written_keys", "static",
                 "status_keys", "uses_rng", "rng_ops", "x32")


# Primitives whose lowering follows their operands' dtypes alone (no constants made at
# lowering time): a 64-bit value may pass through them in a program lowered outside
# the 64-bit scope.
_PLAIN_64 = frozenset({
    "add", "sub", "mul", "neg", "max", "min", "abs", "sign", "convert_element_type",
    "copy", "copy_p", "eq", "ne", "lt", "le", "gt", "ge", "select_n", "and", "or", "not",
    "broadcast_in_dim", "reshape", "squeeze", "expand_dims", "stop_gradient",
})
_CALLS = frozenset({"pjit", "jit", "closed_call", "core_call", "custom_jvp_call",
                    "custom_vjp_call", "custom_vjp_call_jaxpr", "remat", "checkpoint"})


def _is_64(aval):
    """Whether `aval` (anything with a dtype) is int64, uint64, float64 or complex128."""
    dt = getattr(aval, "dtype", None)
    if dt is None:
        return False
    try:
        dt = np.dtype(dt)
    except TypeError:  # JAX's extended dtypes (random keys)
        return False
    return dt.kind in "iuf" and dt.itemsize == 8 or dt.kind == "c" and dt.itemsize == 16


def _sub_jaxprs(eqn):
    for v in eqn.params.values():
        for x in (v if isinstance(v, (tuple, list)) else (v,)):
            if isinstance(x, jax.extend.core.ClosedJaxpr):
                yield x.jaxpr
            elif isinstance(x, jax.extend.core.Jaxpr):
                yield x


def _any_64(jaxpr):
    for v in list(jaxpr.invars) + list(jaxpr.outvars) + list(jaxpr.constvars):
        if _is_64(getattr(v, "aval", None)):
            return True
    for e in jaxpr.eqns:
        if any(_is_64(getattr(v, "aval", None)) for v in list(e.invars) + list(e.outvars)):
            return True
        if any(_any_64(j) for j in _sub_jaxprs(e)):
            return True
    return False


def _live_eqns(jaxpr):
    """The equations of `jaxpr` that its outputs (or effects) depend on: ops interpreted
    but unused (the initial values of already initialized variables) drop out, as
    XLA drops them."""
    used = {v for v in jaxpr.outvars if isinstance(v, jax.extend.core.Var)}
    live = []
    for e in reversed(jaxpr.eqns):
        if e.effects or any(o in used for o in e.outvars):
            live.append(e)
            used.update(v for v in e.invars if isinstance(v, jax.extend.core.Var))
    return live[::-1]


def lowers_in_32_bits(jaxpr):
    """Whether a traced program can be lowered outside the 64-bit scope with the same
    meaning: its 64-bit values (an int64 step counter, say) come from its arguments
    (device arrays, which keep their dtype) and scalar literals (lowered with their
    abstract type), and only pass through plain element-wise ops at the top level (or
    inside plain calls). No 64-bit constant array (JAX would make it 32-bit outside
    the scope), no 64-bit value inside a loop or conditional or through an op whose
    lowering makes constants of the default integer or float type."""
    if any(_is_64(getattr(v, "aval", None)) for v in jaxpr.constvars):
        return False
    if any(isinstance(v, jax.extend.core.Literal) and _is_64(v.aval)
           for v in jaxpr.outvars):
        return False
    for e in _live_eqns(jaxpr):
        subs = list(_sub_jaxprs(e))
        name = e.primitive.name
        if name in _CALLS:
            if not all(lowers_in_32_bits(j) for j in subs):
                return False
            continue
        if subs and any(_any_64(j) for j in subs):
            return False
        touches = any(_is_64(getattr(v, "aval", None))
                      for v in list(e.invars) + list(e.outvars))
        if touches and name not in _PLAIN_64:
            return False
    return True


def _spec(v):
    return jax.ShapeDtypeStruct(np.shape(v), v.dtype if hasattr(v, "dtype")
                                else np.asarray(v).dtype)


def compile_step(ops, inputs, outputs, values, seed_base, input_values, *, donate=True,
                 constrain=None):
    """Compiles the pruned `ops` computing `outputs` from `inputs`.

    Args:
      ops: the pruned ops; inputs: the tensors fed in (feeds, or a cluster's cut edges);
      outputs: the tensors returned.
      values: the variable values (a mapping, read for shapes and dtypes only).
      seed_base: the base seed of unseeded random ops.
      input_values: example values of `inputs` (their shapes and dtypes are used).
      donate: donate the buffers of the variables it writes.
      constrain: optional traced function applied to each new variable value (a
        strategy's layout).
    Returns:
      A `CompiledStep`.
    Raises:
      FailedPreconditionError: the step reads an uninitialized variable (raised by a
        discovery trace on abstract values, before any state changes).
    """
    touched = [op.attrs["shared_name"] for op in ops if op.type == "VarHandleOp"]
    in_keys = [k for k in touched if k in values]
    inputs, outputs = list(inputs), list(outputs)
    info = {"static": {}, "written": [], "status_keys": [], "uses_rng": False}
    # Discovery trace (abstract values): which variables the step writes, whether it
    # depends on initialization state, which random ops it runs.
    probe = build_step(ops, inputs, outputs, in_keys, [], seed_base, info)
    var_specs = [jax.ShapeDtypeStruct(values[k].shape, values[k].dtype) for k in in_keys]
    in_specs = [_spec(v) for v in input_values]
    with x64():
        traced = jax.make_jaxpr(probe)([], var_specs, in_specs, np.zeros(0, np.uint32))
    written = set(info["written"])
    cs = CompiledStep()
    cs.rw_keys = [k for k in in_keys if k in written]
    cs.ro_keys = [k for k in in_keys if k not in written]
    cs.written_keys = tuple(info["written"])
    cs.static = dict(info["static"])
    cs.status_keys = tuple(info["status_keys"])
    cs.uses_rng = bool(info["uses_rng"])
    cs.rng_ops = tuple(info.get("rng_ops", ()))
    cs.x32 = not any(_is_64(v) for v in in_specs) and lowers_in_32_bits(traced.jaxpr)
    step = build_step(ops, inputs, outputs, cs.ro_keys, cs.rw_keys, seed_base,
                      {"static": {}, "written": [], "status_keys": [], "uses_rng": False},
                      cs.rng_ops)
    n_rw, n_ro, n_in = len(cs.rw_keys), len(cs.ro_keys), len(inputs)
    written_keys, uses_rng = cs.written_keys, cs.uses_rng
    fix = constrain or (lambda v: v)

    def flat_step(*args):
        counter = args[n_rw + n_ro + n_in] if uses_rng else ()
        with x64():  # traced in the 64-bit scope even when lowered outside it
            fetches, new = step(list(args[:n_rw]), list(args[n_rw:n_rw + n_ro]),
                                list(args[n_rw + n_ro:n_rw + n_ro + n_in]), counter)
            return (*fetches, *[fix(new[k]) for k in written_keys])

    cs.step = flat_step
    cs.fn = jax.jit(flat_step, donate_argnums=tuple(range(n_rw)) if donate else ())
    return cs
