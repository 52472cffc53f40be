"""Ops on a functional model's symbolic tensors (``x += residual``, ``x * 0.5``,
``keras.ops.mean``) between layer calls, as Keras 3 programs write them: the model
predicts, trains and is reused as a layer exactly as Keras 3 (JAX backend) does on the
same weights."""

import keras
import numpy as np
import pytest

import mylib as ml
from mylib import keras as mk

from keras_compare import _same_weights

RS = np.random.RandomState(5)


def _residual_model(k):
    """keras/examples/demo_functional.py's residual pattern, plus scalar ops, a
    keras.ops reduction and a concatenate of op outputs."""
    K = keras if k else mk
    inputs = K.Input((6,))
    x = K.layers.Dense(8, activation="relu")(inputs)
    residual = x
    x = K.layers.Dense(8, activation="relu")(x)
    x += residual
    x = x * 0.5 + 1.0
    y = K.ops.mean(x, axis=-1, keepdims=True)
    return K.Model(inputs, K.layers.Dense(2)(K.ops.concatenate([x, y], axis=-1)))


def test_ops_between_layers_predict_and_fit_as_keras():
    x = RS.randn(32, 6).astype(np.float32)
    y = RS.randn(32, 2).astype(np.float32)
    km, mm = _residual_model(True), _residual_model(False)
    _same_weights(mm, km)
    # Ops are nodes of the model, not layers (Keras 3).
    assert [type(l).__name__ for l in mm.layers] == [type(l).__name__ for l in km.layers]
    np.testing.assert_allclose(mm.predict(x, verbose=0), km.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    hist = {}
    for name, m in (("keras", km), ("mylib", mm)):
        m.compile(optimizer=(keras if name == "keras" else mk).optimizers.SGD(0.1),
                  loss="mse")
        hist[name] = m.fit(x, y, batch_size=8, epochs=2, shuffle=False,
                           verbose=0).history["loss"]
    np.testing.assert_allclose(hist["mylib"], hist["keras"], rtol=1e-5)
    np.testing.assert_allclose(mm.get_weights()[0], km.get_weights()[0], rtol=1e-5,
                               atol=1e-6)


def test_model_with_ops_nests_as_a_layer_and_ops_wrap_its_output():
    x = RS.randn(4, 6).astype(np.float32)
    km, mm = _residual_model(True), _residual_model(False)
    _same_weights(mm, km)
    outs = {}
    for name, m, K in (("keras", km, keras), ("mylib", mm, mk)):
        inp = K.Input((6,))
        outer = K.Model(inp, K.ops.tanh(m(inp)) * 2.0 - m(inp))
        outs[name] = outer.predict(x, verbose=0)
    np.testing.assert_allclose(outs["mylib"], outs["keras"], rtol=1e-5, atol=1e-6)


def test_op_made_tensor_in_a_keyword_argument_is_replayed():
    # A mask computed by ops from an input reaches MultiHeadAttention through
    # `attention_mask=`: training replays it from each batch, not from the first call.
    def build(K):
        tokens = K.Input((5,), dtype="int32")
        keep = K.ops.not_equal(tokens, 0)
        mask = K.ops.logical_and(K.ops.expand_dims(keep, 1), K.ops.expand_dims(keep, 2))
        h = K.layers.Embedding(10, 4)(tokens)
        h = K.layers.MultiHeadAttention(2, 2)(h, h, attention_mask=mask)
        return K.Model(tokens, K.layers.Dense(1)(K.layers.GlobalAveragePooling1D()(h)))

    km, mm = build(keras), build(mk)
    _same_weights(mm, km)
    x = RS.randint(0, 10, size=(6, 5)).astype("int32")
    x[:, 3:] = 0
    np.testing.assert_allclose(mm.predict(x, verbose=0), km.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)


def test_ops_reading_a_stray_placeholder_are_refused_clearly():
    g = ml.get_default_graph()
    inp = mk.Input((3,))
    with g.as_default():
        stray = ml.placeholder(ml.float32, [None, 3], name="stray")
    with pytest.raises(ValueError, match="placeholder that is not one of the model's "
                                         "inputs.*'stray'"):
        mk.Model(inp, mk.layers.Dense(2)(inp) + mk.layers.Dense(2)(stray * 2.0))
def test_layers_and_weights_ordered_as_keras_counting_each_op():
    # Keras 3 counts each op as a node when it orders `model.layers` by depth: the
    # int input "t", five ops from the output Dense's input, comes before "a".
    def build(K):
        a = K.Input((3,), name="a")
        t = K.Input((3,), dtype="int32", name="t")
        h = K.layers.Dense(3, name="da")(a)
        keep = K.ops.expand_dims(K.ops.cast(K.ops.not_equal(t, 0), "float32"), -1)
        h = K.ops.squeeze(K.ops.expand_dims(h, -1) * keep, -1) + a
        return K.Model([a, t], K.layers.Dense(2, name="out")(h))

    km, mm = build(keras), build(mk)
    assert [l.name for l in mm.layers] == [l.name for l in km.layers] == \
        ["t", "a", "da", "out"]
    assert [tuple(w.shape.as_list()) for w in mm.weights] == [w.shape for w in km.weights]
