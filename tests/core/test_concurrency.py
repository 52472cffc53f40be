"""Session.run from many threads at once (the paper's concurrent steps)."""

import threading

import numpy as np
import pytest

import mylib as ml
from mylib import errors


def _run_threads(n, fn, timeout=60):
    errs = []

    def wrap(i):
        try:
            fn(i)
        except BaseException as e:  # noqa: BLE001
            errs.append(e)

    threads = [threading.Thread(target=wrap, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "threads did not finish in time"
    if errs:
        raise errs[0]


def test_assign_add_from_8_threads_loses_no_update():
    g = ml.Graph()
    with g.as_default():
        v = ml.Variable(0.0)
        inc = v.assign_add(1.0)
    with ml.Session(graph=g) as s:
        s.run(v.initializer)
        step = s.make_callable(inc)
        step()  # compile once before the race

        def worker(i):
            for _ in range(1000):
                step()

        _run_threads(8, worker)
        assert s.run(v) == 8001.0


def test_assign_add_with_host_op_in_step_loses_no_update():
    g = ml.Graph()
    with g.as_default():
        v = ml.Variable(0.0)
        one = ml.py_func(lambda: np.float32(1.0), [], ml.float32)
        one.set_shape([])
        inc = v.assign_add(one)  # a segmented step: host op, then an XLA cluster
    with ml.Session(graph=g) as s:
        s.run(v.initializer)
        step = s.make_callable(inc)

        def worker(i):
            for _ in range(100):
                step()

        _run_threads(8, worker)
        assert s.run(v) == 800.0


def test_read_only_steps_run_concurrently_and_correctly():
    g = ml.Graph()
    with g.as_default():
        w = ml.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
        x = ml.placeholder(ml.float32, [None, 2])
        y = ml.matmul(x, w)
        # A host op that waits for all readers: only passes if steps overlap.
        barrier = threading.Barrier(4, timeout=10)

        def meet(a):
            barrier.wait()
            return a

        y2 = ml.py_func(meet, [y], ml.float32)
    with ml.Session(graph=g) as s:
        s.run(w.initializer)
        wv = s.run(w)
        f = s.make_callable(y2, [x])

        def worker(i):
            for k in range(5):
                xv = np.full((3, 2), i + k, np.float32)
                np.testing.assert_allclose(f(xv), xv @ wv)

        _run_threads(4, worker)


def test_training_steps_from_several_threads():
    rs = np.random.RandomState(0)
    X = rs.randn(64, 4).astype(np.float32)
    Y = (X @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None]
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, 4])
        y = ml.placeholder(ml.float32, [None, 1])
        w = ml.Variable(np.zeros((4, 1), np.float32))
        step = ml.Variable(0, dtype=ml.int64)
        loss = ml.reduce_mean(ml.square(ml.matmul(x, w) - y))
        (gw,) = ml.gradients(loss, [w])
        train = ml.group(w.assign_sub(0.05 * gw), step.assign_add(1))
    with ml.Session(graph=g) as s:
        s.run(ml.global_variables_initializer())
        run = s.make_callable(train, [x, y])

        def worker(i):
            for k in range(50):
                j = (i * 50 + k) % 4
                run(X[j * 16:(j + 1) * 16], Y[j * 16:(j + 1) * 16])

        _run_threads(4, worker)
        final = s.run(loss, {x: X, y: Y})
        assert s.run(step) == 200
        assert np.isfinite(final) and final < 0.05 * float(np.mean(Y ** 2))


def test_partial_run_is_documented_unimplemented():
    g = ml.Graph()
    with g.as_default():
        a = ml.placeholder(ml.float32, [])
        b = a * 2.0
    with ml.Session(graph=g) as s:
        with pytest.raises(errors.UnimplementedError, match="feed"):
            s.partial_run_setup([b], [a])
