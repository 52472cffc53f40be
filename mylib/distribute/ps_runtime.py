"""The tasks of a parameter-server cluster as Ray actors, and the local Ray instance.

Each parameter server and each worker is a Ray actor holding a copy of the graph
(shipped as a `GraphDef`, re-shipped when the graph grows) and a mylib `Session` for
its part of it: the parameter servers' sessions hold the variables; workers run the
forward and backward passes and call the parameter servers directly (Ray actor calls:
tensors move as numpy arrays through Ray's object store, never through hand-written
sockets; a call whose arrays are small travels as one pickled blob, see `pack`). Task
processes keep freed memory for reuse (`keep_freed_memory`).

`LocalRay` starts the embedded single-machine cluster: loopback only, Ray's token
authentication on (a fresh random token, kept in the environment of this process and
its Ray processes, never written to disk), no dashboard, its session files in a
private temporary directory removed by `LocalRay.stop`: ``/tmp/mylib-ray-*``, mode
0700, holding Ray's own directory ``ray/``. Ray makes its directory and everything in
it world-writable (0777) as it starts; the 0700 parent, which Ray does not touch, keeps
other users out from the start, and `LocalRay.secure` takes the modes back as soon as
Ray has started. The directory holds ``mylib-owner.json``: the process that started
the cluster and the Ray processes it saw, each with its start time. A driver killed
with -9 cannot stop its cluster; the next `LocalRay` started by the same user removes
what such a dead predecessor left (`clean_stale`): its processes, matched by PID *and*
start time so a reused PID is never killed, and its directory.

Ray 2.60 cannot run without its dashboard agent and runtime-env agent (the raylet
refuses an empty agent command: "Dashboard agent command must be non empty"), and
``include_dashboard=False`` still starts the head's API server with only its
usage-stats module and no web frontend; both run, on loopback, and are cleaned up as
above.
"""

from __future__ import annotations

import json
import os
import pickle
import secrets
import shutil
import stat
import sys
import tempfile
import threading
import time

import numpy as np

from mylib import _safe_pickle
from mylib.core.x64 import with_x64

NEED_GRAPH = "__mylib_need_graph__"
NEED_SPEC = "__mylib_need_spec__"
NEED_RESTORE = "__mylib_need_restore__"  # a restarted parameter server, not yet restored
OWNER_FILE = "mylib-owner.json"
TEMP_PREFIX = "mylib-ray-"
TEMP_BASE = "/tmp"  # short: Ray's socket paths must fit in 107 bytes
_TOKEN = None  # one random token per process (Ray caches it)

_RAY_ENV = {
    # Ray's single-node local mode: every socket on 127.0.0.1.
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_AUTH_MODE": "token",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_DEDUP_LOGS": "0",
}


def import_ray():
    """Ray, or ImportError saying how to install it."""
    from mylib._optional import require

    return require("ray", "ParameterServerStrategy", "ps")


def _reread_environment():
    """Ray reads its configuration (authentication mode, token, local mode) from the
    environment when it is imported; if it was imported before the variables above
    were set, make it read them again (Ray has no public API for this: see
    mylib._compat.ray_adapter)."""
    from mylib._compat import ray_adapter

    ray_adapter.reload_config_from_environment()
    ray_adapter.restrict_to_loopback()  # the local mode: loopback addresses only
    if not ray_adapter.token_authentication_enabled():
        raise RuntimeError("Ray did not turn token authentication on")


