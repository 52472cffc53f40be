"""Checkpoints: ml.train.Saver, the index file, global step, failure modes."""

import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import mylib as ml
from mylib import _fileio, errors
from mylib.runtime import saver as saver_mod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _vars(values, graph):
    with graph.as_default():
        return {n: ml.Variable(v, name=n) for n, v in values.items()}


def _values(sess, vs):
    return {n: sess.run(v) for n, v in vs.items()}


DTYPE_VALUES = {
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
    "f64": np.array([np.pi, -1e300, 5e-324]),
    "i64": np.array([2 ** 62, -(2 ** 63), 7], dtype=np.int64),
    "b": np.array([[True, False], [False, True]]),
    "bf16": np.array([1.5, -2.25, 3e38], dtype=ml_dtypes.bfloat16),
    "scalar_f32": np.float32(2.5),
    "scalar_i64": np.int64(-3),
    "empty": np.zeros((0, 4), np.float32),
}


def test_roundtrip_dtypes_and_shapes_into_fresh_graph(tmp_path):
    g = ml.Graph()
    vs = _vars(DTYPE_VALUES, g)
    with g.as_default(), ml.Session() as sess:
        sess.run(ml.global_variables_initializer())
        path = ml.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    assert path == str(tmp_path / "model.ckpt")
    assert os.path.isfile(path + ml.train.DATA_SUFFIX)
    # A fresh graph whose variables start elsewhere; restore without initializers.
    g2 = ml.Graph()
    zeros = {n: np.zeros_like(v) for n, v in DTYPE_VALUES.items()}
    vs2 = _vars(zeros, g2)
    with g2.as_default(), ml.Session() as sess:
        ml.train.Saver().restore(sess, path)
        got = _values(sess, vs2)
    for n, want in DTYPE_VALUES.items():
        want = np.asarray(want)
        assert got[n].dtype == want.dtype, n
        assert got[n].shape == want.shape, n
        np.testing.assert_array_equal(got[n], want, err_msg=n)
    assert sorted(ml.train.list_variables(path)) == sorted(
        (n, list(np.shape(v))) for n, v in DTYPE_VALUES.items())
    np.testing.assert_array_equal(ml.train.load_variable(path, "i64"), DTYPE_VALUES["i64"])
    assert vs  # silence unused


def test_var_list_dict_renames_and_list_subset(tmp_path):
    g = ml.Graph()
    with g.as_default():
        a = ml.Variable(np.float32(1.0), name="a")
        b = ml.Variable(np.float32(2.0), name="b")
        with ml.Session() as sess:
            sess.run(ml.global_variables_initializer())
            p = ml.train.Saver({"enc/x": a, "dec/y": b}).save(sess, str(tmp_path / "m"))
    assert sorted(n for n, _ in ml.train.list_variables(p)) == ["dec/y", "enc/x"]
    g2 = ml.Graph()
    with g2.as_default():
        x = ml.Variable(np.float32(0.0), name="other_x")
        y = ml.Variable(np.float32(0.0), name="other_y")
        with ml.Session() as sess:
            ml.train.Saver({"enc/x": x}).restore(sess, p)   # a subset of the checkpoint
            assert sess.run(x) == 1.0
            with pytest.raises(errors.FailedPreconditionError):
                sess.run(y)                                   # untouched
            ml.train.Saver([y], allow_empty=False)  # list form builds
            with pytest.raises(errors.NotFoundError, match="other_y"):
                ml.train.Saver([y]).restore(sess, p)


def test_var_list_errors():
    g = ml.Graph()
    with g.as_default():
        a = ml.Variable(1.0, name="a")
        with pytest.raises(ValueError, match="twice"):
            ml.train.Saver([a, a])
        with pytest.raises(TypeError):
            ml.train.Saver([a.value()])
    with ml.Graph().as_default():
        with pytest.raises(ValueError, match="No variables to save"):
            ml.train.Saver()
        assert ml.train.Saver(allow_empty=True).save(None, "/nonexistent/x") is None


def _index(d):
    with open(os.path.join(d, "checkpoint")) as f:
        return f.read()


