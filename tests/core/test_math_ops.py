"""Math ops: one table row per op (forward vs a jnp/numpy reference, gradient vs
jax.grad, second order for a few), plus ties, integer gradients, errors, operators."""

import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
import pytest

import mylib as ml
from op_testing import Row, check_case, run_table

F32, F64 = np.float32, np.float64
BIN_SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3))]
UN_SHAPES = [((3, 4),), ((2, 3, 5),)]


def _pos(rng, shapes, dt):
    return [rng.uniform(0.5, 2.0, size=s).astype(dt) for s in shapes]


def _distinct(rng, shapes, dt):
    # Distinct values: max/min/argmax have a unique winner (ties tested separately).
    out = []
    for s in shapes:
        n = int(np.prod(s))
        out.append((rng.permutation(n).reshape(s) / 3.0 - 1).astype(dt))
    return out


def _nonzero_pair(rng, shapes, dt):
    a = rng.uniform(-3, 3, size=shapes[0]).astype(dt)
    b = rng.uniform(0.5, 2, size=shapes[1]) * rng.choice([-1, 1], size=shapes[1])
    return [a, b.astype(dt)]


ROWS = [
    Row("add", ml.add, jnp.add, BIN_SHAPES, (F32, F64)),
    Row("add_op", lambda x, y: x + y, jnp.add, [((3,), (2, 3))]),
    Row("subtract", ml.subtract, jnp.subtract, BIN_SHAPES, (F32, F64)),
    Row("multiply", ml.multiply, jnp.multiply, BIN_SHAPES, (F32, F64), second_order=True),
    Row("divide", ml.divide, jnp.divide, BIN_SHAPES[:3], (F32, F64), inputs=_nonzero_pair),
    Row("maximum", ml.maximum, jnp.maximum, BIN_SHAPES[:3], (F32, F64)),
    Row("minimum", ml.minimum, jnp.minimum, BIN_SHAPES[:3], (F32, F64)),
    Row("pow", ml.pow, jnp.power, [((3, 4), (3, 4)), ((2, 3), (3,))], (F32, F64),
        inputs=_pos),
    Row("pow_op", lambda x, y: x ** y, jnp.power, [((3,), ())], inputs=_pos),
    Row("rpow_op", lambda x: 2.0 ** x, lambda x: jnp.power(2.0, x), [((3,),)]),
    Row("squared_difference", ml.squared_difference, lambda x, y: (x - y) ** 2,
        BIN_SHAPES[:3]),
    Row("floormod", ml.floormod, jnp.mod, [((3, 4), (4,))], (F32, F64),
        inputs=_nonzero_pair, diff=(0,)),
    Row("floordiv_int", ml.floordiv, jnp.floor_divide, [((3, 4), (4,))], (np.int32, np.int64),
        inputs=lambda rng, s, dt: [rng.integers(-9, 9, s[0]).astype(dt),
                                   rng.choice([-3, -2, 2, 3], s[1]).astype(dt)]),
    Row("mod_op_int", lambda x, y: x % y, jnp.mod, [((5,), (5,))], (np.int32,),
        inputs=lambda rng, s, dt: [rng.integers(-9, 9, s[0]).astype(dt),
                                   rng.choice([-3, 2, 4], s[1]).astype(dt)]),
    Row("floordiv_op", lambda x, y: x // y, jnp.floor_divide, [((4,), (4,))],
        inputs=_nonzero_pair),
    Row("negative", ml.negative, jnp.negative, UN_SHAPES, (F32, F64)),
    Row("abs", ml.abs, jnp.abs, UN_SHAPES, (F32, F64)),
    Row("abs_op", lambda x: abs(x), jnp.abs, [((4,),)]),
    Row("sign", ml.sign, jnp.sign, UN_SHAPES, grad=False),
    Row("square", ml.square, jnp.square, UN_SHAPES, (F32, F64), second_order=True),
    Row("sqrt", ml.sqrt, jnp.sqrt, UN_SHAPES, (F32, F64), domain=(0.5, 3)),
    Row("rsqrt", ml.rsqrt, lambda x: 1 / jnp.sqrt(x), UN_SHAPES, (F32, F64), domain=(0.5, 3)),
    Row("exp", ml.exp, jnp.exp, UN_SHAPES, (F32, F64), second_order=True),
    Row("expm1", ml.expm1, jnp.expm1, UN_SHAPES, (F32, F64)),
    Row("log", ml.log, jnp.log, UN_SHAPES, (F32, F64), domain=(0.5, 3)),
    Row("log1p", ml.log1p, jnp.log1p, UN_SHAPES, (F32, F64), domain=(-0.5, 3)),
    Row("reciprocal", ml.reciprocal, lambda x: 1 / x, UN_SHAPES, domain=(0.5, 3)),
    Row("tanh", ml.tanh, jnp.tanh, UN_SHAPES, (F32, F64), second_order=True),
    Row("sigmoid", ml.sigmoid, lambda x: 1 / (1 + jnp.exp(-x)), UN_SHAPES, (F32, F64),
        second_order=True),
    Row("sin", ml.sin, jnp.sin, UN_SHAPES, (F64,)),
    Row("cos", ml.cos, jnp.cos, UN_SHAPES, (F64,)),
    Row("erf", ml.erf, jsp.erf, UN_SHAPES, (F32, F64)),
    Row("floor", ml.floor, jnp.floor, UN_SHAPES, grad=False),
    Row("ceil", ml.ceil, jnp.ceil, UN_SHAPES, grad=False),
    Row("round", ml.round, jnp.round, [((6,),)], grad=False,
        inputs=lambda rng, s, dt: [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.4], dt)]),
    Row("matmul", ml.matmul, jnp.matmul, [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)),
                                          ((2, 1, 3, 4), (3, 4, 2))], (F32, F64),
        second_order=True),
    Row("matmul_ta", lambda a, b: ml.matmul(a, b, transpose_a=True),
        lambda a, b: jnp.swapaxes(a, -1, -2) @ b, [((4, 3), (4, 5)), ((2, 4, 3), (4, 5))]),
    Row("matmul_tb", lambda a, b: ml.matmul(a, b, transpose_b=True),
        lambda a, b: a @ jnp.swapaxes(b, -1, -2), [((3, 4), (5, 4))]),
    Row("matmul_tatb", lambda a, b: ml.matmul(a, b, transpose_a=True, transpose_b=True),
        lambda a, b: jnp.swapaxes(a, -1, -2) @ jnp.swapaxes(b, -1, -2), [((2, 4, 3), (5, 4))]),
    Row("matmul_op", lambda a, b: a @ b, jnp.matmul, [((2, 3), (3, 2))]),
    Row("reduce_sum_all", ml.reduce_sum, jnp.sum, UN_SHAPES, (F32, F64)),
    Row("reduce_sum_ax", lambda x: ml.reduce_sum(x, axis=-1), lambda x: jnp.sum(x, -1),
        UN_SHAPES),
    Row("reduce_sum_axes_keep", lambda x: ml.reduce_sum(x, axis=[0, -1], keepdims=True),
        lambda x: jnp.sum(x, (0, -1), keepdims=True), [((2, 3, 5),)]),
    Row("reduce_mean", lambda x: ml.reduce_mean(x, axis=1), lambda x: jnp.mean(x, 1),
        UN_SHAPES, (F32, F64)),
    Row("reduce_mean_keep", lambda x: ml.reduce_mean(x, axis=[-2], keepdims=True),
        lambda x: jnp.mean(x, -2, keepdims=True), UN_SHAPES),
    Row("reduce_max", lambda x: ml.reduce_max(x, axis=1), lambda x: jnp.max(x, 1),
        UN_SHAPES, (F32, F64), inputs=_distinct),
    Row("reduce_max_all", ml.reduce_max, jnp.max, UN_SHAPES, inputs=_distinct),
    Row("reduce_min_keep", lambda x: ml.reduce_min(x, axis=0, keepdims=True),
        lambda x: jnp.min(x, 0, keepdims=True), UN_SHAPES, inputs=_distinct),
    Row("reduce_prod", lambda x: ml.reduce_prod(x, axis=-1), lambda x: jnp.prod(x, -1),
        UN_SHAPES, (F32, F64)),
    Row("reduce_logsumexp", lambda x: ml.reduce_logsumexp(x, axis=-1),
        lambda x: jnp.log(jnp.sum(jnp.exp(x), -1)), UN_SHAPES, (F32, F64)),
    Row("add_n", lambda a, b, c: ml.add_n([a, b, c]), lambda a, b, c: a + b + c,
        [((3, 4), (3, 4), (3, 4))], (F32, F64)),
    Row("cast_f64", lambda x: ml.cast(x, ml.float64), lambda x: x.astype(jnp.float64),
        UN_SHAPES),
    Row("cast_int", lambda x: ml.cast(x, ml.int32), lambda x: jnp.trunc(x).astype(jnp.int32),
        UN_SHAPES, grad=False),
    Row("argmax", lambda x: ml.argmax(x, axis=1), lambda x: jnp.argmax(x, 1),
        UN_SHAPES, inputs=_distinct),
    Row("argmin", lambda x: ml.argmin(x, axis=-1, output_type=ml.int32),
        lambda x: jnp.argmin(x, -1).astype(jnp.int32), UN_SHAPES, inputs=_distinct),
    Row("cumsum", lambda x: ml.cumsum(x, axis=1), lambda x: jnp.cumsum(x, 1), UN_SHAPES),
    Row("cumsum_rev_excl", lambda x: ml.cumsum(x, axis=0, exclusive=True, reverse=True),
        lambda x: jnp.flip(jnp.cumsum(jnp.flip(x, 0), 0), 0) - x, UN_SHAPES),
    Row("equal", ml.equal, jnp.equal, [((3, 4), (4,))], grad=False,
        inputs=lambda rng, s, dt: [rng.integers(0, 3, s[0]).astype(dt),
                                   rng.integers(0, 3, s[1]).astype(dt)]),
    Row("less", ml.less, jnp.less, BIN_SHAPES[:2], grad=False),
    Row("greater_equal", ml.greater_equal, jnp.greater_equal, BIN_SHAPES[:2], grad=False),
]

