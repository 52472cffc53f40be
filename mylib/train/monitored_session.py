"""TensorFlow 1's monitored sessions (``monitored_session.py``): `Scaffold`,
`ChiefSessionCreator` / `WorkerSessionCreator`, `MonitoredSession`,
`SingularMonitoredSession` and `MonitoredTrainingSession`.

A monitored session creates its `Session` through a creator that initializes the
variables or restores them from the latest checkpoint of `checkpoint_dir`, runs the
hooks around every `run`, and ends the loop when a hook requests a stop
(`should_stop()`), when the input raises `OutOfRangeError`, or at `close()`.

Differs from TensorFlow 1: `master` is accepted and passed to `Session` (which runs
in this process); a non-chief `WorkerSessionCreator` waits (up to `max_wait_secs`) for
variables that are already initialized, which in one process means variables a chief
session initialized in a shared place (e.g. a parameter-server strategy); a
`MonitoredSession` recovers from `AbortedError` / `UnavailableError` by creating its
session again (restoring the latest checkpoint), as TensorFlow's does.
"""

from __future__ import annotations

import time

from mylib import errors
from mylib import logging
from mylib.core.graph import GraphKeys, get_default_graph
from mylib.core.ops import array_ops
from mylib.core.variables import (global_variables_initializer, local_variables_initializer,
                                  report_uninitialized_variables)
from mylib.runtime import saver as saver_lib
from mylib.runtime.coordinator import Coordinator
from mylib.runtime.queue_runner import start_queue_runners
from mylib.runtime.session import Session
from mylib.summary.summary_ops import merge_all
from mylib.train import basic_session_run_hooks as hooks_lib
from mylib.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues

__all__ = ["Scaffold", "SessionCreator", "ChiefSessionCreator", "WorkerSessionCreator",
           "MonitoredSession", "SingularMonitoredSession", "MonitoredTrainingSession",
           "USE_DEFAULT"]

USE_DEFAULT = object()
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)


class Scaffold:
    """The pieces a monitored session needs, each defaulting at `finalize()`:
    `init_op` (``global_variables_initializer()``), `ready_op`
    (``report_uninitialized_variables()``), `local_init_op` (``group(
    local_variables_initializer())``), `summary_op` (``merge_all()``), `saver` (the
    graph's ``SAVERS`` collection, else a new `Saver`); `init_fn(scaffold, session)` runs
    after `init_op` when no checkpoint is restored.
    """

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None,
                 saver=None, copy_from_scaffold=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            c = copy_from_scaffold
            init_op = init_op or c.init_op
            init_feed_dict = init_feed_dict or c._init_feed_dict
            init_fn = init_fn or c._user_init_fn
            ready_op = ready_op or c.ready_op
            ready_for_local_init_op = ready_for_local_init_op or c.ready_for_local_init_op
            local_init_op = local_init_op or c.local_init_op
            summary_op = summary_op or c.summary_op
            saver = saver or c.saver
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op, self._init_feed_dict = init_op, init_feed_dict
        self._ready_op, self._ready_for_local_init_op = ready_op, ready_for_local_init_op
        self._local_init_op, self._summary_op, self._saver = local_init_op, summary_op, saver

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        """The single element of `collection_key`, else `default_constructor()` (added
        to the collection)."""
        g = get_default_graph()
        elems = g.get_collection(collection_key)
        if len(elems) > 1:
            raise RuntimeError(f"More than one item in the collection {collection_key}. "
                               f"Please indicate which one to use by passing it to the "
                               f"tf.Scaffold constructor as: tf.Scaffold({arg_name}=item "
                               "to use)")
        if elems:
            return elems[0]
        op = default_constructor()
        if op is not None:
            g.add_to_collection(collection_key, op)
        return op

    def finalize(self):
        """Creates the missing pieces and finalizes the graph; returns self."""
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default("init_op", GraphKeys.INIT_OP,
                                                    global_variables_initializer)
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default("ready_op", GraphKeys.READY_OP,
                                                     report_uninitialized_variables)
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default(
                "local_init_op", GraphKeys.LOCAL_INIT_OP,
                lambda: array_ops.group(local_variables_initializer()))
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op", GraphKeys.SUMMARY_OP,
                                                       merge_all)
        if self._saver is None:
            savers = get_default_graph().get_collection(GraphKeys.SAVERS)
            if len(savers) > 1:
                raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. "
                                   "Please indicate which one to use by passing it to the "
                                   "tf.Scaffold constructor as: tf.Scaffold(saver=...)")
            if savers:
                self._saver = savers[0]
            else:
                self._saver = saver_lib.Saver(max_to_keep=5, allow_empty=True)
                get_default_graph().add_to_collection(GraphKeys.SAVERS, self._saver)
        get_default_graph().finalize()
        return self

    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    init_fn = property(lambda self: self._init_fn)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)


class SessionCreator:
    """Creates a `Session` for a monitored session (`create_session()`)."""

    def create_session(self):
        raise NotImplementedError("SessionCreator.create_session is abstract")


