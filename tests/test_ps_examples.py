"""The parameter-server examples run end to end as scripts (shortened) and print
sensible numbers: each starts and stops its own local Ray cluster."""

import math
import os
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("ray")
pytest.importorskip("sklearn")

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run(script, args, tmp_path, timeout=150):
    """Runs examples/`script` in a fresh process; returns its stdout. Ray must leave
    nothing in HOME, so HOME is a test directory checked afterwards."""
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                        os.environ.get("PYTHONPATH")])))
    env.pop("RAY_ADDRESS", None)  # the examples start their own loopback cluster
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    assert not any(home.iterdir()), f"files left in HOME: {list(home.iterdir())}"
    return proc.stdout


def _number(pattern, out):
    m = re.search(pattern, out)
    assert m, f"no match for {pattern!r} in:\n{out}"
    return float(m.group(1).replace(",", ""))


@pytest.mark.parametrize("mode,epochs", [("async", 1), ("sync", 2)])
def test_ps_digits_learns(mode, epochs, tmp_path):
    out = _run("ps_digits.py", ["--mode", mode, "--epochs", str(epochs)], tmp_path)
    acc = _number(r"test accuracy ([0-9.]+)", out)
    assert math.isfinite(acc) and acc > 0.8, out
    applied = _number(r"steps applied (\d+)", out)
    dropped = _number(r"gradients dropped (\d+)", out)
    scheduled = _number(r"\((\d+) steps scheduled\)", out)
    if mode == "async":
        assert applied == scheduled and dropped == 0, out
    else:  # one of two gradients per step (one backup worker): every closure counted
        assert applied >= 1 and applied + dropped == scheduled, out


def test_ps_language_model_runs_and_evaluates(tmp_path):
    out = _run("ps_language_model.py", ["--steps", "5"], tmp_path)
    before = _number(r"perplexity before training ([0-9.]+)", out)
    after = _number(r"perplexity after training ([0-9.]+)", out)
    wps = _number(r"([0-9,.]+) words/s", out)
    assert all(math.isfinite(v) and v > 0 for v in (before, after, wps)), out
    # Untrained, the model is close to uniform over its ~3,500 classes.
    assert before > 1000 and after < before, out
    assert re.search(r"embedding \[\d+, 128\]: .*task:0.*task:1", out), out
