"""A functional model's `layers` and `weights` in Keras 3's order (by depth from the
outputs, then by first visit from the outputs), so that `get_weights` lists exchange
with Keras's; and weight files written in the older order still load by name."""

import keras
import numpy as np
import pytest

import mylib as ml
from mylib.runtime import keras_session as backend


def _branches(L, Model, Input, seq):
    a = Input((4,), name="a")
    x1 = L.Dense(3, name="z1")(a)
    x2 = L.Dense(3, name="y2")(a)
    x3 = L.Dense(3, name="x3")(x2)
    return Model(a, [L.Dense(1, name="out2")(x1), L.Add(name="add")([x3, x1])])


def _shared(L, Model, Input, seq):
    a = Input((4,), name="a")
    d = L.Dense(4, name="shared")
    x = d(L.Dense(4, name="mid")(d(a)))
    return Model(a, L.BatchNormalization(name="bn")(x))


def _two_inputs(L, Model, Input, seq):
    a, b = Input((4,), name="a"), Input((4,), name="b")
    sub = seq([L.Dense(3, name="s1"), L.Dense(2, name="s2")], name="sub")
    o = L.Dense(1, name="top")(L.Add(name="add")([sub(b), sub(a)]))
    return Model([a, b], [o, L.Dense(2, name="side")(b)])


def _unused_input(L, Model, Input, seq):
    a, b, c = Input((4,), name="a"), Input((4,), name="b"), Input((2,), name="c")
    h = L.Dense(2, name="hb")(b)
    return Model([a, b, c], L.Dense(1, name="o")(L.Concatenate(name="cat")([h, c])))


@pytest.mark.parametrize("build", [_branches, _shared, _two_inputs, _unused_input])
def test_layers_and_weights_in_keras_order(build):
    km = build(keras.layers, keras.Model, keras.Input, keras.Sequential)
    mm = build(ml.layers, ml.Model, ml.layers.Input, ml.Sequential)
    assert [l.name for l in mm.layers] == [l.name for l in km.layers]
    assert [tuple(w.shape) for w in mm.weights] == [tuple(w.shape) for w in km.weights]
    # Keras's weights list sets mylib's model to the same function.
    mm.set_weights(km.get_weights())
    xs = [np.random.default_rng(0).standard_normal((5,) + tuple(t.shape[1:]))
          .astype("float32") for t in km.inputs]
    got = mm.predict(xs if len(xs) > 1 else xs[0], verbose=0)
    want = km.predict(xs if len(xs) > 1 else xs[0], verbose=0)
    for g, w in zip(got if isinstance(got, list) else [got],
                    want if isinstance(want, list) else [want]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_weights_saved_in_another_order_load_by_name(tmp_path):
    """A file listing the same weights in another order (the layer order of older
    versions) loads each weight by its name, optimizer slots included."""
    m = _branches(ml.layers, ml.Model, ml.layers.Input, ml.Sequential)
    m.compile(ml.optimizers.Adam(0.1), ["mse", "mse"])
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 4)).astype("float32")
    y = [rng.standard_normal((8, 1)).astype("float32"),
         rng.standard_normal((8, 3)).astype("float32")]
    m.fit(x, y, epochs=2, verbose=0)
    want = {w.name: v for w, v in zip(m.weights, m.get_weights())}
    keras_order = m._layers
    m._layers = keras_order[:1] + keras_order[1:][::-1]  # another order on disk
    assert [w.name for w in m.weights] != list(want)
    m.save(tmp_path / "m.mylib")
    m.save_weights(tmp_path / "w.weights.mylib")
    m._layers = keras_order
    with ml.Graph().as_default():  # the same weight names as in the file
        m2 = ml.models.load_model(tmp_path / "m.mylib")
    m.set_weights([np.zeros_like(v) for v in m.get_weights()])
    m.load_weights(tmp_path / "w.weights.mylib")
    for model in (m, m2):
        for w, v in zip(model.weights, model.get_weights()):
            np.testing.assert_array_equal(v, want[w.name])
    # Adam's moments went with their weights.
    slots = {w.name: backend.get_values(m.optimizer._get_slots(w)) for w in m.weights}
    for w in m2.weights:
        for got, want_slot in zip(backend.get_values(m2.optimizer._get_slots(w)),
                                  slots[w.name]):
            np.testing.assert_array_equal(got, want_slot)
