"""Queues (FIFO, RandomShuffle, Padding, Priority), QueueRunner and Coordinator.

Every blocking step is bounded: by `RunOptions(timeout_in_ms=...)` or by joining
threads with a timeout, so a bug fails a test instead of hanging CI.
"""

import threading
import time

import numpy as np
import pytest

import mylib as ml
from mylib import errors

T = ml.RunOptions(timeout_in_ms=5000)  # generous bound for steps expected to succeed


def _session(g):
    return ml.Session(graph=g)


def test_fifo_order_shapes_and_many():
    g = ml.Graph()
    with g.as_default():
        q = ml.FIFOQueue(10, [ml.float32, ml.int64], shapes=[[2], []], name="q")
        xs = ml.placeholder(ml.float32, [None, 2])
        ys = ml.placeholder(ml.int64, [None])
        enq_many = q.enqueue_many([xs, ys])
        enq = q.enqueue([ml.constant([9.0, 9.0]), ml.constant(9, dtype=ml.int64)])
        x, y = q.dequeue()
        bx, by = q.dequeue_many(3)
        size = q.size()
    assert q.name == "q" and q.dtypes == [ml.float32, ml.int64]
    assert [s.as_list() for s in q.shapes] == [[2], []]
    assert x.shape.as_list() == [2] and y.shape.as_list() == []
    assert bx.shape.as_list() == [3, 2] and by.shape.as_list() == [3]
    with _session(g) as s:
        data = np.arange(10, dtype=np.float32).reshape(5, 2)
        s.run(enq_many, {xs: data, ys: np.arange(5)}, options=T)
        s.run(enq, options=T)
        assert s.run(size) == 6
        v = s.run([x, y], options=T)
        np.testing.assert_array_equal(v[0], [0, 1])
        assert v[1] == 0
        b = s.run([bx, by], options=T)
        np.testing.assert_array_equal(b[0], data[1:4])
        np.testing.assert_array_equal(b[1], [1, 2, 3])
        assert b[0].dtype == np.float32 and b[1].dtype == np.int64
        assert s.run(size) == 2


def test_dequeue_feeds_xla_cluster_with_static_shape():
    g = ml.Graph()
    with g.as_default():
        q = ml.FIFOQueue(8, ml.float32, shapes=[[3]])
        enq = q.enqueue_many(ml.constant(np.ones((4, 3), np.float32)))
        batch = q.dequeue_many(2)
        w = ml.Variable(np.full((3, 1), 2.0, np.float32))
        out = ml.matmul(batch, w)
    assert out.shape.as_list() == [2, 1]
    with _session(g) as s:
        s.run(ml.global_variables_initializer())
        s.run(enq, options=T)
        np.testing.assert_allclose(s.run(out, options=T), [[6.0], [6.0]])


def test_closed_queue_semantics():
    g = ml.Graph()
    with g.as_default():
        q = ml.FIFOQueue(10, ml.int32, shapes=[[]])
        enq = q.enqueue_many(ml.constant([1, 2, 3], dtype=ml.int32))
        close = q.close()
        closed = q.is_closed()
        many = q.dequeue_many(2)
        up_to = q.dequeue_up_to(5)
        one = q.dequeue()
    with _session(g) as s:
        s.run(enq, options=T)
        assert not s.run(closed)
        s.run(close)
        assert s.run(closed)
        with pytest.raises(errors.CancelledError, match="is closed"):
            s.run(enq, options=T)
        np.testing.assert_array_equal(s.run(many, options=T), [1, 2])
        # Too few left for dequeue_many: OutOfRange, and nothing is taken.
        with pytest.raises(errors.OutOfRangeError, match="insufficient"):
            s.run(many, options=T)
        np.testing.assert_array_equal(s.run(up_to, options=T), [3])
        with pytest.raises(errors.OutOfRangeError):
            s.run(up_to, options=T)
        with pytest.raises(errors.OutOfRangeError):
            s.run(one, options=T)


