"""The adapters that hold every use of a dependency's private API
(mylib/_compat for Ray, mylib/devices/jax_adapter.py for JAX): their private names resolve on the installed versions, the
installed versions are the ones the adapters were checked against, and no other
module of mylib reaches into a private API."""

import importlib
import os
import pathlib
import re
import subprocess
import sys
import warnings

import pytest

from mylib.devices import compat as _compat
from mylib._compat import ray_adapter
from mylib.devices import jax_adapter

ROOT = pathlib.Path(__file__).resolve().parent.parent / "mylib"
ADAPTERS = {"jax": jax_adapter, "ray": ray_adapter}
PRIVATE = re.compile(r"jax\._src|ray\._raylet|ray\._private|_temp_dir\s*="
                     r"|from\s+(?:jax|ray)\s+import\s+\(?\s*_")


def _installed(dist):
    version = _compat.installed_version(dist)
    if version is None:
        pytest.skip(f"{dist} is not installed")
    return version


@pytest.mark.parametrize("dist", sorted(ADAPTERS))
def test_private_names_resolve_on_installed_version(dist):
    version = _installed(dist)
    adapter = ADAPTERS[dist]
    try:
        adapter.check()
    except _compat.CompatError as e:
        pytest.fail(f"{dist} {version} changed under mylib: {e}")


@pytest.mark.parametrize("dist", sorted(ADAPTERS))
def test_installed_version_within_checked_range(dist):
    version = _installed(dist)
    adapter = ADAPTERS[dist]
    if not _compat.in_range(version, adapter.CHECKED):
        warnings.warn(
            f"{dist} {version} is outside the range mylib._compat.{dist}_adapter was "
            f"checked against ({adapter.CHECKED}); its private names still resolve "
            f"(see test_private_names_resolve_on_installed_version) but their "
            f"behaviour is unchecked: check the adapter against {version} and update "
            f"CHECKED", UserWarning)


def test_missing_private_name_fails_clearly(monkeypatch):
    monkeypatch.setattr(jax_adapter, "PRIVATE_NAMES",
                        ("jax._src.xla_bridge.no_such_name_for_this_test",))
    with pytest.raises(_compat.CompatError) as e:
        jax_adapter.check()
    msg = str(e.value)
    assert "jax._src.xla_bridge.no_such_name_for_this_test" in msg
    assert f"jax {_compat.installed_version('jax')}" in msg
    assert jax_adapter.CHECKED in msg


def test_version_ranges():
    assert _compat.in_range("0.10.2", ">=0.10.2,<0.11")
    assert _compat.in_range("0.10.9", ">=0.10.2,<0.11")
    assert not _compat.in_range("0.10.1", ">=0.10.2,<0.11")
    assert not _compat.in_range("0.11.0", ">=0.10.2,<0.11")
    assert _compat.in_range("2.60.0", ">=2.60.0,<2.61")
    assert not _compat.in_range("2.61.0rc1", ">=2.60.0,<2.61")
    for adapter in ADAPTERS.values():
        _compat.in_range("1.0", adapter.CHECKED)  # parses


def test_backends_are_initialized_answers_without_starting_them():
    import jax

    # conftest.py set the CPU device count before any JAX computation; by now some
    # test may have started the backends, so only the answer's type is checked here,
    # and that asking does not start them.
    before = jax_adapter.backends_are_initialized()
    assert isinstance(before, bool)
    if not before:
        assert jax_adapter.backends_are_initialized() is False
    jax.devices()
    assert jax_adapter.backends_are_initialized() is True


def test_no_private_api_outside_compat():
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent)
        if rel.parts[:2] == ("mylib", "_compat") or \
                rel.as_posix() == "mylib/devices/jax_adapter.py":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if PRIVATE.search(line):
                offenders.append(f"{rel}:{i}: {line.strip()}")
    assert not offenders, (
        "private JAX/Ray API outside mylib/_compat (move it into the adapter):\n"
        + "\n".join(offenders))


def test_compat_imports_nothing_else_of_mylib():
    for path in sorted((ROOT / "_compat").glob("*.py")):
        for line in path.read_text().splitlines():
            m = re.match(r"\s*(?:from|import)\s+(mylib[\w.]*)", line)
            if m:
                assert m.group(1).startswith(("mylib._compat", "mylib.devices.compat")), \
                    f"{path.name}: {line}"
    for name in ("compat.py", "jax_adapter.py"):  # the floor: nothing above devices
        for line in (ROOT / "devices" / name).read_text().splitlines():
            m = re.match(r"\s*(?:from|import)\s+(mylib[\w.]*)", line)
            if m:
                assert m.group(1).startswith("mylib.devices"), f"{name}: {line}"


def test_importing_the_adapters_does_not_import_ray():
    # (mylib itself imports JAX; Ray, optional, is imported only when a strategy starts.)
    code = ("import sys; import mylib, mylib.devices.jax_adapter, "
            "mylib._compat.ray_adapter; print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT.parent, check=True).stdout.strip()
    assert out == "False"


def test_adapter_modules_import():
    for name in ("mylib._compat", "mylib.devices.jax_adapter", "mylib._compat.ray_adapter"):
        importlib.import_module(name)


_FRESH_RAY = """
import os, sys
from mylib.distribute.ps_runtime import LocalRay
assert "ray" not in sys.modules
local = LocalRay(num_cpus=1)
import ray
from mylib._compat import ray_adapter
assert ray_adapter.token_authentication_enabled()
assert ray.util.get_node_ip_address() == "127.0.0.1", ray.util.get_node_ip_address()
assert ray.get(ray.remote(lambda: 41).remote()) + 1 == 42
temp = local.temp_dir
local.stop()
assert not os.path.exists(temp) and "RAY_AUTH_MODE" not in os.environ
print("ok")
"""


@pytest.mark.slow
def test_local_ray_imported_first_by_mylib_needs_no_private_reread(tmp_path):
    """When mylib imports Ray itself, Ray reads the environment mylib set (the
    documented way) and the private re-read in ray_adapter is skipped."""
    pytest.importorskip("ray")
    env = dict(os.environ, HOME=str(tmp_path), PYTHONPATH=str(ROOT.parent))
    for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_ADDRESS"):
        env.pop(k, None)
    r = subprocess.run([sys.executable, "-c", _FRESH_RAY], capture_output=True, check=False,
                       text=True, cwd=ROOT.parent, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
    assert not any(tmp_path.iterdir()), list(tmp_path.iterdir())  # no token on disk
