"""`Coordinator`: stops a set of threads together, as TensorFlow 1's `tf.train.Coordinator`.

Threads poll `should_stop()`; any thread may `request_stop()`, optionally with the
exception that made it stop; the main thread `join()`s them all and gets that exception
re-raised::

    coord = ml.train.Coordinator()
    threads = ml.train.start_queue_runners(sess, coord)
    try:
        for _ in range(1000):
            if coord.should_stop():
                break
            sess.run(train_op)
    finally:
        coord.request_stop()
        coord.join(threads)
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

from mylib import errors

__all__ = ["Coordinator", "LooperThread"]


class Coordinator:
    """A coordinator of threads.

    Args:
      clean_stop_exception_types: exception types that stop the threads without being
        re-raised by `join()` (default: `OutOfRangeError`, the end of an input queue).
    """

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._joined = False
        self._registered_threads = set()

    def _filter_exception(self, ex):
        """`ex` as exc_info, or None if it is a clean stop."""
        if isinstance(ex, tuple):
            ex2 = ex[1]
        else:
            ex2 = ex
        if isinstance(ex2, self._clean_stop_exception_types):
            return None
        return ex

    def should_stop(self):
        """True once a stop has been requested."""
        return self._stop_event.is_set()

    def request_stop(self, ex=None):
        """Asks the threads to stop. With `ex` (an exception or an exc_info tuple), it
        is kept and re-raised by `join()` unless it is a clean-stop type; only the
        first such exception is kept.

        Raises:
          ValueError: `ex` is neither an exception nor an exc_info tuple.
        """
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined:
                if isinstance(ex, tuple):
                    _, ex_instance, _ = ex
                else:
                    ex_instance = ex
                if ex_instance is not None:
                    # join() has run: nobody would see it, so log it at least.
                    sys.stderr.write(f"Coordinator: exception after join: {ex_instance!r}\n")
            if not self._stop_event.is_set():
                if ex is not None and self._exc_info_to_raise is None:
                    if isinstance(ex, tuple):
                        if len(ex) != 3 or not isinstance(ex[1], BaseException):
                            raise ValueError(
                                "ex must be an exception or an exc_info tuple. Received: "
                                f"ex={ex!r}")
                        self._exc_info_to_raise = ex
                    elif isinstance(ex, BaseException):
                        self._exc_info_to_raise = (type(ex), ex, ex.__traceback__)
                    else:
                        raise ValueError(
                            f"ex must be an exception or an exc_info tuple. Received: ex={ex!r}")
                self._stop_event.set()

    def clear_stop(self):
        """Clears the stop request and the kept exception, so the coordinator can be
        used again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            if self._stop_event.is_set():
                self._stop_event.clear()

    def wait_for_stop(self, timeout=None):
        """Waits until a stop is requested; returns True if it was, False on timeout."""
        return self._stop_event.wait(timeout)

    @contextlib.contextmanager
    def stop_on_exception(self):
        """A context manager that requests a stop with the exception raised in its
        body (and swallows it: `join()` re-raises it)::

            with coord.stop_on_exception():
                while not coord.should_stop():
                    ...
        """
        try:
            yield
        except:  # noqa: E722 - also SystemExit and friends, as TensorFlow
            self.request_stop(ex=sys.exc_info())

    def register_thread(self, thread):
        """Registers a thread for `join()` to wait on."""
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120,
             ignore_live_threads=False):
        """Waits for `threads` (and the registered ones) to end.

        Once a stop is requested, threads have `stop_grace_period_secs` to end. Then
        the first exception passed to `request_stop` is re-raised here.

        Raises:
          the exception a thread reported with `request_stop(ex)`.
          RuntimeError: naming the threads still running after the grace period
            (unless `ignore_live_threads`).
        """
        with self._lock:
            threads = set(self._registered_threads) | set(threads or ())
        threads = list(threads)
        # Wait for all threads to stop or for a stop request.
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(0.05):
            pass
        # The grace period after the stop request.
        deadline = time.monotonic() + stop_grace_period_secs
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            for t in threads:
                t.join(0.01)
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            exc_info = self._exc_info_to_raise
        if exc_info:
            raise exc_info[1].with_traceback(exc_info[2])
        if stragglers and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: "
                               f"{' '.join(stragglers)}")

    @property
    def joined(self):
        return self._joined

    def raise_requested_exception(self):
        """Re-raises the exception passed to `request_stop`, if any."""
        with self._lock:
            if self._exc_info_to_raise:
                e = self._exc_info_to_raise
                raise e[1].with_traceback(e[2])


class LooperThread(threading.Thread):
    """A thread that calls `target(*args)` (or `run_loop()`) every `timer_interval_secs`
    (continuously when None) until the coordinator stops; exceptions stop the
    coordinator with the exception."""

    def __init__(self, coord, timer_interval_secs, target=None, args=None, kwargs=None):
        super().__init__(daemon=True)
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        self._args = args or ()
        self._kwargs = kwargs or {}
        coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None):
        t = LooperThread(coord, timer_interval_secs, target, args, kwargs)
        t.start()
        return t

    def run(self):
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_t = time.time() + self._timer_interval_secs
                while not self._coord.wait_for_stop(max(0.0, next_t - time.time())):
                    next_t += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self):
        pass

    def stop_loop(self):
        pass

    def run_loop(self):
        if self._target:
            self._target(*self._args, **self._kwargs)
