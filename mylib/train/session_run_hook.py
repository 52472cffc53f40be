"""The hook API of `MonitoredSession` (TensorFlow 1's ``session_run_hook.py``):
`SessionRunHook`, `SessionRunArgs`, `SessionRunContext`, `SessionRunValues`."""

from __future__ import annotations

import collections

__all__ = ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues"]


class SessionRunHook:
    """Extends `MonitoredSession.run` calls. Every method is optional.

    Order: `begin` (graph still editable) -> `after_create_session(session, coord)` ->
    per run: `before_run(run_context)` (may return `SessionRunArgs` to add fetches and
    feeds to the run) -> the run -> `after_run(run_context, run_values)` -> at the end
    `end(session)` (not called when the loop ends with an exception other than
    `OutOfRangeError` / `StopIteration`).
    """

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


class SessionRunArgs(collections.namedtuple("SessionRunArgs",
                                            ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run: `fetches` (any nested structure `Session.run`
    accepts), `feed_dict` (must not feed what the caller or another hook feeds), and
    `options` (a `RunOptions`; the largest trace level wins)."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunContext:
    """What a hook sees of the current run: `original_args` (the caller's
    `SessionRunArgs`), `session` (the raw `Session`), and `request_stop()`."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self):
        return self._stop_requested

    def request_stop(self):
        """Asks the monitored session to stop: `should_stop()` is True after this run."""
        self._stop_requested = True


SessionRunValues = collections.namedtuple("SessionRunValues",
                                          ["results", "options", "run_metadata"])
SessionRunValues.__doc__ = ("The outcome of a run for one hook: `results` (the values of "
                            "the hook's fetches), `options`, `run_metadata`.")
