"""`ParameterServerStrategy`: variables on parameter-server tasks, workers computing
gradients, on Ray. The architecture of the TensorFlow paper (Abadi et al., OSDI 2016,
sections 3-4): shared state lives in variables on ``/job:ps`` tasks and is updated by
ordinary graph ops placed there, so how updates are applied is the user's to change.

Use::

    strategy = ml.distribute.ParameterServerStrategy(num_ps=2, num_workers=4)
    with strategy.scope():
        model = make_model()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x, y, epochs=3, steps_per_epoch=100)   # steps run on the workers
    strategy.close()                                  # or `with strategy:`

or with the graph API, `ClusterCoordinator(strategy).schedule(step_fn, args)`, or a
plain `Session.run` (the steps then run in this process, the variables still on the
parameter servers).

How a step is cut between tasks: `mylib.distribute.ps_plan`. The tasks are Ray actors:
`mylib.distribute.ps_runtime`.
"""

from __future__ import annotations

import itertools
import threading
import weakref

import numpy as np

from mylib import _optional, errors
from mylib.core import dtypes as _dtypes
from mylib.core.gradients import IndexedSlices, indexed_slices_to_dense
from mylib.core.graph import get_default_graph
from mylib.core.graph_io import graph_to_graph_def
from mylib.core.ops import array_ops
from mylib.core.tensor_shape import as_shape
from mylib.runtime.keras_session import get_session
from mylib.core.op_registry import convert_to_tensor
from mylib.distribute import distribute_lib as dl
from mylib.distribute import ps_plan
from mylib.distribute.cluster_resolver import ClusterSpec
from mylib.distribute.sharded_variable import ShardedVariable, shard_sizes
from mylib.runtime.policy import clear_policy, set_policy


def ps_device(k):
    return f"/job:ps/replica:0/task:{k}/device:CPU:0"


class _ClusterPlan:
    """A step cut across tasks, run from this process (see `ps_plan`); what the
    Session's segmented path calls."""

    def __init__(self, ext, spec, session):
        self.ext = ext
        self.spec = spec
        self.version = None
        self.runner = ps_plan.StepRunner(spec, session.graph, session,
                                         self._call_ps, self._wait)

    def _call_ps(self, task, seg, values):
        from mylib.distribute.ps_runtime import call_segment

        return (task, seg, values,
                call_segment(self.ext.ps_handles[task], self.version, seg["id"], values))

    def _wait(self, pending):
        from mylib.distribute.ps_runtime import wait_ps

        return wait_ps(pending, self.ext.ps_handles, self.version, self.ext.rpc_timeout)

    def run(self, session, feed_vals, deadline=None, trace=None):
        vals = [ps_plan.to_host(v) for v in feed_vals]

        def attempt():
            self.version = self.ext.ship_graph()
            return self.runner.run(vals, "all", deadline=deadline, trace=trace)

        # A parameter server lost mid-step: every server is restored to the last
        # checkpoint (which undoes this step's partial effects) and the step re-runs.
        return self.ext.recovery.run(attempt, "a step run from this process")

    def partition_graphs(self):
        return []


class _RemoteStore:
    """Variable values on the parameter servers: the `VariableStore` methods the
    Session uses for them (`owns`, `get`, `read`, `write`: Keras weights, the Saver)."""

    def __init__(self, ext):
        self.ext = ext

    def owns(self, key):
        return self.ext.task_of_key(key) is not None

    def get(self, key):
        return self.read([key])[0]

    def read(self, keys):
        self.ext._strategy._ensure_started()
        return self.ext.recovery.run(lambda: self._read(keys), "reading variables")

    def _read(self, keys):
        import ray

        by_task = {}
        for i, k in enumerate(keys):
            by_task.setdefault(self.ext.task_of_key(k), []).append((i, k))
        self.ext.ship_graph()
        out = [None] * len(keys)
        refs = {t: self.ext.ps_handles[t].get_values.remote([k for _, k in items])
                for t, items in by_task.items()}
        for t, items in by_task.items():
            vals = _rget(ray, refs[t], self.ext.rpc_timeout,
                         f"parameter server /job:ps/task:{t}")
            _check_state(vals, t)
            for (i, _), v in zip(items, vals):
                out[i] = v
        return out

    def write(self, values):
        self.ext._strategy._ensure_started()
        return self.ext.recovery.run(lambda: self._write(values), "writing variables")

    def _write(self, values):
        import ray

        self.ext.ship_graph()
        by_task = {}
        for k, v in values.items():
            by_task.setdefault(self.ext.task_of_key(k), {})[k] = np.asarray(v)
        refs = [self.ext.ps_handles[t].set_values.remote(d) for t, d in by_task.items()]
        _rget(ray, refs, self.ext.rpc_timeout, "parameter servers")


