"""TensorFlow 1's common `SessionRunHook`s (``basic_session_run_hooks.py``):
`StopAtStepHook`, `CheckpointSaverHook`, `SummarySaverHook`, `LoggingTensorHook`,
`NanTensorHook`, `StepCounterHook`, `FinalOpsHook`, `FeedFnHook`, and the timers and
checkpoint listeners they use."""

from __future__ import annotations

import os
import time

import numpy as np

from mylib import logging
from mylib.core.graph import GraphKeys, get_default_graph
from mylib.core.graph_io import write_graph
from mylib.runtime import saver as saver_lib
from mylib.summary.writer import FileWriterCache
from mylib.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["SecondOrStepTimer", "StopAtStepHook", "CheckpointSaverListener",
           "CheckpointSaverHook", "SummarySaverHook", "LoggingTensorHook", "NanTensorHook",
           "NanLossDuringTrainingError", "StepCounterHook", "FinalOpsHook", "FeedFnHook",
           "GlobalStepWaiterHook"]


def _global_step_or_raise(hook):
    gs = saver_lib.get_global_step()
    if gs is None:
        raise RuntimeError(f"Global step should be created to use {hook}.")
    return gs


def _as_graph_element(t):
    g = get_default_graph()
    if isinstance(t, str):
        return g.as_graph_element(t) if hasattr(g, "as_graph_element") else \
            g.get_tensor_by_name(t)
    return t


class SecondOrStepTimer:
    """Triggers every `every_secs` seconds or every `every_steps` steps (exactly one).

    Raises:
      ValueError: both or neither given, or a negative value.
    """

    def __init__(self, every_secs=None, every_steps=None):
        if (every_secs is None) == (every_steps is None):
            raise ValueError("exactly one of every_secs and every_steps should be provided.")
        if (every_secs or 0) < 0 or (every_steps or 0) < 0:
            raise ValueError("every_secs and every_steps must be >= 0")
        self._every_secs, self._every_steps = every_secs, every_steps
        self.reset()

    def reset(self):
        self._last_time = None
        self._last_step = None

    def should_trigger_for_step(self, step):
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_time + self._every_secs
        return step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step):
        """Records a trigger at `step`; returns ``(elapsed_secs, elapsed_steps)`` since
        the previous one (None, None the first time)."""
        now = time.time()
        if self._last_time is None:
            out = (None, None)
        else:
            out = (now - self._last_time, step - self._last_step)
        self._last_time, self._last_step = now, step
        return out

    def last_triggered_step(self):
        return self._last_step


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches a step.

    Args:
      num_steps: stop after this many more steps (counted from the step found when the
        session is created).
      last_step: stop when the global step is >= this.
    Raises:
      ValueError: both or neither given.
      RuntimeError (at `begin`): the graph has no global step.
    """

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps, self._last_step = num_steps, last_step

    def begin(self):
        self._global_step_tensor = _global_step_or_raise("StopAtStepHook")

    def after_create_session(self, session, coord):
        step = session.run(self._global_step_tensor)
        if self._last_step is None:
            self._last_step = step + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        # The fetched value is read before this run's increment.
        if run_values.results + 1 >= self._last_step:
            step = run_context.session.run(self._global_step_tensor)
            if step >= self._last_step:
                run_context.request_stop()


class CheckpointSaverListener:
    """Called around the saves of a `CheckpointSaverHook`: `begin`, `before_save(session,
    global_step)`, `after_save(session, global_step)` (returning True requests a stop),
    `end(session, global_step)`."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves checkpoints ``<checkpoint_dir>/<checkpoint_basename>-<step>`` every
    `save_secs` seconds or `save_steps` steps, once when the session is created and once
    at the end; writes ``graph.pbtxt`` to `checkpoint_dir` first.

    Args:
      checkpoint_dir: directory (created if missing).
      save_secs / save_steps: exactly one.
      saver / scaffold: the `Saver` (default: the scaffold's, else the graph's ``SAVERS``
        collection, else a new `Saver` of all global variables).
      checkpoint_basename: file prefix (default ``"model.ckpt"``).
      listeners: `CheckpointSaverListener`s.
    Raises:
      ValueError: both `saver` and `scaffold`, or not exactly one of secs/steps.
    """

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None,
                 save_graph_def=True):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._checkpoint_dir = str(checkpoint_dir)
        self._save_path = os.path.join(self._checkpoint_dir, checkpoint_basename)
        self._saver, self._scaffold = saver, scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self._save_graph_def = save_graph_def

    def begin(self):
        self._summary_writer = FileWriterCache.get(self._checkpoint_dir)
        self._global_step_tensor = _global_step_or_raise("CheckpointSaverHook")
        for lst in self._listeners:
            lst.begin()

    def after_create_session(self, session, coord):
        step = session.run(self._global_step_tensor)
        if self._save_graph_def:
            os.makedirs(self._checkpoint_dir, exist_ok=True)
            write_graph(get_default_graph(), self._checkpoint_dir, "graph.pbtxt")
            self._summary_writer.add_graph(get_default_graph())
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        step = run_values.results + 1
        if self._timer.should_trigger_for_step(step):
            step = run_context.session.run(self._global_step_tensor)
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session):
        step = session.run(self._global_step_tensor)
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for lst in self._listeners:
            lst.end(session, step)

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = get_default_graph().get_collection(GraphKeys.SAVERS)
        if savers:
            if len(savers) > 1:
                raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. "
                                   "Please indicate which one to use by passing it to the "
                                   "constructor.")
            return savers[0]
        self._saver = saver_lib.Saver()
        return self._saver

    def _save(self, session, step):
        logging.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for lst in self._listeners:
            lst.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=step)
        stop = False
        for lst in self._listeners:
            if lst.after_save(session, step):
                logging.info("A CheckpointSaverListener requested that training be stopped.")
                stop = True
        return stop


class StepCounterHook(SessionRunHook):
    """Logs and writes (as the ``global_step/sec`` summary) the steps per second every
    `every_n_steps` steps or `every_n_secs` seconds."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be "
                             "provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._output_dir, self._summary_writer = output_dir, summary_writer
        self._summary_tag = "global_step/sec"

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step_tensor = _global_step_or_raise("StepCounterHook")

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        step = run_values.results + 1
        if self._timer.should_trigger_for_step(step):
            secs, steps = self._timer.update_last_triggered_step(step)
            if secs is not None and secs > 0:
                rate = steps / secs
                logging.info("%s: %g", self._summary_tag, rate)
                if self._summary_writer is not None:
                    from tensorboardX.proto import summary_pb2

                    s = summary_pb2.Summary(value=[summary_pb2.Summary.Value(
                        tag=self._summary_tag, simple_value=rate)])
                    self._summary_writer.add_summary(s, step)


