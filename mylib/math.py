"""`ml.math`: element-wise math, reductions, segment ops and `top_k` (TensorFlow's
`tf.math`). Each name is the same function as at the top of `mylib` (or in `ml.nn`)."""

from mylib.core.ops.math_ops import *  # noqa: F401,F403
from mylib.core.ops.math_ops import __all__ as _math_all
from mylib.core.ops.reduction_ops import *  # noqa: F401,F403
from mylib.core.ops.reduction_ops import __all__ as _reduction_all
from mylib.core.ops.segment_ops import (confusion_matrix, segment_max, segment_mean, segment_min,  # noqa: F401
                                        segment_prod, segment_sum, unsorted_segment_max,
                                        unsorted_segment_mean, unsorted_segment_min,
                                        unsorted_segment_prod, unsorted_segment_sqrt_n,
                                        unsorted_segment_sum)
from mylib.core.ops.sequence_ops import (atan2, count_nonzero, div_no_nan, is_inf,  # noqa: F401
                                         is_nan, top_k)
from mylib.core.ops.nn_ops import (in_top_k, l2_normalize, log_softmax,  # noqa: F401
                                   softmax, softplus)
from mylib.core.ops.linalg_ops import trace  # noqa: F401
from mylib.core.ops.math_extra_ops import (cumulative_logsumexp, divide_no_nan, erfc,  # noqa: F401
                                           lbeta, multiply_no_nan, polyval, realdiv,
                                           reduce_euclidean_norm, rint, truncatediv)
from mylib.core.ops.array_extra_ops import bincount, invert_permutation  # noqa: F401
from mylib.core.ops.special_ops import (argsort, digamma, lgamma, log_sigmoid,  # noqa: F401
                                        reduce_std, reduce_variance, sort)

__all__ = sorted(set(_math_all) | set(_reduction_all) | {
    "confusion_matrix", "segment_max", "segment_mean", "segment_min", "segment_prod", "segment_sum",
    "unsorted_segment_max", "unsorted_segment_mean", "unsorted_segment_min",
    "unsorted_segment_prod", "unsorted_segment_sqrt_n", "unsorted_segment_sum", "atan2",
    "count_nonzero", "div_no_nan", "in_top_k", "is_inf", "is_nan", "top_k", "l2_normalize",
    "log_softmax", "softmax", "softplus", "trace", "argsort", "digamma", "lgamma",
    "log_sigmoid", "reduce_std", "reduce_variance", "sort", "cumulative_logsumexp",
    "divide_no_nan", "erfc", "lbeta", "multiply_no_nan", "polyval", "realdiv",
    "reduce_euclidean_norm", "rint", "truncatediv", "bincount", "invert_permutation"})
