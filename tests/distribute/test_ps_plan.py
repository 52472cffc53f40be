"""How a step is cut between the parameter servers and the task running it (no Ray:
the plan only)."""

import numpy as np
import pytest

import mylib as ml
from mylib.core.lowering import prune
from mylib.distribute import ps_plan


def _spec(fetches, targets, feeds, sync=()):
    ops = prune(fetches, targets, feeds)
    return ps_plan.build_spec(ops, feeds, fetches, targets, sync)


def _where(spec, name):
    for p, ph in enumerate(spec["phases"]):
        for s in ph:
            if name in s["ops"]:
                return p, s["task"], s["gated"]
    raise KeyError(name)


def test_train_step_is_pull_compute_push_and_only_rows_cross():
    s = ml.distribute.ParameterServerStrategy(num_ps=2, num_workers=1)
    g = ml.Graph()
    with g.as_default(), s.scope():
        emb = ml.Variable(np.zeros((1000, 8), np.float32), name="emb")   # ps 0
        w = ml.Variable(np.zeros((8, 1), np.float32), name="w")          # ps 1
        ids = ml.placeholder("int64", [None], name="ids")
        y = ml.reduce_sum(ml.nn.embedding_lookup(emb, ids) @ w)
        train = ml.optimizers.SGD(0.1).minimize(y)
    spec = _spec([y], [train], [ids])
    gather = [op for op in g.get_operations() if op.type == "ResourceGather"][0]
    assert _where(spec, gather.name)[:2] == (0, 0)          # gathered on ps 0, phase 0
    pruned = prune([y], [train], [ids])
    read_w = [op for op in pruned if op.type == "ReadVariableOp"
              and op.inputs[0].op is w.handle.op][0]
    assert _where(spec, read_w.name)[:2] == (0, 1)           # pulled from ps 1
    assert _where(spec, y.op.name)[:2] == (1, ps_plan.LOCAL)  # computed by the worker
    # The table's update is a scatter of the gathered rows' gradients (plain SGD).
    (scatter,) = [op for op in g.get_operations() if op.type == "ResourceScatterAdd"]
    (apply_w,) = [op for op in g.get_operations() if op.type == "ResourceApplyOptax"]
    assert _where(spec, scatter.name)[:2] == (2, 0)
    assert _where(spec, apply_w.name)[:2] == (2, 1)
    # Nothing reads the whole table: the worker's inputs from ps 0 are gathered rows.
    worker = [sg for sg in spec["phases"][1] if sg["task"] == ps_plan.LOCAL][0]
    for name in worker["inputs"]:
        t = g.get_tensor_by_name(name)
        if t.op.type != "Placeholder":
            assert t.shape.as_list() != [1000, 8], name
    assert not any(op.type == "ReadVariableOp" and op.inputs[0].op is emb.handle.op
                   for op in prune([y], [], [ids]))
    s.close()


def test_custom_update_rule_placed_on_parameter_server():
    s = ml.distribute.ParameterServerStrategy(num_ps=2, num_workers=1)
    g = ml.Graph()
    with g.as_default(), s.scope():
        a = ml.Variable(np.zeros((3,), np.float32), name="a")
        w = ml.Variable(np.ones((3,), np.float32), name="w")   # on ps 1
    with g.as_default():
        x = ml.placeholder("float32", [3])
        loss = ml.reduce_sum(w * x)
        (grad,) = ml.gradients(loss, [w])
        with ml.device("/job:ps/task:1"):  # the user's own update, on w's server
            clipped = ml.clip_by_norm(grad, 1.0)
            train = w.assign_sub(0.5 * clipped, read_value=False)
    spec = _spec([], [train], [x])
    assert _where(spec, clipped.op.name)[1] == 1
    assert _where(spec, train.name)[1] == 1
    assert _where(spec, loss.op.name)[1] == ps_plan.LOCAL
    del a
    s.close()