class LocalRay:
    """A Ray instance started for one strategy; `stop()` shuts it down and removes its
    files, and restores the environment variables it set."""

    def __init__(self, num_cpus, object_store_memory=None):
        global _TOKEN
        self._saved = {k: os.environ.get(k) for k in list(_RAY_ENV) + ["RAY_AUTH_TOKEN"]}
        # Ray reads these when it is imported and when it starts: set them first.
        os.environ.update(_RAY_ENV)
        if _TOKEN is None:
            _TOKEN = secrets.token_hex(32)
        os.environ["RAY_AUTH_TOKEN"] = _TOKEN
        imported_before = "ray" in sys.modules
        ray = import_ray()
        if ray.is_initialized():
            self._restore()
            raise RuntimeError(
                "Ray is already initialized in this process; pass address='auto' to "
                "ParameterServerStrategy to use that cluster, or shut it down first.")
        if imported_before:
            # Otherwise Ray has just read the variables above, as documented.
            try:
                _reread_environment()
            except BaseException:
                self._restore()
                raise
        clean_stale(TEMP_BASE)
        self.temp_dir = tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=TEMP_BASE)
        self._pids = {}
        self._record_lock = threading.Lock()  # coordinator threads record concurrently
        self._write_owner()
        import warnings

        try:
            with warnings.catch_warnings():
                # Ray starts its processes with fork+exec, which JAX's fork hook warns
                # about; exec replaces the child at once.
                warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called")
                from mylib._compat import ray_adapter

                ray_adapter.init_local(
                    os.path.join(self.temp_dir, "ray"), num_cpus=num_cpus,
                    include_dashboard=False,
                    configure_logging=False, log_to_driver=True,
                    object_store_memory=object_store_memory)
        except BaseException:
            self._restore()
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            raise
        self._ray = ray
        self.record_processes()

    def _write_owner(self):
        me = os.getpid()
        data = {"pid": me, "start": _start_time(me),
                "processes": {str(p): t for p, t in self._pids.items()}}
        path = os.path.join(self.temp_dir, OWNER_FILE)
        tmp = path + ".tmp"
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)

    def record_processes(self):
        """Records the cluster's processes (this process's children whose command
        line names the directory: Ray's head processes and the raylet; and their
        descendants: the agents and workers) with their start times in the owner
        file, and makes the directory private again (`secure`). Called after start
        and whenever tasks (re)start."""
        if self._ray is None:
            return
        with self._record_lock:
            try:
                for pid in _descendants(os.getpid(), self.temp_dir):
                    t = _start_time(pid)
                    if t is not None:
                        self._pids[pid] = t
                self._write_owner()
            except OSError:
                pass  # no /proc (not Linux): nothing to record
            self.secure()

    def secure(self):
        """Takes back group and other permissions on everything under the directory
        (Ray makes its session directories 0777, e.g. ``sockets/`` and
        ``runtime_resources/pip``): directories become 0700, files lose group/other
        bits. Symbolic links are left alone."""
        make_private(self.temp_dir)

    def _restore(self):
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def stop(self):
        if self._ray is None:
            return
        try:
            self._ray.shutdown()
        finally:
            self._ray = None
            self._restore()
            # Processes Ray leaves behind (its agents outlive the raylet for a while).
            with self._record_lock:
                _kill_recorded(dict(self._pids), grace=2.0)
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def make_private(root):
    """Removes group/other permissions on `root` and everything under it
    (directories 0700, files ``mode & 0o700``), not following symbolic links; files
    that vanish meanwhile are skipped."""
    for dirpath, dirnames, filenames in os.walk(root):
        paths = [os.path.join(dirpath, n) for n in dirnames + filenames]
        for p in ([dirpath] if dirpath == root else []) + paths:
            try:
                st = os.lstat(p)
                if stat.S_ISLNK(st.st_mode):
                    continue
                mode = stat.S_IMODE(st.st_mode)
                want = 0o700 if stat.S_ISDIR(st.st_mode) else mode & 0o700
                if mode != want:
                    os.chmod(p, want)
            except OSError:
                pass


