"""Configs that Keras 3 (the installed release) writes load here: the keys newer
releases added (initializers' input_axes/output_axes, Dense/Embedding/EinsumDense's
quantization_config, BatchNormalization's renorm*, MultiHeadAttention's use_gate and
sliding_window). Gated and sliding-window attention against Keras numerically."""

import keras
import numpy as np
import pytest

import mylib as ml
from mylib import keras as mk

LAYERS = [
    lambda K: K.layers.Dense(3, kernel_initializer="he_normal"),
    lambda K: K.layers.Embedding(10, 4, mask_zero=True),
    lambda K: K.layers.EinsumDense("ab,bc->ac", 3, bias_axes="c"),
    lambda K: K.layers.BatchNormalization(momentum=0.9),
    lambda K: K.layers.MultiHeadAttention(2, 4, use_gate=True, sliding_window=3),
    lambda K: K.layers.LSTM(3, return_sequences=True),
    lambda K: K.layers.Conv2D(2, 3, kernel_initializer=K.initializers.VarianceScaling(
        2.0, "fan_out", "uniform")),
    lambda K: K.layers.ConvLSTM2D(2, 3),
]


@pytest.mark.parametrize("make", LAYERS)
def test_keras_serialized_layers_deserialize(make):
    k = make(keras)
    cfg = keras.layers.serialize(k)
    m = mk.layers.deserialize(cfg)
    assert type(m).__name__ == type(k).__name__
    back = type(k).from_config(m.get_config())  # and Keras reads ours
    assert back.get_config().keys() <= k.get_config().keys() | {"activity_regularizer"}


def test_variance_scaling_fans_over_given_axes():
    init = mk.initializers.VarianceScaling(1.0, "fan_in", "uniform", seed=3,
                                           input_axes=[0, 1], output_axes=[2])
    v = ml.Variable(init((8, 4, 5)))
    with ml.Session() as s:
        s.run(v.initializer)
        w = s.run(v)
    limit = np.sqrt(3.0 / 32)  # fan_in = 8 * 4, not Keras's default receptive field rule
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.8 * limit
    assert mk.initializers.GlorotUniform(input_axes=[0], output_axes=[1]).get_config() == \
        {"seed": None, "input_axes": [0], "output_axes": [1]}


def test_quantization_and_lora_are_refused_by_name():
    with pytest.raises(NotImplementedError, match="quantization_config"):
        mk.layers.Dense(2, quantization_config={"mode": "int8"})
    with pytest.raises(NotImplementedError, match="lora_rank"):
        mk.layers.Embedding(5, 2, lora_rank=4)


@pytest.mark.parametrize("kw,causal", [({"use_gate": True}, False),
                                       ({"sliding_window": 2}, False),
                                       ({"sliding_window": 3, "use_gate": True}, True)])
def test_gated_and_sliding_window_attention_match_keras(kw, causal):
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 6, 5)).astype("float32")
    v = q if causal else rng.standard_normal((2, 7, 4)).astype("float32")
    k = keras.layers.MultiHeadAttention(2, 3, **kw)
    m = mk.layers.MultiHeadAttention(2, 3, **kw)
    want = np.asarray(k(q, v, use_causal_mask=causal))
    m(q, v)
    assert [w.shape for w in m.get_weights()] == [w.shape for w in k.get_weights()]
    m.set_weights(k.get_weights())
    np.testing.assert_allclose(np.asarray(m(q, v, use_causal_mask=causal)), want,
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="sliding_window"):
        mk.layers.MultiHeadAttention(2, 3, sliding_window=0)


@pytest.mark.parametrize("kw", [{}, {"use_gate": True, "sliding_window": 2},
                                {"use_bias": False}])
@pytest.mark.parametrize("causal", [False, True])
def test_grouped_query_attention_matches_keras(kw, causal):
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 6, 5)).astype("float32")
    v = q if causal else rng.standard_normal((2, 7, 4)).astype("float32")
    k = keras.layers.GroupQueryAttention(3, 4, 2, **kw)
    m = mk.layers.GroupQueryAttention(3, 4, 2, **kw)
    want = np.asarray(k(q, v, use_causal_mask=causal))
    m(q, v)
    assert [w.shape for w in m.get_weights()] == [w.shape for w in k.get_weights()]
    m.set_weights(k.get_weights())
    np.testing.assert_allclose(np.asarray(m(q, v, use_causal_mask=causal)), want,
                               rtol=1e-5, atol=1e-5)
    m2 = mk.layers.deserialize(keras.layers.serialize(k))
    assert (m2.num_query_heads, m2.num_key_value_heads, m2.head_dim) == (4, 2, 3)
    assert keras.layers.GroupQueryAttention.from_config(m.get_config()).num_repeats == 2
    with pytest.raises(ValueError, match="divisible"):
        mk.layers.GroupQueryAttention(3, 4, 3)