def test_blocking_dequeue_wakes_on_enqueue_and_close():
    g = ml.Graph()
    with g.as_default():
        q = ml.FIFOQueue(4, ml.float32, shapes=[[]])
        enq = q.enqueue(ml.constant(5.0))
        deq = q.dequeue()
        close = q.close()
    s = _session(g)
    results = []

    def consumer():
        try:
            results.append(s.run(deq, options=T))
            results.append(s.run(deq, options=T))
        except errors.OutOfRangeError as e:
            results.append(e)

    th = threading.Thread(target=consumer)
    th.start()
    time.sleep(0.1)
    assert th.is_alive()  # blocked on the empty queue
    s.run(enq, options=T)
    time.sleep(0.05)
    s.run(close)
    th.join(5)
    assert not th.is_alive()
    assert results[0] == 5.0 and isinstance(results[1], errors.OutOfRangeError)
    s.close()


def test_blocking_enqueue_when_full_and_cancel_pending():
    g = ml.Graph()
    with g.as_default():
        q = ml.FIFOQueue(2, ml.float32, shapes=[[]])
        enq = q.enqueue(ml.constant(1.0))
        deq = q.dequeue()
        cancel = q.close(cancel_pending_enqueues=True)
        size = q.size()
    s = _session(g)
    s.run(enq, options=T)
    s.run(enq, options=T)
    with pytest.raises(errors.DeadlineExceededError):
        s.run(enq, options=ml.RunOptions(timeout_in_ms=100))
    assert s.run(size) == 2
    errs = []

    def producer():
        try:
            s.run(enq, options=T)
        except errors.CancelledError as e:
            errs.append(e)

    th = threading.Thread(target=producer)
    th.start()
    time.sleep(0.1)
    assert th.is_alive()
    s.run(cancel)
    th.join(5)
    assert not th.is_alive() and len(errs) == 1
    assert s.run(deq, options=T) == 1.0  # what was in stays
    s.close()


def test_timeout_and_session_close_wake_blocked_steps():
    g = ml.Graph()
    with g.as_default():
        q = ml.FIFOQueue(2, ml.float32, shapes=[[]])
        deq = q.dequeue()
    s = _session(g)
    t0 = time.monotonic()
    with pytest.raises(errors.DeadlineExceededError, match="timed out"):
        s.run(deq, options=ml.RunOptions(timeout_in_ms=150))
    assert 0.1 < time.monotonic() - t0 < 3
    errs = []
    th = threading.Thread(target=lambda: errs.append(_catch(s.run, deq)))
    th.start()
    time.sleep(0.1)
    s.close()
    th.join(5)
    assert not th.is_alive()
    assert isinstance(errs[0], errors.CancelledError)


def _catch(fn, *a, **k):
    try:
        return fn(*a, **k)
    except Exception as e:  # noqa: BLE001
        return e


def test_enqueue_checks_shape_and_count():
    g = ml.Graph()
    with g.as_default():
        q = ml.FIFOQueue(3, [ml.float32], shapes=[[2]])
        with pytest.raises(ValueError, match="expects"):
            q.enqueue(ml.constant([1.0, 2.0, 3.0]))
        with pytest.raises(ValueError, match="component"):
            q.enqueue([ml.constant([1.0, 2.0]), ml.constant([1.0, 2.0])])
        p = ml.placeholder(ml.float32, [None])
        enq = q.enqueue(p)
    with _session(g) as s:
        with pytest.raises(errors.InvalidArgumentError, match="shape"):
            s.run(enq, {p: np.ones(3, np.float32)}, options=T)


def test_dequeue_many_larger_than_capacity_with_producer():
    g = ml.Graph()
    with g.as_default():
        q = ml.FIFOQueue(2, ml.int32, shapes=[[]])
        enq = q.enqueue_many(ml.constant(np.arange(6, dtype=np.int32)))
        deq = q.dequeue_many(6)
    s = _session(g)
    th = threading.Thread(target=lambda: s.run(enq, options=T))
    th.start()
    np.testing.assert_array_equal(s.run(deq, options=T), np.arange(6))
    th.join(5)
    s.close()


def test_named_components():
    g = ml.Graph()
    with g.as_default():
        q = ml.FIFOQueue(4, [ml.float32, ml.int32], shapes=[[], []], names=["x", "y"])
        enq = q.enqueue({"x": 1.5, "y": 2})
        out = q.dequeue()
    assert set(out) == {"x", "y"}
    with _session(g) as s:
        s.run(enq, options=T)
        v = s.run(out, options=T)
        assert v == {"x": 1.5, "y": 2}


