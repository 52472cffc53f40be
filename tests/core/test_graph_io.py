"""Graph files: GraphDef round trips, import_graph_def (order, input_map,
return_elements, errors), write_graph, meta graphs with variables, a fresh process
running an exported graph, and the TensorBoard GraphDef read back by TensorBoard."""

from mylib.summary.graph import to_tensorboard_graph_def
import json
import math
import os
import random
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import mylib as ml
from mylib import errors
from mylib.core import graph_io
from mylib.core.graph_io import GraphDef, MetaGraphDef, NodeDef

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def g():
    graph = ml.Graph()
    with graph.as_default():
        yield graph


def _build_mlp(seed=3):
    """A small MLP training graph: placeholders, matmul, broadcast add, seeded random
    init, a reduction without a registered gradient (-> generic VJP op with tuple
    attrs), gradients (SumToShape, BroadcastReduced) and assign ops."""
    ml.set_random_seed(seed)
    x = ml.placeholder(ml.float32, [None, 4], name="x")
    y = ml.placeholder(ml.float32, [None, 2], name="y")
    with ml.name_scope("dense"):
        w = ml.Variable(ml.random_normal([4, 3], stddev=0.5), name="kernel")
        b = ml.Variable(np.zeros([3], np.float32), name="bias")
    v = ml.Variable(np.full([3, 2], 0.1, np.float32), name="out")
    h = ml.tanh(ml.matmul(x, w) + b)
    out = ml.matmul(h, v)
    # Prod has no registered gradient: its gradient is the generic VJP op.
    scale = ml.reduce_prod(1.0 + 0.01 * out, axis=(1,), keepdims=True)
    loss = ml.reduce_mean(ml.square(out * scale - y), name="loss")
    params = [w, b, v]
    grads = ml.gradients(loss, params)
    updates = [p.assign_sub(0.1 * gr, read_value=False) for p, gr in zip(params, grads)]
    train = ml.group(*updates, name="train")
    ml.add_to_collection("train_op", train)
    ml.add_to_collection("loss", loss)
    return x, y, loss, train, params


def _data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((5, 4)).astype(np.float32),
            rng.standard_normal((5, 2)).astype(np.float32))


def _train(sess, x, y, loss, train, params, steps=3):
    xs, ys = _data()
    losses = []
    for _ in range(steps):
        losses.append(sess.run(loss, {x: xs, y: ys}))
        sess.run(train, {x: xs, y: ys})
    return losses, sess.run([p.value() for p in params])


