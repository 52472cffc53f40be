"""Crafted model files: a config.json with wrong types or missing entries anywhere is
one clear ValueError naming the file (not a TypeError/AttributeError/KeyError from
deep inside the rebuild); a Keras 3 lambda's bytecode is refused without running it,
with or without ``safe_mode=False``; member names that climb out of the directory are
never written anywhere."""

import copy
import json
import os
import zipfile

import numpy as np
import pytest

import mylib as ml
from mylib import keras

SENTINEL = "flt_lambda_ran"


def _functional(path):
    inp = keras.Input((8,), name="x")
    h = keras.layers.Dense(6, activation="relu")(inp)
    h2 = keras.layers.Dense(6)(inp)
    h = keras.layers.Concatenate()([h, h2])
    out = keras.layers.Dense(3, activation="softmax")(h)
    m = keras.Model(inp, out)
    m.compile(keras.optimizers.Adam(1e-3), "sparse_categorical_crossentropy",
              metrics=["accuracy"])
    m.save(path)
    return m


def _members(path):
    with zipfile.ZipFile(path) as z:
        return [(n, z.read(n)) for n in z.namelist()]


def _write(path, members):
    with zipfile.ZipFile(path, "w") as z:
        for n, b in members:
            z.writestr(n, b)


def _with_config(src, dst, edit):
    members = _members(src)
    out = []
    for n, b in members:
        if n == "config.json":
            cfg = json.loads(b)
            edit(cfg)
            b = json.dumps(cfg).encode()
        out.append((n, b))
    _write(dst, out)


def _layer(cfg, class_name, k=0):
    return [x for x in cfg["config"]["layers"] if x["class_name"] == class_name][k]


def _set(key, value):
    def edit(cfg, key=key, value=value):
        *path, last = key
        cur = cfg
        for p in path:
            cur = cur[p] if not callable(p) else p(cur)
        cur[last] = value
    return edit


def _node(cls, k=0):
    return lambda cfg: _layer(cfg, cls, k)["inbound_nodes"][0]


