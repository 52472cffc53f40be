"""`ClusterCoordinator`: schedules steps on the workers of a `ParameterServerStrategy`
(TensorFlow's `tf.distribute.experimental.coordinator.ClusterCoordinator`).

``schedule(fn, args)`` traces `fn` into the strategy's graph once per argument
signature (its ops are the step; numpy arguments become feeds, a per-worker iterator's
``next()`` the worker's own next element) and queues a *closure*; the coordinator
hands closures to idle workers and returns a `RemoteValue` at once.

Asynchronous mode: each worker runs whole steps, pushing its updates to the parameter
servers as it goes. Synchronous mode (``replicas_to_aggregate=m``): each step gives one
closure to each idle worker, waits for the first m, applies the mean of their gradients
once (and advances the step counters once), and drops the gradients that come later
(counted in ``strategy.stats["dropped_gradients"]``); those closures' own outputs
(e.g. their loss) are still returned.

Failures: a closure whose worker dies runs again on another worker (at-least-once: a
step may be applied twice if the worker died after pushing part of its update); Ray
restarts the worker, which gets the graph again and rejoins. In synchronous mode the
closure of a worker lost mid-step is resubmitted to it once Ray has restarted it, in
the same step; a worker that does not come back within ``rpc_timeout`` of the step's
start fails the step with `DeadlineExceededError` naming it. A parameter server that
dies is restarted by Ray; every parameter server is restored from the latest
checkpoint (``checkpoint_dir``; one is written before the first step and every
``checkpoint_every`` steps, with no step in flight) and the failed closures re-run:
the steps lost are those applied since that checkpoint
(``strategy.stats["steps_lost"]``). See `mylib.distribute.ps_recovery`.
"""

from __future__ import annotations

import collections
import threading
import time

import jax
import numpy as np

from mylib import errors
from mylib.distribute import ps_plan
from mylib.distribute.parameter_server import ParameterServerStrategy
from mylib.core import dtypes as _dtypes
from mylib.core.ops import array_ops
from mylib.core.graph import Operation, Tensor
from mylib.core.lowering import prune
from mylib.core.op_registry import convert_to_tensor
from mylib.distribute import ps_checkpoint
from mylib.distribute.ps_runtime import remote_call, unpack
from mylib.distribute.parameter_server import _ClusterPlan
from mylib.runtime.keras_session import get_session


