"""tf.linalg / tf.einsum / tf.tensordot: forward values against jnp (an independent
reference), gradients against jax.grad of the reference, broadcasting included."""

import os
import sys

import jax.numpy as jnp
import numpy as np
import pytest

import mylib as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core"))
from op_testing import Row, check_case, run_table  # noqa: E402

F32, F64 = np.float32, np.float64


def _spd(rng, shapes, dt):
    out = []
    for s in shapes:
        a = rng.normal(size=s)
        out.append((a @ np.swapaxes(a, -1, -2) + s[-1] * np.eye(s[-1])).astype(dt))
    return out


def _well_conditioned(rng, shapes, dt):
    out = []
    for k, s in enumerate(shapes):
        a = rng.normal(size=s)
        if k == 0:
            a = a + 3 * np.eye(s[-1])
        out.append(a.astype(dt))
    return out


ROWS = [
    Row("einsum_matmul", lambda a, b: tf.einsum("ij,jk->ik", a, b),
        lambda a, b: jnp.einsum("ij,jk->ik", a, b), [((3, 4), (4, 5))], (F32, F64)),
    Row("einsum_batch_ellipsis", lambda a, b: tf.einsum("...ij,...jk->...ik", a, b),
        lambda a, b: jnp.einsum("...ij,...jk->...ik", a, b), [((2, 3, 4), (4, 2)),
                                                              ((2, 1, 3, 4), (5, 4, 2))]),
    Row("einsum_trace_outer", lambda a, b: tf.einsum("ii,j->j", a, b),
        lambda a, b: jnp.einsum("ii,j->j", a, b), [((3, 3), (4,))]),
    Row("einsum_implicit", lambda a: tf.einsum("ij", a), lambda a: jnp.einsum("ij", a),
        [((3, 2),)]),
    Row("tensordot_int", lambda a, b: tf.tensordot(a, b, 1),
        lambda a, b: jnp.tensordot(a, b, 1), [((2, 3), (3, 4))]),
    Row("tensordot_lists", lambda a, b: tf.tensordot(a, b, [[0, 2], [1, 0]]),
        lambda a, b: jnp.tensordot(a, b, [[0, 2], [1, 0]]), [((2, 3, 4), (4, 2, 5))]),
    Row("linalg_inv", tf.linalg.inv, jnp.linalg.inv, [((3, 3),), ((2, 4, 4),)], (F32, F64),
        inputs=_well_conditioned, tol=1e-3),
    Row("linalg_det", tf.linalg.det, jnp.linalg.det, [((3, 3),), ((2, 4, 4),)], (F64,),
        inputs=_well_conditioned),
    Row("linalg_slogdet_logabs", lambda a: tf.linalg.slogdet(a)[1],
        lambda a: jnp.linalg.slogdet(a)[1], [((3, 3),)], (F64,), inputs=_well_conditioned),
    Row("linalg_logdet", tf.linalg.logdet, lambda a: jnp.linalg.slogdet(a)[1],
        [((4, 4),)], (F64,), inputs=_spd),
    Row("cholesky", tf.linalg.cholesky, jnp.linalg.cholesky, [((4, 4),), ((2, 3, 3),)],
        (F64,), inputs=_spd),
    Row("solve", tf.linalg.solve, jnp.linalg.solve, [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 1))],
        (F32, F64), inputs=_well_conditioned, tol=1e-3),
    Row("solve_adjoint", lambda a, b: tf.linalg.solve(a, b, adjoint=True),
        lambda a, b: jnp.linalg.solve(a.T, b), [((3, 3), (3, 2))], (F64,),
        inputs=_well_conditioned),
    Row("triangular_solve", lambda a, b: tf.linalg.triangular_solve(a, b, lower=True),
        lambda a, b: jnp.linalg.solve(jnp.tril(a), b), [((3, 3), (3, 2))], (F64,),
        inputs=_well_conditioned),
    Row("diag", tf.linalg.diag, lambda d: d[..., :, None] * jnp.eye(d.shape[-1]),
        [((4,),), ((2, 3),)]),
    Row("diag_part", tf.linalg.diag_part, lambda x: jnp.diagonal(x, axis1=-2, axis2=-1),
        [((3, 3),), ((2, 3, 4),)]),
    Row("set_diag", tf.linalg.set_diag,
        lambda x, d: x * (1 - jnp.eye(3, 4)) + jnp.pad(d[..., :, None] * jnp.eye(3),
                                                       [(0, 0), (0, 0), (0, 1)]),
        [((2, 3, 4), (2, 3))]),
    Row("band_part_lower", lambda x: tf.linalg.band_part(x, -1, 0), jnp.tril, [((4, 5),)]),
    Row("band_part_1_2", lambda x: tf.linalg.band_part(x, 1, 2),
        lambda x: jnp.triu(jnp.tril(x, 2), -1), [((2, 5, 5),)]),
    Row("trace", tf.linalg.trace, lambda x: jnp.trace(x, axis1=-2, axis2=-1),
        [((3, 3),), ((2, 3, 4),)]),
    Row("norm_euclid_all", tf.norm, jnp.linalg.norm, [((3, 4),)], (F32, F64)),
    Row("norm_axis", lambda x: tf.norm(x, axis=1, keepdims=True),
        lambda x: jnp.linalg.norm(x, axis=1, keepdims=True), [((3, 4),)]),
    Row("norm_l1", lambda x: tf.norm(x, ord=1, axis=-1),
        lambda x: jnp.sum(jnp.abs(x), -1), [((3, 4),)]),
    Row("norm_inf", lambda x: tf.norm(x, ord=np.inf, axis=0),
        lambda x: jnp.max(jnp.abs(x), 0), [((3, 4),)], grad=False),
    Row("norm_p3", lambda x: tf.norm(x, ord=3, axis=0),
        lambda x: jnp.sum(jnp.abs(x) ** 3, 0) ** (1 / 3), [((3, 4),)], domain=(0.5, 2.0)),
    Row("norm_fro_pair", lambda x: tf.norm(x, ord="fro", axis=[-2, -1]),
        lambda x: jnp.sqrt(jnp.sum(x * x, (-2, -1))), [((2, 3, 4),)]),
    Row("matrix_transpose", tf.linalg.matrix_transpose, lambda x: jnp.swapaxes(x, -1, -2),
        [((2, 3, 4),)]),
    Row("linalg_matmul_bcast", tf.linalg.matmul, jnp.matmul, [((2, 3, 4), (4, 5))]),
    Row("qr_r_abs", lambda x: tf.abs(tf.linalg.qr(x)[1]),
        lambda x: jnp.abs(jnp.linalg.qr(x)[1]), [((4, 3),)], (F64,), grad=False),
    Row("svd_s", lambda x: tf.linalg.svd(x, compute_uv=False),
        lambda x: jnp.linalg.svd(x, compute_uv=False), [((4, 3),)], (F64,)),
]

