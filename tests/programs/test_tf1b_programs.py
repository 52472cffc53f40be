"""Runs the TF1-style programs `tf1b_*.py` (written as TensorFlow 1 tutorials are, with
only ``import mylib as tf``) and checks that they learn."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _run(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.main()


def test_cnn_digits_learns():
    r = _run("tf1b_cnn_digits")
    assert r["last_loss"] < 0.5 * r["first_loss"]
    assert r["accuracy"] > 0.85 and r["top3"] > 0.95
    assert r["moving_mean_moved"] > 0  # the UPDATE_OPS ran with the train op
