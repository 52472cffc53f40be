"""The README's main job and the graph-API example run and learn (shortened)."""

import importlib.util
import pathlib

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_train_digits_learns_and_writes_tensorboard_logs(tmp_path):
    logdir = tmp_path / "digits"
    res = _load("train_digits").main(["--epochs", "12", "--logdir", str(logdir),
                                      "--verbose", "0"])
    assert res["test_accuracy"] >= 0.93, res["test_accuracy"]
    losses = res["history"]["loss"]
    assert losses[-1] < losses[0] / 3
    train_run = logdir / "train"
    acc = EventAccumulator(str(train_run))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    assert "epoch_loss" in tags and "epoch_accuracy" in tags
    steps = [e.step for e in acc.Scalars("epoch_loss")]
    assert steps == list(range(12))
    assert abs(acc.Scalars("epoch_loss")[-1].value - losses[-1]) < 1e-5
    assert acc.Graph() is not None and len(acc.Graph().node) > 10
    val = EventAccumulator(str(logdir / "validation"))
    val.Reload()
    assert "epoch_loss" in val.Tags()["scalars"]


def test_graph_basics_example_learns():
    acc = _load("graph_basics").main(["--steps", "150"])
    assert acc >= 0.9


def test_train_digits_help_lists_options(capsys):
    import pytest

    with pytest.raises(SystemExit):
        _load("train_digits").main(["--help"])
    out = capsys.readouterr().out
    for opt in ("--epochs", "--batch-size", "--logdir"):
        assert opt in out


def test_model_parallel_example_places_layers_on_two_devices():
    acc, placement = _load("model_parallel").main(["--epochs", "4"])
    assert acc >= 0.9
    devs = list(placement.values())  # weights in layer order: 2 layers on 0, then 1 on 1
    assert devs == [["cpu:0"]] * 4 + [["cpu:1"]] * 2, placement