def test_global_step_max_to_keep_and_index(tmp_path):
    g = ml.Graph()
    with g.as_default():
        w = ml.Variable(np.zeros(3, np.float32), name="w")
        step = ml.train.get_or_create_global_step()
        assert ml.train.get_or_create_global_step() is step
        assert ml.train.get_global_step() is step
        assert step.op.name == "global_step" and step.dtype == ml.int64
        assert step in ml.get_collection(ml.GraphKeys.GLOBAL_STEP)
        assert step in ml.global_variables() and step not in ml.trainable_variables()
        with pytest.raises(ValueError, match="already exists"):
            ml.train.create_global_step()
        inc = step.assign_add(1)
        upd = w.assign_add(np.ones(3, np.float32))
        saver = ml.train.Saver(max_to_keep=2)
        prefix = str(tmp_path / "model.ckpt")
        with ml.Session() as sess:
            sess.run(ml.global_variables_initializer())
            assert ml.train.latest_checkpoint(str(tmp_path)) is None
            written = []
            for i in range(4):
                sess.run([inc, upd])
                written.append(saver.save(sess, prefix, global_step=step))
            assert written == [f"{prefix}-{i}" for i in (1, 2, 3, 4)]
            # int and tensor global steps too
            assert saver.save(sess, prefix, global_step=np.int64(10)) == prefix + "-10"
            assert saver.save(sess, prefix, global_step=step.value()) == prefix + "-4"
    assert saver.last_checkpoints == [prefix + "-10", prefix + "-4"]
    files = sorted(f for f in os.listdir(tmp_path) if not f.startswith("."))
    assert files == ["checkpoint", "model.ckpt-10.meta", "model.ckpt-10.mylib",
                     "model.ckpt-4.meta", "model.ckpt-4.mylib"]  # .meta by default, as TF1
    text = _index(tmp_path)
    assert 'model_checkpoint_path: "model.ckpt-4"' in text
    assert [ln for ln in text.splitlines() if ln.startswith("all_model_checkpoint_paths")] == [
        'all_model_checkpoint_paths: "model.ckpt-10"',
        'all_model_checkpoint_paths: "model.ckpt-4"']
    assert ml.train.latest_checkpoint(str(tmp_path)) == prefix + "-4"
    st = ml.train.get_checkpoint_state(str(tmp_path))
    assert st.all_model_checkpoint_paths == [prefix + "-10", prefix + "-4"]
    np.testing.assert_array_equal(ml.train.load_variable(str(tmp_path), "w"), [4, 4, 4])
    assert ml.train.load_variable(str(tmp_path), "global_step") == 4
    # a new saver adopts the old list, so max_to_keep keeps counting them
    with g.as_default():
        s2 = ml.train.Saver(max_to_keep=2)
    s2.recover_last_checkpoints(st.all_model_checkpoint_paths + [prefix + "-1"])
    assert s2.last_checkpoints == [prefix + "-10", prefix + "-4"]


def test_relative_paths_move_with_directory_and_latest_missing(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    g = ml.Graph()
    with g.as_default():
        v = ml.Variable(np.float32(3.0), name="v")
        with ml.Session() as sess:
            sess.run(v.initializer)
            ml.train.Saver().save(sess, str(d / "m"), global_step=7)
    moved = tmp_path / "moved"
    os.rename(d, moved)
    assert ml.train.latest_checkpoint(str(moved)) == str(moved / "m-7")
    os.remove(moved / "m-7.mylib")
    assert ml.train.latest_checkpoint(str(moved)) is None
    assert not ml.train.checkpoint_exists(str(moved / "m-7"))


def test_keep_checkpoint_every_n_hours(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(saver_mod, "_now", lambda: clock[0])
    g = ml.Graph()
    with g.as_default():
        v = ml.Variable(np.float32(0.0), name="v")
        saver = ml.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=1)
        with ml.Session() as sess:
            sess.run(v.initializer)
            for step in range(6):  # one save every 30 minutes
                saver.save(sess, str(tmp_path / "m"), global_step=step)
                clock[0] += 1800
    kept = sorted(f for f in os.listdir(tmp_path) if f.endswith(".mylib"))
    # step 0 at t=1000 and 1 at t=2800 are within the first hour (deadline 4600):
    # deleted; 2 (t=4600) is not past it; 3 (t=6400) is kept, next deadline 8200;
    # 4 (t=8200) is not past it; 5 is the newest.
    assert kept == ["m-3.mylib", "m-5.mylib"]
    assert saver.last_checkpoints == [str(tmp_path / "m-5")]


def test_max_to_keep_none_keeps_all_files(tmp_path):
    g = ml.Graph()
    with g.as_default():
        v = ml.Variable(np.float32(0.0), name="v")
        saver = ml.train.Saver(max_to_keep=None)
        with ml.Session() as sess:
            sess.run(v.initializer)
            for step in range(3):
                saver.save(sess, str(tmp_path / "m"), global_step=step)
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".mylib")]) == 3
    assert ml.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "m-2")