class RemoteValue:
    """The future result of a scheduled function."""

    def __init__(self):
        self._done = threading.Event()
        self._value = None
        self._error = None

    def _set(self, value=None, error=None):
        self._value, self._error = value, error
        self._done.set()

    def fetch(self):
        """Blocks until the closure ran; returns its outputs (numpy), or raises its
        error."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    get = fetch

    def done(self):
        return self._done.is_set()

    def __repr__(self):
        return f"<RemoteValue {'ready' if self.done() else 'pending'}>"


class PerWorkerValues:
    """One value per worker (TensorFlow's name)."""

    def __init__(self, values):
        self._values = tuple(values)


class PerWorkerDataset:
    """A dataset built on each worker by `dataset_fn`; ``iter()`` gives a
    `PerWorkerIterator` to pass to scheduled functions."""

    def __init__(self, coordinator, dataset_fn):
        self._coordinator = coordinator
        self._fn = dataset_fn
        self._key = f"ds{id(self)}"
        sample = dataset_fn()
        first = next(iter(sample))
        self._leaves, self._treedef = jax.tree_util.tree_flatten(first)
        self._leaves = [np.asarray(x) for x in self._leaves]
        coordinator._register_dataset(self)

    def __iter__(self):
        return PerWorkerIterator(self)


class PerWorkerIterator:
    """Passed to a scheduled function: ``next(it)`` there is the executing worker's
    next element (symbolic while tracing)."""

    def __init__(self, dataset):
        self._ds = dataset
        self._tracing = None

    def __next__(self):
        if self._tracing is None:
            raise RuntimeError("A per-worker iterator is only usable inside a function "
                               "passed to ClusterCoordinator.schedule.")
        return self._tracing

    def get_next(self):
        return self.__next__()


class _Traced:
    __slots__ = ("spec", "spec_id", "feeds", "fetches", "rebuild", "arg_kinds")


class _Closure:
    __slots__ = ("traced", "feed_vals", "value", "tries")

    def __init__(self, traced, feed_vals):
        self.traced = traced
        self.feed_vals = feed_vals
        self.value = RemoteValue()
        self.tries = 0


class ClusterCoordinator:
    """Schedules functions on the workers of `strategy` (one coordinator per strategy).

    Args:
      strategy: a `ParameterServerStrategy`.
    Raises:
      ValueError: `strategy` is not a ParameterServerStrategy or already has one.
    """

    def __init__(self, strategy):

        if not isinstance(strategy, ParameterServerStrategy):
            raise ValueError("ClusterCoordinator needs a ParameterServerStrategy, got "
                             f"{strategy!r}")
        if strategy._coordinator is not None:
            raise ValueError("This strategy already has a ClusterCoordinator; use "
                             "strategy's existing one (one coordinator per strategy).")
        self.strategy = strategy
        strategy._coordinator = self
        self._ext = strategy.extended
        self._traced = {}
        self._queue = collections.deque()
        self._cond = threading.Condition()
        self._inflight = 0
        self._errors = []
        self._threads = []
        self._stop = False
        self._datasets = []
        self._steps_done = 0
        self._last_ckpt = None
        self._flush = False
        self._worker_locks = {}
        self._worker_pids = {}

    # ------------------------------------------------------------ scheduling
    def schedule(self, fn, args=(), kwargs=None):
        """Queues ``fn(*args, **kwargs)`` to run on some worker; returns a
        `RemoteValue` of its outputs. `fn` builds graph ops (it is traced once per
        argument signature); numpy/number arguments are fed, `PerWorkerIterator`s
        give each worker's own data.

        Raises:
          the error of an earlier failed closure (as TensorFlow, errors surface at the
          next `schedule` or `join`).
        """
        self._raise_pending()
        traced, feed_vals = self._trace(fn, tuple(args), dict(kwargs or {}))
        return self._schedule_traced(traced, feed_vals)

    def _schedule_traced(self, traced, feed_vals):
        self._raise_pending()
        c = _Closure(traced, feed_vals)
        self._start_threads()
        with self._cond:
            self._queue.append(c)
            self._cond.notify_all()
        return c.value

    def join(self):
        """Blocks until every scheduled closure ran; raises the first error of a
        failed one (and forgets it)."""
        with self._cond:
            self._flush = True
            self._cond.notify_all()
            while self._queue or self._inflight:
                self._cond.wait(0.1)
            self._flush = False
        self._raise_pending()

    def done(self):
        """Whether every scheduled closure ran (raises a pending error)."""
        self._raise_pending()
        with self._cond:
            return not self._queue and not self._inflight

    def fetch(self, val):
        """The value(s) of a `RemoteValue` or a structure of them."""
        return jax.tree_util.tree_map(
            lambda v: v.fetch() if isinstance(v, RemoteValue) else v, val,
            is_leaf=lambda v: isinstance(v, RemoteValue))

    def create_per_worker_dataset(self, dataset_fn):
        """Builds ``dataset_fn()`` on every worker (the function is sent to them; it is
        also called once here to learn the element structure)."""
        return PerWorkerDataset(self, dataset_fn)

    def _raise_pending(self):
        with self._cond:
            if self._errors:
                e = self._errors.pop(0)
                self._errors.clear()
                raise e

    # ------------------------------------------------------------ tracing
    def _trace(self, fn, args, kwargs):

        sig, flat_args = [], []
        for a in list(args) + [kwargs[k] for k in sorted(kwargs)]:
            if isinstance(a, PerWorkerIterator):
                sig.append(("iter", a._ds._key))
                flat_args.append(("__iter__", a._ds._key))
            elif _is_data(a):
                arr = np.asarray(a)
                sig.append(("arr", arr.dtype.str, arr.shape))
                flat_args.append(arr)
            else:
                sig.append(("py", _hashable(a)))
        key = (fn, tuple(sig), tuple(sorted(kwargs)))
        tr = self._traced.get(key)
        if tr is None:
            g = self._ext.graph()
            if g is None:
                raise ValueError("Create the model's variables under strategy.scope() "
                                 "before scheduling functions.")
            feeds = []
            call_args = []
            with g.as_default(), self.strategy.scope():
                for a, s in zip(list(args) + [kwargs[k] for k in sorted(kwargs)], sig):
                    if s[0] == "iter":
                        ds = a._ds
                        phs = [array_ops.placeholder(_dtypes.as_dtype(x.dtype),
                                                     [None] + list(x.shape[1:]) if x.ndim
                                                     else [], name="per_worker_input")
                               for x in ds._leaves]
                        feeds.extend(phs)
                        it = PerWorkerIterator(ds)
                        it._tracing = jax.tree_util.tree_unflatten(ds._treedef, phs)
                        call_args.append(it)
                    elif s[0] == "arr":
                        arr = np.asarray(a)
                        ph = array_ops.placeholder(_dtypes.as_dtype(arr.dtype),
                                                   list(arr.shape), name="scheduled_arg")
                        feeds.append(ph)
                        call_args.append(ph)
                    else:
                        call_args.append(a)
                n_pos = len(args)
                kw = dict(zip(sorted(kwargs), call_args[n_pos:]))
                out = fn(*call_args[:n_pos], **kw)
            tr = self._build_traced(g, out, feeds)
            self._traced[key] = tr
        return tr, flat_args

    def _build_traced(self, g, out, feeds):

        leaves, treedef = jax.tree_util.tree_flatten(
            out, is_leaf=lambda x: isinstance(x, (Tensor, Operation)))
        tensors, targets, slots = [], [], []
        with g.as_default():
            for x in leaves:
                if isinstance(x, Operation):
                    targets.append(x)
                    slots.append(None)
                else:
                    tensors.append(convert_to_tensor(x))
                    slots.append(len(tensors) - 1)
        ops = prune(tensors, targets, feeds)
        fed = set(feeds)
        for op in ops:
            if op.type == "Placeholder" and op.outputs[0] not in fed:
                raise errors.InvalidArgumentError(
                    f"The scheduled function uses placeholder '{op.name}', which has no "
                    "value: pass its values as arguments of the function.", op=op)
        spec = self._ext.step_spec(ops, feeds, tensors, targets)
        if spec is None:
            spec = ps_plan.build_spec(ops, feeds, tensors, targets, (), force=True)
        tr = _Traced()
        tr.spec = spec
        tr.spec_id = ps_plan.spec_id(spec)
        tr.feeds = feeds
        tr.fetches = tensors

        def rebuild(vals):
            outs = [None if s is None else _np(vals[s]) for s in slots]
            return jax.tree_util.tree_unflatten(treedef, outs)

        tr.rebuild = rebuild
        return tr

    # ------------------------------------------------------------ datasets
    def _register_dataset(self, ds):
        self._datasets.append(ds)
        self.strategy._ensure_started()
        import ray

        from mylib.distribute.parameter_server import _rget

        _rget(ray, [w.create_dataset.remote(ds._key, ds._fn) for w in self._ext.worker_handles],
              self.strategy._rpc_timeout, "workers (creating a per-worker dataset)")

    # ------------------------------------------------------------ workers
    def _start_threads(self):
        if self._threads:
            return
        self.strategy._ensure_started()
        self._ext.recovery.run(self._ext.ship_graph, "sending the graph to the tasks")
        import ray

        for i, w in enumerate(self._ext.worker_handles):
            try:
                self._note_pid(i, ray.get(w.ping.remote(), timeout=self.strategy._rpc_timeout)[2])
            except Exception:  # noqa: BLE001 - a lost worker is handled when used
                pass
        if self.strategy._sync:
            t = threading.Thread(target=self._sync_loop, name="ps-sync-coordinator",
                                 daemon=True)
            self._threads.append(t)
            t.start()
        else:
            # Two closures in flight per worker: one computes while the other's
            # request or reply is on the way (the steps are asynchronous anyway).
            for j in range(_IN_FLIGHT):
                for i in range(self.strategy.num_workers):
                    t = threading.Thread(target=self._async_loop, args=(i,),
                                         name=f"ps-worker-{i}-{j}", daemon=True)
                    self._threads.append(t)
                    t.start()

    def _shutdown(self):
        with self._cond:
            self._stop = True
            for c in self._queue:
                c.value._set(error=errors.CancelledError("the strategy was closed"))
            self._queue.clear()
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout=5)

    def _take(self):
        with self._cond:
            while not self._queue and not self._stop:
                self._cond.wait(0.1)
            if self._stop:
                return None
            self._inflight += 1
            return self._queue.popleft()

    def _finish(self, c, value=None, error=None):
        c.value._set(value, error)
        with self._cond:
            self._inflight -= 1
            if error is not None:
                self._errors.append(error)
            self._cond.notify_all()

    def _applied(self):
        """Counts one applied step. Called inside the step's shared section, so that
        a checkpoint (exclusive) labels its values with exactly the steps they hold."""
        with self._cond:
            self._steps_done += 1
        self.strategy.stats["applied_steps"] += 1

    def _requeue(self, c, error=None):
        c.tries += 1
        if c.tries > _MAX_TRIES:
            self._finish(c, error=error or errors.UnavailableError(
                f"a scheduled function failed {c.tries} times on lost tasks; giving up"))
            return
        self.strategy.stats["closures_retried"] += 1
        with self._cond:
            self._inflight -= 1
            self._queue.appendleft(c)
            self._cond.notify_all()

    def _async_loop(self, i):
        rec = self._ext.recovery
        while True:
            c = self._take()
            if c is None:
                return
            gen = rec.generation
            try:
                self._maybe_checkpoint()
                with rec.shared() as gen:
                    vals = self._run_on(i, c, "all")
                    self._applied()
            except _WorkerLost:
                self._requeue(c)
                self._recover_worker(i)
                continue
            except errors.UnavailableError as e:
                self._after_ps_error(c, gen, e)
                continue
            except Exception as e:  # noqa: BLE001 - the closure's own error
                self._finish(c, error=_unwrap(e))
                continue
            self._finish(c, c.traced.rebuild(vals))

    def _submit(self, i, c, mode, spec=False):
        tr = self._ext
        w = tr.worker_handles[i]
        delay = self.strategy._worker_delay.get(i, 0.0)
        return remote_call(w, "run_step", (tr._shipped, c.traced.spec_id, c.feed_vals, mode,
                                           c.traced.spec if spec else None, delay))

    def _resolve(self, i, c, mode, result):
        """Handles NEED_GRAPH/NEED_SPEC answers by resubmitting; returns the result."""
        import ray

        from mylib.distribute.ps_runtime import NEED_GRAPH, NEED_SPEC

        result = unpack(result)
        for _ in range(3):
            if isinstance(result, str) and result == NEED_GRAPH:
                self._ext.ship_graph()
                w = self._ext.worker_handles[i]
                self._ext.reship_to(w)
                self._note_pid(i, self._get(ray, w.ping.remote(), i)[2])
                result = unpack(self._get(ray, self._submit(i, c, mode), i))
            elif isinstance(result, str) and result == NEED_SPEC:
                result = unpack(self._get(ray, self._submit(i, c, mode, spec=True), i))
            else:
                return result
        raise errors.InternalError(f"worker {i} could not load the step")

    def _get(self, ray, ref, i, timeout=None):
        # Wait in short slices so that closing the strategy stops this thread before
        # Ray shuts down under it.
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._stop:
                raise errors.CancelledError("the strategy was closed")
            left = 0.25 if end is None else min(0.25, end - time.monotonic())
            try:
                return ray.get(ref, timeout=max(left, 0))
            except ray.exceptions.GetTimeoutError:
                if end is not None and time.monotonic() >= end:
                    raise errors.DeadlineExceededError(
                        f"worker {i} (/job:worker/task:{i}) did not answer within "
                        f"{timeout} s") from None
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError):
                raise _WorkerLost(i) from None
            except ray.exceptions.RayTaskError as e:
                raise _unwrap(e) from None

    def _run_on(self, i, c, mode):
        import ray

        self._ext.ship_graph()
        return self._resolve(i, c, mode, self._get(ray, self._submit(i, c, mode), i))

    def _recover_worker(self, i, deadline=None):
        """Waits (until `deadline`, a `time.monotonic()` value; default ``rpc_timeout``
        from now) for Ray to restart worker `i`, then gives it the graph, the
        parameter servers and its datasets again. True when it is back."""
        if deadline is None:
            deadline = time.monotonic() + self.strategy._rpc_timeout
        with self._worker_locks.setdefault(i, threading.Lock()):
            return self._recover_worker_locked(i, deadline)

    def _recover_worker_locked(self, i, deadline):
        import ray

        w = self._ext.worker_handles[i]
        left = lambda: max(deadline - time.monotonic(), 0.05)  # noqa: E731
        try:  # already brought back (the process set up last time, current graph)?
            info = ray.get(w.ping.remote(), timeout=min(5, left()))
            with self._cond:
                known = self._worker_pids.get(i)
            if info[2] == known and info[3] == self._ext._shipped:
                return True
        except Exception:  # noqa: BLE001 - still down
            pass
        while not self._stop:
            try:
                self._note_pid(i, ray.get(w.ping.remote(), timeout=min(5, left()))[2])
                graph = getattr(self._ext, "_graph_bytes", None)
                ray.get([w.set_ps.remote(self._ext.ps_handles)] +
                        [w.create_dataset.remote(d._key, d._fn) for d in self._datasets] +
                        ([] if graph is None else
                         [w.load_graph.remote(self._ext._shipped, graph)]),
                        timeout=left())
                if self.strategy._ray_local is not None:
                    self.strategy._ray_local.record_processes()
                return True
            except Exception:  # noqa: BLE001 - still restarting
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.2)
        return False

    def _note_pid(self, i, pid):
        """Counts a restart of worker `i` when its process changed."""
        with self._cond:
            old = self._worker_pids.get(i)
            self._worker_pids[i] = pid
            if old is not None and old != pid:
                self.strategy.stats["worker_restarts"] += 1

    # ------------------------------------------------------------ parameter servers
    def _ckpt_due(self, force=False):
        every = self.strategy.checkpoint_every
        with self._cond:
            return force or self._last_ckpt is None or bool(
                every and self._steps_done - self._last_ckpt >= every)

    def _maybe_checkpoint(self, force=False):
        """Writes the periodic checkpoint when due, with no step in flight (so all
        parameter servers' files hold the same steps), recovering from a parameter
        server lost meanwhile."""
        s = self.strategy
        if s.checkpoint_dir is None or not self._ckpt_due(force):
            return

        def save():
            if not self._ckpt_due(force):
                return  # another thread saved while this one waited
            with self._cond:
                step = self._steps_done
            ps_checkpoint.save(s, s.checkpoint_dir, step)
            with self._cond:
                self._last_ckpt = step

        self._ext.recovery.run(save, "the periodic checkpoint", exclusive=True)

    def _after_ps_error(self, c, gen, e):
        """A closure failed on a parameter server: recover (restore every server from
        the checkpoint) and re-queue it, or fail it with the error."""
        try:
            ok = self._ext.recovery.recover(gen, e)
        except Exception as e2:  # noqa: BLE001 - it did not come back
            ok, e = False, _unwrap(e2)
        if ok:
            self._requeue(c, e)
        else:
            self._finish(c, error=e)

    def _rolled_back_to(self, step):
        """The parameter servers were restored to the checkpoint of `step` (closures
        applied): returns how many applied steps that undid."""
        with self._cond:
            lost = max(self._steps_done - step, 0)
            self._steps_done = min(self._steps_done, step)
            self._last_ckpt = self._steps_done
            return lost

    # ------------------------------------------------------------ synchronous mode
    def _sync_loop(self):
        import ray

        s = self.strategy
        m = s.replicas_to_aggregate
        n = s.num_workers
        busy = {}  # worker -> (ref, closure) still computing a stale step
        since = None
        while not self._stop:
            # Stale computations that finished: their gradients are dropped.
            for i, (ref, c) in list(busy.items()):
                r, _ = ray.wait([ref], timeout=0)
                if r:
                    del busy[i]
                    self._settle_stale(i, ref, c)
            with self._cond:
                free = [i for i in range(n) if i not in busy]
                q = len(self._queue)
                if q and since is None:
                    since = time.monotonic()
                # A step needs m free workers, and m closures (fewer only when the
                # queue is being flushed by join() or has waited 0.2 s).
                go = q and len(free) >= m and (
                    q >= m or self._flush or time.monotonic() - since > 0.2)
                if not go:
                    self._cond.wait(0.01)
                    continue
                take = min(len(free), q)
                batch = [(free[j], self._queue.popleft()) for j in range(take)]
                self._inflight += len(batch)
                since = None
            rec = self._ext.recovery
            gen = rec.generation
            try:
                self._maybe_checkpoint()
                with rec.shared() as gen:
                    self._sync_step(batch, busy, m)
            except Exception as e:  # noqa: BLE001 - fail the step's closures
                e = _unwrap(e)
                # A parameter server restored from the checkpoint: run the step again.
                try:
                    retry = isinstance(e, errors.UnavailableError) and rec.recover(gen, e)
                except Exception as e2:  # noqa: BLE001 - it did not come back
                    retry, e = False, _unwrap(e2)
                for i, c in batch:
                    if not c.value.done() and i not in busy and c not in self._queue:
                        if retry:
                            self._requeue(c)
                        else:
                            self._finish(c, error=e)

    def _settle_stale(self, i, ref, c):
        import ray

        self.strategy.stats["dropped_gradients"] += 1
        try:
            res = self._resolve(i, c, "ungated", self._get(ray, ref, i))
            fetched, _ = res
            self._finish(c, c.traced.rebuild(fetched))
        except _WorkerLost:
            self._requeue(c)
            self._recover_worker(i)
        except Exception as e:  # noqa: BLE001
            self._finish(c, error=_unwrap(e))

    def _sync_step(self, batch, busy, m):
        import ray

        s = self.strategy
        self._ext.ship_graph()
        refs = {self._submit(i, c, "ungated"): (i, c) for i, c in batch}
        want = min(m, len(refs))
        got = []
        pending = list(refs)
        lost = {}  # worker -> its closure, while Ray restarts the worker
        deadline = time.monotonic() + s._rpc_timeout
        while len(got) < want:
            left = deadline - time.monotonic()
            if left <= 0 or (not pending and not lost):
                missing = sorted({refs[r][0] for r in pending} | set(lost))
                raise errors.DeadlineExceededError(
                    f"synchronous step: {len(got)} of the {want} gradients needed arrived "
                    f"within {s._rpc_timeout} s; missing: "
                    + ", ".join(f"/job:worker/task:{i}"
                                + (" (lost, not restarted in time)" if i in lost else "")
                                for i in missing))
            if self._stop:
                raise errors.CancelledError("the strategy was closed")
            # A lost worker rejoins this step once Ray has restarted it: its closure
            # is submitted to it again (it stays pending meanwhile).
            for i, c in list(lost.items()):
                if self._recover_worker(i, deadline=min(deadline, time.monotonic() + 0.5)):
                    del lost[i]
                    r = self._submit(i, c, "ungated")
                    refs[r] = (i, c)
                    pending.append(r)
            if not pending:
                time.sleep(min(0.1, max(left, 0)))
                continue
            ready, pending = ray.wait(pending, num_returns=1, timeout=min(left, 0.25))
            for r in ready:
                i, c = refs[r]
                try:
                    res = self._resolve(i, c, "ungated", self._get(ray, r, i))
                except _WorkerLost:
                    lost[i] = c
                    continue
                got.append((i, c, res))
        # Apply the mean of the first m payloads once.
        tr = batch[0][1].traced
        agg = set(tr.spec["aggregate"])
        runner = self._gated_runner(tr)
        names = runner.payload_names
        env = {}
        for j, name in enumerate(names):
            vals = [res[1][j] for _, _, res in got]
            if name in agg:
                env[name] = np.mean(np.stack([np.asarray(v) for v in vals]), axis=0).astype(
                    np.asarray(vals[0]).dtype)
            else:
                env[name] = vals[0]
        runner.run(None, mode="gated", env=env)
        self._applied()
        for i, c, res in got:
            self._finish(c, c.traced.rebuild(res[0]))
        for r in pending:
            i, c = refs[r]
            busy[i] = (r, c)
        for i, c in lost.items():  # enough gradients without them: run them later
            self._requeue(c)

    def _gated_runner(self, tr):

        g = self._ext.graph()
        cache = getattr(self, "_gated", None)
        if cache is None:
            cache = self._gated = {}
        plan = cache.get(tr.spec_id)
        if plan is None:
            plan = _ClusterPlan(self._ext, tr.spec, get_session(g))
            cache[tr.spec_id] = plan
        plan.version = self._ext.ship_graph()
        return plan.runner


_MAX_TRIES = 5  # runs of one closure lost to failed tasks before its error is raised
_IN_FLIGHT = 1  # as TensorFlow: a worker runs one closure at a time


class _WorkerLost(Exception):
    def __init__(self, i):
        super().__init__(f"worker {i} was lost")
        self.index = i


def _unwrap(e):
    cause = getattr(e, "cause", None)
    if isinstance(cause, BaseException):
        return cause
    return e


def _np(v):
    if v is None:
        return None
    a = np.asarray(v)
    return a[()] if a.ndim == 0 else a


def _is_data(a):
    return isinstance(a, (np.ndarray, np.generic, jax.Array, int, float, bool)) and \
        not isinstance(a, type)


def _hashable(a):
    try:
        hash(a)
        return a
    except TypeError:
        return id(a)
