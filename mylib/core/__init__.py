"""The graph core: the graph as data (graphs, ops, variables, gradients, graph files).

Nothing here executes a graph: `mylib.runtime` does (Session, Saver, queue runners).
`__all__` is the core's share of the public `mylib` namespace (`from mylib.core import *`):
TensorFlow's names only; op definitions (`MatMul`, ...) stay in their `ops` modules.
"""

from mylib import errors
from mylib.core import dtypes
from mylib.core.dtypes import *  # noqa: F403
from mylib.core.graph import (Graph, GraphKeys, Operation, Tensor, add_to_collection,
                              add_to_collections, colocate_with, control_dependencies, device,
                              get_collection, get_collection_ref, get_default_graph,
                              get_default_session, name_scope, reset_default_graph,
                              set_random_seed)
from mylib.core.tensor_shape import Dimension, TensorShape, dimension_value
from mylib.core.op_registry import (OpDef, RegisterGradient, NotDifferentiable, TensorSpec,
                                    convert_to_tensor, get_op_def)
from mylib.core.ops import (array_ops, clip_ops, constant_ops, indexing_ops, math_ops, nn_ops,
                            random_ops, reduction_ops)
from mylib.core.ops.constant_ops import *  # noqa: F403
from mylib.core.ops.array_ops import *  # noqa: F403
from mylib.core.ops.indexing_ops import *  # noqa: F403
from mylib.core.ops.math_ops import *  # noqa: F403
from mylib.core.ops.reduction_ops import *  # noqa: F403
from mylib.core.ops import apply_ops, state_ops, training_ops  # noqa: F401 - registers op types
from mylib.core.variables import (Variable, global_variables, global_variables_initializer,
                                  is_variable_initialized, local_variables,
                                  local_variables_initializer, model_variables,
                                  moving_average_variables, report_uninitialized_variables,
                                  trainable_variables, variable_creator_scope,
                                  variables_initializer)
from mylib.core.gradients import IndexedSlices, gradients
from mylib.core.backprop import GradientTape, UnconnectedGradients
from mylib.core import init_ops, variable_scope as _variable_scope_module
from mylib.core.init_ops import (constant_initializer, glorot_normal_initializer,
                                 glorot_uniform_initializer, ones_initializer,
                                 orthogonal_initializer, random_normal_initializer,
                                 random_uniform_initializer, truncated_normal_initializer,
                                 variance_scaling_initializer, zeros_initializer)
from mylib.core.variable_scope import (AUTO_REUSE, PartitionedVariable, VariableScope,
                                       fixed_size_partitioner, get_local_variable,
                                       get_variable, get_variable_scope,
                                       min_max_variable_partitioner, no_regularizer,
                                       variable_axis_size_partitioner, variable_op_scope,
                                       variable_scope)
from mylib.core.template import make_template
from mylib.core.ops.nn_ops import *  # noqa: F403
from mylib.core.ops.random_ops import *  # noqa: F403
from mylib.core.ops.clip_ops import *  # noqa: F403
from mylib.core.ops.host_ops import Print, numpy_function, py_func
from mylib.core.ops.host_ops import print  # noqa: A004
from mylib.core.graph_io import GraphDef, MetaGraphDef, NodeDef, load_graph_def
from mylib.core.graph_import import import_graph_def
from mylib.core.ops.data_flow_ops import (FIFOQueue, PaddingFIFOQueue, PriorityQueue,
                                          QueueBase, RandomShuffleQueue)
from mylib.core.ops.check_ops import (Assert, assert_equal, assert_greater,
                                      assert_greater_equal, assert_less, assert_less_equal,
                                      assert_negative, assert_non_negative,
                                      assert_non_positive, assert_none_equal, assert_positive,
                                      assert_rank, assert_type, check_numerics)
from mylib.core.ops.control_flow_ops import (case, cond, foldl, foldr, map_fn, scan, switch_case,
                                             while_loop)