def _check_state(answer, task):
    """Raises UnavailableError when parameter server `task` answered that it has no
    graph: Ray restarted it and its values are lost until it is restored."""
    if isinstance(answer, str) and answer in (ps_runtime.NEED_GRAPH, NEED_RESTORE):
        raise errors.UnavailableError(
            f"parameter server /job:ps/task:{task} restarted and lost its state; it must "
            "be restored before training continues")


def _rget(ray, refs, timeout, what):
    try:
        return ray.get(refs, timeout=timeout)
    except ray.exceptions.GetTimeoutError:
        raise errors.DeadlineExceededError(f"{what} did not answer within {timeout} s") \
            from None
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise
    except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as e:
        raise errors.UnavailableError(f"{what} unavailable: {short(e)}") from None


class ParameterServerExtended(dl.StrategyExtended):
    """The machinery of `ParameterServerStrategy` and its `ExecutionPolicy`: variable
    placement (`variable_device`), steps cut across tasks (`plan_step`), Keras steps
    scheduled on workers (`schedule_step`), synchronous aggregation, the remote
    variable store, the tasks."""

    def __init__(self, strategy):
        super().__init__(strategy)
        s = strategy
        self.num_ps = s._num_ps
        self.rpc_timeout = s._rpc_timeout
        self._bytes = [0] * self.num_ps
        self._rr = itertools.count()
        self.variable_store = _RemoteStore(self)
        self.recovery = Recovery(strategy)
        self.ps_handles = None
        self.worker_handles = None
        self._lock = threading.RLock()
        self._shipped = -1
        self._graph_ref = None
        self.sync_ops = set()

    # --- placement ---
    def _pick_task(self, nbytes):
        if self._strategy._placement == "size":
            k = int(np.argmin(self._bytes))
        else:
            k = next(self._rr) % self.num_ps
        self._bytes[k] += nbytes
        return k

    def variable_device(self, graph, name, shape, dtype):
        """Where a variable created in this strategy's graph goes when nothing else
        says (optimizer slots follow their variable; others round-robin)."""
        nbytes = _nbytes(shape, dtype)
        return ps_device(self._pick_task(nbytes))

    def task_of_key(self, key):
        """The parameter-server task holding variable `key` (its handle's shared
        name), or None."""
        g = self.graph()
        v = None if g is None else g._variables.get(key)
        if v is None:
            return None
        return ps_plan.ps_task_of_device(v.handle.op.device)

    @property
    def parameter_devices(self):
        return tuple(ps_device(k) for k in range(self.num_ps))

    @property
    def worker_devices(self):
        return tuple(f"/job:worker/replica:0/task:{i}/device:CPU:0"
                     for i in range(self._strategy._num_workers))

    # --- the ExecutionPolicy hooks ---
    def lays_out_steps(self):
        return True  # steps run where plan_step puts them, not where the placer would

    def remote_variable_store(self):
        return self.variable_store

    def plan_step(self, session, ops, feeds, fetch_tensors, targets):
        spec = ps_plan.build_spec(ops, feeds, fetch_tensors, targets)
        if spec is None:
            return None
        self._strategy._ensure_started()
        return _ClusterPlan(self, spec, session)

    def step_spec(self, ops, feeds, fetch_tensors, targets):
        return ps_plan.build_spec(ops, feeds, fetch_tensors, targets,
                                  sorted(self.sync_ops))

    def schedule_step(self, graph, fetches, feeds, results):
        """For Keras `fit`: a callable of the feed values that schedules the step on a
        worker (through the strategy's `ClusterCoordinator`, created if needed) and
        returns outputs read lazily: reading one waits for every scheduled step
        (`join`) and then reads `results` (the metrics, held on the parameter servers),
        as TensorFlow's `fit` under this strategy reports them."""

        strategy = self._strategy
        coord = strategy._coordinator or ClusterCoordinator(strategy)
        traced = {}

        def call(*vals):
            tr = traced.get("t")
            if tr is None:
                tr = traced["t"] = coord._build_traced(graph, list(fetches), list(feeds))
            coord._schedule_traced(tr, [np.asarray(v) for v in vals])
            return _LazyOutputs(coord, graph, fetches, results)

        return call

    def aggregate_gradient(self, grad, var):
        """Synchronous mode: marks the gradient the parameter server applies as the
        mean over the aggregated replicas (see `ps_plan`)."""
        if not self._strategy._sync:
            return grad

        if isinstance(grad, IndexedSlices):
            grad = indexed_slices_to_dense(grad)  # replicas' rows differ: average dense
        g = var.graph
        with g.colocate_with(var.handle.op):
            out = array_ops.identity(grad, name="sync_aggregate")
        self.sync_ops.add(out.op.name)
        return out

    # --- graph shipping ---
    def graph(self):
        return None if self._graph_ref is None else self._graph_ref()

    def ship_graph(self):
        """Sends the current graph to every task if it grew since the last time;
        returns its version (the number of ops)."""
        g = self.graph()
        if g is None:
            return -1
        self._strategy._ensure_started()
        import ray

        version = g.version  # counts every op ever added
        if version == self._shipped:
            return version
        with self._lock:
            if version == self._shipped:
                return version

            try:
                data = graph_to_graph_def(g).SerializeToString()
            except Exception as e:  # noqa: BLE001 - say why the graph cannot travel
                raise errors.UnimplementedError(
                    "ParameterServerStrategy sends the graph to its tasks as a GraphDef, "
                    f"and this graph cannot be serialized: {e}") from None
            ref = ray.put(data)
            wait = max(self.rpc_timeout, 120)
            wrefs = [h.load_graph.remote(version, ref) for h in self.worker_handles]
            # A restarted parameter server takes no newer graph before it is restored
            # (its variables would silently be uninitialized): it answers NEED_RESTORE.
            fresh = self._shipped == -1
            got = _rget(ray, [h.load_graph.remote(version, ref, fresh)
                              for h in self.ps_handles], wait,
                        "parameter servers (loading the graph)")
            for k, r in enumerate(got):
                if isinstance(r, str) and r == NEED_RESTORE:
                    raise errors.UnavailableError(
                        f"parameter server /job:ps/task:{k} restarted and lost its state; "
                        "it must be restored before training continues")
            for r in wrefs:  # a lost worker gets the graph when it comes back
                try:
                    ray.get(r, timeout=wait)
                except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError,
                        ray.exceptions.GetTimeoutError):
                    pass
            self._graph_bytes = ref
            self._shipped = version
            return version

    def reship_to(self, handle):
        """Sends the last shipped graph to one (restarted) task."""
        import ray

        if self._shipped < 0:
            return
        _rget(ray, handle.load_graph.remote(self._shipped, self._graph_bytes, True),
              max(self.rpc_timeout, 120), "a restarted task (loading the graph)")


