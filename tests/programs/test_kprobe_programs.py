"""The keras-io-style programs of this folder (kprobe_*.py), run as a Keras 3 user
would with `from mylib import keras`, end to end: each asserts its own learning
criterion (loss falls, accuracy or fit well above chance) and, for the callbacks
program, that saved and reloaded models predict the same."""

import os
import runpy

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = sorted(f for f in os.listdir(HERE) if f.startswith("kprobe_") and f.endswith(".py"))


@pytest.mark.parametrize("program", PROGRAMS)
def test_kprobe_program_learns(program):
    pytest.importorskip("sklearn")
    runpy.run_path(os.path.join(HERE, program), run_name="__main__")
