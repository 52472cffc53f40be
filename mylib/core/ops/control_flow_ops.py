"""Functional control flow, as TensorFlow 2: `cond`, `case`, `while_loop`, `scan`,
`map_fn`.

Each op holds function graphs (`mylib.core.func_graph.FuncGraph`), named in its attrs,
and lowers to `lax.switch` / `lax.while_loop` / `lax.scan`, interpreting the function
graphs with the step interpreter.

Two forms of each op:

- **Stateless** (``StatelessIf``, ``StatelessCase``, ``StatelessWhile``,
  ``StatelessScan``): the functions only compute and read variables. Variable reads are
  hoisted: the op reads each captured variable in the enclosing graph and takes the
  value as an ordinary input, so the op is a pure `kernel` and the generic VJP op
  (``jax.vjp`` of the kernel) differentiates it with respect to every float input,
  variables included. A `while_loop` is differentiable only with `maximum_iterations`
  set: its gradient differentiates a twin kernel (``StatelessWhileMasked``) that runs a
  `lax.scan` of `maximum_iterations` masked steps.
- **Stateful** (``If``, ``Case``, ``While``, ``Scan``): a function assigns a variable or
  draws random numbers. The variables' values are threaded through the lax primitive
  (as extra operands or carry) and written back after it, so effects happen only on
  the branch taken and once per iteration, in order. These ops are not differentiable
  (gradients through them raise `UnimplementedError`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.compat_args import warn_ignored
from mylib.core.func_graph import (build_function, call_function, get_function,
                                   unify_captures, variable_key)
from mylib.core.graph import _user_frame, get_default_graph
from mylib.core.op_registry import OpDef, RegisterGradient, TensorSpec, convert_to_tensor
from mylib.core.ops import array_ops, constant_ops, state_ops
from mylib.core.ops.math_ops import equal
from mylib.core.tensor_shape import TensorShape, as_shape
from mylib.core.vjp import generic_vjp

_tree = jax.tree_util


def _where():
    fr = _user_frame()
    return f"\n  called at {fr[0]}:{fr[1]} in {fr[2]}" if fr else ""


def _fmt(shape):
    """``[2, ?]`` (``<unknown>`` for unknown rank), the form error messages use."""
    if shape.rank is None:
        return "<unknown>"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape.as_tuple()) + "]"


def _most_specific(a, b):
    """TF's most specific compatible shape: dims equal in both stay, others are None."""
    if a.rank is None or b.rank is None or a.rank != b.rank:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_tuple(), b.as_tuple())])


def _external_inputs(fgs):
    """Unifies the captures of `fgs`; returns (ext_tensors, var_inputs, var_keys, stateful):
    the non-resource captured tensors, then per captured variable either its value read
    in the enclosing graph (stateless form) or its handle (stateful form)."""
    external = unify_captures(fgs)
    stateful = any(fg.effectful_ops() for fg in fgs)
    ext = [t for t in external if t.dtype != _dtypes.resource]
    handles = [t for t in external if t.dtype == _dtypes.resource]
    keys = tuple(variable_key(h)[0] for h in handles)
    if stateful:
        var_inputs = handles
    else:
        var_inputs = [state_ops.read_variable_op(h) for h in handles]
    return ext, var_inputs, keys, stateful


def _state(var_keys, vals):
    return dict(zip(var_keys, vals))


class _Effects:
    """Collects, while lax traces the functions, which variables they assign."""

    def __init__(self):
        self.written = []

    def add(self, ctx):
        for k in ctx.written:
            if k not in self.written:
                self.written.append(k)

    def write_back(self, ctx, op, refs, var_keys, new_vals):
        by_key = {r.key: r for r in refs}
        for k, v in zip(var_keys, new_vals):
            if k in self.written:
                ctx.write_var(op, by_key[k], v)


def _read_all(ctx, op, refs):
    return [ctx.read_var(op, r) for r in refs]


def _salt(op, i=0):
    return (op._id * 16 + i) % (2 ** 31)


def _raise_stateful_grad(op, *grads):
    raise errors.UnimplementedError(
        "gradients through a control-flow op whose functions assign variables or draw "
        "random numbers are not supported; move the assignment out of the branch/loop "
        "body, or stop the gradient", op=op)


# ================================================================ cond / case
def _switch(index, names, args, var_vals, var_keys, parent=None, salt=0, effects=None):
    """lax.switch over function graphs `names`; returns (outputs, new variable values)."""
    fgs = [get_function(n) for n in names]
    out_dtypes = [t.dtype for t in fgs[0].outputs]
    stateful = effects is not None

    def branch(i, fg):
        def f(operands):
            a, vv = operands
            outs, c = call_function(fg, a, _state(var_keys, vv), parent, salt + i,
                                    out_dtypes=out_dtypes)
            if not stateful:
                return outs
            effects.add(c)
            return outs, [c.state[k] for k in var_keys]
        return f

    res = lax.switch(index, [branch(i, fg) for i, fg in enumerate(fgs)],
                     (list(args), list(var_vals)))
    return (res, None) if not stateful else res


def _if_index(pred):
    return jnp.where(jnp.reshape(pred, ()), 0, 1).astype(jnp.int32)


def _if_kernel(pred, *args, then_branch, else_branch, var_keys):
    n = len(args) - len(var_keys)
    outs, _ = _switch(_if_index(pred), (then_branch, else_branch), args[:n], args[n:],
                      var_keys)
    return tuple(outs)