# Each corrupts one entry the way the fuzzing that found these crashes did.
CORRUPTIONS = {
    "tensor ref is a list": _set(
        [_node("Dense", 1), "args", "__tensor__", 0], ["dense"]),
    "concatenate gets an int": _set([_node("Concatenate"), "args", 1], 7),
    "extra args not a list": _set([_node("Concatenate"), "extra_args"], 3),
    "node is a bool": _set([lambda c: _layer(c, "Concatenate"), "inbound_nodes", 0], True),
    "node order holds ints": _set(["config", "node_order", 0], 5),
    "layers is null": _set(["config", "layers"], None),
    "layer name is a dict": _set(
        [lambda c: _layer(c, "Dense"), "config", "name"], {"a": 1}),
    "layer name is a list": _set(
        [lambda c: _layer(c, "Dense", 2), "config", "name"], ["n"]),
    "initializer seed is a dict": _set(
        [lambda c: _layer(c, "Dense"), "config", "kernel_initializer", "config", "seed"],
        {}),
    "optimizer epsilon is a dict": _set(
        ["compile_config", "optimizer", "config", "epsilon"], {}),
    "optimizer config is a bool": _set(["compile_config", "optimizer", "config"], True),
    "optimizer is a number": _set(["compile_config", "optimizer"], 1.5),
    "optimizer missing": lambda c: c["compile_config"].pop("optimizer"),
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("crafted")
    path = str(d / "good.keras")
    _functional(path)
    return path


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_malformed_config_is_one_clear_value_error(saved, tmp_path, case):
    bad = str(tmp_path / "bad.keras")
    _with_config(saved, bad, CORRUPTIONS[case])
    with pytest.raises(ValueError, match=r"bad\.keras: config\.json") as info:
        keras.models.load_model(bad)
    assert not isinstance(info.value, (TypeError, AttributeError, KeyError, IndexError))


def test_the_good_file_still_loads(saved, tmp_path):
    m = keras.models.load_model(saved)
    assert m.optimizer is not None and len(m.weights) == 6
    # A registered name that is not a string names nothing: the built-in class of
    # that class name is used, as for a file that has none.
    odd = str(tmp_path / "odd.keras")
    _with_config(saved, odd, _set([lambda c: _layer(c, "Dense"), "registered_name"], ["x"]))
    assert len(keras.models.load_model(odd).weights) == 6
    _with_config(saved, odd, lambda c: _layer(c, "Dense").update(
        class_name="Nope", registered_name=["x"]))
    with pytest.raises(ValueError, match="Unknown layer class 'Nope'"):
        keras.models.load_model(odd)


def test_model_from_json_reports_a_malformed_config(saved):
    cfg = json.loads(dict(_members(saved))["config.json"])
    cfg.pop("compile_config")
    CORRUPTIONS["node order holds ints"](cfg)
    with pytest.raises(ValueError, match="model_from_json: the text does not describe"):
        keras.models.model_from_json(json.dumps(cfg))
    with pytest.raises(ValueError, match="not a model config"):
        keras.models.model_from_json("[1, 2]")


def _keras3_lambda_config(tmp_path):
    """A mylib model file whose Lambda holds a function the way Keras 3 saves a
    `lambda`: its bytecode, here a lambda that would create a file when run."""
    @ml.saving.register_serializable(package="flt")
    def double(x):
        return x * 2

    m = keras.Sequential([keras.Input((3,)), keras.layers.Lambda(double),
                          keras.layers.Dense(2)])
    src = str(tmp_path / "lam.keras")
    m.save(src)
    target = str(tmp_path / SENTINEL)
    code = f"lambda x: (open({target!r}, 'w').write('ran'), x)[1]"

    def edit(cfg):
        _layer(cfg, "Lambda")["config"]["function"] = {
            "class_name": "__lambda__",
            "config": {"code": code, "defaults": None, "closure": None}}
    bad = str(tmp_path / "lam_bytecode.keras")
    _with_config(src, bad, edit)
    return bad, target


@pytest.mark.parametrize("safe_mode", [True, False])
def test_lambda_bytecode_is_refused_and_never_run(tmp_path, safe_mode):
    bad, target = _keras3_lambda_config(tmp_path)
    with pytest.raises(ValueError, match="Python bytecode .*never runs code from a file"):
        keras.models.load_model(bad, safe_mode=safe_mode)
    assert not os.path.exists(target)


def test_lambda_functions_load_by_registered_name_only(tmp_path):
    @ml.saving.register_serializable(package="flt")
    def triple(x):
        return x * 3

    m = keras.Sequential([keras.Input((3,)), keras.layers.Lambda(triple)])
    path = str(tmp_path / "ok.keras")
    m.save(path)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(keras.models.load_model(path, safe_mode=False).predict(
        x, verbose=0), 3 * x)

    # A mask function named in the file that nothing registered is refused by name.
    def edit(cfg):
        _layer(cfg, "Lambda")["config"]["mask"] = "os.system"
    bad = str(tmp_path / "mask.keras")
    _with_config(path, bad, edit)
    with pytest.raises(ValueError, match="unknown `mask` function 'os.system'"):
        keras.models.load_model(bad)


def test_member_names_climbing_out_are_never_written(saved, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    evil = [("../escaped.txt", b"x"), ("/abs_escaped.txt", b"x"),
            ("assets/../../escaped2.txt", b"x")]
    path = str(work / "evil.keras")
    _write(path, _members(saved) + evil)
    before = set(os.listdir(tmp_path))
    m = keras.models.load_model(path)  # the extra members are never read
    assert len(m.weights) == 6
    assert set(os.listdir(tmp_path)) == before
    assert os.listdir(work) == ["evil.keras"]
    assert not os.path.exists("/abs_escaped.txt")


def test_duplicate_members_read_one_consistent_copy(saved, tmp_path):
    # A second config.json naming an unknown class after the good one: zip readers
    # take the last entry of a name, and so does every read of a load (metadata,
    # config and weights alike), so the crafted copy is the one refused.
    members = _members(saved)
    cfg = json.loads(dict(members)["config.json"])
    crafted = copy.deepcopy(cfg)
    _layer(crafted, "Dense")["class_name"] = "EvilLayer"
    path = str(tmp_path / "dup.keras")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
        _write(path, members + [("config.json", json.dumps(crafted).encode())])
    with pytest.raises(ValueError, match="Unknown layer class 'EvilLayer'"):
        keras.models.load_model(path)


def test_files_written_by_keras_itself_are_named_as_such(tmp_path):
    import keras as real_keras  # the reference Keras 3 (KERAS_BACKEND=jax)

    k = real_keras.Sequential([real_keras.Input((4,)), real_keras.layers.Dense(2)])
    k.save(str(tmp_path / "k3.keras"))
    k.save_weights(str(tmp_path / "k3.weights.h5"))
    with pytest.raises(ml.errors.DataLossError, match=r"k3\.keras: a Keras .* \.keras file"):
        keras.models.load_model(str(tmp_path / "k3.keras"))
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    before = [w.copy() for w in m.get_weights()]
    with pytest.raises(ml.errors.DataLossError, match=r"k3\.weights\.h5: an HDF5 file"):
        m.load_weights(str(tmp_path / "k3.weights.h5"))
    for a, b in zip(before, m.get_weights()):
        np.testing.assert_array_equal(a, b)
