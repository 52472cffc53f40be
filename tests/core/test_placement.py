"""Placement and partitioning across 4 forced CPU devices (tests/conftest.py)."""

import jax
import numpy as np
import pytest

import mylib as ml
from mylib.devices import DeviceSpec


def _mlp(devices):
    """A 2-layer model whose layers sit on `devices` (None = unconstrained)."""
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, 4], name="x")
        with ml.device(devices[0]):
            w1 = ml.Variable(np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8), name="w1")
            h = ml.tanh(ml.matmul(x, w1))
        with ml.device(devices[1]):
            w2 = ml.Variable(np.linspace(1, -1, 16, dtype=np.float32).reshape(8, 2), name="w2")
            y = ml.matmul(h, w2)
        loss = ml.reduce_mean(ml.square(y - 1.0))
        g1, g2 = ml.gradients(loss, [w1, w2])
        train = ml.group(w1.assign_sub(0.1 * g1), w2.assign_sub(0.1 * g2))
    return g, x, (w1, w2), loss, (g1, g2), train


def _train(devices, steps=4):
    g, x, ws, loss, grads, train = _mlp(devices)
    xv = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    with ml.Session(graph=g) as s:
        s.run(ml.global_variables_initializer())
        first = s.run([loss, *grads], {x: xv})
        for _ in range(steps):
            s.run(train, {x: xv})
        out = s.run([loss, *ws], {x: xv})
        stored = {k: v.devices() for k, v in s._store.items()}
    return first, out, stored


def test_two_device_results_equal_single_device_exactly():
    assert len(jax.devices()) >= 4
    first1, out1, _ = _train([None, None])
    first2, out2, stored = _train(["/cpu:1", "/device:CPU:2"])
    for a, b in zip(first1, first2):
        np.testing.assert_array_equal(a, b)  # forward values and gradients: bit-identical
    for a, b in zip(out1, out2):
        # After training steps XLA may fuse `w - lr * g` differently per partition
        # (e.g. into a fused multiply-add): equal to float32 rounding.
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    devs = jax.devices()
    assert stored == {"w1": {devs[1]}, "w2": {devs[2]}}  # buffers stay on their device


def test_colocation_of_variable_reads_and_updates():
    g, x, (w1, w2), loss, grads, train = _mlp(["/cpu:3", "/cpu:1"])
    with ml.Session(graph=g) as s:
        s.run(ml.global_variables_initializer())
        s.run(train, {x: np.ones((2, 4), np.float32)})
    for op in g.get_operations():
        if op.inputs and op.inputs[0] is w1.handle:  # reads and assigns of w1
            assert op.device.endswith("CPU:3"), (op.name, op.device)
        if op.inputs and op.inputs[0] is w2.handle:
            assert op.device.endswith("CPU:1"), (op.name, op.device)


def test_partitions_insert_one_transfer_per_tensor_and_destination():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [3])
        with ml.device("/cpu:1"):
            a = ml.exp(x)
        with ml.device("/cpu:2"):
            b = a * 2.0
            c = a + 1.0  # second consumer of `a` on the same device
        with ml.device("/cpu:3"):
            d = a - 1.0
        with ml.Session(graph=g) as s:
            vals = s.run([b, c, d], {x: np.zeros(3, np.float32)})
            plan = s._plans[((b, c, d), (x,), ((3,),))]
    np.testing.assert_allclose(vals[0], 2.0)
    np.testing.assert_allclose(vals[1], 2.0)
    np.testing.assert_allclose(vals[2], 0.0)
    transfers = plan.segmented.describe()["transfers"]
    pairs = sorted((t["tensor"], t["recv_device"]) for t in transfers)
    assert pairs == [("Exp:0", "cpu:2"), ("Exp:0", "cpu:3")]


def test_unknown_device_is_an_error_listing_available_devices():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [2])
        with ml.device("/device:GPU:7"):
            y = x * 2.0
        with ml.Session(graph=g) as s:
            with pytest.raises(ml.errors.InvalidArgumentError) as ei:
                s.run(y, {x: np.ones(2, np.float32)})
    msg = str(ei.value)
    assert "GPU:7" in msg and "device:CPU:0" in msg and "allow_soft_placement" in msg


def test_soft_placement_falls_back():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [2])
        with ml.device("/device:GPU:0"):
            y = x * 2.0
        cfg = ml.ConfigProto(allow_soft_placement=True)
        with ml.Session(graph=g, config=cfg) as s:
            np.testing.assert_allclose(s.run(y, {x: np.ones(2, np.float32)}), 2.0)


