"""TensorFlow 1-style tf.data programs (tests/programs/tfdata_*.py) run and learn."""

import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name):
    spec = importlib.util.spec_from_file_location(f"tfdata_program_{name}",
                                                  os.path.join(HERE, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_digits_initializable_and_reinitializable_iterators():
    r = _load("tfdata_digits_initializable").main()
    assert r["steps_per_epoch"] == 22  # ceil(1400 / 64): the epoch ends at OutOfRange
    assert r["losses"][-1] < 0.3 * r["losses"][0]
    assert r["accuracy"] > 0.85  # chance is 0.1


def test_monitored_session_one_shot_iterator():
    r = _load("tfdata_monitored_one_shot").main()
    assert r["step"] == 150 and len(r["losses"]) == 150
    assert sum(r["losses"][-20:]) / 20 < 0.7 * r["losses"][0]
    assert r["accuracy"] > 0.75  # chance is 0.5
