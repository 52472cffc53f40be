"""TF1 static shapes: `Dimension` and `x.get_shape()[i].value`, shapes built from tensors
(TF1's constant_value_as_shape), sizes known only at run time, and unshaped placeholders
as `training` / `rate` / `keep_prob`. Values are checked against numpy."""

import json

import numpy as np
import pytest

import mylib as tf


def test_known_dimension_is_an_int_with_value():
    x = tf.placeholder(tf.float32, [None, 5, 7])
    d = x.get_shape()[-1]
    assert d.value == 7 and d == 7 and isinstance(d, int)
    assert x.shape[1] * x.shape[2] == 35 and type(x.shape[1] * x.shape[2]) is int
    assert x.shape.dims[1].value == 5
    assert [d.value for d in x.shape[1:]] == [5, 7]
    assert x.shape[0] is None and x.shape.dims[0] is None
    assert json.dumps(list(x.shape)) == "[null, 5, 7]"
    assert np.zeros((x.shape[1], x.shape[2])).shape == (5, 7)
    assert list(range(x.shape[1])) == list(range(5))
    assert repr(x.shape[1]) == "5"
    # as_list() stays plain data
    assert [type(d) for d in x.shape.as_list()] == [type(None), int, int]
    assert tf.reshape(x, [-1, x.shape[1].value * x.shape[2].value]).shape.as_list() == [None, 35]


def test_dimension_class():
    assert tf.Dimension(3).value == 3 and int(tf.Dimension(3)) == 3
    assert tf.Dimension(None).value is None
    assert (tf.Dimension(3) * 4).value == 12 and (2 + tf.Dimension(3)).value == 5
    assert (tf.Dimension(None) * 4).value is None
    assert (tf.Dimension(7) // 2).value == 3 and (tf.Dimension(7) - 2).value == 5
    assert tf.Dimension(3) == 3 and (tf.Dimension(None) == 3) is None
    assert tf.Dimension(3).merge_with(None).value == 3
    with pytest.raises(ValueError):
        tf.Dimension(3).merge_with(4)
    with pytest.raises(TypeError):
        int(tf.Dimension(None))
    x = tf.placeholder(tf.float32, [None, 5])
    assert isinstance(x.shape[1], tf.Dimension)
    assert tf.TensorShape([tf.Dimension(None), tf.Dimension(4)]).as_list() == [None, 4]
    assert np.zeros([tf.Dimension(2), 3]).shape == (2, 3)


def test_dimension_value():
    x = tf.placeholder(tf.float32, [None, 5])
    for f in (tf.dimension_value, tf.compat.dimension_value, tf.compat.v1.dimension_value):
        assert f(x.shape[1]) == 5 and type(f(x.shape[1])) is int
        assert f(x.shape[0]) is None
        assert f(tf.Dimension(4)) == 4 and f(tf.Dimension(None)) is None
        assert f(6) == 6
    assert tf.compat.v1.Dimension is tf.Dimension
