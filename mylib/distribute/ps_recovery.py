"""Detect, restore, retry: the one way every use of a parameter server survives the
death of one.

Every path that touches a parameter server goes through `Recovery.run` (the driver's
steps and metric resets through `Session.run`, variable reads and writes: Keras
weights, `get_weights`, `evaluate`, `predict`, `save`, `optimizer.iterations`; the
chief's periodic checkpoint) or through `Recovery.shared` and `Recovery.recover` (the
coordinator's closures, which it re-queues itself). A failure of a parameter server
(Ray's `RayActorError`, `ActorDiedError`, `ActorUnavailableError`, or a task that
restarted and lost its graph) becomes `mylib.errors.UnavailableError`; then:

1. *Detect*: wait (at most ``rpc_timeout``) until every parameter server answers,
   and compare each one's incarnation (process id and start time) with the one last
   seen: those that differ were restarted by Ray and lost their variables.
2. *Restore*: with no step in flight (an exclusive section: new steps wait, running
   ones finish or fail first), load the graph into the restarted ones and set the
   variables of *every* parameter server from the same (newest) checkpoint, so the
   model is always a state that existed; variables the checkpoint lacks (created
   after it) are initialized on the restarted servers.
3. *Retry* the failed operation (at most `MAX_ATTEMPTS` times).

Without ``checkpoint_dir``, or when no checkpoint exists yet, or when a server does
not come back within ``rpc_timeout``, the `UnavailableError` goes to the caller.

Periodic checkpoints are also taken in an exclusive section, so one checkpoint holds
the values of all parameter servers after the same set of steps.
"""

from __future__ import annotations

import contextlib
import threading
import time

from mylib import errors

MAX_ATTEMPTS = 5  # tries of one driver operation across parameter-server failures


def ray_actor_errors():
    """Ray's exception classes for a lost or restarting actor."""
    import ray

    return (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)


def short(e):
    s = str(e).strip().splitlines()
    return s[0][:300] if s else type(e).__name__


