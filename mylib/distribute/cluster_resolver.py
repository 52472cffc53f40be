"""Cluster descriptions in TensorFlow's form: `ClusterSpec`, `TFConfigClusterResolver`
(the ``TF_CONFIG`` environment variable), `SimpleClusterResolver`.

``TF_CONFIG`` is JSON::

    {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"]},
     "task": {"type": "worker", "index": 0}}
"""

from __future__ import annotations

import json
import os

from mylib import errors

_ORDER = ("chief", "worker")


class ClusterSpec:
    """Jobs and their tasks' ``host:port`` addresses.

    Args:
      cluster: ``{"job": ["host:port", ...]}`` (or ``{"job": {index: "host:port"}}``),
        or another `ClusterSpec`.
    Raises:
      InvalidArgumentError: a malformed description (the message shows it).
    """

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        if not isinstance(cluster, dict):
            raise errors.InvalidArgumentError(
                f"ClusterSpec needs a dict of job name -> list of 'host:port', got {cluster!r}")
        self._jobs = {}
        for job, tasks in cluster.items():
            if isinstance(tasks, dict):
                tasks = [tasks[i] for i in sorted(tasks)]
            if not isinstance(tasks, (list, tuple)) or not all(
                    isinstance(a, str) and ":" in a for a in tasks):
                raise errors.InvalidArgumentError(
                    f"ClusterSpec: job {job!r} must list 'host:port' addresses, got {tasks!r}")
            self._jobs[str(job)] = list(tasks)

    @property
    def jobs(self):
        return list(self._jobs)

    def num_tasks(self, job_name):
        return len(self._jobs.get(job_name, []))

    def task_address(self, job_name, task_index):
        try:
            return self._jobs[job_name][task_index]
        except (KeyError, IndexError):
            raise errors.InvalidArgumentError(
                f"No task {job_name}:{task_index} in cluster {self._jobs}") from None

    def job_tasks(self, job_name):
        return list(self._jobs.get(job_name, []))

    def as_dict(self):
        return {k: list(v) for k, v in self._jobs.items()}

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and other.as_dict() == self.as_dict()

    def __repr__(self):
        return f"ClusterSpec({self._jobs})"


class ClusterResolver:
    """Base: a `cluster_spec()`, this process's `task_type` and `task_id`."""

    def cluster_spec(self):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `cluster_spec` (abstract in the base class)")

    @property
    def task_type(self):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `task_type` (abstract in the base class)")

    @property
    def task_id(self):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `task_id` (abstract in the base class)")

    def workers(self):
        """The ``(task_type, task_id, address)`` of every chief/worker, chief first:
        the order of processes in a multi-worker job."""
        spec = self.cluster_spec()
        out = []
        for job in _ORDER:
            for i, a in enumerate(spec.job_tasks(job)):
                out.append((job, i, a))
        return out

    def process_index(self):
        for i, (job, idx, _) in enumerate(self.workers()):
            if job == self.task_type and idx == self.task_id:
                return i
        raise errors.InvalidArgumentError(
            f"Task {self.task_type}:{self.task_id} is not a chief or worker of "
            f"{self.cluster_spec()}")

    def is_chief(self):
        """The chief (or worker 0 when the cluster has no chief) writes checkpoints
        and logs."""
        spec = self.cluster_spec()
        if spec.num_tasks("chief"):
            return self.task_type == "chief"
        return self.task_type == "worker" and self.task_id == 0


class SimpleClusterResolver(ClusterResolver):
    def __init__(self, cluster_spec, task_type=None, task_id=None):
        self._spec = ClusterSpec(cluster_spec)
        self._type, self._id = task_type, task_id

    def cluster_spec(self):
        return self._spec

    @property
    def task_type(self):
        return self._type

    @property
    def task_id(self):
        return self._id


class TFConfigClusterResolver(SimpleClusterResolver):
    """Reads the cluster and this task from ``TF_CONFIG`` (or `tf_config`, a dict).

    Raises:
      InvalidArgumentError: ``TF_CONFIG`` is not valid JSON or lacks cluster/task.
    """

    def __init__(self, tf_config=None):
        if tf_config is None:
            raw = os.environ.get("TF_CONFIG", "")
            if not raw:
                tf_config = {}
            else:
                try:
                    tf_config = json.loads(raw)
                except json.JSONDecodeError as e:
                    raise errors.InvalidArgumentError(f"TF_CONFIG is not valid JSON: {e}") from None
        self._config = tf_config
        task = tf_config.get("task", {})
        super().__init__(tf_config.get("cluster", {}), task.get("type"),
                         int(task["index"]) if "index" in task else None)
