"""keras.utils names real programs use: Progbar, split_dataset, the image helpers,
batch packing, symbolic-input helpers, the custom-object registry, serialization; and
deserialize in keras.losses / layers / constraints / regularizers. Against Keras 3
where its function runs without TensorFlow."""

import io
import random
import sys

import keras
import numpy as np
import pytest

import mylib as ml
from mylib.keras import utils as U

RS = np.random.RandomState(0)


def test_every_name_is_there():
    for n in ["Progbar", "clear_session", "get_custom_objects", "serialize_keras_object",
              "deserialize_keras_object", "pack_x_y_sample_weight",
              "unpack_x_y_sample_weight", "is_keras_tensor", "get_source_inputs",
              "img_to_array", "array_to_img", "load_img", "save_img", "split_dataset",
              "standardize_dtype"]:
        assert callable(getattr(U, n)), n
        assert hasattr(keras.utils, n), n  # each is a Keras 3 name


# ------------------------------------------------------------ Progbar
UPDATES = [(1, [("loss", 0.5), ("acc", 0.2)]), (3, [("loss", 0.3), ("acc", 0.4)]),
           (3, [("loss", 0.1)]), (6, [("loss", 0.2), ("acc", 0.9)])]


def _same_values(ours, theirs):
    """The same running ``[weighted sum, weight]`` per name, in the same order."""
    assert ours._values_order == theirs._values_order
    for k in theirs._values_order:
        assert ours._values[k] == pytest.approx(theirs._values[k]), k


@pytest.mark.parametrize("kw", [{}, {"stateful_metrics": ["acc"]},
                                {"stateless_metrics": ["loss"]}])
def test_progbar_averages_as_keras(kw, capsys):
    ours, theirs = U.Progbar(10, verbose=0, **kw), keras.utils.Progbar(10, verbose=0, **kw)
    for cur, vals in UPDATES:
        ours.update(cur, vals)
        theirs.update(cur, vals)
        _same_values(ours, theirs)
    ours.add(2, [("loss", 1.0)])
    theirs.add(2, [("loss", 1.0)])
    _same_values(ours, theirs)
    assert ours._seen_so_far == theirs._seen_so_far == 8
    ours.update(10, [("loss", 0.7)])  # final: the last value, as Keras
    theirs.update(10, [("loss", 0.7)])
    _same_values(ours, theirs)
    assert capsys.readouterr().out == ""


def test_progbar_draws_bar_and_values(capsys):
    bar = U.Progbar(4, verbose=1, interval=0.0)
    for i in range(4):
        bar.update(i + 1, [("loss", float(i))])
    bar.update(4, [("loss", 0.25)])  # after finalizing, another update draws again
    out = capsys.readouterr().out
    assert "4/4" in out and "loss: 0.2500" in out
    # Keras's averaging: (0*1 + 1*1 + 2*1) / 3 = 1 before the final update.
    assert "loss: 1.0000" in out


def test_progbar_verbose2_unknown_target_and_errors(capsys):
    bar = U.Progbar(None, verbose=2)
    bar.add(5, [("mae", 0.00012)])
    assert capsys.readouterr().out == ""  # an unknown target never finalizes by itself
    bar.update(5, [("mae", 0.00012)], finalize=True)
    out = capsys.readouterr().out
    assert out.startswith("5 - ") and "mae: 1.2000e-04" in out
    with pytest.raises(ValueError, match="Only one of"):
        U.Progbar(3, stateful_metrics=["a"], stateless_metrics=["b"])


# ------------------------------------------------------------ split_dataset
@pytest.mark.parametrize("left,right,n", [(0.8, None, 10), (None, 3, 10), (0.3, 0.5, 7),
                                          (4, None, 9), (None, 0.25, 13), (2, 3, 9)])
def test_split_sizes_match_keras(left, right, n):
    from keras.src.utils.dataset_utils import _rescale_dataset_split_sizes

    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    want_l, want_r = _rescale_dataset_split_sizes(left, right, n)
    lds, rds = U.split_dataset(x, left_size=left, right_size=right)
    lx, rx = np.stack(list(lds.as_numpy_iterator())), np.stack(list(rds.as_numpy_iterator()))
    np.testing.assert_array_equal(lx, x[:want_l])
    np.testing.assert_array_equal(rx, x[n - want_r:])


