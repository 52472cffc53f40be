"""Graph files carrying control flow: the function graphs of cond / while_loop / scan /
map_fn / case (nested ones too) travel in the GraphDef's `library`, are rebuilt on
import (first, under fresh names when taken) and run the same in a fresh process, with
gradients; stateful branches keep their effects; bad library entries are rejected."""

import collections
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mylib as ml
from mylib import errors
from mylib.core import graph_io
from mylib.core.graph_io import FunctionDef, GraphDef

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def g():
    graph = ml.Graph()
    with graph.as_default():
        yield graph


def _build():
    """One graph with: a cond on a fed predicate, a bounded while_loop reading a
    variable (and its gradient), a scan (and its gradient), a cond nested in a
    while_loop, a map_fn, a case, and a stateful cond assigning a variable."""
    p = ml.placeholder(ml.bool_, [], name="p")
    q = ml.placeholder(ml.bool_, [], name="q")
    x = ml.placeholder(ml.float32, [3], name="x")
    v = ml.Variable(np.array([0.5, -1.0, 2.0], np.float32), name="v")
    s = ml.Variable(np.float32(0.25), name="s")
    counter = ml.Variable(np.float32(10.0), name="counter")

    c = ml.cond(p, lambda: ml.sin(x) * v.read_value(), lambda: x * x - 1.0)

    def body(i, a):
        return i + 1, a * 0.9 + ml.tanh(v.read_value() * s.read_value())

    _, w = ml.while_loop(lambda i, a: i < 4, body, [ml.constant(0), x],
                         maximum_iterations=6)

    sc = ml.scan(lambda acc, e: acc * s.read_value() + e * e,
                 ml.reshape(x, [3, 1]) * ml.ones([3, 2]), initializer=ml.zeros([2]))

    def nbody(i, a):
        a = ml.cond(ml.reduce_sum(a) > 0.0, lambda: a - v.read_value() * 0.5,
                    lambda: a * 2.0 + 0.1)
        return i + 1, a

    _, nested = ml.while_loop(lambda i, a: i < 3, nbody, [ml.constant(0), x],
                              maximum_iterations=3)
    m = ml.map_fn(lambda e: {"sq": e * e, "neg": -e}, x)
    k = ml.case([(ml.reduce_sum(x) > 100.0, lambda: x + 1.0), (p, lambda: x * 3.0)],
                default=lambda: x - 3.0)
    bump = ml.cond(q, lambda: counter.assign_add(1.0), lambda: ml.identity(counter.read_value()))

    loss = (ml.reduce_sum(c * c) + ml.reduce_sum(w * w) + ml.reduce_sum(sc)
            + ml.reduce_sum(nested * nested) + ml.reduce_sum(m["sq"]) + ml.reduce_sum(k))
    grads = ml.gradients(loss, [x, v, s])
    values = [c, w, sc, nested, m["sq"], m["neg"], k, loss] + grads
    return {"p": p, "q": q, "x": x, "values": values, "bump": bump,
            "counter": counter.read_value(), "vars": [v, s, counter]}


_FEEDS = [(True, np.array([0.3, -0.7, 1.1], np.float32)),
          (False, np.array([-0.2, 0.4, 0.9], np.float32))]


def _reference(parts):
    """Values for both feeds, then the stateful cond's effects (q true, false, true)."""
    out = {}
    with ml.Session() as sess:
        sess.run(ml.global_variables_initializer())
        for j, (pv, xv) in enumerate(_FEEDS):
            vals = sess.run(parts["values"], {parts["p"]: pv, parts["x"]: xv})
            for i, a in enumerate(vals):
                out[f"v{j}_{i}"] = a
        for j, qv in enumerate([True, False, True]):
            out[f"bump{j}"] = sess.run(parts["bump"], {parts["q"]: qv})
            out[f"counter{j}"] = sess.run(parts["counter"])
    return out


_CHILD = """
import json, sys, numpy as np
sys.path.insert(0, {root!r})
import mylib as ml, mylib.train
from mylib.core import graph_io
spec = json.loads({spec!r})
feeds = [(True, np.array([0.3, -0.7, 1.1], np.float32)),
         (False, np.array([-0.2, 0.4, 0.9], np.float32))]
if spec["how"] == "meta":
    ml.train.import_meta_graph(spec["path"])
    init = ml.global_variables_initializer()
else:
    ml.import_graph_def(graph_io.load_graph_def(spec["path"]), name="")
    g = ml.get_default_graph()
    init = [g.get_operation_by_name(n) for n in spec["init"]]
g = ml.get_default_graph()
assert sorted(g._functions) == sorted(spec["functions"]), (sorted(g._functions), spec)
out = {{}}
with ml.Session() as sess:
    sess.run(init)
    for j, (pv, xv) in enumerate(feeds):
        vals = sess.run(spec["values"], {{"p:0": pv, "x:0": xv}})
        for i, a in enumerate(vals):
            out["v%d_%d" % (j, i)] = a
    for j, qv in enumerate([True, False, True]):
        out["bump%d" % j] = sess.run(spec["bump"], {{"q:0": qv}})
        out["counter%d" % j] = sess.run(spec["counter"])
np.savez(spec["out"], **out)
"""


