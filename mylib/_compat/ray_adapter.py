"""Every use of Ray's private API in mylib.

mylib's embedded Ray cluster (`mylib.distribute.ps_runtime.LocalRay`) is configured
through environment variables: ``RAY_AUTH_MODE=token`` and ``RAY_AUTH_TOKEN`` (Ray's
documented token authentication, since Ray 2.52) and
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (Ray's single-node local mode, every address
on loopback; named in the messages of ``ray start``, not in Ray's API reference).
Three needs have no public API (checked in Ray 2.60.0):

- Ray reads those variables once, when it is imported (its C++ `RayConfig`, its
  token cache, `ray_constants.ENABLE_RAY_CLUSTER`). If the user imported Ray before
  the strategy set them, Ray must be told to read them again:
  `reload_config_from_environment` and `restrict_to_loopback`. Ray does the same
  itself when `ray.init` turns token authentication on
  (ray/_private/authentication/authentication_token_setup.py).
- Whether token authentication is on in this process: `token_authentication_enabled`.
- The directory of a cluster started by `ray.init`: only the hidden option
  ``_temp_dir`` (listed in `ray.init`'s docstring among the "hidden / experimental
  options ... unstable and may change without notice"); the public alternative,
  ``ray start --temp-dir``, starts a separate daemon; ``RAY_TMPDIR`` is not documented.
  `init_local` passes it.

Imports nothing of mylib beyond `mylib._compat`; imports Ray only when called.
"""

from __future__ import annotations

import inspect

from mylib.devices.compat import compat_error, missing_names

DIST = "ray"
# Checked against Ray 2.60.0, the installed version. Ray changes these internals
# between minor releases (token authentication arrived in 2.52 and became the default
# for local clusters in 2.59), so the declared range is that minor release only.
# tests/test_compat_adapters.py warns outside this range and fails if a name below
# no longer resolves.
CHECKED = ">=2.60.0,<2.61"
PRIVATE_NAMES = (
    "ray._raylet.Config.initialize",
    "ray._raylet.AuthenticationTokenLoader.instance",
    "ray._raylet.AuthenticationTokenLoader.reset_cache",
    "ray._raylet.AuthenticationMode.TOKEN",
    "ray._raylet.get_authentication_mode",
    "ray._private.ray_constants.ENABLE_RAY_CLUSTER",
)
# Hidden keyword options of ray.init (popped from **kwargs by Ray).
PRIVATE_INIT_OPTIONS = ("_temp_dir",)


def _missing_init_options():
    import ray

    try:
        src = inspect.getsource(inspect.unwrap(ray.init))
    except (OSError, TypeError) as e:
        return [f"ray.init(...) options {PRIVATE_INIT_OPTIONS} (source unreadable: {e})"]
    return [f"ray.init({o}=...)" for o in PRIVATE_INIT_OPTIONS
            if f'"{o}"' not in src and f"'{o}'" not in src]


def check():
    """Raises CompatError naming the Ray version and each missing private name or
    ray.init option this adapter uses. Raises ImportError if Ray is not installed."""
    import ray  # noqa: F401

    missing = missing_names(PRIVATE_NAMES) + _missing_init_options()
    if missing:
        raise compat_error(DIST, CHECKED, "private Ray names: " + "; ".join(missing))


def _raylet():
    try:
        from ray import _raylet

        for name in ("Config", "AuthenticationTokenLoader", "AuthenticationMode",
                     "get_authentication_mode"):
            getattr(_raylet, name)
    except (ImportError, AttributeError) as e:
        raise compat_error(DIST, CHECKED, f"ray._raylet ({e})") from e
    return _raylet


def reload_config_from_environment():
    """Makes this process's Ray re-read its configuration (``RAY_AUTH_MODE`` and the
    other ``RAY_*`` system-config variables) and its authentication token
    (``RAY_AUTH_TOKEN``) from the environment. Needed only when Ray was imported before
    they were set. Checked: Ray 2.60.0."""
    raylet = _raylet()
    raylet.Config.initialize("")
    raylet.AuthenticationTokenLoader.instance().reset_cache()


def restrict_to_loopback():
    """Ray's local mode for this process: nodes started here take 127.0.0.1 as their
    address (what ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` selects when set before Ray is
    imported). Returns the previous value of the setting. Checked: Ray 2.60.0."""
    try:
        from ray._private import ray_constants

        previous = ray_constants.ENABLE_RAY_CLUSTER
    except (ImportError, AttributeError) as e:
        raise compat_error(DIST, CHECKED,
                           f"ray._private.ray_constants.ENABLE_RAY_CLUSTER ({e})") from e
    ray_constants.ENABLE_RAY_CLUSTER = False
    return previous


def token_authentication_enabled():
    """Whether Ray in this process authenticates with a token. Checked: Ray 2.60.0."""
    raylet = _raylet()
    return raylet.get_authentication_mode() == raylet.AuthenticationMode.TOKEN


def init_local(temp_dir, **kwargs):
    """`ray.init(**kwargs)` starting a new local cluster whose session files go under
    `temp_dir` (Ray's hidden ``_temp_dir`` option). Checked: Ray 2.60.0."""
    import ray

    return ray.init(_temp_dir=temp_dir, **kwargs)