class _LazyOutputs:
    """A fit step's outputs under the strategy: ``[None, *metric values]``, read (after
    `join`) on first access."""

    def __init__(self, coord, graph, fetches, results):
        self._coord = coord
        self._graph = graph
        self._n = len(fetches)
        self._results = list(results)
        self._vals = None

    def _load(self):
        if self._vals is None:

            self._coord.join()
            vals = get_session(self._graph).run(self._results)
            self._vals = [None] + list(vals)
        return self._vals

    def __len__(self):
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [_LazyValue(self, j) for j in range(self._n)[i]]
        return _LazyValue(self, i)

    def __iter__(self):
        return (self[i] for i in range(self._n))


class _LazyValue:
    def __init__(self, outs, i):
        self._outs = outs
        self._i = i

    def value(self):
        return self._outs._load()[self._i]

    def __array__(self, dtype=None, copy=None):
        a = np.asarray(self.value())
        return a if dtype is None else a.astype(dtype)

    def __float__(self):
        return float(np.asarray(self.value()))

    def __repr__(self):
        return repr(self.value())


def _nbytes(shape, dtype):

    try:
        dims = as_shape(shape).as_list()
        n = int(np.prod([d or 1 for d in dims])) if dims else 1
        return n * _dtypes.as_dtype(dtype).size
    except Exception:  # noqa: BLE001 - unknown shapes weigh one element
        return 1