class Recovery:
    """The detect-restore-retry logic of one `ParameterServerStrategy` and the
    shared/exclusive gate that orders steps against restores and checkpoints."""

    def __init__(self, strategy):
        self._s = strategy
        self._cond = threading.Condition()
        self._active = 0          # threads in a shared section
        self._exclusive = None    # the thread in the exclusive section
        self._waiting = 0         # threads waiting for the exclusive section
        self._local = threading.local()
        self._recover_lock = threading.Lock()
        self.generation = 0       # restores so far
        self.incarnations = None  # per parameter server, as its ping reports it
        self.steps_lost = 0

    # ------------------------------------------------------------ the gate
    def _depth(self):
        return getattr(self._local, "depth", 0)

    def _inside(self):
        return self._depth() > 0 or self._exclusive == threading.get_ident()

    @contextlib.contextmanager
    def shared(self):
        """A section using the parameter servers; yields the restore generation
        (constant inside). Re-entrant; waits while a restore or checkpoint is due."""
        if self._inside():
            self._local.depth = self._depth() + 1
            try:
                yield self.generation
            finally:
                self._local.depth -= 1
            return
        with self._cond:
            while self._exclusive is not None or self._waiting:
                self._cond.wait()
            self._active += 1
        self._local.depth = 1
        try:
            yield self.generation
        finally:
            self._local.depth = 0
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self):
        """A section with no other step in flight (restores, checkpoints)."""
        me = threading.get_ident()
        if self._exclusive == me:
            yield self.generation
            return
        if self._depth():
            raise RuntimeError("internal: exclusive section requested inside a shared one")
        with self._cond:
            self._waiting += 1
            try:
                while self._exclusive is not None or self._active:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._exclusive = me
        try:
            yield self.generation
        finally:
            with self._cond:
                self._exclusive = None
                self._cond.notify_all()

    # ------------------------------------------------------------ run with recovery
    def run(self, fn, what, exclusive=False):
        """``fn()`` with recovery: on a parameter server's failure, restore and call
        it again. Inside another section (a nested call), `fn` runs once and the
        outermost caller recovers.

        Raises:
          UnavailableError: a parameter server failed and could not be restored
            (naming `what`), or failed `MAX_ATTEMPTS` times.
        """
        if self._inside():
            with self.shared():
                return _mapped(fn, what)
        for attempt in range(MAX_ATTEMPTS):
            gen = self.generation
            try:
                with (self.exclusive() if exclusive else self.shared()) as gen:
                    return _mapped(fn, what)
            except errors.UnavailableError as e:
                err = e
            if attempt + 1 >= MAX_ATTEMPTS or not self.recover(gen, err):
                raise err
        raise AssertionError("unreachable")

    # ------------------------------------------------------------ detect and restore
    def note_started(self, pings):
        """Records each parameter server's incarnation at start."""
        self.incarnations = [p[4] for p in pings]

    def recover(self, generation, error):
        """Brings the parameter servers back after `error`, seen by a caller at
        restore `generation`: True when the caller should retry (a restore happened,
        now or since), False when there is no checkpoint directory (the caller
        raises `error`).

        Raises:
          UnavailableError: a server did not come back within ``rpc_timeout``, or
            one lost its state and there is no checkpoint to restore it from.
        """
        s = self._s
        if s.checkpoint_dir is None:
            return False
        with self._recover_lock:
            if self.generation != generation:
                return True  # another thread restored since the caller's attempt
            with self.exclusive():
                pings = self._wait_for_all()
                lost = [k for k, p in enumerate(pings) if p[4] != self.incarnations[k]]
                if lost:
                    self._restore_all(lost, error)
                self.incarnations = [p[4] for p in pings]
                self.generation += 1
            return True

    def _wait_for_all(self):
        import ray

        s = self._s
        handles = s._extended.ps_handles
        deadline = time.monotonic() + s._rpc_timeout
        out = []
        for k, h in enumerate(handles):
            while True:
                try:
                    out.append(ray.get(h.ping.remote(), timeout=5))
                    break
                except ray.exceptions.ActorDiedError as e:  # not to be restarted
                    raise errors.UnavailableError(
                        f"parameter server /job:ps/task:{k} is gone: {short(e)}") from None
                except Exception:  # noqa: BLE001 - restarting
                    pass
                if time.monotonic() > deadline:
                    raise errors.UnavailableError(
                        f"parameter server /job:ps/task:{k} did not come back within "
                        f"{s._rpc_timeout} s") from None
                time.sleep(0.2)
        return out

    def _restore_all(self, lost, error):
        from mylib.distribute import ps_checkpoint

        s = self._s
        ext = s._extended
        ptr = ps_checkpoint.latest(s.checkpoint_dir)
        names = ", ".join(f"/job:ps/task:{k}" for k in lost)
        if ptr is None:
            raise errors.UnavailableError(
                f"parameter server(s) {names} restarted and lost their variables, and "
                f"there is no checkpoint in {s.checkpoint_dir} to restore them from "
                f"(first error: {short(error)})")
        for k in lost:
            ext.reship_to(ext.ps_handles[k])
        step, have = ps_checkpoint.restore_all(s, s.checkpoint_dir, ptr)
        self._init_missing(lost, have)
        coord = s._coordinator
        if coord is not None:
            self.steps_lost += coord._rolled_back_to(step)
        s.stats["ps_restarts"] += len(lost)
        s.stats["steps_lost"] = self.steps_lost
        if s._ray_local is not None:
            s._ray_local.record_processes()

    def _init_missing(self, lost, have):
        """Initializes the variables of the restarted servers that the checkpoint
        does not hold (`have`: the keys it holds; the others were created after it),
        from their own initializers."""
        from mylib.runtime.keras_session import get_session

        g = self._s._extended.graph()
        if g is None:
            return
        ext = self._s._extended
        todo = [v for key, v in list(g._variables.items())
                if ext.task_of_key(key) in lost and key not in have]
        if todo:
            get_session(g).run([v.initializer for v in todo])


def _mapped(fn, what):
    try:
        return fn()
    except ray_actor_errors() as e:
        raise errors.UnavailableError(f"{what}: a parameter server is unavailable: "
                                      f"{short(e)}") from None
