"""The TF1-ops program (tests/programs/tfops_*.py) runs end to end and learns."""

import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name):
    spec = importlib.util.spec_from_file_location(f"tfops_program_{name}",
                                                  os.path.join(HERE, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cnn_digits_from_raw_nn_ops():
    r = _load("tfops_cnn_digits").main()
    assert r["last_loss"] < 0.2 * r["first_loss"]
    assert r["accuracy"] > 0.8          # chance is 0.1
    assert r["top3_accuracy"] >= r["accuracy"] and r["top3_accuracy"] > 0.9
    assert 0.0 < r["zero_fraction"] < 1.0