def _saved(tmp_path, values=None):
    values = values or {"w": np.arange(4, dtype=np.float32), "b": np.float32(1.5)}
    g = ml.Graph()
    _vars(values, g)
    with g.as_default(), ml.Session() as sess:
        sess.run(ml.global_variables_initializer())
        return ml.train.Saver().save(sess, str(tmp_path / "model.ckpt"))


def _restore_into(path, values):
    """Restores into fresh variables initialized to `values`; returns (error, values
    after the attempt)."""
    g = ml.Graph()
    vs = _vars(values, g)
    with g.as_default(), ml.Session() as sess:
        sess.run(ml.global_variables_initializer())
        err = None
        try:
            ml.train.Saver().restore(sess, path)
        except Exception as e:  # noqa: BLE001
            err = e
        return err, _values(sess, vs)


def _unchanged(after, before):
    for n in before:
        np.testing.assert_array_equal(after[n], before[n])


def test_missing_variable_raises_not_found_and_changes_nothing(tmp_path):
    p = _saved(tmp_path)
    before = {"w": np.full(4, 9, np.float32), "b": np.float32(9), "extra": np.float32(9)}
    err, after = _restore_into(p, before)
    assert isinstance(err, errors.NotFoundError)
    assert "extra" in str(err) and p in str(err)
    _unchanged(after, before)


def test_shape_mismatch_raises_with_both_shapes_and_changes_nothing(tmp_path):
    p = _saved(tmp_path)
    before = {"b": np.float32(9), "w": np.full((2, 2), 9, np.float32)}  # b would load first
    err, after = _restore_into(p, before)
    assert isinstance(err, errors.InvalidArgumentError)
    assert "(2, 2)" in str(err) and "(4,)" in str(err) and "'w'" in str(err)
    _unchanged(after, before)


def test_dtype_mismatch_raises_and_changes_nothing(tmp_path):
    p = _saved(tmp_path)
    before = {"b": np.float32(9), "w": np.full(4, 9, np.float64)}
    err, after = _restore_into(p, before)
    assert isinstance(err, errors.InvalidArgumentError)
    assert "float64" in str(err) and "float32" in str(err)
    _unchanged(after, before)


@pytest.mark.parametrize("damage,match", [
    ("truncate", "truncated"),
    ("truncate_header", "truncated"),
    ("flip", "checksum"),
    ("flip_index", "index checksum"),
    ("trailing", "unexpected bytes"),
    ("foreign", "not a mylib checkpoint"),
    ("empty", "not a mylib checkpoint"),
    ("version", "version 99"),
])
def test_damaged_files_raise_data_loss_and_change_nothing(tmp_path, damage, match):
    p = _saved(tmp_path)
    f = p + ml.train.DATA_SUFFIX
    data = open(f, "rb").read()
    if damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "truncate_header":
        data = data[:10]
    elif damage == "flip":  # one bit inside the array data of 'w'
        i = data.index(np.arange(4, dtype=np.float32).tobytes()) + 5
        data = data[:i] + bytes([data[i] ^ 1]) + data[i + 1:]
    elif damage == "flip_index":
        data = data[:40] + bytes([data[40] ^ 1]) + data[41:]
    elif damage == "trailing":
        data = data + b"\0"
    elif damage == "foreign":
        np.save(f + ".npy", np.arange(10))
        data = open(f + ".npy", "rb").read()
    elif damage == "empty":
        data = b""
    elif damage == "version":
        data = data[:8] + (99).to_bytes(4, "little") + data[12:]
    with open(f, "wb") as fh:
        fh.write(data)
    before = {"w": np.full(4, 9, np.float32), "b": np.float32(9)}
    err, after = _restore_into(p, before)
    assert isinstance(err, errors.DataLossError), err
    assert match in str(err) and f in str(err)
    _unchanged(after, before)


def test_restore_nonexistent_and_none(tmp_path):
    with ml.Graph().as_default():
        ml.Variable(1.0, name="v")
        with ml.Session() as sess:
            with pytest.raises(errors.NotFoundError, match="Failed to find"):
                ml.train.Saver().restore(sess, str(tmp_path / "nope"))
            with pytest.raises(ValueError, match="None"):
                ml.train.Saver().restore(sess, None)


