"""Functional control flow: cond, case, while_loop, scan, map_fn; values against numpy,
gradients against jax.grad (and finite differences), variables inside branches/loops."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml
from mylib import errors

# References are computed with jax in float64 (see conftest.jax_x64).
pytestmark = pytest.mark.usefixtures("jax_x64")

THIS_FILE = __file__.rstrip("c")


def _run(g, fetches, feed=None, init=True):
    with ml.Session(graph=g) as s:
        if init:
            s.run(ml.global_variables_initializer())
        return s.run(fetches, feed)


# ---------------------------------------------------------------- cond / case
def test_cond_picks_branch_by_fed_pred():
    g = ml.Graph()
    with g.as_default():
        p = ml.placeholder(ml.bool_, [])
        x = ml.placeholder(ml.float64, [3])
        y = ml.cond(p, lambda: x * 2.0, lambda: x - 1.0)
        assert y.shape.as_tuple() == (3,) and y.dtype == ml.float64
        with ml.Session(graph=g) as s:
            xv = np.array([1.0, -2.0, 3.0])
            np.testing.assert_allclose(s.run(y, {p: True, x: xv}), xv * 2)
            np.testing.assert_allclose(s.run(y, {p: False, x: xv}), xv - 1)


def test_cond_python_bool_calls_branch():
    g = ml.Graph()
    with g.as_default():
        y = ml.cond(True, lambda: ml.constant(1.0), lambda: ml.constant(2.0))
        assert y.op.type == "Const"


def test_cond_nested_structure_and_dict():
    g = ml.Graph()
    with g.as_default():
        p = ml.placeholder(ml.bool_, [])
        x = ml.placeholder(ml.float32, [2])
        out = ml.cond(p, lambda: {"a": x, "b": (x * 2.0, 1.0)},
                      lambda: {"a": -x, "b": (x * 3.0, 2.0)})
        r = _run(g, out, {p: False, x: np.array([1, 2], np.float32)})
    np.testing.assert_allclose(r["a"], [-1, -2])
    np.testing.assert_allclose(r["b"][0], [3, 6])
    assert r["b"][1] == 2.0


def test_cond_gradient_only_taken_branch_and_pred_gets_none():
    xv = np.array([0.5, -1.5, 2.0])
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float64, [3])
        a = ml.placeholder(ml.float64, [])
        pred = a > 0.0  # `a` is used only by the predicate
        y = ml.cond(pred, lambda: ml.sin(x) * x, lambda: x ** 3)
        loss = ml.reduce_sum(y)
        gx, ga = ml.gradients(loss, [x, a])
        assert ga is None
        with ml.Session(graph=g) as s:
            for av in (1.0, -1.0):
                gv = s.run(gx, {x: xv, a: av})
                ref = jax.grad(lambda v: jnp.sum(jax.lax.cond(av > 0, lambda u: jnp.sin(u) * u,
                                                              lambda u: u ** 3, v)))(xv)
                np.testing.assert_allclose(gv, ref, rtol=1e-12)


def test_cond_branch_errors():
    g = ml.Graph()
    with g.as_default():
        p = ml.placeholder(ml.bool_, [])
        x = ml.placeholder(ml.float32, [2])
        with pytest.raises(errors.InvalidArgumentError, match="dtype float32 in branch 0"):
            ml.cond(p, lambda: x, lambda: ml.cast(x, ml.int32))
        with pytest.raises(errors.InvalidArgumentError, match="same structure"):
            ml.cond(p, lambda: (x, x), lambda: x)
        with pytest.raises(errors.InvalidArgumentError, match="scalar bool"):
            ml.cond(x, lambda: x, lambda: x)


def test_case_first_true_and_default():
    g = ml.Graph()
    with g.as_default():
        k = ml.placeholder(ml.int32, [])
        x = ml.placeholder(ml.float32, [])
        y = ml.case([(k < 0, lambda: x * 10.0), (k < 5, lambda: x * 20.0)],
                    default=lambda: x * 30.0)
        gx, = ml.gradients(y, [x])
        with ml.Session(graph=g) as s:
            for kv, want in ((-3, 10.0), (2, 20.0), (9, 30.0)):
                yv, gv = s.run([y, gx], {k: kv, x: 2.0})
                assert yv == pytest.approx(2 * want) and gv == pytest.approx(want)


# ---------------------------------------------------------------- while_loop
def test_while_loop_sum_and_power():
    g = ml.Graph()
    with g.as_default():
        n = ml.placeholder(ml.int32, [])
        i, total, p = ml.while_loop(lambda i, t, p: i < n,
                                    lambda i, t, p: (i + 1, t + i, p * 2.0),
                                    [ml.constant(0), ml.constant(0), ml.constant(1.0)],
                                    maximum_iterations=100)
        with ml.Session(graph=g) as s:
            assert s.run([i, total, p], {n: 10}) == [10, 45, 1024.0]
            # maximum_iterations bounds the loop.
            assert s.run(i, {n: 1000}) == 100


def test_while_loop_nested_structures():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [2])
        state = {"step": ml.constant(0), "pair": (x, ml.zeros([2]))}

        def body(s):
            a, b = s["pair"]
            return {"step": s["step"] + 1, "pair": (a * 2.0, b + a)}

        out = ml.while_loop(lambda s: s["step"] < 3, body, state)
        r = _run(g, out, {x: np.array([1, 2], np.float32)})
    assert r["step"] == 3
    np.testing.assert_allclose(r["pair"][0], [8, 16])
    np.testing.assert_allclose(r["pair"][1], [7, 14])


def test_nested_while_and_cond_inside_loop():
    g = ml.Graph()
    with g.as_default():
        n = ml.placeholder(ml.int32, [])
        scale = ml.placeholder(ml.float64, [])  # captured two levels down

        def outer_body(i, acc):
            j, inner = ml.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + scale),
                                     [ml.constant(0), ml.constant(0.0, ml.float64)])
            even = ml.equal(i % 2, 0)
            acc = acc + ml.cond(even, lambda: inner, lambda: -inner)
            return i + 1, acc

        _, acc = ml.while_loop(lambda i, a: i < n, outer_body,
                               [ml.constant(0), ml.constant(0.0, ml.float64)])
        r = _run(g, acc, {n: 6, scale: 0.5})
    ref = sum((i * 0.5) * (1 if i % 2 == 0 else -1) for i in range(6))
    assert r == pytest.approx(ref)


def test_while_loop_shape_invariant_error_names_loop_var():
    g = ml.Graph()
    with g.as_default():
        x = ml.zeros([2])
        with pytest.raises(errors.InvalidArgumentError) as e:
            ml.while_loop(lambda i, v: i < 3,
                          lambda i, v: (i + 1, ml.concat([v, v], axis=0)),  # [2] -> [4]
                          [ml.constant(0), x])
        msg = str(e.value)
        assert "loop variable 1" in msg and "[2]" in msg and "[4]" in msg
        assert "shape_invariants" in msg and THIS_FILE in msg
        # With an invariant the loop builds (XLA still needs a fixed run-time shape).
        ml.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2.0), [ml.constant(0), x],
                      shape_invariants=[ml.TensorShape([]), ml.TensorShape([None])])


def test_unbounded_while_gradient_error_mentions_maximum_iterations():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [])
        _, y = ml.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x),
                             [ml.constant(0), x])
        with pytest.raises(errors.InvalidArgumentError, match="maximum_iterations"):
            ml.gradients(y, [x])


def test_bounded_while_gradient_matches_jax_and_finite_differences():
    wv, xv, n = np.array([0.9, 1.1, -0.7]), np.array([1.0, 2.0, 0.5]), 5
    g = ml.Graph()
    with g.as_default():
        w = ml.placeholder(ml.float64, [3])
        x = ml.placeholder(ml.float64, [3])
        k = ml.placeholder(ml.int32, [])
        _, y = ml.while_loop(lambda i, y: i < k, lambda i, y: (i + 1, ml.sin(y * w)),
                             [ml.constant(0), x], maximum_iterations=8)
        loss = ml.reduce_sum(y * y)
        gw, gx = ml.gradients(loss, [w, x])
        with ml.Session(graph=g) as s:
            lv, gwv, gxv = s.run([loss, gw, gx], {w: wv, x: xv, k: n})
            eps = 1e-6
            fd = np.array([(s.run(loss, {w: wv + eps * e, x: xv, k: n}) -
                            s.run(loss, {w: wv - eps * e, x: xv, k: n})) / (2 * eps)
                           for e in np.eye(3)])

    def ref(w_, x_):
        y = jax.lax.fori_loop(0, n, lambda i, y: jnp.sin(y * w_), x_)
        return jnp.sum(y * y)

    assert lv == pytest.approx(float(ref(wv, xv)))
    np.testing.assert_allclose(gwv, jax.grad(ref, 0)(wv, xv), rtol=1e-10)
    np.testing.assert_allclose(gxv, jax.grad(ref, 1)(wv, xv), rtol=1e-10)
    np.testing.assert_allclose(gwv, fd, rtol=1e-5)


# ---------------------------------------------------------------- scan / map_fn
def test_scan_cumsum_and_gradient():
    xv = np.array([1.0, 2.0, 3.0, 4.0])
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float64, [4])
        c = ml.scan(lambda a, e: a + e, x)
        c0 = ml.scan(lambda a, e: a * e + 1.0, x, initializer=ml.constant(0.5, ml.float64))
        cr = ml.scan(lambda a, e: a + e, x, reverse=True)
        gx, = ml.gradients(ml.reduce_sum(c0 * c0), [x])
        cv, c0v, crv, gv = _run(g, [c, c0, cr, gx], {x: xv})
    np.testing.assert_allclose(cv, np.cumsum(xv))
    np.testing.assert_allclose(crv, np.cumsum(xv[::-1])[::-1])

    def ref(v):
        _, ys = jax.lax.scan(lambda a, e: (a * e + 1.0, a * e + 1.0), 0.5, v)
        return ys

    np.testing.assert_allclose(c0v, ref(xv))
    np.testing.assert_allclose(gv, jax.grad(lambda v: jnp.sum(ref(v) ** 2))(xv), rtol=1e-12)


def test_map_fn_values_structure_and_gradient():
    xv = np.arange(6.0).reshape(3, 2)
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float64, [3, 2])
        y = ml.map_fn(lambda r: ml.reduce_sum(r * r), x)
        pair = ml.map_fn(lambda t: (t[0] + t[1], t[0] * 2.0), (x, x), dtype=(ml.float64, ml.float64))
        gx, = ml.gradients(ml.reduce_sum(y), [x])
        assert y.shape.as_tuple() == (3,)
        yv, pv, gv = _run(g, [y, pair, gx], {x: xv})
    np.testing.assert_allclose(yv, (xv ** 2).sum(1))
    np.testing.assert_allclose(pv[0], 2 * xv)
    np.testing.assert_allclose(gv, 2 * xv)


# ---------------------------------------------------------------- variables
def test_variable_read_in_loop_trains_like_numpy():
    # loss = sum((w * x passed through a loop that leaves w unchanged) - t)^2
    xv, tv, lr = np.array([1.0, 2.0]), np.array([3.0, -1.0]), 0.05
    g = ml.Graph()
    with g.as_default():
        w = ml.Variable(np.array([0.5, 0.5]), name="w")
        x = ml.constant(xv)

        def body(i, acc, wcur):
            return i + 1, acc + wcur * x, wcur

        _, acc, w_out = ml.while_loop(lambda i, a, ww: i < 3, body,
                                      [ml.constant(0), ml.zeros([2], ml.float64), w.value()],
                                      maximum_iterations=3)
        # w also read inside a cond branch (captured, hoisted).
        bonus = ml.cond(ml.constant(True), lambda: ml.reduce_sum(w * 0.0 + 1.0),
                        lambda: ml.constant(0.0, ml.float64))
        loss = ml.reduce_sum((acc + w_out - tv) ** 2) + bonus
        gw, = ml.gradients(loss, [w])
        train = w.assign_sub(lr * gw)
        with ml.Session(graph=g) as s:
            s.run(ml.global_variables_initializer())
            for _ in range(4):
                s.run(train)
            got = s.run(w)
    wn = np.array([0.5, 0.5])
    for _ in range(4):
        pred = 3 * wn * xv + wn
        wn = wn - lr * 2 * (pred - tv) * (3 * xv + 1)
    np.testing.assert_allclose(got, wn, rtol=1e-12)


def test_variable_captured_in_loop_body_gradient():
    g = ml.Graph()
    with g.as_default():
        w = ml.Variable(np.float64(1.3), name="w")
        _, y = ml.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, y * w),
                             [ml.constant(0), ml.constant(2.0, ml.float64)],
                             maximum_iterations=4)
        gw, = ml.gradients(y, [w])
        yv, gv = _run(g, [y, gw])
    assert yv == pytest.approx(2 * 1.3 ** 4) and gv == pytest.approx(8 * 1.3 ** 3)


def test_assign_only_in_taken_branch():
    g = ml.Graph()
    with g.as_default():
        p = ml.placeholder(ml.bool_, [])
        a = ml.Variable(0.0, name="a")
        b = ml.Variable(0.0, name="b")
        op = ml.cond(p, lambda: a.assign_add(1.0, read_value=False),
                     lambda: b.assign_add(1.0, read_value=False))
        assert isinstance(op, ml.Operation) and op.type == "If"
        with ml.Session(graph=g) as s:
            s.run(ml.global_variables_initializer())
            s.run(op, {p: True})
            s.run(op, {p: True})
            s.run(op, {p: False})
            assert s.run([a, b]) == [2.0, 1.0]


def test_assign_add_in_while_body_runs_once_per_iteration_in_order():
    g = ml.Graph()
    with g.as_default():
        v = ml.Variable(np.float64(1.0), name="v")
        log = ml.Variable(np.zeros(5), name="log")

        def body(i, acc):
            # Each iteration sees the previous iteration's write.
            new = v.assign(v * 2.0 + 1.0)
            upd = log.scatter_add(ml.IndexedSlices(ml.reshape(new, [1]), ml.reshape(i, [1])))
            with ml.control_dependencies([upd]):
                return i + 1, acc + new

        _, acc = ml.while_loop(lambda i, a: i < 5, body,
                               [ml.constant(0), ml.constant(0.0, ml.float64)])
        with ml.Session(graph=g) as s:
            s.run(ml.global_variables_initializer())
            accv = s.run(acc)
            vv, logv = s.run([v, log])
    seq = [1.0]
    for _ in range(5):
        seq.append(seq[-1] * 2 + 1)
    np.testing.assert_allclose(logv, seq[1:])
    assert vv == seq[-1] and accv == pytest.approx(sum(seq[1:]))


def test_random_in_loop_differs_per_iteration():
    g = ml.Graph()
    with g.as_default():
        out = ml.map_fn(lambda e: e + ml.random.uniform([]), ml.zeros([4]))
        v = _run(g, out)
    assert len(set(np.round(v, 6).tolist())) == 4


def test_tensor_from_inside_branch_cannot_leak():
    g = ml.Graph()
    with g.as_default():
        p = ml.placeholder(ml.bool_, [])
        box = []

        def f():
            t = ml.constant(1.0) * 2.0
            box.append(t)
            return t

        ml.cond(p, f, lambda: ml.constant(0.0))
        with pytest.raises(ValueError, match="cannot be used outside"):
            box[0] + ml.constant(1.0)


def test_foldl_foldr_values_and_gradients():
    """`foldl`/`foldr` give `scan`'s last accumulator (with and without initializer,
    structured accumulators) and their gradients match `jax.grad`."""
    rs = np.random.RandomState(1)
    xv = rs.randn(5, 3)
    wv = rs.randn(3)
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float64, [5, 3])
        w = ml.Variable(wv)
        left = ml.foldl(lambda a, e: ml.tanh(a * w + e), x,
                        initializer=ml.zeros([3], ml.float64))
        right = ml.foldr(lambda a, e: a * 0.5 + e, x)
        pair = ml.foldl(lambda a, e: (a[0] + e, a[1] * 2.0), x,
                        initializer=(ml.zeros([3], ml.float64), ml.ones([], ml.float64)))
        gw, gx = ml.gradients(ml.reduce_sum(left * left) + ml.reduce_sum(right), [w, x])
        with ml.Session() as s:
            s.run(ml.global_variables_initializer())
            lv, rv, pv, gwv, gxv = s.run([left, right, pair, gw, gx], {x: xv})

    def ref_left(w_, x_):
        a, _ = jax.lax.scan(lambda a, e: (jnp.tanh(a * w_ + e), None), jnp.zeros(3), x_)
        return a

    def ref_right(x_):
        a, _ = jax.lax.scan(lambda a, e: (a * 0.5 + e, None), x_[-1], x_[:-1], reverse=True)
        return a

    def ref_loss(w_, x_):
        return jnp.sum(ref_left(w_, x_) ** 2) + jnp.sum(ref_right(x_))

    with jax.enable_x64(True):
        np.testing.assert_allclose(lv, ref_left(wv, xv), rtol=1e-12)
        np.testing.assert_allclose(rv, ref_right(xv), rtol=1e-12)
        r = xv[-1]
        for row in xv[-2::-1]:
            r = r * 0.5 + row
        np.testing.assert_allclose(rv, r, rtol=1e-12)
        np.testing.assert_allclose(pv[0], xv.sum(0), rtol=1e-12)
        assert pv[1] == 32.0
        np.testing.assert_allclose(gwv, jax.grad(ref_loss, 0)(wv, xv), rtol=1e-10)
        np.testing.assert_allclose(gxv, jax.grad(ref_loss, 1)(wv, xv), rtol=1e-10)
    assert left.shape.as_tuple() == (3,)
