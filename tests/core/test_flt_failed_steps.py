"""A step that fails part-way (a `py_func` raising after an assign has run in an
earlier segment, a check op, an out-of-range gather in a later segment, a
KeyboardInterrupt inside a host op) leaves every variable as it was; exceptions of a
`py_func` reach the caller as TensorFlow maps them."""

import numpy as np
import pytest

import mylib as ml
from mylib import errors


def _two_segment_step(fail):
    """v += 1; then a host op calling `fail(v)`; then w += 1 (depending on it):
    the host op cuts the step into two compiled segments around it."""
    v = ml.Variable(np.ones(3, np.float32), name="v")
    w = ml.Variable(np.ones(3, np.float32), name="w")
    a = v.assign_add(ml.ones(3))
    with ml.control_dependencies([a]):
        p = ml.py_func(fail, [v.read_value()], ml.float32)
    with ml.control_dependencies([p]):
        b = w.assign_add(ml.ones(3))
    sess = ml.Session()
    sess.run(ml.global_variables_initializer())
    return sess, v, w, ml.group(a, b)


def _raise(exc):
    def f(x):
        raise exc
    return f


@pytest.mark.parametrize("exc, cls", [
    (ValueError("bad value"), errors.InvalidArgumentError),
    (TypeError("bad type"), errors.InvalidArgumentError),
    (StopIteration(), errors.OutOfRangeError),
    (MemoryError(), errors.ResourceExhaustedError),
    (NotImplementedError("later"), errors.UnimplementedError),
    (RuntimeError("boom"), errors.UnknownError),
    (ZeroDivisionError("div"), errors.UnknownError),
    (errors.NotFoundError("no such thing"), errors.NotFoundError),
])
def test_py_func_exceptions_map_as_tensorflow_and_change_nothing(exc, cls):
    with ml.Graph().as_default():
        sess, v, w, step = _two_segment_step(_raise(exc))
        with pytest.raises(cls) as info:
            sess.run(step)
        assert type(exc).__name__ in str(info.value) or isinstance(exc, errors.OpError)
        assert isinstance(info.value, errors.OpError)
        if not isinstance(exc, errors.OpError):
            assert info.value.__cause__ is exc
            assert "PyFunc" in str(info.value)  # names the op
        np.testing.assert_array_equal(sess.run(v), np.ones(3))
        np.testing.assert_array_equal(sess.run(w), np.ones(3))


def test_keyboard_interrupt_in_a_host_op_passes_and_changes_nothing():
    with ml.Graph().as_default():
        sess, v, w, step = _two_segment_step(_raise(KeyboardInterrupt()))
        with pytest.raises(KeyboardInterrupt):
            sess.run(step)
        np.testing.assert_array_equal(sess.run([v, w]), np.ones((2, 3)))
        # The session still runs steps afterwards.
        sess.run(v.assign_add(ml.ones(3)))
        np.testing.assert_array_equal(sess.run(v), np.full(3, 2.0))


def test_a_generator_feeding_py_func_ends_with_out_of_range():
    # The TF1 pattern: a Python generator read by py_func; the loop ends on
    # OutOfRangeError, and each completed step's assign stays.
    with ml.Graph().as_default():
        batches = iter([np.full(3, k, np.float32) for k in (1.0, 2.0, 3.0)])
        total = ml.Variable(np.zeros(3, np.float32), name="total")
        x = ml.py_func(lambda: next(batches), [], ml.float32)
        step = total.assign_add(ml.reshape(x, [3]))
        sess = ml.Session()
        sess.run(total.initializer)
        n = 0
        while True:
            try:
                sess.run(step)
                n += 1
            except errors.OutOfRangeError:
                break
        assert n == 3
        np.testing.assert_array_equal(sess.run(total), np.full(3, 6.0))


def test_error_in_a_later_segment_undoes_an_earlier_segments_assign():
    # Segment 1 assigns v; a host op; segment 2 checks a fed scale and assigns w.
    with ml.Graph().as_default():
        v = ml.Variable(np.ones(3, np.float32), name="v")
        w = ml.Variable(np.ones(3, np.float32), name="w")
        scale = ml.placeholder(ml.float32, [])
        a = v.assign_add(ml.ones(3))
        with ml.control_dependencies([a]):
            p = ml.py_func(lambda t: t * 2, [v.read_value()], ml.float32)
        with ml.control_dependencies([p]):
            g = ml.debugging.check_numerics(w.read_value() * scale, "scaled w")
            b = w.assign_add(g)
        sess = ml.Session()
        sess.run(ml.global_variables_initializer())
        with pytest.raises(errors.InvalidArgumentError, match="scaled w"):
            sess.run(b, {scale: np.nan})
        np.testing.assert_array_equal(sess.run([v, w]), np.ones((2, 3)))
        sess.run(b, {scale: 1.0})  # a good step applies both segments
        np.testing.assert_array_equal(sess.run(v), np.full(3, 2.0))
        np.testing.assert_array_equal(sess.run(w), np.full(3, 2.0))


@pytest.mark.parametrize("check", ["check_numerics", "assert_greater"])
def test_a_failed_check_after_an_assign_changes_nothing(check):
    with ml.Graph().as_default():
        v = ml.Variable(np.ones(3, np.float32), name="v")
        x = ml.placeholder(ml.float32, [3])
        a = v.assign_add(x)
        with ml.control_dependencies([a]):
            if check == "check_numerics":
                c = ml.debugging.check_numerics(v.read_value() * 0.0 / 0.0 + x, "nan")
            else:
                c = ml.debugging.assert_greater(v.read_value(), 100.0)
        sess = ml.Session()
        sess.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError):
            sess.run([a, c], {x: np.ones(3, np.float32)})
        np.testing.assert_array_equal(sess.run(v), np.ones(3))
