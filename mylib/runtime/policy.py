"""`ExecutionPolicy`: the declared interface through which a distribution strategy
changes how a graph executes.

A strategy registers one policy for a graph (`set_policy`) when the first of its
variables is created there. The runtime (Session, the variable store, the Keras session)
and the layers above ask `get_policy(graph)` and call only the named methods below; no
strategy sets attributes on a graph or reaches into a Session. A graph with no policy
runs on one device (the placer decides), with local variables.

What a policy may change:
- variable creation and placement: `variable_device`;
- the compiled step's layout: `lays_out_steps`, `shard_step_args`, `constrain_variable`,
  `step_seed_base`;
- where a step runs: `plan_step` (cut across tasks), `schedule_step` (Keras `fit` on
  remote workers), `aggregate_gradient` (synchronous replicas);
- how values are read and written: `remote_variable_store`;
- which process writes logs and checkpoints: `is_chief`.
"""

from __future__ import annotations

import weakref

from mylib.core import variables as _variables

__all__ = ["ExecutionPolicy", "get_policy", "set_policy", "clear_policy"]


class ExecutionPolicy:
    """The default behaviour of each hook; strategies override what they change."""

    # --- variable creation and placement ---
    def variable_device(self, graph, name, shape, dtype):  # noqa: ARG002
        """The device (a string) of a new variable of `graph` when no device scope or
        colocation says, or None to leave it to the placer."""
        return None

    # --- the compiled step's layout ---
    def lays_out_steps(self):
        """Whether this policy owns where a step's arguments live (then the placer is
        not consulted, and `shard_step_args` / `constrain_variable` are applied)."""
        return True

    def shard_step_args(self, args, feed_slice):  # noqa: ARG002
        """Puts a compiled step's arguments (a list: written variables, read
        variables, feeds at `feed_slice`) where the layout wants them; returns it."""
        return args

    def constrain_variable(self, value):
        """The layout of a variable's new value inside the compiled step (traced)."""
        return value

    def step_seed_base(self):
        """A base seed for unseeded random ops that every process must share, or None
        for the session's own."""
        return None

    # --- where a step runs ---
    def plan_step(self, session, ops, feeds, fetch_tensors, targets):  # noqa: ARG002
        """A plan running the pruned step `ops` somewhere else (an object with
        ``run(session, feed_values, deadline, trace)`` and ``partition_graphs()``),
        or None to run it in this process."""
        return None

    def schedule_step(self, graph, fetches, feeds, results):  # noqa: ARG002
        """For Keras `fit`: a callable of the feed values that runs the training step
        elsewhere and returns its outputs (read lazily), or None to run it here."""
        return None

    def aggregate_gradient(self, grad, var):  # noqa: ARG002
        """The gradient of `var` that its update applies (synchronous replicas may
        mark it for aggregation); by default `grad` itself."""
        return grad

    # --- how values are read and written ---
    def remote_variable_store(self):
        """A store (with `owns`, `get`, `read`, `write`) for variables that live
        outside this process, or None."""
        return None

    # --- logs and checkpoints ---
    def is_chief(self):
        """Whether this process writes summaries and checkpoints."""
        return True


_policies: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def get_policy(graph):
    """The `ExecutionPolicy` registered for `graph`, or None."""
    return _policies.get(graph) if graph is not None else None


def set_policy(graph, policy):
    """Registers `policy` for `graph` (idempotent for the same policy).

    Raises:
      ValueError: if `graph` already has another policy (one strategy per graph).
    """
    if not isinstance(policy, ExecutionPolicy):
        raise TypeError(f"set_policy needs an ExecutionPolicy. Received: {type(policy).__name__}")
    current = _policies.get(graph)
    if current is policy:
        return
    if current is not None:
        raise ValueError("this graph already runs under another execution policy (another "
                         "distribution strategy); use one strategy per graph/model.")
    _policies[graph] = policy
    _variables.set_variable_device_function(graph, policy.variable_device)


def clear_policy(graph, policy=None):
    """Detaches `graph` from its policy (only from `policy` when given)."""
    current = _policies.get(graph)
    if current is None or (policy is not None and current is not policy):
        return
    del _policies[graph]
    _variables.set_variable_device_function(graph, None)
