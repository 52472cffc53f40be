"""Collectable ops (`Graph.collectable`): held weakly by the graph, they leave it, its
collections and the sessions' variable values when nothing uses them any more; other
ops live as long as the graph."""

import gc

import numpy as np
import pytest

import mylib as ml


@pytest.fixture
def g():
    graph = ml.Graph()
    with graph.as_default():
        yield graph


def test_unreferenced_collectable_ops_leave_graph_collections_and_session(g):
    x = ml.placeholder(ml.float32, [2], name="x")  # not collectable: stays
    sess = ml.Session()
    with g.collectable():
        w = ml.Variable(np.array([1.0, 2.0], np.float32), name="w")
        y = x * w.value()
    sess.run(w.initializer)
    np.testing.assert_allclose(sess.run(y, {x: np.ones(2, np.float32)}), [1.0, 2.0])
    names = {op.name for op in g.get_operations()}
    assert {"x", "w", "Mul"} <= names
    assert g.get_collection(ml.GraphKeys.GLOBAL_VARIABLES) == [w]
    assert sess.variable_value("w") is not None
    # While used (the tensor y holds its inputs), everything stays.
    del w
    gc.collect()
    assert g.get_operation_by_name("w").type == "VarHandleOp"
    np.testing.assert_allclose(sess.run(y, {x: np.ones(2, np.float32)}), [1.0, 2.0])
    # Dropped: the ops, the collection entry and the stored value go; x stays.
    del y
    sess._plans.clear()  # the plan of the run above held its fetches
    gc.collect()
    assert [op.name for op in g.get_operations()] == ["x"]
    assert g.get_collection(ml.GraphKeys.GLOBAL_VARIABLES) == []
    with pytest.raises(KeyError):
        g.get_operation_by_name("w")
    ml.constant(1.0)  # the next op created (or a get_operations) tidies up
    assert sess.variable_value("w") is None
    assert x.consumers() == []


def test_ops_outside_collectable_consume_and_keep_collectable_ones(g):
    with g.collectable():
        a = ml.constant(2.0, name="a")
    b = ml.identity(a, name="b")  # a plain graph op: lives with the graph
    del a
    gc.collect()
    assert {op.name for op in g.get_operations()} == {"a", "b"}
    with ml.Session() as sess:
        assert sess.run("b:0") == 2.0