def test_split_tuple_shuffled_in_keras_order_without_global_random():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10, dtype=np.int32)
    state = random.getstate()
    lds, rds = U.split_dataset((x, y), left_size=0.6, shuffle=True, seed=3)
    assert random.getstate() == state
    order = list(range(10))
    random.Random(3).shuffle(order)  # what Keras's random.seed(3); random.shuffle does
    got = [(a, b) for a, b in lds.as_numpy_iterator()] + \
          [(a, b) for a, b in rds.as_numpy_iterator()]
    assert [int(b) for _, b in got] == order
    for a, b in got:
        np.testing.assert_array_equal(a, x[b])


@pytest.mark.parametrize("args,err,match", [
    (dict(), ValueError, "At least one"),
    (dict(left_size=0.0, right_size=0), ValueError, "Both"),
    (dict(left_size=1.5), ValueError, "left_size"),
    (dict(left_size=10), ValueError, "left_size"),
    (dict(left_size=0.6, right_size=0.6), ValueError, "greater than 1"),
    (dict(left_size="half"), TypeError, "left_size"),
    (dict(left_size=0.01), ValueError, "empty"),
])
def test_split_errors_as_keras(args, err, match):
    with pytest.raises(err, match=match):
        U.split_dataset(np.zeros((10, 2)), **args)


def test_split_rejects_mismatched_lengths_and_types():
    with pytest.raises(ValueError, match="same length"):
        U.split_dataset((np.zeros(5), np.zeros(4)), left_size=2)
    with pytest.raises(TypeError, match="numpy array"):
        U.split_dataset({"x": np.zeros(5)}, left_size=2)


def test_split_feeds_fit():
    x = RS.randn(20, 3).astype(np.float32)
    y = RS.randn(20, 1).astype(np.float32)
    train, test = U.split_dataset((x, y), left_size=0.75)
    m = ml.Sequential([ml.layers.Input((3,)), ml.layers.Dense(1)])
    m.compile("sgd", "mse")
    m.fit(train.batch(5), epochs=1, verbose=0)
    assert np.isfinite(m.evaluate(test.batch(5), verbose=0))


# ------------------------------------------------------------ images
PIL = pytest.importorskip("PIL.Image")


@pytest.mark.parametrize("shape", [(5, 4, 3), (5, 4, 4), (5, 4, 1)])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_array_img_round_trip_as_keras(shape, data_format):
    x = RS.uniform(-1, 3, shape).astype(np.float32)
    if data_format == "channels_first":
        x = np.moveaxis(x, -1, 0)
    for scale in (True, False):
        ours = U.array_to_img(x, data_format=data_format, scale=scale)
        theirs = keras.utils.array_to_img(x, data_format=data_format, scale=scale)
        assert ours.mode == theirs.mode and ours.size == theirs.size
        a = U.img_to_array(ours, data_format=data_format)
        np.testing.assert_array_equal(a, keras.utils.img_to_array(theirs,
                                                                   data_format=data_format))
        assert a.dtype == np.float32 and a.shape == x.shape


def test_array_to_img_large_grayscale_and_errors():
    x = np.full((3, 3, 1), 1000.0)
    assert U.array_to_img(x, scale=False).mode == keras.utils.array_to_img(x, scale=False).mode
    with pytest.raises(ValueError, match="rank 3"):
        U.array_to_img(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="channel number"):
        U.array_to_img(np.zeros((3, 3, 2)))
    with pytest.raises(ValueError, match="data_format"):
        U.img_to_array(np.zeros((3, 3, 3)), data_format="nchw")
    assert U.img_to_array(np.zeros((3, 3)), dtype="uint8").shape == (3, 3, 1)


@pytest.mark.parametrize("kw", [dict(), dict(color_mode="grayscale"), dict(color_mode="rgba"),
                                dict(target_size=(6, 9), interpolation="bilinear"),
                                dict(target_size=(7, 7), keep_aspect_ratio=True),
                                dict(target_size=(4, 10), keep_aspect_ratio=True,
                                     interpolation="bicubic")])
def test_save_and_load_img_as_keras(tmp_path, kw):
    x = RS.randint(0, 256, (12, 16, 3)).astype(np.float32)
    path = tmp_path / "a.png"
    U.save_img(path, x, scale=False)
    keras.utils.save_img(tmp_path / "k.png", x, scale=False)
    np.testing.assert_array_equal(np.asarray(PIL.open(path)), np.asarray(PIL.open(
        tmp_path / "k.png")))
    ours, theirs = U.load_img(path, **kw), keras.utils.load_img(str(path), **kw)
    assert ours.mode == theirs.mode and ours.size == theirs.size
    np.testing.assert_array_equal(U.img_to_array(ours), keras.utils.img_to_array(theirs))
    with open(path, "rb") as f:  # a BytesIO too
        buf = io.BytesIO(f.read())
    assert U.load_img(buf, **kw).size == ours.size