def test_save_uninitialized_and_bad_dir(tmp_path):
    with ml.Graph().as_default():
        ml.Variable(1.0, name="ready")
        ml.Variable(2.0, name="not_ready")
        with ml.Session() as sess:
            sess.run(ml.get_default_graph().get_operation_by_name("ready/Assign"))
            with pytest.raises(errors.FailedPreconditionError, match="not_ready"):
                ml.train.Saver().save(sess, str(tmp_path / "m"))
            sess.run(ml.global_variables_initializer())
            with pytest.raises(ValueError, match="doesn't exist"):
                ml.train.Saver().save(sess, str(tmp_path / "no_dir" / "m"))
    assert os.listdir(tmp_path) == []


def _two_saves(tmp_path, crash):
    """Saves v=1 at step 1, then tries to save v=2 at step 2 with `crash` patched in."""
    g = ml.Graph()
    with g.as_default():
        v = ml.Variable(np.arange(1000, dtype=np.float32), name="v")
        saver = ml.train.Saver()
        with ml.Session() as sess:
            sess.run(v.initializer)
            first = saver.save(sess, str(tmp_path / "m"), global_step=1)
            sess.run(v.assign_add(np.ones(1000, np.float32)))
            with crash():
                saver.save(sess, str(tmp_path / "m"), global_step=2)
    return first


