"""Runs the TF1 programs `t2p_*.py` (written in the style of TensorFlow's own TF1
tutorials and models, with only ``import mylib.compat.v1 as tf``) and checks what they
compute against numpy."""

import importlib.util
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ptb_word_lm_learns_the_markov_text():
    r = _load("t2p_ptb_word_lm").main()
    assert r["shared"]  # the reuse=True copies made no variables of their own
    lrs = [h[0] for h in r["history"]]
    np.testing.assert_allclose(lrs, [1.0, 1.0, 1.0, 0.5])
    assert r["global_step"] == 4 * r["epoch_size"]
    # numpy references on the validation text: the unigram model's perplexity, and the
    # chain's own (no model can do better on average)
    v = np.array(r["valid_data"])
    counts = np.bincount(v, minlength=r["trans"].shape[0]) + 1e-9
    unigram = np.exp(-np.mean(np.log((counts / counts.sum())[v[1:]])))
    true_ppl = np.exp(-np.mean(np.log(r["trans"][v[:-1], v[1:]])))
    valid = r["history"][-1][2]
    assert valid < r["valid_before"]
    assert valid < 0.6 * unigram, (valid, unigram)
    assert valid > 0.9 * true_ppl, (valid, true_ppl)
    assert np.isfinite(r["test"]) and r["test"] < 0.7 * unigram


def test_cifar10_monitored_training_and_moving_average_eval(tmp_path):
    mod = _load("t2p_cifar10_monitored")
    mod.FLAGS.train_dir = str(tmp_path / "train")
    losses, ev = mod.main()
    assert len(losses) == 4 and np.isfinite(losses).all()
    assert min(losses[2:]) < 0.8 * losses[0]  # from about ln(4)
    assert abs(losses[0] - np.log(4)) < 0.2
    assert ev["global_step"] == 80  # StopAtStepHook's last step, checkpointed at the end
    assert [p.rsplit("-", 1)[1] for p in ev["checkpoints"]] == ["0", "80"]
    assert len(ev["restored"]) == 10 and all(
        n.endswith("/ExponentialMovingAverage") for n in ev["restored"])
    assert ev["precision"] > 0.45  # chance is 0.25
    events = [f for f in os.listdir(tmp_path / "train") if f.startswith("events.out")]
    assert events