def test_save_img_file_object_jpeg_rgba_and_load_errors(tmp_path):
    buf = io.BytesIO()
    with pytest.warns(UserWarning, match="RGBA"):
        U.save_img(buf, RS.rand(4, 4, 4), file_format="jpg")
    buf.seek(0)
    assert PIL.open(buf).mode == "RGB"
    U.save_img(tmp_path / "g.png", RS.rand(4, 4, 1))
    with pytest.raises(ValueError, match="color_mode"):
        U.load_img(tmp_path / "g.png", color_mode="cmyk")
    with pytest.raises(ValueError, match="interpolation"):
        U.load_img(tmp_path / "g.png", target_size=(2, 2), interpolation="fancy")
    with pytest.raises(TypeError, match="path-like"):
        U.load_img(123)


def test_image_helpers_without_pil_name_the_extra(monkeypatch):
    for k in [k for k in sys.modules if k == "PIL" or k.startswith("PIL.")]:
        monkeypatch.setitem(sys.modules, k, None)
    with pytest.raises(ImportError, match=r"load_img needs pillow.*mylib\[image\]"):
        U.load_img("x.png")
    with pytest.raises(ImportError, match=r"mylib\[image\]"):
        U.array_to_img(np.zeros((2, 2, 3)))


# ------------------------------------------------------------ batches, tensors
@pytest.mark.parametrize("data", [np.ones(3), (np.ones(3),), [np.ones(3), np.zeros(3)],
                                  (1, 2, 3), {"a": 1}])
def test_unpack_and_pack_as_keras(data):
    ours, theirs = U.unpack_x_y_sample_weight(data), keras.utils.unpack_x_y_sample_weight(data)
    assert len(ours) == 3
    for a, b in zip(ours, theirs):
        assert a is b
    packed = U.pack_x_y_sample_weight(*ours)
    want = keras.utils.pack_x_y_sample_weight(*theirs)
    assert type(packed) is type(want) and len(packed) == len(want)
    with pytest.raises(ValueError):
        U.unpack_x_y_sample_weight((1, 2, 3, 4))


def test_get_source_inputs_and_is_keras_tensor():
    L = ml.layers
    a, b = L.Input((3,), name="a"), L.Input((2,), name="b")
    h = L.Dense(4)(a)
    out = L.Dense(1)(L.Concatenate()([h, b, L.Dense(2)(a)]))
    src = U.get_source_inputs(out)
    assert len(src) == 2 and src[0] is a and src[1] is b
    assert U.get_source_inputs(a) == [a]
    assert U.is_keras_tensor(out) and not U.is_keras_tensor(np.ones(2))
    ka = keras.Input((3,))
    kb = keras.Input((2,))
    kout = keras.layers.Dense(1)(keras.layers.Concatenate()([keras.layers.Dense(4)(ka), kb,
                                                             keras.layers.Dense(2)(ka)]))
    assert [t is x for t, x in zip(keras.utils.get_source_inputs(kout), [ka, kb])] == [True] * 2
    arr = np.ones(2)
    assert U.get_source_inputs(arr) is arr


def test_standardize_dtype_and_clear_session():
    for d in ("float32", np.float64, np.dtype("int32"), "bfloat16", "bool"):
        assert U.standardize_dtype(d) == keras.utils.standardize_dtype(d)
    # Keras's keras.utils.clear_session is keras.backend's; so is ours (tested there).
    assert U.clear_session is ml.keras.backend.clear_session


# ------------------------------------------------------------ registry, serialization
def test_get_custom_objects_is_live_and_used_by_deserialize():
    def my_act(x):
        return x * 2.0

    objs = U.get_custom_objects()
    assert objs is U.get_custom_objects()
    objs["my_act"] = my_act
    try:
        assert U.deserialize_keras_object("my_act") is my_act
        d = ml.layers.Dense(2, activation=my_act)
        again = ml.keras.layers.deserialize(ml.keras.layers.serialize(d))
        assert again.activation is my_act and again.units == 2
    finally:
        del objs["my_act"]

    @U.register_keras_serializable(package="t")
    def other(x):
        return x

    try:
        assert U.get_custom_objects()["t>other"] is other
    finally:
        del U.get_custom_objects()["t>other"]


