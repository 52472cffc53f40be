"""A Keras process killed with -9 at a random point of a save loop (`Model.save` to
``.keras`` and ``.h5`` names, `save_weights` to ``.weights.h5``, the training state
that `BackupAndRestore` writes, `ModelCheckpoint(save_best_only=True)` inside fit)
leaves each file whole: it loads, with one save's values throughout, at least as new
as the last save the process reported, and no temporary is left to be picked up."""

import os
import random
import select
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
from mylib import keras

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_CHILD = textwrap.dedent("""
    import os, sys
    import numpy as np
    from mylib import keras

    d = sys.argv[1]
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(256),
                              keras.layers.Dense(3)])
    model.compile("adam", "mse")
    x = np.random.rand(32, 64).astype("float32")
    model.fit(x, np.random.rand(32, 3).astype("float32"), epochs=1, verbose=0)

    class Say(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            sys.stdout.write(f"best {epoch}\\n")
            sys.stdout.flush()

    for i in range(1, 10 ** 6):
        model.set_weights([np.full(w.shape, i, np.float32) for w in model.get_weights()])
        model.save(os.path.join(d, "m.keras"))
        model.save(os.path.join(d, "m.h5"))
        model.save_weights(os.path.join(d, "m.weights.h5"))
        model.save_training_state(os.path.join(d, "state.mylib"), {"i": i})
        sys.stdout.write(f"{i}\\n")
        sys.stdout.flush()
        if i == 3:  # then a fit whose checkpoint callback saves every epoch
            model.fit(x, x[:, :3] * 0, epochs=10 ** 6, verbose=0, callbacks=[
                keras.callbacks.ModelCheckpoint(os.path.join(d, "best.keras"),
                                                monitor="loss", save_best_only=True),
                Say()])
""")


def _run_and_kill(args, kill_after):
    """Runs `python -c args`, kills it with SIGKILL `kill_after` seconds after its
    first line of output (within 120 s); returns every line it printed."""
    proc = subprocess.Popen([sys.executable, "-c", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": ROOT})
    out, t_first = b"", None
    try:
        deadline = time.time() + 120
        while t_first is None or time.time() - t_first < kill_after:
            assert time.time() < deadline, "the subprocess never reported a save"
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            r, _, _ = select.select([proc.stdout], [], [], 0.005)
            if r:
                out += os.read(proc.stdout.fileno(), 65536)
                if t_first is None and b"\n" in out:
                    t_first = time.time()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        out += proc.stdout.read()
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    return [x.decode() for x in out.split(b"\n")[:-1]]


def _model():
    return keras.Sequential([keras.Input((64,)), keras.layers.Dense(256),
                             keras.layers.Dense(3)])


def _one_value(weights):
    v = weights[0].flat[0]
    assert all((w == v).all() for w in weights), "a file mixes two saves"
    return int(v)


def test_keras_saves_killed_at_random_points(tmp_path):
    lines = _run_and_kill([_CHILD, str(tmp_path)], random.uniform(0.0, 1.5))
    saves = [int(x) for x in lines if x.isdigit()]
    assert saves, lines
    last = saves[-1]

    for name in ("m.keras", "m.h5"):
        m = keras.models.load_model(str(tmp_path / name))
        assert _one_value(m.get_weights()) >= last
    m = _model()
    m.load_weights(str(tmp_path / "m.weights.h5"))
    assert _one_value(m.get_weights()) >= last
    m = _model()
    m.compile("adam", "mse")
    extra = m.load_training_state(str(tmp_path / "state.mylib"))
    assert extra["i"] >= last and _one_value(m.get_weights()) == extra["i"]
    if any(x.startswith("best") for x in lines):
        best = keras.models.load_model(str(tmp_path / "best.keras"))
        assert len(best.get_weights()) == 4

    # A restarted run writes the same names: the killed writer's temporaries go.
    m.save(str(tmp_path / "m.keras"))
    m.save_weights(str(tmp_path / "m.weights.h5"))
    m.save_training_state(str(tmp_path / "state.mylib"), {"i": 0})
    m.save(str(tmp_path / "best.keras"))
    left = sorted(os.listdir(tmp_path))
    assert not [f for f in left if f.endswith(".tmp")], left
    np.testing.assert_array_equal(
        keras.models.load_model(str(tmp_path / "m.keras")).get_weights()[0],
        m.get_weights()[0])
