"""A process killed with -9 at a random point of a save loop (TF1 `Saver.save` with
`max_to_keep` rotation and its `checkpoint` index, `FileWriter` events) leaves every
file it reported as written loadable with its values, and nothing half-written is
picked up; `FileWriter.flush` writes every event added before it, and a closed writer
reopens onto a new file."""

import glob
import os
import random
import select
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import mylib as ml
from mylib import errors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_CHILD = textwrap.dedent("""
    import os, sys
    import numpy as np
    import mylib as ml

    d = sys.argv[1]
    v = ml.Variable(np.zeros((300, 300), np.float32), name="v")
    w = ml.Variable(np.zeros((7,), np.int64), name="w")
    step = ml.placeholder(ml.int64, [])
    set_all = [v.assign(ml.fill([300, 300], ml.cast(step, ml.float32))),
               w.assign(ml.fill([7], step))]
    sess = ml.Session()
    sess.run(ml.global_variables_initializer())
    saver = ml.train.Saver(max_to_keep=2)
    writer = ml.summary.FileWriter(os.path.join(d, "events"))
    for i in range(1, 10 ** 6):
        sess.run(set_all, {step: i})
        saver.save(sess, os.path.join(d, "model.ckpt"), global_step=i)
        writer.add_summary(ml.Summary(value=[ml.Summary.Value(tag="i", simple_value=i)]), i)
        writer.flush()
        sys.stdout.write(f"{i}\\n")
        sys.stdout.flush()
""")


