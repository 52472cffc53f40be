"""Linear-algebra ops: `einsum`, `tensordot`, `eye`, matrix diagonals and bands,
`matrix_inverse`, `matrix_determinant`, `cholesky`, `matrix_solve`, `trace`, `norm`.

Each op: definition (kernel, optional shape rule), gradient, wrapper. The kernels are
`jax.numpy` / `jax.numpy.linalg`; ops with no registered gradient differentiate through
the generic VJP op (`jax.vjp` of the kernel), which is itself a graph op.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from mylib.core import dtypes as _dtypes
from mylib import errors
from mylib.core.op_registry import OpDef, convert_to_tensor
from mylib.core.ops import array_ops, math_ops, reduction_ops
from mylib.core.ops.constant_ops import constant

__all__ = ["einsum", "tensordot", "eye", "matrix_diag", "matrix_diag_part", "matrix_set_diag",
           "diag", "diag_part", "matrix_band_part", "matrix_inverse", "matrix_determinant",
           "cholesky", "matrix_solve", "matrix_triangular_solve", "trace", "norm",
           "qr", "svd", "self_adjoint_eig", "self_adjoint_eigvals", "cross", "cholesky_solve",
           "matrix_solve_ls"]  # logdet, slogdet: in ml.linalg only, as TensorFlow


def _float(x, what):
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError(f"{what}: expected a float tensor, received dtype {x.dtype.name}")
    return x


def _square_matrices(x, what):
    s = x.shape
    if s.rank is not None:
        if s.rank < 2:
            raise errors.InvalidArgumentError(
                f"{what}: input must be at least rank 2 ([..., M, M]), got shape {s}")
        m, n = s.as_list()[-2:]
        if m is not None and n is not None and m != n:
            raise errors.InvalidArgumentError(
                f"{what}: input must be square matrices [..., M, M], got shape {s}")
    return x


# ---------------------------------------------------------------- Einsum
def _einsum_kernel(*xs, equation):
    return jnp.einsum(equation, *xs)


Einsum = OpDef("Einsum", kernel=_einsum_kernel)


def einsum(equation, *inputs, name=None, **kwargs):
    """Einstein summation (`numpy.einsum` notation, ``"ij,jk->ik"``, with ``...``).

    Args:
      equation: str; the subscripts, with or without ``->``.
      *inputs: `Tensor`s of one dtype, one per operand of `equation`.
    Returns:
      `Tensor` of the shape `equation` names.
    Raises:
      InvalidArgumentError: if the equation does not match the operands' ranks or sizes
        (checked when the op is created).
    """
    if not isinstance(equation, str):
        raise TypeError(f"einsum: `equation` must be a str. Received: equation={equation!r}")
    if kwargs:
        raise TypeError(f"einsum: unexpected arguments {sorted(kwargs)}")
    xs = [convert_to_tensor(x) for x in inputs]
    return Einsum(*xs, equation=equation.replace(" ", ""), name=name)


def tensordot(a, b, axes, name=None):
    """Contraction of `a` and `b` over `axes` (`numpy.tensordot`).

    Args:
      a, b: `Tensor`s of one dtype.
      axes: int N (the last N axes of `a` with the first N of `b`) or a pair of lists
        ``[[a axes], [b axes]]``.
    Returns:
      `Tensor` of shape ``a's free axes + b's free axes``.
    """
    a, b = convert_to_tensor(a), convert_to_tensor(b)
    ra, rb = a.shape.rank, b.shape.rank
    if ra is None or rb is None:
        raise ValueError("tensordot: the ranks of `a` and `b` must be known")
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        ax_a, ax_b = list(range(ra - n, ra)), list(range(n))
    else:
        ax_a, ax_b = axes
        ax_a = [int(ax_a)] if isinstance(ax_a, (int, np.integer)) else [int(v) for v in ax_a]
        ax_b = [int(ax_b)] if isinstance(ax_b, (int, np.integer)) else [int(v) for v in ax_b]
        ax_a = [v % ra for v in ax_a]
        ax_b = [v % rb for v in ax_b]
    if len(ax_a) != len(ax_b):
        raise ValueError(f"tensordot: axes of `a` {ax_a} and of `b` {ax_b} differ in number")
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    sa = list(letters[:ra])
    sb = list(letters[ra:ra + rb])
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in ax_a] + \
          [c for j, c in enumerate(sb) if j not in ax_b]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b, name=name)


# ---------------------------------------------------------------- eye
def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dtypes.float32, name=None):
    """Identity matrix (or a batch of them) as a constant.

    Args:
      num_rows, num_columns: Python ints (`num_columns` defaults to `num_rows`).
      batch_shape: optional list of ints; the result is ``batch_shape + [rows, cols]``.
      dtype: the element type.
    Returns:
      `Tensor` [*batch_shape, num_rows, num_columns].
    Raises:
      TypeError: if the sizes are not Python ints (mylib needs static sizes here).
    """
    cols = num_rows if num_columns is None else num_columns
    for v, what in ((num_rows, "num_rows"), (cols, "num_columns")):
        if not isinstance(v, (int, np.integer)) or v < 0:
            raise TypeError(f"eye: `{what}` must be a non-negative Python int (mylib needs "
                            f"static sizes). Received: {what}={v!r}")
    d = _dtypes.as_dtype(dtype)
    m = np.eye(int(num_rows), int(cols), dtype=d.np)
    if batch_shape:
        m = np.broadcast_to(m, tuple(int(b) for b in batch_shape) + m.shape).copy()
    return constant(m, dtype=d, name=name or "eye")


# ---------------------------------------------------------------- diagonals and bands
def _matrix_diag_kernel(d):
    n = d.shape[-1]
    return d[..., :, None] * jnp.eye(n, dtype=d.dtype)


MatrixDiag = OpDef("MatrixDiag", kernel=_matrix_diag_kernel)
MatrixDiagPart = OpDef("MatrixDiagPart",
                       kernel=lambda x: jnp.diagonal(x, axis1=-2, axis2=-1))
MatrixSetDiag = OpDef("MatrixSetDiag", kernel=lambda x, d: x * (1 - jnp.eye(
    x.shape[-2], x.shape[-1], dtype=x.dtype)) + _pad_diag(d, x.shape[-2], x.shape[-1]))


def _pad_diag(d, m, n):
    k = min(m, n)
    full = d[..., :, None] * jnp.eye(k, dtype=d.dtype)
    return jnp.pad(full, [(0, 0)] * (d.ndim - 1) + [(0, m - k), (0, n - k)])


def matrix_diag(diagonal, name=None):
    """Batched diagonal matrices: `[..., N]` -> `[..., N, N]` with `diagonal` on the
    main diagonal (TensorFlow's `k`, `num_rows`, `padding_value` options are not
    supported)."""
    return MatrixDiag(convert_to_tensor(diagonal), name=name)


def matrix_diag_part(input, name=None):  # noqa: A002
    """Main diagonals of a batch of matrices: `[..., M, N]` -> `[..., min(M, N)]`."""
    return MatrixDiagPart(convert_to_tensor(input), name=name)


def matrix_set_diag(input, diagonal, name=None):  # noqa: A002
    """`input` [..., M, N] with its main diagonal replaced by `diagonal` [..., min(M, N)]."""
    x = convert_to_tensor(input)
    return MatrixSetDiag(x, convert_to_tensor(diagonal, dtype_hint=x.dtype), name=name)


def diag(diagonal, name=None):
    """TensorFlow's `tf.diag` for a vector: the `[N, N]` matrix with `diagonal` on its
    main diagonal. Differs from TensorFlow: inputs of rank > 1 are treated as batches
    of vectors (as `matrix_diag`), not as the rank-2k tensor TensorFlow builds."""
    return matrix_diag(diagonal, name=name)


def diag_part(input, name=None):  # noqa: A002
    """TensorFlow's `tf.diag_part` for a matrix: its main diagonal. Differs from
    TensorFlow: inputs of rank > 2 are treated as batches of matrices (as
    `matrix_diag_part`)."""
    return matrix_diag_part(input, name=name)


def _band_part_kernel(x, *, num_lower, num_upper):
    m, n = x.shape[-2], x.shape[-1]
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    keep = np.ones((m, n), bool)
    if num_lower >= 0:
        keep &= (i - j) <= num_lower
    if num_upper >= 0:
        keep &= (j - i) <= num_upper
    return jnp.where(keep, x, jnp.zeros((), x.dtype))


MatrixBandPart = OpDef("MatrixBandPart", kernel=_band_part_kernel)


def matrix_band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """Keeps a band of each matrix: entries with ``i - j <= num_lower`` and
    ``j - i <= num_upper`` (a negative count keeps the whole triangle); the rest are 0.

    Args:
      input: `Tensor` [..., M, N].
      num_lower, num_upper: Python ints (TensorFlow also takes tensors; mylib needs
        them static).
    Returns:
      `Tensor` of `input`'s shape and dtype.
    """
    for v, what in ((num_lower, "num_lower"), (num_upper, "num_upper")):
        if not isinstance(v, (int, np.integer)):
            raise TypeError(f"matrix_band_part: `{what}` must be a Python int. "
                            f"Received: {what}={v!r}")
    return MatrixBandPart(convert_to_tensor(input), num_lower=int(num_lower),
                          num_upper=int(num_upper), name=name)


# ---------------------------------------------------------------- inverse, det, solves
MatrixInverse = OpDef("MatrixInverse", kernel=jnp.linalg.inv)
MatrixDeterminant = OpDef("MatrixDeterminant", kernel=jnp.linalg.det)
LogMatrixDeterminant = OpDef("LogMatrixDeterminant",
                             kernel=lambda x: tuple(jnp.linalg.slogdet(x)))
Cholesky = OpDef("Cholesky", kernel=jnp.linalg.cholesky)
MatrixSolve = OpDef("MatrixSolve", kernel=lambda a, b, *, adjoint: jnp.linalg.solve(
    jnp.swapaxes(a, -1, -2) if adjoint else a, b))


def _triangular_solve_kernel(a, b, *, lower, adjoint):
    from jax.scipy.linalg import solve_triangular
    return solve_triangular(a, b, lower=lower, trans=1 if adjoint else 0)


MatrixTriangularSolve = OpDef("MatrixTriangularSolve", kernel=_triangular_solve_kernel)
Qr = OpDef("Qr", kernel=lambda x, *, full_matrices: tuple(
    jnp.linalg.qr(x, mode="complete" if full_matrices else "reduced")))
Svd = OpDef("Svd", kernel=lambda x, *, full_matrices: tuple(
    jnp.linalg.svd(x, full_matrices=full_matrices)))


def matrix_inverse(input, adjoint=False, name=None):  # noqa: A002
    """Inverses of a batch of square matrices [..., M, M] (LU with partial pivoting,
    `jnp.linalg.inv`). A singular matrix gives inf/NaN entries (TensorFlow raises
    InvalidArgumentError at run time)."""
    x = _square_matrices(_float(input, "matrix_inverse"), "matrix_inverse")
    if adjoint:
        x = array_ops.matrix_transpose(x)
    return MatrixInverse(x, name=name)


def matrix_determinant(input, name=None):  # noqa: A002
    """Determinants of a batch of square matrices: [..., M, M] -> [...]."""
    x = _square_matrices(_float(input, "matrix_determinant"), "matrix_determinant")
    return MatrixDeterminant(x, name=name)


def slogdet(input, name=None):  # noqa: A002
    """`(sign, log|det|)` of a batch of square matrices, each [...]."""
    x = _square_matrices(_float(input, "slogdet"), "slogdet")
    return tuple(LogMatrixDeterminant(x, name=name))


def logdet(matrix, name=None):
    """`log(det(matrix))` of Hermitian positive-definite matrices, by Cholesky:
    ``2 * sum(log(diag(chol(matrix))))``."""
    c = cholesky(matrix)
    return math_ops.multiply(2.0, reduction_ops.reduce_sum(
        math_ops.log(matrix_diag_part(c)), -1), name=name)


def cholesky(input, name=None):  # noqa: A002
    """Lower-triangular Cholesky factors `L` (``input = L @ L^T``) of a batch of
    symmetric positive-definite matrices [..., M, M]. Only the lower triangle is read
    (as TensorFlow). A matrix that is not positive definite gives NaN entries
    (TensorFlow raises InvalidArgumentError)."""
    x = _square_matrices(_float(input, "cholesky"), "cholesky")
    return Cholesky(x, name=name)


def matrix_solve(matrix, rhs, adjoint=False, name=None):
    """Solves ``matrix @ X = rhs`` (or ``matrix^T @ X = rhs`` with `adjoint`).

    Args:
      matrix: `Tensor` [..., M, M].
      rhs: `Tensor` [..., M, K] of the same dtype.
    Returns:
      `Tensor` [..., M, K].
    """
    a = _square_matrices(_float(matrix, "matrix_solve"), "matrix_solve")
    b = convert_to_tensor(rhs, dtype_hint=a.dtype)
    return MatrixSolve(a, b, adjoint=bool(adjoint), name=name)


def matrix_triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """Solves ``matrix @ X = rhs`` for triangular `matrix` [..., M, M]; only the
    `lower` (or upper) triangle is read."""
    a = _square_matrices(_float(matrix, "matrix_triangular_solve"), "matrix_triangular_solve")
    b = convert_to_tensor(rhs, dtype_hint=a.dtype)
    return MatrixTriangularSolve(a, b, lower=bool(lower), adjoint=bool(adjoint), name=name)


SelfAdjointEigV2 = OpDef("SelfAdjointEigV2", kernel=lambda x: tuple(
    jnp.linalg.eigh(x, UPLO="L", symmetrize_input=False)))


def self_adjoint_eig(tensor, name=None):
    """`(e, v)`: the eigenvalues [..., M] (ascending) and eigenvectors [..., M, M] (as
    columns) of a batch of self-adjoint matrices [..., M, M] (`jnp.linalg.eigh`; only
    the lower triangle is read, as TensorFlow). Differentiable where the eigenvalues
    are distinct; each eigenvector's sign is the solver's."""
    x = _square_matrices(_float(tensor, "self_adjoint_eig"), "self_adjoint_eig")
    e, v = SelfAdjointEigV2(x, name=name)
    return e, v


def self_adjoint_eigvals(tensor, name=None):
    """The eigenvalues [..., M] (ascending) of self-adjoint matrices [..., M, M]."""
    return self_adjoint_eig(tensor, name=name)[0]


Cross = OpDef("Cross", kernel=lambda a, b: jnp.cross(a, b))


def cross(a, b, name=None):
    """Cross products of 3-vectors: `a`, `b` [..., 3] of one dtype -> [..., 3]."""
    a = convert_to_tensor(a)
    b = convert_to_tensor(b, dtype_hint=a.dtype)
    for t in (a, b):
        if t.shape.rank is not None and t.shape.as_list()[-1] not in (None, 3):
            raise ValueError(f"cross: the last dimension must be 3; '{t.name}' has shape "
                             f"{t.shape}")
    return Cross(a, b, name=name)


def cholesky_solve(chol, rhs, name=None):
    """Solves ``A @ X = rhs`` given the lower Cholesky factor `chol` [..., M, M] of `A`
    (``A = chol @ chol^T``): two triangular solves. rhs [..., M, K] -> [..., M, K]."""
    y = matrix_triangular_solve(chol, rhs, lower=True)
    return matrix_triangular_solve(array_ops.matrix_transpose(chol), y, lower=False,
                                   name=name)


def matrix_solve_ls(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """Least-squares solutions of ``matrix @ X = rhs`` with an L2 penalty: [..., M, N]
    and [..., M, K] -> [..., N, K]. For M >= N, ``(A^T A + l2 I)^-1 A^T rhs``; for
    M < N, the minimum-norm ``A^T (A A^T + l2 I)^-1 rhs`` (TensorFlow's fast path, by
    Cholesky). `fast=False` is computed the same way (TensorFlow uses a complete
    orthogonal decomposition there: the results agree for full-rank `matrix`)."""
    a = _float(matrix, "matrix_solve_ls")
    b = convert_to_tensor(rhs, dtype_hint=a.dtype)
    m, n = a.shape.as_list()[-2:]
    if m is None or n is None:
        raise ValueError(f"matrix_solve_ls: the matrix dimensions must be known; received "
                         f"{a.shape}")
    at = array_ops.matrix_transpose(a)
    reg = math_ops.multiply(math_ops.cast(l2_regularizer, a.dtype),
                            eye(min(m, n), dtype=a.dtype))
    if m >= n:
        gram = math_ops.matmul(at, a) + reg
        return cholesky_solve(cholesky(gram), math_ops.matmul(at, b), name=name)
    gram = math_ops.matmul(a, at) + reg
    return math_ops.matmul(at, cholesky_solve(cholesky(gram), b), name=name)


def qr(input, full_matrices=False, name=None):  # noqa: A002
    """`(q, r)` of the QR decomposition of [..., M, N] matrices (`jnp.linalg.qr`)."""
    return tuple(Qr(_float(input, "qr"), full_matrices=bool(full_matrices), name=name))


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """Singular value decomposition: `(s, u, v)` as TensorFlow orders them, with
    ``tensor = u @ diag(s) @ v^T``; just `s` when `compute_uv` is False."""
    s_u_vh = Svd(_float(tensor, "svd"), full_matrices=bool(full_matrices), name=name)
    u, s, vh = s_u_vh
    if not compute_uv:
        return s
    return s, u, array_ops.matrix_transpose(vh)


# ---------------------------------------------------------------- trace, norm
def trace(x, name=None):
    """Sum of the main diagonal of each matrix: [..., M, N] -> [...]."""
    return reduction_ops.reduce_sum(matrix_diag_part(x), -1, name=name)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None,  # noqa: A002
         keep_dims=None):
    """Vector norms (and the Frobenius matrix norm) built from graph ops.

    Args:
      tensor: float `Tensor`.
      ord: "euclidean" / "fro" / 2 (square root of the sum of squares), 1 (sum of
        absolute values), `np.inf` (max absolute value), or any positive number p
        (``sum(|x|^p)^(1/p)``). Matrix norms other than Frobenius (ord 1, 2, inf
        over a pair of axes, which TensorFlow supports) are not supported.
      axis: None (all elements, as one vector), an int, or a pair of ints (Frobenius).
      keepdims: keep the reduced axes as size 1 (`keep_dims` is TensorFlow 1's name).
    Returns:
      `Tensor`, the norm, of `tensor`'s dtype.
    Raises:
      ValueError: for an unsupported `ord`.
    """
    x = _float(tensor, "norm")
    keep = bool(keepdims if keepdims is not None else keep_dims)
    pair = isinstance(axis, (list, tuple)) and len(axis) == 2
    if pair and ord not in ("euclidean", "fro"):
        raise ValueError(f"norm: only the Frobenius matrix norm is supported over a pair of "
                         f"axes. Received: ord={ord!r}")
    if ord in ("euclidean", "fro", 2, 2.0):
        s = reduction_ops.reduce_sum(math_ops.square(x), axis, keepdims=keep)
        return math_ops.sqrt(s, name=name)
    if ord in (1, 1.0):
        return reduction_ops.reduce_sum(math_ops.abs(x), axis, keepdims=keep, name=name)
    if ord == np.inf:
        return reduction_ops.reduce_max(math_ops.abs(x), axis, keepdims=keep, name=name)
    if isinstance(ord, (int, float)) and ord > 0:
        s = reduction_ops.reduce_sum(math_ops.pow(math_ops.abs(x), float(ord)), axis,
                                     keepdims=keep)
        return math_ops.pow(s, 1.0 / ord, name=name)
    raise ValueError(f"norm: `ord` must be 'euclidean', 'fro', 1, 2, np.inf or a positive "
                     f"number. Received: ord={ord!r}")