def test_sync_mode_gates_the_apply_and_what_follows():
    s = ml.distribute.ParameterServerStrategy(num_ps=2, num_workers=2, replicas_to_aggregate=2)
    g = ml.Graph()
    with g.as_default(), s.scope():
        w = ml.Variable(np.ones((3,), np.float32), name="w")
        c = ml.Variable(np.int64(0), name="c")
        x = ml.placeholder("float32", [3])
        loss = ml.reduce_sum(w * x)
        opt = ml.optimizers.SGD(0.1)
        train = opt.minimize(loss)
        bump = c.assign_add(1)  # not downstream of the update: per push
    ops = prune([loss], [train, bump.op], [x])
    spec = ps_plan.build_spec(ops, [x], [loss], [train, bump.op], sorted(s.extended.sync_ops))
    applies = [op for op in g.get_operations() if op.type == "ResourceApplyOptax"]
    assert all(_where(spec, op.name)[2] for op in applies)
    assert not _where(spec, bump.op.name)[2]
    assert not _where(spec, loss.op.name)[2]
    assert spec["aggregate"]  # the gradients fed to the apply are averaged
    s.close()


def test_variable_placement_round_robin_and_by_size():
    for placement, want in (("round_robin", [0, 1, 0]), ("size", [0, 1, 1])):
        s = ml.distribute.ParameterServerStrategy(num_ps=2, variable_placement=placement)
        g = ml.Graph()
        with g.as_default(), s.scope():
            vs = [ml.Variable(np.zeros(n, np.float32), name=f"v{i}")
                  for i, n in enumerate((1000, 10, 10))]
        assert [ps_plan.ps_task_of_device(v.device) for v in vs] == want, placement
        s.close()


def test_step_calls_pack_small_arguments_into_one_blob_and_leave_large_ones_to_ray():
    from mylib.distribute import ps_runtime

    small = (3, "0123abcd", [np.arange(4, dtype=np.float32), ("__iter__", 1)], "all",
             None, 0.0)
    blob = ps_runtime.pack(small)
    assert type(blob) is bytes
    back = ps_runtime.unpack(blob)
    assert back[:2] == small[:2] and back[3:] == small[3:]
    np.testing.assert_array_equal(back[2][0], small[2][0])
    assert back[2][1] == ("__iter__", 1)
    # Results too: a list of arrays, and the string answers (NEED_GRAPH ...).
    assert ps_runtime.unpack(ps_runtime.pack(ps_runtime.NEED_SPEC)) == ps_runtime.NEED_SPEC
    big = [np.zeros(ps_runtime.PACK_LIMIT // 4 + 1, np.float32)]
    assert ps_runtime.pack(big) is big  # Ray moves it through its object store
    assert ps_runtime.unpack(big) is big
    nested = (1, [[np.zeros(ps_runtime.PACK_LIMIT, np.uint8)]])
    assert ps_runtime.pack(nested) is nested
    unpicklable = [lambda: 0]
    assert ps_runtime.pack(unpicklable) is unpicklable  # Ray's cloudpickle handles it
    objects = [np.array(["a", None], dtype=object)]
    assert ps_runtime.pack(objects) is objects  # object arrays: not packed
    import ml_dtypes

    bf = [np.ones(3, ml_dtypes.bfloat16), np.float32(2.5), {"task": 0, "ops": ["a"]}]
    back = ps_runtime.unpack(ps_runtime.pack(bf))
    assert back[0].dtype == ml_dtypes.bfloat16 and back[1] == np.float32(2.5)
    assert back[2] == {"task": 0, "ops": ["a"]}


def test_a_crafted_message_is_refused_without_running_code(tmp_path):
    import os
    import pickle

    from mylib.distribute import ps_runtime

    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    blob = pickle.dumps([np.zeros(2), Evil()])
    with pytest.raises(pickle.UnpicklingError, match="parameter-server message"):
        ps_runtime.unpack(blob)
    assert not marker.exists()


def test_keep_freed_memory_sets_the_c_allocator_of_a_task_process_only():
    import subprocess
    import sys

    code = ("from mylib.distribute.ps_runtime import keep_freed_memory\n"
            "print(keep_freed_memory())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    import platform

    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert out.stdout.strip() == "True"