def run_and_kill(args, first_wait=120.0, extra=(0.0, 1.0)):
    """Starts `python -c <args>`, waits for its first line of output, lets it run a
    random further time in `extra` seconds, kills it with SIGKILL; returns the last
    integer it printed (what it reported as fully written)."""
    proc = subprocess.Popen([sys.executable, "-c", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": ROOT})
    last, t_first = 0, None
    kill_after = random.uniform(*extra)
    buf = b""
    try:
        deadline = time.time() + first_wait
        while True:
            now = time.time()
            if t_first is not None and now - t_first >= kill_after:
                break
            assert now < deadline, "the subprocess never reported a save"
            r, _, _ = select.select([proc.stdout], [], [], 0.005)
            if r:
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                if lines:
                    last = int(lines[-1])
                    t_first = t_first or time.time()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        # Lines that were already on their way before the kill still count.
        rest = buf + proc.stdout.read()
        done = [x for x in rest.split(b"\n")[:-1] if x.strip()]
        if done:
            last = int(done[-1])
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    return last


@pytest.mark.parametrize("seed", [0, 1])
def test_saver_and_event_writer_killed_at_random_points(tmp_path, seed):
    random.seed(seed)
    last = run_and_kill([_CHILD, str(tmp_path)])
    assert last >= 1

    # The index names a loadable checkpoint at least as new as the last one reported,
    # and every checkpoint it lists holds one step's values throughout.
    state = ml.train.get_checkpoint_state(str(tmp_path))
    latest = ml.train.latest_checkpoint(str(tmp_path))
    assert latest == state.model_checkpoint_path
    assert int(latest.rsplit("-", 1)[1]) >= last
    with ml.Graph().as_default():
        v = ml.Variable(np.full((300, 300), -1, np.float32), name="v")
        w = ml.Variable(np.full((7,), -1, np.int64), name="w")
        sess = ml.Session()
        saver = ml.train.Saver(max_to_keep=2)
        for prefix in state.all_model_checkpoint_paths:
            k = int(prefix.rsplit("-", 1)[1])
            saver.restore(sess, prefix)
            got_v, got_w = sess.run([v, w])
            np.testing.assert_array_equal(got_v, np.full((300, 300), k, np.float32))
            np.testing.assert_array_equal(got_w, np.full((7,), k, np.int64))
        with ml.Graph().as_default():  # its graph file is whole too
            ml.train.import_meta_graph(latest + ".meta")

        # A restarted run saves into the same directory: the killed writer's temporary
        # is gone and the index names the new checkpoint.
        saver.save(sess, str(tmp_path / "model.ckpt"), global_step=10 ** 6)
        sess.close()
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    assert ml.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-1000000")

    # Every event flushed before the last reported step is in the file, in order;
    # a record cut by the kill can only follow them.
    (events,) = glob.glob(str(tmp_path / "events" / "*tfevents*"))
    steps = []
    try:
        for ev in ml.train.summary_iterator(events):
            if ev.HasField("summary"):
                assert ev.summary.value[0].simple_value == ev.step
                steps.append(ev.step)
    except errors.DataLossError as e:
        assert "truncated" in str(e)
    assert steps[:last] == list(range(1, last + 1))


def _summary(i):
    return ml.Summary(value=[ml.Summary.Value(tag="x", simple_value=float(i))])


def _event_steps(path):
    return [ev.step for ev in ml.train.summary_iterator(path) if ev.HasField("summary")]


def test_flush_writes_every_event_added_before_it(tmp_path):
    # A queue smaller than the events added and a flush interval that never comes:
    # only flush itself can have written them.
    w = ml.summary.FileWriter(str(tmp_path), max_queue=3, flush_secs=3600)
    for i in range(50):
        w.add_summary(_summary(i), i)
    w.flush()
    (path,) = glob.glob(str(tmp_path / "*tfevents*"))
    assert _event_steps(path) == list(range(50))
    w.close()


def test_reopen_after_close_writes_a_new_file(tmp_path):
    w = ml.summary.FileWriter(str(tmp_path))
    w.add_summary(_summary(1), 1)
    w.close()
    with pytest.raises(RuntimeError, match="closed"):
        w.add_summary(_summary(2), 2)
    w.reopen()  # within the same second: must not truncate the first file
    w.add_summary(_summary(2), 2)
    w.close()
    files = sorted(glob.glob(str(tmp_path / "*tfevents*")))
    assert len(files) == 2
    assert sorted(_event_steps(f) for f in files) == [[1], [2]]


def test_writer_cache_reopens_a_closed_writer(tmp_path):
    logdir = str(tmp_path / "cached")
    try:
        w = ml.summary.FileWriterCache.get(logdir)
        w.add_summary(_summary(1), 1)
        w.close()
        w2 = ml.summary.FileWriterCache.get(logdir)
        assert w2 is w
        w2.add_summary(_summary(2), 2)
        w2.flush()
    finally:
        ml.summary.FileWriterCache.clear()
    steps = sorted(s for f in glob.glob(logdir + "/*tfevents*") for s in _event_steps(f))
    assert steps == [1, 2]


def test_events_pending_at_exit_are_written(tmp_path):
    script = textwrap.dedent("""
        import sys
        import mylib as ml
        w = ml.summary.FileWriter(sys.argv[1], flush_secs=3600)
        for i in range(20):
            w.add_summary(ml.Summary(value=[ml.Summary.Value(tag="x", simple_value=i)]), i)
    """)
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, timeout=120,
                   env={**os.environ, "PYTHONPATH": ROOT})
    (path,) = glob.glob(str(tmp_path / "*tfevents*"))
    assert _event_steps(path) == list(range(20))


def test_record_claiming_more_than_the_file_is_refused_before_reading(tmp_path):
    # A 2 GiB length (with a valid header checksum) in a 40-byte file: the reader
    # must not allocate the claimed record. The address space is capped at what the
    # process already maps plus 1 GiB, so an attempt would be a MemoryError.
    import struct as _struct

    from tensorboardX.record_writer import masked_crc32c

    path = tmp_path / "events.out.tfevents.crafted"
    header = _struct.pack("<Q", (1 << 31) - 1)
    path.write_bytes(header + _struct.pack("<I", masked_crc32c(header)) + b"\0" * 28)
    script = textwrap.dedent(f"""
        import resource
        import mylib as ml
        from mylib import errors
        import google.protobuf, tensorboardX.proto.event_pb2, tensorboardX.record_writer
        vm = [l for l in open("/proc/self/status") if l.startswith("VmSize")][0]
        cap = int(vm.split()[1]) * 1024 + (1 << 30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        try:
            list(ml.train.summary_iterator({str(path)!r}))
        except errors.DataLossError as e:
            print("DataLossError", e)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": ROOT})
    assert out.stdout.startswith("DataLossError"), out.stdout + out.stderr[-2000:]
    assert "claims 2147483647 bytes" in out.stdout
