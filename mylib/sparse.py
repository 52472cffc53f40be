"""`tf.sparse`: `SparseTensor` and its operations (see `mylib.core.sparse_tensor`)."""

from mylib.core.sparse_tensor import (SparseTensor, SparseTensorValue,  # noqa: F401
                                      sparse_add as add,
                                      sparse_placeholder as placeholder,
                                      sparse_reduce_sum as reduce_sum,
                                      sparse_tensor_dense_matmul as sparse_dense_matmul,
                                      sparse_tensor_to_dense as to_dense)

matmul = sparse_dense_matmul

__all__ = ["SparseTensor", "SparseTensorValue", "add", "matmul", "placeholder", "reduce_sum",
           "sparse_dense_matmul", "to_dense"]