def _not_ready(sess, ready_op):
    if ready_op is None:
        return []
    names = sess.run(ready_op)
    return [n.decode() if isinstance(n, bytes) else str(n) for n in list(names)]


class ChiefSessionCreator(SessionCreator):
    """Creates a session that restores the latest checkpoint of `checkpoint_dir` (or
    `checkpoint_filename_with_path`) or else runs the scaffold's `init_op` and
    `init_fn`; then its `local_init_op`.

    Raises (from `create_session`):
      RuntimeError: variables still uninitialized afterwards (names them).
    """

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._scaffold = scaffold or Scaffold()
        self._master, self._config = master, config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self):
        self._scaffold.finalize()
        sess = Session(self._master, graph=get_default_graph(), config=self._config)
        path = self._checkpoint_filename_with_path
        if path is None and self._checkpoint_dir:
            path = saver_lib.latest_checkpoint(self._checkpoint_dir)
        if path:
            self._scaffold.saver.restore(sess, path)
            logging.info("Restored model from %s", path)
        else:
            sess.run(self._scaffold.init_op, feed_dict=self._scaffold.init_feed_dict)
            if self._scaffold.init_fn is not None:
                self._scaffold.init_fn(sess)
        if self._scaffold.local_init_op is not None:
            sess.run(self._scaffold.local_init_op)
        missing = _not_ready(sess, self._scaffold.ready_op)
        if missing:
            sess.close()
            raise RuntimeError("Init operations did not make model ready. Uninitialized "
                               f"variables: {missing}")
        return sess


class WorkerSessionCreator(SessionCreator):
    """Creates a session for a non-chief worker: waits (polling every second, up to
    `max_wait_secs`) until the chief has initialized the variables, then runs the
    scaffold's `local_init_op`.

    Raises (from `create_session`):
      DeadlineExceededError: still not ready after `max_wait_secs`.
    """

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        self._scaffold = scaffold or Scaffold()
        self._master, self._config = master, config
        self._max_wait_secs = max_wait_secs

    def create_session(self):
        self._scaffold.finalize()
        sess = Session(self._master, graph=get_default_graph(), config=self._config)
        ready = self._scaffold.ready_for_local_init_op or self._scaffold.ready_op
        deadline = time.time() + self._max_wait_secs
        while True:
            missing = _not_ready(sess, ready)
            if not missing:
                break
            if time.time() >= deadline:
                sess.close()
                raise errors.DeadlineExceededError(
                    f"Session was not ready after waiting {self._max_wait_secs} secs: "
                    f"uninitialized variables {missing}. A non-chief worker uses "
                    "variables the chief initialized; in one process use is_chief=True")
            logging.info("Waiting for model to be ready. Ready_for_local_init_op: %s",
                         missing)
            time.sleep(min(1.0, max(0.0, deadline - time.time())))
        if self._scaffold.local_init_op is not None:
            sess.run(self._scaffold.local_init_op)
        return sess


class _StepContext:
    """What `run_step_fn`'s function gets: `session` (raw), `run_with_hooks(...)`,
    `request_stop()`."""

    def __init__(self, monitored, session):
        self._monitored, self._session = monitored, session

    @property
    def session(self):
        return self._session

    def run_with_hooks(self, *args, **kwargs):
        return self._monitored.run(*args, **kwargs)

    def request_stop(self):
        self._monitored._stop_requested = True


def _merge_feeds(feed_dict, extra, who):
    if not extra:
        return feed_dict
    out = dict(feed_dict or {})
    for k, v in extra.items():
        if k in out:
            raise RuntimeError(f"Same tensor is fed by two hooks (or a hook and the caller): "
                               f"{getattr(k, 'name', k)} (by {who})")
        out[k] = v
    return out


