"""TensorFlow 1-style programs (tests/programs/tf1a_*.py) run end to end and learn."""

import importlib.util
import os
import subprocess
import sys

import numpy as np
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _load(name):
    spec = importlib.util.spec_from_file_location(f"tf1a_program_{name}",
                                                  os.path.join(HERE, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_softmax_digits():
    r = _load("tf1a_softmax_digits").main()
    assert r["last_loss"] < 0.25 * r["first_loss"]
    assert r["accuracy"] > 0.85  # chance is 0.1


def test_mlp_adam_decay_saver(tmp_path):
    r = _load("tf1a_mlp_adam_decay").main(str(tmp_path))
    assert r["step"] == 60
    np.testing.assert_allclose(r["lr"], 0.05 * 0.7 ** 3, rtol=1e-5)  # staircase at 60
    assert r["last_loss"] < 0.3 * r["first_loss"]
    assert r["accuracy"] > 0.9  # restored from the checkpoint; chance is 0.5


def test_monitored_training(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    r = _load("tf1a_monitored_training").main(str(tmp_path))
    assert r["steps"] == (100, 50)  # the second session resumed at step 100
    assert r["last_loss"] < 0.3 * r["first_loss"]
    assert r["accuracy"] > 0.85
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    steps = [e.step for e in acc.Scalars("loss")]
    assert len(steps) >= 10 and steps == sorted(steps)
    assert "weights" in acc.Tags()["histograms"]


def test_app_flags_program(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, os.path.join(HERE, "tf1a_app_flags.py"),
                          "--train_steps=120", "--learning_rate=0.1", "--nesterov",
                          f"--out_dir={tmp_path / 'out'}"], env=env, capture_output=True,
                         text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    steps, first, last, acc = (tmp_path / "out" / "result.txt").read_text().split()
    assert int(steps) == 120
    assert float(last) < 0.3 * float(first)
    assert float(acc) > 0.9  # chance is 1/3


def test_gradient_tape_regression():
    r = _load("tf1a_gradient_tape_regression").main()
    assert r["last_loss"] < 0.01 * r["first_loss"]
    np.testing.assert_allclose(r["w"], r["true_w"], atol=0.05)
    np.testing.assert_allclose(r["b"], [0.7], atol=0.05)


def test_ema_evaluation(tmp_path):
    r = _load("tf1a_ema_evaluation").main(str(tmp_path))
    assert r["last_loss"] < 0.2 * r["first_loss"]
    assert r["accuracy"] > 0.9
    np.testing.assert_allclose(r["restored_w"], r["avg_w"])  # the averages were loaded
    assert not np.allclose(r["raw_w"], r["avg_w"])


def test_embeddings_projector(tmp_path):
    r = _load("tf1a_embeddings_projector").main(str(tmp_path))
    assert r["sparse"]
    assert r["last_loss"] < 0.2 * r["first_loss"]
    assert r["within"] > 0.5 > r["across"]
    text = (tmp_path / "projector_config.pbtxt").read_text()
    assert 'tensor_name: "embeddings:0"' in text and 'metadata_path: "metadata.tsv"' in text
    tsv = np.loadtxt(tmp_path / "embeddings.tsv", delimiter="\t")
    np.testing.assert_allclose(tsv, r["embeddings"], rtol=1e-6)
