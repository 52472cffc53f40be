"""Array ops: one table row per op (forward vs jnp, gradient vs jax.grad), indexing,
IndexedSlices gradients of gather, errors."""

import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml
from op_testing import Row, check_case, run_table

F32, F64 = np.float32, np.float64


def _with_idx(idx, dtype=np.int32):
    def make(rng, shapes, dt):
        return [rng.normal(size=shapes[0]).astype(dt), np.asarray(idx, dtype)]
    return make


ROWS = [
    Row("concat0", lambda a, b: ml.concat([a, b], 0), lambda a, b: jnp.concatenate([a, b], 0),
        [((2, 3), (4, 3))], (F32, F64)),
    Row("concat_neg", lambda a, b, c: ml.concat([a, b, c], -1),
        lambda a, b, c: jnp.concatenate([a, b, c], -1), [((2, 3), (2, 1), (2, 2))]),
    Row("stack", lambda a, b: ml.stack([a, b], axis=1), lambda a, b: jnp.stack([a, b], 1),
        [((2, 3), (2, 3))], (F32, F64)),
    Row("unstack", lambda a: ml.unstack(a, axis=1)[2], lambda a: a[:, 2], [((2, 4, 3),)]),
    Row("split", lambda a: ml.split(a, 3, axis=1)[1] * 2, lambda a: jnp.split(a, 3, 1)[1] * 2,
        [((2, 6),)]),
    Row("split_sizes", lambda a: ml.concat(ml.split(a, [1, -1, 2], axis=0)[::-1], 0),
        lambda a: jnp.concatenate([a[4:], a[1:4], a[:1]], 0), [((6, 2),)]),
    Row("reshape", lambda a: ml.reshape(a, [3, -1]), lambda a: a.reshape(3, -1),
        [((2, 6),)], (F32, F64)),
    Row("transpose", lambda a: ml.transpose(a, [2, 0, 1]), lambda a: a.transpose(2, 0, 1),
        [((2, 3, 4),)], (F32, F64)),
    Row("transpose_default", ml.transpose, lambda a: a.T, [((2, 3),)]),
    Row("expand_dims", lambda a: ml.expand_dims(a, -1), lambda a: a[..., None], [((2, 3),)]),
    Row("squeeze", lambda a: ml.squeeze(a, [1]), lambda a: a[:, 0], [((2, 1, 3),)]),
    Row("squeeze_all", ml.squeeze, lambda a: a.reshape(2, 3), [((1, 2, 1, 3),)]),
    Row("slice", lambda a: ml.slice(a, [1, 0], [2, -1]), lambda a: a[1:3, :], [((4, 3),)]),
    Row("strided_slice", lambda a: ml.strided_slice(a, [0, 1], [4, 3], [2, 1]),
        lambda a: a[0:4:2, 1:3], [((5, 4),)]),
    Row("getitem", lambda a: a[1, ::-2, None, ...], lambda a: a[1, ::-2, None, ...],
        [((3, 5, 2),)], (F32, F64)),
    Row("getitem_neg", lambda a: a[-1, 1:-1], lambda a: a[-1, 1:-1], [((3, 5),)]),
    Row("getitem_tensor", lambda a: a[ml.placeholder_with_default(np.int32(-2), [])],
        lambda a: a[-2], [((4, 3),)]),
    Row("gather", lambda p, i: ml.gather(p, i), lambda p, i: p[i], [((5, 3), None)],
        (F32, F64), inputs=_with_idx([4, 0, 4])),
    Row("gather_2d_idx", lambda p, i: ml.gather(p, i), lambda p, i: p[i], [((5, 3), None)],
        inputs=_with_idx([[1, 2], [1, 0]], np.int64)),
    Row("gather_axis1", lambda p, i: ml.gather(p, i, axis=1), lambda p, i: p[:, i],
        [((2, 4, 3), None)], inputs=_with_idx([3, 1])),
    Row("gather_nd", ml.gather_nd, lambda p, i: p[i[..., 0], i[..., 1]], [((4, 3, 2), None)],
        inputs=_with_idx([[0, 1], [3, 2], [0, 1]])),
    Row("tile", lambda a: ml.tile(a, [2, 3]), lambda a: jnp.tile(a, (2, 3)), [((2, 3),)]),
    Row("pad_constant", lambda a: ml.pad(a, [[1, 2], [0, 1]], constant_values=3.0),
        lambda a: jnp.pad(a, ((1, 2), (0, 1)), constant_values=3.0), [((2, 3),)]),
    Row("pad_reflect", lambda a: ml.pad(a, [[1, 2], [2, 1]], "REFLECT"),
        lambda a: jnp.pad(a, ((1, 2), (2, 1)), mode="reflect"), [((4, 3),)]),
    Row("pad_symmetric", lambda a: ml.pad(a, [[1, 2], [3, 0]], "symmetric"),
        lambda a: jnp.pad(a, ((1, 2), (3, 0)), mode="symmetric"), [((4, 3),)]),
    Row("broadcast_to", lambda a: ml.broadcast_to(a, [2, 3, 4]),
        lambda a: jnp.broadcast_to(a, (2, 3, 4)), [((3, 1),)]),
    Row("where", lambda c, x, y: ml.where(c, x, y), jnp.where, [((3, 4), (4,), (3, 1))],
        (F32, F64), inputs=lambda rng, s, dt: [rng.integers(0, 2, s[0]).astype(bool)] + [
            rng.normal(size=x).astype(dt) for x in s[1:]]),
    Row("one_hot", lambda i: ml.one_hot(i, 4), lambda i: jnp.eye(4, dtype=jnp.float32)[i] *
        (i >= 0)[..., None], [(None,)], inputs=lambda rng, s, dt: [np.array([[0, 3], [-1, 2]])]),
    Row("one_hot_axis0", lambda i: ml.one_hot(i, 3, on_value=5, off_value=-1, axis=0),
        lambda i: jnp.where(jnp.arange(3)[:, None] == i[None], 5, -1).astype(jnp.int32),
        [(None,)], inputs=lambda rng, s, dt: [np.array([2, 0, 1, 1])]),
    Row("zeros_like_ones_like", lambda a: ml.zeros_like(a) + 2 * ml.ones_like(a) + a,
        lambda a: 2 + a, [((2, 3),)]),
    Row("fill", lambda a: ml.fill([2, 3], 1.5) * a, lambda a: 1.5 * a, [((2, 3),)]),
    Row("size_rank_shape", lambda a: ml.cast(ml.size(a) + ml.rank(a) + ml.shape(a)[1],
                                             ml.float32) * a,
        lambda a: (6 + 2 + 3) * a, [((2, 3),)]),
]

