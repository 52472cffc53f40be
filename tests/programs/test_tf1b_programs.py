"""Runs the TF1-style programs `tf1b_*.py` (written as TensorFlow 1 tutorials are, with
only ``import mylib as tf``) and checks that they learn."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _run(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.main()


def test_cnn_digits_learns():
    r = _run("tf1b_cnn_digits")
    assert r["last_loss"] < 0.5 * r["first_loss"]
    assert r["accuracy"] > 0.85 and r["top3"] > 0.95
    assert r["moving_mean_moved"] > 0  # the UPDATE_OPS ran with the train op


def test_lstm_sequences_learn_with_sequence_length():
    r = _run("tf1b_lstm_sequences")
    assert r["last_loss"] < 0.6 * r["first_loss"]
    assert r["accuracy"] > 0.85
    assert r["padded_outputs_zero"]


def test_word2vec_nce_groups_topics():
    r = _run("tf1b_word2vec_nce")
    assert r["parts"] == 2  # the partitioned table trained as one variable
    assert r["last_loss"] < 0.7 * r["first_loss"]
    assert r["same_topic"] > 0.8  # chance: 9 / 59


def test_siamese_towers_share_weights_and_learn():
    r = _run("tf1b_siamese_towers")
    assert r["variables"] == ["siamese/layer1/weights:0", "siamese/layer1/biases:0",
                              "siamese/layer2/weights:0", "siamese/layer2/biases:0"]
    assert r["regularizers"] == 4  # once per variable, not per tower
    assert r["last_loss"] < 0.6 * r["first_loss"]
    assert r["accuracy"] > 0.8


def test_logistic_regression_streaming_metrics():
    from sklearn.metrics import precision_score, recall_score, roc_auc_score

    r = _run("tf1b_logreg_metrics")
    assert r["last_loss"] < 0.3 * r["first_loss"]
    assert r["accuracy"] > 0.93 and r["auc"] > 0.97
    p, y = r["test_probs"], r["test_labels"]
    assert abs(r["auc"] - roc_auc_score(y, p)) < 0.01
    assert abs(r["accuracy"] - ((p > 0.5) == y).mean()) < 1e-6
    assert abs(r["precision"] - precision_score(y, p > 0.5)) < 1e-5
    assert abs(r["recall"] - recall_score(y, p > 0.5)) < 1e-5
