"""Graph semantics: default-graph stack, names and scopes, collections, lookup,
finalize, Operation/Tensor fields, static shapes and errors that quote the user's line."""

import inspect
import threading

import numpy as np
import pytest

import mylib as ml
from mylib import errors


def _line():
    """The caller's line number (to check that errors and tracebacks quote it)."""
    return inspect.currentframe().f_back.f_lineno


# ---------------------------------------------------------------- default graph
def test_default_graph_stack_and_as_default():
    g0 = ml.get_default_graph()
    g1, g2 = ml.Graph(), ml.Graph()
    with g1.as_default() as entered:
        assert entered is g1
        assert ml.get_default_graph() is g1
        with g2.as_default():
            assert ml.get_default_graph() is g2
            c = ml.constant(1.0)
        assert ml.get_default_graph() is g1
    assert ml.get_default_graph() is g0
    assert c.graph is g2 and c.op in g2.get_operations()
    assert g1.get_operations() == []


def test_default_graph_is_thread_local():
    g = ml.Graph()
    seen = []
    with g.as_default():
        t = threading.Thread(target=lambda: seen.append(ml.get_default_graph()))
        t.start()
        t.join()
    assert seen[0] is not g


def test_reset_default_graph_inside_as_default_raises():
    with ml.Graph().as_default():
        with pytest.raises(AssertionError):
            ml.reset_default_graph()


# ---------------------------------------------------------------- names and scopes
def test_unique_names_and_scopes():
    g = ml.Graph()
    with g.as_default():
        assert ml.constant(1.0, name="c").op.name == "c"
        assert ml.constant(1.0, name="c").op.name == "c_1"
        assert ml.constant(1.0, name="c").op.name == "c_2"
        with ml.name_scope("a") as scope:
            assert scope == "a/"
            assert ml.constant(1.0, name="c").op.name == "a/c"
            assert ml.constant(1.0, name="c").op.name == "a/c_1"
            with ml.name_scope("b") as inner:
                assert inner == "a/b/"
                assert g.get_name_scope() == "a/b"
                assert ml.constant(1.0, name="c").op.name == "a/b/c"
        with ml.name_scope("a") as scope2:
            assert scope2 == "a_1/"
            assert ml.constant(1.0, name="c").op.name == "a_1/c"
        # Re-entering an absolute scope ("a/") reuses it exactly.
        with ml.name_scope("a/") as scope3:
            assert scope3 == "a/"
            assert ml.constant(1.0, name="c").op.name == "a/c_2"
        # A name already used as a scope is uniquified when used as an op name.
        assert ml.constant(1.0, name="a").op.name == "a_2"
        # The empty scope resets to the top level.
        with ml.name_scope("x"):
            with ml.name_scope(""):
                assert ml.constant(1.0, name="top").op.name == "top"
        assert g.get_name_scope() == ""


def test_default_op_names_use_the_op_type():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [2])
        y = x + x
        z = x + x
        assert x.op.name == "Placeholder"
        assert y.op.name == y.op.type and z.op.name == y.op.type + "_1"


def test_explicit_names_are_uniquified_inside_scopes():
    g = ml.Graph()
    with g.as_default():
        with ml.name_scope("s"):
            a = ml.constant(1.0, name="foo")
            b = ml.constant(2.0, name="foo")
            c = ml.constant(2.0, name="foo_1")  # taken by b: becomes foo_1_1
        assert (a.op.name, b.op.name, c.op.name) == ("s/foo", "s/foo_1", "s/foo_1_1")
        d = ml.constant(1.0, name="foo")  # other scope: no clash
        assert d.op.name == "foo"
        assert len({op.name for op in g.get_operations()}) == len(g.get_operations())


def test_invalid_names_raise():
    g = ml.Graph()
    with g.as_default():
        with pytest.raises(ValueError):
            ml.constant(1.0, name="bad name!")
        with pytest.raises(ValueError):
            with ml.name_scope("bad scope!"):
                pass


# ---------------------------------------------------------------- collections
def test_collections_add_get_scope_filter():
    g = ml.Graph()
    with g.as_default():
        with ml.name_scope("enc"):
            a = ml.constant(1.0, name="a")
        b = ml.constant(2.0, name="b")
        ml.add_to_collection("things", a)
        ml.add_to_collections(["things", "other"], b)
        assert ml.get_collection("things") == [a, b]
        assert ml.get_collection("things", scope="enc") == [a]
        assert ml.get_collection("other") == [b]
        assert ml.get_collection("missing") == []
        # get_collection returns a copy; get_collection_ref the live list.
        ml.get_collection("things").append(3)
        assert len(ml.get_collection("things")) == 2
        ml.get_collection_ref("things").append(b)
        assert len(ml.get_collection("things")) == 3
        assert set(g.get_all_collection_keys()) == {"things", "other"}


def test_variables_land_in_standard_collections():
    g = ml.Graph()
    with g.as_default():
        w = ml.Variable(np.zeros(2, np.float32), name="w")
        n = ml.Variable(0, trainable=False, name="n")
        assert g.get_collection(ml.GraphKeys.GLOBAL_VARIABLES) == [w, n]
        assert g.get_collection(ml.GraphKeys.TRAINABLE_VARIABLES) == [w]