def _same(a, b):
    """Equality that also checks types: tuples stay tuples, nan equals nan."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and (
            a.tobytes() == b.tobytes() if a.dtype != object else a.tolist() == b.tolist())
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(p, q) for p, q in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, ml.TensorShape):
        return a.as_tuple() == b.as_tuple()
    return a == b


_ATTRS = {
    "none": None, "t": True, "f": False, "i": -7, "big": 2 ** 70, "neg_big": -(2 ** 64),
    "x": 1.5, "one": 1.0, "inf": float("inf"), "ninf": float("-inf"), "nan": float("nan"),
    "c": 1 + 2j, "s": "héllo/wörld", "by": b"\x00\xffraw", "list": [1, "a", None, [2.5]],
    "tup": (1, (2, 3), ()), "pairs": (("axis", (0, 1)), ("keepdims", True), ("s", None)),
    "dict": {"a": (1,), "b": [np.float32(2)]}, "dt": ml.float32, "dt2": ml.bfloat16,
    "shape": ml.TensorShape([None, 3]), "shape_unknown": ml.TensorShape(None),
    "arr": np.arange(12, dtype=np.float32).reshape(3, 4),
    "arr_i64": np.array([-(2 ** 62), 5], np.int64), "arr0": np.array(3.25),
    "arr_empty": np.zeros((0, 3), np.int32), "arr_bool": np.array([True, False]),
    "arr_bf16": np.array([1.5, -2.0], ml_dtypes.bfloat16),
    "arr_be": np.array([1.0, 2.0], ">f8"),
    "arr_c": np.array([1 + 1j], np.complex64),
    "arr_str": np.array([b"ab", b"\x00c"], dtype=object),
    "arr_nan": np.array([np.nan, np.inf, -0.0], np.float64),
    "scalar": np.int16(-3), "scalar_f": np.float64(0.1),
}


@pytest.mark.parametrize("as_text", [True, False])
def test_every_attr_kind_round_trips(as_text):
    gd = GraphDef([NodeDef("n", "NoOp", ["a", "b:1", "^c"], "/device:CPU:0", _ATTRS,
                           ("model.py", 3, "build"))])
    data = gd.to_json() if as_text else gd.SerializeToString()
    assert isinstance(data, str if as_text else bytes)
    back = GraphDef.FromString(data).node[0]
    assert (back.name, back.op, back.input, back.device) == \
        ("n", "NoOp", ["a", "b:1", "^c"], "/device:CPU:0")
    assert back.debug_info == ("model.py", 3, "build")
    assert back.attr.keys() == _ATTRS.keys()
    for k, v in _ATTRS.items():
        want = v.astype("<f8") if k == "arr_be" else v
        assert _same(back.attr[k], want), (k, back.attr[k], v)
    if as_text:  # strict JSON: no NaN/Infinity literals, readable names
        tree = json.loads(data)
        assert tree["format"] == "mylib.GraphDef" and tree["node"][0]["attr"]["s"] == "héllo/wörld"


def test_graph_attrs_survive_import_with_hashable_tuples(g):
    x = ml.placeholder(ml.float32, [2, 3], name="x")
    p = ml.reduce_prod(x * 2.0, axis=(0, 1), keepdims=True)
    (gx,) = ml.gradients(p, [x])
    gd = g.as_graph_def()
    vjp = [n for n in gd.node if n.op == "VJP"]
    assert vjp and isinstance(vjp[0].attr["forward_attrs"], tuple)
    back = GraphDef.FromString(gd.SerializeToString())
    h = ml.Graph()
    with h.as_default():
        ml.import_graph_def(back, name="")
    for op in g.get_operations():
        op2 = h.get_operation_by_name(op.name)
        assert op2.type == op.type and [t.name for t in op2.inputs] == [t.name for t in op.inputs]
        assert _same(op2.attrs, op.attrs), op.name
        hash(tuple(sorted((k, v) for k, v in op2.attrs.items() if k != "value")))
        assert [t.shape.as_tuple() for t in op2.outputs] == [t.shape.as_tuple() for t in op.outputs]
    xs = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    with ml.Session(graph=g) as s1, ml.Session(graph=h) as s2:
        np.testing.assert_array_equal(s1.run(gx, {x: xs}),
                                      s2.run(gx.name, {"x:0": xs}))


def test_unencodable_attr_names_op_and_attr(g):
    c = ml.constant(1.0, name="c")
    c.op.attrs["callback"] = lambda: 0
    with pytest.raises(errors.InvalidArgumentError, match=r"Const 'c': attr 'callback'.*function"):
        g.as_graph_def()
    gd = GraphDef([NodeDef("n", "NoOp", attr={"obj": object()})])
    with pytest.raises(errors.InvalidArgumentError, match=r"'n': attr 'obj'"):
        gd.to_json()


def test_import_shuffled_nodes_is_topological(g):
    x, y, loss, train, params = _build_mlp()
    gd = g.as_graph_def()
    random.Random(0).shuffle(gd.node)
    h = ml.Graph()
    with h.as_default():
        ml.import_graph_def(gd, name="")
        init = ml.group(*[h.get_operation_by_name(p.op.name + "/Assign") for p in params])
    assert len(h.get_operations()) == len(g.get_operations()) + 1
    with ml.Session(graph=g) as s1:
        s1.run([p.initializer for p in params])
        want = _train(s1, x, y, loss, train, params)
    with ml.Session(graph=h) as s2:
        s2.run(init)
        xs, ys = _data()
        got_losses = []
        for _ in range(3):
            got_losses.append(s2.run("loss:0", {"x:0": xs, "y:0": ys}))
            s2.run("train", {"x:0": xs, "y:0": ys})
        got = s2.run([p.op.name + "/Read/ReadVariableOp:0" for p in params])
    np.testing.assert_array_equal(got_losses, want[0])
    for a, b in zip(got, want[1]):
        np.testing.assert_array_equal(a, b)


def test_input_map_and_return_elements(g):
    x = ml.placeholder(ml.float32, [None, 2], name="x")
    v = ml.Variable(np.ones([2], np.float32), name="v")
    y = ml.reduce_sum(x * v, axis=1, name="y")
    inc = v.assign_add(np.ones([2], np.float32), read_value=False, name="inc")
    gd = g.as_graph_def()
    h = ml.Graph()
    with h.as_default():
        real = ml.constant([[1.0, 2.0], [3.0, 4.0]], name="real")
        y2, x2, inc2 = ml.import_graph_def(gd, input_map={"x:0": real},
                                           return_elements=["y:0", "x", "inc"])
        assert isinstance(y2, ml.Tensor) and y2.name == "import/y:0"
        assert isinstance(x2, ml.Operation) and x2.name == "import/x"
        assert isinstance(inc2, ml.Operation) and inc2.type == "AssignAddVariableOp"
        assert y2.op.inputs[0].op.inputs[0] is real
        # a second import gets its own scope and its own variable
        (y3,) = ml.import_graph_def(gd, input_map={"x": real}, return_elements=["y:0"])
        assert y3.name == "import_1/y:0"
        with ml.Session() as sess:
            sess.run("import/v/Assign")
            sess.run("import_1/v/Assign")
            sess.run(inc2)
            np.testing.assert_array_equal(sess.run(y2), [6.0, 14.0])
            np.testing.assert_array_equal(sess.run(y3), [3.0, 7.0])
        bad = ml.constant([[1, 2]], name="ints")
        wrong_shape = ml.constant([1.0, 2.0, 3.0])
        n_ops = len(h.get_operations())
        with pytest.raises(errors.InvalidArgumentError, match=r"dtype int32.*float32"):
            ml.import_graph_def(gd, input_map={"x:0": bad})
        with pytest.raises(errors.InvalidArgumentError, match=r"shape"):
            ml.import_graph_def(gd, input_map={"x:0": wrong_shape})
        with pytest.raises(ValueError, match="not found in graph_def"):
            ml.import_graph_def(gd, input_map={"nope:0": real})
        with pytest.raises(ValueError, match="return_element 'nope:0'"):
            ml.import_graph_def(gd, return_elements=["nope:0"])
        assert len(h.get_operations()) == n_ops  # failed imports add nothing


def test_unknown_op_type_and_bad_inputs_add_nothing(g):
    ml.constant(1.0, name="a")
    n0 = len(g.get_operations())
    gd = GraphDef([NodeDef("a", "Const", attr={"value": np.float32(1), "dtype": "float32"}),
                   NodeDef("bar", "Foo", ["a"])])
    with pytest.raises(errors.NotFoundError, match=r"Op type not registered 'Foo' in node 'bar'"):
        ml.import_graph_def(gd)
    gd = GraphDef([NodeDef("b", "Identity", ["missing:0"])])
    with pytest.raises(errors.InvalidArgumentError, match=r"'b'.*'missing:0'.*no node named"):
        ml.import_graph_def(gd)
    gd = GraphDef([NodeDef("a", "Const", attr={"value": np.ones((2, 3)), "dtype": "float64"}),
                   NodeDef("b", "Const", attr={"value": np.ones((4, 5)), "dtype": "float64"}),
                   NodeDef("mm", "MatMul", ["a", "b"])])
    with pytest.raises(errors.InvalidArgumentError, match=r"MatMul 'mm'"):
        ml.import_graph_def(gd)  # found by the dry run: nothing added
    gd = GraphDef([NodeDef("p", "Identity", ["q"]), NodeDef("q", "Identity", ["p"])])
    with pytest.raises(errors.InvalidArgumentError, match=r"cycle.*\['p', 'q'\]"):
        ml.import_graph_def(gd)
    assert len(g.get_operations()) == n0


def test_control_inputs_devices_and_colocation_survive(g, tmp_path):
    with ml.device("/job:localhost/replica:0/task:0/device:CPU:0"):
        a = ml.constant(2.0, name="a")
    v = ml.Variable(1.0, name="v")
    with ml.control_dependencies([v.initializer]):
        b = ml.identity(a * 3.0, name="b")
    path = ml.train.write_graph(g, str(tmp_path), "graph.json")
    assert path == os.path.join(str(tmp_path), "graph.json")
    h = ml.Graph()
    with h.as_default():
        ml.import_graph_def(graph_io.load_graph_def(path), name="imp")
    b2 = h.get_operation_by_name("imp/b")
    assert [c.name for c in b2.control_inputs] == ["imp/v/Assign"]
    assert h.get_operation_by_name("imp/a").device == a.op.device != ""
    assert h.get_operation_by_name("imp/v/Assign").attrs["_class"] == ["loc:@imp/v"]
    assert h.get_operation_by_name("imp/v").attrs["shared_name"] == "imp/v"
    with ml.Session(graph=h) as sess:
        assert sess.run("imp/b:0") == 6.0
        assert sess.run("imp/v/Read/ReadVariableOp:0") == 1.0  # initialized by the control edge


def test_write_graph_text_and_binary(g, tmp_path):
    _build_mlp()
    t = ml.train.write_graph(g, str(tmp_path / "logs"), "graph.json")
    b = ml.train.write_graph(g.as_graph_def(), str(tmp_path / "logs"), "graph.pb", as_text=False)
    assert sorted(os.listdir(tmp_path / "logs")) == ["graph.json", "graph.pb"]  # no temp files
    assert open(t, "rb").read(1) == b"{" and open(b, "rb").read(8) == b"MLGRAPH\x01"
    assert os.path.getsize(b) < os.path.getsize(t)
    gt, gb = graph_io.load_graph_def(t), graph_io.load_graph_def(b)
    assert [n.name for n in gt.node] == [n.name for n in gb.node] == \
        [op.name for op in g.get_operations()]
    for n1, n2 in zip(gt.node, gb.node):
        assert n1.input == n2.input and _same(n1.attr, n2.attr)


def test_malformed_files_raise_with_path(g, tmp_path):
    _build_mlp()
    good = g.as_graph_def().SerializeToString()
    cases = {
        "truncated.pb": good[: len(good) // 2],
        "garbage.pb": b"\x89PNG\r\n\x1a\n not a graph",
        "empty.pb": b"",
        "bad.json": b'{"format": "mylib.GraphDef", "node": [',
        "foreign.json": b'{"format": "something.else", "node": []}',
        "badnode.json": b'{"format": "mylib.GraphDef", "node": [{"name": 3}]}',
        "badarray.json": json.dumps({"format": "mylib.GraphDef", "node": [{
            "name": "c", "op": "Const", "attr": {"value": {"ndarray": {
                "dtype": "float32", "shape": [4], "b64": "AAAA"}}}}]}).encode(),
        "badtag.json": b'{"format": "mylib.GraphDef", "node": [{"name": "c", "op": "Const",'
                       b' "attr": {"x": {"pickle": "cos\\nsystem"}}}]}',
        "newer.json": b'{"format": "mylib.GraphDef", "versions": {"min_consumer": 99}}',
    }
    for fname, data in cases.items():
        p = tmp_path / fname
        p.write_bytes(data)
        with pytest.raises(errors.DataLossError, match=str(p).replace("\\", "\\\\")):
            graph_io.load_graph_def(str(p))
        with pytest.raises(errors.DataLossError):
            ml.train.import_meta_graph(str(p))
    with pytest.raises(errors.NotFoundError, match="no such graph file"):
        graph_io.load_graph_def(str(tmp_path / "missing.pb"))


def _meta_roundtrip_child(meta_path, out_path):
    return textwrap.dedent(f"""
        import sys, numpy as np
        sys.path.insert(0, {_ROOT!r})
        import mylib as ml, mylib.train
        saver = ml.train.import_meta_graph({meta_path!r})
        g = ml.get_default_graph()
        train = ml.get_collection("train_op")[0]
        loss = ml.get_collection("loss")[0]
        params = ml.trainable_variables()
        rng = np.random.default_rng(0)
        xs = rng.standard_normal((5, 4)).astype(np.float32)
        ys = rng.standard_normal((5, 2)).astype(np.float32)
        feed = {{g.get_tensor_by_name("x:0"): xs, g.get_tensor_by_name("y:0"): ys}}
        with ml.Session() as sess:
            sess.run(ml.global_variables_initializer())
            losses = []
            for _ in range(3):
                losses.append(sess.run(loss, feed))
                sess.run(train, feed)
            vals = sess.run([p.value() for p in params])
        np.savez({out_path!r}, losses=np.array(losses), names=np.array([p.name for p in params]),
                 saver=np.array(type(saver).__name__), *vals)
    """)


@pytest.mark.parametrize("ext", [".json", ".meta"])
def test_exported_graph_runs_the_same_in_a_fresh_process(g, tmp_path, ext):
    x, y, loss, train, params = _build_mlp()
    with ml.Session() as sess:
        sess.run(ml.global_variables_initializer())
        losses, vals = _train(sess, x, y, loss, train, params)
    meta_path = str(tmp_path / ("model" + ext))
    ml.train.export_meta_graph(meta_path)
    out = str(tmp_path / "child.npz")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", _meta_roundtrip_child(meta_path, out)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    got = np.load(out)
    assert list(got["names"]) == [p.name for p in params]
    np.testing.assert_array_equal(got["losses"], losses)
    for i, v in enumerate(vals):
        np.testing.assert_array_equal(got[f"arr_{i}"], v)
    assert str(got["saver"]) == "Saver"


def test_meta_graph_collections_and_variables(g, tmp_path):
    x, y, loss, train, params = _build_mlp()
    frozen = ml.Variable(2.0, trainable=False, name="frozen")
    ml.add_to_collection("extras", x)
    ml.add_to_collection("extras", train)
    ml.add_to_collection("extras", {"lr": 0.1, "sizes": (4, 3)})
    with ml.Session() as sess:
        sess.run(ml.global_variables_initializer())
        want = sess.run([p.value() for p in params + [frozen]])
    meta = ml.train.export_meta_graph(str(tmp_path / "m.meta"))
    assert isinstance(meta, MetaGraphDef)
    assert "Placeholder" in meta.meta_info_def["stripped_op_list"]
    back = MetaGraphDef.FromString(open(tmp_path / "m.meta", "rb").read())
    assert back.collection_def.keys() == meta.collection_def.keys()
    h = ml.Graph()
    with h.as_default():
        saver = ml.train.import_meta_graph(str(tmp_path / "m.meta"), import_scope="m")
        tv, gv = ml.trainable_variables(), ml.global_variables()
        assert [v.name for v in tv] == ["m/" + p.name for p in params]
        assert [v.name for v in gv] == ["m/" + p.name for p in params + [frozen]]
        assert all(isinstance(v, ml.Variable) for v in gv) and tv[0] is gv[0]
        assert not gv[-1].trainable and gv[-1].shape == frozen.shape
        assert gv[0].dtype == ml.float32 and gv[0].shape.as_list() == [4, 3]
        extras = ml.get_collection("extras")
        assert extras[0].name == "m/x:0" and extras[1].name == "m/train"
        assert extras[2] == {"lr": 0.1, "sizes": (4, 3)}
        assert type(saver).__name__ == "Saver"
        with ml.Session() as sess:
            sess.run(ml.global_variables_initializer())
            got = sess.run([v.value() for v in gv])
            sess.run(gv[-1].assign(5.0))
            assert sess.run(gv[-1].read_value()) == 5.0
            assert sess.run(ml.is_variable_initialized(gv[0]))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_tensorboard_graph_def_read_back(g, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboardX import SummaryWriter
    from tensorboardX.proto import event_pb2, types_pb2

    _build_mlp()
    with ml.device("/device:CPU:0"):
        ml.identity(ml.constant(np.arange(40, dtype=np.float32)), name="big")
    tb = to_tensorboard_graph_def(g)
    w = SummaryWriter(str(tmp_path))
    w._get_file_writer().add_event(event_pb2.Event(graph_def=tb.SerializeToString()))
    w.close()
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    read = acc.Graph()
    nodes = {n.name: n for n in read.node}
    assert list(nodes) == [op.name for op in g.get_operations()]
    for op in g.get_operations():
        n = nodes[op.name]
        assert n.op == op.type and n.device == op.device
        assert list(n.input) == [t.name[:-2] if t.value_index == 0 else t.name
                                 for t in op.inputs] + ["^" + c.name for c in op.control_inputs]
    assert nodes["x"].attr["dtype"].type == types_pb2.DT_FLOAT
    assert [d.size for d in nodes["x"].attr["shape"].shape.dim] == [-1, 4]
    assert [d.size for d in nodes["x"].attr["_output_shapes"].list.shape[0].dim] == [-1, 4]
    assert nodes["dense/kernel"].attr["dtype"].type == types_pb2.DT_FLOAT
    assert nodes["big"].device == "/device:CPU:0"
    big_const = nodes["big"].input[0]
    t = nodes[big_const].attr["value"].tensor
    assert t.dtype == types_pb2.DT_FLOAT and [d.size for d in t.tensor_shape.dim] == [40]
    small = next(n for n in read.node if n.op == "Const" and n.attr["value"].tensor.float_val)
    assert len(small.attr["value"].tensor.float_val) >= 1
    vjp = next(n for n in read.node if n.op == "VJP")
    assert b"keepdims" in vjp.attr["forward_attrs"].s
