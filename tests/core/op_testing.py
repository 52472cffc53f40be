"""Table-driven op tests, like JAX's LAX_GRAD_OPS: one `Row` per op.

All cases of a table are built into one graph and run with one `Session.run` (compile
time dominates), fetching forward values, first-order gradients (vs `jax.grad` of an
independent jnp reference) and, where asked, second-order gradients.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

import mylib as ml


@dataclasses.dataclass
class Row:
    name: str
    fn: Callable            # ml tensors -> ml tensor
    ref: Callable           # jnp arrays -> jnp array (independent reference)
    shapes: list            # list of tuples of input shapes (one tuple per case)
    dtypes: tuple = (np.float32,)
    domain: tuple = (-2.0, 2.0)
    grad: bool = True
    second_order: bool = False
    inputs: Callable = None  # rng, shapes, dtype -> list of numpy inputs (overrides domain)
    diff: tuple = None       # which inputs to differentiate (default: all float inputs)
    tol: float = None

    def cases(self):
        # Every shape in the first dtype; other dtypes on the first shape only (fast).
        for k, dt in enumerate(self.dtypes):
            for shapes in (self.shapes if k == 0 else self.shapes[:1]):
                yield f"{self.name}-{'x'.join(map(_fmt, shapes))}-{np.dtype(dt).name}", shapes, dt


def _fmt(s):
    return "[" + ",".join(map(str, s)) + "]" if isinstance(s, tuple) else str(s)


def _tol(dt, row):
    if row.tol is not None:
        return row.tol
    return 1e-4 if np.dtype(dt) == np.float32 else 1e-9


def _make_inputs(row, shapes, dt, rng):
    if row.inputs is not None:
        return row.inputs(rng, shapes, dt)
    lo, hi = row.domain
    out = []
    for s in shapes:
        if np.issubdtype(dt, np.integer):
            out.append(rng.integers(int(lo), int(hi) + 1, size=s).astype(dt))
        else:
            out.append(rng.uniform(lo, hi, size=s).astype(dt))
    return out


class TableResult:
    def __init__(self):
        self.cases = {}


def run_table(rows, seed=0):
    """Builds every case of `rows` in one graph and runs it once.

    Returns:
      dict case_id -> dict(inputs, fwd, grads, ref_fwd, ref_grads, ... ) or an exception.
    """
    rng = np.random.default_rng(seed)
    g = ml.Graph()
    results, fetches, feeds = {}, {}, {}
    with g.as_default():
        for row in rows:
            for cid, shapes, dt in row.cases():
                try:
                    xs_np = _make_inputs(row, shapes, dt, rng)
                    xs = [ml.placeholder(ml.as_dtype(a.dtype), a.shape) for a in xs_np]
                    for p, a in zip(xs, xs_np):
                        feeds[p] = a
                    out = row.fn(*xs)
                    case = {"row": row, "inputs": xs_np, "dtype": dt}
                    f = {"fwd": out}
                    diff = row.diff if row.diff is not None else tuple(
                        i for i, a in enumerate(xs_np) if np.issubdtype(a.dtype, np.floating))
                    if row.grad and out.dtype.is_floating and diff:
                        cot = rng.uniform(0.5, 1.5, size=out.shape.as_list()).astype(
                            out.dtype.np)
                        case["cot"] = cot
                        loss = ml.reduce_sum(out * ml.constant(cot))
                        gs = ml.gradients(loss, [xs[i] for i in diff])
                        f["grads"] = [ml.zeros_like(xs[i]) if gi is None else
                                      ml.convert_to_tensor(gi) for i, gi in zip(diff, gs)]
                        case["diff"] = diff
                        if row.second_order:
                            v = rng.uniform(0.5, 1.5, size=xs_np[diff[0]].shape).astype(dt)
                            case["v"] = v
                            g2, = ml.gradients(ml.reduce_sum(f["grads"][0] * ml.constant(v)),
                                               [xs[diff[0]]])
                            f["g2"] = ml.zeros_like(xs[diff[0]]) if g2 is None else g2
                    fetches[cid] = f
                    results[cid] = case
                except Exception as e:  # noqa: BLE001 - reported by the case's test
                    results[cid] = e
        with ml.Session(graph=g) as sess:
            try:
                vals = sess.run(fetches, feeds)
            except Exception:  # noqa: BLE001 - isolate the failing case
                vals = {}
                for cid, f in fetches.items():
                    try:
                        vals[cid] = sess.run(f, feeds)
                    except Exception as e:  # noqa: BLE001
                        results[cid] = e
    for cid, v in vals.items():
        if not isinstance(results[cid], Exception):
            results[cid].update(v)
    return results


def _reference(row, xs, diff, cot, v):
    """Forward, gradients and second order of the jnp reference, in one jitted call
    (one compile per case is cheaper than eager dispatch of every primitive)."""

    def loss(d, full):
        full = list(full)
        for i, val in zip(diff, d):
            full[i] = val
        return jnp.sum(row.ref(*full) * cot)

    def all_refs(full):
        fwd = row.ref(*full)
        if cot is None:
            return fwd, None, None
        d0 = tuple(full[i] for i in diff)
        grads = jax.grad(loss)(d0, full)
        g2 = None
        if v is not None:
            g2 = jax.grad(lambda z: jnp.sum(jax.grad(loss)((z,) + d0[1:], full)[0] * v))(d0[0])
        return fwd, grads, g2

    # 64-bit references for 64-bit cases: mylib keeps x64 scoped to itself, so the
    # reference asks for it the same way.
    with jax.default_device(jax.devices("cpu")[0]), jax.enable_x64(True):
        return jax.jit(all_refs)([jnp.asarray(a) for a in xs])


def check_case(res):
    """Asserts forward, gradient and second-order values of one case against jax."""
    if isinstance(res, Exception):
        raise res
    row, xs, dt = res["row"], res["inputs"], res["dtype"]
    tol = _tol(dt, row)
    ref, ref_g, ref2 = _reference(row, xs, res.get("diff", ()), res.get("cot"), res.get("v"))
    ref = np.asarray(ref)
    got = res["fwd"]
    assert got.shape == ref.shape, f"shape {got.shape} vs reference {ref.shape}"
    assert got.dtype == ref.dtype or np.issubdtype(dt, np.floating), (got.dtype, ref.dtype)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol, err_msg="forward")
    if "grads" not in res:
        return
    diff = res["diff"]
    for i, (a, b) in enumerate(zip(res["grads"], ref_g)):
        assert a.shape == b.shape, f"grad {i} shape {a.shape} vs {b.shape}"
        np.testing.assert_allclose(a, np.asarray(b), rtol=tol * 10, atol=tol * 10,
                                   err_msg=f"gradient of input {diff[i]}")
    if "g2" in res:
        np.testing.assert_allclose(res["g2"], np.asarray(ref2), rtol=tol * 20, atol=tol * 20,
                                   err_msg="second-order gradient")
