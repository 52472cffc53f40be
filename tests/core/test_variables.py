"""Resource variables: assigns and reads, collections, shapes, dtype errors, gradients
through reads, and variable_creator_scope."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml
from mylib import errors


def _line():
    return inspect.currentframe().f_back.f_lineno


@pytest.fixture
def g():
    graph = ml.Graph()
    with graph.as_default():
        yield graph


def test_variable_fields(g):
    with ml.name_scope("layer"):
        v = ml.Variable(np.zeros((2, 3), np.float32), name="kernel")
    assert v.name == "layer/kernel:0" and v.op.name == "layer/kernel"
    assert v.op.type == "VarHandleOp" and v.handle.dtype == ml.resource
    assert v.dtype == ml.float32 and v.shape.as_list() == [2, 3]
    assert v.trainable and v.initializer.type == "AssignVariableOp"
    assert v.value().op.type == "ReadVariableOp"
    w = ml.Variable(1.0, name="kernel")
    assert w.name == "kernel:0"
    w2 = ml.Variable(1.0, name="kernel")
    assert w2.name == "kernel_1:0"
    with pytest.raises(ValueError, match="initial_value"):
        ml.Variable(None)
    with pytest.raises(TypeError, match="Python bool"):
        bool(v)


def test_assign_add_sub_read_value_vs_numpy(g):
    init = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = ml.Variable(init, name="v")
    a = ml.placeholder(ml.float32, [2, 3], name="a")
    assign = v.assign(a)
    add = v.assign_add(a)
    sub = v.assign_sub(a)
    rng = np.random.default_rng(0)
    ref = init.copy()
    with ml.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v.read_value()), ref)
        for _ in range(4):
            x = rng.standard_normal((2, 3)).astype(np.float32)
            np.testing.assert_allclose(sess.run(add, {a: x}), ref + x, rtol=1e-6)
            ref = ref + x
            y = rng.standard_normal((2, 3)).astype(np.float32)
            np.testing.assert_allclose(sess.run(sub, {a: y}), ref - y, rtol=1e-6)
            ref = ref - y
        z = rng.standard_normal((2, 3)).astype(np.float32)
        np.testing.assert_array_equal(sess.run(assign, {a: z}), z)
        np.testing.assert_array_equal(sess.run(v), z)
        op = v.assign(np.ones((2, 3), np.float32), read_value=False)
        assert isinstance(op, ml.Operation) and sess.run(op) is None
        np.testing.assert_array_equal(sess.run(v), np.ones((2, 3)))
        # Python ints are accepted for float variables.
        sess.run(v.assign_add(np.ones((2, 3), np.int64).tolist()))
        np.testing.assert_array_equal(sess.run(v), np.full((2, 3), 2.0))


def test_trainable_collections(g):
    a = ml.Variable(1.0, name="a")
    b = ml.Variable(2.0, name="b", trainable=False)
    c = ml.Variable(3.0, name="c", collections=[ml.GraphKeys.LOCAL_VARIABLES])
    assert ml.global_variables() == [a, b]
    assert ml.trainable_variables() == [a, c]  # c is trainable but not global
    assert ml.local_variables() == [c]
    with ml.Session() as sess:
        sess.run([ml.global_variables_initializer(), ml.local_variables_initializer()])
        assert sess.run([a, b, c]) == [1.0, 2.0, 3.0]


def test_validate_shape_false_allows_new_shapes(g):
    v = ml.Variable(np.zeros(2, np.float32), validate_shape=False, name="v")
    assert v.shape.rank is None
    x = ml.placeholder(ml.float32, [None], name="x")
    assign = v.assign(x)
    with ml.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), [0.0, 0.0])
        np.testing.assert_array_equal(sess.run(assign, {x: [1.0, 2.0, 3.0]}), [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])
        sess.run(assign, {x: [4.0]})
        np.testing.assert_array_equal(sess.run(v), [4.0])


def test_shape_and_dtype_errors_on_assign(g):
    v = ml.Variable(np.zeros((2, 3), np.float32), name="w")
    line = _line() + 2
    with pytest.raises(errors.InvalidArgumentError) as ei:
        v.assign(np.zeros((3, 2), np.float32))
    msg = str(ei.value)
    assert "(3, 2)" in msg and "(2, 3)" in msg and "w" in msg
    with pytest.raises((errors.InvalidArgumentError, TypeError), match="int32|float32"):
        v.assign(ml.placeholder(ml.int32, [2, 3]))
    with pytest.raises((errors.InvalidArgumentError, TypeError)):
        v.assign_add(ml.placeholder(ml.float64, [2, 3]))
    i = ml.Variable(np.zeros(2, np.int32), name="i")
    with pytest.raises((errors.InvalidArgumentError, TypeError)):
        i.assign([1.5, 2.5])
    with pytest.raises(ValueError, match="not compatible"):
        ml.Variable(np.zeros(3, np.float32), shape=[4])
    assert line  # the shape error is raised at graph construction


def test_dtype_argument_casts_initial_value(g):
    v = ml.Variable([1, 2, 3], dtype=ml.float64, name="v")
    assert v.dtype == ml.float64
    with ml.Session() as sess:
        sess.run(v.initializer)
        out = sess.run(v)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])


def test_gradients_wrt_variables_through_several_reads(g):
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((3, 2)).astype(np.float32)
    b0 = rng.standard_normal(2).astype(np.float32)
    xv = rng.standard_normal((4, 3)).astype(np.float32)
    w = ml.Variable(w0, name="w")
    b = ml.Variable(b0, name="b")
    x = ml.placeholder(ml.float32, [None, 3], name="x")
    # w is read three times (two explicit reads and one through the operator).
    h = ml.tanh(ml.matmul(x, w.value()) + b)
    loss = ml.reduce_sum(h * h) + ml.reduce_sum(w * w) + ml.reduce_sum(ml.exp(w.read_value()))
    gw, gb = ml.gradients(loss, [w, b])

    def ref(w_, b_):
        hh = jnp.tanh(xv @ w_ + b_)
        return jnp.sum(hh * hh) + jnp.sum(w_ * w_) + jnp.sum(jnp.exp(w_))

    rw, rb = jax.grad(ref, argnums=(0, 1))(w0, b0)
    with ml.Session() as sess:
        sess.run(ml.global_variables_initializer())
        ow, ob = sess.run([gw, gb], {x: xv})
    np.testing.assert_allclose(ow, rw, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ob, rb, rtol=1e-5, atol=1e-5)


def test_gradient_step_updates_variable_like_numpy(g):
    w = ml.Variable(np.array([1.0, -2.0], np.float32), name="w")
    loss = ml.reduce_sum(w * w)
    (gw,) = ml.gradients(loss, [w])
    train = w.assign_sub(gw * 0.1, read_value=False)
    ref = np.array([1.0, -2.0], np.float32)
    with ml.Session() as sess:
        sess.run(w.initializer)
        for _ in range(5):
            sess.run(train)
            ref = ref - 0.1 * 2 * ref
        np.testing.assert_allclose(sess.run(w), ref, rtol=1e-6)


def test_unconnected_and_integer_variables_get_no_gradient(g):
    w = ml.Variable(np.float32(2.0), name="w")
    u = ml.Variable(np.float32(3.0), name="unused")
    n = ml.Variable(np.int32(3), name="n")
    loss = w * w + ml.cast(n.value(), ml.float32)
    gw, gu, gn = ml.gradients(loss, [w, u, n])
    assert gu is None and gn is None
    gz = ml.gradients(loss, [u], unconnected_gradients="zero")[0]
    with ml.Session() as sess:
        sess.run(ml.global_variables_initializer())
        assert sess.run(gw) == 4.0 and sess.run(gz) == 0.0


def test_variable_creator_scope_intercepts_creation(g):
    seen = []

    def outer(next_creator, **kwargs):
        seen.append(("outer", kwargs.get("name")))
        return next_creator(**kwargs)

    def inner(next_creator, **kwargs):
        seen.append(("inner", kwargs.get("name")))
        kwargs["trainable"] = False  # a creator may change the arguments
        return next_creator(**kwargs)

    with ml.variable_creator_scope(outer):
        with ml.variable_creator_scope(inner):
            v = ml.Variable(np.float32(2.0), name="v")
        w = ml.Variable(np.float32(3.0), name="w")
    plain = ml.Variable(np.float32(4.0), name="plain")
    # Innermost creator first, each called exactly once, one variable each.
    assert seen == [("inner", "v"), ("outer", "v"), ("outer", "w")]
    assert isinstance(v, ml.Variable) and not v.trainable and w.trainable
    assert [x.name for x in ml.global_variables()] == ["v:0", "w:0", "plain:0"]
    assert len([op for op in g.get_operations() if op.type == "VarHandleOp"]) == 3
    with ml.Session() as sess:
        sess.run(ml.global_variables_initializer())
        assert sess.run([v, w, plain]) == [2.0, 3.0, 4.0]


def test_variable_creator_can_replace_the_variable(g):
    made = []

    def creator(next_creator, **kwargs):
        kwargs["initial_value"] = np.float32(42.0)
        v = next_creator(**kwargs)
        made.append(v)
        return v

    with ml.variable_creator_scope(creator):
        v = ml.Variable(np.float32(1.0), name="v")
    assert made == [v]
    with ml.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(v) == 42.0


def test_scatter_add_and_sparse_gradient(g):
    emb0 = np.arange(12, dtype=np.float32).reshape(4, 3)
    v = ml.Variable(emb0, name="emb")
    upd = ml.IndexedSlices(ml.constant(np.ones((2, 3), np.float32)),
                           ml.constant(np.array([1, 1], np.int64)))
    op = v.scatter_add(upd)
    with ml.Session() as sess:
        sess.run(v.initializer)
        sess.run(op)
        ref = emb0.copy()
        ref[1] += 2
        np.testing.assert_array_equal(sess.run(v), ref)


def test_variable_as_fetch_and_operator(g):
    v = ml.Variable(np.array([1.0, 2.0], np.float32), name="v")
    with ml.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(v + 1.0), [2.0, 3.0])
        np.testing.assert_array_equal(sess.run(2.0 * v - v), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(-v), [-1.0, -2.0])