@pytest.fixture(scope="module")
def built():
    """The graph of `_build`, its reference values and its GraphDef (built once)."""
    graph = ml.Graph()
    with graph.as_default():
        parts = _build()
        want = _reference(parts)
    return graph, parts, want, graph.as_graph_def()


@pytest.mark.parametrize("how,as_text", [("meta", True), ("graph", False)])
def test_control_flow_graph_runs_the_same_in_a_fresh_process(built, tmp_path, how, as_text):
    g, parts, want, gd = built
    kinds = {n.op for f in gd.library.values() for n in f.node}
    assert {"StatelessIf", "If"} <= {n.op for n in gd.node}
    assert "StatelessIf" in kinds  # the cond nested in a loop body
    assert len(gd.library) >= 12
    if how == "meta":
        path = str(tmp_path / ("m.json" if as_text else "m.meta"))
        ml.train.export_meta_graph(path, as_text=as_text, graph=g)
    else:
        path = graph_io.write_graph(g, str(tmp_path), "g.pb", as_text=as_text)
    spec = {"how": how, "path": path, "out": str(tmp_path / "out.npz"),
            "values": [t.name for t in parts["values"]], "bump": parts["bump"].name,
            "counter": parts["counter"].name, "functions": sorted(gd.library),
            "init": [v.initializer.name for v in parts["vars"]]}
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    code = textwrap.dedent(_CHILD.format(root=_ROOT, spec=json.dumps(spec)))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=150, env=env)
    assert r.returncode == 0, r.stderr[-4000:]
    got = np.load(spec["out"])
    assert sorted(got.files) == sorted(want)
    for k, a in want.items():
        np.testing.assert_allclose(got[k], a, rtol=1e-6, atol=1e-6, err_msg=k)
    # The stateful branch ran only when taken: +1, +0, +1.
    assert [float(want[f"counter{j}"]) for j in range(3)] == [11.0, 11.0, 12.0]


def test_import_twice_in_one_process_renames_functions(built):
    from mylib.core.func_graph import function_refs

    g, parts, want, gd = built
    data = gd.to_json()
    h = ml.Graph()
    with h.as_default():
        ml.import_graph_def(GraphDef.FromString(data), name="a")
        ml.import_graph_def(GraphDef.FromString(data), name="b")
        names = set(h._functions)
        assert len(names) == 2 * len(gd.library) and not names & set(gd.library)
        for op in h.get_operations():
            for f in function_refs(op.type, op.attrs):
                assert f in names
        with ml.Session() as sess:
            for scope, idx in (("a", range(len(parts["values"]))), ("b", [3])):
                sess.run([h.get_operation_by_name(f"{scope}/{v.initializer.name}")
                          for v in parts["vars"]])
                pv, xv = _FEEDS[1]
                vals = sess.run([f"{scope}/{parts['values'][i].name}" for i in idx],
                                {f"{scope}/p:0": pv, f"{scope}/x:0": xv})
                for i, a in zip(idx, vals):
                    np.testing.assert_allclose(a, want[f"v1_{i}"], rtol=1e-6, atol=1e-6)
                # Stateful cond under a renamed variable (import scope): effects land
                # on the imported variable, only on the taken branch.
                for j, qv in enumerate([True, False, True]):
                    sess.run(f"{scope}/{parts['bump'].name}", {f"{scope}/q:0": qv})
                    assert sess.run(f"{scope}/{parts['counter'].name}") == \
                        want[f"counter{j}"]


def test_function_refs_in_attrs_are_rewritten(built):
    from mylib.core.func_graph import function_refs

    gd = built[3]
    h = ml.Graph()
    with h.as_default():
        ml.import_graph_def(gd, name="")
        for op in h.get_operations():
            for f in function_refs(op.type, op.attrs):
                assert f in h._functions and f not in gd.library
        # The gradient of the bounded loop (a VJP op) names the loop's functions too.
        vjps = [op for op in h.get_operations() if op.type == "VJP"
                and dict(op.attrs["forward_attrs"]).get("body")]
        assert vjps and all(function_refs("VJP", op.attrs) for op in vjps)