def test_serialize_deserialize_keras_object_round_trips():
    for obj in (ml.losses.Huber(delta=0.5), ml.optimizers.Nadam(0.01),
                ml.layers.Dense(3, activation="relu", name="d")):
        cfg = U.serialize_keras_object(obj)
        assert set(cfg) >= {"class_name", "config"}
        back = U.deserialize_keras_object(cfg)
        assert type(back) is type(obj) and back.get_config() == obj.get_config()


def test_layers_serialize_deserialize_round_trip():
    L = ml.layers
    for layer in (L.Dense(5, activation="tanh", use_bias=False, name="kd",
                          kernel_regularizer=ml.keras.regularizers.L2(0.1),
                          kernel_constraint=ml.keras.constraints.MaxNorm(2.0)),
                  L.Conv2D(3, 2, strides=2, padding="same", name="c"),
                  L.Dropout(0.3, name="drop")):
        cfg = ml.keras.layers.serialize(layer)
        assert cfg["class_name"] == type(layer).__name__
        again = ml.keras.layers.deserialize(cfg)
        assert type(again) is type(layer) and again.get_config() == layer.get_config()
    with pytest.raises(ValueError, match="class_name"):
        ml.keras.layers.deserialize("Dense")
    with pytest.raises(TypeError, match="layer"):
        ml.keras.layers.serialize(3)


def test_dtype_policy_reads_keras_serialized_form():
    kpol = keras.layers.Dense(2, dtype="mixed_bfloat16").get_config()["dtype"]
    assert isinstance(kpol, dict)
    pol = ml.keras.mixed_precision.Policy(kpol)
    assert (pol.name, pol.compute_dtype, pol.variable_dtype) == \
        ("mixed_bfloat16", "bfloat16", "float32")


@pytest.mark.parametrize("make", [lambda m: m.losses.Huber(delta=0.3),
                                  lambda m: m.losses.CategoricalCrossentropy(
                                      label_smoothing=0.1, from_logits=True)])
def test_losses_deserialize_keras_and_own_forms(make):
    kcfg = keras.losses.serialize(make(keras))
    # Each form against the loss Keras makes from the same arguments (Keras 3.15's Huber
    # config drops `delta`: its own form gives the default 1.0, on both sides).
    for cfg, want in ((ml.keras.losses.serialize(make(ml.keras)), make(keras)),
                      (kcfg, keras.losses.deserialize(kcfg))):
        back = ml.keras.losses.deserialize(cfg)
        assert type(back) is type(make(ml.keras))
        y = np.array([[0.1, 0.9], [0.8, 0.2]], np.float32)
        p = np.array([[0.3, 0.7], [0.4, 0.6]], np.float32)
        with ml.Session() as s:
            got = s.run(back(ml.constant(y), ml.constant(p)))
        np.testing.assert_allclose(got, float(np.asarray(want(y, p))), rtol=1e-5)
    assert ml.keras.losses.deserialize("mse") is ml.keras.losses.get("mse")
    with pytest.raises(ValueError):
        ml.keras.losses.deserialize({"class_name": "NoSuchLoss", "config": {}})


def test_constraints_and_regularizers_deserialize():
    c = ml.keras.constraints.deserialize(keras.constraints.serialize(
        keras.constraints.MaxNorm(max_value=1.5, axis=1)))
    assert type(c) is ml.keras.constraints.MaxNorm
    assert c.get_config() == {"max_value": 1.5, "axis": 1}
    r = ml.keras.regularizers.deserialize(keras.regularizers.serialize(
        keras.regularizers.L1L2(l1=0.1, l2=0.2)))
    assert r.get_config() == pytest.approx({"l1": 0.1, "l2": 0.2})
    assert ml.keras.regularizers.deserialize(ml.keras.regularizers.serialize(r)).get_config() \
        == r.get_config()

    class Half(ml.keras.constraints.Constraint):
        def __call__(self, w):
            return w * 0.5

    got = ml.keras.constraints.deserialize({"class_name": "Half", "config": {}},
                                           custom_objects={"Half": Half})
    assert type(got) is Half
    with pytest.raises(ValueError):
        ml.keras.constraints.deserialize({"class_name": "Half", "config": {}})
