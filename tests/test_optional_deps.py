"""Optional dependencies: `import mylib` needs none of them, a feature whose package is
missing raises ImportError naming the extra that installs it, and `fit`'s progress bar
falls back to a plain line without tqdm. Packages are "missing" by putting None in
sys.modules for them (and their submodules), which makes their import fail."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mylib as ml
from mylib import _optional


def _block(monkeypatch, name):
    """Makes `import name` (and of its submodules) raise ImportError until the test ends."""
    for k in list(sys.modules):
        if k.startswith(name + "."):
            monkeypatch.setitem(sys.modules, k, None)
    monkeypatch.setitem(sys.modules, name, None)


def test_import_mylib_imports_no_optional_package():
    code = textwrap.dedent("""
        import sys
        import mylib
        print(sorted(m for m in sys.modules  # tensorboardX, a base dependency, may be
                     if m.partition(".")[0] in ("flax", "ray", "tensorboard")))
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                       timeout=300, cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[-1] == "[]", f"import mylib imported {out[-1]}"


def test_flax_layer_without_flax_names_the_extra(monkeypatch):
    _block(monkeypatch, "flax")
    with pytest.raises(ImportError, match=r"FlaxLayer needs flax.*mylib\[interop\]"):
        ml.layers.FlaxLayer(object())


def test_parameter_server_strategy_without_ray_names_the_extra(monkeypatch):
    from mylib.distribute import ps_runtime

    _block(monkeypatch, "ray")
    with pytest.raises(ImportError, match=r"ParameterServerStrategy needs ray.*mylib\[ps\]"):
        ml.distribute.ParameterServerStrategy(num_ps=1, num_workers=1)
    with pytest.raises(ImportError, match=r"mylib\[ps\]"):
        ps_runtime.import_ray()


def test_run_metadata_proto_without_tensorboard_names_the_extra(monkeypatch):
    _block(monkeypatch, "tensorboard")  # not tensorboardX: a base dependency
    assert sys.modules.get("tensorboardX", True) is not None
    with pytest.raises(ImportError, match=r"run_metadata_proto needs tensorboard.*"
                                          r"mylib\[tensorboard\]"):
        ml.summary.run_metadata_proto(ml.RunMetadata())


def test_require_passes_through_an_import_error_from_inside_the_package(tmp_path,
                                                                        monkeypatch):
    (tmp_path / "mylib_broken_pkg").mkdir()
    (tmp_path / "mylib_broken_pkg" / "__init__.py").write_text(
        "import mylib_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError) as e:
        _optional.require("mylib_broken_pkg", "A feature", "x")
    assert e.value.name == "mylib_no_such_dependency"
    assert "mylib[x]" not in str(e.value)
    with pytest.raises(ImportError, match=r"A feature needs mylib_absent_pkg, which is not "
                                          r"installed: pip install 'mylib\[x\]'"):
        _optional.require("mylib_absent_pkg.sub", "A feature", "x")
    assert not _optional.available("mylib_absent_pkg")
    assert _optional.available("numpy")


def test_progress_bar_without_tqdm_prints_a_line_with_the_loss(monkeypatch, capsys):
    _block(monkeypatch, "tqdm")
    x = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    model = ml.Sequential([ml.layers.Input((4,)), ml.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, batch_size=8, epochs=2, verbose=1)
    lines = [ln.split("\r")[-1] for ln in capsys.readouterr().out.splitlines()]
    for epoch in (1, 2):
        line = next((ln for ln in lines if ln.startswith(f"Epoch {epoch}/2")), None)
        assert line is not None, lines
        assert "4/4 steps" in line and "loss: " in line, line
