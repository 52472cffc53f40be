"""Imported graph files gain no host side effects unless the caller opts in, and
exported graph files carry portable source paths."""

import json
import os

import numpy as np
import pytest

import mylib as ml
from mylib import errors
from mylib.core.op_registry import get_op_def


def _write_crafted(path, build):
    """An attacker's graph file: `build()` adds ops to a fresh graph, which is written
    to `path` as the binary graph format."""
    g = ml.Graph()
    with g.as_default():
        build()
    path.write_bytes(g.as_graph_def().SerializeToString())
    return path


def _train_graph():
    v = ml.Variable(np.float32(1.0), name="v")
    train = v.assign_add(np.float32(1.0), read_value=False)
    return v, train


def test_print_to_a_file_is_refused_unless_allowed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")

    def build():
        v = ml.Variable(np.float32(1.0), name="v")
        p = ml.print("pwned", output_stream=f"file://{victim}", name="leak")
        with ml.control_dependencies([p]):
            v.assign_add(np.float32(1.0), read_value=False, name="train")

    path = _write_crafted(tmp_path / "graph.pb", build)
    g = ml.Graph()
    with g.as_default():
        with pytest.raises(errors.PermissionDeniedError,
                           match=r"node 'leak' \(PrintV2\) appends to the file "
                                 r"'file://.*victim.txt'.*allow_host_effects=True"):
            ml.import_graph_def(ml.load_graph_def(str(path)), name="")
        assert g.get_operations() == []  # nothing was added
    assert victim.read_text() == "precious\n"

    # The check is what stops it: opted in, running the imported train op appends.
    g2 = ml.Graph()
    with g2.as_default():
        init, train = ml.import_graph_def(ml.load_graph_def(str(path)), name="",
                                          return_elements=["v/Assign", "train"],
                                          allow_host_effects=True)
        with ml.Session() as sess:
            sess.run(init)
            sess.run(train)
    assert victim.read_text() == "precious\npwned\n"


def test_console_and_log_streams_need_no_opt_in(tmp_path, capfd):
    def build():
        ml.print("to stdout", output_stream="stdout", name="p1")
        ml.print("to a logger", output_stream="log://mylib.test", name="p2")
        ml.print("to stderr", name="p3")

    path = _write_crafted(tmp_path / "graph.pb", build)
    g = ml.Graph()
    with g.as_default():
        ops = ml.import_graph_def(ml.load_graph_def(str(path)), name="",
                                  return_elements=["p1", "p3"])
        with ml.Session() as sess:
            sess.run(ops)
    out = capfd.readouterr()
    assert "to stdout" in out.out and "to stderr" in out.err


def test_py_func_token_of_the_importing_program_is_refused(tmp_path):
    calls = []

    def side_effect(x):
        calls.append(x)
        return x

    # The importing program's own numpy_function (registered under a token).
    with ml.Graph().as_default():
        mine = ml.numpy_function(side_effect, [np.float32(2.0)], ml.float32)
        token = mine.op.attrs["token"]

    def build():
        # The crafted file names the same token.
        from mylib.core.ops.host_ops import PyFunc

        PyFunc(ml.constant(np.float32(7.0)), token=token, Tout=("float32",), single=True,
               stateful=True, name="call_victim")

    path = _write_crafted(tmp_path / "graph.json", build)
    g = ml.Graph()
    with g.as_default():
        with pytest.raises(errors.PermissionDeniedError,
                           match=rf"'call_victim' \(PyFunc\) calls the Python function "
                                 rf"registered in this process under token '{token}'"):
            ml.import_graph_def(ml.load_graph_def(str(path)))
    assert calls == []
    g2 = ml.Graph()
    with g2.as_default():
        (out,) = ml.import_graph_def(ml.load_graph_def(str(path)), name="",
                                     return_elements=["call_victim:0"],
                                     allow_host_effects=True)
        with ml.Session() as sess:
            assert float(sess.run(out)) == 7.0
    assert [float(c) for c in calls] == [7.0]  # what the check prevents by default


