"""TensorFlow 1 names around a program: `make_template`, `model_variables`,
`moving_average_variables`, `VERSION` / `version.VERSION`, `config.list_physical_devices`
and `config.experimental.set_memory_growth`."""

import numpy as np
import pytest

import mylib as tf


def test_make_template_shares_variables():
    def scale(x, init=1.0):
        w = tf.get_variable("w", [3], initializer=tf.constant_initializer(init))
        return x * w

    g = tf.Graph()
    with g.as_default():
        t = tf.make_template("lin", scale, init=2.0)
        a = t(tf.constant([1.0, 2.0, 3.0]))
        b = t(tf.constant([1.0, 1.0, 1.0]))
        t2 = tf.make_template("lin", scale)
        c = t2(tf.constant(1.0))
        now = tf.make_template("early", scale, create_scope_now_=True)
        assert now.variable_scope_name == "early"
        with tf.variable_scope("outer"):
            d = now(tf.constant(1.0))       # the scope captured at creation
        names = [v.name for v in tf.global_variables()]
        assert names == ["lin/w:0", "lin_1/w:0", "early/w:0"]
        assert t.variable_scope_name == "lin" and t2.variable_scope_name == "lin_1"
        assert [v.name for v in t.trainable_variables] == ["lin/w:0"]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = s.run([a, b, c, d])
        np.testing.assert_allclose(got[0], [2.0, 4.0, 6.0])
        np.testing.assert_allclose(got[1], [2.0, 2.0, 2.0])
        np.testing.assert_allclose(got[2], [1.0, 1.0, 1.0])

        def grows(x):
            tf.get_variable("extra%d" % len(tf.global_variables()), [1])
            return x

        t3 = tf.make_template("grow", grows)
        t3(1.0)
        with pytest.raises(ValueError):
            t3(1.0)                         # a new variable under reuse, as TF
    with pytest.raises(ValueError, match="callable"):
        tf.make_template("x", 3)


def test_model_and_moving_average_collections():
    g = tf.Graph()
    with g.as_default():
        m = tf.get_variable("m", [2], collections=[tf.GraphKeys.GLOBAL_VARIABLES,
                                                   tf.GraphKeys.MODEL_VARIABLES])
        v = tf.get_variable("v", [2])
        assert tf.model_variables() == [m] and tf.moving_average_variables() == []
        tf.train.ExponentialMovingAverage(0.9).apply([v])
        assert tf.moving_average_variables() == [v]
        assert tf.compat.v1.model_variables("zzz") == []


def test_version_and_devices():
    assert tf.VERSION == tf.version.VERSION == tf.__version__
    assert isinstance(tf.VERSION, str) and tf.VERSION.count(".") >= 1
    cpus = tf.config.list_physical_devices("CPU")
    assert cpus and cpus[0].name == "/physical_device:CPU:0" and cpus[0].device_type == "CPU"
    assert tf.config.experimental.list_physical_devices("GPU") == \
        tf.config.list_physical_devices("gpu")
    with pytest.raises(ValueError, match="non-GPU"):
        tf.config.experimental.set_memory_growth(cpus[0], True)
