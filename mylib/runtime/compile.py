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

import collections
import warnings

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np

from mylib import errors
from mylib.core.lowering import LoweringContext, index_error_message, interpret, prepare
from mylib.core.x64 import x64

__all__ = ["CompiledStep", "compile_step", "build_step", "SpecializedStep", "value_key",
           "raise_failed_check"]


def build_step(ops, feeds, fetch_tensors, ro_keys, rw_keys, seed_base, info, rng_ops=(),
               consts=None, static_outputs=False, index_checks=True):
    """Returns ``step(rw_vals, ro_vals, feed_vals, counter) -> (fetches, written)``.

    `counter` is a uint32 vector of per-op run counts, one per name in `rng_ops` (empty
    for the discovery trace). `info` collects what tracing learns (written keys, status
    keys, random ops, static fetch values that cannot leave XLA such as strings).
    `consts` maps input tensors to the numpy values the step is compiled for (inputs
    that are compile-time constants, not arguments). With `static_outputs`, fetches
    whose values are numpy while tracing (small shape-like values: a `shape`, shape
    arithmetic) are recorded in ``info["static"]`` too, so that a later segment gets
    them as constants.
    """
    all_inputs = list(feeds) + list(consts or ())
    prepared = prepare(ops, all_inputs)
    const_items = list((consts or {}).items())
    input_at = {t: i for i, t in enumerate(feeds)}

    def step(rw_vals, ro_vals, feed_vals, counter):
        state = dict(zip(rw_keys, rw_vals))
        state.update(zip(ro_keys, ro_vals))
        initial = dict(state)
        ctx = LoweringContext(state, counter, seed_base, rng_ops)
        ctx.inputs = input_at
        ctx.index_checks = index_checks
        env = dict(zip(feeds, feed_vals))
        env.update(const_items)
        interpret(prepared, env, ctx)
        fetches = []
        for i, t in enumerate(fetch_tensors):
            v = env[t]
            if isinstance(v, np.ndarray) and v.dtype == object or \
                    static_outputs and _is_static_value(v):
                info["static"][i] = v
                fetches.append(None)
            else:
                fetches.append(v)
        info["written"] = list(ctx.written)
        info["status_keys"] = list(ctx.status_keys)
        info["uses_rng"] = ctx.uses_rng
        info["rng_ops"] = list(ctx.rng_ops)
        written = {k: ctx.state[k] for k in ctx.written}
        info["checks"] = [(c[0], c[1], int(np.shape(c[3])[0]), len(c[5]))
                          for c in ctx.checks]
        info["input_checks"] = list(ctx.input_checks)
        checks = _check_outputs(ctx.checks)
        if checks:
            # An index out of range fails the step: every variable keeps the value it
            # had (XLA fuses the select into the update that computes the new value).
            ok = ~jnp.any(checks[0])
            # Row updates already gated by every check (`gate_rows`) need no select.
            n = len(ctx.checks)
            written = {k: jnp.where(ok, v, initial[k])
                       if k in initial and np.shape(initial[k]) == np.shape(v)
                       and ctx.gated.get(k) != n else v
                       for k, v in written.items()}
        return fetches + checks, written

    return step


def _check_outputs(checks):
    """The step's index-check outputs, one row per check (int32, padded with zeros):
    ``[any_bad [m], position of the first bad index [m, rank], that index [m, k],
    the bounds [m, k]]``; [] without checks."""
    if not checks:
        return []

    def stack(col):
        n = max(int(np.shape(c[col])[0]) for c in checks)
        return jnp.stack([jnp.pad(jnp.asarray(c[col]).astype(jnp.int32),
                                  (0, n - int(np.shape(c[col])[0]))) for c in checks])

    return [jnp.stack([c[2] for c in checks]), stack(3), stack(4), stack(5)]


