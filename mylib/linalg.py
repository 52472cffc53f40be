"""`ml.linalg`: linear algebra (TensorFlow's `tf.linalg`): `matmul`, `inv`, `det`,
`slogdet`, `logdet`, `cholesky`, `solve`, `triangular_solve`, `diag`, `diag_part`,
`set_diag`, `band_part`, `trace`, `norm`, `transpose` / `matrix_transpose`, `eye`,
`tensordot`, `einsum`, `qr`, `svd`, `eigh`, `eigvalsh`, `cross`, `cholesky_solve`,
`lstsq`, `l2_normalize`, `expm`, `pinv`, `global_norm`, `tensor_diag`."""

from mylib.core.ops.array_ops import matrix_transpose
from mylib.core.ops.linalg_ops import (cholesky, cholesky_solve, cross, einsum, eye, logdet,
                                       matrix_band_part, matrix_determinant, matrix_diag,
                                       matrix_diag_part, matrix_inverse, matrix_set_diag,
                                       matrix_solve, matrix_solve_ls, matrix_triangular_solve,
                                       norm, qr, self_adjoint_eig, self_adjoint_eigvals,
                                       slogdet, svd, tensordot, trace)
from mylib.core.ops.math_ops import matmul
from mylib.core.ops.math_extra_ops import expm, pinv
from mylib.core.ops.array_extra_ops import tensor_diag
from mylib.core.ops.clip_ops import global_norm
from mylib.core.ops.nn_ops import l2_normalize

inv = matrix_inverse
det = matrix_determinant
solve = matrix_solve
triangular_solve = matrix_triangular_solve
diag = matrix_diag
diag_part = matrix_diag_part
set_diag = matrix_set_diag
band_part = matrix_band_part
transpose = matrix_transpose
adjoint = matrix_transpose
eigh = self_adjoint_eig
eigvalsh = self_adjoint_eigvals
lstsq = matrix_solve_ls

__all__ = ["matmul", "inv", "det", "slogdet", "logdet", "cholesky", "solve",
           "triangular_solve", "diag", "diag_part", "set_diag", "band_part", "trace", "norm",
           "transpose", "matrix_transpose", "adjoint", "eye", "tensordot", "einsum", "qr",
           "svd", "l2_normalize", "eigh", "eigvalsh", "cross", "cholesky_solve", "lstsq",
           "expm", "pinv", "global_norm", "tensor_diag"]
