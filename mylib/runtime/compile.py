"""`compile_step`: a pruned subgraph becomes one jitted JAX function.

Used by every executor: the Session's one-cluster fast path, each XLA cluster of a
segmented (multi-device or host-op) step, and the parameter-server plan's local
segments. The compiled function takes and returns flat tuples,
``(*written_vars, *read_vars, *inputs[, rng_counter]) -> (*outputs, *new_written)``:
flat arguments keep the per-call dispatch cost close to a bare `jax.jit` call. The
buffers of the variables it writes may be donated (updated in place).
"""

from __future__ import annotations

import jax
import numpy as np

from mylib.core.lowering import LoweringContext, interpret, prepare

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
                 "status_keys", "uses_rng", "rng_ops")


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
    jax.eval_shape(probe, [], var_specs, [_spec(v) for v in input_values],
                   np.zeros(0, np.uint32))
    written = set(info["written"])
    cs = CompiledStep()
    cs.rw_keys = [k for k in in_keys if k in written]
    cs.ro_keys = [k for k in in_keys if k not in written]
    cs.written_keys = tuple(info["written"])
    cs.static = dict(info["static"])
    cs.status_keys = tuple(info["status_keys"])
    cs.uses_rng = bool(info["uses_rng"])
    cs.rng_ops = tuple(info.get("rng_ops", ()))
    step = build_step(ops, inputs, outputs, cs.ro_keys, cs.rw_keys, seed_base,
                      {"static": {}, "written": [], "status_keys": [], "uses_rng": False},
                      cs.rng_ops)
    n_rw, n_ro, n_in = len(cs.rw_keys), len(cs.ro_keys), len(inputs)
    written_keys, uses_rng = cs.written_keys, cs.uses_rng
    fix = constrain or (lambda v: v)

    def flat_step(*args):
        counter = args[n_rw + n_ro + n_in] if uses_rng else ()
        fetches, new = step(list(args[:n_rw]), list(args[n_rw:n_rw + n_ro]),
                            list(args[n_rw + n_ro:n_rw + n_ro + n_in]), counter)
        return (*fetches, *[fix(new[k]) for k in written_keys])

    cs.step = flat_step
    cs.fn = jax.jit(flat_step, donate_argnums=tuple(range(n_rw)) if donate else ())
    return cs
