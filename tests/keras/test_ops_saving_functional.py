"""Saving functional models with ops between layers (``x + inputs``, ``x * 0.5``,
``keras.ops.mean``): `.keras` files, `to_json` / `model_from_json`, `get_config` /
`from_config`, `clone_model` and nested models round-trip with equal predictions and
training continuing identically; configs written by Keras 3 itself load and predict as
Keras does; crafted configs naming unknown ops raise ValueError and run nothing."""

import json

import keras
import numpy as np
import pytest

from mylib import keras as mk

from keras_compare import _same_weights

RS = np.random.RandomState(11)


def _transformer_block(K, seq=5, dim=8):
    """The residual Transformer block of the keras-io text-classification examples,
    written with ops on symbolic tensors instead of Add layers."""
    inputs = K.Input((seq, dim))
    att = K.layers.MultiHeadAttention(num_heads=2, key_dim=4)(inputs, inputs)
    x = K.layers.LayerNormalization(epsilon=1e-6)(att + inputs)
    ffn = K.layers.Dense(dim)(K.layers.Dense(16, activation="relu")(x))
    x = K.layers.LayerNormalization(epsilon=1e-6)(x + ffn)
    pooled = K.ops.mean(x, axis=1) * 0.5 + K.ops.max(x, axis=1)
    return K.Model(inputs, K.layers.Dense(3, activation="softmax")(pooled))


def _data(n=16):
    x = RS.randn(n, 5, 8).astype(np.float32)
    y = RS.randint(0, 3, size=(n,))
    return x, y


def test_transformer_block_saved_to_a_file_predicts_as_before_and_as_keras(tmp_path):
    x, _ = _data(4)
    km, mm = _transformer_block(keras), _transformer_block(mk)
    _same_weights(mm, km)
    path = str(tmp_path / "block.keras")
    mm.save(path)
    loaded = mk.models.load_model(path)
    assert [type(l).__name__ for l in loaded.layers] == [type(l).__name__ for l in km.layers]
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), mm.predict(x, verbose=0))
    np.testing.assert_allclose(loaded.predict(x, verbose=0), km.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)


def _residual_mlp(K):
    inputs = K.Input((6,))
    h = K.layers.Dense(8, activation="relu")(inputs)
    x = K.layers.Dense(8, activation="tanh")(h) + h
    x = K.ops.concatenate([x * 0.5, K.ops.mean(x, axis=-1, keepdims=True)], axis=-1)
    return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))


def test_saved_model_keeps_training_as_before_and_as_keras(tmp_path):
    x = RS.randn(16, 6).astype(np.float32)
    y = RS.randint(0, 3, size=(16,))
    km, mm = _residual_mlp(keras), _residual_mlp(mk)
    _same_weights(mm, km)
    for m, K in ((km, keras), (mm, mk)):
        # Momentum: the loaded model must restore the optimizer's slots to continue.
        m.compile(optimizer=K.optimizers.SGD(0.1, momentum=0.9),
                  loss="sparse_categorical_crossentropy")
        m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    path = str(tmp_path / "mlp.keras")
    mm.save(path)
    loaded = mk.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), mm.predict(x, verbose=0))
    hist = [m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
            for m in (mm, loaded, km)]
    np.testing.assert_allclose(hist[1], hist[0], rtol=1e-6)
    np.testing.assert_allclose(hist[1], hist[2], rtol=1e-5)
    for a, b, c in zip(loaded.get_weights(), mm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)


def test_json_config_and_clone_round_trips_of_nested_models_with_ops():
    x, _ = _data(4)
    i = mk.Input((5, 8))
    h = mk.layers.Dense(8)(i)
    inner = mk.Model(i, mk.layers.Dense(3)(mk.ops.mean(h + i, axis=1) * 0.5))
    inp = mk.Input((5, 8))
    h = inner(inp * 2.0)
    outer = mk.Model(inp, mk.ops.concatenate([h, 1.0 - h], axis=-1))
    want = outer.predict(x, verbose=0)
    np.testing.assert_allclose(want[:, 3:], 1.0 - want[:, :3], rtol=1e-6, atol=1e-6)
    rebuilt = [mk.models.model_from_json(outer.to_json()),
               mk.Model.from_config(outer.get_config()),
               mk.models.clone_model(outer)]
    for m in rebuilt:
        assert m.to_json() and len(m.weights) == len(outer.weights)
        m.set_weights(outer.get_weights())
        np.testing.assert_array_equal(m.predict(x, verbose=0), want)
    # The config is plain data that reads back to the same text.
    cfg = json.loads(outer.to_json())
    assert json.loads(rebuilt[0].to_json())["config"]["layers"][-1]["config"]["graph"] == \
        cfg["config"]["layers"][-1]["config"]["graph"]