CASES = [cid for row in ROWS for cid, _, _ in row.cases()]


@pytest.fixture(scope="module")
def table():
    return run_table(ROWS)


@pytest.mark.parametrize("case", CASES)
def test_op(table, case):
    check_case(table[case])


def test_eye_and_svd_reconstruction():
    g = tf.Graph()
    a = np.random.default_rng(0).normal(size=(4, 3))
    with g.as_default():
        e = tf.eye(3, 4, batch_shape=[2], dtype=tf.float64)
        s, u, v = tf.linalg.svd(tf.constant(a))
        rec = tf.matmul(u * s[None, :], v, transpose_b=True) if "transpose_b" in \
            tf.matmul.__code__.co_varnames else tf.matmul(u * s[None, :], tf.transpose(v))
        with tf.Session() as sess:
            ev, r = sess.run([e, rec])
    np.testing.assert_array_equal(ev, np.broadcast_to(np.eye(3, 4), (2, 3, 4)))
    assert ev.dtype == np.float64
    np.testing.assert_allclose(r, a, atol=1e-10)


def test_errors_name_the_op_and_shapes():
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"square.*\[3, 4\]|3, 4"):
            tf.linalg.inv(tf.zeros([3, 4]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="Einsum"):
            tf.einsum("ij,jk->ik", tf.zeros([2, 3]), tf.zeros([4, 5]))
        with pytest.raises(ValueError, match="ord"):
            tf.norm(tf.zeros([3]), ord=-1)
        with pytest.raises(TypeError, match="num_rows"):
            tf.eye(tf.constant(3))
        with pytest.raises(TypeError, match="equation"):
            tf.einsum(["ij"], tf.zeros([2, 2]))
