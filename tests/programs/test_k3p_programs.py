"""The keras-io-style programs of this folder (k3p_*.py), run end to end as a Keras 3
user would with `from mylib import keras`: each asserts its own learning criterion
(loss falls, accuracy well above chance on held-out data)."""

import os
import runpy

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = sorted(f for f in os.listdir(HERE) if f.startswith("k3p_") and f.endswith(".py"))


@pytest.mark.parametrize("program", PROGRAMS)
def test_k3p_program_learns(program):
    runpy.run_path(os.path.join(HERE, program), run_name="__main__")