class ParameterServerStrategy(dl.Strategy):
    """Parameter servers and workers as Ray actors (TensorFlow's
    `tf.distribute.experimental.ParameterServerStrategy`, with TF1's synchronous
    replicas and backup workers as an option).

    Args:
      cluster_resolver: optional `ClusterResolver`/`ClusterSpec` whose ``ps`` and
        ``worker`` jobs give the number of tasks (their addresses are not used: Ray
        places the tasks).
      variable_partitioner: optional partitioner (`FixedShardsPartitioner`,
        `MinSizePartitioner`, `MaxSizePartitioner`, or any ``f(shape, dtype) ->
        [shards, 1, ...]``): variables it splits become `ShardedVariable`s, one shard
        per parameter server in turn.
      num_ps, num_workers: task counts when no resolver is given (default 1 and 2).
      address: None starts a local Ray instance for this strategy (loopback only,
        token authentication, no dashboard, files in a temporary directory);
        ``"auto"`` or a Ray address joins an existing cluster (also taken from the
        ``RAY_ADDRESS`` environment variable).
      replicas_to_aggregate: None for asynchronous training (each worker's update is
        applied when it arrives); m for synchronous training where each step applies
        the mean of the first m of the workers' gradients computed against that step's
        values, later ones being dropped (`stats`). With m < num_workers the others are
        backup workers (Chen et al. 2016; the paper's section 4.4).
      ps_resources, worker_resources: Ray resources each task asks for, e.g.
        ``{"num_cpus": 1, "num_gpus": 1}`` (default: none, so tasks share the machine).
      variable_placement: ``"round_robin"`` (TensorFlow's default) or ``"size"``
        (each new variable to the least loaded parameter server, by bytes).
      rpc_timeout: seconds a call to a task may take before `DeadlineExceededError`
        (also the synchronous-mode wait for m gradients).
      checkpoint_dir, checkpoint_every: the chief's periodic checkpoint (before the
        first and then every `checkpoint_every` applied steps scheduled through a
        `ClusterCoordinator`, with no step in flight), from which every parameter
        server is restored when one fails (`mylib.distribute.ps_recovery`); without
        it a failed parameter server raises `UnavailableError`.
    Raises:
      ValueError: zero parameter servers or workers, `replicas_to_aggregate` outside
        1..num_workers, a bad partitioner or placement; RuntimeError: a Ray cluster with
        too few resources for the tasks (before any task starts).

    Differs from TensorFlow: the cluster runs on Ray actors; a plain `Session.run` also
    works (the step runs in this process against the parameter servers); when a
    parameter server fails and `checkpoint_dir` is set, *all* of them are restored to
    one checkpoint and training goes on (TensorFlow 2's coordinator raises
    `UnavailableError` and the job is restarted from a checkpoint). ``stats`` counts ``applied_steps``,
    ``dropped_gradients``, ``worker_restarts``, ``ps_restarts``, ``closures_retried``
    and ``steps_lost`` (applied steps undone by restores).
    """

    def __init__(self, cluster_resolver=None, variable_partitioner=None, *, num_ps=None,
                 num_workers=None, address=None, replicas_to_aggregate=None,
                 ps_resources=None, worker_resources=None, variable_placement="round_robin",
                 rpc_timeout=60.0, checkpoint_dir=None, checkpoint_every=None):
        if not _optional.available("ray"):  # fail here, not at the first step
            raise ImportError(_optional.missing_message("ParameterServerStrategy", "ray", "ps"))
        if cluster_resolver is not None:
            spec = cluster_resolver if isinstance(cluster_resolver, ClusterSpec) else \
                cluster_resolver.cluster_spec()
            num_ps = spec.num_tasks("ps") if num_ps is None else num_ps
            num_workers = spec.num_tasks("worker") if num_workers is None else num_workers
        num_ps = 1 if num_ps is None else num_ps
        num_workers = 2 if num_workers is None else num_workers
        if not isinstance(num_ps, int) or num_ps < 1:
            raise ValueError(f"ParameterServerStrategy needs at least one parameter server; "
                             f"got num_ps={num_ps!r}")
        if not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"ParameterServerStrategy needs at least one worker; got "
                             f"num_workers={num_workers!r}")
        if replicas_to_aggregate is not None and (
                not isinstance(replicas_to_aggregate, int)
                or not 1 <= replicas_to_aggregate <= num_workers):
            raise ValueError(f"replicas_to_aggregate must be an int in 1..num_workers "
                             f"({num_workers}); got {replicas_to_aggregate!r}")
        if variable_partitioner is not None and not callable(variable_partitioner):
            raise ValueError("variable_partitioner must be a callable (shape, dtype) -> "
                             f"list of partitions; got {variable_partitioner!r}")
        if variable_placement not in ("round_robin", "size"):
            raise ValueError("variable_placement must be 'round_robin' or 'size'; got "
                             f"{variable_placement!r}")
        if rpc_timeout is None or rpc_timeout <= 0:
            raise ValueError(f"rpc_timeout must be a positive number of seconds; got "
                             f"{rpc_timeout!r}")
        self._num_ps = num_ps
        self._num_workers = num_workers
        self._address = address
        self._sync = replicas_to_aggregate is not None
        self.replicas_to_aggregate = replicas_to_aggregate
        self._ps_resources = dict(ps_resources or {})
        self._worker_resources = dict(worker_resources or {})
        self._placement = variable_placement
        self._rpc_timeout = float(rpc_timeout)
        self.variable_partitioner = variable_partitioner
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint_every = checkpoint_every
        super().__init__(ParameterServerExtended(self))
        self._device_names = list(self._extended.worker_devices)
        self._ray_local = None
        self._started = False
        self._closed = False
        self._start_lock = threading.Lock()
        self._coordinator = None
        self._worker_delay = {}
        self.stats = {"applied_steps": 0, "dropped_gradients": 0, "worker_restarts": 0,
                      "ps_restarts": 0, "closures_retried": 0, "steps_lost": 0}

    # --- properties ---
    @property
    def num_replicas_in_sync(self):
        return self.replicas_to_aggregate or 1

    @property
    def num_ps(self):
        return self._num_ps

    @property
    def num_workers(self):
        return self._num_workers

    @property
    def cluster_resolver(self):
        """A `SimpleClusterResolver` whose `ClusterSpec` lists the running tasks
        (``chief``: this process; ``ps`` and ``worker``: the Ray actors' nodes)."""

        return SimpleClusterResolver(self.cluster_spec(), task_type="chief", task_id=0)

    def cluster_spec(self):
        addrs = self._task_addresses()
        return ClusterSpec(addrs)

    def _task_addresses(self):
        import socket

        here = "127.0.0.1" if self._ray_local is not None else socket.gethostname()
        out = {"chief": [f"{here}:0"]}
        if not self._started:
            out["ps"] = [f"{here}:0"] * self._num_ps
            out["worker"] = [f"{here}:0"] * self._num_workers
            return out
        import ray

        info = _rget(ray, [h.where.remote() for h in self._ps + self._workers],
                     self._rpc_timeout, "cluster tasks")
        out["ps"] = [f"{ip}:{pid}" for ip, pid in info[:self._num_ps]]
        out["worker"] = [f"{ip}:{pid}" for ip, pid in info[self._num_ps:]]
        return out

    # --- variables ---
    def _create_variable(self, next_creator, **kwargs):
        g = get_default_graph()
        try:
            set_policy(g, self._extended)
        except ValueError:
            raise ValueError(
                f"Variable '{kwargs.get('name')}' is created under {self!r}, but its graph "
                "already holds variables of another strategy; use one strategy per graph.") \
                from None
        if self._extended._graph_ref is None:
            self._extended._graph_ref = weakref.ref(g)
        part = self.variable_partitioner
        if part is not None:
            shards = self._num_shards(kwargs)
            if shards > 1:
                return self._create_sharded(next_creator, shards, kwargs)
        v = next_creator(**kwargs)
        v._distribute_strategy = self
        return v

    def _num_shards(self, kwargs):

        shape = kwargs.get("shape")
        iv = kwargs.get("initial_value")
        if shape is None:
            if callable(iv) and not hasattr(iv, "shape"):
                return 1  # the shape is known only once built: not partitioned
            shape = getattr(iv, "shape", None)
            if shape is None:
                shape = np.shape(iv)
        shape = as_shape(shape)
        if shape.rank in (None, 0):
            return 1
        try:
            parts = list(self.variable_partitioner(shape, kwargs.get("dtype") or
                                                   getattr(iv, "dtype", "float32")))
        except ValueError as e:
            raise ValueError(f"variable_partitioner cannot shard variable "
                             f"'{kwargs.get('name')}' of shape {shape}: {e}") from None
        if len(parts) != shape.rank or any(int(p) != 1 for p in parts[1:]) or int(parts[0]) < 1:
            raise ValueError(
                f"variable_partitioner returned {parts} for variable '{kwargs.get('name')}' "
                f"of shape {shape}: only the first axis can be split, into 1..{shape[0]} "
                "shards (e.g. [2, 1])")
        return min(int(parts[0]), shape.as_list()[0])

    def _create_sharded(self, next_creator, n, kwargs):
        from mylib.core.ops import indexing_ops

        g = get_default_graph()
        name = kwargs.get("name") or "Variable"
        iv = kwargs["initial_value"]
        with g.name_scope(name) as scope:
            base = scope[:-1]
        full = iv() if callable(iv) and not hasattr(iv, "shape") else iv
        with g.name_scope(base + "/"):
            full = convert_to_tensor(full, dtype_hint=kwargs.get("dtype"))
        rows = shard_sizes(full.shape.as_list()[0], n)
        parts = []
        off = 0
        for i, r in enumerate(rows):
            kw = dict(kwargs)
            kw.pop("shape", None)
            kw["name"] = f"{base}/part_{i}"
            kw["initial_value"] = (lambda o=off, r=r:
                                   indexing_ops.strided_slice(full, [o], [o + r], [1]))
            with g.name_scope(""), g.device(ps_device(self._extended._pick_task(0))):
                v = next_creator(**kw)
            v._distribute_strategy = self
            parts.append(v)
            off += r
        return ShardedVariable(parts, base)

    # --- the cluster ---
    def _ensure_started(self):
        if self._started:
            return
        with self._start_lock:
            if self._started:
                return
            if self._closed:
                raise RuntimeError("This ParameterServerStrategy is closed.")
            self._start()
            self._started = True

    def _start(self):

        need_cpu = self._num_ps * self._ps_resources.get("num_cpus", 0) + \
            self._num_workers * self._worker_resources.get("num_cpus", 0)
        need_gpu = self._num_ps * self._ps_resources.get("num_gpus", 0) + \
            self._num_workers * self._worker_resources.get("num_gpus", 0)
        address = self._address or _env_address()
        if address is None:
            import os

            cpus = os.cpu_count() or 1  # tasks asking for more fail below
            if need_gpu:
                raise RuntimeError("the local Ray instance has no GPUs to give; start a Ray "
                                   "cluster with GPUs and pass address='auto'")
            self._ray_local = ps_runtime.LocalRay(num_cpus=cpus)
            ray = ps_runtime.import_ray()
        else:
            ray = ps_runtime.import_ray()
            if not ray.is_initialized():
                ray.init(address=address, configure_logging=False)
        res = ray.cluster_resources()
        if need_cpu > res.get("CPU", 0) or need_gpu > res.get("GPU", 0):
            self._stop_ray()
            raise RuntimeError(
                f"The Ray cluster has {res.get('CPU', 0)} CPUs and {res.get('GPU', 0)} GPUs; "
                f"the tasks ask for {need_cpu} CPUs and {need_gpu} GPUs "
                f"({self._num_ps} ps x {self._ps_resources}, {self._num_workers} workers x "
                f"{self._worker_resources}).")
        ps_cls = ray.remote(max_restarts=-1, max_task_retries=0)(
            _PSActor)
        w_cls = ray.remote(max_restarts=-1, max_task_retries=0)(
            _WorkerActor)
        self._ps = [ps_cls.options(name=None, **_opts(self._ps_resources)).remote("ps", k)
                    for k in range(self._num_ps)]
        self._workers = [w_cls.options(**_opts(self._worker_resources)).remote(
            i, self._rpc_timeout) for i in range(self._num_workers)]
        got = _rget(ray, [h.ping.remote() for h in self._ps + self._workers] +
                    [w.set_ps.remote(self._ps) for w in self._workers],
                    max(self._rpc_timeout, 300), "cluster tasks (starting)")
        self._extended.recovery.note_started(got[:self._num_ps])
        self._extended.ps_handles = self._ps
        self._extended.worker_handles = self._workers
        if self._ray_local is not None:
            self._ray_local.record_processes()  # the tasks' processes, and private modes

    def _stop_ray(self):
        if self._ray_local is not None:
            self._ray_local.stop()
            self._ray_local = None

    def close(self):
        """Stops the coordinator and every task, and shuts down the local Ray
        instance (removing its files). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._coordinator is not None:
            self._coordinator._shutdown()
        g = self._extended.graph()
        if g is not None:
            clear_policy(g, self._extended)  # the graph no longer runs on this cluster
        if self._started:
            try:
                import ray

                for h in self._ps + self._workers:
                    try:
                        ray.kill(h, no_restart=True)
                    except Exception:  # noqa: BLE001
                        pass
            finally:
                self._stop_ray()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    def __repr__(self):
        mode = f"sync {self.replicas_to_aggregate}/{self._num_workers}" if self._sync \
            else "async"
        return (f"<ParameterServerStrategy {self._num_ps} ps, {self._num_workers} workers, "
                f"{mode}>")

    def simulate_slow_worker(self, index, seconds):
        """Makes worker `index` sleep `seconds` in each step (a straggler, for
        experiments such as benchmarks/ps_backup_workers.py); 0 undoes it."""
        if not 0 <= index < self._num_workers:
            raise ValueError(f"no worker {index}: the cluster has {self._num_workers}")
        self._worker_delay[index] = float(seconds)

    # --- strategy API ---
    def run(self, fn, args=(), kwargs=None):
        """Calls `fn` (graph building) once; its ops run wherever the step is run."""
        return fn(*args, **(kwargs or {}))


def _opts(res):
    out = {}
    if "num_cpus" in res:
        out["num_cpus"] = res["num_cpus"]
    else:
        out["num_cpus"] = 0
    if "num_gpus" in res:
        out["num_gpus"] = res["num_gpus"]
    extra = {k: v for k, v in res.items() if k not in ("num_cpus", "num_gpus")}
    if extra:
        out["resources"] = extra
    return out


def _env_address():
    import os

    return os.environ.get("RAY_ADDRESS") or None


# The actor classes (wrapped by ray.remote at start, so importing this module does not
# need Ray).
from mylib.distribute.ps_runtime import TaskServer, WorkerServer  # noqa: E402
from mylib.distribute.coordinator import ClusterCoordinator  # noqa: E402 - imports this module
from mylib.distribute.cluster_resolver import SimpleClusterResolver  # noqa: E402
from mylib.distribute import ps_runtime  # noqa: E402
from mylib.distribute.ps_recovery import Recovery, short  # noqa: E402
from mylib.distribute.ps_runtime import NEED_RESTORE  # noqa: E402


class _PSActor(TaskServer):
    def where(self):
        import os

        import ray

        return (ray.util.get_node_ip_address(), os.getpid())


class _WorkerActor(WorkerServer):
    def where(self):
        import os

        import ray

        return (ray.util.get_node_ip_address(), os.getpid())
