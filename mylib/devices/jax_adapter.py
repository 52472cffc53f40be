"""Every use of JAX's private API in mylib.

mylib needs to know whether JAX has started its backends (created its XLA clients)
without starting them: `mylib.devices.set_cpu_device_count` and
`MultiWorkerMirroredStrategy` must run before that moment. JAX has no public way to
ask (checked in jax 0.10.2: `jax.devices()`, `jax.default_backend()`,
`jax.extend.backend.backends()` and `get_backend()` all start the backends;
`jax.distributed.is_initialized()` answers another question; the validator behind
the ``jax_num_cpu_devices`` option answers it only by changing a global option), so
`backends_are_initialized` reads `jax._src.xla_bridge`.

Imports nothing of mylib beyond `mylib._compat`; imports JAX only when called.
"""

from __future__ import annotations

from mylib.devices.compat import compat_error, missing_names

DIST = "jax"
# Checked against jax (and jaxlib) 0.10.2, the installed version; other versions of
# the 0.10 line are expected to match. tests/test_compat_adapters.py warns outside
# this range and fails if a name below no longer resolves.
CHECKED = ">=0.10.2,<0.11"
PRIVATE_NAMES = (
    "jax._src.xla_bridge.backends_are_initialized",
)


def check():
    """Raises CompatError naming the jax version and the missing name if a private
    name this adapter uses does not resolve."""
    missing = missing_names(PRIVATE_NAMES)
    if missing:
        raise compat_error(DIST, CHECKED, "private JAX names: " + "; ".join(missing))


def backends_are_initialized():
    """Whether JAX has already created its backends (XLA clients) in this process;
    never creates them. Checked: jax 0.10.2."""
    try:
        from jax._src import xla_bridge

        fn = xla_bridge.backends_are_initialized
    except (ImportError, AttributeError) as e:
        raise compat_error(
            DIST, CHECKED,
            f"jax._src.xla_bridge.backends_are_initialized ({e})") from e
    return bool(fn())