class SummarySaverHook(SessionRunHook):
    """Runs the summary op every `save_steps` steps or `save_secs` seconds and writes
    its value to the event file of `output_dir` (or `summary_writer`).

    Args:
      save_steps / save_secs: exactly one.
      output_dir / summary_writer: where to write (one of them).
      scaffold / summary_op: the op (or list of ops) giving serialized summaries
        (exactly one; the scaffold's is ``merge_all()`` by default).
    Raises:
      ValueError: both or neither of `scaffold` and `summary_op`.
    """

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None,
                 scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op, self._scaffold = summary_op, scaffold
        self._summary_writer, self._output_dir = summary_writer, output_dir
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _global_step_or_raise("SummarySaverHook")

    def _get_summary_op(self):
        op = self._scaffold.summary_op if self._summary_op is None else self._summary_op
        if op is None:
            return None
        return list(op) if isinstance(op, (list, tuple)) else [op]

    def before_run(self, run_context):
        self._request_summary = (self._next_step is None or
                                 self._timer.should_trigger_for_step(self._next_step))
        requests = {"global_step": self._global_step_tensor}
        ops = self._get_summary_op()
        if self._request_summary and ops:
            requests["summary"] = ops
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values):
        if self._summary_writer is None:
            return
        stale = run_values.results["global_step"]
        step = stale + 1
        if self._next_step is None or self._request_summary:
            step = run_context.session.run(self._global_step_tensor)
        if self._request_summary:
            self._timer.update_last_triggered_step(step)
            for s in run_values.results.get("summary", ()):
                self._summary_writer.add_summary(s, step)
        self._next_step = step + 1

    def end(self, session=None):
        if self._summary_writer is not None:
            self._summary_writer.flush()


class LoggingTensorHook(SessionRunHook):
    """Logs the values of `tensors` (a dict name -> tensor, or a list of tensors or
    names) every `every_n_iter` runs or `every_n_secs` seconds, and/or at the end.

    Args:
      formatter: optional function ``dict name -> value -> str``.
    Raises:
      ValueError: none of every_n_iter / every_n_secs / at_end, or both of the first two,
      or a non-positive `every_n_iter`.
    """

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and "
                             "every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            self._tag_order = [t if isinstance(t, str) else t.name for t in tensors]
            tensors = {k: t for k, t in zip(self._tag_order, tensors)}
        else:
            self._tag_order = sorted(tensors)
        self._tensors = tensors
        self._formatter = formatter
        self._log_at_end = at_end
        self._timer = None if only_log_at_end else SecondOrStepTimer(
            every_secs=every_n_secs, every_steps=every_n_iter)

    def begin(self):
        self._iter_count = 0
        self._current_tensors = {tag: _as_graph_element(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer is not None and \
            self._timer.should_trigger_for_step(self._iter_count)
        if self._should_trigger:
            return SessionRunArgs(self._current_tensors)
        return None

    def _log(self, values):
        secs, _ = self._timer.update_last_triggered_step(self._iter_count) if \
            self._timer is not None else (None, None)
        if self._formatter:
            logging.info(self._formatter(values))
            return
        stats = [f"{tag} = {values[tag]}" for tag in self._tag_order]
        if secs is not None:
            logging.info("%s (%.3f sec)", ", ".join(stats), secs)
        else:
            logging.info("%s", ", ".join(stats))

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._log(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log(session.run(self._current_tensors))


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Watches `loss_tensor` each run: on NaN raises `NanLossDuringTrainingError`
    (`fail_on_nan_loss`), else logs and requests a stop."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results).any():
            msg = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                logging.error(msg)
                raise NanLossDuringTrainingError
            logging.warning(msg)
            run_context.request_stop()


class FinalOpsHook(SessionRunHook):
    """Runs `final_ops` in `end`; their values are then `final_ops_values`."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is not None:
            self._final_ops_values = session.run(self._final_ops,
                                                 feed_dict=self._final_ops_feed_dict)


class FeedFnHook(SessionRunHook):
    """Feeds ``feed_fn()`` (a feed dict) into every run."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class GlobalStepWaiterHook(SessionRunHook):
    """Delays the first run until the global step reaches `wait_until_step` (for workers
    that should start after the chief's warm-up), polling every 0.5 s."""

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self):
        self._worker_is_started = False
        self._global_step_tensor = _global_step_or_raise("GlobalStepWaiterHook")

    def before_run(self, run_context):
        if self._worker_is_started or self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        while True:
            step = run_context.session.run(self._global_step_tensor)
            if step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if run_context.stop_requested:
                return None
            time.sleep(0.5)
