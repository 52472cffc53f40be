"""`QueueRunner`: threads that keep a queue filled, as TensorFlow 1's
`tf.train.QueueRunner`, and `start_queue_runners`.

Each thread runs one enqueue op in a loop until the coordinator stops or the queue
closes (`OutOfRangeError` / `CancelledError` end a thread quietly: the input ran out);
other errors are reported to the coordinator, which re-raises them in `join()`. When
the last thread of a runner ends, the runner closes its queue, so consumers drain it
and then get `OutOfRangeError`. When the coordinator stops, a watcher thread cancels
the queue's pending enqueues so no runner thread stays blocked on a full queue.
"""

from __future__ import annotations

import sys
import threading

from mylib import errors
from mylib.core.graph import GraphKeys, add_to_collection, get_default_graph
from mylib.runtime.session import get_default_session

__all__ = ["QueueRunner", "add_queue_runner", "start_queue_runners"]


class QueueRunner:
    """Holds a queue and the enqueue ops that fill it, one thread per op.

    Args:
      queue: a queue (`FIFOQueue`, `RandomShuffleQueue`, ...).
      enqueue_ops: enqueue `Operation`s (repeat one to run it in several threads).
      close_op: the op run when all threads are done (default ``queue.close()``).
      cancel_op: the op run when the coordinator stops (default
        ``queue.close(cancel_pending_enqueues=True)``).
      queue_closed_exception_types: errors that end a thread quietly (default
        `OutOfRangeError`, `CancelledError`).
    """

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None):
        if queue is None or not enqueue_ops:
            raise ValueError("QueueRunner needs a queue and at least one enqueue op. "
                             f"Received: queue={queue!r}, enqueue_ops={enqueue_ops!r}")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else queue.close(
            cancel_pending_enqueues=True)
        self._queue_closed_exception_types = tuple(
            queue_closed_exception_types or (errors.OutOfRangeError, errors.CancelledError))
        self._lock = threading.Lock()
        # Per session: threads still running, and exceptions they raised.
        self._runs_per_session = {}
        self._exceptions_raised = []

    @property
    def queue(self):
        return self._queue

    @property
    def enqueue_ops(self):
        return list(self._enqueue_ops)

    @property
    def close_op(self):
        return self._close_op

    @property
    def cancel_op(self):
        return self._cancel_op

    @property
    def name(self):
        return self._queue.name

    @property
    def exceptions_raised(self):
        """Exceptions raised by the threads but not reported to a coordinator."""
        return list(self._exceptions_raised)

    def _quiet(self, sess, e):
        if isinstance(e, self._queue_closed_exception_types):
            return True
        # The session was closed under a running thread: the end of the input, too.
        return isinstance(e, RuntimeError) and getattr(sess, "_closed", False)

    def _run(self, sess, enqueue_op, coord=None):
        decremented = False
        try:
            run = sess.make_callable(enqueue_op)
            while True:
                if coord is not None and coord.should_stop():
                    break
                try:
                    run()
                except Exception as e:  # noqa: BLE001
                    if not self._quiet(sess, e):
                        raise
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        last = self._runs_per_session[sess] == 0
                    if last:
                        try:
                            sess.run(self._close_op)
                        except Exception:  # noqa: BLE001 - already closed, or session gone
                            pass
                    return
        except Exception as e:  # noqa: BLE001
            if coord is not None:
                coord.request_stop(e)
            else:
                sys.stderr.write(f"QueueRunner '{self.name}': exception in thread: {e!r}\n")
                with self._lock:
                    self._exceptions_raised.append(e)
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess, cancel_op, coord):
        # Also ends when the runner's threads are all done, so `join()` without a
        # stop request does not wait on this watcher.
        while not coord.wait_for_stop(0.05):
            with self._lock:
                if self._runs_per_session.get(sess, 0) <= 0:
                    return
        try:
            sess.run(cancel_op)
        except Exception:  # noqa: BLE001 - the session may already be closed
            pass

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        """Creates (and with `start`, starts) the threads running the enqueue ops in
        `sess`; with `coord`, also a thread cancelling the queue when it stops.

        Returns:
          the list of threads. If threads of this runner are already running in
          `sess`, returns an empty list.
        """
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord), daemon=daemon,
                                    name=f"QueueRunnerThread-{self.name}-{op.name}")
                   for op in self._enqueue_ops]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop,
                                            args=(sess, self._cancel_op, coord),
                                            daemon=daemon,
                                            name=f"QueueRunnerCancel-{self.name}"))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if start:
                t.start()
        return threads


def add_queue_runner(qr, collection=GraphKeys.QUEUE_RUNNERS):
    """Adds `qr` to the graph's `QUEUE_RUNNERS` collection."""
    add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection=GraphKeys.QUEUE_RUNNERS):
    """Starts the threads of every queue runner in the graph's collection.

    Args:
      sess: the `Session` (default: the default session).
      coord: optional `Coordinator`.
    Returns:
      the list of all threads.
    """

    if sess is None:
        sess = get_default_session()
        if sess is None:
            raise ValueError("start_queue_runners: no sess given and no default session")
    threads = []
    g = sess.graph if hasattr(sess, "graph") else get_default_graph()
    for qr in g.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