def test_output_structure_round_trips(g, tmp_path):
    Point = collections.namedtuple("Point", ["x", "y"])
    p = ml.placeholder(ml.bool_, [], name="p")
    x = ml.placeholder(ml.float32, [2], name="x")
    out = ml.cond(p, lambda: {"b": Point(x, [x * 2.0, x * 3.0]), "a": (x,)},
                  lambda: {"b": Point(-x, [x, x]), "a": (x + 1.0,)})
    gd = g.as_graph_def()
    fname = out["a"][0].op.attrs["then_branch"]
    st = gd.library[fname].structure
    assert st["dict"][0][0] == "a" and "namedtuple" in st["dict"][1][1]
    back = GraphDef.FromString(gd.SerializeToString())
    assert back.library[fname].structure == st
    h = ml.Graph()
    with h.as_default():
        ml.import_graph_def(back, name="")
        (new_name,) = [op.attrs["then_branch"] for op in h.get_operations()
                       if op.type == "StatelessIf"]
        assert new_name != fname  # taken in this process: a fresh name
        fg = h._functions[new_name]
        so = fg.structured_outputs
        assert type(so["b"]).__name__ == "Point" and so["b"]._fields == ("x", "y")
        assert isinstance(so["b"].y, list) and isinstance(so["a"], tuple)
        assert [t.name for t in jax_leaves(so)] == [t.name for t in fg.outputs]


def jax_leaves(tree):
    import jax

    return jax.tree_util.tree_leaves(tree)


def _cond_graph_def():
    graph = ml.Graph()
    with graph.as_default():
        p = ml.placeholder(ml.bool_, [], name="p")
        x = ml.placeholder(ml.float32, [2], name="x")
        ml.cond(p, lambda: ml.exp(x), lambda: x * 2.0, name="c")
    return graph.as_graph_def()


def test_unknown_op_type_inside_function_is_rejected(g, tmp_path):
    gd = _cond_graph_def()
    fname, fdef = next(iter(gd.library.items()))
    victim = next(n for n in fdef.node if n.op in ("Exp", "Mul"))
    victim.op = "NoSuchOp"
    path = graph_io.write_graph(gd, str(tmp_path), "bad.json")
    loaded = graph_io.load_graph_def(path)
    before = len(g.get_operations())
    with pytest.raises(errors.NotFoundError) as ei:
        ml.import_graph_def(loaded)
    msg = str(ei.value)
    assert "NoSuchOp" in msg and f"'{victim.name}'" in msg and f"'{fname}'" in msg
    assert len(g.get_operations()) == before and not getattr(g, "_functions", {})


def test_malformed_library_entries(g, tmp_path):
    gd = _cond_graph_def()
    tree = json.loads(gd.to_json())
    fname = next(iter(tree["library"]))
    for mutate, pattern in [
            (lambda t: t["library"][fname].__setitem__("capture", "x"), "capture"),
            (lambda t: t["library"][fname].__setitem__("node", [{"op": "Exp"}]), "name"),
            (lambda t: t["library"][fname].__setitem__("output", [3]), "output"),
            (lambda t: t.__setitem__("library", [1]), "library")]:
        t = json.loads(json.dumps(tree))
        mutate(t)
        path = tmp_path / "m.json"
        path.write_text(json.dumps(t))
        with pytest.raises(errors.DataLossError, match=pattern) as ei:
            graph_io.load_graph_def(str(path))
        assert str(path) in str(ei.value)
    # Well-formed data that does not fit together: InvalidArgumentError naming it.
    cases = []
    bad = GraphDef.FromString(gd.to_json())
    bad.library[fname].output = ["nope:0"]
    cases.append((bad, f"function '{fname}'.*nope"))
    bad = GraphDef.FromString(gd.to_json())
    bad.library[fname].capture[0][0] = "ghost"
    cases.append((bad, f"function '{fname}'.*ghost"))
    bad = GraphDef.FromString(gd.to_json())
    del bad.library[fname]
    cases.append((bad, f"'{fname}'.*not in the graph def's library"))
    bad = GraphDef.FromString(gd.to_json())
    bad.library[fname].structure = {"list": [{"out": 7}]}
    cases.append((bad, f"function '{fname}'.*structure"))
    for bad, pattern in cases:
        with pytest.raises(errors.InvalidArgumentError, match=pattern):
            ml.import_graph_def(bad)
        assert not g.get_operations() and not getattr(g, "_functions", {})


def test_self_calling_library_is_rejected(g):
    gd = _cond_graph_def()
    a, b = list(gd.library)
    # Make the first branch call a cond whose branch is itself.
    outer_if = next(n for n in gd.node if n.op == "StatelessIf")
    pred = next(n for n in gd.node if n.name == "p")
    gd.library[a].node.append(graph_io.NodeDef("pp", "Placeholder", attr=pred.attr))
    gd.library[a].node.append(graph_io.NodeDef(
        "loop", "StatelessIf", ["pp"], attr=dict(outer_if.attr, then_branch=a, else_branch=b)))
    with pytest.raises(errors.InvalidArgumentError, match="cycle"):
        ml.import_graph_def(gd)


def test_meta_graph_op_list_includes_function_ops(built, tmp_path):
    meta = ml.train.export_meta_graph(str(tmp_path / "m.meta"), clear_devices=True,
                                      graph=built[0])
    ops = meta.meta_info_def["stripped_op_list"]
    assert "StatelessWhile" in ops and "AssignAddVariableOp" in ops
    assert all(isinstance(f, FunctionDef) for f in meta.graph_def.library.values())