def test_meta_graph_import_refuses_host_effects(tmp_path):
    victim = tmp_path / "victim.txt"
    g = ml.Graph()
    with g.as_default():
        v, train = _train_graph()
        ml.print(v.value(), output_stream=str(victim), name="leak")  # a bare path
        meta = str(tmp_path / "model.meta")
        ml.train.export_meta_graph(meta)
    with ml.Graph().as_default() as g2:
        with pytest.raises(errors.PermissionDeniedError, match="'leak' .*victim.txt"):
            ml.train.import_meta_graph(meta)
        assert g2.get_operations() == []
    with ml.Graph().as_default():
        saver = ml.train.import_meta_graph(meta, allow_host_effects=True)
        assert saver is not None
    assert not victim.exists()


def test_every_callable_or_path_attr_is_a_host_effect():
    # The attrs that name a path or a Python object of this process.
    assert get_op_def("PyFunc").host_effect({"token": "pyfunc_0"})
    assert get_op_def("PrintV2").host_effect({"output_stream": "/etc/x"})
    assert get_op_def("PrintV2").host_effect({"output_stream": "file:///tmp/x"})
    assert get_op_def("PrintV2").host_effect({"output_stream": 3})
    assert get_op_def("PrintV2").host_effect({"output_stream": "stderr"}) is None
    assert get_op_def("PrintV2").host_effect({"output_stream": "log://a.b"}) is None
    opt = get_op_def("ResourceApplyOptax")
    assert opt.host_effect({"schedule": "schedule_3"})
    assert opt.host_effect({"schedule": None}) is None
    import mylib.layers.interop  # noqa: F401 - registers FlaxCall

    assert get_op_def("FlaxCall").host_effect({"module_id": "flax_module_0"})
    assert get_op_def("MatMul").host_effect is None


def test_exported_graphs_carry_relative_source_paths(tmp_path, monkeypatch):
    here = os.path.abspath(__file__)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    monkeypatch.chdir(repo)
    g = ml.Graph()
    with g.as_default():
        x = ml.constant(np.float32(1.0), name="x")
        ml.identity(x, name="y")
    created = g.get_operation_by_name("y")._frame
    assert created[0] == here  # recorded absolute in memory (errors quote it)

    meta = ml.train.export_meta_graph(str(tmp_path / "m.json"), graph=g)
    tree = json.loads((tmp_path / "m.json").read_text())
    files = {n["name"]: n["debug_info"][0] for n in tree["graph_def"]["node"]
             if n.get("debug_info")}
    assert files["y"] == os.path.join("tests", "core", "test_untrusted_graphs.py")
    assert not any(os.path.isabs(f) for f in files.values())
    assert {n.name: n.debug_info[0] for n in meta.graph_def.node}["y"] == files["y"]

    # Outside the working directory: the base name only.
    monkeypatch.chdir(tmp_path)
    ml.train.write_graph(g, str(tmp_path), "g.json")
    tree = json.loads((tmp_path / "g.json").read_text())
    assert {n["name"]: n["debug_info"][0] for n in tree["node"]}["y"] == \
        "test_untrusted_graphs.py"

    absolute = ml.train.export_meta_graph(graph=g, debug_paths="absolute")
    assert {n.name: n.debug_info[0] for n in absolute.graph_def.node}["y"] == here
    none = ml.train.export_meta_graph(graph=g, debug_paths="none")
    assert all(n.debug_info is None for n in none.graph_def.node)
    with pytest.raises(ValueError, match="debug_paths must be one of"):
        ml.train.export_meta_graph(graph=g, debug_paths="hidden")


@pytest.mark.parametrize("depth", [300, 700, 5000])
def test_deeply_nested_graph_file_is_a_clear_error(tmp_path, depth):
    tree = json.dumps({"format": "mylib.GraphDef", "version": 1, "versions": {},
                       "library": {}, "node": [{"name": "c", "op": "NoOp", "input": [],
                                                "device": "", "attr": {"x": "X"}}]})
    path = tmp_path / "deep.json"
    path.write_text(tree.replace('"X"', "[" * depth + "1" + "]" * depth))
    with pytest.raises(errors.DataLossError, match="deep.json: .*(nest more than 256 "
                                                   "levels|RecursionError)"):
        ml.load_graph_def(str(path))