def _if_lower(ctx, op, pred, *args):
    a = op.attrs
    n = len(args) - len(a["var_keys"])
    refs = args[n:]
    eff = _Effects()
    outs, new = _switch(_if_index(pred), (a["then_branch"], a["else_branch"]), args[:n],
                        _read_all(ctx, op, refs), a["var_keys"], ctx, _salt(op), eff)
    eff.write_back(ctx, op, refs, a["var_keys"], new)
    return tuple(outs)


def _branch_shape(*specs, **attrs):
    names = attrs.get("branches") or (attrs["then_branch"], attrs["else_branch"])
    fgs = [get_function(n) for n in names]
    res = []
    for i, t in enumerate(fgs[0].outputs):
        shape = t.shape
        for fg in fgs[1:]:
            shape = _most_specific(shape, fg.outputs[i].shape)
        res.append(TensorSpec(shape, t.dtype))
    return res


StatelessIf = OpDef("StatelessIf", kernel=_if_kernel, shape_fn=_branch_shape)
If = OpDef("If", lower=_if_lower, shape_fn=_branch_shape, stateful=True)
RegisterGradient("If")(_raise_stateful_grad)


def _case_index(preds):
    # The first true predicate wins; none true picks the default (last) branch.
    flags = jnp.stack([jnp.reshape(p, ()) for p in preds] + [jnp.asarray(True)])
    return jnp.argmax(flags).astype(jnp.int32)


def _case_kernel(*args, branches, n_preds, var_keys):
    n = len(args) - len(var_keys)
    outs, _ = _switch(_case_index(args[:n_preds]), branches, args[n_preds:n], args[n:],
                      var_keys)
    return tuple(outs)


def _case_lower(ctx, op, *args):
    a = op.attrs
    n = len(args) - len(a["var_keys"])
    refs = args[n:]
    eff = _Effects()
    outs, new = _switch(_case_index(args[:a["n_preds"]]), a["branches"],
                        args[a["n_preds"]:n], _read_all(ctx, op, refs), a["var_keys"], ctx,
                        _salt(op), eff)
    eff.write_back(ctx, op, refs, a["var_keys"], new)
    return tuple(outs)


StatelessCase = OpDef("StatelessCase", kernel=_case_kernel, shape_fn=_branch_shape)
Case = OpDef("Case", lower=_case_lower, shape_fn=_branch_shape, stateful=True)
RegisterGradient("Case")(_raise_stateful_grad)


def _check_branches(fgs, what):
    """Same structure and dtypes in every branch; shapes XLA can reconcile."""
    first = fgs[0]
    for j, fg in enumerate(fgs[1:], 1):
        if len(fg.outputs) != len(first.outputs) or fg.output_tree != first.output_tree:
            raise errors.InvalidArgumentError(
                f"{what}: the branches must return the same structure, but branch 0 "
                f"returns {first.output_tree} and branch {j} returns {fg.output_tree}"
                + _where())
        for i, (a, b) in enumerate(zip(first.outputs, fg.outputs)):
            if a.dtype != b.dtype:
                raise errors.InvalidArgumentError(
                    f"{what}: output {i} has dtype {a.dtype.name} in branch 0 and "
                    f"{b.dtype.name} in branch {j}; cast one of them" + _where())
            sa, sb = a.shape, b.shape
            if sa.rank is not None and sb.rank is not None and (
                    sa.rank != sb.rank or any(x is not None and y is not None and x != y
                                              for x, y in zip(sa.as_tuple(), sb.as_tuple()))):
                raise errors.InvalidArgumentError(
                    f"{what}: output {i} has shape {_fmt(sa)} in branch 0 and {_fmt(sb)} in "
                    f"branch {j}; "
                    "XLA needs both branches to produce the same shape" + _where())


