"""A crafted `checkpoint` index cannot reach outside its directory, and temporaries of
saves killed with -9 are removed by the next save."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import mylib as ml
from mylib import _fileio, errors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _saver_and_session():
    v = ml.Variable(np.arange(4, dtype=np.float32), name="v")
    sess = ml.Session()
    sess.run(v.initializer)
    return v, sess


@pytest.mark.parametrize("listed", ["../victim/precious", "ABS", "sub/../../victim/precious"])
def test_crafted_index_cannot_delete_outside_its_directory(tmp_path, listed):
    ckpt, victim = tmp_path / "ckpt", tmp_path / "victim"
    ckpt.mkdir()
    victim.mkdir()
    precious = victim / "precious"
    for suffix in (".mylib", ".meta"):  # what remove_checkpoint would delete
        (victim / ("precious" + suffix)).write_bytes(b"precious data")
    if listed == "ABS":
        listed = str(precious)
    (ckpt / "checkpoint").write_text(
        f'model_checkpoint_path: "{listed}"\nall_model_checkpoint_paths: "{listed}"\n')

    with ml.Graph().as_default():
        _, sess = _saver_and_session()
        saver = ml.train.Saver(max_to_keep=1)
        with pytest.raises(errors.PermissionDeniedError,
                           match=r"names '.*precious', which is outside its directory"):
            ml.train.get_checkpoint_state(str(ckpt))
        with pytest.raises(errors.PermissionDeniedError):
            ml.train.latest_checkpoint(str(ckpt))
        with pytest.raises(errors.PermissionDeniedError):
            ml.train.load_checkpoint(str(ckpt))
        # Paths handed over directly (not from an index) are adopted only when they
        # are mylib checkpoints: the victim's files are not.
        saver.recover_last_checkpoints([str(precious)])
        assert saver.last_checkpoints == []
        saver.save(sess, str(ckpt / "model"), global_step=1)
        saver.save(sess, str(ckpt / "model"), global_step=2)
        sess.close()
    assert sorted(os.listdir(victim)) == ["precious.meta", "precious.mylib"]
    # The saver rewrote the index with its own (relative) paths only.
    assert ml.train.latest_checkpoint(str(ckpt)) == str(ckpt / "model-2")
    assert sorted(os.listdir(ckpt)) == ["checkpoint", "model-2.meta", "model-2.mylib"]


def test_index_through_a_link_leading_outside_is_refused(tmp_path):
    ckpt, outside = tmp_path / "ckpt", tmp_path / "outside"
    ckpt.mkdir()
    outside.mkdir()
    os.symlink(outside, ckpt / "link")
    (ckpt / "checkpoint").write_text('model_checkpoint_path: "link/model"\n')
    with pytest.raises(errors.PermissionDeniedError, match="link/model"):
        ml.train.get_checkpoint_state(str(ckpt))


def test_absolute_paths_inside_the_directory_still_work(tmp_path):
    with ml.Graph().as_default():
        v, sess = _saver_and_session()
        saver = ml.train.Saver(save_relative_paths=False)
        prefix = saver.save(sess, str(tmp_path / "m"), global_step=3)
        text = (tmp_path / "checkpoint").read_text()
        assert f'"{tmp_path / "m-3"}"' in text  # absolute, as asked
        st = ml.train.get_checkpoint_state(str(tmp_path))
        assert st.model_checkpoint_path == prefix
        assert ml.train.latest_checkpoint(str(tmp_path)) == prefix
        sess.run(v.assign(np.zeros(4, np.float32)))
        saver.restore(sess, ml.train.latest_checkpoint(str(tmp_path)))
        np.testing.assert_array_equal(sess.run(v), np.arange(4, dtype=np.float32))
        sess.close()


def _kill_mid_save_script(path, ready):
    return textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {ROOT!r})
        import numpy as np, mylib as ml
        from mylib import _fileio as F
        real = F._write_chunks
        def hang(f, chunks):
            data = b"".join(bytes(c) for c in chunks)
            real(f, [data[:len(data) // 2]]); f.flush()
            open({ready!r}, "w").close()
            time.sleep(120)   # killed with -9 here, mid-write
        v = ml.Variable(np.arange(1000, dtype=np.float32), name="v")
        saver = ml.train.Saver()
        with ml.Session() as sess:
            sess.run(v.initializer)
            saver.save(sess, {path!r}, global_step=1)
            F._write_chunks = hang
            saver.save(sess, {path!r}, global_step=2)
    """)


@pytest.mark.slow
def test_temp_of_a_save_killed_with_sigkill_is_removed_by_the_next_save(tmp_path):
    ready = str(tmp_path / "ready")
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    proc = subprocess.Popen([sys.executable, "-c",
                             _kill_mid_save_script(str(ckpt / "m"), ready)],
                            stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 120
        while not os.path.exists(ready):
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.time() < deadline, "the subprocess never reached the save"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    stray = [f for f in os.listdir(ckpt) if f.endswith(".tmp")]
    assert len(stray) == 1 and stray[0].startswith(".m-2.mylib.")
    assert f"-{proc.pid}-" in stray[0]  # the dead writer's pid is in the name

    # A live writer's temporary (this process) is never touched.
    live = ckpt / f".m-9.mylib.{_fileio.owner_tag()}-abcdefgh.tmp"
    live.write_bytes(b"being written")
    with ml.Graph().as_default():
        _, sess = _saver_and_session()
        saver = ml.train.Saver()
        saver.save(sess, str(ckpt / "m"), global_step=3)  # another step, same prefix
        sess.close()
    left = sorted(os.listdir(ckpt))
    assert stray[0] not in left
    assert live.name in left
    assert ml.train.latest_checkpoint(str(ckpt)) == str(ckpt / "m-3")


def test_only_mylib_temporaries_of_dead_writers_are_removed(tmp_path):
    host = _fileio.owner_tag().split("-")[0]
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                       capture_output=True, text=True, check=True)
    dead = int(p.stdout)  # a pid that has exited (and was reaped)
    names = {
        f".w.json.{host}-{dead}-abcd1234.tmp": False,        # dead writer: removed
        f".w.json.{host}-{os.getpid()}-abcd1234.tmp": True,  # live writer: kept
        f".w.json.0badc0de-{dead}-abcd1234.tmp": True,       # another host: kept
        f".other.{host}-{dead}-abcd1234.tmp": True,          # another target: kept
        f"w.json.{host}-{dead}-abcd1234.tmp": True,          # not mylib's pattern
        ".w.json.abcd1234.tmp": True,                        # old naming, recent: kept
        ".w.json.old12345.tmp": False,                       # old naming, 2 days: removed
    }
    for n in names:
        (tmp_path / n).write_bytes(b"x")
    two_days = time.time() - 2 * 86400
    os.utime(tmp_path / ".w.json.old12345.tmp", (two_days, two_days))
    _fileio.atomic_write(str(tmp_path / "w.json"), "{}")
    left = set(os.listdir(tmp_path))
    for n, kept in names.items():
        assert (n in left) == kept, n
    assert (tmp_path / "w.json").read_text() == "{}"


def test_update_checkpoint_state_writes_only_paths_inside_the_directory(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    with pytest.raises(ValueError, match="is not inside save_dir"):
        ml.train.update_checkpoint_state(str(d), str(tmp_path / "elsewhere"))
    ml.train.update_checkpoint_state(str(d), str(d / "m-2"),
                                     [str(tmp_path / "old" / "m-1"), str(d / "m-2")])
    text = (d / "checkpoint").read_text()
    assert text == 'model_checkpoint_path: "m-2"\nall_model_checkpoint_paths: "m-2"\n'