class _MonitoredSessionBase:
    def __init__(self, session_creator, hooks, should_recover, stop_grace_period_secs=120):
        self._graph = get_default_graph()
        self._hooks = list(hooks or [])
        for h in self._hooks:
            h.begin()
        self._creator = session_creator
        self._should_recover = should_recover
        self._stop_grace_period_secs = stop_grace_period_secs
        self._stop_requested = False
        self._closed = False
        self._sess = None
        self._coord = None
        self._create()

    def _create(self):
        self._sess = self._creator.create_session()
        self._coord = Coordinator()
        # As TensorFlow 1: the graph's queue runners start with the session (their
        # threads stop and are joined when it closes).
        if self._graph.get_collection(GraphKeys.QUEUE_RUNNERS):
            start_queue_runners(sess=self._sess, coord=self._coord)
        for h in self._hooks:
            h.after_create_session(self._sess, self._coord)

    @property
    def graph(self):
        return self._graph

    def _tf_sess(self):
        return self._sess

    def should_stop(self):
        """True once a hook requested a stop, the coordinator stopped, or after close."""
        return self._closed or self._stop_requested or (
            self._coord is not None and self._coord.should_stop())

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs `fetches` with every hook's `before_run` additions, then calls their
        `after_run`; returns the caller's fetched values.

        Raises:
          RuntimeError: the session is closed, or two parties feed the same tensor.
        """
        if self._closed:
            raise RuntimeError("Run called even after should_stop requested.")
        while True:
            try:
                return self._run_with_hooks(fetches, feed_dict, options, run_metadata)
            except _PREEMPTION_ERRORS as e:
                if not self._should_recover:
                    raise
                logging.info("An error was raised (%s). This may be due to a preemption in "
                             "a connected worker or parameter server. A new session will "
                             "be created.", type(e).__name__)
                try:
                    self._sess.close()
                except Exception:  # noqa: BLE001 - the broken session may not close
                    pass
                self._create()

    def _run_with_hooks(self, fetches, feed_dict, options, run_metadata):
        ctx = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self._sess)
        hook_fetches, merged_feeds = {}, feed_dict
        hook_options = options
        for i, h in enumerate(self._hooks):
            req = h.before_run(ctx)
            if req is None:
                continue
            if req.fetches is not None:
                hook_fetches[i] = req.fetches
            merged_feeds = _merge_feeds(merged_feeds, req.feed_dict, type(h).__name__)
            if req.options is not None:
                if hook_options is None or getattr(req.options, "trace_level", 0) > \
                        getattr(hook_options, "trace_level", 0):
                    hook_options = req.options
        if hook_options is not None and run_metadata is None:
            from mylib.runtime.session import RunMetadata

            run_metadata = RunMetadata()
        results = self._sess.run({"caller": fetches, "hooks": hook_fetches}, merged_feeds,
                                 options=hook_options, run_metadata=run_metadata)
        for i, h in enumerate(self._hooks):
            h.after_run(ctx, SessionRunValues(results["hooks"].get(i), hook_options,
                                              run_metadata))
        if ctx.stop_requested:
            self._stop_requested = True
        return results["caller"]

    def run_step_fn(self, step_fn):
        """Calls ``step_fn(step_context)`` (a `_StepContext` with `session`,
        `run_with_hooks`, `request_stop`) and returns its value."""
        return step_fn(_StepContext(self, self._sess))

    def close(self):
        self._close(None)

    def _close(self, exception_type):
        if self._closed:
            return
        try:
            if exception_type is None:
                for h in self._hooks:
                    h.end(self._sess)
        finally:
            self._closed = True
            try:
                if self._coord is not None:
                    self._coord.request_stop()
                    # Queue-runner threads end when their queues close; an error one
                    # of them raised is raised here (TensorFlow 1's behaviour).
                    self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs,
                                     ignore_live_threads=True)
            finally:
                self._sess.close()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close(exception_type)
        return exception_type is None


class MonitoredSession(_MonitoredSessionBase):
    """A session that runs hooks and recovers from preemption errors.

    Args:
      session_creator: a `SessionCreator` (default `ChiefSessionCreator()`).
      hooks: `SessionRunHook`s.
      stop_grace_period_secs: accepted for TensorFlow compatibility (no threads are
        joined here; queue-runner threads stop through the coordinator).

    Use as a context manager: `OutOfRangeError` and `StopIteration` inside end the loop
    normally (hooks' `end` runs).
    """

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(session_creator or ChiefSessionCreator(), hooks, True,
                         stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSessionBase):
    """A monitored session for one process: a chief creator, no recovery, and
    `raw_session()` for the underlying `Session`."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                      checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, False, stop_grace_period_secs)

    def raw_session(self):
        return self._sess


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None,  # noqa: N802
                             scaffold=None, hooks=None, chief_only_hooks=None,
                             save_checkpoint_secs=USE_DEFAULT, save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None):
    """A `MonitoredSession` set up for training, as TensorFlow 1's.

    On the chief (`is_chief`): restores from `checkpoint_dir` or initializes, and adds
    `chief_only_hooks` plus (with a `checkpoint_dir` / `summary_dir`) a
    `StepCounterHook` (every `log_step_count_steps`), a `SummarySaverHook` (every
    `save_summaries_steps` steps, default 100, or `save_summaries_secs`) and a
    `CheckpointSaverHook` (every `save_checkpoint_secs` seconds, default 600, or
    `save_checkpoint_steps`). Elsewhere a `WorkerSessionCreator` waiting up to
    `max_wait_secs`.

    Returns:
      A `MonitoredSession`.
    """
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                       max_wait_secs=max_wait_secs)
        return MonitoredSession(creator, hooks or [], stop_grace_period_secs)
    all_hooks = list(chief_only_hooks or []) + list(hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                  checkpoint_dir=checkpoint_dir)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(hooks_lib.StepCounterHook(output_dir=summary_dir,
                                                       every_n_steps=log_step_count_steps))
        if (save_summaries_steps and save_summaries_steps > 0) or \
                (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(hooks_lib.SummarySaverHook(
                scaffold=scaffold, save_steps=save_summaries_steps,
                save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir:
        if (save_checkpoint_secs and save_checkpoint_secs > 0) or \
                (save_checkpoint_steps and save_checkpoint_steps > 0):
            all_hooks.append(hooks_lib.CheckpointSaverHook(
                checkpoint_dir, save_steps=save_checkpoint_steps,
                save_secs=save_checkpoint_secs, scaffold=scaffold))
    return MonitoredSession(creator, all_hooks, stop_grace_period_secs)