_BOOL = lambda rng, s, dt: [rng.integers(0, 2, x).astype(bool) for x in s]  # noqa: E731
ROWS += [
    Row("logical_and", ml.logical_and, jnp.logical_and, [((3, 4), (4,))], inputs=_BOOL),
    Row("logical_or", ml.logical_or, jnp.logical_or, [((3, 4), (4,))], inputs=_BOOL),
    Row("logical_not", ml.logical_not, jnp.logical_not, [((3, 4),)], inputs=_BOOL),
    Row("and_or_invert_ops", lambda x, y: ~(x & y) | x,
        lambda x, y: jnp.logical_or(jnp.logical_not(jnp.logical_and(x, y)), x),
        [((5,), (5,))], inputs=_BOOL),
]

CASES = [cid for row in ROWS for cid, _, _ in row.cases()]


@pytest.fixture(scope="module")
def table():
    return run_table(ROWS)


@pytest.mark.parametrize("case", CASES)
def test_op(table, case):
    check_case(table[case])


def _run(fetches, feeds=None, graph=None):
    with ml.Session(graph=graph or ml.get_default_graph()) as s:
        return s.run(fetches, feeds)


def test_max_ties_split_gradient_equally():
    g = ml.Graph()
    with g.as_default():
        x = ml.constant([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
        gx, = ml.gradients(ml.reduce_max(x, axis=1), [x])
        gall, = ml.gradients(ml.reduce_min(x), [x])
        a, b = _run([gx, gall], graph=g)
    np.testing.assert_allclose(a, [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)
    np.testing.assert_allclose(b, [[1, 0, 0], [0, 0, 0]])


def test_maximum_minimum_ties_go_to_x():
    g = ml.Graph()
    with g.as_default():
        x, y = ml.constant([1.0, 2.0]), ml.constant([1.0, 3.0])
        r = ml.gradients(ml.maximum(x, y), [x, y]) + ml.gradients(ml.minimum(x, y), [x, y])
        vals = _run(r, graph=g)
    np.testing.assert_array_equal(vals, [[1, 0], [0, 1], [1, 1], [0, 0]])


def test_integer_gradients_are_none():
    g = ml.Graph()
    with g.as_default():
        i = ml.placeholder(ml.int32, [3])
        x = ml.placeholder(ml.float32, [3])
        y = ml.reduce_sum(ml.cast(i * 2, ml.float32) * x)
        gi, gx = ml.gradients(y, [i, x])
        assert gi is None and gx is not None
        assert ml.gradients(ml.argmax(x), [x]) == [None]


def test_prod_gradient_with_zero():
    g = ml.Graph()
    with g.as_default():
        x = ml.constant([2.0, 0.0, 3.0])
        gx, = ml.gradients(ml.reduce_prod(x), [x])
        np.testing.assert_allclose(_run(gx, graph=g), [0, 6, 0])


def test_finite_differences():
    """Directional finite differences (float64) of a few ops against ml.gradients."""
    fns = {"pow": lambda x: ml.pow(x, 1.7), "logsumexp": lambda x: ml.reduce_logsumexp(x, 1),
           "matmul": lambda x: ml.matmul(x, ml.transpose(x)),
           "div_sqrt": lambda x: x / ml.sqrt(ml.reduce_sum(x * x, 1, keepdims=True))}
    rng = np.random.default_rng(1)
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float64, [3, 4])
        outs = {k: ml.reduce_sum(f(x) * ml.constant(rng.normal(size=(3, 3) if k == "matmul"
                                                                 else (3, 4) if k != "logsumexp"
                                                                 else (3,))))
                for k, f in fns.items()}
        grads = {k: ml.gradients(v, [x])[0] for k, v in outs.items()}
        x0 = rng.uniform(0.5, 2, (3, 4))
        v = rng.normal(size=(3, 4))
        eps = 1e-6
        with ml.Session(graph=g) as s:
            gv = s.run(grads, {x: x0})
            fp = s.run(outs, {x: x0 + eps * v})
            fm = s.run(outs, {x: x0 - eps * v})
    for k in fns:
        fd = (fp[k] - fm[k]) / (2 * eps)
        np.testing.assert_allclose(np.sum(gv[k] * v), fd, rtol=1e-6, err_msg=k)


def test_incompatible_shapes_error_names_op_shapes_and_line():
    g = ml.Graph()
    with g.as_default():
        a = ml.placeholder(ml.float32, [3, 4])
        b = ml.placeholder(ml.float32, [5])
        with pytest.raises(ml.errors.InvalidArgumentError) as ei:
            ml.add(a, b)  # the error quotes this line
        line = ei.traceback[-1].lineno  # noqa: F841
    msg = str(ei.value)
    assert "AddV2" in msg and "(3, 4)" in msg and "(5,)" in msg, msg
    assert "test_math_ops.py" in msg and "ml.add(a, b)" in msg, msg


def test_matmul_error_and_dtype_error():
    g = ml.Graph()
    with g.as_default():
        with pytest.raises(ml.errors.InvalidArgumentError, match="MatMul.*inner dim"):
            ml.matmul(ml.zeros([2, 3]), ml.zeros([4, 2]))
        with pytest.raises(ml.errors.InvalidArgumentError, match="dtype"):
            ml.add(ml.zeros([2], ml.float32), ml.zeros([2], ml.float64))


def test_shape_arithmetic_is_static():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, 3])
        y = ml.reshape(x, ml.shape(x)[0] * ml.constant([3]))
        z = ml.reshape(x, ml.concat([[-1], ml.shape(x)[1:] // 3], axis=0))
        a, b = _run([y, z], {x: np.ones((2, 3), np.float32)}, graph=g)
    assert a.shape == (6,) and b.shape == (6, 1)


def test_range_and_operators():
    g = ml.Graph()
    with g.as_default():
        r1, r2 = ml.range(5), ml.range(1.0, 2.0, 0.25)
        assert r1.shape.as_list() == [5] and r1.dtype == ml.int32
        a, b = _run([r1, r2], graph=g)
    np.testing.assert_array_equal(a, np.arange(5))
    np.testing.assert_allclose(b, [1, 1.25, 1.5, 1.75])
