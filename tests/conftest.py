"""Test configuration: 4 host CPU devices (set before JAX starts) so placement and
multi-device tests run on any machine. Keras 3 (the reference of the Keras-comparison
tests) runs on its JAX backend: Keras reads KERAS_BACKEND when first imported, so it is
set here, before any test module imports keras."""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")

from mylib.devices import set_cpu_device_count

set_cpu_device_count(4)

import jax  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def jax_x64():
    """64-bit JAX for a test whose references (`jax.grad`, optax, `jnp`) are float64:
    mylib scopes 64-bit mode to its own work, so a reference computed outside that
    scope would silently be 32-bit."""
    with jax.enable_x64(True):
        yield


@pytest.fixture(autouse=True)
def _fresh_default_graph_after_finalize():
    """A test that finalizes the global default graph (a TF1 program's
    `MonitoredTrainingSession`, as TensorFlow does) hands the next test a new one: the
    finalized graph would refuse every op the next test creates."""
    yield
    import mylib as ml

    if ml.get_default_graph().finalized:
        ml.reset_default_graph()


@pytest.fixture
def compiled_steps(monkeypatch):
    """Records each compiled step the Session runs with its arguments and whether it
    was called inside the 64-bit scope; `hlo(i)` compiles call i the same way."""
    import mylib.runtime.session as _session_mod

    calls = []
    real = _session_mod.compile_step

    def recording(*a, **k):
        cs = real(*a, **k)
        fn = cs.fn

        def call(*args):
            calls.append((fn, args, bool(jax.config.jax_enable_x64)))
            return fn(*args)

        cs.fn = call
        return cs

    monkeypatch.setattr(_session_mod, "compile_step", recording)

    def hlo(i):
        fn, args, wide = calls[i]
        with jax.enable_x64(wide):
            return fn.lower(*args).compile().as_text()

    return calls, hlo
