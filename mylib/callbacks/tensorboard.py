"""`TensorBoard` callback.

Epoch scalars go to two runs, ``<log_dir>/train`` and ``<log_dir>/validation``, with the
same tags (``epoch_loss``, ``epoch_accuracy``, ...) and the epoch index as step, as
Keras writes them; the model's graph (training step included) is written once to the
train run as a GraphDef for TensorBoard's graph tab
(`mylib.summary.graph.to_tensorboard_graph_def`). Events go through mylib's own
`FileWriter` (a queue and a writer thread): each epoch's end flushes and fsyncs every
event added so far, so a process killed after an epoch keeps that epoch's logs.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from mylib import errors
from mylib.callbacks import Callback, _batches_run
from mylib.core.compat_args import warn_ignored
from mylib.runtime.policy import get_policy
from mylib.summary.summary_ops import histogram_proto
from mylib.summary.writer import FileWriter


class TensorBoard(Callback):
    """Writes TensorBoard logs (event files that TensorBoard reads).

    Args:
      log_dir: root directory; runs ``train/`` and ``validation/`` are written below it.
      write_graph: write the model's graph (with its training step) once, to ``train/``.
      update_freq: ``"epoch"`` (scalars ``epoch_<name>`` at each epoch end), ``"batch"``
        or an int N (also ``batch_<name>`` every N training batches; each such write
        waits for that step to finish).
      histogram_freq: every this many epochs, histograms of the weights (0: never),
        read from the model's weights (no validation data needed), tagged by weight
        name (``dense/kernel``), in TensorFlow 1's buckets (Keras 3 on TensorFlow
        writes TF2 histogram tensors); a weight holding NaN or Inf is skipped with a
        warning.
      profile_batch: training batches to profile with the JAX (XLA) profiler, as
        Keras: 0 (default) disables it; an int N profiles the N-th batch; a pair
        ``(start, stop)`` (or the string ``"start,stop"``) profiles batches start to
        stop inclusive. Batches are counted from 1 across the epochs of one `fit`. The
        trace goes to ``<log_dir>/train/plugins/profile/<run>/`` (``*.xplane.pb``,
        ``*.trace.json.gz``), where TensorBoard's profile plugin finds it. The profiler
        is process-wide: when another trace is running, this one is skipped with a
        warning.
      write_images, embeddings_freq: accepted for Keras compatibility and ignored (a
        non-default value warns once): weights are written as histograms, not images,
        and no embedding projector data is written.

    The optimizer's learning rate is written each epoch as ``epoch_learning_rate``.

    Raises:
      ValueError: `update_freq` not "epoch", "batch" or a positive int; `profile_batch`
        not a non-negative int or a pair ``(start, stop)`` with ``0 < start <= stop``
        (the message names `profile_batch`).
    """

    _n_writers = 0

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 update_freq="epoch", profile_batch=0, embeddings_freq=0):
        super().__init__()
        if write_images:
            warn_ignored("TensorBoard", "write_images",
                         "weights are written as histograms (histogram_freq), not images.")
        if embeddings_freq:
            warn_ignored("TensorBoard", "embeddings_freq",
                         "no embedding projector data is written.")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        if update_freq == "batch":
            update_freq = 1
        if update_freq != "epoch" and not (isinstance(update_freq, int) and update_freq > 0):
            raise ValueError("`update_freq` must be 'epoch', 'batch' or a positive int. "
                             f"Received: update_freq={update_freq!r}")
        self.update_freq = update_freq
        self._start_batch, self._stop_batch = _parse_profile_batch(profile_batch)
        self.profile_batch = profile_batch
        self._profiling = False
        self._step_trace = None
        self._writers = {}
        self._graph_written = False
        self._global_batch = 0
        self._profile_tried = False

    def _base_dir(self):
        """`log_dir` on the chief; on the other workers of a multi-worker job a
        temporary directory, removed when training ends (as TensorFlow does)."""
        if is_chief(self.model):
            return self.log_dir
        if getattr(self, "_tmp_dir", None) is None:
            import tempfile

            self._tmp_dir = tempfile.mkdtemp(prefix="mylib_tb_worker_")
        return self._tmp_dir

    def _writer(self, run):
        w = self._writers.get(run)
        if w is None:
            # Event file names carry the time in whole seconds: a suffix unique to this
            # writer keeps a second fit in the same second from overwriting the first.
            TensorBoard._n_writers += 1
            w = self._writers[run] = FileWriter(
                os.path.join(self._base_dir(), run),
                filename_suffix=f".{os.getpid()}.{TensorBoard._n_writers}.v2")
        return w

    def _scalar(self, run, tag, value, step):
        from tensorboardX.proto import summary_pb2

        s = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag,
                                                                 simple_value=value)])
        self._writer(run).add_summary(s, step)

    def on_train_begin(self, logs=None):
        self._global_batch = 0
        self._profile_tried = False
        w = self._writer("train")
        if self.write_graph and not self._graph_written:
            w.add_graph(self.model.graph)
            w.flush()
            self._graph_written = True

    def on_train_batch_begin(self, batch, logs=None):
        if not self._stop_batch:
            return
        n = self._global_batch + 1  # 1-based, counted across epochs (Keras)
        # With steps_per_execution an execution of several batches may step over
        # `start`: profiling starts at the first one that begins at or after it.
        if not self._profile_tried and self._start_batch <= n <= self._stop_batch:
            self._profile_tried = True
            self._start_profiler()
        if self._profiling:
            import jax

            # Step markers let the profile plugin's overview split the trace by batch.
            self._step_trace = jax.profiler.StepTraceAnnotation("train", step_num=n)
            self._step_trace.__enter__()

    def on_train_batch_end(self, batch, logs=None):
        before = self._global_batch
        self._global_batch += _batches_run(self, batch)
        if self._profiling:
            # The step runs asynchronously: wait for its outputs so the trace holds it.
            for v in (logs or {}).values():
                np.asarray(v)
            if self._step_trace is not None:
                self._step_trace.__exit__(None, None, None)
                self._step_trace = None
            if self._global_batch >= self._stop_batch:
                self._stop_profiler()
        if isinstance(self.update_freq, int) and logs and \
                self._global_batch // self.update_freq > before // self.update_freq:
            for k, v in logs.items():
                if np.ndim(v) == 0:  # metrics with several values are not scalars
                    self._scalar("train", f"batch_{k}", float(np.asarray(v)),
                                 self._global_batch)

    def _start_profiler(self):
        import jax

        try:
            jax.profiler.start_trace(os.path.join(self._base_dir(), "train"))
            self._profiling = True
        except Exception as e:  # noqa: BLE001 - profiling must never stop training
            warnings.warn(f"TensorBoard: the profiler did not start ({e}); batches "
                          f"{self._start_batch}-{self._stop_batch} are not profiled.",
                          stacklevel=3)

    def _stop_profiler(self):
        import jax

        if self._step_trace is not None:
            self._step_trace.__exit__(None, None, None)
            self._step_trace = None
        self._profiling = False
        try:
            jax.profiler.stop_trace()
        except Exception as e:  # noqa: BLE001
            warnings.warn(f"TensorBoard: the profiler did not stop cleanly ({e}).",
                          stacklevel=3)

    def _learning_rate(self):
        # The float learning-rate variable, or the schedule's value at the current step.
        from mylib.runtime import keras_session as backend

        opt = getattr(self.model, "optimizer", None)
        if opt is None or getattr(opt, "_iterations", None) is None:
            return None
        if opt._lr_var is not None:
            return float(backend.get_values([opt._lr_var])[0])
        try:
            step = int(backend.get_values([opt._iterations])[0])
            return float(np.asarray(opt._learning_rate(step)))
        except Exception:  # noqa: BLE001 - a schedule that is not a plain function
            return None

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        if "learning_rate" not in logs:
            lr = self._learning_rate()
            if lr is not None:
                logs["learning_rate"] = lr
        for k, v in logs.items():
            if np.ndim(v) != 0:  # metrics with several values are not scalars
                continue
            if k.startswith("val_"):
                self._scalar("validation", "epoch_" + k[4:], float(v), epoch)
            else:
                self._scalar("train", "epoch_" + k, float(v), epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            from tensorboardX.proto import summary_pb2

            values = []
            for var, val in zip(self.model.weights, self.model.get_weights()):
                tag = var.name.split(":")[0]
                try:
                    values.append(summary_pb2.Summary.Value(tag=tag,
                                                            histo=histogram_proto(val)))
                except errors.InvalidArgumentError:
                    # Weights that went NaN must not stop training (Keras writes them).
                    warnings.warn(f"TensorBoard: weight '{tag}' holds NaN or Inf at epoch "
                                  f"{epoch}; its histogram is not written.", stacklevel=2)
            self._writer("train").add_summary(summary_pb2.Summary(value=values), epoch)
        # Every event of the epoch is on disk (fsynced) before the next one starts.
        for w in self._writers.values():
            w.flush()

    def on_train_end(self, logs=None):
        if self._profiling:  # training ended inside the profiled range
            self._stop_profiler()
        for w in self._writers.values():
            w.close()
        self._writers = {}
        tmp = getattr(self, "_tmp_dir", None)
        if tmp is not None:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
            self._tmp_dir = None


def _parse_profile_batch(profile_batch):
    """``(start, stop)`` of Keras's `profile_batch` (``(0, 0)`` when disabled)."""
    message = ("`profile_batch` must be a non-negative int or a pair of positive ints "
               "(start, stop) with start <= stop, the range of batches to profile. "
               f"Received: profile_batch={profile_batch!r}")
    value = profile_batch
    if isinstance(value, str):  # Keras's legacy "start,stop" / "N"
        try:
            value = [int(p) for p in value.split(",")]
        except ValueError:
            raise ValueError(message) from None
        value = value[0] if len(value) == 1 else value
    if value is None or value is False:
        return 0, 0
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        start = stop = int(value)
    elif isinstance(value, (tuple, list)) and len(value) == 2 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        start, stop = (int(v) for v in value)
        if start == 0 and stop == 0:
            return 0, 0
        if start <= 0:
            raise ValueError(message)
    else:
        raise ValueError(message)
    if start < 0 or stop < start:
        raise ValueError(message)
    return start, stop


def is_chief(model):
    """Whether this process writes logs and checkpoints: always, except on the
    non-chief workers of a multi-worker strategy."""
    policy = get_policy(getattr(model, "graph", None))
    return policy is None or bool(policy.is_chief())