def _finish(op, fg):
    outs = op.outputs
    if not outs:
        return op
    return _tree.tree_unflatten(fg.output_tree, outs)


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None):
    """`true_fn()` if `pred` else `false_fn()`, as TensorFlow 2's `tf.cond`.

    Only the branch taken runs, its effects (variable assignments) included. Gradients
    flow through the taken branch only; `pred` gets none.

    Args:
      pred: scalar bool `Tensor`, or a Python bool (then the branch is simply called,
        as TF's `smart_cond`).
      true_fn, false_fn: callables of no arguments returning the same (possibly nested)
        structure of tensors with the same dtypes.
      name: optional name scope.
    Returns:
      The structure the branches return, with `Tensor`s; the `Operation` if they return
      no tensor (e.g. only assignments).
    Raises:
      InvalidArgumentError: `pred` is not a scalar bool, or the branches differ in
        structure, dtype or (known) shape.
    """
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callable. Received: "
                        f"true_fn={true_fn!r}, false_fn={false_fn!r}")
    if isinstance(pred, (bool, np.bool_)):
        return true_fn() if pred else false_fn()
    pred = convert_to_tensor(pred)
    if pred.dtype != _dtypes.bool_ or (pred.shape.rank not in (None, 0)):
        raise errors.InvalidArgumentError(
            f"cond: pred must be a scalar bool tensor. Received: '{pred.name}' "
            f"{pred.dtype.name} {pred.shape}" + _where())
    g = get_default_graph()
    with g.name_scope(name or "cond"):
        tb = build_function(true_fn, [], "cond_true")
        fb = build_function(false_fn, [], "cond_false")
        _check_branches([tb, fb], "cond")
        ext, var_inputs, keys, stateful = _external_inputs([tb, fb])
        opdef = If if stateful else StatelessIf
        op = opdef.create([pred, *ext, *var_inputs],
                          {"then_branch": tb.name, "else_branch": fb.name, "var_keys": keys},
                          name="If" if stateful else "StatelessIf")
    return _finish(op, tb)


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The function of the first pair whose predicate is true, as `tf.case`.

    Args:
      pred_fn_pairs: list of ``(pred, fn)`` pairs (or a dict): scalar bool tensors and
        callables of no arguments returning the same structure.
      default: callable run when no predicate is true; if None, the last pair's `fn`
        is the default (TensorFlow instead asserts that its predicate holds).
      exclusive: accepted for compatibility; not checked at run time (the first true
        predicate wins).
    Returns:
      The selected function's outputs, as `cond`.
    """
    pairs = list(pred_fn_pairs.items() if isinstance(pred_fn_pairs, dict) else pred_fn_pairs)
    if not pairs:
        raise ValueError("case: pred_fn_pairs must not be empty. Received: pred_fn_pairs=[]")
    for p, f in pairs:
        if not callable(f):
            raise TypeError(f"case: every fn must be callable. Received: {f!r}")
    if default is None:
        default = pairs[-1][1]
        pairs = pairs[:-1]
    preds = []
    for p, _ in pairs:
        p = convert_to_tensor(p)
        if p.dtype != _dtypes.bool_ or p.shape.rank not in (None, 0):
            raise errors.InvalidArgumentError(
                f"case: predicates must be scalar bool tensors. Received: '{p.name}' "
                f"{p.dtype.name} {p.shape}" + _where())
        preds.append(p)
    if not preds:
        return default()
    g = get_default_graph()
    with g.name_scope(name or "case"):
        fgs = [build_function(f, [], f"case_branch{i}") for i, (_, f) in enumerate(pairs)]
        fgs.append(build_function(default, [], "case_default"))
        _check_branches(fgs, "case")
        ext, var_inputs, keys, stateful = _external_inputs(fgs)
        opdef = Case if stateful else StatelessCase
        op = opdef.create([*preds, *ext, *var_inputs],
                          {"branches": tuple(fg.name for fg in fgs), "n_preds": len(preds),
                           "var_keys": keys}, name=opdef.name)
    return _finish(op, fgs[0])


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """``branch_fns[branch_index]()``, as TensorFlow's `switch_case`: only the chosen
    branch runs.

    Args:
      branch_index: scalar int32/int64 `Tensor` (or a Python int: the branch is then
        simply called).
      branch_fns: a dict ``{int: callable}``, a list of ``(int, callable)`` pairs, or a
        list of callables (indexed by position); the keys must be 0..N-1. Every branch
        returns the same structure and dtypes.
      default: callable run for an index outside [0, N); by default the last branch
        (TensorFlow's rule).
      name: name scope.
    Returns:
      The chosen branch's outputs, as `cond`. Gradients flow through the branch taken.
    Raises:
      TypeError: `branch_fns` is not a list or dict, or a branch is not callable.
      ValueError: no branches, or keys that are not 0..N-1.
      InvalidArgumentError: `branch_index` is not a scalar integer, or the branches
        differ in structure, dtype or shape.
    """
    if isinstance(branch_fns, dict):
        pairs = sorted(branch_fns.items(), key=lambda kv: kv[0])
    elif isinstance(branch_fns, (list, tuple)):
        pairs = [p if isinstance(p, tuple) else (i, p) for i, p in enumerate(branch_fns)]
        pairs = sorted(pairs, key=lambda kv: kv[0])
    else:
        raise TypeError("switch_case: branch_fns must be a list or a dict. Received: "
                        f"{type(branch_fns).__name__}")
    if not pairs:
        raise ValueError("switch_case: branch_fns must not be empty")
    for i, (k, f) in enumerate(pairs):
        if not isinstance(k, (int, np.integer)) or k != i:
            raise ValueError(f"switch_case: the branch keys must be 0..{len(pairs) - 1}. "
                             f"Received: {[k for k, _ in pairs]}")
        if not callable(f):
            raise TypeError(f"switch_case: branch {k} is not callable: {f!r}")
    fns = [f for _, f in pairs]
    if default is not None and not callable(default):
        raise TypeError(f"switch_case: default must be callable. Received: {default!r}")
    if isinstance(branch_index, (int, np.integer)):
        i = int(branch_index)
        return fns[i]() if 0 <= i < len(fns) else (default or fns[-1])()
    idx = convert_to_tensor(branch_index)
    if not idx.dtype.is_integer or idx.shape.rank not in (None, 0):
        raise errors.InvalidArgumentError(
            f"switch_case: branch_index must be a scalar int32 or int64 tensor. Received: "
            f"'{idx.name}' {idx.dtype.name} {idx.shape}" + _where())
    with get_default_graph().name_scope(name or "switch_case"):
        n = len(fns) if default is not None else len(fns) - 1
        preds = [(equal(idx, i), fns[i]) for i in range(n)]
        return case(preds, default=default or fns[-1], name="case")


# ================================================================ while_loop
def _while_parts(args, attrs):
    cfg = get_function(attrs["cond"])
    n_loop = len(cfg.inputs)
    i = n_loop
    max_iter = attrs["maximum_iterations"]
    if attrs["dynamic_max"]:
        max_iter = args[i]
        i += 1
    nv = len(attrs["var_keys"])
    return args[:n_loop], max_iter, args[i:len(args) - nv], args[len(args) - nv:]


def _while_run(loop_vals, max_iter, ext, var_vals, attrs, parent=None, salt=0, effects=None,
               masked=False):
    cfg, bfg = get_function(attrs["cond"]), get_function(attrs["body"])
    keys = attrs["var_keys"]
    dts = [t.dtype for t in bfg.inputs]
    stateful = effects is not None

    def st(vv):
        return _state(keys, vv if stateful else var_vals)

    def pred(i, lv, vv):
        outs, _ = call_function(cfg, [*lv, *ext], st(vv), parent, salt, i)
        return jnp.reshape(outs[0], ()).astype(bool)

    def body(i, lv, vv):
        outs, c = call_function(bfg, [*lv, *ext], st(vv), parent, salt + 1, i, out_dtypes=dts)
        if stateful:
            effects.add(c)
            vv = [c.state[k] for k in keys]
        return outs, vv

    lv0 = [jnp.asarray(v, d.np) for v, d in zip(loop_vals, dts)]
    vv0 = list(var_vals) if stateful else []
    if masked:
        # Reverse-differentiable form: max_iter steps, each a lax.cond that runs the
        # body while the loop is live and passes the values through once it is done.
        def step(carry, _):
            i, done, lv, vv = carry
            live = jnp.logical_and(jnp.logical_not(done), pred(i, lv, vv))
            lv, vv = lax.cond(live, lambda o: body(i, *o), lambda o: o, (lv, vv))
            return (i + live.astype(jnp.int32), jnp.logical_not(live), lv, vv), None

        (_, _, lv, vv), _ = lax.scan(step, (jnp.int32(0), jnp.asarray(False), lv0, vv0),
                                     None, length=int(max_iter))
        return lv, vv

    def cond_f(carry):
        i, lv, vv = carry
        p = pred(i, lv, vv)
        if max_iter is not None:
            p = jnp.logical_and(i < max_iter, p)
        return p

    def body_f(carry):
        i, lv, vv = carry
        lv, vv = body(i, lv, vv)
        return i + 1, lv, vv

    _, lv, vv = lax.while_loop(cond_f, body_f, (jnp.int32(0), lv0, vv0))
    return lv, vv


def _while_kernel(*args, **attrs):
    lv, max_iter, ext, vv = _while_parts(args, attrs)
    return tuple(_while_run(lv, max_iter, ext, vv, attrs)[0])


def _while_masked_kernel(*args, **attrs):
    lv, max_iter, ext, vv = _while_parts(args, attrs)
    return tuple(_while_run(lv, max_iter, ext, vv, attrs, masked=True)[0])


def _while_lower(ctx, op, *args):
    a = op.attrs
    lv, max_iter, ext, refs = _while_parts(args, a)
    eff = _Effects()
    out, new = _while_run(lv, max_iter, ext, _read_all(ctx, op, refs), a, ctx, _salt(op), eff)
    eff.write_back(ctx, op, refs, a["var_keys"], new)
    return tuple(out)


def _while_shape(*specs, **attrs):
    return [TensorSpec(t.shape, t.dtype) for t in get_function(attrs["body"]).inputs]


StatelessWhile = OpDef("StatelessWhile", kernel=_while_kernel, shape_fn=_while_shape)
StatelessWhileMasked = OpDef("StatelessWhileMasked", kernel=_while_masked_kernel,
                             shape_fn=_while_shape)
While = OpDef("While", lower=_while_lower, shape_fn=_while_shape, stateful=True)
RegisterGradient("While")(_raise_stateful_grad)


@RegisterGradient("StatelessWhile")
def _while_grad(op, *grads):
    if op.attrs["maximum_iterations"] is None:
        raise errors.InvalidArgumentError(
            "cannot differentiate a while_loop without a bound: set `maximum_iterations` "
            "(a Python int or constant) so the gradient can run a fixed number of "
            "reverse steps" if not op.attrs["dynamic_max"] else
            "cannot differentiate a while_loop whose `maximum_iterations` is a run-time "
            "tensor: set `maximum_iterations` to a Python int or constant", op=op)
    # The masked form (a scan of `maximum_iterations` steps) is reverse-differentiable.
    return generic_vjp(op, grads, forward_type="StatelessWhileMasked")


def _paths(structure):
    leaves, _ = _tree.tree_flatten_with_path(structure)
    return [_tree.keystr(p) or "" for p, _ in leaves]


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """Repeats `body` while `cond` is true, as `tf.while_loop`.

    Args:
      cond: callable ``cond(*loop_vars) -> scalar bool Tensor``.
      body: callable ``body(*loop_vars) -> loop_vars`` (same structure and dtypes).
      loop_vars: a tensor, or a (nested) list/tuple/dict of tensors; a list or tuple is
        unpacked into the arguments of `cond` and `body`.
      shape_invariants: optional structure like `loop_vars` of shapes that may be less
        specific than the initial ones. XLA still needs the run-time shape to stay
        fixed across iterations.
      maximum_iterations: optional bound (Python int or tensor). Required to
        differentiate through the loop; then it must be a constant.
      parallel_iterations, swap_memory: accepted for TensorFlow compatibility; they tune
        TensorFlow's executor and mean nothing to a compiled loop.
      back_prop: accepted for TensorFlow compatibility; ``False`` is ignored and warns
        once (gradients still flow: wrap the outputs in `stop_gradient`).
    Returns:
      The final loop variables, in the structure of `loop_vars`.
    Raises:
      InvalidArgumentError: the body changes a loop variable's dtype or shape (the
        message names the loop variable and suggests `shape_invariants`), or `cond`
        does not return a scalar bool.
    """
    _warn_back_prop("while_loop", back_prop)
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callable.")
    leaves, tree = _tree.tree_flatten(loop_vars)
    if not leaves:
        raise ValueError("while_loop: loop_vars must contain at least one tensor. "
                         f"Received: loop_vars={loop_vars!r}")
    tensors = [convert_to_tensor(v) for v in leaves]
    paths = ["loop_vars" + p for p in _paths(loop_vars)]
    shapes = _loop_var_shapes(tensors, tree, paths, shape_invariants)
    specs = _tree.tree_unflatten(tree, [TensorSpec(s, t.dtype) for s, t in zip(shapes, tensors)])
    unpack = isinstance(loop_vars, (list, tuple))
    g = get_default_graph()
    with g.name_scope(name or "while"):
        cfg = build_function(cond, specs, "while_cond", unpack=unpack)
        _check_while_cond(cfg)
        bfg = build_function(body, specs, "while_body", unpack=unpack)
        _check_while_body(bfg, tensors, tree, paths)
        ext, var_inputs, keys, stateful = _external_inputs([cfg, bfg])
        static_max, dyn = _max_iterations(maximum_iterations)
        opdef = While if stateful else StatelessWhile
        op = opdef.create([*tensors, *dyn, *ext, *var_inputs],
                          {"cond": cfg.name, "body": bfg.name, "var_keys": keys,
                           "maximum_iterations": static_max, "dynamic_max": bool(dyn)},
                          name=opdef.name)
    return _tree.tree_unflatten(tree, op.outputs)


def _loop_var_shapes(tensors, tree, paths, shape_invariants):
    """The loop variables' shapes in the loop: their shape invariants, each checked
    against the initial shape, else the initial shapes."""
    if shape_invariants is None:
        return [t.shape for t in tensors]
    invs = tree.flatten_up_to(shape_invariants)
    shapes = []
    for i, (t, s) in enumerate(zip(tensors, invs)):
        s = as_shape(s)
        if not s.is_compatible_with(t.shape):
            raise errors.InvalidArgumentError(
                f"while_loop: the shape invariant {_fmt(s)} of loop variable {i} "
                f"({paths[i]}) '{t.name}' is not compatible with its "
                f"initial shape {_fmt(t.shape)}" + _where())
        shapes.append(s)
    return shapes


def _check_while_cond(cfg):
    """`cond` must return one scalar bool and have no effects."""
    if len(cfg.outputs) != 1 or cfg.outputs[0].dtype != _dtypes.bool_ or \
            cfg.outputs[0].shape.rank not in (None, 0):
        raise errors.InvalidArgumentError(
            "while_loop: cond must return one scalar bool tensor. Received: "
            f"{cfg.structured_outputs!r}" + _where())
    if cfg.effectful_ops():
        raise errors.UnimplementedError(
            "while_loop: cond must not assign variables or draw random numbers "
            f"(found {cfg.effectful_ops()[0].type}); do it in the body" + _where())


def _check_while_body(bfg, tensors, tree, paths):
    """`body` must return each loop variable with its dtype and a compatible shape."""
    if len(bfg.outputs) != len(tensors):
        raise errors.InvalidArgumentError(
            f"while_loop: body returns {len(bfg.outputs)} tensors for "
            f"{len(tensors)} loop variables (structure {tree})" + _where())
    for i, (inp, out) in enumerate(zip(bfg.inputs, bfg.outputs)):
        var = f"loop variable {i} ({paths[i]}) '{tensors[i].name}'"
        if inp.dtype != out.dtype:
            raise errors.InvalidArgumentError(
                f"while_loop: {var} has dtype {inp.dtype.name} on entry but the body "
                f"returns {out.dtype.name} for it; cast it in the body" + _where())
        if not inp.shape.is_compatible_with(out.shape) or (
                inp.shape.rank is not None and out.shape.rank is None):
            raise errors.InvalidArgumentError(
                f"while_loop: {var} enters the loop with shape {_fmt(inp.shape)}, but "
                f"has shape {_fmt(out.shape)} after one iteration. To allow the shape to vary "
                "across iterations, use the `shape_invariants` argument of "
                "while_loop to specify a less-specific shape." + _where())


def _max_iterations(maximum_iterations):
    """``(static bound or None, [bound tensor] when it is known only at run time)``."""
    static_max, dyn = None, []
    if maximum_iterations is not None:
        if isinstance(maximum_iterations, (int, np.integer)):
            static_max = int(maximum_iterations)
        else:
            mt = convert_to_tensor(maximum_iterations)
            cv = constant_ops.constant_value(mt)
            if cv is not None:
                static_max = int(cv)
            else:
                dyn = [mt]
    return static_max, dyn


# ================================================================ scan / map_fn
def _warn_back_prop(owner, back_prop):
    if not back_prop:
        warn_ignored(owner, "back_prop", "gradients still flow through the loop; wrap its "
                     "outputs in stop_gradient to stop them.")


def _scan_run(args, attrs, parent=None, salt=0, effects=None):
    fg = get_function(attrs["body"])
    n_carry, n_elems = attrs["n_carry"], attrs["n_elems"]
    keys = attrs["var_keys"]
    nv = len(keys)
    init = list(args[:n_carry])
    elems = list(args[n_carry:n_carry + n_elems])
    ext = list(args[n_carry + n_elems:len(args) - nv])
    var_vals = list(args[len(args) - nv:])
    stateful = effects is not None
    dts = [t.dtype for t in fg.outputs]

    def f(carry, xs):
        i, c, vv = carry
        outs, ctx = call_function(fg, [*c, *xs, *ext],
                                  _state(keys, vv if stateful else var_vals), parent, salt, i,
                                  out_dtypes=dts)
        if stateful:
            effects.add(ctx)
            vv = [ctx.state[k] for k in keys]
        new_c = outs[:n_carry]
        ys = new_c if attrs["carry_is_output"] else outs[n_carry:]
        return (i + 1, new_c, vv), ys

    c0 = [jnp.asarray(v, t.dtype.np) for v, t in zip(init, fg.inputs)]
    (_, c, vv), ys = lax.scan(f, (jnp.int32(0), c0, var_vals if stateful else []), elems,
                              reverse=attrs["reverse"], unroll=attrs.get("unroll", 1))
    return (*c, *ys), vv


def _scan_kernel(*args, **attrs):
    return _scan_run(args, attrs)[0]


def _scan_lower(ctx, op, *args):
    a = op.attrs
    nv = len(a["var_keys"])
    refs = args[len(args) - nv:]
    eff = _Effects()
    out, new = _scan_run((*args[:len(args) - nv], *_read_all(ctx, op, refs)), a, ctx,
                         _salt(op), eff)
    eff.write_back(ctx, op, refs, a["var_keys"], new)
    return out


def _scan_shape(*specs, **attrs):
    fg = get_function(attrs["body"])
    n_carry, n_elems = attrs["n_carry"], attrs["n_elems"]
    n = None
    for s in specs[n_carry:n_carry + n_elems]:
        if s.shape.rank and s.shape[0] is not None:
            n = s.shape[0]
    ys = fg.outputs[:n_carry] if attrs["carry_is_output"] else fg.outputs[n_carry:]
    res = [TensorSpec(t.shape, t.dtype) for t in fg.inputs[:n_carry]]
    for t in ys:
        shp = TensorShape(None) if t.shape.rank is None else TensorShape([n] + t.shape.as_list())
        res.append(TensorSpec(shp, t.dtype))
    return res


StatelessScan = OpDef("StatelessScan", kernel=_scan_kernel, shape_fn=_scan_shape)
Scan = OpDef("Scan", lower=_scan_lower, shape_fn=_scan_shape, stateful=True)
RegisterGradient("Scan")(_raise_stateful_grad)


def _elem_specs(elems, what):
    leaves, tree = _tree.tree_flatten(elems)
    if not leaves:
        raise ValueError(f"{what}: elems must contain at least one tensor. Received: {elems!r}")
    tensors = [convert_to_tensor(e) for e in leaves]
    n = None
    for t in tensors:
        if t.shape.rank == 0:
            raise errors.InvalidArgumentError(
                f"{what}: elements must have a leading axis to iterate over; '{t.name}' is "
                "a scalar" + _where())
        d = t.shape[0] if t.shape.rank else None
        if d is not None and n is not None and d != n:
            raise errors.InvalidArgumentError(
                f"{what}: all elems must have the same leading dimension: {n} vs {d} "
                f"('{t.name}')" + _where())
        n = d if d is not None else n
    specs = [TensorSpec(TensorShape(None) if t.shape.rank is None
                        else TensorShape(t.shape.as_list()[1:]), t.dtype) for t in tensors]
    return tensors, tree, specs


def _scan_op(fg, init, elems, ext, var_inputs, keys, stateful, carry_is_output, reverse,
             unroll=1):
    opdef = Scan if stateful else StatelessScan
    attrs = {"body": fg.name, "n_carry": len(init), "n_elems": len(elems),
             "var_keys": keys, "carry_is_output": carry_is_output, "reverse": bool(reverse)}
    if unroll is True or unroll != 1:  # absent: graphs without unrolling are unchanged
        attrs["unroll"] = unroll
    return opdef.create([*init, *elems, *ext, *var_inputs], attrs, name=opdef.name)


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None, *, unroll=1):
    """Cumulative application of `fn` over the leading axis of `elems`, as `tf.scan`.

    ``a = fn(a, x)`` for each element ``x`` (in reverse with `reverse=True`); returns
    the stacked values of ``a``. Lowers to `lax.scan`; differentiable (unless `fn`
    assigns variables or draws random numbers).

    Args:
      fn: callable ``fn(accumulator, element) -> accumulator`` (same structure and
        dtypes as the accumulator).
      elems: a tensor or (nested) structure of tensors with a common leading dim `n`.
      initializer: initial accumulator (structure); if None, the first element of
        `elems` (last, if `reverse`) is the initial accumulator and the first output.
      unroll: steps unrolled per loop iteration in the compiled program (`lax.scan`'s
        `unroll`): a positive int, or True to unroll the whole loop (the length is
        static once compiled). Not in `tf.scan`.
      parallel_iterations, swap_memory, infer_shape: accepted for TensorFlow
        compatibility; a compiled loop has no use for them (shapes are always inferred).
      back_prop: accepted for TensorFlow compatibility; ``False`` is ignored and warns
        once (gradients still flow: wrap the outputs in `stop_gradient`).
    Returns:
      The accumulator structure with each tensor stacked: [n, ...].
    """
    _warn_back_prop("scan", back_prop)
    return _accumulate(fn, elems, initializer, reverse, unroll, name or "scan", "scan",
                       stacked=True)


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None, *, unroll=1):
    """The final accumulator of ``a = fn(a, x)`` over the leading axis of `elems`, as
    `tf.foldl`: `scan` without the stacked history, so a loop whose intermediate
    accumulators nothing reads does not keep them (nor, differentiated, their
    cotangents).

    Args:
      fn: callable ``fn(accumulator, element) -> accumulator``.
      elems: a tensor or (nested) structure of tensors with a common leading dim `n`.
      initializer: initial accumulator (structure); if None, the first element of
        `elems` is, and the loop runs over the rest.
      unroll: steps unrolled per loop iteration (`lax.scan`'s `unroll`). Not in
        `tf.foldl`.
      parallel_iterations, swap_memory, back_prop: as for `scan`.
    Returns:
      The accumulator structure after the last element.
    """
    _warn_back_prop("foldl", back_prop)
    return _accumulate(fn, elems, initializer, False, unroll, name or "foldl", "foldl",
                       stacked=False)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None, *, unroll=1):
    """`foldl` from the last element to the first, as `tf.foldr` (with no
    `initializer`, the last element is the initial accumulator)."""
    _warn_back_prop("foldr", back_prop)
    return _accumulate(fn, elems, initializer, True, unroll, name or "foldr", "foldr",
                       stacked=False)


def _accumulate(fn, elems, initializer, reverse, unroll, name, what, stacked):
    """`scan` (``stacked``: every accumulator, stacked) or `foldl`/`foldr` (the last)."""
    if not (isinstance(unroll, bool) or (isinstance(unroll, int) and unroll >= 1)):
        raise ValueError(f"{what}: `unroll` must be True, False or a positive int. "
                         f"Received: unroll={unroll!r}")
    unroll = 1 if unroll is False else unroll
    tensors, etree, especs = _elem_specs(elems, what)
    g = get_default_graph()
    with g.name_scope(name):
        if initializer is None:
            init_leaves = [t[-1] if reverse else t[0] for t in tensors]
            run_elems = [t[:-1] if reverse else t[1:] for t in tensors]
            init_struct = _tree.tree_unflatten(etree, init_leaves)
        else:
            init_struct = initializer
            run_elems = tensors
        ileaves, itree = _tree.tree_flatten(init_struct)
        init = [convert_to_tensor(v) for v in ileaves]
        ispecs = _tree.tree_unflatten(itree, [TensorSpec(t.shape, t.dtype) for t in init])
        especs_tree = _tree.tree_unflatten(etree, especs)
        fg = build_function(fn, (ispecs, especs_tree), f"{what}_fn", unpack=True)
        if len(fg.outputs) != len(init):
            raise errors.InvalidArgumentError(
                f"{what}: fn returns {len(fg.outputs)} tensors for an accumulator of "
                f"{len(init)} ({itree})" + _where())
        paths = _paths(init_struct)
        for i, (a, o) in enumerate(zip(init, fg.outputs)):
            if a.dtype != o.dtype or not a.shape.is_compatible_with(o.shape):
                raise errors.InvalidArgumentError(
                    f"{what}: accumulator {i} (initializer{paths[i]}) is "
                    f"{a.dtype.name} {_fmt(a.shape)} but fn returns {o.dtype.name} "
                    f"{_fmt(o.shape)} "
                    "for it" + _where())
        ext, var_inputs, keys, stateful = _external_inputs([fg])
        op = _scan_op(fg, init, run_elems, ext, var_inputs, keys, stateful, stacked,
                      reverse, unroll)
        if not stacked:
            return _tree.tree_unflatten(itree, op.outputs[:len(init)])
        ys = op.outputs[len(init):]
        if initializer is None:
            ys = [array_ops.concat([y, array_ops.expand_dims(i0, 0)] if reverse else
                                   [array_ops.expand_dims(i0, 0), y], axis=0)
                  for y, i0 in zip(ys, init)]
    return _tree.tree_unflatten(itree, ys)


def scan_carry(fn, init, elems, reverse=False, unroll=1, name=None):
    """``carry, y = fn(carry, x)`` over the leading axis of `elems`, as `jax.lax.scan`:
    returns ``(final carry, stacked ys)``. Unlike `scan`, the carry is not stacked, so a
    loop keeps only the history it returns (a recurrent layer's outputs, not its
    states). Lowers to one `lax.scan`; differentiable unless `fn` assigns variables or
    draws random numbers. Not in TensorFlow (`tf.scan` stacks its accumulator).

    Args:
      fn: callable ``fn(carry, x) -> (carry, y)``; the new carry has the structure,
        dtypes and shapes of `init`; `y` is a (nested) structure of tensors, or None.
      init: initial carry, a (nested) structure of tensors.
      elems: a tensor or (nested) structure of tensors with a common leading dim `n`.
      reverse: iterate from the last element to the first (ys stay at the index of
        their element, as `lax.scan`).
      unroll: steps unrolled per loop iteration (`lax.scan`'s `unroll`), or True.
      name: optional name scope.
    Returns:
      ``(carry, ys)``: the carry after the last step, and `y`'s structure with each
      tensor stacked: [n, ...] (None when `fn` returns no `y`).
    Raises:
      InvalidArgumentError: `fn` returns a carry of another structure, dtype or shape.
    """
    if not (isinstance(unroll, bool) or (isinstance(unroll, int) and unroll >= 1)):
        raise ValueError("scan_carry: `unroll` must be True, False or a positive int. "
                         f"Received: unroll={unroll!r}")
    unroll = 1 if unroll is False else unroll
    tensors, etree, especs = _elem_specs(elems, "scan_carry")
    g = get_default_graph()
    with g.name_scope(name or "scan_carry"):
        ileaves, itree = _tree.tree_flatten(init)
        init_t = [convert_to_tensor(v) for v in ileaves]
        ispecs = _tree.tree_unflatten(itree, [TensorSpec(t.shape, t.dtype) for t in init_t])

        def body(carry, x):
            out = fn(carry, x)
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise errors.InvalidArgumentError(
                    "scan_carry: fn must return a pair (carry, y). Received: "
                    f"{type(out).__name__}" + _where())
            new, y = out
            new_leaves, new_tree = _tree.tree_flatten(new)
            if new_tree != itree:
                raise errors.InvalidArgumentError(
                    f"scan_carry: fn returns a carry of structure {new_tree}; the "
                    f"initial carry is {itree}" + _where())
            return new_leaves, y

        fg = build_function(body, (ispecs, _tree.tree_unflatten(etree, especs)),
                            "scan_carry_fn", unpack=True)
        paths = _paths(init)
        for i, (a, o) in enumerate(zip(init_t, fg.outputs)):
            if a.dtype != o.dtype or not a.shape.is_compatible_with(o.shape):
                raise errors.InvalidArgumentError(
                    f"scan_carry: carry {i} (init{paths[i]}) is {a.dtype.name} "
                    f"{_fmt(a.shape)} but fn returns {o.dtype.name} {_fmt(o.shape)} for it"
                    + _where())
        ext, var_inputs, keys, stateful = _external_inputs([fg])
        op = _scan_op(fg, init_t, tensors, ext, var_inputs, keys, stateful, False, reverse,
                      unroll)
    n = len(init_t)
    carry = _tree.tree_unflatten(itree, op.outputs[:n])
    y_struct = fg.structured_outputs[1]
    if not _tree.tree_leaves(y_struct):
        return carry, None
    return carry, _tree.tree_unflatten(_tree.tree_structure(y_struct), op.outputs[n:])


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None, fn_output_signature=None):
    """Applies `fn` to each element of `elems` along axis 0 and stacks the results,
    as `tf.map_fn`. Lowers to `lax.scan`; differentiable.

    Args:
      fn: callable ``fn(element) -> structure of tensors``.
      elems: a tensor or (nested) structure of tensors with a common leading dim `n`;
        `fn` receives one slice of each, in that structure.
      dtype / fn_output_signature: optional expected output dtype(s) (checked: output
        dtypes are inferred from `fn`).
      parallel_iterations, swap_memory, infer_shape: accepted for TensorFlow
        compatibility; a compiled loop has no use for them (shapes are always inferred).
      back_prop: accepted for TensorFlow compatibility; ``False`` is ignored and warns
        once (gradients still flow: wrap the outputs in `stop_gradient`).
    Returns:
      `fn`'s output structure with each tensor stacked: [n, ...].
    Raises:
      InvalidArgumentError: `fn` returns dtypes other than the declared ones.
    """
    _warn_back_prop("map_fn", back_prop)
    tensors, etree, especs = _elem_specs(elems, "map_fn")
    g = get_default_graph()
    with g.name_scope(name or "map"):
        fg = build_function(fn, _tree.tree_unflatten(etree, especs), "map_fn", unpack=False)
        sig = fn_output_signature if fn_output_signature is not None else dtype
        if sig is not None:
            want = _tree.tree_leaves(sig, is_leaf=lambda x: x is not None and not isinstance(
                x, (list, tuple, dict)))
            got = [t.dtype for t in fg.outputs]
            want = [_dtypes.as_dtype(getattr(w, "dtype", w)) for w in want]
            if want != got:
                raise errors.InvalidArgumentError(
                    f"map_fn: fn returns dtypes {[d.name for d in got]} but "
                    f"{[d.name for d in want]} were declared" + _where())
        ext, var_inputs, keys, stateful = _external_inputs([fg])
        op = _scan_op(fg, [], tensors, ext, var_inputs, keys, stateful, False, False)
    if not op.outputs:
        return op
    return _tree.tree_unflatten(fg.output_tree, op.outputs)


def tuple_(tensors, control_inputs=None, name=None):
    """TensorFlow's `tf.tuple`: each of `tensors`, available only after all of them
    (and the ops in `control_inputs`) have been computed.

    Args:
      tensors: list of `Tensor`s (None entries pass through).
      control_inputs: optional list of ops or tensors to run first as well.
    Returns:
      list of `Tensor`s, the same values as `tensors`.
    """
    deps = [t for t in tensors if t is not None] + list(control_inputs or [])
    gate = array_ops.group(*deps, name=name or "tuple")
    g = get_default_graph()
    out = []
    with g.control_dependencies([gate]):
        for t in tensors:
            out.append(None if t is None else array_ops.identity(t))
    return out


__all__ = ["cond", "case", "switch_case", "while_loop", "scan", "foldl", "foldr", "map_fn"]