def test_random_shuffle_queue_seeded_and_min_after_dequeue():
    def run_once():
        g = ml.Graph()
        with g.as_default():
            q = ml.RandomShuffleQueue(20, 5, ml.int32, shapes=[[]], seed=42)
            enq = q.enqueue_many(ml.constant(np.arange(10, dtype=np.int32)))
            deq = q.dequeue()
            close = q.close()
            size = q.size()
        with _session(g) as s:
            s.run(enq, options=T)
            first = [int(s.run(deq, options=T)) for _ in range(5)]
            assert s.run(size) == 5
            # min_after_dequeue: the 6th dequeue waits while the queue is open.
            with pytest.raises(errors.DeadlineExceededError):
                s.run(deq, options=ml.RunOptions(timeout_in_ms=100))
            s.run(close)
            rest = [int(s.run(deq, options=T)) for _ in range(5)]
            with pytest.raises(errors.OutOfRangeError):
                s.run(deq, options=T)
        return first + rest

    a, b = run_once(), run_once()
    assert sorted(a) == list(range(10))
    assert a == b  # deterministic for a fixed seed
    assert a != list(range(10))  # and shuffled


def test_random_shuffle_queue_validates_args():
    with ml.Graph().as_default():
        with pytest.raises(ValueError, match="min_after_dequeue"):
            ml.RandomShuffleQueue(5, 5, ml.float32)


def test_padding_fifo_queue_pads_to_batch_max():
    g = ml.Graph()
    with g.as_default():
        q = ml.PaddingFIFOQueue(10, [ml.int32, ml.float32], shapes=[[None], [None, 2]])
        a = ml.placeholder(ml.int32, [None])
        b = ml.placeholder(ml.float32, [None, 2])
        enq = q.enqueue([a, b])
        ba, bb = q.dequeue_many(2)
    assert ba.shape.as_list() == [2, None] and bb.shape.as_list() == [2, None, 2]
    with _session(g) as s:
        s.run(enq, {a: [1, 2], b: np.ones((1, 2), np.float32)}, options=T)
        s.run(enq, {a: [3, 4, 5], b: np.ones((3, 2), np.float32)}, options=T)
        va, vb = s.run([ba, bb], options=T)
        np.testing.assert_array_equal(va, [[1, 2, 0], [3, 4, 5]])
        assert vb.shape == (2, 3, 2)
        np.testing.assert_array_equal(vb[0], [[1, 1], [0, 0], [0, 0]])
    with ml.Graph().as_default():
        with pytest.raises(ValueError, match="known rank"):
            ml.PaddingFIFOQueue(3, ml.float32, shapes=[None])


def test_priority_queue_lowest_first():
    g = ml.Graph()
    with g.as_default():
        q = ml.PriorityQueue(10, [ml.float32], shapes=[[]])
        pri = ml.placeholder(ml.int64, [None])
        val = ml.placeholder(ml.float32, [None])
        enq = q.enqueue_many([pri, val])
        p, v = q.dequeue_many(4)
    assert q.dtypes == [ml.int64, ml.float32]
    with _session(g) as s:
        s.run(enq, {pri: [5, 1, 3, 1], val: [50.0, 10.0, 30.0, 11.0]}, options=T)
        rp, rv = s.run([p, v], options=T)
        np.testing.assert_array_equal(rp, [1, 1, 3, 5])
        np.testing.assert_array_equal(rv, [10.0, 11.0, 30.0, 50.0])


def test_queues_are_per_session():
    g = ml.Graph()
    with g.as_default():
        q = ml.FIFOQueue(4, ml.float32, shapes=[[]])
        enq = q.enqueue(1.0)
        size = q.size()
    with _session(g) as s1, _session(g) as s2:
        s1.run(enq, options=T)
        assert s1.run(size) == 1 and s2.run(size) == 0