def test_conflicting_colocation_is_an_error():
    g = ml.Graph()
    with g.as_default():
        with ml.device("/cpu:1"):
            v = ml.Variable(np.zeros(2, np.float32), name="v")
        with ml.device("/cpu:2"):
            with g.colocate_with(v.op):
                pass
        init = v.initializer
        init.device = "/cpu:2"  # contradicts the handle's /cpu:1
        with ml.Session(graph=g) as s:
            with pytest.raises(ml.errors.InvalidArgumentError, match="colocat"):
                s.run(init)


def test_log_device_placement(capsys):
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [2], name="x")
        with ml.device("/cpu:2"):
            y = ml.exp(x, name="expo")
        with ml.Session(graph=g, config=ml.ConfigProto(log_device_placement=True)) as s:
            s.run(y, {x: np.zeros(2, np.float32)})
    assert "expo: (Exp): /job:localhost/replica:0/task:0/device:CPU:2" in capsys.readouterr().err


def test_device_function_and_nested_merge():
    g = ml.Graph()
    with g.as_default():
        counter = iter(range(100))

        def round_robin(op):  # replica_device_setter-style: variables round-robin
            return f"/cpu:{next(counter) % 2 + 1}" if op.type == "VarHandleOp" else ""

        with ml.device(round_robin):
            v1 = ml.Variable(1.0, name="v1")
            v2 = ml.Variable(2.0, name="v2")
        assert v1.op.device.endswith("CPU:1") and v2.op.device.endswith("CPU:2")
        with ml.device("/job:localhost/task:0"):
            with ml.device("/device:CPU:3"):
                c = ml.constant(1.0)
        assert DeviceSpec.from_string(c.op.device).to_string() == \
            "/job:localhost/task:0/device:CPU:3"


@pytest.mark.parametrize("text,expected", [
    ("/job:worker/replica:0/task:1/device:GPU:0", "/job:worker/replica:0/task:1/device:GPU:0"),
    ("/cpu:0", "/device:CPU:0"), ("/GPU:1", "/device:GPU:1"), ("CPU:0", "/device:CPU:0"),
    ("/job:ps/task:2", "/job:ps/task:2"), ("", ""),
])
def test_device_spec_parsing(text, expected):
    assert DeviceSpec.from_string(text).to_string() == expected


@pytest.mark.parametrize("bad", ["/job:", "/replica:abc", "gpu0", "/task:x"])
def test_device_spec_malformed(bad):
    with pytest.raises(ml.errors.InvalidArgumentError, match="expected"):
        DeviceSpec.from_string(bad)


def test_merged_spec_and_list_devices():
    a = DeviceSpec.from_string("/job:worker/task:1")
    b = a.make_merged_spec("/device:CPU:2")
    assert b.to_string() == "/job:worker/task:1/device:CPU:2"
    devs = ml.devices.list_devices()
    assert [d.index for d in devs] == [0, 1, 2, 3] and devs[0].device_type == "CPU"
    assert ml.devices.get_device("/cpu:2") is jax.devices()[2]
    with pytest.raises(ml.errors.InvalidArgumentError, match="available"):
        ml.devices.get_device("/gpu:0")


def test_partition_graphs_have_send_recv_pairs():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [3], name="x")
        with ml.device("/cpu:1"):
            a = ml.exp(x, name="a")
        with ml.device("/cpu:2"):
            b = ml.multiply(a, 2.0, name="b")
            c = ml.add(a, 1.0, name="c")
        with ml.Session(graph=g) as s:
            md = ml.RunMetadata()
            s.run([b, c], {x: np.zeros(3, np.float32)},
                  options=ml.RunOptions(trace_level=ml.RunOptions.FULL_TRACE), run_metadata=md)
    parts = md.partition_graphs
    assert len(parts) == 2
    by_dev = {p.node[0].device if p.node else "": p for p in parts}
    send_part = next(p for p in parts if any(n.op == "_Send" for n in p.node))
    recv_part = next(p for p in parts if any(n.op == "_Recv" for n in p.node))
    sends = [n for n in send_part.node if n.op == "_Send"]
    recvs = [n for n in recv_part.node if n.op == "_Recv"]
    assert len(sends) == 1 and len(recvs) == 1  # one transfer for two consumers of `a`
    assert sends[0].attr["tensor_name"] == "a:0" == recvs[0].attr["tensor_name"]
    assert sends[0].attr["send_device"].endswith("1") and recvs[0].attr["recv_device"].endswith("2")
    consumers = [n for n in recv_part.node if n.name in ("b", "c")]
    assert all(recvs[0].name in n.input for n in consumers)
    assert by_dev
