"""`ml.test` (TensorFlow's `tf.test`): which accelerators this process has, and a
`unittest.TestCase` with TensorFlow's helpers for tests written against graphs.

`is_gpu_available` / `gpu_device_name` ask JAX for its GPU devices; they change
nothing (no backend is initialized that JAX would not initialize on its own).
"""

from __future__ import annotations

import contextlib
import unittest

import numpy as np

__all__ = ["TestCase", "main", "is_gpu_available", "gpu_device_name", "is_built_with_cuda",
           "is_built_with_gpu_support", "is_built_with_rocm"]


def _gpus():
    import jax

    try:
        return jax.devices("gpu")
    except RuntimeError:  # no GPU backend in this process
        return []


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    """Whether JAX sees at least one GPU. `cuda_only` counts NVIDIA (CUDA) devices only;
    `min_cuda_compute_capability`, a ``(major, minor)`` pair, counts only devices at
    least that capable (devices that do not report one are counted)."""
    devs = _gpus()
    if cuda_only:
        devs = [d for d in devs if "cuda" in str(getattr(d, "platform", "")).lower()
                or "nvidia" in str(getattr(d, "device_kind", "")).lower()]
    if min_cuda_compute_capability is not None:
        want = tuple(min_cuda_compute_capability)

        def capable(d):
            cc = getattr(d, "compute_capability", None)
            if cc is None:
                return True
            return tuple(int(v) for v in str(cc).split(".")[:2]) >= want
        devs = [d for d in devs if capable(d)]
    return bool(devs)


def gpu_device_name():
    """``"/device:GPU:0"`` when a GPU is available, else ``""`` (as TensorFlow)."""
    return "/device:GPU:0" if _gpus() else ""


def is_built_with_cuda():
    """Whether this JAX installation has a CUDA backend with devices (TensorFlow asks
    how it was compiled; JAX's GPU support comes from the plugin installed)."""
    return any("cuda" in str(getattr(d, "platform", "")).lower() or
               "nvidia" in str(getattr(d, "device_kind", "")).lower() for d in _gpus())


def is_built_with_rocm():
    """Whether JAX has ROCm (AMD) GPU devices."""
    return any("rocm" in str(getattr(d, "platform", "")).lower() for d in _gpus())


def is_built_with_gpu_support():
    """Whether JAX has any GPU devices."""
    return bool(_gpus())


def main(argv=None):
    """Runs the tests of the calling module (`unittest.main`)."""
    return unittest.main(argv=argv)


class TestCase(unittest.TestCase):
    """`unittest.TestCase` with TensorFlow's graph-test helpers: each test runs in a
    fresh default `Graph`; `session()` / `cached_session()` open a `Session` on it;
    `evaluate(fetches)` runs them; `assertAllClose`, `assertAllEqual`,
    `assertShapeEqual` compare with numpy."""

    def setUp(self):
        from mylib.core.graph import Graph

        super().setUp()
        self._graph_cm = Graph().as_default()
        self._graph_cm.__enter__()
        self._cached = None

    def tearDown(self):
        if self._cached is not None:
            self._cached.close()
            self._cached = None
        self._graph_cm.__exit__(None, None, None)
        super().tearDown()

    @contextlib.contextmanager
    def session(self, graph=None, config=None):
        """A new `Session` on `graph` (the test's graph), closed on exit."""
        from mylib.runtime import Session

        with Session(graph=graph, config=config) as sess:
            yield sess

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None):
        """One `Session` per test, reused by every call, closed at `tearDown`."""
        from mylib.runtime import Session

        if self._cached is None:
            self._cached = Session(graph=graph, config=config)
        yield self._cached

    def evaluate(self, fetches):
        """`fetches` run in the test's cached session."""
        with self.cached_session() as sess:
            return sess.run(fetches)

    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol,
                                   err_msg=msg or "")

    def assertAllEqual(self, a, b, msg=None):  # noqa: N802
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=msg or "")

    def assertShapeEqual(self, np_array, tf_tensor, msg=None):  # noqa: N802
        self.assertEqual(list(np.shape(np_array)), tf_tensor.shape.as_list(), msg)
