"""`ml.train`: TensorFlow 1's ``tf.train`` names.

Training (each in its module here): TensorFlow 1's optimizers with its own update rules
(`optimizer`), learning-rate schedules on the global step (`learning_rate_decay`),
`ExponentialMovingAverage` (`moving_averages`), monitored sessions and their hooks
(`monitored_session`, `basic_session_run_hooks`, `session_run_hook`), and
`SyncReplicasOptimizer` / `replica_device_setter` (`sync_replicas`).

Checkpoints (`Saver`, `latest_checkpoint`, `get_checkpoint_state`, ...) and the global
step come from `mylib.runtime.saver`; see its docstring for the file format.
"""

from mylib.runtime.saver import (DATA_SUFFIX, CheckpointState, Saver,  # noqa: F401
                              assert_global_step, checkpoint_exists, create_global_step,
                              get_checkpoint_mtimes, get_checkpoint_state, get_global_step,
                              get_or_create_global_step, global_step, latest_checkpoint,
                              list_variables, load_checkpoint, load_variable,
                              remove_checkpoint, update_checkpoint_state)
from mylib.core.graph_io import write_graph  # noqa: E402,F401
from mylib.runtime.meta_graph import export_meta_graph  # noqa: E402,F401
from mylib.runtime.saver import import_meta_graph  # noqa: E402,F401
# Queue runners and the coordinator (input pipelines).
from mylib.runtime.coordinator import Coordinator, LooperThread  # noqa: E402,F401
from mylib.runtime.queue_runner import (QueueRunner, add_queue_runner,  # noqa: E402,F401
                                     start_queue_runners)
# TensorFlow 1's optimizers (its own update rules; see mylib.train.optimizer).
from mylib.train.optimizer import (AdadeltaOptimizer, AdagradOptimizer,  # noqa: E402,F401
                                   AdamOptimizer, FtrlOptimizer, GradientDescentOptimizer,
                                   MomentumOptimizer, Optimizer, ProximalAdagradOptimizer,
                                   ProximalGradientDescentOptimizer, RMSPropOptimizer)
# TF1 learning-rate schedules on the global step, and moving averages.
from mylib.train.learning_rate_decay import (cosine_decay,  # noqa: E402,F401
                                                cosine_decay_restarts, exponential_decay,
                                                inverse_time_decay, linear_cosine_decay,
                                                natural_exp_decay, piecewise_constant,
                                                polynomial_decay)
from mylib.train.moving_averages import ExponentialMovingAverage  # noqa: E402,F401
from mylib.train.input import (batch, batch_join, input_producer,  # noqa: E402,F401
                               limit_epochs, range_input_producer, shuffle_batch,
                               shuffle_batch_join, slice_input_producer,
                               string_input_producer)
# Monitored sessions and their hooks.
from mylib.train.session_run_hook import (SessionRunArgs, SessionRunContext,  # noqa: E402,F401
                                             SessionRunHook, SessionRunValues)
from mylib.train.basic_session_run_hooks import (  # noqa: E402,F401
    CheckpointSaverHook, CheckpointSaverListener, FeedFnHook, FinalOpsHook,
    GlobalStepWaiterHook, LoggingTensorHook, NanLossDuringTrainingError, NanTensorHook,
    SecondOrStepTimer, StepCounterHook, StopAtStepHook, SummarySaverHook)
from mylib.train.monitored_session import (  # noqa: E402,F401
    ChiefSessionCreator, MonitoredSession, MonitoredTrainingSession, Scaffold, SessionCreator,
    SingularMonitoredSession, WorkerSessionCreator)
# Synchronous replicas and parameter-server placement (over ParameterServerStrategy).
from mylib.train.sync_replicas import (SyncReplicasOptimizer,  # noqa: E402,F401
                                          replica_device_setter)
from mylib.distribute.cluster_resolver import ClusterSpec  # noqa: E402,F401
from mylib.train.checkpoint_reader import NewCheckpointReader  # noqa: E402,F401
from mylib.summary.reader import summary_iterator  # noqa: E402,F401

# TensorFlow 1 names deliberately not provided here, and what to use instead.
_MISSING = {
    "Supervisor": "tf.train.MonitoredTrainingSession (hooks for checkpoints and summaries)",
    "Server": "ml.distribute.ParameterServerStrategy (its tasks run on Ray; no gRPC server "
              "per process)",
    "Example": "numpy arrays fed through placeholders (TFRecord files are not read)",
    "Features": "numpy arrays fed through placeholders (TFRecord files are not read)",
    "Feature": "numpy arrays fed through placeholders (TFRecord files are not read)",
    "ProfilerHook": "RunOptions(trace_level=FULL_TRACE) with RunMetadata and "
                    "ml.timeline.Timeline",
    "init_from_checkpoint": "a tf.train.Saver(var_list={name_in_checkpoint: variable})"
                            ".restore(sess, path)",
    "AdagradDAOptimizer": "tf.train.AdagradOptimizer or ProximalAdagradOptimizer",
}


def __getattr__(name):
    if name in _MISSING:
        raise AttributeError(f"mylib.train has no {name!r}: use {_MISSING[name]} instead")
    raise AttributeError(f"module 'mylib.train' has no attribute {name!r}")