# ---------------------------------------------------------------- lookup
def test_get_operation_and_tensor_by_name():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, 3], name="x")
        with ml.name_scope("layer"):
            y = ml.multiply(x, 2.0, name="y")
    assert g.get_operation_by_name("x") is x.op
    assert g.get_operation_by_name("layer/y") is y.op
    assert g.get_tensor_by_name("layer/y:0") is y
    assert g.as_graph_element("x:0") is x and g.as_graph_element("x") is x.op
    with pytest.raises(KeyError, match="nope"):
        g.get_operation_by_name("nope")
    with pytest.raises(KeyError, match="nope"):
        g.get_tensor_by_name("nope:0")
    with pytest.raises(ValueError, match="looks like an Operation name"):
        g.get_tensor_by_name("x")
    with pytest.raises(KeyError, match="1 output"):
        g.get_tensor_by_name("x:1")
    with pytest.raises(ValueError, match="output index"):
        g.get_tensor_by_name("x:zero")
    other = ml.Graph()
    with pytest.raises(ValueError, match="not an element"):
        other.as_graph_element(x)


# ---------------------------------------------------------------- finalize
def test_finalize_forbids_new_ops():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [2], name="x")
        g.finalize()
        assert g.finalized
        n = len(g.get_operations())
        with pytest.raises(RuntimeError, match="finalized"):
            ml.constant(1.0)
        with pytest.raises(RuntimeError, match="finalized"):
            x + 1.0
        assert len(g.get_operations()) == n
        # Running existing ops still works.
        with ml.Session(graph=g) as sess:
            np.testing.assert_array_equal(sess.run(x, {x: [1.0, 2.0]}), [1.0, 2.0])


# ---------------------------------------------------------------- Operation / Tensor
def test_operation_fields():
    g = ml.Graph()
    with g.as_default():
        a = ml.placeholder(ml.float32, [2, 3], name="a")
        b = ml.placeholder(ml.float32, [4, 3], name="b")
        dep = ml.no_op(name="dep")
        with ml.control_dependencies([dep]):
            line = _line() + 1
            m = ml.matmul(a, b, transpose_b=True, name="mm")
    op = m.op
    assert op.name == "mm" and op.type == "MatMul"
    assert op.inputs == (a, b)
    assert op.control_inputs == [dep]
    assert op.attrs.get("transpose_b") is True
    assert m.shape.as_list() == [2, 4]
    assert op.outputs == [m] and op.values() == (m,)
    assert op.graph is g and op.device == ""
    assert op.traceback.startswith(f"{__file__}:{line} in test_operation_fields")
    assert "ml.matmul(a, b" in op.traceback
    assert a.consumers() == [op]
    with pytest.raises(ValueError, match="no attr"):
        op.get_attr("nope")


def test_tensor_fields_and_set_shape():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, 784], name="x")
        assert x.name == "x:0" and x.value_index == 0
        assert x.dtype == ml.float32 and x.ndim == 2
        assert x.shape.as_list() == [None, 784] and str(x.shape) == "(?, 784)"
        x.set_shape([32, None])
        assert x.shape.as_list() == [32, 784]
        with pytest.raises(ValueError, match=r"\(32, 784\).*\(16, 784\)"):
            x.set_shape([16, 784])
        with pytest.raises(ValueError):
            x.set_shape([32])
        assert x.shape.as_list() == [32, 784]
        u = ml.placeholder(ml.float32, None)
        assert u.shape.rank is None
        u.set_shape([None, 3])
        assert u.shape.as_list() == [None, 3]


def test_tensor_bool_and_array_raise():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [2], name="x")
        with pytest.raises(TypeError, match="Python bool"):
            bool(x)
        with pytest.raises(TypeError, match="Python bool"):
            if x:
                pass
        with pytest.raises(TypeError):
            np.asarray(x)
        assert (x == x) is True or (x == x)  # identity, usable as a dict key
        assert {x: 1}[x] == 1


@pytest.mark.skipif(not hasattr(ml.core.ops.array_ops, "unstack"),
                    reason="array_ops.unstack (op library) not written yet")
def test_iterating_a_tensor():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [3, 2], name="x")
        rows = list(x)
        assert len(rows) == 3 and len(x) == 3
        assert all(r.shape.as_list() == [2] for r in rows)
        with pytest.raises(TypeError):
            iter(ml.placeholder(ml.float32, [None, 2]))
        with pytest.raises(TypeError):
            iter(ml.placeholder(ml.float32, []))
        val = np.arange(6, dtype=np.float32).reshape(3, 2)
        with ml.Session() as sess:
            out = sess.run(rows, {x: val})
        for r, v in zip(out, val):
            np.testing.assert_array_equal(r, v)


# ---------------------------------------------------------------- errors at construction
def test_shape_error_names_op_shapes_and_user_line():
    g = ml.Graph()
    with g.as_default():
        a = ml.placeholder(ml.float32, [None, 784], name="a")
        b = ml.placeholder(ml.float32, [100, 10], name="b")
        line = _line() + 2
        with pytest.raises(errors.InvalidArgumentError) as ei:
            ml.matmul(a, b, name="dense")
    msg = str(ei.value)
    assert "MatMul" in msg and "dense" in msg
    assert "784" in msg and "100" in msg
    assert "(?, 784)" in msg and "(100, 10)" in msg
    assert f"{__file__}:{line}" in msg


def test_broadcast_error_at_construction():
    g = ml.Graph()
    with g.as_default():
        a = ml.placeholder(ml.float32, [None, 3], name="p")
        b = ml.placeholder(ml.float32, [4], name="q")
        line = _line() + 2
        with pytest.raises(errors.InvalidArgumentError) as ei:
            ml.add(a, b)
    msg = str(ei.value)
    assert "(?, 3)" in msg and "(4,)" in msg and f"{__file__}:{line}" in msg


def test_ops_from_different_graphs_raise():
    g1, g2 = ml.Graph(), ml.Graph()
    with g1.as_default():
        a = ml.constant(1.0)
    with g2.as_default():
        b = ml.constant(2.0)
        with pytest.raises(ValueError, match="different graph"):
            ml.add(b, a)