from mylib.core.ops.control_flow_ops import tuple_ as tuple  # noqa: A004 - TF's name
from mylib.core.ops import linalg_ops, segment_ops, sequence_ops
from mylib.core.ops.image_ops import extract_image_patches, random_crop
from mylib.core.ops.tensor_array_ops import TensorArray
from mylib.core.ops.linalg_ops import *  # noqa: F403
from mylib.core.ops.segment_ops import *  # noqa: F403
from mylib.core.ops.sequence_ops import *  # noqa: F403
from mylib.core.ops import special_ops
from mylib.core.ops.special_ops import *  # noqa: F403
from mylib.core.ops import array_extra_ops, math_extra_ops
from mylib.core.ops.array_extra_ops import *  # noqa: F403
from mylib.core.ops.math_extra_ops import *  # noqa: F403
from mylib.core.ops import string_ops
from mylib.core import sparse_tensor
from mylib.core.sparse_tensor import *  # noqa: F403
from mylib.core.ops.string_ops import (as_string, decode_csv, reduce_join,  # noqa: F401
                                       regex_replace, string_join, string_strip,
                                       string_to_number, substr)

__all__ = [
    "dtypes", "errors",
    "Graph", "GraphKeys", "Operation", "Tensor", "TensorShape", "Dimension",
    "dimension_value", "add_to_collection",
    "add_to_collections", "colocate_with", "control_dependencies", "device", "get_collection",
    "get_collection_ref", "get_default_graph", "get_default_session", "name_scope",
    "reset_default_graph", "set_random_seed",
    "OpDef", "RegisterGradient", "NotDifferentiable", "TensorSpec", "convert_to_tensor",
    "get_op_def",
    "Variable", "global_variables", "global_variables_initializer", "is_variable_initialized",
    "local_variables", "local_variables_initializer", "report_uninitialized_variables",
    "model_variables", "moving_average_variables", "make_template",
    "trainable_variables", "variable_creator_scope", "variables_initializer",
    "IndexedSlices", "gradients", "GradientTape", "UnconnectedGradients",
    "constant_initializer", "glorot_normal_initializer", "glorot_uniform_initializer",
    "ones_initializer", "orthogonal_initializer", "random_normal_initializer",
    "random_uniform_initializer", "truncated_normal_initializer",
    "variance_scaling_initializer", "zeros_initializer",
    "AUTO_REUSE", "PartitionedVariable", "VariableScope", "fixed_size_partitioner",
    "get_local_variable", "get_variable", "get_variable_scope", "min_max_variable_partitioner",
    "no_regularizer", "variable_axis_size_partitioner", "variable_op_scope", "variable_scope",
    "Print", "numpy_function", "py_func", "print",
    "GraphDef", "MetaGraphDef", "NodeDef", "load_graph_def", "import_graph_def",
    "FIFOQueue", "PaddingFIFOQueue", "PriorityQueue", "QueueBase", "RandomShuffleQueue",
    "Assert", "assert_equal", "assert_greater", "assert_greater_equal", "assert_less",
    "assert_less_equal", "assert_negative", "assert_non_negative", "assert_non_positive",
    "assert_none_equal", "assert_positive", "assert_rank", "assert_type", "check_numerics",
    "case", "cond", "switch_case", "foldl", "foldr", "map_fn", "scan", "while_loop", "tuple",
    "random_crop", "extract_image_patches", "TensorArray",
    "as_string", "decode_csv", "reduce_join", "regex_replace", "string_join", "string_strip",
    "string_to_number", "substr",
] + (dtypes.__all__ + constant_ops.__all__ + array_ops.__all__ + indexing_ops.__all__
     + math_ops.__all__ + reduction_ops.__all__ + nn_ops.__all__ + random_ops.__all__
     + clip_ops.__all__ + linalg_ops.__all__ + segment_ops.__all__ + sequence_ops.__all__
     + special_ops.__all__ + array_extra_ops.__all__ + math_extra_ops.__all__
     + sparse_tensor.__all__)
