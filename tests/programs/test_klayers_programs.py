"""Runs the klayers_* programs of this folder end to end and checks that they learn."""

import importlib.util
import os

HERE = os.path.dirname(__file__)


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_structured_data_classification_learns():
    h = _load("klayers_structured_data").main()
    assert h["loss"][-1] < h["loss"][0] * 0.7
    assert h["val_accuracy"][-1] > 0.85, h["val_accuracy"]  # chance: about 0.5


def test_text_classification_learns():
    h = _load("klayers_text_classification").main()
    assert h["loss"][-1] < h["loss"][0] * 0.5
    assert h["val_accuracy"][-1] > 0.9, h["val_accuracy"]  # chance: 0.5