def _ops_model(K):
    """Ops Keras 3 writes as entries of its config, applied between layers."""
    a = K.Input((4, 6), name="a")
    t = K.Input((4,), dtype="int32", name="t")
    h = K.layers.Dense(6)(a)
    keep = K.ops.cast(K.ops.not_equal(t, 0), "float32")
    h = h * K.ops.expand_dims(keep, -1) + a
    h = K.ops.softmax(K.ops.matmul(h, K.ops.transpose(h, (0, 2, 1))) / 3.0, axis=-1)
    h = K.ops.reshape(K.ops.relu(h - 0.1), (-1, 16))
    s = K.ops.concatenate([K.ops.sum(h, axis=-1, keepdims=True),
                           K.ops.sqrt(K.ops.square(h[:, 2:5])),
                           K.ops.where(K.ops.greater(h[:, :3], 0.05), h[:, :3], -1.0)],
                          axis=-1)
    return K.Model([a, t], K.layers.Dense(2)(K.ops.tanh(s)))


def test_config_written_by_keras_loads_and_predicts_as_keras():
    km = _ops_model(keras)
    mm = mk.models.model_from_json(km.to_json())
    assert [l.name for l in mm.layers] == [l.name for l in km.layers]
    mm.set_weights(km.get_weights())
    x = [RS.randn(6, 4, 6).astype(np.float32), RS.randint(0, 3, (6, 4)).astype(np.int32)]
    np.testing.assert_allclose(mm.predict(x, verbose=0), km.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    # ... and mylib saves what it read in its own form, which loads again.
    again = mk.models.model_from_json(mm.to_json())
    again.set_weights(mm.get_weights())
    np.testing.assert_array_equal(again.predict(x, verbose=0), mm.predict(x, verbose=0))


def test_keras_written_transformer_block_loads_as_keras():
    km = _transformer_block(keras)
    mm = mk.Model.from_config(km.get_config())
    mm.set_weights(km.get_weights())
    x, _ = _data(4)
    np.testing.assert_allclose(mm.predict(x, verbose=0), km.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)


def _keras_config_with_op(module, class_name, config=None):
    inp = keras.Input((3,))
    cfg = json.loads(keras.Model(inp, keras.layers.Dense(2)(inp) + 1.0).to_json())
    op = next(l for l in cfg["config"]["layers"] if l["class_name"] == "Add")
    op.update(module=module, class_name=class_name, registered_name=class_name,
              config=config or {"name": op["name"]})
    return json.dumps(cfg)


@pytest.mark.parametrize("module,class_name", [
    ("keras.src.ops.numpy", "Eval"),        # no such op
    ("keras.src.ops.core", "WhileLoop"),    # an op taking functions
    ("keras.src.ops.numpy", "__Import__"),
])
def test_keras_config_naming_an_unknown_op_raises_value_error(module, class_name):
    with pytest.raises(ValueError, match=f"op '{class_name}'.*cannot rebuild"):
        mk.models.model_from_json(_keras_config_with_op(module, class_name))


def test_keras_op_config_with_an_argument_mylib_lacks_is_refused():
    text = _keras_config_with_op("keras.src.ops.numpy", "Add",
                                 {"name": "add", "exec": "print(1)"})
    with pytest.raises(ValueError, match="'Add' has the argument exec"):
        mk.models.model_from_json(text)


@pytest.mark.parametrize("class_name,config", [("Sum", {"axis": 9}),
                                               ("Transpose", {"axes": [[0]]})])
def test_keras_op_entry_with_bad_arguments_raises_value_error(class_name, config):
    cfg = json.loads(_keras_config_with_op("keras.src.ops.numpy", class_name,
                                           {"name": "op", **config}))
    entry = next(l for l in cfg["config"]["layers"] if l["class_name"] == class_name)
    entry["inbound_nodes"][0]["args"] = entry["inbound_nodes"][0]["args"][:1]
    with pytest.raises(ValueError, match=f"Keras op entry 'add.*Keras{class_name}"):
        mk.models.model_from_json(json.dumps(cfg))


def _mylib_json_with_fragment_node(mutate):
    inp = mk.Input((3,))
    cfg = json.loads(mk.Model(inp, mk.layers.Dense(2)(inp) * 2.0).to_json())
    entry = next(l for l in cfg["config"]["layers"] if l["class_name"] == "TFOpLambda")
    mutate(entry["config"]["graph"]["node"])
    return json.dumps(cfg)


@pytest.mark.parametrize("mutate,match", [
    (lambda nodes: nodes[-1].update(op="SystemCommand"), "op type 'SystemCommand'"),
    (lambda nodes: nodes[-1].update(op="PyFunc", attr={"token": "f", "Tout": []}),
     "runs on the host"),
    (lambda nodes: nodes.append({"name": "v", "op": "VarHandleOp", "input": [],
                                 "attr": {"dtype": "float32", "shape": {"tuple": []}}}),
     "variable no layer owns"),
    (lambda nodes: nodes.append({"name": "p", "op": "Placeholder", "input": [],
                                 "attr": {"dtype": "float32", "shape": {"tuple": []}}}),
     "placeholder"),
])
def test_crafted_mylib_fragment_raises_value_error(mutate, match):
    with pytest.raises(ValueError, match=match):
        mk.models.model_from_json(_mylib_json_with_fragment_node(mutate))


def test_keras_config_input_layer_batch_shape_and_optional():
    inp = keras.Input(batch_shape=(None, 2, 3), name="seq")
    km = keras.Model(inp, keras.ops.sum(inp, axis=1))
    mm = mk.models.model_from_json(km.to_json())
    x = RS.randn(3, 2, 3).astype(np.float32)
    np.testing.assert_allclose(mm.predict(x, verbose=0), x.sum(1), rtol=1e-6)
    cfg = json.loads(km.to_json())
    cfg["config"]["layers"][0]["config"]["optional"] = True
    with pytest.raises(NotImplementedError, match="optional=True"):
        mk.models.model_from_json(json.dumps(cfg))


def test_keras_written_nested_models_with_ops_load_as_keras():
    # Keras records each call of the inner model with ``mask=None``.
    i1 = keras.Input((4,))
    inner = keras.Model(i1, keras.layers.Dense(3)(i1) * 2.0 + i1[:, :3])
    i2 = keras.Input((4,))
    km = keras.Model(i2, keras.ops.relu(inner(i2 - 1.0)) + inner(i2))
    mm = mk.models.model_from_json(km.to_json())
    mm.set_weights(km.get_weights())
    x = RS.randn(5, 4).astype(np.float32)
    np.testing.assert_allclose(mm.predict(x, verbose=0), km.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)


def test_control_flow_between_layers_cannot_be_saved(tmp_path):
    import mylib as ml

    inp = mk.Input((3,))
    h = mk.layers.Dense(3)(inp)
    m = mk.Model(inp, ml.cond(ml.reduce_sum(h) > 0, lambda: h * 2.0, lambda: h))
    with pytest.raises(NotImplementedError, match="StatelessIf.*function graphs"):
        m.save(str(tmp_path / "m.keras"))
    assert not (tmp_path / "m.keras").exists()


def _many_ops(K, a, t):
    """One output per op kind Keras 3 writes as a config entry."""
    ops = K.ops
    return [ops.matmul(a, ops.transpose(a, (0, 2, 1))), ops.expand_dims(a, 1),
            ops.cast(t, "float32"), ops.relu(a), ops.softmax(a, axis=1),
            ops.subtract(a, 2.0), ops.sum(a, axis=[1, 2]),
            ops.where(ops.greater(a, 0), a, 0.0), ops.not_equal(t, 0), ops.sqrt(ops.abs(a)),
            ops.tanh(a), a / 3.0, -a, a[:, 1:, ::2], a[..., 0], ops.square(a),
            ops.squeeze(ops.expand_dims(a, 1), 1), ops.stack([a, a], axis=1),
            ops.sigmoid(a), ops.gelu(a), a ** 2, ops.max(a, axis=1), ops.exp(a),
            ops.log(ops.abs(a) + 1.0), ops.reshape(a, (-1, 24)), ops.mean(a, axis=(1, 2)),
            ops.concatenate([a, a], axis=-1), ops.take(a, [0, 2], axis=1),
            ops.minimum(a, 0.5), ops.clip(a, -0.5, 0.5), ops.argmax(a, axis=-1),
            ops.one_hot(t, 4), ops.log_softmax(a), ops.silu(a), ops.einsum("bij,bkj->bik",
                                                                             a, a)]


def test_each_op_kind_keras_writes_loads_as_keras():
    a, t = keras.Input((4, 6)), keras.Input((4,), dtype="int32")
    km = keras.Model([a, t], _many_ops(keras, a, t))
    mm = mk.models.model_from_json(km.to_json())
    x = [RS.randn(3, 4, 6).astype(np.float32), RS.randint(0, 4, (3, 4)).astype(np.int32)]
    want, got = km.predict(x, verbose=0), mm.predict(x, verbose=0)
    assert len(got) == len(want)
    for i, (w, g) in enumerate(zip(want, got)):
        assert np.asarray(g).shape == np.asarray(w).shape, i
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   rtol=2e-5, atol=1e-6, err_msg=f"output {i}")


def test_lists_of_numbers_are_tensors_of_symbolic_ops_as_in_keras():
    a = mk.Input((4, 6))
    m = mk.Model(a, [mk.ops.take(a, [0, 2], axis=1), mk.ops.add(a, [0.5] * 6)])
    x = RS.randn(2, 4, 6).astype(np.float32)
    taken, added = m.predict(x, verbose=0)
    np.testing.assert_array_equal(taken, x[:, [0, 2]])
    assert added.dtype == np.float32  # not widened to float64 by numpy's default
    np.testing.assert_allclose(added, x + 0.5, rtol=1e-6)
