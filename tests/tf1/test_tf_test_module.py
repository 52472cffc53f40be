"""`tf.test`: accelerator queries against JAX's own device list, and a TestCase whose
helpers run graphs."""

import io
import unittest

import jax
import numpy as np

import mylib as tf


def test_gpu_queries_agree_with_jax():
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    assert tf.test.is_gpu_available() == bool(gpus)
    assert tf.test.gpu_device_name() == ("/device:GPU:0" if gpus else "")
    assert tf.test.is_built_with_gpu_support() == bool(gpus)


def test_test_case_helpers_run_graphs_and_compare():
    class Case(tf.test.TestCase):
        def test_values(self):
            x = tf.constant([1.0, 2.0])
            self.assertAllClose(self.evaluate(x * 2), [2.0, 4.0])
            with self.session() as s:
                self.assertAllEqual(s.run(tf.cast(x, tf.int32)), [1, 2])
            self.assertShapeEqual(np.zeros((1, 2)), tf.zeros([1, 2]))

        def test_a_wrong_value_fails(self):
            with self.assertRaises(AssertionError):
                self.assertAllClose(self.evaluate(tf.constant(1.0)), 1.1)

        def test_each_test_has_a_fresh_graph(self):
            tf.constant(0.0, name="only")
            assert [op.name for op in tf.get_default_graph().get_operations()] == ["only"]

    result = unittest.TextTestRunner(stream=io.StringIO()).run(
        unittest.defaultTestLoader.loadTestsFromTestCase(Case))
    assert result.testsRun == 3 and result.wasSuccessful(), result.failures + result.errors