CASES = [cid for row in ROWS for cid, _, _ in row.cases()]


@pytest.fixture(scope="module")
def table():
    return run_table(ROWS, seed=2)


@pytest.mark.parametrize("case", CASES)
def test_op(table, case):
    check_case(table[case])


def test_gather_gradient_is_indexed_slices_and_sums_duplicates():
    g = ml.Graph()
    with g.as_default():
        p = ml.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
        i = ml.constant([1, 3, 1])
        y = ml.reduce_sum(ml.gather(p, i) * 2.0) + ml.reduce_sum(ml.gather(p, [0]))
        gp, = ml.gradients(y, [p])
        assert isinstance(gp, ml.IndexedSlices)
        dense = ml.convert_to_tensor(gp)
        with ml.Session(graph=g) as s:
            s.run(ml.global_variables_initializer())
            d = s.run(dense)
    np.testing.assert_allclose(d, [[1] * 3, [4] * 3, [0] * 3, [2] * 3])


def test_getitem_shapes_and_unknown_dims():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, 5, 4])
        assert x[0].shape.as_list() == [5, 4]
        assert x[:, 1:4:2].shape.as_list() == [None, 2, 4]
        assert x[..., None, -1].shape.as_list() == [None, 5, 1]
        assert x[ml.constant(1), :, 0].shape.as_list() == [5]
        with pytest.raises(ml.errors.InvalidArgumentError, match="out of bounds"):
            x[:, 7]
        with pytest.raises(ml.errors.InvalidArgumentError, match="too many indices"):
            x[0, 0, 0, 0]


def test_concat_error_names_op_shapes_and_line():
    g = ml.Graph()
    with g.as_default():
        a, b = ml.zeros([2, 3]), ml.zeros([2, 4])
        with pytest.raises(ml.errors.InvalidArgumentError) as ei:
            ml.concat([a, b], axis=0)
    msg = str(ei.value)
    assert "ConcatV2" in msg and "(2, 3)" in msg and "(2, 4)" in msg
    assert "test_array_ops.py" in msg and "ml.concat([a, b], axis=0)" in msg


def test_shape_errors():
    g = ml.Graph()
    with g.as_default():
        with pytest.raises(ml.errors.InvalidArgumentError, match="Reshape"):
            ml.reshape(ml.zeros([2, 3]), [4, 2])
        with pytest.raises(ml.errors.InvalidArgumentError, match="Transpose.*permutation"):
            ml.transpose(ml.zeros([2, 3]), [0, 0])
        with pytest.raises(ml.errors.InvalidArgumentError, match="Split.*divisible"):
            ml.split(ml.zeros([2, 5]), 2, axis=1)
        with pytest.raises(ml.errors.InvalidArgumentError, match="Pack.*shapes"):
            ml.stack([ml.zeros([2]), ml.zeros([3])])
        with pytest.raises(ml.errors.InvalidArgumentError, match="MirrorPad.*too large"):
            ml.pad(ml.zeros([2, 2]), [[2, 0], [0, 0]], "REFLECT")
        with pytest.raises(ml.errors.InvalidArgumentError, match="SelectV2"):
            ml.where(ml.zeros([2], ml.bool_), ml.zeros([3]), ml.zeros([4]))


def test_iteration_and_unknown_batch_concat():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, 2])
        rows = list(ml.constant([[1, 2], [3, 4]]))
        y = ml.concat([x, x * 2], axis=1)
        assert y.shape.as_list() == [None, 4]
        z = ml.stack([x, x], axis=-1)
        assert z.shape.as_list() == [None, 2, 2]
        a, b, c = ml.Session(graph=g).run([rows[1], y, z], {x: np.ones((3, 2))})
    np.testing.assert_array_equal(a, [3, 4])
    assert b.shape == (3, 4) and c.shape == (3, 2, 2)
