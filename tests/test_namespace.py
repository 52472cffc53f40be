"""The public `mylib` namespace is deliberate.

`import mylib as ml` offers TensorFlow's names (``ml.matmul``, ``ml.placeholder``,
``ml.float32``, ...) and the Keras-style packages (``ml.layers``, ``ml.models``, ...).
Op definitions (``MatMul``, ``BroadcastReduced``, ...) stay in their `mylib.core.ops`
modules and the op registry, and no third-party module (``np``, ``jax``) shows through.
A module that is star-imported declares `__all__`, so its imports do not leak.
"""

import ast
import os
import types

import mylib
from mylib.core.op_registry import OpDef

PKG = os.path.dirname(os.path.abspath(mylib.__file__))

# Every public name of `mylib`, sorted. Change it on purpose, in the change that adds or
# removes a public name (and the `__all__` it comes from); never to silence this test.
PUBLIC_NAMES = [
    "AUTO_REUSE", "Assert", "ConfigProto", "DType", "DeviceSpec", "Dimension", "Event",
    "FIFOQueue", "GPUOptions", "GradientTape", "Graph", "GraphDef", "GraphKeys",
    "HistogramProto", "IndexedSlices", "InteractiveSession", "MetaGraphDef", "Model",
    "NoGradient", "NodeDef", "NotDifferentiable", "OpDef", "Operation", "PaddingFIFOQueue",
    "PartitionedVariable", "Print", "PriorityQueue", "QueueBase", "RandomShuffleQueue",
    "RegisterGradient", "RunMetadata", "RunOptions", "Sequential", "Session", "SessionLog", "SparseTensor", "SparseTensorValue",
    "Summary", "SummaryMetadata", "Tensor", "TensorArray", "TensorShape", "TensorSpec",
    "UnconnectedGradients", "VERSION", "Variable", "VariableScope", "abs", "accumulate_n",
    "activations", "add", "add_n", "add_to_collection", "add_to_collections", "all_variables",
    "app", "arg_max", "arg_min", "argmax", "argmin", "argsort", "as_dtype", "as_string", "assert_equal",
    "assert_greater", "assert_greater_equal", "assert_less", "assert_less_equal",
    "assert_negative", "assert_non_negative", "assert_non_positive", "assert_none_equal",
    "assert_positive", "assert_rank", "assert_type", "assign", "assign_add", "assign_sub",
    "atan2", "avg_pool", "avg_pool1d", "avg_pool2d", "batch_gather", "batch_normalization",
    "batch_to_space", "batch_to_space_nd", "bfloat16", "bias_add", "bincount", "bool", "bool_",
    "boolean_mask", "broadcast_to", "callbacks", "case", "cast", "categorical", "ceil",
    "check_numerics", "cholesky", "cholesky_solve", "clip_by_global_norm", "clip_by_norm",
    "clip_by_value", "colocate_with", "compat", "complex128", "complex64", "concat", "cond",
    "config", "confusion_matrix", "constant", "constant_initializer", "constant_value",
    "container", "contrib", "control_dependencies", "conv1d", "conv2d", "conv2d_transpose",
    "convert_to_tensor", "coordinator", "core", "cos", "count_nonzero", "cross", "cumprod",
    "cumsum", "data", "debugging", "decode_csv", "depth_to_space", "depthwise_conv2d", "device",
    "devices", "diag", "diag_part", "digamma", "dimension_value", "disable_eager_execution",
    "disable_v2_behavior", "distribute", "div", "div_no_nan", "divide", "dropout", "dtypes",
    "dynamic_partition", "dynamic_stitch", "einsum", "elu", "enable_eager_execution",
    "enable_v2_behavior", "ensure_shape", "equal", "erf", "erfc", "errors", "executing_eagerly",
    "exp", "expand_dims", "expm1", "extract_image_patches", "eye", "fill",
    "fixed_size_partitioner", "flags", "float16", "float32", "float64", "floor", "floor_div",
    "floordiv", "floormod", "foldl", "foldr", "gather", "gather_nd", "gelu", "get_collection",
    "get_collection_ref", "get_default_graph", "get_default_session", "get_local_variable",
    "get_op_def", "get_seed", "get_variable", "get_variable_scope", "gfile", "global_norm",
    "global_variables", "global_variables_initializer", "glorot_normal_initializer",
    "glorot_uniform_initializer", "gradients", "greater", "greater_equal", "group", "hessians",
    "histogram_fixed_width", "identity", "identity_n", "image", "import_graph_def", "in_top_k",
    "initialize_all_variables", "initialize_local_variables", "initialize_variables",
    "initializers", "int16", "int32", "int64", "int8", "invert_permutation", "io", "is_finite",
    "is_inf", "is_nan", "is_variable_initialized", "keras", "l2_loss", "l2_normalize", "layers",
    "lbeta", "leaky_relu", "less", "less_equal", "lgamma", "lin_space", "linalg", "linspace",
    "listdiff", "load_graph_def", "local_variables", "local_variables_initializer", "log",
    "log1p", "log_sigmoid", "log_softmax", "logging", "logical_and", "logical_not",
    "logical_or", "logical_xor", "losses", "losses_v1", "make_template", "map_fn", "math",
    "matmul", "matrix_band_part", "matrix_determinant", "matrix_diag", "matrix_diag_part",
    "matrix_inverse", "matrix_set_diag", "matrix_solve", "matrix_solve_ls", "matrix_transpose",
    "matrix_triangular_solve", "max_pool", "max_pool1d", "max_pool2d", "maximum", "meshgrid",
    "metrics", "min_max_variable_partitioner", "minimum", "mixed_precision", "mod",
    "model_variables", "models", "moments", "moving_average_variables", "mul", "multinomial",
    "multiply", "name_scope", "neg", "negative", "newaxis", "nn", "no_gradient", "no_op",
    "no_regularizer", "norm", "normal", "not_equal", "numpy_function", "one_hot", "ones",
    "ones_initializer", "ones_like", "op_scope", "optimizers", "orthogonal_initializer", "pad",
    "placeholder", "placeholder_with_default", "pow", "print", "py_func", "qr", "queue_runner",
    "random", "random_crop", "random_normal", "random_normal_initializer", "random_shuffle",
    "random_uniform", "random_uniform_initializer", "range", "rank", "realdiv", "reciprocal",
    "reduce_all", "reduce_any", "reduce_join", "reduce_logsumexp", "reduce_max", "reduce_mean",
    "reduce_min", "reduce_prod", "reduce_std", "reduce_sum", "reduce_variance", "regex_replace",
    "regularizers", "relu", "relu6", "report_uninitialized_variables", "reset_default_graph",
    "reshape", "resize_images", "resource", "reverse", "reverse_sequence", "reverse_v2", "rint",
    "rnn", "roll", "round", "rsqrt", "runtime", "saver", "saving", "scan", "scatter_add",
    "scatter_nd", "scatter_nd_add", "scatter_nd_sub", "scatter_nd_update", "scatter_sub",
    "scatter_update", "searchsorted", "segment_max", "segment_mean", "segment_min",
    "segment_prod", "segment_sum", "select", "select_v2", "self_adjoint_eig",
    "self_adjoint_eigvals", "selu", "sequence_mask", "set_random_seed", "setdiff1d", "shape",
    "shuffle", "sigmoid", "sigmoid_cross_entropy_with_logits", "sign", "silu", "sin", "size",
    "slice", "softmax", "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2", "softplus", "softsign", "sort", "space_to_batch",
    "space_to_batch_nd", "space_to_depth", "sparse", "sparse_add", "sparse_placeholder", "sparse_reduce_sum",
    "sparse_softmax_cross_entropy_with_logits", "sparse_tensor_dense_matmul",
    "sparse_tensor_to_dense", "sparse_to_dense", "split",
    "sqrt", "square", "squared_difference", "squeeze", "stack", "stop_gradient",
    "strided_slice", "string", "string_join", "string_strip", "string_to_number", "strings",
    "sub", "substr", "subtract", "summary", "svd", "swish", "switch_case", "tanh",
    "tensor_diag", "tensor_scatter_add", "tensor_scatter_nd_add", "tensor_scatter_nd_max",
    "tensor_scatter_nd_min", "tensor_scatter_nd_sub", "tensor_scatter_nd_update",
    "tensor_scatter_sub", "tensor_scatter_update", "tensordot", "test", "tile", "timeline",
    "to_bfloat16", "to_double", "to_float", "to_int32", "to_int64", "trace", "train",
    "trainable_variables", "transpose", "truediv", "truncated_normal",
    "truncated_normal_initializer", "truncatediv", "tuple", "uint16", "uint32", "uint64",
    "uint8", "uniform", "unique", "unique_with_counts", "unsorted_segment_max",
    "unsorted_segment_mean", "unsorted_segment_min", "unsorted_segment_prod",
    "unsorted_segment_sqrt_n", "unsorted_segment_sum", "unstack", "utils",
    "variable_axis_size_partitioner", "variable_creator_scope", "variable_op_scope",
    "variable_scope", "variables_initializer", "variance_scaling_initializer",
    "verify_tensor_all_finite", "version", "weighted_cross_entropy_with_logits", "where",
    "where_v2", "while_loop", "zeros", "zeros_initializer", "zeros_like",
]


