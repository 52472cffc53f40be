"""The Keras 3 programs of this folder (keras_*.py) run end to end and learn: each one
asserts its own learning criterion (loss falls, accuracy well above chance)."""

import os
import runpy

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = sorted(f for f in os.listdir(HERE) if f.startswith("keras_") and f.endswith(".py"))


@pytest.mark.parametrize("program", PROGRAMS)
def test_keras_program_learns(program):
    pytest.importorskip("sklearn")
    runpy.run_path(os.path.join(HERE, program), run_name="__main__")