# ---------------------------------------------------------------- QueueRunner, Coordinator
def test_queue_runner_fills_and_closes_when_input_ends():
    g = ml.Graph()
    with g.as_default():
        src = ml.FIFOQueue(100, ml.int32, shapes=[[]])
        fill = src.enqueue_many(ml.constant(np.arange(20, dtype=np.int32)))
        close_src = src.close()
        dst = ml.FIFOQueue(4, ml.int32, shapes=[[]])
        # Two threads move elements from src to dst until src runs out.
        move = dst.enqueue(src.dequeue())
        qr = ml.train.QueueRunner(dst, [move, move])
        ml.train.add_queue_runner(qr)
        out = dst.dequeue()
    assert g.get_collection(ml.GraphKeys.QUEUE_RUNNERS) == [qr]
    with _session(g) as s:
        s.run(fill, options=T)
        s.run(close_src)
        coord = ml.train.Coordinator()
        threads = ml.train.start_queue_runners(s, coord)
        got = []
        while True:
            try:
                got.append(int(s.run(out, options=T)))
            except errors.OutOfRangeError:
                break
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
    assert sorted(got) == list(range(20))


def test_coordinator_stop_cancels_blocked_runner_threads():
    g = ml.Graph()
    with g.as_default():
        q = ml.FIFOQueue(2, ml.float32, shapes=[[]])
        enq = q.enqueue(ml.constant(1.0))
        deq = q.dequeue()
        qr = ml.train.QueueRunner(q, [enq] * 3)
    with _session(g) as s:
        coord = ml.train.Coordinator()
        threads = qr.create_threads(s, coord=coord, daemon=True, start=True)
        assert len(threads) == 4  # 3 enqueue threads + the cancel watcher
        assert s.run(deq, options=T) == 1.0
        assert qr.create_threads(s, coord=coord) == []  # already running in s
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)  # no RuntimeError: all stopped
        assert not any(t.is_alive() for t in threads)
        assert s.run(q.is_closed())


def test_coordinator_reraises_thread_exception():
    g = ml.Graph()
    with g.as_default():
        q = ml.FIFOQueue(2, ml.float32, shapes=[[]])
        bad = ml.py_func(lambda: (_ for _ in ()).throw(RuntimeError("reader broke")), [],
                         ml.float32)
        bad.set_shape([])
        enq = q.enqueue(bad)
        qr = ml.train.QueueRunner(q, [enq])
    with _session(g) as s:
        coord = ml.train.Coordinator()
        threads = qr.create_threads(s, coord=coord, start=True)
        assert coord.wait_for_stop(5)
        with pytest.raises(Exception, match="reader broke"):
            coord.join(threads, stop_grace_period_secs=5)


def test_coordinator_api():
    coord = ml.train.Coordinator()
    assert not coord.should_stop()
    assert not coord.wait_for_stop(0.01)
    with coord.stop_on_exception():
        raise errors.OutOfRangeError("done")  # a clean stop: not re-raised
    assert coord.should_stop()
    coord.join([])
    coord.clear_stop()
    assert not coord.should_stop()
    with coord.stop_on_exception():
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        coord.raise_requested_exception()
    with pytest.raises(ValueError, match="boom"):
        coord.join([])
    coord.clear_stop()
    coord.request_stop(ValueError("first"))
    coord.request_stop(ValueError("second"))
    with pytest.raises(ValueError, match="first"):
        coord.join([])
    with pytest.raises(ValueError):
        ml.train.Coordinator().request_stop("not an exception")


def test_coordinator_grace_period_names_stragglers():
    coord = ml.train.Coordinator()
    release = threading.Event()
    th = threading.Thread(target=release.wait, args=(5,), name="stuck-thread", daemon=True)
    th.start()
    coord.request_stop()
    with pytest.raises(RuntimeError, match="stuck-thread"):
        coord.join([th], stop_grace_period_secs=0.1)
    release.set()
    th.join(5)


def test_example_queue_pipeline_runs():
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "queue_pipeline.py")
    spec = importlib.util.spec_from_file_location("queue_pipeline", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    done = []
    th = threading.Thread(target=lambda: done.append(
        mod.main(["--steps", "60", "--batch", "32", "--quiet"])), daemon=True)
    th.start()
    th.join(60)
    assert done, "the pipeline did not finish"
    loss, acc = done[0]
    assert np.isfinite(loss) and loss < 1.5
    assert acc > 0.7
    # The readers stopped cleanly.
    assert not [t for t in threading.enumerate() if t.name.startswith("QueueRunner")]
