"""Runs the TF1 programs `t1p_*.py` (written in the style of TensorFlow-Examples' TF1
examples, with only ``import mylib as tf``) and checks that they learn, against numpy
where the program's result is checkable."""

import importlib.util
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dcgan_with_contrib_layers_learns_the_digits():
    r = _load("t1p_dcgan_contrib_layers").main()
    assert r["gen_vars"][:2] == ["Generator/fully_connected/weights:0",
                                 "Generator/fully_connected/biases:0"]
    assert "Generator/Conv2d_transpose/BatchNorm/beta:0" in r["gen_vars"]
    assert r["disc_vars"] == ["Discriminator/Conv/weights:0", "Discriminator/Conv/biases:0",
                              "Discriminator/Conv_1/weights:0", "Discriminator/Conv_1/biases:0",
                              "Discriminator/fully_connected/weights:0",
                              "Discriminator/fully_connected/biases:0"]
    h = r["history"]
    assert np.isfinite(h).all()
    # the generator's samples take on the digits' mean image (uncorrelated at the start)
    assert r["corr_before"] < 0.5 and r["corr_after"] > 0.7
    assert r["samples"].shape == (8, 8, 8, 1)
    assert r["samples"].min() >= 0 and r["samples"].max() <= 1
    assert r["moving_mean_moved"] > 0  # UPDATE_OPS ran with the generator's train op


def test_nearest_neighbor_matches_numpy():
    r = _load("t1p_nearest_neighbor").main()
    ref = np.array([np.argmin(np.abs(r["Xtr"] - x).sum(1)) for x in r["Xte"]])
    np.testing.assert_array_equal(r["predictions"], ref)
    assert r["index_dtype"] is np.int64  # tf.arg_min's default output_type
    assert r["accuracy"] > 0.9


def test_multi_tower_device_function_places_and_learns():
    r = _load("t1p_multi_tower").main()
    assert all(dev == "/device:CPU:2" for _, dev in r["variables"])  # via op.node_def.op
    assert r["tower0_device"] == "/device:CPU:0"
    assert r["grad_devices"] and all(d == "/device:CPU:1" for d in r["grad_devices"])
    assert r["last_loss"] < 0.2 * r["first_loss"]
    assert r["accuracy"] > 0.85