def raise_failed_check(checks, outs):
    """Raises InvalidArgumentError, naming the op, for the first failed index check of
    a step (`CompiledStep.checks`; `outs`: its check outputs); returns when none
    failed. Reading the outputs waits for the step."""
    bad = np.asarray(outs[0])
    if not bad.any():
        return
    i = int(np.argmax(bad))
    op, nd, rank, k = checks[i]
    pos = np.asarray(outs[1])[i][:rank]
    row = np.asarray(outs[2])[i][:k]
    bounds = tuple(int(b) for b in np.asarray(outs[3])[i][:k])
    raise errors.InvalidArgumentError(index_error_message(pos, row, bounds, nd), op=op)


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
      static_inputs: indices of the inputs compiled in as constants (not arguments of
        `fn`), sorted.
      checks / n_checks: the step's index checks (``(op, nd, rank, bound count)``)
        and how many outputs they add (0, or 4 right after the fetches:
        pass them to `raise_failed_check`). A failed check leaves every variable
        value the step returns as it was.
      input_checks: index checks of inputs (positions in `inputs`), to run before
        the step with `mylib.core.lowering.check_input_indices`.
    """

    __slots__ = ("fn", "step", "rw_keys", "ro_keys", "written_keys", "static",
                 "status_keys", "uses_rng", "rng_ops", "x32", "static_inputs", "checks",
                 "n_checks", "input_checks")


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
                 constrain=None, static_inputs=(), static_outputs=False, index_checks=True):
    """Compiles the pruned `ops` computing `outputs` from `inputs`.

    Inputs that a size depends on (TensorFlow 1 programs compute shapes from fed
    values: ``zeros([n])``, ``reshape(x, [batch, -1])``, ``range(n)``) become
    compile-time constants: when tracing fails at an op whose integer inputs are
    computed from integer inputs of the step, those inputs are made static (their
    values in `input_values` are baked into the program) and the step is traced
    again. The result's `static_inputs` names them; its `fn` then takes only the other
    inputs, and holds for those values only (see `SpecializedStep`).

    Args:
      ops: the pruned ops; inputs: the tensors fed in (feeds, or a cluster's cut edges);
      outputs: the tensors returned.
      values: the variable values (a mapping, read for shapes and dtypes only).
      seed_base: the base seed of unseeded random ops.
      input_values: example values of `inputs` (their shapes and dtypes are used; the
        values themselves for static inputs).
      donate: donate the buffers of the variables it writes.
      constrain: optional traced function applied to each new variable value (a
        strategy's layout).
      static_inputs: indices of `inputs` known to be needed as constants.
      static_outputs: record outputs that are numpy while tracing (shape-like values)
        in `static`, for a later segment to take them as constants.
      index_checks: check the indices of gathers and scatters (`OpDef.index_check`);
        off for callers that never wait on the step (no check outputs, no selects).
    Returns:
      A `CompiledStep`.
    Raises:
      FailedPreconditionError: the step reads an uninitialized variable (raised by a
        discovery trace on abstract values, before any state changes).
      InvalidArgumentError: an op cannot be traced (for a static input, with its value:
        a fed size that does not fit, say).
    """
    static = set(static_inputs)
    while True:
        try:
            return _compile_step(ops, inputs, outputs, values, seed_base, input_values,
                                 donate, constrain, tuple(sorted(static)), static_outputs,
                                 index_checks)
        except errors.OpError as e:
            more = _needs_static(e, ops, inputs, input_values, static)
            if not more:
                raise
            static |= more


# Ops whose output is known while tracing whatever their input's values: the walk
# back from a size to the inputs it is computed from stops at them.
_SHAPE_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank"})
# Inputs larger than this stay arguments (a size is computed from a few numbers).
_MAX_STATIC_ELEMENTS = 4096


def _int_like(dtype):
    return dtype.is_integer or dtype.is_bool


def _needs_static(err, ops, inputs, input_values, static):
    """Indices of `inputs` (not in `static`) that the op `err` is about computes its
    integer inputs from: those to make compile-time constants before tracing again.
    Empty where there are none (the error is then the user's to see)."""
    op = getattr(err, "op", None)
    opset = set(ops)
    if op is None or op not in opset:
        return set()
    at = {t: i for i, t in enumerate(inputs)}
    found, seen = set(), set()
    stack = [t for t in op.inputs if _int_like(t.dtype)]
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        i = at.get(t)
        if i is not None:
            if i not in static and _int_like(t.dtype) and \
                    np.size(input_values[i]) <= _MAX_STATIC_ELEMENTS:
                found.add(i)
            continue
        if t.op.type in _SHAPE_OPS or t.op not in opset:
            continue
        stack.extend(t.op.inputs)
    return found


def _is_static_value(v):
    """Whether a traced value is a small numeric numpy value (known while tracing)."""
    return isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind in "biuf" and \
        v.size <= _MAX_STATIC_ELEMENTS


def value_key(v):
    """A hashable key of an array's value (dtype, shape and bytes)."""
    a = np.asarray(v)
    return (a.dtype.str, a.shape, a.tobytes())


def _compile_step(ops, inputs, outputs, values, seed_base, input_values, donate, constrain,
                  static, static_outputs, index_checks):
    touched = [op.attrs["shared_name"] for op in ops if op.type == "VarHandleOp"]
    in_keys = [k for k in touched if k in values]
    inputs, outputs = list(inputs), list(outputs)
    consts = {inputs[i]: np.asarray(input_values[i]) for i in static}
    dyn = [i for i in range(len(inputs)) if i not in static]
    inputs = [inputs[i] for i in dyn]
    input_values = [input_values[i] for i in dyn]
    info = {"static": {}, "written": [], "status_keys": [], "uses_rng": False}
    # Discovery trace (abstract values): which variables the step writes, whether it
    # depends on initialization state, which random ops it runs.
    probe = build_step(ops, inputs, outputs, in_keys, [], seed_base, info, consts=consts,
                       static_outputs=static_outputs, index_checks=index_checks)
    var_specs = [jax.ShapeDtypeStruct(values[k].shape, values[k].dtype) for k in in_keys]
    in_specs = [_spec(v) for v in input_values]
    with x64():
        traced = jax.make_jaxpr(probe)([], var_specs, in_specs, np.zeros(0, np.uint32))
    written = set(info["written"])
    cs = CompiledStep()
    cs.static_inputs = static
    cs.rw_keys = [k for k in in_keys if k in written]
    cs.ro_keys = [k for k in in_keys if k not in written]
    cs.written_keys = tuple(info["written"])
    cs.static = dict(info["static"])
    cs.status_keys = tuple(info["status_keys"])
    cs.uses_rng = bool(info["uses_rng"])
    cs.rng_ops = tuple(info.get("rng_ops", ()))
    cs.checks = tuple(info.get("checks", ()))
    cs.n_checks = 4 if cs.checks else 0
    # Positions among all of `inputs` (the trace saw only the non-static ones).
    cs.input_checks = tuple((op, dyn[i], shape, bounds, nd)
                            for op, i, shape, bounds, nd in info.get("input_checks", ()))
    cs.x32 = not any(_is_64(v) for v in in_specs) and lowers_in_32_bits(traced.jaxpr)
    step = build_step(ops, inputs, outputs, cs.ro_keys, cs.rw_keys, seed_base,
                      {"static": {}, "written": [], "status_keys": [], "uses_rng": False},
                      cs.rng_ops, consts=consts, static_outputs=static_outputs,
                      index_checks=index_checks)
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


# How many programs a step specialized to the values of some inputs keeps (least
# recently used first out).
MAX_SPECIALIZATIONS = 32


def _layout(cs):
    return (tuple(cs.rw_keys), tuple(cs.ro_keys), tuple(cs.written_keys),
            tuple(cs.rng_ops), cs.uses_rng, tuple(sorted(cs.static)), cs.static_inputs,
            cs.checks, tuple((c[0], c[1], c[3], c[4]) for c in cs.input_checks))


class SpecializedStep:
    """A step whose static inputs (`CompiledStep.static_inputs`: sizes computed from
    fed values) are compile-time constants: one program per distinct value of them,
    compiled on first use and kept in a least-recently-used cache of
    `MAX_SPECIALIZATIONS` programs (TensorFlow computes such sizes at run time in one
    program; XLA needs them static). A cache that overflows warns once: a size that
    differs at every step recompiles at every step.

    Called like the `CompiledStep.fn` of a step without static inputs, with every input:
    ``(*written_vars, *read_vars, *inputs[, rng_counter])``.
    """

    def __init__(self, cs, recompile, offset, input_values, limit=None):
        """`cs`: the step compiled for `input_values`; `recompile(input_values)`
        compiles it for other values; `offset`: where the inputs start in the flat
        arguments."""
        self._static = cs.static_inputs
        self._skip = frozenset(offset + i for i in cs.static_inputs)
        self._recompile = recompile
        self._offset = offset
        self._n_in = len(input_values)
        self._layout = _layout(cs)
        self._limit = MAX_SPECIALIZATIONS if limit is None else limit
        self._warned = False
        self._programs = collections.OrderedDict()
        self._programs[tuple(value_key(input_values[i]) for i in self._static)] = cs.fn

    def __call__(self, *args):
        off = self._offset
        key = tuple(value_key(args[off + i]) for i in self._static)
        fn = self._programs.get(key)
        if fn is None:
            cs = self._recompile(list(args[off:off + self._n_in]))
            if _layout(cs) != self._layout:
                raise errors.UnimplementedError(
                    "a step compiled for another value of its fed sizes reads or writes "
                    "other variables or random streams; feed sizes that do not change "
                    "which state the step touches")
            fn = self._programs[key] = cs.fn
            if len(self._programs) > self._limit:
                self._programs.popitem(last=False)
                if not self._warned:
                    self._warned = True
                    warnings.warn(
                        f"a step with sizes computed from fed values was compiled for "
                        f"more than {self._limit} distinct values; each new value compiles "
                        "again (a size that changes at every step recompiles at every "
                        "step)", RuntimeWarning, stacklevel=2)
        else:
            self._programs.move_to_end(key)
        skip = self._skip
        return fn(*[a for j, a in enumerate(args) if j not in skip])
