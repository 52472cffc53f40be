"""The keras-io-style programs of this folder (k4p_*.py, second round), run end to end
as a Keras 3 user would with `from mylib import keras`: each asserts its own criterion
(the loss falls, held-out accuracy well above chance, a PixelCNN that stays causal)."""

import os
import runpy

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = sorted(f for f in os.listdir(HERE) if f.startswith("k4p_") and f.endswith(".py"))


@pytest.mark.parametrize("program", PROGRAMS)
def test_k4p_program_runs(program):
    runpy.run_path(os.path.join(HERE, program), run_name="__main__")