def _public(module):
    return sorted(n for n in dir(module) if not n.startswith("_"))


def _leaks(module, names):
    bad = []
    for n in names:
        v = getattr(module, n)
        if isinstance(v, types.ModuleType) and v.__name__.split(".")[0] != "mylib":
            bad.append(f"{n} (the third-party module {v.__name__})")
        elif isinstance(v, OpDef):
            bad.append(f"{n} (the OpDef of op type {v.name!r})")
    return bad


def test_public_names_are_the_listed_ones():
    names = _public(mylib)
    added = sorted(set(names) - set(PUBLIC_NAMES))
    gone = sorted(set(PUBLIC_NAMES) - set(names))
    assert not added and not gone, (
        f"mylib's public names changed: new {added}, gone {gone}. If that is deliberate, "
        "update PUBLIC_NAMES in tests/test_namespace.py (and the __all__ the name comes "
        "from); if not, a name leaked, e.g. through a star import of a module without "
        "__all__ or an import the module's __all__ does not list.")
    assert PUBLIC_NAMES == sorted(PUBLIC_NAMES), "keep PUBLIC_NAMES sorted"


def test_no_third_party_module_or_op_definition_is_public():
    bad = _leaks(mylib, _public(mylib))
    assert not bad, f"mylib exposes {bad}; import these under a private name or list " \
                    "the module's public names in its __all__"


def _star_imported_modules():
    out = set()
    for root, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                tree = ast.parse(open(os.path.join(root, f)).read())
                out |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                        and n.level == 0 and any(a.name == "*" for a in n.names)}
    return sorted(out)


def test_star_imported_modules_declare_their_public_names():
    mods = _star_imported_modules()
    assert "mylib.core" in mods and "mylib.core.ops.math_ops" in mods
    for name in mods:
        module = __import__(name, fromlist=["*"])
        assert hasattr(module, "__all__"), f"{name} is star-imported but has no __all__"
        assert len(set(module.__all__)) == len(module.__all__), f"{name}.__all__ repeats a name"
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        assert not missing, f"{name}.__all__ lists {missing}, which it does not define"
        bad = _leaks(module, module.__all__)
        assert not bad, f"{name}.__all__ exports {bad}"
