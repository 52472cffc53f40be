"""The graph core: the graph as data (graphs, ops, variables, gradients, graph files).

Nothing here executes a graph: `mylib.runtime` does (Session, Saver, queue runners).
"""

from mylib.core import dtypes  # noqa: E402
from mylib import errors  # noqa: E402,F401
from mylib.core.dtypes import *  # noqa: E402,F401,F403
from mylib.core.dtypes import DType, as_dtype  # noqa: E402
from mylib.core.graph import (Graph, GraphKeys, Operation, Tensor, add_to_collection,  # noqa: E402
                              add_to_collections, colocate_with, control_dependencies, device,
                              get_collection, get_collection_ref, get_default_graph, get_default_session,
                              name_scope, reset_default_graph, set_random_seed)
from mylib.core.tensor_shape import TensorShape  # noqa: E402
from mylib.core.op_registry import (OpDef, RegisterGradient, NotDifferentiable, TensorSpec,  # noqa: E402
                                    convert_to_tensor, get_op_def)
from mylib.core.ops.constant_ops import *  # noqa: E402,F401,F403
from mylib.core.ops.array_ops import *  # noqa: E402,F401,F403
from mylib.core.ops.indexing_ops import *  # noqa: E402,F401,F403
from mylib.core.ops.math_ops import *  # noqa: E402,F401,F403
from mylib.core.ops.reduction_ops import *  # noqa: E402,F401,F403
from mylib.core.ops import state_ops  # noqa: E402,F401
from mylib.core.variables import (Variable, global_variables, global_variables_initializer,  # noqa: E402
                                  is_variable_initialized, local_variables,
                                  local_variables_initializer, report_uninitialized_variables,
                                  trainable_variables, variable_creator_scope,
                                  variables_initializer)
from mylib.core.gradients import IndexedSlices, gradients  # noqa: E402
from mylib.core.ops import training_ops  # noqa: E402,F401
from mylib.core.ops.nn_ops import *  # noqa: E402,F401,F403
from mylib.core.ops.random_ops import *  # noqa: E402,F401,F403
from mylib.core.ops.clip_ops import *  # noqa: E402,F401,F403
from mylib.core.ops import nn_ops, random_ops, clip_ops  # noqa: E402,F401
from mylib.core.ops.host_ops import Print, numpy_function, py_func  # noqa: E402,F401
from mylib.core.ops.host_ops import print  # noqa: E402,F401,A004
from mylib.core.graph_io import GraphDef, MetaGraphDef, NodeDef, load_graph_def  # noqa: E402,F401
from mylib.core.graph_import import import_graph_def  # noqa: E402,F401
from mylib.core.ops import check_ops, data_flow_ops  # noqa: E402,F401
from mylib.core.ops.data_flow_ops import (FIFOQueue, PaddingFIFOQueue, PriorityQueue,  # noqa: E402,F401
                                          QueueBase, RandomShuffleQueue)
from mylib.core.ops.check_ops import (Assert, assert_equal, assert_greater,  # noqa: E402,F401
                                      assert_greater_equal, assert_less, assert_less_equal,
                                      assert_negative, assert_non_negative,
                                      assert_non_positive, assert_none_equal, assert_positive,
                                      assert_rank, assert_type, check_numerics)
from mylib.core.ops.control_flow_ops import case, cond, map_fn, scan, while_loop  # noqa: E402,F401