def _start_time(pid):
    """The start time of process `pid` (clock ticks since boot, field 22 of
    /proc/PID/stat), or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    try:
        return int(data[data.rindex(b")") + 2:].split()[19])
    except (ValueError, IndexError):
        return None


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _descendants(root, mark):
    """The children of `root` whose command line contains `mark`, and all their
    descendants."""
    children = {}
    uid = os.getuid()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
            ppid = int(data[data.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out = [c for c in children.get(root, []) if mark in _cmdline(c)]
    todo = list(out)
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _kill_recorded(pids, grace):
    """Kills each process in `{pid: start_time}` that still is that process (same PID
    and start time): SIGTERM, then SIGKILL after `grace` seconds; waits (bounded) until
    they are gone."""
    import signal

    alive = [p for p, t in pids.items() if t is not None and _start_time(p) == t]
    for p in alive:
        try:
            os.kill(p, signal.SIGTERM)
        except OSError:
            pass
    end = time.monotonic() + grace
    while alive and time.monotonic() < end:
        time.sleep(0.05)
        alive = [p for p in alive if _start_time(p) == pids[p]]
    for p in alive:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    end = time.monotonic() + 5.0
    while alive and time.monotonic() < end:
        time.sleep(0.05)
        alive = [p for p in alive if _start_time(p) == pids[p]]
    return alive


def clean_stale(base=TEMP_BASE):
    """Removes what embedded clusters of dead drivers left under `base`: for each
    ``mylib-ray-*`` directory of this user whose owner file names a process that no
    longer runs (or whose PID now belongs to another process), kills the recorded
    processes that are still the same processes and removes the directory. A
    directory without an owner file (a driver between creating it and writing the
    file, or another program's) is left alone. Returns the directories removed."""
    removed = []
    try:
        names = os.listdir(base)
    except OSError:
        return removed
    uid = os.getuid()
    for name in names:
        if not name.startswith(TEMP_PREFIX):
            continue
        d = os.path.join(base, name)
        try:
            if os.lstat(d).st_uid != uid or not stat.S_ISDIR(os.lstat(d).st_mode):
                continue
            with open(os.path.join(d, OWNER_FILE)) as f:
                owner = json.load(f)
            pid, start = int(owner["pid"]), owner["start"]
            procs = {int(p): t for p, t in owner.get("processes", {}).items()}
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if start is not None and _start_time(pid) == start:
            continue  # its driver still runs
        _kill_recorded(procs, grace=1.0)
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


# ------------------------------------------------------------ the wire format of steps
PACK_LIMIT = 64 * 1024  # bytes of array data below which a call travels as one blob


_PLAIN = (type(None), bool, int, float, str, bytes)


def _packable_bytes(obj, depth=0):
    """The bytes of array data in `obj`, or -1 when `obj` holds anything but numpy
    arrays (not of object dtype), numpy scalars and plain values: what
    `mylib._safe_pickle` builds back."""
    if isinstance(obj, np.ndarray):
        return -1 if obj.dtype.hasobject else obj.nbytes
    if isinstance(obj, _PLAIN) or isinstance(obj, np.generic):
        return 0
    if depth < 8 and type(obj) in (list, tuple, dict):
        total = 0
        for o in (obj if type(obj) is not dict else
                  [x for kv in obj.items() for x in kv]):
            n = _packable_bytes(o, depth + 1)
            if n < 0:
                return -1
            total += n
        return total
    return -1


def pack(obj):
    """`obj` (a call's arguments, or its result) as one pickled `bytes` when it holds
    only numpy arrays, numpy scalars and plain values, with less than `PACK_LIMIT`
    bytes of array data; else `obj` itself, for Ray's own serializer.

    Ray serializes every argument of an actor call separately (signature binding,
    a serializer pass each): about 0.1-0.2 ms per argument on a 2-core machine, more
    than pickling a small step's whole call (25 us). Large arrays stay with Ray, which
    moves them through its object store without an extra copy. The receiver unpickles
    with `mylib._safe_pickle`, which builds nothing else."""
    n = _packable_bytes(obj)
    if n < 0 or n >= PACK_LIMIT:
        return obj
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(x):
    """The inverse of `pack` (a value that was not packed passes unchanged)."""
    if type(x) is bytes:
        return _safe_pickle.loads(x, "a parameter-server message")
    return x


def keep_freed_memory():
    """Makes this process's C allocator keep freed memory for reuse; True when it
    could (glibc), else False. Called only in task processes, never in the user's.

    glibc's malloc maps every block of 128 KB or more (32 MB once it adapts) with a
    fresh mmap and unmaps it when freed, so each step's large XLA outputs (a dense
    model's gradients) land on new pages the kernel must fault in and zero: a jitted
    ``(sum(v * v), 2 * v)`` of a 50 MB v took 65-77 ms a call that way on a 2-core VM,
    12-32 ms with large blocks taken from the heap and the heap not trimmed
    (mallopt(3): M_MMAP_THRESHOLD, M_TRIM_THRESHOLD). The task's memory then stays at
    its peak, as TensorFlow's own allocator keeps it."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False  # not glibc
    m_trim_threshold, m_mmap_threshold, most = -1, -3, 2 ** 31 - 1
    return bool(mallopt(m_mmap_threshold, most)) and bool(mallopt(m_trim_threshold, most))


class TaskServer:
    """What every task actor does: hold the graph copy and a Session, run segments."""

    def __init__(self, job, index, x64=True):
        self.keeps_freed_memory = keep_freed_memory()
        # Registers every op type a shipped graph may hold: the core's, metrics' and
        # summaries'.
        import mylib.core  # noqa: F401
        import mylib.metrics  # noqa: F401
        import mylib.summary  # noqa: F401

        self.job = job
        self.index = index
        self.version = -1
        self.graph = None
        self.session = None
        self.runner = None
        self._graph_lock = threading.Lock()
        self._born = time.time()

    def memory_reuse(self):
        """Whether this task keeps freed memory for reuse (`keep_freed_memory`)."""
        return self.keeps_freed_memory

    def ping(self):
        """``(job, index, pid, graph version, incarnation)``; the incarnation (pid,
        start time) changes when Ray restarts the task."""
        return (self.job, self.index, os.getpid(), self.version, (os.getpid(), self._born))

    @with_x64  # mylib's 64-bit scope: tasks run steps outside Session.run
    def load_graph(self, version, graph_def_bytes, fresh_ok=True):
        """Replaces the graph copy by version `version`, keeping variable values.
        With ``fresh_ok=False`` a task that has no graph yet (restarted, its values
        lost) answers `NEED_RESTORE` instead: a parameter server must be restored
        before it serves a newer graph with uninitialized variables."""
        from mylib.core.graph import Graph
        from mylib.core.graph_import import import_graph_def
        from mylib.core.graph_io import GraphDef
        from mylib.runtime.session import Session
        from mylib.distribute.ps_plan import SegmentRunner

        with self._graph_lock:
            if version <= self.version:
                return self.version
            if self.session is None and not fresh_ok:
                return NEED_RESTORE
            g = Graph()
            with g.as_default():
                import_graph_def(GraphDef.FromString(graph_def_bytes), name="",
                                 allow_host_effects=True)  # the driver's own graph
            sess = Session(graph=g)
            if self.session is not None:  # the values survive a new graph version
                sess.variable_store.restore(self.session.variable_store.snapshot())
            self.graph, self.session = g, sess
            self.runner = SegmentRunner(g, sess)
            self._on_graph()
            self.version = version
            return version

    def _on_graph(self):
        pass

    @with_x64  # mylib's 64-bit scope: tasks run steps outside Session.run
    def run_segment(self, version, seg_id, values, seg=None):
        if version != self.version:
            return NEED_GRAPH
        runner = self.runner
        if seg is None and not runner.knows(seg_id):
            return NEED_SPEC
        from mylib.distribute.ps_plan import to_host

        outs = runner.run(seg if seg is not None else {"id": seg_id}, values)
        return [to_host(o) for o in outs]

    def run_segment_packed(self, blob):
        """`run_segment` with its arguments as one `pack`ed blob; the result packed."""
        return pack(self.run_segment(*unpack(blob)))

    @with_x64  # mylib's 64-bit scope: tasks run steps outside Session.run
    def get_values(self, keys):
        """Host copies of variables `keys` (None where uninitialized), or
        `NEED_GRAPH` from a task that has no graph (restarted, its values lost)."""
        if self.session is None:
            return NEED_GRAPH
        return self.session.read_variables(list(keys))

    @with_x64
    def set_values(self, values):
        """Sets variables from `{key: array}`."""
        import jax.numpy as jnp

        if self.session is None:
            raise RuntimeError(f"{self.job} task {self.index} has no graph yet")
        self.session.assign_variables({k: jnp.asarray(v) for k, v in values.items()})
        return True

    def initialized(self, keys):
        if self.session is None:
            return [False] * len(keys)
        return [self.session.variable_value(k) is not None for k in keys]

    def exit_now(self, code=1):
        """Kills this task's process (for fault-tolerance tests)."""
        os._exit(code)


class WorkerServer(TaskServer):
    """A worker: runs whole steps, calling the parameter servers for their segments."""

    def __init__(self, index, rpc_timeout, x64=True):
        super().__init__("worker", index, x64)
        self.ps = []
        self.rpc_timeout = rpc_timeout
        self.steps = {}
        self.iterators = {}
        self.dataset_fns = {}

    def _on_graph(self):
        self.steps = {}

    def set_ps(self, ps_handles):
        self.ps = list(ps_handles)

    def create_dataset(self, key, dataset_fn):
        """Builds this worker's dataset from `dataset_fn()` (an iterable, a
        `mylib.data.Dataset`, or a function of an `InputContext`)."""
        self.dataset_fns[key] = dataset_fn
        self.iterators.pop(key, None)
        return True

    def _next(self, key):
        it = self.iterators.get(key)
        if it is None:
            fn = self.dataset_fns.get(key)
            if fn is None:
                from mylib import errors

                raise errors.FailedPreconditionError(
                    f"worker {self.index} has no per-worker dataset {key}")
            it = self.iterators[key] = iter(fn())
        try:
            el = next(it)
        except StopIteration:
            from mylib import errors

            raise errors.OutOfRangeError(
                f"End of sequence: the per-worker dataset on worker {self.index} is "
                "exhausted") from None
        import jax

        return [np.asarray(x) for x in jax.tree_util.tree_leaves(el)]

    @with_x64  # mylib's 64-bit scope: tasks run steps outside Session.run
    def run_step(self, version, spec_id, feed_vals, mode, spec=None, delay=0.0):
        """Runs step `spec_id` (its `spec` the first time) with `feed_vals` (where a
        ``("__iter__", key)`` entry stands for the leaves of the next element of a
        per-worker dataset). `delay` (seconds) makes this worker artificially slow."""
        if version != self.version:
            return NEED_GRAPH
        st = self.steps.get(spec_id)
        if st is None:
            if spec is None:
                return NEED_SPEC
            from mylib.distribute.ps_plan import StepRunner

            st = self.steps[spec_id] = StepRunner(spec, self.graph, self.session,
                                                  self._call_ps, self._wait)
        vals = []
        for v in feed_vals:
            if isinstance(v, tuple) and len(v) == 2 and v[0] == "__iter__":
                vals.extend(self._next(v[1]))
            else:
                vals.append(v)
        if delay:
            time.sleep(delay)
        from mylib.distribute.ps_plan import to_host

        out = st.run(vals, mode=mode)
        if mode == "ungated":
            fetched, payload = out
            return [to_host(v) for v in fetched], payload
        return [to_host(v) for v in out]

    def run_step_packed(self, blob):
        """`run_step` with its arguments as one `pack`ed blob; the result packed."""
        return pack(self.run_step(*unpack(blob)))

    # --- calls to the parameter servers ---
    def _call_ps(self, task, seg, values):
        return (task, seg, values, call_segment(self.ps[task], self.version, seg["id"], values))

    def _wait(self, pending):
        return wait_ps(pending, self.ps, self.version, self.rpc_timeout)


def remote_call(handle, method, args):
    """Submits ``handle.method(*args)``: as ``method_packed(blob)`` when `pack` makes
    one blob of `args`. Returns the Ray reference (its result goes through `unpack`)."""
    blob = pack(args)
    if type(blob) is bytes:
        return getattr(handle, method + "_packed").remote(blob)
    return getattr(handle, method).remote(*args)


def call_segment(handle, version, seg_id, values):
    """Submits segment `seg_id` to a parameter server."""
    return remote_call(handle, "run_segment", (version, seg_id, values))


def wait_ps(pending, ps_handles, version, timeout):
    """Waits for parameter-server segment calls ``(task, seg, values, ref)``; resends a
    segment's spec where the server asks for it. Raises UnavailableError when a server
    died or restarted (its graph is gone) or DeadlineExceededError past `timeout`."""
    import ray

    from mylib import errors

    refs = [p[3] for p in pending]
    try:
        results = ray.get(refs, timeout=timeout)
    except ray.exceptions.GetTimeoutError:
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        late = sorted({p[0] for p, r in zip(pending, refs) if r not in ready})
        raise errors.DeadlineExceededError(
            f"parameter server task(s) {late} did not answer within {timeout} s") from None
    except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as e:
        raise errors.UnavailableError(
            f"a parameter server task is unavailable: {_short(e)}") from None
    out = []
    for (task, seg, values, _), r in zip(pending, results):
        r = unpack(r)
        if isinstance(r, str) and r == NEED_SPEC:
            try:
                r = ray.get(ps_handles[task].run_segment.remote(version, seg["id"], values, seg),
                            timeout=timeout)
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as e:
                raise errors.UnavailableError(
                    f"parameter server task {task} is unavailable: {_short(e)}") from None
        if isinstance(r, str) and r == NEED_GRAPH:
            raise errors.UnavailableError(
                f"parameter server task {task} restarted and lost its state (/job:ps/task:"
                f"{task}); it must be restored before training continues")
        out.append(r)
    return out


def _short(e):
    s = str(e).strip().splitlines()
    return s[0][:300] if s else type(e).__name__
