"""Keras 3's lower-case initializer names and `Identity`, against Keras; TensorFlow 1's
``tf.initializers.*`` forms in `get_variable`."""

import keras
import numpy as np
import pytest

import mylib as ml

NAMES = ["constant", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
         "identity", "lecun_normal", "lecun_uniform", "ones", "orthogonal", "random_normal",
         "random_uniform", "truncated_normal", "variance_scaling", "zeros"]


@pytest.mark.parametrize("name", NAMES)
def test_lower_case_names_are_keras_classes(name):
    ours, theirs = getattr(ml.initializers, name), getattr(keras.initializers, name)
    assert ours.__name__ == theirs.__name__  # the same class under Keras's alias


@pytest.mark.parametrize("shape,gain", [((3, 3), 1.0), ((2, 4), 2.5), ((4, 2), 0.5)])
def test_identity_matches_keras(shape, gain):
    want = np.asarray(keras.initializers.Identity(gain)(shape))
    with ml.Graph().as_default(), ml.Session() as s:
        got = s.run(ml.initializers.Identity(gain)(shape))
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="2D"):
        ml.initializers.identity()((2, 2, 2))
    cfg = ml.initializers.serialize(ml.initializers.Identity(gain))
    assert ml.initializers.deserialize(cfg).gain == gain


def test_tf1_initializers_in_get_variable():
    with ml.Graph().as_default():
        w = ml.get_variable("w", [400, 300], initializer=ml.initializers.he_normal(seed=3))
        c = ml.get_variable("c", [2], initializer=ml.initializers.constant(3.0))
        i = ml.get_variable("i", [2, 3], initializer=ml.initializers.identity())
        with ml.Session() as s:
            s.run(ml.initializers.global_variables())
            s.run(ml.initializers.variables([c]))
            wv, cv, iv = s.run([w, c, i])
    np.testing.assert_array_equal(cv, [3.0, 3.0])
    np.testing.assert_array_equal(iv, np.eye(2, 3))
    # He normal: truncated normal with std sqrt(2 / fan_in) (fan_in 400)
    assert wv.std() == pytest.approx(np.sqrt(2 / 400), rel=0.05)