def test_crash_mid_write_leaves_previous_checkpoint(tmp_path, monkeypatch):
    real = _fileio._write_chunks

    class Boom(Exception):
        pass

    def half_then_raise(f, chunks):
        data = b"".join(bytes(c) for c in chunks)
        real(f, [data[:len(data) // 2]])
        raise Boom("disk gone")

    import contextlib

    @contextlib.contextmanager
    def crash():
        monkeypatch.setattr(_fileio, "_write_chunks", half_then_raise)
        with pytest.raises(Boom):
            yield

    first = _two_saves(tmp_path, crash)
    assert ml.train.latest_checkpoint(str(tmp_path)) == first
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-1.meta", "m-1.mylib"]  # temp file removed
    err, after = _restore_into(first, {"v": np.zeros(1000, np.float32)})
    assert err is None
    np.testing.assert_array_equal(after["v"], np.arange(1000, dtype=np.float32))


def test_killed_process_mid_save_leaves_previous_checkpoint(tmp_path):
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {ROOT!r})
        import numpy as np, mylib as ml
        from mylib import _fileio as F
        real = F._write_chunks
        def die(f, chunks):
            data = b"".join(bytes(c) for c in chunks)
            real(f, [data[:len(data) // 2]]); f.flush()
            os._exit(17)   # the process dies mid-write: no cleanup, no rename
        v = ml.Variable(np.arange(1000, dtype=np.float32), name="v")
        saver = ml.train.Saver()
        with ml.Session() as sess:
            sess.run(v.initializer)
            saver.save(sess, {str(tmp_path / "m")!r}, global_step=1)
            sess.run(v.assign_add(np.ones(1000, np.float32)))
            F._write_chunks = die
            saver.save(sess, {str(tmp_path / "m")!r}, global_step=2)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 17, r.stderr
    leftovers = [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    assert len(leftovers) == 1  # the half-written temp file
    first = str(tmp_path / "m-1")
    assert ml.train.latest_checkpoint(str(tmp_path)) == first
    assert not ml.train.checkpoint_exists(str(tmp_path / "m-2"))
    err, after = _restore_into(first, {"v": np.zeros(1000, np.float32)})
    assert err is None
    np.testing.assert_array_equal(after["v"], np.arange(1000, dtype=np.float32))


# ---------------------------------------------------------------- continue training
RNG = np.random.default_rng(0)
X = RNG.normal(size=(16, 5)).astype(np.float32)
Y = RNG.normal(size=(16, 1)).astype(np.float32)


def _momentum_model():
    """Linear regression with a hand-written momentum update (slot = a Variable)."""
    w = ml.Variable(np.linspace(-1, 1, 5, dtype=np.float32).reshape(5, 1), name="w")
    vel = ml.Variable(np.zeros((5, 1), np.float32), name="w_momentum", trainable=False)
    step = ml.train.get_or_create_global_step()
    loss = ml.reduce_mean(ml.square(ml.matmul(ml.constant(X), w) - ml.constant(Y)))
    (grad,) = ml.gradients(loss, [w])
    new_vel = vel.assign(0.9 * vel.value() + grad)
    with ml.control_dependencies([new_vel]):
        upd = w.assign_sub(0.05 * new_vel, read_value=False)
    with ml.control_dependencies([upd]):
        train = step.assign_add(1, read_value=False)
    return train, loss


def _optax_model(kind):
    w = ml.Variable(np.linspace(-1, 1, 5, dtype=np.float32).reshape(5, 1), name="w")
    b = ml.Variable(np.zeros(1, np.float32), name="b")
    loss = ml.reduce_mean(ml.square(ml.matmul(ml.constant(X), w) + b - ml.constant(Y)))
    opt = (ml.optimizers.SGD(0.05, momentum=0.9) if kind == "sgd"
           else ml.optimizers.Adam(0.01))
    return opt.minimize(loss), loss


def _run(build, n, m, tmp_path):
    """Losses of n+m steps uninterrupted, and of n steps, save, fresh graph, restore,
    m steps; plus final variable values of both."""
    g = ml.Graph()
    with g.as_default():
        train, loss = build()
        with ml.Session() as sess:
            sess.run(ml.global_variables_initializer())
            straight = [float(sess.run([train, loss])[1]) for _ in range(n + m)]
            final_a = {v._key: sess.run(v) for v in ml.global_variables()}
    g1 = ml.Graph()
    with g1.as_default():
        train, loss = build()
        with ml.Session() as sess:
            sess.run(ml.global_variables_initializer())
            first = [float(sess.run([train, loss])[1]) for _ in range(n)]
            path = ml.train.Saver().save(sess, str(tmp_path / "ckpt"))
    g2 = ml.Graph()
    with g2.as_default():
        train, loss = build()
        with ml.Session() as sess:
            ml.train.Saver().restore(sess, path)   # no initializer run
            second = [float(sess.run([train, loss])[1]) for _ in range(m)]
            final_b = {v._key: sess.run(v) for v in ml.global_variables()}
    return straight, first + second, final_a, final_b


@pytest.mark.parametrize("kind", ["momentum_by_hand", "sgd", "adam"])
def test_save_restore_continues_training_exactly(tmp_path, kind):
    build = _momentum_model if kind == "momentum_by_hand" else (lambda: _optax_model(kind))
    straight, resumed, fa, fb = _run(build, 7, 5, tmp_path)
    assert len(fa) >= 2 and fa.keys() == fb.keys()
    if kind != "momentum_by_hand":
        assert len(fa) > 3  # slots and the iteration counter are saved too
    np.testing.assert_allclose(resumed, straight, rtol=1e-6, atol=1e-7)
    for k in fa:
        np.testing.assert_allclose(fb[k], fa[k], rtol=1e-6, atol=1e-7, err_msg=k)


def test_save_while_another_thread_trains_is_a_consistent_snapshot(tmp_path):
    import threading

    g = ml.Graph()
    with g.as_default():
        a = ml.Variable(np.zeros(1000, np.float32), name="a")
        b = ml.Variable(np.int64(0), name="b")
        step = ml.group(a.assign_add(np.ones(1000, np.float32), read_value=False),
                        b.assign_add(1, read_value=False))
        saver = ml.train.Saver(max_to_keep=None)
        with ml.Session() as sess:
            sess.run(ml.global_variables_initializer())
            stop = threading.Event()

            def train():
                while not stop.is_set():
                    sess.run(step)

            t = threading.Thread(target=train)
            t.start()
            try:
                paths = [saver.save(sess, str(tmp_path / "m"), global_step=i)
                         for i in range(10)]
            finally:
                stop.set()
                t.join()
    for p in paths:
        vals = ml.train.load_checkpoint(p)
        assert np.all(vals["a"] == vals["b"]), p  # both from the same step


def test_write_meta_graph_files_follow_max_to_keep(tmp_path):
    with ml.Graph().as_default():
        v = ml.Variable(np.float32(3), name="v")
        saver = ml.train.Saver(max_to_keep=1)
        with ml.Session() as sess:
            sess.run(v.initializer)
            for i in range(2):
                saver.save(sess, str(tmp_path / "m"), global_step=i, write_meta_graph=True)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-1.meta", "m-1.mylib"]
